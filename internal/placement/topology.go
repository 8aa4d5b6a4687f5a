// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"strconv"
	"strings"
	"time"

	topov1alpha2 "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The adapter from what the cluster publishes to NodeTopology: a
// NodeResourceTopology (NFD's nfd-topology-updater writes one per node,
// zones of type "Node" named "node-<id>") and the Node with the pods bound
// to it. Pure conversions; the controller does the reading.

// nrtZoneType is the zone type of a NUMA node in a NodeResourceTopology.
const nrtZoneType = "Node"

// Topology builds what the decision knows of one node: zones from nrt
// (nil: the CRD is absent or the node has no object), the node-wide free
// resources from node (nil: unknown) and the pods bound to it.
func Topology(name string, nrt *topov1alpha2.NodeResourceTopology, node *corev1.Node, pods []corev1.Pod) *NodeTopology {
	n := &NodeTopology{Name: name}
	if nrt != nil {
		n.HasNRT = true
		n.Zones = nrtZones(nrt)
		n.Updated = nrtUpdated(nrt)
	}
	if node != nil {
		n.Allocatable = resources(node.Status.Allocatable)
		n.Free = resources(node.Status.Allocatable)
		for r, v := range resources(SumRequests(pods)) {
			n.Free[r] -= v
		}
	}
	n.LastPodChange = LastPodChange(pods)
	return n
}

// nrtZones are the NUMA zones of nrt, in its order.
func nrtZones(nrt *topov1alpha2.NodeResourceTopology) []Zone {
	zones := make([]Zone, 0, len(nrt.Zones))
	for _, z := range nrt.Zones {
		if z.Type != nrtZoneType {
			continue
		}
		zone := Zone{Name: z.Name, ID: zoneID(z.Name), Available: Resources{}, Allocatable: Resources{}}
		for _, ri := range z.Resources {
			name := corev1.ResourceName(ri.Name)
			zone.Available[name] = amountOf(name, ri.Available)
			zone.Allocatable[name] = amountOf(name, ri.Allocatable)
		}
		zones = append(zones, zone)
	}
	return zones
}

// zoneID reads the NUMA id of a zone named "node-<id>"; -1 otherwise.
func zoneID(name string) int32 {
	s, ok := strings.CutPrefix(name, "node-")
	if !ok {
		return -1
	}
	id, err := strconv.ParseInt(s, 10, 32)
	if err != nil || id < 0 || id > 1023 {
		return -1
	}
	return int32(id)
}

// nrtUpdated is when nrt was last written: the newest time in its
// managedFields (the apiserver stamps every write); zero when none.
func nrtUpdated(nrt *topov1alpha2.NodeResourceTopology) time.Time {
	var t time.Time
	for _, mf := range nrt.ManagedFields {
		if mf.Time != nil && mf.Time.After(t) {
			t = mf.Time.Time
		}
	}
	return t
}

// LastPodChange is the newest time a pod on the node was created, bound,
// ended or started terminating: after it, a NodeResourceTopology written
// earlier may not count that pod.
func LastPodChange(pods []corev1.Pod) time.Time {
	var t time.Time
	later := func(u time.Time) {
		if u.After(t) {
			t = u
		}
	}
	for i := range pods {
		p := &pods[i]
		later(p.CreationTimestamp.Time)
		if p.DeletionTimestamp != nil {
			later(p.DeletionTimestamp.Time)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
				later(c.LastTransitionTime.Time)
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			if term := cs.State.Terminated; term != nil {
				later(term.FinishedAt.Time)
			}
		}
	}
	return t
}

// PodRequests is what the scheduler counts for a pod: the sum of its
// containers' requests, or an init container's when larger.
func PodRequests(p *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range p.Spec.Containers {
		for k, v := range c.Resources.Requests {
			q := out[k]
			q.Add(v)
			out[k] = q
		}
	}
	for _, c := range p.Spec.InitContainers {
		for k, v := range c.Resources.Requests {
			if q := out[k]; v.Cmp(q) > 0 {
				out[k] = v.DeepCopy()
			}
		}
	}
	return out
}

// SumRequests adds up the requests of the pods that still hold resources
// (not Succeeded or Failed).
func SumRequests(pods []corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := range pods {
		if ph := pods[i].Status.Phase; ph == corev1.PodSucceeded || ph == corev1.PodFailed {
			continue
		}
		for k, v := range PodRequests(&pods[i]) {
			q := out[k]
			q.Add(v)
			out[k] = q
		}
	}
	return out
}

// PodResources is a pod's request in the decision's units.
func PodResources(p *corev1.Pod) Resources { return resources(PodRequests(p)) }

// resources converts a resource list: cpu in millicores, the rest in units.
func resources(rl corev1.ResourceList) Resources {
	out := make(Resources, len(rl))
	for name, q := range rl {
		out[name] = amountOf(name, q)
	}
	return out
}

func amountOf(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}
