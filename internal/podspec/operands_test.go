// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// Every pod the operator creates carries the operand tolerations and
// PriorityClass, so a GPU pool tainted nvidia.com/gpu still gets its copy
// and GPU jobs do not preempt the holders; none without them.
func TestOperandPolicyOnEveryPod(t *testing.T) {
	gpu := []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	c := cfg
	c.Operands = OperandPolicy{Tolerations: gpu, PriorityClassName: "pfs-holders"}
	pods := func(c Config) map[string]corev1.PodSpec {
		h := SourceHolder{Node: "w1", Role: pfsv1alpha1.BlobNodeRelay, Size: 300 << 20, Page: pfsv1alpha1.PageSize2Mi,
			Attempt: 1, Upstreams: []string{"10.0.0.1:7470"}}
		src := sourceBlob(pvc("models"), "")
		b := blob(pfsv1alpha1.PageSize2Mi, "64Mi")
		j := &pfsv1alpha1.PcoreJob{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", UID: "uid-j"},
			Spec: pfsv1alpha1.PcoreJobSpec{Op: pfsv1alpha1.OpCRC32C, Pcores: 1}}
		x := transfer(pfsv1alpha1.ModeOffset, pfsv1alpha1.TransportTCP)
		return map[string]corev1.PodSpec{
			"seeded holder": BlobHolderDaemonSet(c, b).Spec.Template.Spec,
			"scan":          BlobScanPod(c, src).Spec,
			"relay":         BlobSourceHolderPod(c, src, h).Spec,
			"pcore":         PcorePod(c, j, b, []string{"n1"}).Spec,
			"receiver":      ReceiverPod(c, x, TransferInputs{Blob: b}).Spec,
		}
	}
	for name, spec := range pods(c) {
		if diff := cmp.Diff(gpu, spec.Tolerations); diff != "" || spec.PriorityClassName != "pfs-holders" {
			t.Errorf("%s: tolerations (-want +got):\n%s priorityClassName %q", name, diff, spec.PriorityClassName)
		}
	}
	// Each pod has its own copy: changing one changes no other pod or the config.
	specs := pods(c)
	specs["scan"].Tolerations[0].Key = "changed"
	if c.Operands.Tolerations[0].Key != "nvidia.com/gpu" || specs["relay"].Tolerations[0].Key != "nvidia.com/gpu" {
		t.Error("pods share the config's tolerations")
	}
	for name, spec := range pods(cfg) {
		if spec.Tolerations != nil || spec.PriorityClassName != "" {
			t.Errorf("%s without a policy: tolerations %v priorityClassName %q", name, spec.Tolerations, spec.PriorityClassName)
		}
	}
}

