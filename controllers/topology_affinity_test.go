// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestCandidateNodesAffinity: a pod's required node affinity (the operand
// affinity, merged with a pin) narrows the nodes a NUMA decision looks
// at, as the scheduler and the kubelet's admission would.
func TestCandidateNodesAffinity(t *testing.T) {
	gpu := testNode("w0")
	gpu.Labels = map[string]string{"pool": "gpu"}
	nodes := []corev1.Node{*gpu, *testNode("w1")}
	term := func(fields ...string) corev1.NodeSelectorTerm {
		t := corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"gpu"}}}}
		if len(fields) > 0 {
			t.MatchFields = []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: fields}}
		}
		return t
	}
	pod := func(terms ...corev1.NodeSelectorTerm) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}}}
	}
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want []string
	}{
		"the GPU pool alone":              {pod(term()), []string{"w0"}},
		"pinned to a GPU node":            {pod(term("w0")), []string{"w0"}},
		"pinned to a node the pool lacks": {pod(term("w1")), nil},
		"no affinity":                     {&corev1.Pod{}, []string{"w0", "w1"}},
	} {
		if got := candidateNodes(tc.pod, nodes); !slices.Equal(got, tc.want) {
			t.Errorf("%s: candidates %v, want %v", name, got, tc.want)
		}
	}
}
