// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

func TestTopologyOrder(t *testing.T) {
	got := topologyOrder("w3", []string{"w2", "w3", "w0", "w1"})
	if diff := cmp.Diff([]string{"w3", "w0", "w1", "w2"}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestUpstreamIndexes(t *testing.T) {
	tests := map[string]struct {
		topo pfsv1alpha1.ReplicationTopology
		i    int
		want []int
	}{
		"chain origin":  {pfsv1alpha1.TopologyChain, 0, nil},
		"chain first":   {pfsv1alpha1.TopologyChain, 1, []int{0}},
		"chain second":  {pfsv1alpha1.TopologyChain, 2, []int{1, 0}},
		"chain fifth":   {pfsv1alpha1.TopologyChain, 5, []int{4, 3, 2, 0}},
		"chain default": {"", 4, []int{3, 2, 1, 0}},
		"tree first":    {pfsv1alpha1.TopologyTree, 1, []int{0}},
		"tree second":   {pfsv1alpha1.TopologyTree, 2, []int{0}},
		"tree fourth":   {pfsv1alpha1.TopologyTree, 4, []int{1, 0}},
		"tree eleventh": {pfsv1alpha1.TopologyTree, 11, []int{5, 2, 0}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, upstreamIndexes(tc.topo, tc.i)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestUpstreamAddrs(t *testing.T) {
	order := []string{"w0", "w1", "w2", "w3", "w4"}
	tests := map[string]struct {
		i     int
		addr  map[string]string
		ready map[string]bool
		want  []string
	}{
		"nothing has an address yet":  {1, map[string]string{}, nil, nil},
		"first relay from the origin": {1, map[string]string{"w0": "10.0.0.1"}, nil, []string{"10.0.0.1:7470"}},
		"chain nearest first": {3, map[string]string{"w0": "10.0.0.1", "w1": "10.0.0.2", "w2": "10.0.0.3"}, nil,
			[]string{"10.0.0.3:7470", "10.0.0.2:7470", "10.0.0.1:7470"}},
		"a failed upstream is skipped": {2, map[string]string{"w0": "10.0.0.1"}, nil, []string{"10.0.0.1:7470"}},
		"ready peers after the topology": {1, map[string]string{"w0": "10.0.0.1", "w4": "10.0.0.5", "w3": "10.0.0.4"},
			map[string]bool{"w4": true}, []string{"10.0.0.1:7470", "10.0.0.5:7470"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := upstreamAddrs(pfsv1alpha1.TopologyChain, order, tc.i, tc.addr, tc.ready)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
