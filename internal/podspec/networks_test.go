// SPDX-License-Identifier: Apache-2.0

package podspec

import "testing"

func TestNetworkSelection(t *testing.T) {
	for _, tc := range []struct {
		network string
		ips     []string
		want    string
	}{
		{"pfsdata0-tx", nil, "pfsdata0-tx"},
		{"pfs-system/pfsdata0-tx", nil, "pfs-system/pfsdata0-tx"},
		{"datanet", []string{"192.168.79.1/24"}, `[{"name":"datanet","ips":["192.168.79.1/24"]}]`},
		{"pfs-system/datanet", []string{"192.168.79.2/24", "fd00::2/64"},
			`[{"name":"datanet","namespace":"pfs-system","ips":["192.168.79.2/24","fd00::2/64"]}]`},
	} {
		if got := networkSelection(tc.network, tc.ips); got != tc.want {
			t.Errorf("%s %v: %s, want %s", tc.network, tc.ips, got, tc.want)
		}
	}
}
