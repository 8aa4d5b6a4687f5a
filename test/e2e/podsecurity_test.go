//go:build e2e

// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

const (
	baselineNS   = "pfs-e2e-baseline"
	restrictedNS = "pfs-e2e-restricted"
)

// psaNamespace (re)creates ns enforcing level and warning at restricted.
func psaNamespace(t *testing.T, ns, level string) {
	t.Helper()
	if out, err := kubectl("delete", "namespace", ns, "--ignore-not-found", "--wait=true", "--timeout=180s"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %s
  labels:
    pod-security.kubernetes.io/enforce: %s
    pod-security.kubernetes.io/warn: restricted
`, ns, level)
	if out, err := kubectlIn(manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// attachScript maps the blob through its holder's socket and prints its
// size and fingerprint.
const attachScript = `
import os, packetfs
b = packetfs.attach(os.environ["PFS_BLOB_SOCKET"], open(os.environ["PFS_BLOB_TOKEN_FILE"]).read().strip())
print("size", b.size, "fingerprint %016x" % b.fingerprint)
`

// consumerManifest is a pod that meets Pod Security restricted and maps
// blob in ns through the CSI volume (no hostPath).
func consumerManifest(ns, name, blob string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  restartPolicy: Never
  securityContext: {runAsUser: 65532, runAsGroup: 65532, runAsNonRoot: true, fsGroup: 65532, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: reader
    image: packetfs.io/python-consumer:v0.1.0
    imagePullPolicy: Never
    command: ["python3", "-c", %[4]q]
    env:
    - {name: PFS_BLOB_SOCKET, value: /run/packetfs/%[1]s/%[3]s.sock}
    - {name: PFS_BLOB_TOKEN_FILE, value: /etc/packetfs/token/token}
    resources: {limits: {memory: 128Mi, cpu: 200m}}
    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
    volumeMounts:
    - {name: sockets, mountPath: /run/packetfs/%[1]s, readOnly: true}
    - {name: token, mountPath: /etc/packetfs/token, readOnly: true}
  volumes:
  - {name: sockets, csi: {driver: csi.packetfs.io, readOnly: true}}
  - {name: token, secret: {secretName: %[3]s-blob-token, defaultMode: 0440}}
`, ns, name, blob, attachScript)
}

// testPodSecurity: with the socket directory delivered by the CSI driver,
// a namespace enforcing Pod Security baseline runs a blob's holders, a
// consumer pod that maps it and a transfer over it. Under restricted the
// consumer and transfer pods are admitted; the holders are not (they run as
// uid 0), and the refusal is what the test reports.
func testPodSecurity(ctx context.Context, t *testing.T) {
	psaNamespace(t, baselineNS, "baseline")
	// The blob, the consumer and the transfer go with their namespace, so
	// nothing of this step is left for helm uninstall's check.
	t.Cleanup(func() {
		if out, err := kubectl("delete", "namespace", baselineNS, "--wait=true", "--timeout=180s"); err != nil {
			t.Errorf("delete namespace %s: %v\n%s", baselineNS, err, out)
		}
	})
	b := &pfsv1alpha1.PfsBlob{ObjectMeta: metav1.ObjectMeta{Name: "psa", Namespace: baselineNS},
		Spec: pfsv1alpha1.PfsBlobSpec{Size: resource.MustParse("64Mi"), PageSize: pfsv1alpha1.PageSize2Mi,
			Fill: pfsv1alpha1.BlobFill{Type: pfsv1alpha1.FillSeed, Seed: ptr.To(int64(17))}}}
	createReadyBlob(ctx, t, b)
	t.Logf("baseline: blob Ready on %d nodes, fingerprint %s", b.Status.ReadyNodes, b.Status.Fingerprint)

	out, err := kubectlIn(consumerManifest(baselineNS, "consumer", "psa"), "apply", "-f", "-")
	if err != nil || strings.Contains(out, "Warning") {
		t.Fatalf("consumer pod in %s (warn=restricted): %v\n%s", baselineNS, err, out)
	}
	var phase string
	err = poll(ctx, 2*time.Minute, func() (bool, error) {
		phase, _ = kubectl("-n", baselineNS, "get", "pod", "consumer", "-o", "jsonpath={.status.phase}")
		return phase == "Succeeded" || phase == "Failed", nil
	})
	logs, _ := kubectl("-n", baselineNS, "logs", "consumer")
	want := fmt.Sprintf("size %d fingerprint %s", b.Spec.Size.Value(), b.Status.Fingerprint)
	if err != nil || phase != "Succeeded" || !strings.Contains(logs, want) {
		t.Fatalf("consumer: phase %q (%v), want %q in:\n%s\n%s", phase, err, want, logs, describe("pod", "consumer"))
	}
	t.Logf("baseline: the consumer mapped it through the CSI volume: %s", strings.TrimSpace(logs))

	x := &pfsv1alpha1.PfsTransfer{ObjectMeta: metav1.ObjectMeta{Name: "psa-offset", Namespace: baselineNS},
		Spec: pfsv1alpha1.PfsTransferSpec{BlobRef: &pfsv1alpha1.BlobReference{Name: "psa"}, Mode: pfsv1alpha1.ModeOffset,
			Transport: pfsv1alpha1.TransportTCP, Passes: ptr.To(int32(4)), BackoffLimit: ptr.To(int32(1))}}
	if err := env.c.Create(ctx, x); err != nil {
		t.Fatal(err)
	}
	waitTransfer(ctx, t, x, 6*time.Minute)
	requireSucceeded(t, x)
	t.Logf("baseline: Offset transfer over the blob Succeeded at %s MB/s", x.Status.EffectiveMBps)

	// restricted: the consumer is admitted as is; a blob's holders are not.
	psaNamespace(t, restrictedNS, "restricted")
	if out, err := kubectlIn(consumerManifest(restrictedNS, "consumer", "psa"), "apply", "--dry-run=server", "-f", "-"); err != nil {
		t.Errorf("the consumer pod is refused under restricted: %v\n%s", err, out)
	}
	rb := b.DeepCopy()
	rb.ObjectMeta = metav1.ObjectMeta{Name: "psa", Namespace: restrictedNS}
	rb.Status = pfsv1alpha1.PfsBlobStatus{}
	if err := env.c.Create(ctx, rb); err != nil {
		t.Fatal(err)
	}
	var refusal string
	err = poll(ctx, 2*time.Minute, func() (bool, error) {
		refusal, _ = kubectl("-n", restrictedNS, "get", "events", "--field-selector", "reason=FailedCreate",
			"-o", "jsonpath={range .items[*]}{.message}{\"\\n\"}{end}")
		return strings.Contains(refusal, "violates PodSecurity"), nil
	})
	if err != nil {
		t.Errorf("no Pod Security refusal of the holders under restricted: %v\n%s", err, describe("pfsblob", "psa"))
	}
	if !strings.Contains(refusal, "runAsNonRoot") {
		t.Errorf("the holders were refused for something else than running as root:\n%s", refusal)
	}
	t.Logf("restricted: the consumer pod is admitted; the holders are refused: %s", firstLine(refusal))
	_, _ = kubectl("delete", "namespace", restrictedNS, "--wait=false")
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
