// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"strings"
	"testing"
	"time"

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

func TestSteppedAside(t *testing.T) {
	hostNode := map[string]string{"10.1.0.7": "w2", "h-w4.b-holders.ns.svc": "w4"}
	step := &result.StepAside{Mark: 52 << 20, Lag: 30 << 20, LagStart: 6 << 20, Elapsed: 90 * time.Millisecond, Downstream: "10.1.0.7:41234"}
	tests := map[string]struct {
		r    result.BlobCreate
		want string
	}{
		"it did not": {result.BlobCreate{Repl: &result.Repl{}, Fetch: &result.Fetch{}}, ""},
		"no repl":    {result.BlobCreate{Fetch: &result.Fetch{}}, ""},
		"stepped aside and finished from the tail": {result.BlobCreate{Repl: &result.Repl{SteppedAside: step},
			Fetch: &result.Fetch{MovedTo: "h-w4.b-holders.ns.svc:7470"}},
			"it forwarded slower than it received: its stream to w2 fell 24 MiB further behind its own fill in 0.09 s " +
				"(from 6 to 30 MiB behind, at 52 MiB); it finished from the chain's last node, w4"},
		"stepped aside without a tail, a host no holder has": {result.BlobCreate{Repl: &result.Repl{SteppedAside: &result.StepAside{
			Lag: 17 << 20, Elapsed: time.Second, Downstream: "10.9.9.9:1"}}, Fetch: &result.Fetch{}},
			"it forwarded slower than it received: its stream to 10.9.9.9:1 fell 17 MiB further behind its own fill in 1.00 s " +
				"(from 0 to 17 MiB behind, at 0 MiB)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := steppedAside(&tc.r, hostNode)
			if got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			if len(got) > maxSteppedAside {
				t.Errorf("%d characters, the schema allows %d", len(got), maxSteppedAside)
			}
		})
	}
}
