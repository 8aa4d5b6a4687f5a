// SPDX-License-Identifier: Apache-2.0

package csinode

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
)

// A holder volume is a fresh tmpfs per holder pod, mounted in the host
// mount namespace at <staging root>/<namespace>/<blob>/<pod> (the plugin's
// directory propagates both ways) and bound writable onto the pod's
// target. The holder writes the blob's files there (design29.md section
// 1); consumers get read-only binds of its files directory. Unpublish
// unmounts the target and detaches the tmpfs: a consumer still bound to it
// keeps the file system, and so its pages, alive until its own unmount.

// The holders' file system types, as mount(2) and mountinfo name them.
const (
	fsTmpfs     = "tmpfs"
	fsHugetlbfs = "hugetlbfs"
)

// holderSlack is what a holder's tmpfs holds beyond the blob's bytes: the
// files' last partial pages, directories, the progress file.
const holderSlack = 4 << 20

// holderMount is the file system of a holder volume: its type, its mount
// options, and a directory the plugin makes in it before the holder runs
// ("" for none).
type holderMount struct {
	fsType, opts, mkdir string
}

// holderMountFor is the file system for a holder of blob on page of size
// bytes, in a layout. A files-layout blob is a tmpfs (tmpfsOptions). A
// flat blob (a fill: one file holding its bytes) keeps the pages the
// PfsBlob asks for: hugetlbfs of that page size for 2Mi and 1Gi, as the
// emptyDir it replaces was, else the same tmpfs. Its holder writes the one
// file into <blob>.d/files, the directory a consumer's bind shows, so both
// layouts look the same to a consumer.
func holderMountFor(blob, page, layout string, size int64) holderMount {
	if layout != layoutFlat {
		return holderMount{fsType: fsTmpfs, opts: tmpfsOptions(page, size)}
	}
	m := holderMount{fsType: fsTmpfs, opts: tmpfsOptions(page, size), mkdir: blob + ".d/files"}
	if pg, ok := hugetlbPages[page]; ok {
		m.fsType = fsHugetlbfs
		m.opts = fmt.Sprintf("pagesize=%s,size=%d,mode=0755", pg.name, (size+pg.bytes-1)/pg.bytes*pg.bytes)
	}
	return m
}

// hugetlbPages are the hugetlbfs page sizes by the API's names.
var hugetlbPages = map[string]struct {
	name  string
	bytes int64
}{"2Mi": {"2M", 2 << 20}, "1Gi": {"1G", 1 << 30}}

// tmpfsOptions are the holder's tmpfs options for a page kind and size:
// transparent huge pages for every huge kind (tmpfs has no hugetlb pages;
// within_size gives a file huge pages only up to its size, so a file's
// length stays exact), plain pages for 4Ki.
func tmpfsOptions(page string, size int64) string {
	huge := "within_size"
	if page == "4Ki" {
		huge = "never"
	}
	return fmt.Sprintf("size=%d,mode=0755,huge=%s", size+holderSlack, huge)
}

// isHolderFS says whether fsType is one a holder volume is.
func isHolderFS(fsType string) bool { return fsType == fsTmpfs || fsType == fsHugetlbfs }

// mountHolder mounts the holder's file system m at staging unless it is
// there already (a publish again, or after the plugin restarted), makes
// m.mkdir in it, and returns what the mount table says of it.
func mountHolder(staging string, m holderMount) (mountState, error) {
	if err := os.MkdirAll(staging, 0o750); err != nil {
		return mountState{}, fmt.Errorf("create the staging directory %s: %w", staging, err)
	}
	st, err := mountAt(staging)
	if err != nil {
		return st, fmt.Errorf("read the mount table: %w", err)
	}
	if st.mounted && (st.fsType != m.fsType || st.root != "/") {
		return st, fmt.Errorf("staging directory %s holds a %s mount of %s, not the holder's %s", staging, st.fsType, st.root, m.fsType)
	}
	if !st.mounted {
		if err := unix.Mount(m.fsType, staging, m.fsType, holderFlags, m.opts); err != nil {
			return st, fmt.Errorf("mount a %s (%s) at %s: %w", m.fsType, m.opts, staging, err)
		}
	}
	if m.mkdir != "" {
		// The directory is in the fresh file system, which only the
		// plugin has seen so far; on a publish again the holder may have
		// written in it, and MkdirAll leaves that as it is.
		if err := os.MkdirAll(filepath.Join(staging, m.mkdir), 0o755); err != nil {
			return st, fmt.Errorf("create %s in the holder's %s: %w", m.mkdir, m.fsType, err)
		}
	}
	return mountAt(staging)
}

// isHolderBind says whether a target's mount (read before unmounting it)
// is a bind of a holder's file system: the whole of it (root "/"), where a
// consumer's bind shows <blob>.d/files.
func isHolderBind(st mountState) bool {
	return st.mounted && isHolderFS(st.fsType) && st.root == "/"
}

// releaseHolder detaches the holder's tmpfs whose device is dev from its
// staging directory below root and removes the directories left empty.
// It finds the staging directory by the device in the mount table, so it
// needs no record of its own and works after a restart. MNT_DETACH: a
// consumer bound to the tmpfs keeps it; the kernel frees the pages when the
// last mount goes.
func releaseHolder(root, dev string) (string, error) {
	staging, err := stagingOf(root, dev)
	if err != nil || staging == "" {
		return "", err
	}
	if err := unmountAll(staging, unix.MNT_DETACH); err != nil {
		return staging, err
	}
	// The staging directory, then its blob's and namespace's directories
	// when they are empty; a non-empty one belongs to another holder.
	for d := staging; d != root && strings.HasPrefix(d, root+"/"); d = filepath.Dir(d) {
		if err := os.Remove(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	return staging, nil
}

// stagingOf finds the staging directory (a mount point three levels below
// root) of the tmpfs with device dev, or "" if none.
func stagingOf(root, dev string) (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	return findStaging(f, root, dev)
}

// sweepOrphans detaches the staging tmpfs mounts nothing else shows
// (findOrphans), when the plugin starts: no publish is under way then.
func sweepOrphans(root string, log logr.Logger) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		log.Error(err, "Could not read the mount table to sweep orphaned holder tmpfs mounts")
		return
	}
	orphans, err := findOrphans(f, root)
	_ = f.Close()
	if err != nil {
		log.Error(err, "Could not read the mount table to sweep orphaned holder tmpfs mounts")
		return
	}
	for _, staging := range orphans {
		if err := unmountAll(staging, unix.MNT_DETACH); err != nil {
			log.Error(err, "Could not detach an orphaned holder tmpfs", "staging", staging)
			continue
		}
		_ = os.Remove(staging)
		log.Info("Detached an orphaned holder tmpfs (no holder or consumer mounts it)", "staging", staging)
	}
}
