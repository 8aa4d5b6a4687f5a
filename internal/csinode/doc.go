// SPDX-License-Identifier: Apache-2.0

// Package csinode is the CSI node plugin csi.packetfs.io (CSI spec 1.x,
// node service only). It gives a pod its namespace's blob socket
// directory, <socket-root>/<namespace>/ on the node, as a CSI ephemeral
// inline volume: a bind mount of that directory onto the volume's target,
// read-only for pods that only connect to a holder, writable for the
// holders that create their sockets there. It replaces a hostPath volume,
// which Pod Security admits only in privileged namespaces.
//
// The kubelet puts the pod's namespace into each request
// (CSIDriver podInfoOnMount) and overrides whatever the pod wrote under
// that key, so a pod only ever gets its own namespace's directory: the
// trust boundary is the namespace, as with the blob tokens.
//
// Files, by concern:
//   - config.go: the flags and their validation.
//   - request.go: what a NodePublishVolume request asks for, checked (pure).
//   - mount.go: bind mounts and /proc/self/mountinfo.
//   - node.go: the CSI Node service (publish, unpublish, info).
//   - identity.go: the CSI Identity service.
//   - registration.go: the kubelet's plugin registration service.
//   - plugin.go: Run, which serves both sockets and keeps them there.
//
// docs/guides/csi.md describes it for users.
package csinode
