// SPDX-License-Identifier: Apache-2.0

// Package deviceplugin is a kubelet device plugin (API
// k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1) that advertises a node's
// PacketFS data links as extended resources, one resource per link:
// <prefix>/<ifname>, with the link's NUMA node and its health.
//
// A link is handed out whole (one device whose ID is the interface name) or
// per RX queue (one device per queue, IDs <ifname>-q<N>). Allocate answers
// with the environment the data plane reads (AFXDP_DEVICES_<POOL>,
// PFS_DATA_LINK_<POOL>, PFS_DATA_QUEUES_<POOL>); moving the interface into
// the pod is the CNI's job (Multus host-device), not the plugin's.
//
// Files, by concern:
//   - config.go: the flags and their validation (--link specs).
//   - sysfs.go: what sysfs says of an interface (PCI address to netdev, RX
//     queues, NUMA node, operstate).
//   - links.go: the configured links resolved to interfaces and resources.
//   - health.go: one link's state from one observation to the next (pure).
//   - devices.go: a link's state as kubelet devices, and the shared list the
//     gRPC streams watch.
//   - allocate.go: the environment a container gets (pure).
//   - server.go: the DevicePlugin gRPC service on one unix socket.
//   - register.go: registration with the kubelet.
//   - watch.go: the device-plugin directory watch (kubelet restarts).
//   - plugin.go: Run, which ties them together.
//
// docs/guides/device-plugin.md describes the contract for users.
package deviceplugin
