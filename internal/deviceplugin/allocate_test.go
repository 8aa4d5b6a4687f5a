// SPDX-License-Identifier: Apache-2.0

package deviceplugin

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestContainerEnv(t *testing.T) {
	tests := map[string]struct {
		ifname, pool string
		perQueue     bool
		ids          []string
		want         map[string]string
		err          string
	}{
		"whole link": {
			ifname: "pfsdata0", pool: "PFSDATA0", ids: []string{"pfsdata0"},
			want: map[string]string{"AFXDP_DEVICES_PFSDATA0": "pfsdata0", "PFS_DATA_LINK_PFSDATA0": "pfsdata0"},
		},
		"queues, ascending and once each": {
			ifname: "pfsdata1", pool: "PFSDATA1", perQueue: true, ids: []string{"pfsdata1-q3", "pfsdata1-q0", "pfsdata1-q10", "pfsdata1-q3"},
			want: map[string]string{"AFXDP_DEVICES_PFSDATA1": "pfsdata1", "PFS_DATA_LINK_PFSDATA1": "pfsdata1",
				"PFS_DATA_QUEUES_PFSDATA1": "0,3,10"},
		},
		"pool with replaced bytes": {
			ifname: "data.link-1", pool: "DATA_LINK_1", ids: []string{"data.link-1"},
			want: map[string]string{"AFXDP_DEVICES_DATA_LINK_1": "data.link-1", "PFS_DATA_LINK_DATA_LINK_1": "data.link-1"},
		},
		"no IDs":                   {ifname: "pfsdata0", pool: "PFSDATA0", err: "no device IDs for pfsdata0"},
		"another link":             {ifname: "pfsdata0", pool: "PFSDATA0", ids: []string{"pfsdata1"}, err: `device "pfsdata1" is not link pfsdata0`},
		"queue of another link":    {ifname: "pfsdata1", pool: "PFSDATA1", perQueue: true, ids: []string{"pfsdata10-q1"}, err: "not a queue of link pfsdata1"},
		"queue number with a sign": {ifname: "pfsdata1", pool: "PFSDATA1", perQueue: true, ids: []string{"pfsdata1-q+1"}, err: "want pfsdata1-q<N>"},
		"whole ID in queue mode":   {ifname: "pfsdata1", pool: "PFSDATA1", perQueue: true, ids: []string{"pfsdata1"}, err: "not a queue"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := containerEnv(tc.ifname, tc.pool, tc.perQueue, tc.ids)
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			case tc.err == "" && err != nil:
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		})
	}
}
