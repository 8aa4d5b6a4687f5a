// SPDX-License-Identifier: Apache-2.0

package deviceplugin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// What sysfs says of network interfaces. Sysfs shows the interfaces of the
// network namespace of whoever mounted it: in a hostNetwork pod, the node's.
// An interface that a CNI moved into a pod's namespace is simply not there.

// observation is what sysfs says of one interface at one moment.
type observation struct {
	// Present: <sysfs>/class/net/<if> exists.
	Present bool
	// Operstate is the content of operstate ("up", "down", ...); empty when unreadable.
	Operstate string
	// Queues is the number of RX queues (queues/rx-*).
	Queues int
	// NUMANode is the NUMA node of the interface's device; -1 for none.
	NUMANode int
	// NoNUMAReason says why NUMANode is -1; empty when it is not.
	NoNUMAReason string
}

// observe reads one interface. A missing interface is an observation
// (Present false), not an error: the interface may be in a pod.
func observe(sysfs, ifname string) observation {
	dir := filepath.Join(sysfs, "class", "net", ifname)
	if _, err := os.Stat(dir); err != nil {
		return observation{NUMANode: -1}
	}
	o := observation{Present: true}
	if b, err := os.ReadFile(filepath.Join(dir, "operstate")); err == nil {
		o.Operstate = strings.TrimSpace(string(b))
	}
	o.Queues = countRxQueues(dir)
	o.NUMANode, o.NoNUMAReason = numaNode(dir, ifname)
	return o
}

// countRxQueues counts the queues/rx-* entries of an interface directory.
func countRxQueues(ifdir string) int {
	entries, err := os.ReadDir(filepath.Join(ifdir, "queues"))
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "rx-") {
			n++
		}
	}
	return n
}

// numaNode reads <ifdir>/device/numa_node, or the numa_node of the
// device's parent when the device has none (virtio). Without a NUMA node it
// says why, in words a log reader can act on.
func numaNode(ifdir, ifname string) (int, string) {
	dev := filepath.Join(ifdir, "device")
	if _, err := os.Stat(dev); err != nil {
		return -1, fmt.Sprintf("%s has no PCI device (a veth?): no NUMA node, the kubelet's Topology Manager gets no hint for it", ifname)
	}
	b, err := os.ReadFile(filepath.Join(dev, "numa_node"))
	if err != nil {
		// A virtio-net interface's device is virtioN, which has no
		// numa_node; the PCI function above it has.
		if resolved, rerr := filepath.EvalSymlinks(dev); rerr == nil {
			b, err = os.ReadFile(filepath.Join(filepath.Dir(resolved), "numa_node"))
		}
	}
	if err != nil {
		return -1, fmt.Sprintf("%s's device has no numa_node file, nor has its parent (not a PCI device?): no NUMA node, "+
			"the kubelet's Topology Manager gets no hint for it", ifname)
	}
	s := strings.TrimSpace(string(b))
	n, err := strconv.Atoi(s)
	switch {
	case err != nil:
		return -1, fmt.Sprintf("%s's device/numa_node holds %q, not a number: no NUMA node, the kubelet's Topology Manager gets no hint for it", ifname, s)
	case n < 0:
		return -1, fmt.Sprintf("%s's device reports NUMA node %d (one NUMA node, or firmware without NUMA information): "+
			"the kubelet's Topology Manager gets no hint for it", ifname, n)
	}
	return n, ""
}

// resolvePCI returns the network interface of a PCI function: the one entry
// of <sysfs>/bus/pci/devices/<addr>/net/.
func resolvePCI(sysfs, addr string) (string, error) {
	dev := filepath.Join(sysfs, "bus", "pci", "devices", addr)
	if _, err := os.Stat(dev); err != nil {
		return "", fmt.Errorf("PCI device %s: not found (%s is missing)", addr, dev)
	}
	netdir := filepath.Join(dev, "net")
	entries, err := os.ReadDir(netdir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("PCI device %s: %w", addr, err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	switch len(names) {
	case 0:
		// A pod that holds the interface (host-device) takes it out of this
		// namespace, and so out of this directory; a function bound to
		// vfio-pci or with no driver has none either.
		return "", fmt.Errorf("PCI device %s has no network interface in this network namespace (%s is missing or empty): "+
			"it is bound to no network driver (vfio-pci?), or a pod holds it right now; name the interface instead to start without it",
			addr, netdir)
	case 1:
		return names[0], nil
	}
	return "", fmt.Errorf("PCI device %s has %d network interfaces (%s): name the one to advertise with --link IFNAME",
		addr, len(names), strings.Join(names, ", "))
}
