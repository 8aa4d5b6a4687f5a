// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"maps"
	"slices"

	topov1alpha2 "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"packetfs.io/operator/internal/placement"
)

// The reads behind a NUMA decision (gatherNodes): the cluster's nodes and,
// for each, its NodeResourceTopology (when the CRD is installed) and the
// pods bound to it; and the pure choice of a pod's candidate nodes among
// them. internal/placement turns the reads into NodeTopology and decides.

// nrtGroupKind is the NodeResourceTopology kind, read at v1alpha2.
var nrtGroupKind = schema.GroupKind{Group: topov1alpha2.SchemeGroupVersion.Group, Kind: "NodeResourceTopology"}

// podNodeNameField indexes the pod cache by spec.nodeName: the blob
// admission and the NUMA decision count what a node's pods request. The
// manager already holds every pod in its cache (it watches holder pods
// cluster wide), so a per-node list costs no apiserver call, unlike a
// field-selector list through the API reader per node and reconcile.
const podNodeNameField = "spec.nodeName"

// AddIndexes registers the cache indexes the reconcilers share (once per
// manager, before the reconcilers are set up).
func AddIndexes(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, podNodeNameField, func(o client.Object) []string {
		if n := o.(*corev1.Pod).Spec.NodeName; n != "" {
			return []string{n}
		}
		return nil
	}); err != nil {
		return err
	}
	for field, fn := range mountIndexes() {
		if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, field, fn); err != nil {
			return err
		}
	}
	return nil
}

// nrtInstalled discovers the NodeResourceTopology CRD (v1alpha2) through
// the REST mapper, which looks again when a kind is missing: a CRD
// installed later is found then. Absent is not an error.
func nrtInstalled(d *Deps) (bool, error) {
	_, err := d.Client.RESTMapper().RESTMapping(nrtGroupKind, topov1alpha2.SchemeGroupVersion.Version)
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err):
		return false, nil
	}
	return false, err
}

// candidateNodes are the nodes pod may run on: its node affinity (the
// blob's Ready nodes), within spec.nodeName when set; without affinity
// spec.nodeName, else the schedulable Ready nodes (of nodes, the cluster's)
// matching its nodeSelector. A nodeSelector narrows the first two as well:
// a node picked outside it would leave the pod unschedulable (found by the
// e2e, whose senders are pinned by nodeSelector to one of the nodes their
// blob is Ready on). Pure.
func candidateNodes(pod *corev1.Pod, nodes []corev1.Node) []string {
	var names []string
	if aff := placement.AffinityNodes(pod.Spec.Affinity); aff != nil {
		names = aff
		if pin := pod.Spec.NodeName; pin != "" {
			names = nil
			if slices.Contains(aff, pin) {
				names = []string{pin}
			}
		}
	} else if pin := pod.Spec.NodeName; pin != "" {
		names = []string{pin}
	}
	if names != nil && len(pod.Spec.NodeSelector) == 0 && !labelTerms(pod.Spec.Affinity) {
		return names
	}
	// The pod's nodeSelector and required node affinity (the operand
	// affinity of --operand-node-affinity, and the pins) as the scheduler
	// and the kubelet's admission apply them.
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	var out []string
	for i := range nodes {
		n := &nodes[i]
		if ok, err := required.Match(n); !ok || err != nil {
			continue
		}
		if names != nil && slices.Contains(names, n.Name) || names == nil && nodeUsable(n) {
			out = append(out, n.Name)
		}
	}
	slices.Sort(out)
	return out
}

// labelTerms: the required node affinity asks for node labels, not only
// for node names.
func labelTerms(aff *corev1.Affinity) bool {
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return false
	}
	for _, t := range aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if len(t.MatchExpressions) > 0 {
			return true
		}
	}
	return false
}

// gatherNodes reads what a NUMA decision may need: the cluster's nodes and
// the topology of every node that has a Node or a NodeResourceTopology
// (a pod's candidates are among them; a name without either is unknown to
// the decision, as it would be read).
func gatherNodes(ctx context.Context, d *Deps) ([]corev1.Node, map[string]*placement.NodeTopology, error) {
	nodes := &corev1.NodeList{}
	if err := d.Client.List(ctx, nodes); err != nil {
		return nil, nil, err
	}
	withNRT, err := nrtInstalled(d)
	if err != nil {
		return nil, nil, err
	}
	byName := make(map[string]*corev1.Node, len(nodes.Items))
	for i := range nodes.Items {
		byName[nodes.Items[i].Name] = &nodes.Items[i]
	}
	nrts := map[string]*topov1alpha2.NodeResourceTopology{}
	if withNRT {
		list := &topov1alpha2.NodeResourceTopologyList{}
		if err := d.Client.List(ctx, list); err != nil {
			return nil, nil, err
		}
		for i := range list.Items {
			nrts[list.Items[i].Name] = &list.Items[i]
		}
	}
	topo := make(map[string]*placement.NodeTopology, len(byName)+len(nrts))
	for _, names := range [][]string{slices.Sorted(maps.Keys(byName)), slices.Sorted(maps.Keys(nrts))} {
		for _, name := range names {
			if topo[name] != nil {
				continue
			}
			pods := &corev1.PodList{}
			if err := d.Client.List(ctx, pods, client.MatchingFields{podNodeNameField: name}); err != nil {
				return nil, nil, err
			}
			topo[name] = placement.Topology(name, nrts[name], byName[name], pods.Items)
		}
	}
	return nodes.Items, topo, nil
}
