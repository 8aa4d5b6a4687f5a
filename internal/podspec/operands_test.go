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
