// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ChunksDir is where a flat source holder keeps its blob's chunk list
// (pfs --chunks-dir), so the server of its later relays sends it and they
// verify by chunks, not by every file's sha256. A small tmpfs of its own:
// the blob's hugetlbfs volume takes no write(2), and its tmpfs volume is
// sized to the blob alone. Holders of the files layout keep the list in the
// blob's directory (NAME.d/chunks) and need none.
const ChunksDir = "/run/pfs-chunks"

const volChunks = "chunks"

// Chunk list file of pfs (dataplane/src/repl/blob_chunks.c): a 32-byte
// header and a 32-byte BLAKE3 digest per 4 MiB chunk.
const (
	chunkBytes      = 4 << 20
	chunkListHeader = 32
	chunkDigest     = 32
)

// chunkListTmpfs is the chunks volume's size for a blob of size bytes: the
// list twice (a new one is written beside the old before replacing it), in
// MiB (1 MiB holds the list of a blob of up to 64 GiB less a chunk twice).
func chunkListTmpfs(size int64) int64 {
	list := chunkListHeader + (size+chunkBytes-1)/chunkBytes*chunkDigest
	return roundUp(2*list, 1<<20)
}

// chunksVolume is the chunks tmpfs for a blob of size bytes and its mount
// (both holder containers). Its pages are charged to the pod's memory
// cgroup: SourceHolderResources counts them.
func chunksVolume(size int64) (corev1.Volume, corev1.VolumeMount) {
	q := resource.NewQuantity(chunkListTmpfs(size), resource.BinarySI)
	vol := corev1.Volume{Name: volChunks, VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: q}}}
	return vol, corev1.VolumeMount{Name: volChunks, MountPath: ChunksDir}
}
