// SPDX-License-Identifier: Apache-2.0

package api

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// These tests run the real kubectl against the envtest apiserver: what a
// platform engineer types and reads is part of the API.

func TestKubectlServerDryRunSamples(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	files, _ := filepath.Glob(filepath.Join(env.Root, "config", "samples", "*.yaml"))

	out, _, err := env.Kubectl(ctx, "apply", "--dry-run=server", "-n", ns, "-f", "config/samples/")
	if err != nil {
		t.Fatal(err)
	}
	created := strings.Count(out, "created (server dry run)")
	if created != len(files) {
		t.Errorf("server dry run created %d objects, want one per sample file (%d):\n%s", created, len(files), out)
	}
	// A dry run stores nothing.
	list, _, err := env.Kubectl(ctx, "get", "packetfs", "-n", ns, "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(list) != "" {
		t.Errorf("dry run stored objects:\n%s", list)
	}
}

func TestKubectlShowsHowToFix(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	manifest := `apiVersion: pfs.packetfs.io/v1alpha1
kind: PfsTransfer
metadata:
  name: no-blob
spec:
  mode: Offset
  range: {length: 1Gi}
`
	if err := os.WriteFile(bad, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := env.Kubectl(ctx, "apply", "--dry-run=server", "-n", ns, "-f", bad)
	if err == nil {
		t.Fatal("kubectl accepted an Offset transfer without blobRef")
	}
	t.Logf("kubectl apply of an invalid transfer:\n%s", stderr)
	// "is invalid" and the CEL rule's message were the e2e's step "invalid
	// PfsTransfer rejected with the CEL message" (the same apiserver version).
	for _, want := range []string{"is invalid", "blobRef is required when mode is Offset or Arithmetic", "set spec.blobRef.name to a PfsBlob name"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("kubectl does not say %q:\n%s", want, stderr)
		}
	}
}

