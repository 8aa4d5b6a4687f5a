// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
)

// A PfsBlob gets a holder DaemonSet and a token Secret, both owned by it.
func TestBlobCreatesDaemonSetAndToken(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	blob := &pfsv1alpha1.PfsBlob{
		ObjectMeta: metav1.ObjectMeta{Name: "weights", Namespace: ns},
		Spec: pfsv1alpha1.PfsBlobSpec{Size: resource.MustParse("64Mi"),
			NodeSelector: map[string]string{"pfs.packetfs.io/data": "true"}},
	}
	if err := env.Client.Create(ctx, blob); err != nil {
		t.Fatal(err)
	}
	ds := &appsv1.DaemonSet{}
	eventually(t, "DaemonSet", func() error { return get(ctx, ns, podspec.HolderName(blob.Name), ds) })
	assertControlledBy(t, ds.OwnerReferences, "PfsBlob", blob.Name)
	spec := ds.Spec.Template.Spec
	if got := spec.NodeSelector["pfs.packetfs.io/data"]; got != "true" {
		t.Errorf("nodeSelector not passed to the holder: %v", spec.NodeSelector)
	}
	hp := spec.Containers[0].Resources.Limits["hugepages-2Mi"]
	if hp.Cmp(resource.MustParse("64Mi")) != 0 {
		t.Errorf("hugepages-2Mi limit = %s, want 64Mi", hp.String())
	}
	if m := spec.Volumes[0].EmptyDir; m == nil || m.Medium != "HugePages-2Mi" {
		t.Errorf("blob volume = %+v, want an emptyDir on HugePages-2Mi", spec.Volumes[0])
	}
	if got := strings.Join(spec.InitContainers[0].Args, " "); !strings.Contains(got, "blob create --dir /dev/hugepages-blob --name weights --size 67108864 --page 2m --fill seed --seed 0") {
		t.Errorf("init container args = %q", got)
	}

	if ds.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType {
		t.Errorf("updateStrategy %q, want OnDelete: a new template must never roll running holders", ds.Spec.UpdateStrategy.Type)
	}
	// A DaemonSet an earlier operator made (RollingUpdate, another template):
	// this operator turns it OnDelete in the write that brings its template.
	eventually(t, "an earlier operator's DaemonSet", func() error {
		if err := get(ctx, ns, ds.Name, ds); err != nil {
			return err
		}
		ds.Annotations[podspec.AnnotationTemplateHash] = "earlier"
		ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType}
		return env.Client.Update(ctx, ds)
	})
	eventually(t, "the DaemonSet taken over, OnDelete", func() error {
		if err := get(ctx, ns, ds.Name, ds); err != nil {
			return err
		}
		if ds.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType || ds.Annotations[podspec.AnnotationTemplateHash] == "earlier" {
			return fmt.Errorf("strategy %s hash %s", ds.Spec.UpdateStrategy.Type, ds.Annotations[podspec.AnnotationTemplateHash])
		}
		return nil
	})

	sec := &corev1.Secret{}
	eventually(t, "token Secret", func() error { return get(ctx, ns, podspec.TokenSecretName(blob.Name), sec) })
	assertControlledBy(t, sec.OwnerReferences, "PfsBlob", blob.Name)
	if tok := string(sec.Data[podspec.TokenKey]); !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(tok) {
		t.Errorf("token %q, want 64 lowercase hex digits (32 random bytes as text)", tok)
	}
	// nodeSelector is the one mutable field: the DaemonSet follows it.
	eventually(t, "changing spec.nodeSelector", func() error {
		if err := get(ctx, ns, blob.Name, blob); err != nil {
			return err
		}
		blob.Spec.NodeSelector = map[string]string{"pfs.packetfs.io/data": "big"}
		return env.Client.Update(ctx, blob)
	})
	eventually(t, "DaemonSet follows the nodeSelector", func() error {
		if err := get(ctx, ns, ds.Name, ds); err != nil {
			return err
		}
		if got := ds.Spec.Template.Spec.NodeSelector["pfs.packetfs.io/data"]; got != "big" {
			return fmt.Errorf("template nodeSelector %v", ds.Spec.Template.Spec.NodeSelector)
		}
		return nil
	})

	// Without a DaemonSet controller the rollout never completes: the blob
	// says so instead of claiming readiness.
	eventually(t, "blob Ready=False Materializing", func() error {
		if err := get(ctx, ns, blob.Name, blob); err != nil {
			return err
		}
		return conditionIs(blob.Status.Conditions, pfsv1alpha1.ConditionReady, metav1.ConditionFalse, pfsv1alpha1.ReasonMaterializing)
	})
}

