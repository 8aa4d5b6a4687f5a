// SPDX-License-Identifier: Apache-2.0

package csinode

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Per-mount flags of each kind of publication.
const (
	// socketFlags: the socket directory holds sockets, nothing to execute,
	// no device nodes, no set-uid files. A holder runs as uid 0 with a
	// writable mount; these keep what it could leave there inert for the
	// other pods of the namespace.
	socketFlags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	// holderFlags: the holder's tmpfs holds data only.
	holderFlags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	// consumerFlags: a blob's files, read-only (design29.md section 3:
	// ro,nosuid,nodev; exec is left to the files' own modes).
	consumerFlags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_RDONLY
)

// bindMount binds source onto target with the per-mount flags given. A
// bind mount takes per-mount flags only on a remount, so a second call sets
// them; until it succeeds the target is unmounted again, never left
// writable when read-only was asked. Connecting to a socket through a
// read-only mount works: the read-only check applies to creating and
// writing files, not to connect().
func bindMount(source, target string, flags uintptr) error {
	if err := unix.Mount(source, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s onto %s: %w", source, target, err)
	}
	if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|flags, ""); err != nil {
		_ = unix.Unmount(target, unix.MNT_DETACH)
		return fmt.Errorf("remount %s (%s): %w", target, flagNames(flags), err)
	}
	return nil
}

// flagNames spells per-mount flags as mount(8) does, for messages.
func flagNames(flags uintptr) string {
	var names []string
	for _, f := range []struct {
		bit  uintptr
		name string
	}{{unix.MS_RDONLY, "ro"}, {unix.MS_NOSUID, "nosuid"}, {unix.MS_NODEV, "nodev"}, {unix.MS_NOEXEC, "noexec"}} {
		if flags&f.bit != 0 {
			names = append(names, f.name)
		}
	}
	if flags&unix.MS_RDONLY == 0 {
		names = append([]string{"rw"}, names...)
	}
	return strings.Join(names, ",")
}

// mountState is what /proc/self/mountinfo says of the topmost mount at one
// mount point.
type mountState struct {
	mounted  bool
	readOnly bool
	// dev is the file system's device, "major:minor": every tmpfs has its
	// own, and a bind of it shows the same.
	dev string
	// root is the directory of that file system the mount shows ("/" for
	// the tmpfs itself and a bind of it, "/<blob>.d/files" for a consumer).
	root string
	// fsType is the file system type ("tmpfs").
	fsType string
	// superOptions are the file system's own options (size=, huge=, mode=).
	superOptions string
}

// mountAt reads the topmost mount at path (clean, absolute, symlinks
// resolved) from /proc/self/mountinfo.
func mountAt(path string) (mountState, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return mountState{}, err
	}
	defer func() { _ = f.Close() }()
	return parseMountInfo(f, path)
}

// parseMountInfo finds path among the mount points of a mountinfo file
// (proc(5)); the last entry is the topmost mount. Fields: ID, parent ID,
// major:minor, root, mount point (' ', '\t', '\n' and '\\' escaped in
// octal), per-mount options, optional fields up to "-", then the file
// system type, its source and its super options.
func parseMountInfo(r io.Reader, path string) (mountState, error) {
	var st mountState
	err := eachMount(r, func(point string, m mountState) {
		if point == path {
			st = m
		}
	})
	return st, err
}

// findStaging finds, in a mountinfo file, the mount point of a holder's
// tmpfs with device dev: three levels below root (namespace, blob, pod),
// the whole tmpfs. "" when there is none.
func findStaging(r io.Reader, root, dev string) (string, error) {
	var found string
	err := eachMount(r, func(point string, m mountState) {
		rel, ok := strings.CutPrefix(point, root+"/")
		if ok && m.dev == dev && isHolderFS(m.fsType) && m.root == "/" && strings.Count(rel, "/") == 2 {
			found = point
		}
	})
	return found, err
}

// findOrphans lists, in a mountinfo file, the holders' staging tmpfs
// mounts below root whose file system no other mount shows: neither the
// holder's target nor any consumer's bind. Only a crash between a
// publish's two mounts leaves one; nothing can reach its pages any more.
func findOrphans(r io.Reader, root string) ([]string, error) {
	var staged []string
	devOf := map[string]string{}
	users := map[string]int{}
	err := eachMount(r, func(point string, m mountState) {
		users[m.dev]++
		rel, ok := strings.CutPrefix(point, root+"/")
		if ok && isHolderFS(m.fsType) && m.root == "/" && strings.Count(rel, "/") == 2 {
			staged = append(staged, point)
			devOf[point] = m.dev
		}
	})
	var orphans []string
	for _, p := range staged {
		if users[devOf[p]] == 1 {
			orphans = append(orphans, p)
		}
	}
	return orphans, err
}

// eachMount calls fn with the mount point and state of every line of a
// mountinfo file, in order (a later line is a mount on top).
func eachMount(r io.Reader, fn func(point string, m mountState)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := bytes.Fields(sc.Bytes())
		if len(fields) < 6 {
			continue
		}
		m := mountState{mounted: true, dev: string(fields[2]), root: unescapeOctal(string(fields[3]))}
		for _, o := range strings.Split(string(fields[5]), ",") {
			if o == "ro" {
				m.readOnly = true
			}
		}
		for i := 6; i+1 < len(fields); i++ {
			if string(fields[i]) == "-" {
				m.fsType = string(fields[i+1])
				if i+3 < len(fields) {
					m.superOptions = string(fields[i+3])
				}
				break
			}
		}
		fn(unescapeOctal(string(fields[4])), m)
	}
	return sc.Err()
}

// unescapeOctal undoes the kernel's \ooo escapes in a mountinfo path.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unmountAll unmounts whatever is stacked at path (flags 0 or
// MNT_DETACH) until nothing is; it stops at maxStacked.
func unmountAll(path string, flags int) error {
	for i := 0; ; i++ {
		st, err := mountAt(path)
		if err != nil {
			return fmt.Errorf("read the mount table: %w", err)
		}
		if !st.mounted {
			return nil
		}
		if i == maxStacked {
			return fmt.Errorf("%s is still a mount point after %d unmounts", path, maxStacked)
		}
		if err := unix.Unmount(path, flags); err != nil {
			return fmt.Errorf("unmount %s: %w", path, err)
		}
	}
}
