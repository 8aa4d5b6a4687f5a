// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// podSecurityNamespace creates a namespace that enforces a Pod Security level.
func podSecurityNamespace(t *testing.T, ctx context.Context, level string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "pfs-psa-" + level + "-",
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": level}}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// TCP and UDP pods meet the "restricted" Pod Security level (non-root, no
// capabilities, no privilege escalation, seccomp RuntimeDefault). AF_XDP
// pods need capabilities that even "baseline" refuses: the refusal shows in
// the Placed condition and an Event, the transfer is not failed, and status
// names no pod that does not exist.
func TestPodSecurityLevels(t *testing.T) {
	ctx := testContext(t)
	restricted := podSecurityNamespace(t, ctx, "restricted")
	x := payloadTransfer(restricted, "tcp")
	createTransfer(t, ctx, x)
	waitPod(t, ctx, restricted, recvName(x.Name, 0))

	baseline := podSecurityNamespace(t, ctx, "baseline")
	xdp := payloadTransfer(baseline, "xdp")
	xdp.Spec.Transport = pfsv1alpha1.TransportAFXDP
	xdp.Spec.Sender.Network, xdp.Spec.Receiver.Network = "xdp", "xdp"
	createNAD(t, ctx, baseline, "xdp")
	createTransfer(t, ctx, xdp)
	waitTransfer(t, ctx, xdp, "Placed=False with the refusal", func(x *pfsv1alpha1.PfsTransfer) error {
		if err := conditionIs(x.Status.Conditions, pfsv1alpha1.ConditionPlaced, metav1.ConditionFalse, pfsv1alpha1.ReasonPodsPending); err != nil {
			return err
		}
		if msg := findCondition(x, pfsv1alpha1.ConditionPlaced); !strings.Contains(msg, "violates PodSecurity") {
			return fmt.Errorf("Placed message %q", msg)
		}
		return nil
	})
	if xdp.Status.Phase == pfsv1alpha1.PhaseFailed || xdp.Status.Receiver != nil {
		t.Errorf("phase %q receiver %+v: a refused pod must not fail the transfer nor appear in status", xdp.Status.Phase, xdp.Status.Receiver)
	}
	consistently(t, "no receiver pod", 500*time.Millisecond, func() error { return absent(ctx, baseline, recvName(xdp.Name, 0)) })
}
