// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/result"
)

func TestRelayTransport(t *testing.T) {
	long := strings.Repeat("p", 300)
	tests := map[string]struct {
		fetch result.Fetch
		want  pfsv1alpha1.BlobNodeStatus
	}{
		"tcp": {result.Fetch{Transport: result.FetchTCP, Path: "tcp stream"},
			pfsv1alpha1.BlobNodeStatus{Transport: pfsv1alpha1.TransportTCP, Datapath: "tcp stream"}},
		"udp with repair": {result.Fetch{Transport: result.FetchUDP, Path: "udp 1472B datagrams, GRO",
			Dgrams: &result.Datagrams{Received: 1000, NAKs: 3, Dropped: 1}},
			pfsv1alpha1.BlobNodeStatus{Transport: pfsv1alpha1.TransportUDP, Datapath: "udp 1472B datagrams, GRO", NAKs: 3}},
		"afxdp without losses": {result.Fetch{Transport: result.FetchAFXDP, Path: "afxdp eth0 generic XDP, copy mode", Dgrams: &result.Datagrams{Received: 1000}},
			pfsv1alpha1.BlobNodeStatus{Transport: pfsv1alpha1.TransportAFXDP, Datapath: "afxdp eth0 generic XDP, copy mode"}},
		"a long path fits the schema": {result.Fetch{Transport: result.FetchUDP, Path: long},
			pfsv1alpha1.BlobNodeStatus{Transport: pfsv1alpha1.TransportUDP, Datapath: long[:253] + "..."}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var got pfsv1alpha1.BlobNodeStatus
			relayTransport(&got, &tc.fetch)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if len(got.Datapath) > maxDatapath {
				t.Errorf("datapath is %d characters, the schema allows %d", len(got.Datapath), maxDatapath)
			}
		})
	}
}
