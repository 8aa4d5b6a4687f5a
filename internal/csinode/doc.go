// SPDX-License-Identifier: Apache-2.0

// Package csinode is the CSI node plugin csi.packetfs.io (CSI spec 1.x,
// node service only). It serves three kinds of volume, told apart by their
// attributes (request.go):
//   - none: the pod's namespace's blob socket directory,
//     <socket-root>/<namespace>/ on the node, bound read-only for pods that
//     only connect to a holder, writable for the holders that create their
//     sockets there (an ephemeral inline volume replacing a hostPath, which
//     Pod Security admits only in privileged namespaces);
//   - packetfs.io/role holder: a fresh tmpfs per holder pod, staged in the
//     host's mount namespace and bound writable; the holder keeps the
//     blob's files there;
//   - blob: a read-only bind of the files of this node's Ready copy of a
//     PfsBlob, inline or as a static PersistentVolume, after the PfsBlob's
//     grant and status on the API server say yes.
//
// The kubelet puts the pod's namespace into each request
// (CSIDriver podInfoOnMount) and overrides whatever the pod wrote under
// that key, so a pod only ever gets its own namespace's directory and its
// own namespace's grants: the trust boundary is the namespace, as with the
// blob tokens.
//
// Files, by concern:
//   - config.go: the flags and their validation.
//   - request.go: what a NodePublishVolume request asks for, checked (pure).
//   - readiness.go: may this pod mount that blob here, now (pure), and the
//     holder's progress file for the message.
//   - holder.go: the holder's tmpfs, mounted and detached.
//   - consumer.go: a consumer's publish (the one GET, the bind).
//   - client.go: the read-only PfsBlob client.
//   - mount.go: bind mounts and /proc/self/mountinfo.
//   - node.go: the CSI Node service (publish, unpublish, info).
//   - identity.go: the CSI Identity service.
//   - registration.go: the kubelet's plugin registration service.
//   - plugin.go: Run, which serves both sockets and keeps them there.
//
// docs/guides/csi.md describes it for users.
package csinode