func TestKubectlExplain(t *testing.T) {
	cases := map[string][]string{
		"pfstransfer.spec.mode": {"mode is what a gram carries", "Payload", "Offset", "Arithmetic",
			"receiver", "executes over its own copy"},
		"pfstransfer.spec.transport": {"TCP", "UDP", "AFXDP", "sender.network"},
		"pfsblob.spec.size":          {"1Mi to 64Ti", "Immutable"},
		// What an AFXDP relay is given and how it runs, before a user asks for it.
		"pfsblob.spec.replication.transport": {"TCP", "UDP", "AFXDP", "NET_ADMIN, NET_RAW, BPF and IPC_LOCK", "never privileged", "copy mode"},
		"pfsblob.spec.nodeSelector":          {"may change after creation"},
		"pfsblob.spec.access.namespaces":     {"other than the blob's own (always allowed)", `"*" alone`},
		"pcorejob.spec.op":                   {"xor", "add", "counteq", "fnv", "crc32c"},
		"pcorejob.status.cpupwn":             {"throughputMBps / baselineMBps"},
		"pfstransfer.status.integrity":       {"OK, Mismatch or NotChecked"},
	}
	ctx := testContext(t)
	for field, want := range cases {
		t.Run(field, func(t *testing.T) {
			// The apiserver publishes a new CRD's OpenAPI a moment after the
			// CRD is established, so explain is retried until it is there.
			var out string
			var err error
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(250 * time.Millisecond) {
				out, _, err = env.Kubectl(ctx, "explain", field)
				if err == nil || !strings.Contains(err.Error(), "couldn't find resource") || time.Now().After(deadline) {
					break
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("kubectl explain %s:\n%s", field, out)
			flat := strings.Join(strings.Fields(out), " ")
			for _, w := range want {
				if !strings.Contains(flat, w) {
					t.Errorf("kubectl explain %s does not mention %q:\n%s", field, w, out)
				}
			}
		})
	}
}

// TestKubectlGet checks the short names, the packetfs category and that the
// printer columns answer "did it work and how fast" from status.
func TestKubectlGet(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)

	b := object(t, blob, ns, "b", "source: {persistentVolumeClaim: {claimName: data, path: models/x.safetensors}}")
	x := object(t, xfer, ns, "x", "blobRef: {name: b}\nmode: Offset")
	j := object(t, pcj, ns, "j", "blobRef: {name: b}\nop: xor\nimm: 255\npcores: 2")
	for _, o := range []*unstructured.Unstructured{b, x, j} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	statuses := []struct {
		obj    *unstructured.Unstructured
		status map[string]any
	}{
		{b, map[string]any{"pageSize": "2Mi", "desiredNodes": int64(2), "readyNodes": int64(2), "fingerprint": "0123456789abcdef",
			"source": "pvc:data/models/x.safetensors", "size": "300Mi", "ready": "2/2", "distributionMBps": "333.1",
			"distributionSeconds": "0.944", "sha256": strings.Repeat("ab", 32), "digest": "abababababab", "progress": "100%",
			"conditions": []any{map[string]any{"type": pfsv1alpha1.ConditionReady, "status": "True",
				"reason": pfsv1alpha1.ReasonMaterialized, "message": "2 of 2 nodes hold the blob",
				"lastTransitionTime": "2026-01-01T00:00:00Z"}}}},
		{x, map[string]any{"phase": "Succeeded", "progress": "100%", "effectiveMBps": "1062.3", "mbPerCPUSecond": "1075.0",
			"label":     pfsv1alpha1.TransferLabel(pfsv1alpha1.ModeOffset, pfsv1alpha1.TransportTCP),
			"integrity": map[string]any{"algorithm": "CRC32C", "result": "OK"}}},
		{j, map[string]any{"phase": "Running", "throughputMBps": "19840.5", "cpupwn": "1.07", "baselineMBps": "18542.1"}},
	}
	for _, s := range statuses {
		s.obj.Object["status"] = s.status
		if err := env.Client.Status().Update(ctx, s.obj); err != nil {
			t.Fatal(err)
		}
	}

	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"get", "pblob"}, []string{"NAME SOURCE SIZE READY PROGRESS STATUS MB/S DIGEST AGE",
			"b pvc:data/models/x.safetensors 300Mi 2/2 100% Materialized 333.1 abababababab"}},
		{[]string{"get", "pblob", "-o", "wide"}, []string{"PAGE SECONDS FINGERPRINT", "2Mi 0.944 0123456789abcdef"}},
		{[]string{"get", "pxfer"}, []string{"NAME MODE TRANSPORT PHASE PROGRESS MB/S MB/CPU-S INTEGRITY AGE",
			"x Offset TCP Succeeded 100% 1062.3 1075.0 OK"}},
		{[]string{"get", "pxfer", "-o", "wide"}, []string{"LABEL", "Native PFS Offset-only Mode - TCP"}},
		{[]string{"get", "pcj"}, []string{"NAME OP PCORES PHASE MB/S CPUPWN AGE", "j xor 2 Running 19840.5 1.07"}},
		{[]string{"get", "packetfs", "-o", "name"}, []string{"pfsblob.pfs.packetfs.io/b",
			"pfstransfer.pfs.packetfs.io/x", "pcorejob.pfs.packetfs.io/j"}},
	}
	for _, tc := range cases {
		out, _, err := env.Kubectl(ctx, append(tc.args, "-n", ns)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("kubectl %s:\n%s", strings.Join(tc.args, " "), out)
		// Compare with runs of spaces collapsed: column widths vary.
		var lines []string
		for _, l := range strings.Split(out, "\n") {
			lines = append(lines, strings.Join(strings.Fields(l), " "))
		}
		flat := strings.Join(lines, "\n")
		for _, w := range tc.want {
			if !strings.Contains(flat, w) {
				t.Errorf("kubectl %s: no %q in\n%s", strings.Join(tc.args, " "), w, out)
			}
		}
	}
}

// TestKubectlKustomizations checks that config/crd and config/rbac build with
// kubectl's kustomize and that the apiserver accepts what they produce.
func TestKubectlKustomizations(t *testing.T) {
	ctx := testContext(t)
	for dir, want := range map[string][]string{
		"config/crd": {"customresourcedefinition.apiextensions.k8s.io/pfsblobs.pfs.packetfs.io",
			"customresourcedefinition.apiextensions.k8s.io/pfstransfers.pfs.packetfs.io",
			"customresourcedefinition.apiextensions.k8s.io/pcorejobs.pfs.packetfs.io"},
		"config/rbac": {"clusterrole.rbac.authorization.k8s.io/manager-role"},
	} {
		out, _, err := env.Kubectl(ctx, "apply", "--dry-run=server", "-k", dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(out, w) || !strings.Contains(out, "(server dry run)") {
				t.Errorf("kubectl apply -k %s: no %q in\n%s", dir, w, out)
			}
		}
	}
}
