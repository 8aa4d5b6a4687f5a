// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// affinity is what an operand pod's spec.affinity becomes: the operand
// node affinity (--operand-node-affinity), with the nodes the operator
// placed the pod on, when it did (pin), ANDed into its required terms.
// Node selector terms are ORed and the requirements inside one ANDed, so
// the AND of two selectors is every pair of their terms merged.
func (cfg Config) affinity(pin *corev1.Affinity) *corev1.Affinity {
	op := cfg.Operands.NodeAffinity
	var pinned *corev1.NodeSelector
	if pin != nil && pin.NodeAffinity != nil {
		pinned = pin.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	if op == nil {
		return pin
	}
	na := op.DeepCopy()
	na.RequiredDuringSchedulingIgnoredDuringExecution = andSelectors(na.RequiredDuringSchedulingIgnoredDuringExecution, pinned)
	return &corev1.Affinity{NodeAffinity: na}
}

// andSelectors is a node selector a node matches when it matches both.
func andSelectors(a, b *corev1.NodeSelector) *corev1.NodeSelector {
	switch {
	case a == nil || len(a.NodeSelectorTerms) == 0:
		return b.DeepCopy()
	case b == nil || len(b.NodeSelectorTerms) == 0:
		return a.DeepCopy()
	}
	out := &corev1.NodeSelector{}
	for _, ta := range a.NodeSelectorTerms {
		for _, tb := range b.NodeSelectorTerms {
			t := ta.DeepCopy()
			t.MatchExpressions = append(t.MatchExpressions, tb.MatchExpressions...)
			t.MatchFields = append(t.MatchFields, tb.MatchFields...)
			out.NodeSelectorTerms = append(out.NodeSelectorTerms, *t)
		}
	}
	return out
}

// Admits says whether an operand pod may run on the node by the operand
// node affinity's required terms: the operator plans holders only on such
// nodes, so a pod it pins never waits on a node the scheduler refuses.
func (p OperandPolicy) Admits(n *corev1.Node) bool {
	if p.NodeAffinity == nil || p.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	ok, err := nodeaffinity.NewLazyErrorNodeSelector(p.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution).Match(n)
	return ok && err == nil
}
