// SPDX-License-Identifier: Apache-2.0

package csinode

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr/testr"
	"golang.org/x/sys/unix"
)

// TestBoundDirs: a namespace directory is busy when a mount of the socket
// root's file system has it (or a directory below it) as its root; the
// root's own mount, other file systems and other directories are not.
func TestBoundDirs(t *testing.T) {
	const info = `22 1 0:21 / /run rw,nosuid - tmpfs tmpfs rw
30 22 0:21 /packetfs /run/packetfs rw - tmpfs tmpfs rw
41 30 0:21 /packetfs/team-a /var/lib/kubelet/pods/1/volumes/kubernetes.io~csi/sockets/mount rw - tmpfs tmpfs rw
42 30 0:21 /packetfs/team-b/sub /mnt/x rw - tmpfs tmpfs rw
43 30 0:33 /packetfs/team-c /mnt/y rw - tmpfs tmpfs rw
44 30 0:21 /packetfsx/team-d /mnt/z rw - tmpfs tmpfs rw
`
	busy, err := boundDirs(strings.NewReader(info), "/run/packetfs")
	if err != nil {
		t.Fatal(err)
	}
	if len(busy) != 2 || !busy["team-a"] || !busy["team-b"] {
		t.Errorf("busy %v, want team-a and team-b (team-c is another file system, team-d another directory)", busy)
	}
	// The root as a plain directory of /run: the same answer.
	plain := strings.ReplaceAll(info, "30 22 0:21 /packetfs /run/packetfs rw - tmpfs tmpfs rw\n", "")
	if busy, _ := boundDirs(strings.NewReader(plain), "/run/packetfs"); len(busy) != 2 || !busy["team-a"] || !busy["team-b"] {
		t.Errorf("root not a mount point: busy %v, want team-a and team-b", busy)
	}
}

// TestSweepSockets, on real sockets and a real bind mount: a socket
// nothing listens on goes, a listening one stays; a directory left empty
// goes unless a bind mount shows it; other files stay.
func TestSweepSockets(t *testing.T) {
	needMountNS(t)
	root := filepath.Join(t.TempDir(), "packetfs")
	for _, d := range []string{"live", "dead", "mounted", "file"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	l, err := net.Listen("unix", filepath.Join(root, "live", "a.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, p := range []string{filepath.Join(root, "dead", "b.sock"), filepath.Join(root, "mounted", "c.sock")} {
		d, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		d.(*net.UnixListener).SetUnlinkOnClose(false) // a crashed holder leaves its file
		d.Close()
	}
	if err := os.WriteFile(filepath.Join(root, "file", "notes"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "pod-volume")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(filepath.Join(root, "mounted"), target, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.Unmount(target, unix.MNT_DETACH) }()

	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sweepSockets(root, f, testr.New(t))

	for p, want := range map[string]bool{
		"live/a.sock": true, "dead/b.sock": false, "dead": false, "mounted/c.sock": false, "mounted": true, "file/notes": true,
	} {
		_, err := os.Lstat(filepath.Join(root, p))
		if got := err == nil; got != want {
			t.Errorf("%s exists %v, want %v (%v)", p, got, want, err)
		}
	}
}
