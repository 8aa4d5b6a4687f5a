// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"slices"

	topov1alpha2 "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"packetfs.io/operator/internal/placement"
)

// The reads behind a NUMA decision: the candidate nodes of a pod, and for
// each its NodeResourceTopology (when the CRD is installed), its Node and
// the pods bound to it. internal/placement turns them into NodeTopology and
// decides; nothing here decides.

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
	return mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, podNodeNameField, func(o client.Object) []string {
		if n := o.(*corev1.Pod).Spec.NodeName; n != "" {
			return []string{n}
		}
		return nil
	})
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
// spec.nodeName, else the schedulable Ready nodes matching its nodeSelector.
// A nodeSelector narrows the first two as well: a node picked outside it
// would leave the pod unschedulable (found by the e2e, whose senders are
// pinned by nodeSelector to one of the nodes their blob is Ready on).
func candidateNodes(ctx context.Context, d *Deps, pod *corev1.Pod) ([]string, error) {
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
	if names != nil && len(pod.Spec.NodeSelector) == 0 {
		return names, nil
	}
	nodes := &corev1.NodeList{}
	if err := d.Client.List(ctx, nodes, client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(pod.Spec.NodeSelector)}); err != nil {
		return nil, err
	}
	var out []string
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if names != nil && slices.Contains(names, n.Name) || names == nil && nodeUsable(n) {
			out = append(out, n.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// gatherTopology reads what the decision needs of each node.
func gatherTopology(ctx context.Context, d *Deps, nodes []string) (map[string]*placement.NodeTopology, error) {
	withNRT, err := nrtInstalled(d)
	if err != nil {
		return nil, err
	}
	topo := make(map[string]*placement.NodeTopology, len(nodes))
	for _, name := range nodes {
		if topo[name] != nil {
			continue
		}
		node := &corev1.Node{}
		if found, err := getClusterObject(ctx, d, name, node); err != nil {
			return nil, err
		} else if !found {
			node = nil
		}
		var nrt *topov1alpha2.NodeResourceTopology
		if withNRT {
			nrt = &topov1alpha2.NodeResourceTopology{}
			if found, err := getClusterObject(ctx, d, name, nrt); err != nil {
				return nil, err
			} else if !found {
				nrt = nil
			}
		}
		pods := &corev1.PodList{}
		if node != nil || nrt != nil {
			if err := d.Client.List(ctx, pods, client.MatchingFields{podNodeNameField: name}); err != nil {
				return nil, err
			}
		}
		topo[name] = placement.Topology(name, nrt, node, pods.Items)
	}
	return topo, nil
}

// getClusterObject reads the cluster-scoped object name into obj; false
// when it does not exist.
func getClusterObject(ctx context.Context, d *Deps, name string, obj client.Object) (bool, error) {
	err := d.Client.Get(ctx, types.NamespacedName{Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}
