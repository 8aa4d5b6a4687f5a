// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// Every data-plane container logs as the operator does: PFS_LOG_* from
// Config.Log, and nothing when the operator sets nothing (pfs's defaults).
func TestDataPlaneLogEnv(t *testing.T) {
	c := cfg
	c.Log = DataPlaneLog{Format: "json", Level: "debug", TimeEncoding: "rfc3339"}
	want := []corev1.EnvVar{{Name: "PFS_LOG_FORMAT", Value: "json"}, {Name: "PFS_LOG_LEVEL", Value: "debug"},
		{Name: "PFS_LOG_TIME_ENCODING", Value: "rfc3339"}}
	h := SourceHolder{Node: "w1", Role: pfsv1alpha1.BlobNodeRelay, Size: 300 << 20, Page: pfsv1alpha1.PageSize2Mi,
		Attempt: 1, Upstreams: []string{"10.0.0.1:7470"}}
	holder := BlobHolderDaemonSet(c, blob(pfsv1alpha1.PageSize2Mi, "4Mi")).Spec.Template.Spec
	relay := BlobSourceHolderPod(c, sourceBlob(pvc("models"), ""), h).Spec
	containers := map[string]corev1.Container{
		"seeded holder create": holder.InitContainers[0], "seeded holder serve": holder.Containers[0],
		"relay create": relay.InitContainers[0], "relay serve": relay.Containers[0],
	}
	for name, ct := range containers {
		if diff := cmp.Diff(want, ct.Env); diff != "" {
			t.Errorf("%s env (-want +got):\n%s", name, diff)
		}
	}
	c.Log = DataPlaneLog{Format: "text"}
	got := BlobHolderDaemonSet(c, blob(pfsv1alpha1.PageSize2Mi, "4Mi")).Spec.Template.Spec.Containers[0].Env
	if diff := cmp.Diff([]corev1.EnvVar{{Name: "PFS_LOG_FORMAT", Value: "text"}}, got); diff != "" {
		t.Errorf("only the format set (-want +got):\n%s", diff)
	}
	if got := BlobHolderDaemonSet(cfg, blob(pfsv1alpha1.PageSize2Mi, "4Mi")).Spec.Template.Spec.Containers[0].Env; got != nil {
		t.Errorf("nothing set: env %v, want none", got)
	}
}
