// SPDX-License-Identifier: Apache-2.0

package csinode

import (
	"strings"
	"testing"
)

func TestParseMountInfo(t *testing.T) {
	const info = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 0:25 / /run rw,nosuid,nodev shared:5 - tmpfs tmpfs rw
41 22 8:1 /run/packetfs/a /var/lib/kubelet/pods/u1/volumes/kubernetes.io~csi/s/mount ro,nosuid,nodev,noexec shared:1 - ext4 /dev/sda1 rw
42 22 8:1 /run/packetfs/a /var/lib/kubelet/pods/u2/mount rw,nosuid shared:1 - ext4 /dev/sda1 rw
43 42 8:1 /run/packetfs/a /var/lib/kubelet/pods/u2/mount ro shared:1 - ext4 /dev/sda1 rw
44 22 8:1 /x /tmp/with\040space\134x rw - ext4 /dev/sda1 rw
`
	tests := map[string]struct {
		path string
		want mountState
	}{
		"read-only bind":    {"/var/lib/kubelet/pods/u1/volumes/kubernetes.io~csi/s/mount", mountState{mounted: true, readOnly: true}},
		"writable":          {"/run", mountState{mounted: true}},
		"topmost of two":    {"/var/lib/kubelet/pods/u2/mount", mountState{mounted: true, readOnly: true}},
		"escaped":           {`/tmp/with space\x`, mountState{mounted: true}},
		"not a mount point": {"/var/lib/kubelet/pods/u1", mountState{}},
		"prefix only":       {"/ru", mountState{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parseMountInfo(strings.NewReader(info), tc.path)
			if err != nil || got != tc.want {
				t.Errorf("parseMountInfo(%q) = %+v, %v; want %+v", tc.path, got, err, tc.want)
			}
		})
	}
}
