// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// Under the CSI plugin (--socket-volume=csi) a source blob's holders keep
// the blob as files ("files layout", docs/design/blob-layout.md): one
// regular file per manifest entry on a tmpfs the plugin mounts for the
// holder, so consumer pods can mount those very files read-only as a
// volume. The tmpfs pages are charged to the holder's memory cgroup (the
// holder touches every page first), so the holder asks for memory += size
// and no hugepages: tmpfs gets huge pages only as THP (huge=within_size).
// Under --socket-volume=hostPath nothing changes: one flat file on a
// hugetlbfs or tmpfs emptyDir.

// Volume attributes of the CSI plugin's holder volume (design29 section 3).
const (
	// CSIAttrRole says which kind of volume a pod asks for; CSIRoleHolder
	// is a blob holder's writable tmpfs.
	CSIAttrRole   = "packetfs.io/role"
	CSIRoleHolder = "holder"
	// CSIAttrBlob is the blob's name (the namespace is the pod's).
	CSIAttrBlob = "packetfs.io/blob"
	// CSIAttrPage is the page kind as the API names it (2Mi, 1Gi, THP,
	// 4Ki): huge=within_size for the first three, huge=never for 4Ki.
	CSIAttrPage = "packetfs.io/page"
	// CSIAttrSize is the blob's size in bytes; the plugin sizes the tmpfs
	// to it plus slack for the tail and the progress file.
	CSIAttrSize = "packetfs.io/size"
	// CSIAttrLayout is how the holder keeps the blob: CSILayoutFiles (the
	// default) or CSILayoutFlat, one file holding a fill's bytes, which
	// the plugin puts on hugetlbfs for 2Mi and 1Gi pages.
	CSIAttrLayout  = "packetfs.io/layout"
	CSILayoutFiles = "files"
	CSILayoutFlat  = "flat"
)

// FillDir is where a fill's holder keeps its one file on the plugin's
// volume: the directory a consumer's volume shows, as for a source blob's
// files (<blob>.d/files), so consumers see one file named for the blob.
func FillDir(blob string) string { return BlobDir + "/" + blob + ".d/files" }

// Attributes a consumer's volume (inline, or a PersistentVolume's) names a
// blob with; the controller reads them to know which pods mount a blob.
const (
	// CSIAttrConsumerBlob is the blob's name.
	CSIAttrConsumerBlob = "blob"
	// CSIAttrConsumerNamespace is the blob's namespace; absent means the
	// pod's own.
	CSIAttrConsumerNamespace = "namespace"
)

// FilesLayout reports whether source holders keep their blob as files on
// the CSI plugin's tmpfs (--socket-volume=csi).
func (cfg Config) FilesLayout() bool { return cfg.SocketVolume == SocketVolumeCSI }

// SourceHolderResources are the resources of each container of a source
// blob's holder for size bytes on page, as the pod asks for them (admission
// counts exactly these): in the files layout memory += size rounded to
// 4 KiB and no hugepages; otherwise HolderResources and the tmpfs of the
// blob's chunk list (blob_chunks.go).
func SourceHolderResources(cfg Config, size int64, page pfsv1alpha1.PageSize) corev1.ResourceRequirements {
	if !cfg.FilesLayout() {
		res, _ := HolderResources(cfg, size, page)
		addMemory(&res, *resource.NewQuantity(chunkListTmpfs(size), resource.BinarySI))
		return res
	}
	memory := holderBaseMemory.DeepCopy()
	memory.Add(*resource.NewQuantity(roundUp(size, 4096), resource.BinarySI))
	return guaranteedQ(cfg.holderCPU(), memory, nil)
}

// sourceHolderStorage is a source holder's resources and blob volume, and
// the create options that choose the layout: the CSI holder volume and
// --layout files under the plugin, else HolderResources' emptyDir and no
// option (flat, the CLI's default).
func sourceHolderStorage(cfg Config, b *pfsv1alpha1.PfsBlob, size int64, page pfsv1alpha1.PageSize) (
	corev1.ResourceRequirements, corev1.Volume, []string) {
	if !cfg.FilesLayout() {
		_, vol := HolderResources(cfg, size, page)
		return SourceHolderResources(cfg, size, page), vol, nil
	}
	vol := csiHolderVolume(b, size, page, CSILayoutFiles)
	return SourceHolderResources(cfg, size, page), vol, []string{"--layout", "files"}
}

// csiHolderVolume is the CSI plugin's holder volume for b's holder: a
// fresh file system per pod (internal/csinode, holder.go) for size bytes
// on page, in layout.
func csiHolderVolume(b *pfsv1alpha1.PfsBlob, size int64, page pfsv1alpha1.PageSize, layout string) corev1.Volume {
	attrs := map[string]string{
		CSIAttrRole: CSIRoleHolder,
		CSIAttrBlob: b.Name,
		CSIAttrPage: string(pageOrDefault(page)),
		CSIAttrSize: strconv.FormatInt(size, 10),
	}
	if layout != CSILayoutFiles {
		attrs[CSIAttrLayout] = layout
	}
	return corev1.Volume{Name: volBlob, VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
		Driver: CSIDriverName, VolumeAttributes: attrs,
	}}}
}

// pageOrDefault is page, or 2Mi (the API default) when unset.
func pageOrDefault(p pfsv1alpha1.PageSize) pfsv1alpha1.PageSize {
	if p == "" {
		return pfsv1alpha1.PageSize2Mi
	}
	return p
}
