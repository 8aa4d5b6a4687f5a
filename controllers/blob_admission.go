// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
)

// What a blob with a source may use, decided before any of its pods exist:
// the operator's policy on host paths, and whether a node has the memory to
// hold the blob. Pure functions over gathered inputs.

// SourcePolicy is the operator's policy on blob sources; it comes from the
// manager's flags --host-path-sources and --host-path-prefixes.
type SourcePolicy struct {
	// HostPathEnabled allows spec.source.hostPath at all.
	HostPathEnabled bool
	// HostPathPrefixes are the directories a hostPath source must be in
	// (the directory itself or beneath it).
	HostPathPrefixes []string
}

// hostPathHint names the knobs an administrator turns.
const hostPathHint = "the chart values sources.hostPath.enabled and sources.hostPath.allowedPrefixes " +
	"(manager flags --host-path-sources=enabled and --host-path-prefixes)"

// checkSourcePolicy is nil when the blob's source is allowed, else the
// verdict SourceNotAllowed whose message names the chart values.
func checkSourcePolicy(b *pfsv1alpha1.PfsBlob, pol SourcePolicy) *verdict {
	src := b.Spec.Source
	if src == nil || src.HostPath == nil {
		return nil
	}
	p := path.Clean(src.HostPath.Path)
	if !pol.HostPathEnabled {
		return &verdict{Reason: pfsv1alpha1.ReasonSourceNotAllowed, Message: fmt.Sprintf(
			"spec.source.hostPath %s is disabled in this operator: a host path is a node privilege; an administrator allows it with %s, "+
				"or use spec.source.persistentVolumeClaim", p, hostPathHint)}
	}
	for _, prefix := range pol.HostPathPrefixes {
		if underPrefix(p, prefix) {
			return nil
		}
	}
	allowed := "none"
	if len(pol.HostPathPrefixes) > 0 {
		allowed = strings.Join(pol.HostPathPrefixes, ", ")
	}
	return &verdict{Reason: pfsv1alpha1.ReasonSourceNotAllowed, Message: fmt.Sprintf(
		"spec.source.hostPath %s is not under an allowed prefix (%s): move the data there, or an administrator adds a prefix with %s",
		p, allowed, hostPathHint)}
}

// underPrefix reports whether p is prefix or beneath it (both clean and absolute).
func underPrefix(p, prefix string) bool {
	prefix = path.Clean(prefix)
	return prefix == "/" || p == prefix || strings.HasPrefix(p, prefix+"/")
}

// admission is the decision for one node before its holder pod is created.
type admission struct {
	// OK says the holder may be created, mapping Page.
	OK   bool
	Page pfsv1alpha1.PageSize
	// Fallback says why Page is 4Ki instead of spec.pageSize (pageFallback Allow).
	Fallback string
	// Message says why the node cannot hold the blob (OK false).
	Message string
}

// admitNode decides whether node can hold a blob of size bytes: its
// allocatable hugepages-<page> (or memory for THP/4Ki) minus what the
// non-terminated pods on it request (requested) must fit the holder's
// request, computed exactly as for the pod (podspec.SourceHolderResources:
// under the CSI plugin memory += size and no hugepages). With
// pageFallback Allow a node short of hugepages maps 4Ki pages, whose tmpfs
// is counted in memory, if that fits. A holder replicating over transport
// UDP or AFXDP needs podspec.DatagramMemory more memory.
func admitNode(cfg podspec.Config, node *corev1.Node, requested corev1.ResourceList, size int64,
	page pfsv1alpha1.PageSize, fallback pfsv1alpha1.PageFallback, transport pfsv1alpha1.Transport) admission {
	free := func(name corev1.ResourceName) int64 {
		alloc := node.Status.Allocatable[name]
		used := requested[name]
		return alloc.Value() - used.Value()
	}
	need := func(p pfsv1alpha1.PageSize) (corev1.ResourceName, int64) {
		res := podspec.SourceHolderResources(cfg, size, p)
		// A holder of the files layout asks for no hugepages whatever the
		// page: its tmpfs is memory.
		if q, ok := res.Requests[podspec.HugePagesResource(p)]; ok {
			return podspec.HugePagesResource(p), q.Value()
		}
		q := res.Requests[corev1.ResourceMemory]
		extra := podspec.DatagramMemory(transport)
		return corev1.ResourceMemory, q.Value() + extra.Value()
	}
	res, want := need(page)
	have := free(res)
	if want <= have {
		return admission{OK: true, Page: page}
	}
	short := fmt.Sprintf("node %s has %s of %s free, blob needs %s", node.Name, qty(have), res, qty(want))
	if res == corev1.ResourceMemory || fallback == pfsv1alpha1.PageFallbackNever {
		return admission{Message: short}
	}
	_, wantMem := need(pfsv1alpha1.PageSize4Ki)
	haveMem := free(corev1.ResourceMemory)
	if wantMem <= haveMem {
		return admission{OK: true, Page: pfsv1alpha1.PageSize4Ki, Fallback: short + ": the holder maps 4Ki pages instead (spec.pageFallback Allow)"}
	}
	return admission{Message: fmt.Sprintf("%s; on 4Ki pages it needs %s of memory and the node has %s free", short, qty(wantMem), qty(haveMem))}
}

// qty writes bytes as a binary quantity ("512Mi"; "0" below zero).
func qty(n int64) string {
	if n < 0 {
		n = 0
	}
	return resource.NewQuantity(n, resource.BinarySI).String()
}

// nodeUsable: a node new holders may go to (schedulable and Ready).
func nodeUsable(n *corev1.Node) bool {
	return !n.Spec.Unschedulable && podspec.NodeReady(n)
}
