// SPDX-License-Identifier: Apache-2.0

package csinode

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// A consumer volume is a read-only bind of a Ready holder's files
// directory on this node, <staging>/<blob>.d/files[/subPath]. Whether the
// pod may have it, and which holder's, is the PfsBlob's status on the API
// server (decideConsumer); the holder's own files are never trusted for it.

// apiTimeout bounds the one GET of a publish; the kubelet retries a
// publish that fails.
const apiTimeout = 10 * time.Second

// beneath resolves a path below a directory fd without leaving it: no
// "..", no symlink, no magic link, no other mount. The holder writes the
// tmpfs; whatever it leaves there must not lead the plugin (root, in the
// host's mount namespace) anywhere else.
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// holderCopy is the copy on this node a consumer gets: its holder pod, and
// whether the blob is a fill (no spec.source: one file holding its bytes).
type holderCopy struct {
	pod  string
	fill bool
}

// consumerHolder reads the blob and decides (decideConsumer) which holder
// pod's copy on this node the consumer gets. It runs before the publish
// lock: one slow API answer must not hold up every other publish.
func (n *nodeServer) consumerHolder(ctx context.Context, p publication) (holderCopy, error) {
	if n.blobs == nil {
		return holderCopy{}, status.Errorf(codes.Unavailable, "blob %s/%s: this plugin runs without an API client and serves no blob volumes", p.blobNamespace, p.blob)
	}
	var b pfsv1alpha1.PfsBlob
	r := consumerRequest{pod: p.pod, podNS: p.namespace, node: n.cfg.NodeName, blobNS: p.blobNamespace, blob: p.blob, blobFound: true}
	gctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	if err := n.blobs.Get(gctx, client.ObjectKey{Namespace: p.blobNamespace, Name: p.blob}, &b); apierrors.IsNotFound(err) {
		r.blobFound = false
	} else if err != nil {
		return holderCopy{}, status.Errorf(codes.Unavailable, "read PfsBlob %s/%s from the API server: %v (the plugin's ServiceAccount needs get on pfsblobs; the kubelet retries)",
			p.blobNamespace, p.blob, err)
	}
	pod, err := decideConsumer(r, &b, func(pod string) *progress {
		return readProgress(stagingDir(n.cfg.StagingDir, p.blobNamespace, p.blob, pod), p.blob)
	})
	return holderCopy{pod: pod, fill: b.Spec.Source == nil}, err
}

// publishConsumer binds the holder's files read-only onto the target.
func (n *nodeServer) publishConsumer(p publication, h holderCopy, target string) error {
	holder := h.pod
	staging := stagingDir(n.cfg.StagingDir, p.blobNamespace, p.blob, holder)
	if st, err := mountAt(staging); err != nil || !isHolderBind(st) {
		return status.Errorf(codes.Unavailable, "blob %s/%s is Ready on node %s but its holder pod %s has no files volume on this node "+
			"(%s is not its file system): either the holder is being replaced, and the pod starts when the node's copy is verified again, "+
			"or the operator does not keep blobs on the plugin's volumes (it must run with --socket-volume=csi, the chart's default)",
			p.blobNamespace, p.blob, n.cfg.NodeName, holder, staging)
	}
	files := p.blob + ".d/files"
	if p.subPath != "" {
		files = path.Join(files, p.subPath)
	}
	fd, err := openBeneath(staging, files)
	if err != nil {
		what := "its files directory " + files
		if p.subPath != "" {
			what = fmt.Sprintf("%s %q (%s)", attrSubPath, p.subPath, files)
		}
		return status.Errorf(codes.FailedPrecondition, "blob %s/%s on node %s: %s: %v; a subPath names a directory of the blob's files "+
			"(mount a single file with the container's volumeMounts[].subPath)", p.blobNamespace, p.blob, n.cfg.NodeName, what, err)
	}
	defer func() { _ = unix.Close(fd) }()
	if h.fill {
		if err := checkFillFile(fd, p.blob); err != nil {
			return status.Errorf(codes.FailedPrecondition, "blob %s/%s is Ready on node %s but its holder pod %s keeps it outside its volume (%v): "+
				"a fill that fell back from hugetlb pages (status.nodes[].fallbackReason) lives in the holder's own /dev/shm; "+
				"free hugepages on the node or set spec.pageFallback: Never, then recreate the blob",
				p.blobNamespace, p.blob, n.cfg.NodeName, holder, err)
		}
	}
	source := fmt.Sprintf("/proc/self/fd/%d", fd)
	st, err := mountAt(target)
	if err != nil {
		return status.Errorf(codes.Internal, "read the mount table: %v", err)
	}
	if st.mounted {
		if sameFile(source, target) && st.readOnly {
			return nil
		}
		return status.Errorf(codes.AlreadyExists, "target %s already holds another mount than blob %s/%s's %s", target, p.blobNamespace, p.blob, files)
	}
	if err := bindMount(source, target, consumerFlags); err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	return nil
}

// checkFillFile checks that the files directory dfd (O_PATH) of a fill
// holds its one file, <blob>, a regular file: a holder whose page kind fell
// back keeps it elsewhere, and the consumer must not get an empty directory.
func checkFillFile(dfd int, blob string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, blob, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("no file %s: %w", blob, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%s is not a regular file", blob)
	}
	return nil
}

// openBeneath opens rel below dir (O_PATH) and checks that it is a
// directory; the fd is the bind mount's source, so what was checked is
// what gets mounted.
func openBeneath(dir, rel string) (int, error) {
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer func() { _ = unix.Close(dfd) }()
	fd, err := unix.Openat2(dfd, rel, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: beneath})
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return -1, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		_ = unix.Close(fd)
		return -1, unix.ENOTDIR
	}
	return fd, nil
}

// readProgress reads a holder's <blob>.d/progress, for a message only:
// nil when there is none or it is not a small regular file of one JSON line.
func readProgress(staging, blob string) *progress {
	dfd, err := unix.Open(staging, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer func() { _ = unix.Close(dfd) }()
	// O_NONBLOCK: a FIFO left there must not hang the publish.
	fd, err := unix.Openat2(dfd, blob+".d/progress", &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC, Resolve: beneath})
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), "progress")
	defer func() { _ = f.Close() }()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return nil
	}
	return parseProgress(b)
}
