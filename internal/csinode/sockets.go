// SPDX-License-Identifier: Apache-2.0

package csinode

import (
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
)

// sweepSockets runs when the plugin stops (helm uninstall deletes its
// DaemonSet after the pre-delete hook has waited for every holder and
// consumer to go; an upgrade restarts it while they run). It removes what
// no one can use any more, and only that:
//   - a socket file below a namespace directory that nothing listens on
//     (its holder is gone or crashed): connect is refused;
//   - then a namespace directory left empty that no bind mount shows (no
//     holder or consumer pod has it as its socket volume): a pod that still
//     has it keeps the directory, so a holder started later in the same
//     namespace is seen by that pod.
//
// The socket root itself is the DaemonSet's hostPath and stays (empty).
func sweepSockets(root string, mountinfo io.Reader, log logr.Logger) {
	busy, err := boundDirs(mountinfo, root)
	if err != nil {
		log.Error(err, "Could not read the mount table: socket directories are left as they are")
		return
	}
	dirs, err := os.ReadDir(root)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			log.Error(err, "Could not list the socket root", "root", root)
		}
		return
	}
	for _, d := range dirs {
		dir := filepath.Join(root, d.Name())
		if !d.IsDir() {
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			log.Error(err, "Could not list a socket directory", "dir", dir)
			continue
		}
		left := 0
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			if e.Type()&fs.ModeSocket == 0 || listening(p) {
				left++
				continue
			}
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				log.Error(err, "Could not remove a socket nothing listens on", "socket", p)
				left++
				continue
			}
			log.Info("Removed a socket nothing listens on", "socket", p)
		}
		if left > 0 || busy[d.Name()] {
			continue
		}
		if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			log.Error(err, "Could not remove an empty socket directory", "dir", dir)
			continue
		}
		log.Info("Removed an empty socket directory no pod mounts", "dir", dir)
	}
}

// listening: something accepts connections on the unix socket. Refused
// (or gone) means no process holds it; any other error is taken as alive,
// so that a doubt never removes a holder's socket.
func listening(path string) bool {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		_ = c.Close()
		return true
	}
	return !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.ENOENT)
}

// boundDirs reads a mountinfo file for the namespace directories below
// root that a bind mount elsewhere shows: the mount at root tells which
// file system and which directory of it root is (a hostPath is itself a
// bind), and a bind of one of its namespace directories has the same
// device and that directory as its root.
func boundDirs(r io.Reader, root string) (map[string]bool, error) {
	type entry struct {
		point string
		m     mountState
	}
	var all []entry
	if err := eachMount(r, func(point string, m mountState) { all = append(all, entry{point, m}) }); err != nil {
		return nil, err
	}
	dev, fsRoot := "", ""
	for _, e := range all { // the last mount at root is the one in effect
		if e.point == root {
			dev, fsRoot = e.m.dev, e.m.root
		}
	}
	if dev == "" {
		// root is a plain directory of the file system mounted above it:
		// find that mount and root's path inside it.
		best := ""
		for _, e := range all {
			if rel, ok := strings.CutPrefix(root, strings.TrimSuffix(e.point, "/")+"/"); ok && len(e.point) >= len(best) {
				best, dev, fsRoot = e.point, e.m.dev, filepath.Join(e.m.root, rel)
			}
		}
	}
	busy := map[string]bool{}
	for _, e := range all {
		if e.m.dev != dev || e.point == root {
			continue
		}
		if rel, ok := strings.CutPrefix(e.m.root, strings.TrimSuffix(fsRoot, "/")+"/"); ok {
			ns, _, _ := strings.Cut(rel, "/")
			busy[ns] = true
		}
	}
	return busy, nil
}
