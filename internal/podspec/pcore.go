// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/placement"
)

// PcorePodName is the name of a pcore job's pod.
func PcorePodName(job string) string { return ChildName(job, "pcore", PodNameMax) }

// PcorePodLabels select a pcore job's pod.
func PcorePodLabels(j *pfsv1alpha1.PcoreJob) map[string]string {
	return map[string]string{
		LabelManagedBy:   ManagedBy,
		LabelComponent:   ComponentPcore,
		LabelPcoreJobUID: string(j.UID),
	}
}

// PcorePod builds the pod of a pcore job: one whole CPU per pcore (the pcore
// run has no separate producer thread; the producer role floats between the
// pcores), the blob fetched from its holder on the node, and with the
// baseline the plain-threads run in the same process.
func PcorePod(cfg Config, j *pfsv1alpha1.PcoreJob, blob *pfsv1alpha1.PfsBlob, blobNodes []string) *corev1.Pod {
	pcores := int64(j.Spec.Pcores)
	if pcores < 1 {
		pcores = 1
	}
	args := []string{"pcore", "run", "--op", string(j.Spec.Op)}
	if j.Spec.Imm != nil && j.Spec.Op.UsesImm() {
		args = append(args, "--imm", strconv.Itoa(int(*j.Spec.Imm)))
	}
	if r := j.Spec.Range; r != nil {
		args = append(args, "--range", fmt.Sprintf("%d:%d", r.Offset.Value(), RangeLength(r, blob)))
	}
	args = append(args, "--pcores", strconv.FormatInt(pcores, 10))
	if j.Spec.DescriptorsPerFrame > 0 {
		args = append(args, "--dpf", strconv.Itoa(int(j.Spec.DescriptorsPerFrame)))
	}
	if j.Spec.Align > 0 {
		args = append(args, "--align", strconv.Itoa(int(j.Spec.Align)))
	}
	if j.Spec.RingSlots > 0 {
		args = append(args, "--ring-slots", strconv.Itoa(int(j.Spec.RingSlots)))
	}
	switch {
	case j.Spec.Duration != nil:
		args = append(args, "--duration", strconv.FormatFloat(j.Spec.Duration.Seconds(), 'f', -1, 64))
	case j.Spec.Passes != nil:
		args = append(args, "--passes", strconv.Itoa(int(*j.Spec.Passes)))
	}
	if j.Spec.Baseline != pfsv1alpha1.BaselineNone {
		args = append(args, "--baseline")
	}
	var res corev1.ResourceRequirements
	var vols []corev1.Volume
	var mounts []corev1.VolumeMount
	if j.Spec.Op.WritesBlob() {
		// xor and add write in place: the shared blob is served read-only
		// (transfers rely on its fingerprint), so the job builds a private
		// copy from the same spec and pays for its memory itself.
		args, res = privateBlob(args, blob, pcores)
	} else {
		args = append(args, blobConsumerArgs(j.Namespace, blob.Name)...)
		res = guaranteed(pcores, podBaseMemory.DeepCopy(), nil)
		vols, mounts = blobConsumerVolumes(cfg, j.Namespace, blob.Name)
	}
	args = append(args, "--result-file", TerminationLog)

	c := dataPlaneContainer(cfg, ContainerPcore, args, res, privNonRoot)
	c.VolumeMounts = mounts
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: PcorePodName(j.Name), Namespace: j.Namespace,
			Labels:      PcorePodLabels(j),
			Annotations: map[string]string{AnnotationOwner: j.Name},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			NodeSelector:                  copyMap(j.Spec.NodeSelector),
			Affinity:                      cfg.affinity(placement.NodeAffinity(blobNodes)),
			Containers:                    []corev1.Container{c},
			Volumes:                       vols,
			SecurityContext:               podSecurity(),
			Tolerations:                   cfg.tolerations(j.Spec.Scheduling),
			PriorityClassName:             cfg.priorityClass(j.Spec.Scheduling),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To(int64(10)),
			ActiveDeadlineSeconds:         j.Spec.ActiveDeadlineSeconds,
		},
	}
}

// privateBlob adds the arguments and resources of a pcore job that builds its
// own copy of the blob: same size, page size and fill as the PfsBlob, so its
// bytes start equal to the holder's.
func privateBlob(args []string, blob *pfsv1alpha1.PfsBlob, pcores int64) ([]string, corev1.ResourceRequirements) {
	size := blob.EffectiveSize()
	page := blob.Spec.PageSize
	args = append(args, "--size", strconv.FormatInt(size, 10), "--page", cliPage(page))
	if blob.Spec.Fill.Type == pfsv1alpha1.FillZero {
		args = append(args, "--fill", "zero")
	} else {
		var seed int64
		if blob.Spec.Fill.Seed != nil {
			seed = *blob.Spec.Fill.Seed
		}
		args = append(args, "--fill", "seed", "--seed", strconv.FormatInt(seed, 10))
	}
	memory := podBaseMemory.DeepCopy()
	extra := corev1.ResourceList{}
	if hp := hugePageBytes(page); hp > 0 {
		extra[HugePagesResource(page)] = *resource.NewQuantity(roundUp(size, hp), resource.BinarySI)
	} else {
		memory.Add(*resource.NewQuantity(roundUp(size, 4096), resource.BinarySI))
	}
	return args, guaranteed(pcores, memory, extra)
}
