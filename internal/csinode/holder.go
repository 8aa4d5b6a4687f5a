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

// fsTmpfs is the holders' file system type, as mount(2) and mountinfo name it.
const fsTmpfs = "tmpfs"

// holderSlack is what a holder's tmpfs holds beyond the blob's bytes: the
// files' last partial pages, directories, the progress file.
const holderSlack = 4 << 20

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

// mountHolder mounts the holder's tmpfs at staging unless it is there
// already (a publish again, or after the plugin restarted), and returns
// what the mount table says of it.
func mountHolder(staging, page string, size int64) (mountState, error) {
	if err := os.MkdirAll(staging, 0o750); err != nil {
		return mountState{}, fmt.Errorf("create the staging directory %s: %w", staging, err)
	}
	st, err := mountAt(staging)
	if err != nil {
		return st, fmt.Errorf("read the mount table: %w", err)
	}
	if st.mounted {
		if st.fsType != fsTmpfs || st.root != "/" {
			return st, fmt.Errorf("staging directory %s holds a %s mount of %s, not the holder's tmpfs", staging, st.fsType, st.root)
		}
		return st, nil
	}
	opts := tmpfsOptions(page, size)
	if err := unix.Mount(fsTmpfs, staging, fsTmpfs, holderFlags, opts); err != nil {
		return st, fmt.Errorf("mount a tmpfs (%s) at %s: %w", opts, staging, err)
	}
	return mountAt(staging)
}

// isHolderBind says whether a target's mount (read before unmounting it)
// is a bind of a holder's tmpfs: the whole file system (root "/"), where a
// consumer's bind shows <blob>.d/files.
func isHolderBind(st mountState) bool {
	return st.mounted && st.fsType == fsTmpfs && st.root == "/"
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
