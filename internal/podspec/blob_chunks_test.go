// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

func TestChunkListTmpfs(t *testing.T) {
	for _, tc := range []struct {
		size, want int64
	}{
		{1, 1 << 20},
		{64<<30 - 4<<20, 1 << 20},     // 16383 digests and the header: 512 KiB, twice
		{64<<30 - 4<<20 + 1, 2 << 20}, // one chunk more
		{1 << 40, 17 << 20},           // 262144 digests: 2 x 8 MiB and the header
		{314572800, 1 << 20},          // the tests' 300 MiB blob
		{140_000_000_000, 3 << 20},    // a 140 GB model: 33,379 digests
	} {
		if got := chunkListTmpfs(tc.size); got != tc.want {
			t.Errorf("chunkListTmpfs(%d) = %d, want %d", tc.size, got, tc.want)
		}
	}
}

// A flat holder keeps its chunk list in a tmpfs both containers mount and
// name with --chunks-dir; a files-layout holder keeps it in the blob's
// directory and has none.
func TestSourceHolderChunksDir(t *testing.T) {
	h := SourceHolder{Node: "w1", Role: pfsv1alpha1.BlobNodeRelay, Size: 314572800, Page: pfsv1alpha1.PageSize2Mi,
		Upstreams: []string{"10.0.0.1:7470"}, Attempt: 1}
	for _, files := range []bool{false, true} {
		cfg := Config{Image: "img", Binary: "/pfs"}
		if files {
			cfg.SocketVolume = SocketVolumeCSI
		}
		p := BlobSourceHolderPod(cfg, sourceBlob(pvc(""), ""), h)
		i := slices.IndexFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == volChunks })
		if files {
			if i >= 0 {
				t.Errorf("files layout: a chunks volume %+v", p.Spec.Volumes[i])
			}
			for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
				if slices.Contains(c.Args, "--chunks-dir") {
					t.Errorf("files layout: %s has --chunks-dir", c.Name)
				}
			}
			continue
		}
		if i < 0 {
			t.Fatalf("flat: no chunks volume in %+v", p.Spec.Volumes)
		}
		v := p.Spec.Volumes[i].EmptyDir
		if v == nil || v.Medium != corev1.StorageMediumMemory || v.SizeLimit == nil || v.SizeLimit.Value() != 1<<20 {
			t.Errorf("flat: chunks volume %+v, want a 1Mi tmpfs", p.Spec.Volumes[i])
		}
		// The fill writes the list, the server only reads it.
		for i, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
			if !strings.Contains(strings.Join(c.Args, " "), "--chunks-dir "+ChunksDir) {
				t.Errorf("flat: %s args %q lack --chunks-dir %s", c.Name, c.Args, ChunksDir)
			}
			readOnly := i > 0
			if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
				return m.Name == volChunks && m.MountPath == ChunksDir && m.ReadOnly == readOnly
			}) {
				t.Errorf("flat: %s does not mount %s at %s with readOnly %v: %+v", c.Name, volChunks, ChunksDir, readOnly, c.VolumeMounts)
			}
		}
	}
}
