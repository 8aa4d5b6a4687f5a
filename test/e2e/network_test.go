// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
)

// testMacvlanIPs is one NetworkAttachmentDefinition as users write them: a
// macvlan network over the data link pfsdata2 with static IPAM and the
// "ips" capability (hack/demo/values.yaml), shared by both ends, each
// endpoint naming its own address in spec.*.ips. The sender must reach
// the receiver at the address the receiver asked for.
func testMacvlanIPs(ctx context.Context, t *testing.T) {
	const sendIP, recvIP = "192.168.79.1", "192.168.79.2"
	x := transferSpec("tcp-payload-macvlan", pfsv1alpha1.TransportTCP, pfsv1alpha1.ModePayload, false)
	x.Spec.Sender.Network, x.Spec.Sender.IPs = releaseNS+"/pfsdata2", []string{sendIP + "/24"}
	x.Spec.Receiver.Network, x.Spec.Receiver.IPs = releaseNS+"/pfsdata2", []string{recvIP + "/24"}
	if err := env.c.Create(ctx, x); err != nil {
		t.Fatal(err)
	}
	waitTransfer(ctx, t, x, 8*time.Minute)
	st := x.Status
	if st.Phase != pfsv1alpha1.PhaseSucceeded {
		t.Fatalf("phase %s, want Succeeded: %s\n%s", st.Phase, conditions(st.Conditions), transferLogs(x))
	}
	if st.Integrity == nil || st.Integrity.Result != pfsv1alpha1.IntegrityOK {
		t.Errorf("integrity %+v, want OK", st.Integrity)
	}
	recv, send := &corev1.Pod{}, &corev1.Pod{}
	if err := env.c.Get(ctx, client.ObjectKey{Namespace: testNS, Name: st.Receiver.Pod}, recv); err != nil {
		t.Fatal(err)
	}
	if err := env.c.Get(ctx, client.ObjectKey{Namespace: testNS, Name: st.Sender.Pod}, send); err != nil {
		t.Fatal(err)
	}
	if sel := recv.Annotations[podspec.AnnotationNetworks]; !strings.Contains(sel, `"ips":["`+recvIP+`/24"]`) {
		t.Errorf("receiver's network selection %q lacks its ips", sel)
	}
	if status := recv.Annotations[podspec.AnnotationNetworkStatus]; !strings.Contains(status, `"`+recvIP+`"`) {
		t.Errorf("receiver's network-status %q: Multus did not give it %s", status, recvIP)
	}
	if args := strings.Join(send.Spec.Containers[0].Args, " "); !strings.Contains(args, recvIP+":") {
		t.Errorf("sender args %q do not connect to %s", args, recvIP)
	}
	t.Logf("macvlan with static ips: %s -> %s, %s MB/s", st.Sender.Node, st.Receiver.Node, st.EffectiveMBps)
}
