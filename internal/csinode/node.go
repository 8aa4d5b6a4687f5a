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
)

// maxStacked bounds the unmounts of one target: publish never stacks
// mounts, but an earlier plugin or a hand may have.
const maxStacked = 16

// nodeServer is the CSI Node service. It has no stage step and no
// volume stats: a publication is one bind mount.
type nodeServer struct {
	csi.UnimplementedNodeServer

	cfg Config
	log logr.Logger
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

// NodePublishVolume binds the pod's namespace's socket directory, created
// 0755 root if missing (as hostPath DirectoryOrCreate did), onto the
// target. A target already holding that directory with the same access is
// published already; holding anything else, it is AlreadyExists.
func (n *nodeServer) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	p, err := parsePublish(req)
	if err != nil {
		n.log.Info("Refused a volume", "volume", req.GetVolumeId(), "target", req.GetTargetPath(), "reason", status.Convert(err).Message())
		return nil, err
	}
	log := n.log.WithValues("pod", p.pod, "volume", req.GetVolumeId(), "target", p.target, "readOnly", p.readOnly)
	source := filepath.Join(n.cfg.SocketRoot, p.namespace)
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := socketDir(n.cfg.SocketRoot, source); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := os.Mkdir(p.target, 0o750); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, status.Errorf(codes.Internal, "create the target %s: %v", p.target, err)
	}
	target, err := filepath.EvalSymlinks(p.target)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "resolve the target %s: %v", p.target, err)
	}
	st, err := mountAt(target)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "read the mount table: %v", err)
	}
	if st.mounted {
		if sameFile(source, target) && st.readOnly == p.readOnly {
			log.V(1).Info("Already published")
			return &csi.NodePublishVolumeResponse{}, nil
		}
		return nil, status.Errorf(codes.AlreadyExists, "target %s already holds another mount (read-only %t) than %s (read-only %t)",
			p.target, st.readOnly, source, p.readOnly)
	}
	if err := bindMount(source, target, p.readOnly); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	log.Info("Published the namespace's socket directory", "source", source)
	return &csi.NodePublishVolumeResponse{}, nil
}

// NodeUnpublishVolume unmounts the target and removes the directory
// publish created. A target that is gone or not mounted is unpublished
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
	for i := 0; ; i++ {
		st, err := mountAt(target)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "read the mount table: %v", err)
		}
		if !st.mounted {
			break
		}
		if i == maxStacked {
			return nil, status.Errorf(codes.Internal, "%s is still a mount point after %d unmounts", target, maxStacked)
		}
		if err := unix.Unmount(target, 0); err != nil {
			return nil, status.Errorf(codes.Internal, "unmount %s: %v", target, err)
		}
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