// An object's own scheduling adds its tolerations after the operand ones and
// replaces the PriorityClass, on every kind of pod; another object's pods
// keep the operand policy alone.
func TestObjectSchedulingOverrides(t *testing.T) {
	gpu := corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	team := corev1.Toleration{Key: "team", Operator: corev1.TolerationOpEqual, Value: "vision", Effect: corev1.TaintEffectNoSchedule}
	own := &pfsv1alpha1.PodScheduling{Tolerations: []corev1.Toleration{team}, PriorityClassName: "models-critical"}
	c := cfg
	c.Operands = OperandPolicy{Tolerations: []corev1.Toleration{gpu}, PriorityClassName: "pfs-holders"}

	src := sourceBlob(pvc("models"), "")
	src.Spec.Scheduling = own
	b := blob(pfsv1alpha1.PageSize2Mi, "64Mi")
	b.Spec.Scheduling = own
	j := &pfsv1alpha1.PcoreJob{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", UID: "uid-j"},
		Spec: pfsv1alpha1.PcoreJobSpec{Op: pfsv1alpha1.OpCRC32C, Pcores: 1, Scheduling: own}}
	x := transfer(pfsv1alpha1.ModeOffset, pfsv1alpha1.TransportTCP)
	x.Spec.Scheduling = own
	h := SourceHolder{Node: "w1", Role: pfsv1alpha1.BlobNodeRelay, Size: 300 << 20, Page: pfsv1alpha1.PageSize2Mi,
		Attempt: 1, Upstreams: []string{"10.0.0.1:7470"}}
	plain := blob(pfsv1alpha1.PageSize2Mi, "64Mi")
	specs := map[string]corev1.PodSpec{
		"seeded holder": BlobHolderDaemonSet(c, b).Spec.Template.Spec,
		"scan":          BlobScanPod(c, src).Spec,
		"relay":         BlobSourceHolderPod(c, src, h).Spec,
		"pcore":         PcorePod(c, j, plain, []string{"n1"}).Spec,
		"receiver":      ReceiverPod(c, x, TransferInputs{Blob: plain}).Spec,
	}
	for name, spec := range specs {
		if diff := cmp.Diff([]corev1.Toleration{gpu, team}, spec.Tolerations); diff != "" || spec.PriorityClassName != "models-critical" {
			t.Errorf("%s: tolerations (-want +got):\n%s priorityClassName %q", name, diff, spec.PriorityClassName)
		}
	}
	specs["relay"].Tolerations[1].Value = "changed"
	if own.Tolerations[0].Value != "vision" {
		t.Error("a pod shares the object's tolerations")
	}
	ds := BlobHolderDaemonSet(c, plain).Spec.Template.Spec
	if diff := cmp.Diff([]corev1.Toleration{gpu}, ds.Tolerations); diff != "" || ds.PriorityClassName != "pfs-holders" {
		t.Errorf("a blob without scheduling: tolerations (-want +got):\n%s priorityClassName %q", diff, ds.PriorityClassName)
	}
	// Tolerations alone keep the operand PriorityClass.
	b.Spec.Scheduling = &pfsv1alpha1.PodScheduling{Tolerations: []corev1.Toleration{team}}
	if p := BlobHolderDaemonSet(c, b).Spec.Template.Spec.PriorityClassName; p != "pfs-holders" {
		t.Errorf("tolerations alone: priorityClassName %q, want the operand default pfs-holders", p)
	}
}

// UntoleratedTaint names the first NoSchedule or NoExecute taint the pods
// would not tolerate; PreferNoSchedule never keeps a pod off a node.
func TestUntoleratedTaint(t *testing.T) {
	gpu := corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}
	team := corev1.Taint{Key: "team", Value: "vision", Effect: corev1.TaintEffectNoExecute}
	soft := corev1.Taint{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule}
	c := cfg
	c.Operands = OperandPolicy{Tolerations: []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}}}
	own := &pfsv1alpha1.PodScheduling{Tolerations: []corev1.Toleration{{Key: "team", Operator: corev1.TolerationOpEqual, Value: "vision"}}}
	other := &pfsv1alpha1.PodScheduling{Tolerations: []corev1.Toleration{{Key: "team", Operator: corev1.TolerationOpEqual, Value: "audio"}}}
	tests := []struct {
		name   string
		taints []corev1.Taint
		s      *pfsv1alpha1.PodScheduling
		want   string // the untolerated taint's key, "" for none
	}{
		{"no taints", nil, nil, ""},
		{"the operand toleration covers the GPU taint", []corev1.Taint{gpu}, nil, ""},
		{"the team taint needs the object's toleration", []corev1.Taint{gpu, team}, nil, "team"},
		{"the object's toleration covers it", []corev1.Taint{gpu, team}, own, ""},
		{"another value does not", []corev1.Taint{team}, other, "team"},
		{"PreferNoSchedule is no bar", []corev1.Taint{soft}, nil, ""},
	}
	for _, tc := range tests {
		n := &corev1.Node{Spec: corev1.NodeSpec{Taints: tc.taints}}
		got, found := c.UntoleratedTaint(n, tc.s)
		if found != (tc.want != "") || got.Key != tc.want {
			t.Errorf("%s: untolerated %q (found %v), want %q", tc.name, got.Key, found, tc.want)
		}
	}
}