// Status comes from the holders' init-container results: per-node
// fingerprints, page size and timings; nodes that disagree make the blob
// Degraded with FingerprintMismatch and not Ready.
func TestBlobStatusFromHolderResults(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	blob := readyBlob(t, ctx, ns, "shared", "node-a", "node-b")
	if blob.Status.Ready != "2/2" || blob.Status.Size == nil || blob.Status.Size.String() != "64Mi" {
		t.Errorf("kubectl columns ready %q size %v, want 2/2 and 64Mi", blob.Status.Ready, blob.Status.Size)
	}
	if blob.Status.ReadyNodes != 2 || blob.Status.DesiredNodes != 2 {
		t.Errorf("ready/desired = %d/%d, want 2/2", blob.Status.ReadyNodes, blob.Status.DesiredNodes)
	}
	if blob.Status.Fingerprint != "00c0ffee00c0ffee" || blob.Status.PageSize != pfsv1alpha1.PageSize2Mi {
		t.Errorf("fingerprint %q page %q", blob.Status.Fingerprint, blob.Status.PageSize)
	}
	n := blob.Status.Nodes[0]
	if n.Timings == nil || n.Timings.Fill == nil || n.Timings.Fill.Duration.String() != "20.5ms" {
		t.Errorf("node timings = %+v, want fill 20.5ms", n.Timings)
	}
	if err := conditionIs(blob.Status.Conditions, pfsv1alpha1.ConditionDegraded, metav1.ConditionFalse, pfsv1alpha1.ReasonAsExpected); err != nil {
		t.Error(err)
	}

	// A third node joins with other bytes.
	ds := rollOut(t, ctx, blob, 3)
	holderPod(t, ctx, ds, "node-c", blobCreateResult("0x1111222233334444"), true)
	eventually(t, "blob Degraded with FingerprintMismatch", func() error {
		if err := get(ctx, ns, blob.Name, blob); err != nil {
			return err
		}
		if err := conditionIs(blob.Status.Conditions, pfsv1alpha1.ConditionDegraded, metav1.ConditionTrue, pfsv1alpha1.ReasonFingerprintMismatch); err != nil {
			return err
		}
		return conditionIs(blob.Status.Conditions, pfsv1alpha1.ConditionReady, metav1.ConditionFalse, pfsv1alpha1.ReasonFingerprintMismatch)
	})
	var msg string
	for _, c := range blob.Status.Conditions {
		if c.Type == pfsv1alpha1.ConditionDegraded {
			msg = c.Message
		}
	}
	want := "nodes hold different bytes: 00c0ffee00c0ffee on node-a, node-b; 1111222233334444 on node-c"
	if msg != want {
		t.Errorf("Degraded message = %q, want %q", msg, want)
	}
	if blob.Status.Fingerprint != "" {
		t.Errorf("fingerprint %q reported although nodes disagree", blob.Status.Fingerprint)
	}
}

// A holder whose init container left a truncated result fails that node
// with ResultInvalid in its message and degrades the blob; nothing crashes.
func TestBlobTruncatedHolderResult(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	blob := &pfsv1alpha1.PfsBlob{ObjectMeta: metav1.ObjectMeta{Name: "cut", Namespace: ns},
		Spec: pfsv1alpha1.PfsBlobSpec{Size: resource.MustParse("64Mi")}}
	if err := env.Client.Create(ctx, blob); err != nil {
		t.Fatal(err)
	}
	ds := rollOut(t, ctx, blob, 1)
	full := blobCreateResult("0x00c0ffee00c0ffee")
	holderPod(t, ctx, ds, "node-a", full[:len(full)/2], false)
	eventually(t, "node failed with ResultInvalid", func() error {
		if err := get(ctx, ns, blob.Name, blob); err != nil {
			return err
		}
		if len(blob.Status.Nodes) != 1 || blob.Status.Nodes[0].State != pfsv1alpha1.BlobNodeFailed ||
			!strings.HasPrefix(blob.Status.Nodes[0].Message, pfsv1alpha1.ReasonResultInvalid+": termination message is truncated JSON") {
			return fmt.Errorf("nodes = %+v", blob.Status.Nodes)
		}
		return conditionIs(blob.Status.Conditions, pfsv1alpha1.ConditionDegraded, metav1.ConditionTrue, pfsv1alpha1.ReasonNodeFailed)
	})
}

func assertControlledBy(t *testing.T, refs []metav1.OwnerReference, kind, name string) {
	t.Helper()
	for _, r := range refs {
		if r.Kind == kind && r.Name == name && r.Controller != nil && *r.Controller &&
			r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion {
			return
		}
	}
	t.Errorf("no controller owner reference to %s %s in %+v", kind, name, refs)
}
