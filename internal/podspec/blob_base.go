// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// A source blob with spec.base on a node where the base is Ready: both
// holder containers map the base from the base's holder on the node (its
// socket in the namespace's socket directory, its token mounted at
// BaseTokenDir). The relay's init container asks its upstreams for delta
// grams and rebuilds over it; both serve delta grams against it.

const volBaseToken = "base-token"

// deltaMemory is what each holder container needs beside the blob with a
// base: the base's index (~24 bytes per 8 KiB of base: 3 MiB per GiB), an
// encoder per delta client (~24 MiB each: 4 MiB of blob, its compressed
// gram, zstd's contexts), the receiving side's gram and applier. Enough for
// two delta clients at once (a tree's two children) and a 16 GiB base.
var deltaMemory = resource.MustParse("96Mi")

// deltaBaseArgs are the pfs options that map spec.base from its holder.
func deltaBaseArgs(b *pfsv1alpha1.PfsBlob, base string) []string {
	args := []string{"--delta-base-socket", SocketPath(b.Namespace, base), "--delta-base-token-file", BaseTokenFile}
	if b.Spec.Base != nil && b.Spec.Base.ZstdLevel > 0 {
		args = append(args, "--delta-zstd-level", strconv.Itoa(int(b.Spec.Base.ZstdLevel)))
	}
	return args
}

// baseTokenVolume mounts the base's token Secret at BaseTokenDir.
func baseTokenVolume(base string) (corev1.Volume, corev1.VolumeMount) {
	return tokenVolumeNamed(volBaseToken, base), corev1.VolumeMount{Name: volBaseToken, MountPath: BaseTokenDir, ReadOnly: true}
}

// addMemory adds @q to a holder container's memory request and limit.
func addMemory(res *corev1.ResourceRequirements, q resource.Quantity) {
	for _, l := range []corev1.ResourceList{res.Requests, res.Limits} {
		m := l[corev1.ResourceMemory]
		m.Add(q)
		l[corev1.ResourceMemory] = m
	}
}
