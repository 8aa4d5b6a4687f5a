// SPDX-License-Identifier: Apache-2.0

package csinode

import (
	"strings"
	"testing"
)

const testMountInfo = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 0:25 / /run rw,nosuid,nodev shared:5 - tmpfs tmpfs rw,size=100k
41 22 8:1 /run/packetfs/a /var/lib/kubelet/pods/u1/volumes/kubernetes.io~csi/s/mount ro,nosuid,nodev,noexec shared:1 - ext4 /dev/sda1 rw
42 22 8:1 /run/packetfs/a /var/lib/kubelet/pods/u2/mount rw,nosuid shared:1 - ext4 /dev/sda1 rw
43 42 8:1 /run/packetfs/a /var/lib/kubelet/pods/u2/mount ro shared:1 - ext4 /dev/sda1 rw
44 22 8:1 /x /tmp/with\040space\134x rw - ext4 /dev/sda1 rw
50 22 0:61 / /p/blobs/team-a/llama/holder-x rw,nosuid,nodev,noexec shared:9 - tmpfs tmpfs rw,size=311296k,mode=755,huge=within_size
51 22 0:61 / /var/lib/kubelet/pods/u3/volumes/kubernetes.io~csi/blob/mount rw,nosuid,nodev,noexec shared:9 - tmpfs tmpfs rw,size=311296k,mode=755,huge=within_size
52 22 0:61 /llama.d/files /var/lib/kubelet/pods/u4/volumes/kubernetes.io~csi/m/mount ro,nosuid,nodev shared:9 - tmpfs tmpfs rw,size=311296k,mode=755,huge=within_size
53 22 0:62 / /p/blobs/team-a/llama rw - tmpfs tmpfs rw
54 22 0:63 /sub /p/blobs/team-a/other/holder-y rw - tmpfs tmpfs rw
`

func TestParseMountInfo(t *testing.T) {
	tests := map[string]struct {
		path string
		want mountState
	}{
		"read-only bind": {"/var/lib/kubelet/pods/u1/volumes/kubernetes.io~csi/s/mount",
			mountState{mounted: true, readOnly: true, dev: "8:1", root: "/run/packetfs/a", fsType: "ext4", superOptions: "rw"}},
		"writable": {"/run", mountState{mounted: true, dev: "0:25", root: "/", fsType: "tmpfs", superOptions: "rw,size=100k"}},
		"topmost of two": {"/var/lib/kubelet/pods/u2/mount",
			mountState{mounted: true, readOnly: true, dev: "8:1", root: "/run/packetfs/a", fsType: "ext4", superOptions: "rw"}},
		"escaped": {`/tmp/with space\x`, mountState{mounted: true, dev: "8:1", root: "/x", fsType: "ext4", superOptions: "rw"}},
		"consumer's bind": {"/var/lib/kubelet/pods/u4/volumes/kubernetes.io~csi/m/mount", mountState{mounted: true, readOnly: true,
			dev: "0:61", root: "/llama.d/files", fsType: "tmpfs", superOptions: "rw,size=311296k,mode=755,huge=within_size"}},
		"not a mount point": {"/var/lib/kubelet/pods/u1", mountState{}},
		"prefix only":       {"/ru", mountState{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parseMountInfo(strings.NewReader(testMountInfo), tc.path)
			if err != nil || got != tc.want {
				t.Errorf("parseMountInfo(%q) = %+v, %v; want %+v", tc.path, got, err, tc.want)
			}
		})
	}
}

// TestFindStaging: a holder's target leads to its staging tmpfs by device,
// and to nothing else: not a tmpfs at another depth, not a bind of part of
// one, not another device.
func TestFindStaging(t *testing.T) {
	tests := map[string]struct{ dev, want string }{
		"holder's tmpfs":           {"0:61", "/p/blobs/team-a/llama/holder-x"},
		"at the blob's level":      {"0:62", ""},
		"a bind of a subdirectory": {"0:63", ""},
		"another device":           {"0:25", ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := findStaging(strings.NewReader(testMountInfo), "/p/blobs", tc.dev)
			if err != nil || got != tc.want {
				t.Errorf("findStaging(%s) = %q, %v; want %q", tc.dev, got, err, tc.want)
			}
		})
	}
}

// TestFindOrphans: a staging tmpfs that nothing else mounts is an orphan;
// one its holder or a consumer still shows is not.
func TestFindOrphans(t *testing.T) {
	info := testMountInfo + `60 22 0:70 / /p/blobs/team-a/llama/holder-old rw - tmpfs tmpfs rw,size=5120k
61 22 0:71 / /p/blobs/team-a/llama/holder-gone rw - tmpfs tmpfs rw,size=5120k
62 22 0:71 /llama.d/files /var/lib/kubelet/pods/u9/volumes/kubernetes.io~csi/m/mount ro - tmpfs tmpfs rw,size=5120k
`
	got, err := findOrphans(strings.NewReader(info), "/p/blobs")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/p/blobs/team-a/llama/holder-old"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("findOrphans = %q, want %q (holder-x has its holder, holder-gone a consumer)", got, want)
	}
}

func TestTmpfsOptions(t *testing.T) {
	for page, want := range map[string]string{
		"2Mi": "size=318767104,mode=0755,huge=within_size", "1Gi": "size=318767104,mode=0755,huge=within_size",
		"THP": "size=318767104,mode=0755,huge=within_size", "4Ki": "size=318767104,mode=0755,huge=never",
	} {
		if got := tmpfsOptions(page, 314572800); got != want {
			t.Errorf("tmpfsOptions(%s) = %s, want %s", page, got, want)
		}
	}
}

func TestHolderMountFor(t *testing.T) {
	const size = 314572800 + 4096 // not a whole number of 2 MiB pages
	for name, tc := range map[string]struct {
		page, layout string
		want         holderMount
	}{
		"files 2Mi": {"2Mi", layoutFiles, holderMount{fsType: fsTmpfs, opts: "size=318771200,mode=0755,huge=within_size"}},
		"fill 2Mi": {"2Mi", layoutFlat, holderMount{fsType: fsHugetlbfs, opts: "pagesize=2M,size=316669952,mode=0755",
			mkdir: "llama.d/files"}},
		"fill 1Gi": {"1Gi", layoutFlat, holderMount{fsType: fsHugetlbfs, opts: "pagesize=1G,size=1073741824,mode=0755",
			mkdir: "llama.d/files"}},
		"fill THP": {"THP", layoutFlat, holderMount{fsType: fsTmpfs, opts: "size=318771200,mode=0755,huge=within_size",
			mkdir: "llama.d/files"}},
		"fill 4Ki": {"4Ki", layoutFlat, holderMount{fsType: fsTmpfs, opts: "size=318771200,mode=0755,huge=never",
			mkdir: "llama.d/files"}},
	} {
		if got := holderMountFor("llama", tc.page, tc.layout, size); got != tc.want {
			t.Errorf("%s: holderMountFor = %+v, want %+v", name, got, tc.want)
		}
	}
}
