// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// Every holder container serves its Prometheus page on Config.MetricsPort
// (the server declares the port by name); none without it.
func TestHolderMetricsPage(t *testing.T) {
	c := cfg
	c.MetricsPort = DefaultMetricsPort
	h := SourceHolder{Node: "w1", Role: pfsv1alpha1.BlobNodeRelay, Size: 300 << 20, Page: pfsv1alpha1.PageSize2Mi,
		Attempt: 1, Upstreams: []string{"10.0.0.1:7470"}}
	holder := BlobHolderDaemonSet(c, blob(pfsv1alpha1.PageSize2Mi, "4Mi")).Spec.Template.Spec
	relay := BlobSourceHolderPod(c, sourceBlob(pvc("models"), ""), h).Spec
	for name, ct := range map[string]corev1.Container{
		"seeded holder create": holder.InitContainers[0], "seeded holder serve": holder.Containers[0],
		"relay create": relay.InitContainers[0], "relay serve": relay.Containers[0],
	} {
		i := slices.Index(ct.Args, "--metrics-listen")
		if i < 0 || i+1 >= len(ct.Args) || ct.Args[i+1] != ":9470" {
			t.Errorf("%s args %q: no --metrics-listen :9470", name, ct.Args)
		}
	}
	metrics := corev1.ContainerPort{Name: "metrics", ContainerPort: 9470, Protocol: corev1.ProtocolTCP}
	if diff := cmp.Diff([]corev1.ContainerPort{metrics}, holder.Containers[0].Ports); diff != "" {
		t.Errorf("seeded serve ports (-want +got):\n%s", diff)
	}
	repl := corev1.ContainerPort{Name: "repl", ContainerPort: 7470, Protocol: corev1.ProtocolTCP}
	if diff := cmp.Diff([]corev1.ContainerPort{repl, metrics}, relay.Containers[0].Ports); diff != "" {
		t.Errorf("relay serve ports (-want +got):\n%s", diff)
	}
	// A transfer's receiver serves one too, but in mode Delta.
	for mode, x := range map[pfsv1alpha1.TransferMode]*pfsv1alpha1.PfsTransfer{
		pfsv1alpha1.ModePayload: transfer(pfsv1alpha1.ModePayload, pfsv1alpha1.TransportTCP),
		pfsv1alpha1.ModeOffset:  transfer(pfsv1alpha1.ModeOffset, pfsv1alpha1.TransportUDP),
		pfsv1alpha1.ModeDelta:   deltaTransfer(),
	} {
		in := TransferInputs{Blob: namedBlob("old", "4Mi"), Source: namedBlob("new", "4Mi")}
		recv := ReceiverPod(c, x, in).Spec.Containers[0]
		has := slices.Contains(recv.Args, "--metrics-listen") && slices.ContainsFunc(recv.Ports, func(p corev1.ContainerPort) bool { return p == metrics })
		if has != (mode != pfsv1alpha1.ModeDelta) {
			t.Errorf("%s receiver: args %q ports %v", mode, recv.Args, recv.Ports)
		}
	}
	off := BlobSourceHolderPod(cfg, sourceBlob(pvc("models"), ""), h).Spec
	if slices.Contains(off.InitContainers[0].Args, "--metrics-listen") || slices.Contains(off.Containers[0].Args, "--metrics-listen") {
		t.Errorf("MetricsPort 0 still serves a page: %q %q", off.InitContainers[0].Args, off.Containers[0].Args)
	}
}
