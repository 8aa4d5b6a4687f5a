// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	corev1 "k8s.io/api/core/v1"
	schedcorev1 "k8s.io/component-helpers/scheduling/corev1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// tolerations are one pod's: the operand tolerations (--operand-tolerations)
// followed by the object's own (spec.scheduling.tolerations), copied so the
// pod spec shares nothing with the config or the object.
func (cfg Config) tolerations(s *pfsv1alpha1.PodScheduling) []corev1.Toleration {
	var own []corev1.Toleration
	if s != nil {
		own = s.Tolerations
	}
	if len(cfg.Operands.Tolerations)+len(own) == 0 {
		return nil
	}
	out := make([]corev1.Toleration, 0, len(cfg.Operands.Tolerations)+len(own))
	for _, list := range [][]corev1.Toleration{cfg.Operands.Tolerations, own} {
		for i := range list {
			out = append(out, *list[i].DeepCopy())
		}
	}
	return out
}

// priorityClass is one pod's PriorityClass: the object's own when it names
// one, else the operand default (--operand-priority-class).
func (cfg Config) priorityClass(s *pfsv1alpha1.PodScheduling) string {
	if s != nil && s.PriorityClassName != "" {
		return s.PriorityClassName
	}
	return cfg.Operands.PriorityClassName
}

// UntoleratedTaint is the first NoSchedule or NoExecute taint of the node
// that an object's pods would not tolerate (ok false when there is none):
// the operator plans a pinned holder only where the scheduler would bind it,
// as the DaemonSet controller does for the holders it runs.
func (cfg Config) UntoleratedTaint(n *corev1.Node, s *pfsv1alpha1.PodScheduling) (corev1.Taint, bool) {
	return schedcorev1.FindMatchingUntoleratedTaint(n.Spec.Taints, cfg.tolerations(s), func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	})
}

// NodeReady says whether the node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
