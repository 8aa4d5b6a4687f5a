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

// hardening are the flags of every publication: the directory holds
// sockets, nothing to execute, no device nodes, no set-uid files. A holder
// runs as uid 0 with a writable mount; these keep what it could leave there
// inert for the other pods of the namespace.
const hardening = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC

// bindMount binds source onto target. A bind mount takes per-mount flags
// only on a remount, so a second call sets them; until it succeeds the
// target is unmounted again, never left writable when read-only was asked.
// Connecting to a socket through a read-only mount works: the read-only
// check applies to creating and writing files, not to connect().
func bindMount(source, target string, readOnly bool) error {
	if err := unix.Mount(source, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s onto %s: %w", source, target, err)
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | hardening)
	if readOnly {
		flags |= unix.MS_RDONLY
	}
	if err := unix.Mount(source, target, "", flags, ""); err != nil {
		_ = unix.Unmount(target, unix.MNT_DETACH)
		return fmt.Errorf("remount %s (read-only %t, nosuid, nodev, noexec): %w", target, readOnly, err)
	}
	return nil
}

// mountState is what /proc/self/mountinfo says of one mount point.
type mountState struct {
	mounted  bool
	readOnly bool
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
// (proc(5)); the last entry is the topmost mount. The fifth field is the
// mount point with ' ', '\t', '\n' and '\\' escaped in octal, the sixth
// the per-mount options.
func parseMountInfo(r io.Reader, path string) (mountState, error) {
	var st mountState
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := bytes.Fields(sc.Bytes())
		if len(fields) < 6 || unescapeOctal(string(fields[4])) != path {
			continue
		}
		st.mounted = true
		st.readOnly = false
		for _, o := range strings.Split(string(fields[5]), ",") {
			if o == "ro" {
				st.readOnly = true
			}
		}
	}
	return st, sc.Err()
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
