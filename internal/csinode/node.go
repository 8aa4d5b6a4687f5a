// SPDX-License-Identifier: Apache-2.0

package csinode

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxStacked bounds the unmounts of one target: publish never stacks
// mounts, but an earlier plugin or a hand may have.
const maxStacked = 16

// nodeServer is the CSI Node service. It has no stage step and no
// volume stats: a publication is one bind mount (and a holder's tmpfs).
type nodeServer struct {
	csi.UnimplementedNodeServer

	cfg Config
	log logr.Logger
	// blobs reads PfsBlobs (a consumer's readiness and grant); every
	// publish of a consumer GETs the blob once, uncached (plugin.go).
	blobs client.Reader
	// mu serialises publish and unpublish: each reads the mount table and
	// then changes it, and the kubelet may call them concurrently.
	mu sync.Mutex
}

// NodeGetCapabilities: none (no staging, no stats, no expansion).
func (n *nodeServer) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{}, nil
}

// NodeGetInfo: the node's name is its ID; there is no limit on volumes
// and no topology (every node serves every namespace).
func (n *nodeServer) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: n.cfg.NodeName}, nil
}

// NodePublishVolume publishes one of the three volumes (request.go): the
// namespace's socket directory, a holder's tmpfs, or a blob's files. A
// target already holding that very publication is published already;
// holding anything else, it is AlreadyExists.
func (n *nodeServer) NodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	p, err := parsePublish(req)
	if err != nil {
		n.log.Info("Refused a volume", "volume", req.GetVolumeId(), "target", req.GetTargetPath(), "reason", status.Convert(err).Message())
		return nil, err
	}
	log := n.log.WithValues("kind", p.kind.String(), "pod", p.pod, "volume", req.GetVolumeId(), "target", p.target)
	if p.blob != "" {
		log = log.WithValues("blob", p.blobNamespace+"/"+p.blob)
	}
	var holder holderCopy
	if p.kind == kindConsumer {
		if holder, err = n.consumerHolder(ctx, p); err != nil {
			log.Info("Not published", "reason", status.Convert(err).Message())
			return nil, err
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := os.Mkdir(p.target, 0o750); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, status.Errorf(codes.Internal, "create the target %s: %v", p.target, err)
	}
	target, err := filepath.EvalSymlinks(p.target)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "resolve the target %s: %v", p.target, err)
	}
	switch p.kind {
	case kindHolder:
		err = n.publishHolder(p, target)
	case kindConsumer:
		err = n.publishConsumer(p, holder, target)
	default:
		err = n.publishSockets(p, target)
	}
	if err != nil {
		log.Info("Not published", "reason", status.Convert(err).Message())
		return nil, err
	}
	log.Info("Published")
	return &csi.NodePublishVolumeResponse{}, nil
}

// publishSockets binds the pod's namespace's socket directory, created
// 0755 root if missing (as hostPath DirectoryOrCreate did), onto the target.
func (n *nodeServer) publishSockets(p publication, target string) error {
	source := filepath.Join(n.cfg.SocketRoot, p.namespace)
	if err := socketDir(n.cfg.SocketRoot, source); err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	st, err := mountAt(target)
	if err != nil {
		return status.Errorf(codes.Internal, "read the mount table: %v", err)
	}
	if st.mounted {
		if sameFile(source, target) && st.readOnly == p.readOnly {
			return nil
		}
		return status.Errorf(codes.AlreadyExists, "target %s already holds another mount (read-only %t) than %s (read-only %t)",
			p.target, st.readOnly, source, p.readOnly)
	}
	flags := uintptr(socketFlags)
	if p.readOnly {
		flags |= unix.MS_RDONLY
	}
	if err := bindMount(source, target, flags); err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	return nil
}

// publishHolder mounts the holder pod's tmpfs (holder.go) and binds it
// writable onto the target.
func (n *nodeServer) publishHolder(p publication, target string) error {
	staging := stagingDir(n.cfg.StagingDir, p.namespace, p.blob, p.podName)
	sst, err := mountHolder(staging, holderMountFor(p.blob, p.page, p.layout, p.size))
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	st, err := mountAt(target)
	if err != nil {
		return status.Errorf(codes.Internal, "read the mount table: %v", err)
	}
	if st.mounted {
		if isHolderBind(st) && st.dev == sst.dev && !st.readOnly {
			return nil
		}
		return status.Errorf(codes.AlreadyExists, "target %s already holds another mount than the holder's tmpfs %s", target, staging)
	}
	if err := bindMount(staging, target, holderFlags); err != nil {
		// Leave no tmpfs behind: the kubelet unpublishes a target that
		// was never mounted without knowing of the staging one.
		if _, rerr := releaseHolder(n.cfg.StagingDir, sst.dev); rerr != nil {
			n.log.Error(rerr, "Could not detach the holder's tmpfs after a failed publish", "staging", staging)
		}
		return status.Error(codes.Internal, err.Error())
	}
	return nil
}

// NodeUnpublishVolume unmounts the target and removes the directory
// publish created; for a holder's volume it then detaches the holder's
// tmpfs (holder.go). A target that is gone or not mounted is unpublished
// already. Only an empty directory is removed: whatever is below a target
// that is not a mount is not ours to delete.
func (n *nodeServer) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, invalid("no volume_id")
	}
	if t := req.GetTargetPath(); t == "" || !filepath.IsAbs(t) {
		return nil, invalid("target_path %q: want an absolute path", t)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	target, err := filepath.EvalSymlinks(filepath.Clean(req.GetTargetPath()))
	if errors.Is(err, fs.ErrNotExist) {
		return &csi.NodeUnpublishVolumeResponse{}, nil
	}
	if err != nil {
		return nil, status.Errorf(codes.Internal, "resolve the target %s: %v", req.GetTargetPath(), err)
	}
	st, err := mountAt(target)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "read the mount table: %v", err)
	}
	// A holder's staging tmpfs goes first, while the target still leads
	// to it: should the target's unmount fail, the kubelet's retry finds
	// the target as it was and the staging mount gone, never the reverse
	// (a tmpfs no unpublish would ever find again).
	if isHolderBind(st) {
		staging, err := releaseHolder(n.cfg.StagingDir, st.dev)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "detach the holder's tmpfs %s: %v", staging, err)
		}
		if staging != "" {
			n.log.Info("Detached the holder's tmpfs", "staging", staging)
		}
	}
	if err := unmountAll(target, 0); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "remove the target %s: %v", target, err)
	}
	n.log.Info("Unpublished", "volume", req.GetVolumeId(), "target", target)
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// socketDir makes sure dir, a namespace's directory below root, is a
// directory and not a link that leads elsewhere.
func socketDir(root, dir string) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("create the socket root %s: %w", root, err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create the socket directory %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("socket directory %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("socket directory %s is not a directory (%s): refusing to publish it", dir, fi.Mode().Type())
	}
	return nil
}

// sameFile: a bind mount shows the source directory's inode at the target.
func sameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}
