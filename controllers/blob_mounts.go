// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
)

// Which pods mount which blob as a volume of its files, for the finalizer
// pfs.packetfs.io/mounted and status.mountedBy. Pure functions over a pod
// and the csi.packetfs.io PersistentVolumes; the gather and the watch's
// mapping (pfsblob_mounts.go) call them.

// MountedFinalizer keeps a PfsBlob, and so its holders, while pods mount it.
const MountedFinalizer = "pfs.packetfs.io/mounted"

// maxMountedBy caps status.mountedBy (the API's MaxItems);
// status.mountedPods has the full count.
const maxMountedBy = 32

// maxPodsInMessage is how many pods the Mounted condition's message names.
const maxPodsInMessage = 5

// consumerBlob is the blob a csi.packetfs.io volume's attributes name
// (consumer volumes only: the holder volume and the socket directory name
// none), in defaultNS unless the attributes say another namespace.
func consumerBlob(driver string, attrs map[string]string, defaultNS string) (types.NamespacedName, bool) {
	name := attrs[podspec.CSIAttrConsumerBlob]
	if driver != podspec.CSIDriverName || name == "" {
		return types.NamespacedName{}, false
	}
	ns := attrs[podspec.CSIAttrConsumerNamespace]
	if ns == "" {
		ns = defaultNS
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}

// inlineBlobs are the blobs a pod's inline (ephemeral) CSI volumes name.
func inlineBlobs(p *corev1.Pod) []types.NamespacedName {
	var out []types.NamespacedName
	for _, v := range p.Spec.Volumes {
		if v.CSI == nil {
			continue
		}
		if b, ok := consumerBlob(v.CSI.Driver, v.CSI.VolumeAttributes, p.Namespace); ok {
			out = append(out, b)
		}
	}
	return out
}

// podClaims are the PersistentVolumeClaims a pod's volumes name, as
// "namespace/name".
func podClaims(p *corev1.Pod) []types.NamespacedName {
	var out []types.NamespacedName
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			out = append(out, types.NamespacedName{Namespace: p.Namespace, Name: v.PersistentVolumeClaim.ClaimName})
		}
	}
	return out
}

// pvBlob is the blob a csi.packetfs.io PersistentVolume names and the claim
// it is bound to (spec.claimRef). A PV without a namespace attribute names
// a blob in its claim's namespace, the namespace of the pods that use it.
func pvBlob(pv *corev1.PersistentVolume) (blob, claim types.NamespacedName, ok bool) {
	ref := pv.Spec.ClaimRef
	if pv.Spec.CSI == nil || ref == nil || ref.Name == "" {
		return blob, claim, false
	}
	claim = types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
	blob, ok = consumerBlob(pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeAttributes, ref.Namespace)
	return blob, claim, ok
}

// blobsMountedBy are the blobs pod p mounts, sorted and each once: those its
// inline csi.packetfs.io volumes name, and those of the csi.packetfs.io
// PersistentVolumes (among pvs) bound to claims it uses. A pod that has
// ended (Succeeded, Failed) mounts nothing any more.
func blobsMountedBy(p *corev1.Pod, pvs []corev1.PersistentVolume) []types.NamespacedName {
	if podEnded(p) {
		return nil
	}
	return blobsNamedBy(p, pvs)
}

// blobsNamedBy are the blobs pod p's volumes name, whatever its phase.
func blobsNamedBy(p *corev1.Pod, pvs []corev1.PersistentVolume) []types.NamespacedName {
	out := inlineBlobs(p)
	if claims := podClaims(p); len(claims) > 0 {
		for i := range pvs {
			if b, c, ok := pvBlob(&pvs[i]); ok && slices.Contains(claims, c) {
				out = append(out, b)
			}
		}
	}
	slices.SortFunc(out, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	return slices.Compact(out)
}

// mayMountBlobs is the watch's cheap filter: a pod with a csi.packetfs.io
// volume naming a blob, or with any claim (which may be bound to one).
func mayMountBlobs(p *corev1.Pod) bool {
	return len(inlineBlobs(p)) > 0 || len(podClaims(p)) > 0
}

// setMounted writes, from the pods ("namespace/name", sorted) that mount a
// blob, status.mountedBy and mountedPods and the Mounted
// condition: True while pods mount the blob (reason
// DeletionWaitsForMounts once it is being deleted), False once they are
// gone; a blob never mounted gets no condition. The message names at most
// maxPodsInMessage pods, sorted, so it changes only when they do.
func setMounted(d decision, st *pfsv1alpha1.PfsBlobStatus, pods []string, deleting bool) {
	st.MountedPods = int32(len(pods))
	st.MountedBy = nil
	if len(pods) > 0 {
		st.MountedBy = append([]string(nil), pods[:min(len(pods), maxMountedBy)]...)
	}
	if len(pods) == 0 {
		if meta.FindStatusCondition(*d.conds, pfsv1alpha1.ConditionMounted) != nil {
			d.cond(pfsv1alpha1.ConditionMounted, false, pfsv1alpha1.ReasonNotMounted, "no pod mounts the blob")
		}
		return
	}
	names := strings.Join(pods[:min(len(pods), maxPodsInMessage)], ", ")
	if more := len(pods) - maxPodsInMessage; more > 0 {
		names += fmt.Sprintf(" and %d more (status.mountedBy)", more)
	}
	if deleting {
		d.cond(pfsv1alpha1.ConditionMounted, true, pfsv1alpha1.ReasonDeletionWaitsForMounts, fmt.Sprintf(
			"the blob is being deleted and keeps its holders while %d pod(s) mount it: %s; it goes once they are deleted",
			len(pods), names))
		return
	}
	d.cond(pfsv1alpha1.ConditionMounted, true, pfsv1alpha1.ReasonMountedByPods,
		fmt.Sprintf("%d pod(s) mount the blob: %s", len(pods), names))
}
