// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
)

// PodScheduling is what one object's pods carry beside the scheduling the
// chart gives every operand pod (values operands.tolerations and
// operands.priorityClassName): a model that belongs on one tainted pool, or
// a blob that must outrank the jobs around it, says so on the object
// instead of widening every operand's reach.
type PodScheduling struct {
	// tolerations are added to the chart's operand tolerations on every pod
	// of this object, e.g. a taint only one team's GPU pool carries. A node
	// whose NoSchedule or NoExecute taints the pods do not tolerate gets no
	// holder (and is not waited for).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(t, !has(t.operator) || t.operator == 'Equal' || t.operator == 'Exists')",message="scheduling.tolerations[].operator must be Equal or Exists"
	// +kubebuilder:validation:XValidation:rule="self.all(t, !has(t.operator) || t.operator != 'Exists' || !has(t.value) || size(t.value) == 0)",message="scheduling.tolerations[]: operator Exists takes no value; remove value, or use operator Equal"
	// +kubebuilder:validation:XValidation:rule="self.all(t, (has(t.key) && size(t.key) > 0) || (has(t.operator) && t.operator == 'Exists'))",message="scheduling.tolerations[]: an empty key tolerates every taint only with operator Exists; set key, or operator Exists"
	// +kubebuilder:validation:XValidation:rule="self.all(t, !has(t.effect) || t.effect in ['', 'NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="scheduling.tolerations[].effect must be NoSchedule, PreferNoSchedule or NoExecute (or empty for all three)"
	// +kubebuilder:validation:XValidation:rule="self.all(t, !has(t.tolerationSeconds) || (has(t.effect) && t.effect == 'NoExecute'))",message="scheduling.tolerations[].tolerationSeconds needs effect NoExecute: it is how long a pod stays after such a taint appears"
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// priorityClassName replaces the chart's operands.priorityClassName on
	// this object's pods. The PriorityClass must exist: the API server
	// refuses a pod that names one that does not.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	PriorityClassName string `json:"priorityClassName,omitempty"`
}
