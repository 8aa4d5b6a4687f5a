// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// A holder's init container fills the blob with up to HolderFillCPU while
// asking for HolderCPU, so scheduling counts what it did before; the
// serving container keeps HolderCPU as request and limit. At or below
// HolderCPU, or unset, nothing changes and the pod stays Guaranteed.
func TestHolderFillCPU(t *testing.T) {
	tests := map[string]struct {
		holder, fill string
		wantLimit    string // the init container's CPU limit
	}{
		"fill above the holder: a higher limit": {"50m", "4", "4"},
		"fill unset: the holder's":              {"50m", "", "50m"},
		"fill below the holder: the holder's":   {"2", "500m", "2"},
		"fill equal: the holder's":              {"1", "1", "1"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := cfg
			c.HolderCPU = q(tc.holder)
			if tc.fill != "" {
				c.HolderFillCPU = q(tc.fill)
			}
			h := SourceHolder{Node: "w1", Role: pfsv1alpha1.BlobNodeRelay, Size: 300 << 20, Page: pfsv1alpha1.PageSize2Mi,
				Attempt: 1, Upstreams: []string{"10.0.0.1:7470"}}
			pods := map[string]corev1.PodSpec{
				"seeded holder": BlobHolderDaemonSet(c, blob(pfsv1alpha1.PageSize2Mi, "4Mi")).Spec.Template.Spec,
				"source relay":  BlobSourceHolderPod(c, sourceBlob(pvc("models"), ""), h).Spec,
			}
			for kind, spec := range pods {
				create, serve := spec.InitContainers[0], spec.Containers[0]
				if got := create.Resources.Limits[corev1.ResourceCPU]; got.Cmp(q(tc.wantLimit)) != 0 {
					t.Errorf("%s: create CPU limit %s, want %s", kind, got.String(), tc.wantLimit)
				}
				if got := create.Resources.Requests[corev1.ResourceCPU]; got.Cmp(q(tc.holder)) != 0 {
					t.Errorf("%s: create CPU request %s, want the holder's %s", kind, got.String(), tc.holder)
				}
				// Everything but the fill's CPU limit is the serving container's.
				lim := create.Resources.Limits.DeepCopy()
				lim[corev1.ResourceCPU] = serve.Resources.Limits[corev1.ResourceCPU]
				if diff := cmp.Diff(serve.Resources.Limits, lim, cmpQty); diff != "" {
					t.Errorf("%s: create limits besides CPU differ from serve's (-serve +create):\n%s", kind, diff)
				}
				if diff := cmp.Diff(serve.Resources.Limits, serve.Resources.Requests, cmpQty); diff != "" {
					t.Errorf("%s: serve requests != limits:\n%s", kind, diff)
				}
				if got := serve.Resources.Limits[corev1.ResourceCPU]; got.Cmp(q(tc.holder)) != 0 {
					t.Errorf("%s: serve CPU %s, want the holder's %s", kind, got.String(), tc.holder)
				}
			}
		})
	}
}
