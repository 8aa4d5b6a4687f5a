// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// withTransport sets spec.replication.transport.
func withTransport(b *pfsv1alpha1.PfsBlob, tr pfsv1alpha1.Transport) *pfsv1alpha1.PfsBlob {
	if b.Spec.Replication == nil {
		b.Spec.Replication = &pfsv1alpha1.BlobReplication{}
	}
	b.Spec.Replication.Transport = tr
	return b
}

// TestBlobSourceHolderTransport checks what spec.replication.transport
// changes in a holder pod: only a relay's create container, and nothing at
// all for TCP (the command line and profile of before datagram replication).
func TestBlobSourceHolderTransport(t *testing.T) {
	cfg := Config{Image: "img", Binary: "/pfs"}
	const fetch = "--fetch-from 10.0.0.1:7470 "
	const tail = "--token-file /etc/packetfs/token/token --replicate-listen 0.0.0.0:7470"
	udpPort := []corev1.ContainerPort{{Name: "repl-data", ContainerPort: 7470, Protocol: corev1.ProtocolUDP}}
	relay := SourceHolder{Node: "w1", Role: pfsv1alpha1.BlobNodeRelay, Size: 314572800, Page: pfsv1alpha1.PageSize2Mi,
		Upstreams: []string{"10.0.0.1:7470"}, Attempt: 1}
	origin := SourceHolder{Node: "w0", Role: pfsv1alpha1.BlobNodeOrigin, Size: 314572800, Page: pfsv1alpha1.PageSize2Mi, Attempt: 1}
	tests := map[string]struct {
		blob *pfsv1alpha1.PfsBlob
		h    SourceHolder
		// wantFetch is the create args from --fetch-from on ("" for an origin).
		wantFetch string
		wantSec   *corev1.SecurityContext
		wantPorts []corev1.ContainerPort
	}{
		"relay, no replication": {sourceBlob(pvc(""), ""), relay, fetch + tail, rootNoCaps, nil},
		"relay, TCP":            {withTransport(sourceBlob(pvc(""), ""), pfsv1alpha1.TransportTCP), relay, fetch + tail, rootNoCaps, nil},
		"relay, UDP":            {withTransport(sourceBlob(pvc(""), ""), pfsv1alpha1.TransportUDP), relay, fetch + "--fetch-transport udp " + tail, rootNoCaps, udpPort},
		"relay, UDP on a network": {withTransport(onNetwork(sourceBlob(pvc(""), ""), "fabric", ""), pfsv1alpha1.TransportUDP), relay,
			fetch + "--fetch-transport udp " + tail, rootNoCaps, udpPort},
		"relay, AFXDP on the pod network": {withTransport(sourceBlob(pvc(""), ""), pfsv1alpha1.TransportAFXDP), relay,
			fetch + "--fetch-transport afxdp " + tail, afxdp, udpPort},
		"relay, AFXDP on a network": {withTransport(onNetwork(sourceBlob(pvc(""), "100Mi"), "nets/fabric", "intel.com/sriov_netdevice"), pfsv1alpha1.TransportAFXDP), relay,
			fetch + "--fetch-transport afxdp --fetch-if net1 " + tail + " --replicate-rate 104857600", afxdp, udpPort},
		"origin, UDP":   {withTransport(sourceBlob(pvc(""), ""), pfsv1alpha1.TransportUDP), origin, "", rootNoCaps, nil},
		"origin, AFXDP": {withTransport(onNetwork(sourceBlob(pvc(""), ""), "fabric", ""), pfsv1alpha1.TransportAFXDP), origin, "", rootNoCaps, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := BlobSourceHolderPod(cfg, tc.blob, tc.h)
			create, serve := p.Spec.InitContainers[0], p.Spec.Containers[0]
			args := strings.Join(create.Args, " ")
			if tc.wantFetch != "" && !strings.HasSuffix(args, " "+tc.wantFetch) {
				t.Errorf("create args:\n got %q\nwant them to end with %q", args, tc.wantFetch)
			}
			if tc.wantFetch == "" && strings.Contains(args, "--fetch-") {
				t.Errorf("origin create args %q have fetch options", args)
			}
			if diff := cmp.Diff(tc.wantSec, create.SecurityContext); diff != "" {
				t.Errorf("create securityContext (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPorts, create.Ports); diff != "" {
				t.Errorf("create ports (-want +got):\n%s", diff)
			}
			// The server sends (datagrams from an ephemeral port): it keeps
			// its TCP port and stays without capabilities on any transport.
			if diff := cmp.Diff(rootNoCaps, serve.SecurityContext); diff != "" {
				t.Errorf("serve securityContext (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]corev1.ContainerPort{{Name: "repl", ContainerPort: 7470, Protocol: corev1.ProtocolTCP}}, serve.Ports); diff != "" {
				t.Errorf("serve ports (-want +got):\n%s", diff)
			}
			if strings.Contains(strings.Join(serve.Args, " "), "--fetch-") {
				t.Errorf("serve args %q have fetch options", serve.Args)
			}
			// Datagram windows are memory besides the blob, in both
			// containers (each may serve datagram clients); TCP has none.
			want := holderBaseMemory.DeepCopy()
			want.Add(*resource.NewQuantity(chunkListTmpfs(tc.h.Size), resource.BinarySI)) // flat: the chunk list's tmpfs
			if tc.blob.Spec.Replication.TransportOrDefault() != pfsv1alpha1.TransportTCP {
				want.Add(datagramWindowMemory)
			}
			for _, c := range []corev1.Container{create, serve} {
				req, lim := c.Resources.Requests[corev1.ResourceMemory], c.Resources.Limits[corev1.ResourceMemory]
				if req.Cmp(want) != 0 || lim.Cmp(want) != 0 {
					t.Errorf("%s memory %s/%s, want %s", c.Name, req.String(), lim.String(), want.String())
				}
			}
		})
	}
}
