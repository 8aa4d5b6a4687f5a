// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// in is the requirement that the key's value is one of values.
func in(key string, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

// gpuOrBig admits nodes labelled pool=gpu, or size=big; it prefers zone a.
var gpuOrBig = &corev1.NodeAffinity{
	RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
		{MatchExpressions: []corev1.NodeSelectorRequirement{in("pool", "gpu")}},
		{MatchExpressions: []corev1.NodeSelectorRequirement{in("size", "big")}},
	}},
	PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 5,
		Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{in("zone", "a")}}}},
}

// TestAffinity: no operand affinity leaves a pin as it is (and nil as nil,
// so a holder DaemonSet's template, and its hash, do not change); the
// operand affinity alone is copied; with a pin, every operand term gets
// the pin's name requirement (each of the ORed terms ANDed with it).
func TestAffinity(t *testing.T) {
	pin := pinToNode("w1")
	if got := (Config{}).affinity(nil); got != nil {
		t.Errorf("no operand affinity, no pin: %+v, want nil", got)
	}
	if got := (Config{}).affinity(pin); got != pin {
		t.Errorf("no operand affinity: %+v, want the pin", got)
	}
	cfg := Config{Operands: OperandPolicy{NodeAffinity: gpuOrBig}}
	if diff := cmp.Diff(&corev1.Affinity{NodeAffinity: gpuOrBig}, cfg.affinity(nil)); diff != "" {
		t.Errorf("operand affinity alone (-want +got):\n%s", diff)
	}
	name := in("metadata.name", "w1")
	want := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{in("pool", "gpu")}, MatchFields: []corev1.NodeSelectorRequirement{name}},
			{MatchExpressions: []corev1.NodeSelectorRequirement{in("size", "big")}, MatchFields: []corev1.NodeSelectorRequirement{name}},
		}},
		PreferredDuringSchedulingIgnoredDuringExecution: gpuOrBig.PreferredDuringSchedulingIgnoredDuringExecution,
	}}
	got := cfg.affinity(pin)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("operand affinity and a pin (-want +got):\n%s", diff)
	}
	if len(gpuOrBig.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields) != 0 {
		t.Error("merging changed the configured affinity")
	}
}

// TestOperandAffinityOnPods: every operand pod carries it: the holder
// DaemonSet, the scan pod, a source holder (pinned), a transfer pod.
func TestOperandAffinityOnPods(t *testing.T) {
	cfg := Config{Binary: "/pfs", Operands: OperandPolicy{NodeAffinity: gpuOrBig}}
	b := &pfsv1alpha1.PfsBlob{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns"}}
	src := &pfsv1alpha1.PfsBlob{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns"},
		Spec: pfsv1alpha1.PfsBlobSpec{Source: &pfsv1alpha1.BlobSource{
			PersistentVolumeClaim: &pfsv1alpha1.PVCBlobSource{ClaimName: "models"}}}}
	for what, aff := range map[string]*corev1.Affinity{
		"holder DaemonSet": BlobHolderDaemonSet(cfg, b).Spec.Template.Spec.Affinity,
		"scan pod":         BlobScanPod(cfg, src).Spec.Affinity,
		"source holder":    BlobSourceHolderPod(cfg, src, SourceHolder{Node: "w1", Role: pfsv1alpha1.BlobNodeRelay}).Spec.Affinity,
	} {
		if aff == nil || aff.NodeAffinity == nil || len(aff.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 ||
			len(aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) != 2 {
			t.Errorf("%s: affinity %+v, want the operand affinity", what, aff)
		}
	}
}

// TestAdmits: the required terms decide; none admits every node.
func TestAdmits(t *testing.T) {
	node := func(l map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: l}}
	}
	p := OperandPolicy{NodeAffinity: gpuOrBig}
	for _, tc := range []struct {
		labels map[string]string
		want   bool
	}{{map[string]string{"pool": "gpu"}, true}, {map[string]string{"size": "big"}, true}, {map[string]string{"pool": "cpu"}, false}, {nil, false}} {
		if got := p.Admits(node(tc.labels)); got != tc.want {
			t.Errorf("labels %v: admitted %v, want %v", tc.labels, got, tc.want)
		}
	}
	if !(OperandPolicy{}).Admits(node(nil)) {
		t.Error("no operand affinity refused a node")
	}
}
