// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// A holder given spec.base maps it in both containers (socket directory
// and base token mounted), asks for and serves delta grams, and has the
// delta working memory on top; without it the pod is unchanged.
func TestBlobSourceHolderPodWithBase(t *testing.T) {
	cfg := Config{Image: "img", Binary: "/pfs"}
	b := sourceBlob(pvc(""), "")
	b.Spec.Base = &pfsv1alpha1.BlobBase{Name: "model-v1", ZstdLevel: 9}
	const baseArgs = "--delta-base-socket /run/packetfs/ns/model-v1.sock --delta-base-token-file /etc/packetfs/base-token/token --delta-zstd-level 9"
	for _, role := range []pfsv1alpha1.BlobNodeRole{pfsv1alpha1.BlobNodeOrigin, pfsv1alpha1.BlobNodeRelay} {
		h := SourceHolder{Node: "w1", Role: role, Size: 314572800, Page: pfsv1alpha1.PageSize2Mi,
			Upstreams: []string{"10.0.0.1:7470"}, Attempt: 1}
		plain := BlobSourceHolderPod(cfg, b, h)
		h.Base = "model-v1"
		p := BlobSourceHolderPod(cfg, b, h)
		create, serve := p.Spec.InitContainers[0], p.Spec.Containers[0]
		for _, c := range []corev1.Container{create, serve} {
			if !strings.Contains(strings.Join(c.Args, " "), baseArgs) {
				t.Errorf("%s %s: args %q lack %q", role, c.Name, c.Args, baseArgs)
			}
			mounts := map[string]string{}
			for _, m := range c.VolumeMounts {
				mounts[m.Name] = m.MountPath
			}
			if mounts[volSockets] != SocketDir("ns") || mounts[volBaseToken] != BaseTokenDir {
				t.Errorf("%s %s: mounts %v", role, c.Name, mounts)
			}
			mem, plainMem := c.Resources.Limits[corev1.ResourceMemory], plain.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]
			plainMem.Add(deltaMemory)
			if mem.Cmp(plainMem) != 0 {
				t.Errorf("%s %s: memory %s, want %s", role, c.Name, mem.String(), plainMem.String())
			}
		}
		if len(p.Spec.Volumes) != len(plain.Spec.Volumes)+1 || p.Spec.Volumes[len(p.Spec.Volumes)-1].Secret == nil ||
			p.Spec.Volumes[len(p.Spec.Volumes)-1].Secret.SecretName != TokenSecretName("model-v1") {
			t.Errorf("%s: volumes %+v", role, p.Spec.Volumes)
		}
		if p.Annotations[AnnotationDeltaBase] != "model-v1" || plain.Annotations[AnnotationDeltaBase] != "" {
			t.Errorf("%s: annotation %q / %q", role, p.Annotations[AnnotationDeltaBase], plain.Annotations[AnnotationDeltaBase])
		}
		if strings.Contains(strings.Join(plain.Spec.InitContainers[0].Args, " "), "--delta-base") {
			t.Errorf("%s without a base: %q", role, plain.Spec.InitContainers[0].Args)
		}
	}
}
