// SPDX-License-Identifier: Apache-2.0

// Package placement decides where data-plane pods may run and what a NUMA
// policy means for them. Every function is pure.
//
// NUMA: inside a node, aligning a pod's CPUs, memory, hugepages and devices
// in one NUMA zone is the kubelet's job (static CPU manager, Memory Manager,
// Topology Manager single-numa-node). The operator makes every pod eligible
// (Guaranteed QoS, whole CPUs, hugepages and device resources requested) and
// chooses the node and the zone beforehand with Place (numa.go), from the
// NodeResourceTopology objects a publisher such as nfd-topology-updater
// writes, or each node's allocatable minus its pods' requests (topology.go);
// docs/design/numa.md has the rules. spec.numa:
//   - None: no decision; the scheduler places the pod and a kubelet
//     rejection (TopologyAffinityError) is retried like any failure.
//   - Preferred: one zone when one fits, else across zones; a rejection
//     makes the node a misfit and the next attempt goes elsewhere.
//   - Required: one zone or wait; a rejection fails the run at once with
//     that reason: running anyway would be slower than asked.
package placement

import (
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// ReadyBlobNodes returns, sorted, the nodes whose holder reported the blob
// Ready. Consumers of the blob may only run there.
func ReadyBlobNodes(b *pfsv1alpha1.PfsBlob) []string {
	var nodes []string
	for _, n := range b.Status.Nodes {
		if n.State == pfsv1alpha1.BlobNodeReady {
			nodes = append(nodes, n.Node)
		}
	}
	sort.Strings(nodes)
	return nodes
}

// NodeAffinity restricts a pod to the given nodes by name; nil for no nodes,
// meaning no restriction. A metadata.name field selector takes one value,
// so each node is its own term (terms are ORed).
func NodeAffinity(nodes []string) *corev1.Affinity {
	if len(nodes) == 0 {
		return nil
	}
	terms := make([]corev1.NodeSelectorTerm, 0, len(nodes))
	for _, n := range nodes {
		terms = append(terms, corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{
			Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{n}}}})
	}
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
}

// RetryOnTopologyError says whether a TopologyAffinityError is retried under
// a NUMA policy (see the package comment).
func RetryOnTopologyError(p pfsv1alpha1.NUMAPolicy) bool {
	return p != pfsv1alpha1.NUMAPolicyRequired
}

// CPUSet writes a CPU list in Linux cpuset syntax ("0-3,8"); "" for none.
func CPUSet(cpus []int) string {
	if len(cpus) == 0 {
		return ""
	}
	s := append([]int(nil), cpus...)
	sort.Ints(s)
	var parts []string
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] <= s[j]+1 {
			j++
		}
		if s[j] == s[i] {
			parts = append(parts, strconv.Itoa(s[i]))
		} else {
			parts = append(parts, strconv.Itoa(s[i])+"-"+strconv.Itoa(s[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// ValidNUMAZone returns z when it is a zone the status schema accepts.
func ValidNUMAZone(z *int32) *int32 {
	if z == nil || *z < 0 || *z > 1023 {
		return nil
	}
	v := *z
	return &v
}

// AffinityNodes are the node names a NodeAffinity restricts a pod to, in
// order; nil when aff restricts nothing by name.
func AffinityNodes(aff *corev1.Affinity) []string {
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	var nodes []string
	for _, term := range aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn {
				nodes = append(nodes, f.Values...)
			}
		}
	}
	return nodes
}
