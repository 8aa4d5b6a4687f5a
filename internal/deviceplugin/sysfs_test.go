// SPDX-License-Identifier: Apache-2.0

package deviceplugin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeSysfs builds a sysfs-like tree in a temp dir: the files the plugin
// reads, laid out as the kernel lays them (class/net/<if> links to the
// device's net/<if> directory, device links back to the PCI function).
type fakeSysfs struct {
	t    *testing.T
	root string
}

func newFakeSysfs(t *testing.T) *fakeSysfs {
	return &fakeSysfs{t: t, root: t.TempDir()}
}

func (f *fakeSysfs) write(rel, content string) {
	f.t.Helper()
	p := filepath.Join(f.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fakeSysfs) symlink(target, rel string) {
	f.t.Helper()
	p := filepath.Join(f.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		f.t.Fatal(err)
	}
}

// veth adds a virtual interface: no device link, as the kernel shows a veth.
func (f *fakeSysfs) veth(name string, queues int, operstate string) {
	f.t.Helper()
	dir := "devices/virtual/net/" + name
	f.write(dir+"/operstate", operstate+"\n")
	for q := 0; q < queues; q++ {
		f.write(fmt.Sprintf("%s/queues/rx-%d/rps_cpus", dir, q), "0\n")
		f.write(fmt.Sprintf("%s/queues/tx-%d/xps_cpus", dir, q), "0\n")
	}
	f.symlink("../../"+dir, "class/net/"+name)
}

// pciNIC adds a PCI function with one network interface; numa is the
// content of numa_node ("" for no file).
func (f *fakeSysfs) pciNIC(addr, name string, queues int, numa, operstate string) {
	f.t.Helper()
	fn := "devices/pci0000:00/0000:00:01.0/" + addr
	if numa != "" {
		f.write(fn+"/numa_node", numa+"\n")
	} else if err := os.MkdirAll(filepath.Join(f.root, fn), 0o755); err != nil {
		f.t.Fatal(err)
	}
	dir := fn + "/net/" + name
	f.write(dir+"/operstate", operstate+"\n")
	for q := 0; q < queues; q++ {
		f.write(fmt.Sprintf("%s/queues/rx-%d/rps_cpus", dir, q), "0\n")
	}
	f.symlink("../..", dir+"/device") // net/<if>/device -> the function
	f.symlink("../../"+dir, "class/net/"+name)
	f.symlink("../../../"+fn, "bus/pci/devices/"+addr)
}

// virtioNIC adds a virtio-net interface: its device is virtioN under the
// PCI function, and only the function has numa_node.
func (f *fakeSysfs) virtioNIC(addr, name, numa string) {
	f.t.Helper()
	fn := "devices/pci0000:00/" + addr
	f.write(fn+"/numa_node", numa+"\n")
	dir := fn + "/virtio3/net/" + name
	f.write(dir+"/operstate", "up\n")
	f.write(dir+"/queues/rx-0/rps_cpus", "0\n")
	f.symlink("../..", dir+"/device")
	f.symlink("../../"+dir, "class/net/"+name)
}

func TestObserve(t *testing.T) {
	f := newFakeSysfs(t)
	f.veth("pfsdata0", 1, "up")
	f.veth("pfsdata1", 4, "lowerlayerdown")
	f.pciNIC("0000:3b:00.0", "ens1f0", 8, "1", "up")
	f.pciNIC("0000:3b:00.1", "ens1f1", 2, "-1", "down")
	f.pciNIC("0000:00:04.0", "eth9", 1, "", "unknown")
	f.pciNIC("0000:00:05.0", "eth8", 1, "lots", "up")
	f.virtioNIC("0000:00:06.0", "eth7", "1")
	f.virtioNIC("0000:00:07.0", "eth6", "-1")

	tests := map[string]observation{
		"pfsdata0": {Present: true, Operstate: "up", Queues: 1, NUMANode: -1,
			NoNUMAReason: "pfsdata0 has no PCI device (a veth?): no NUMA node, the kubelet's Topology Manager gets no hint for it"},
		"pfsdata1": {Present: true, Operstate: "lowerlayerdown", Queues: 4, NUMANode: -1,
			NoNUMAReason: "pfsdata1 has no PCI device (a veth?): no NUMA node, the kubelet's Topology Manager gets no hint for it"},
		"ens1f0": {Present: true, Operstate: "up", Queues: 8, NUMANode: 1},
		"ens1f1": {Present: true, Operstate: "down", Queues: 2, NUMANode: -1,
			NoNUMAReason: "ens1f1's device reports NUMA node -1 (one NUMA node, or firmware without NUMA information): " +
				"the kubelet's Topology Manager gets no hint for it"},
		"eth9": {Present: true, Operstate: "unknown", Queues: 1, NUMANode: -1,
			NoNUMAReason: "eth9's device has no numa_node file, nor has its parent (not a PCI device?): no NUMA node, " +
				"the kubelet's Topology Manager gets no hint for it"},
		"eth7": {Present: true, Operstate: "up", Queues: 1, NUMANode: 1},
		"eth6": {Present: true, Operstate: "up", Queues: 1, NUMANode: -1,
			NoNUMAReason: "eth6's device reports NUMA node -1 (one NUMA node, or firmware without NUMA information): " +
				"the kubelet's Topology Manager gets no hint for it"},
		"eth8": {Present: true, Operstate: "up", Queues: 1, NUMANode: -1,
			NoNUMAReason: `eth8's device/numa_node holds "lots", not a number: no NUMA node, the kubelet's Topology Manager gets no hint for it`},
		"absent0": {Present: false, NUMANode: -1},
	}
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(want, observe(f.root, name)); diff != "" {
				t.Errorf("observe (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolvePCI(t *testing.T) {
	f := newFakeSysfs(t)
	f.pciNIC("0000:3b:00.0", "ens1f0", 1, "0", "up")
	// A function bound to vfio-pci: a PCI device without net/.
	f.write("devices/pci0000:00/0000:00:01.0/0000:3b:00.2/numa_node", "0\n")
	f.symlink("../../../devices/pci0000:00/0000:00:01.0/0000:3b:00.2", "bus/pci/devices/0000:3b:00.2")
	// A function with two interfaces.
	f.pciNIC("0000:5e:00.0", "mlx0", 1, "0", "up")
	f.write("devices/pci0000:00/0000:00:01.0/0000:5e:00.0/net/mlx1/operstate", "up\n")

	tests := map[string]struct {
		want string
		err  string
	}{
		"0000:3b:00.0": {want: "ens1f0"},
		"0000:3b:00.2": {err: "PCI device 0000:3b:00.2 has no network interface in this network namespace"},
		"0000:3b:00.3": {err: "PCI device 0000:3b:00.3: not found"},
		"0000:5e:00.0": {err: "PCI device 0000:5e:00.0 has 2 network interfaces (mlx0, mlx1): name the one to advertise with --link IFNAME"},
	}
	for addr, tc := range tests {
		t.Run(addr, func(t *testing.T) {
			got, err := resolvePCI(f.root, addr)
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case got != tc.want:
				t.Errorf("resolvePCI = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestResolveLinks(t *testing.T) {
	f := newFakeSysfs(t)
	f.veth("pfsdata0", 1, "up")
	f.pciNIC("0000:3b:00.0", "ens1f0", 4, "1", "up")
	f.pciNIC("0000:3b:00.1", "data-a", 1, "1", "up")

	spec := func(s string) LinkSpec {
		l, err := ParseLinkSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	cfg := Config{Sysfs: f.root, ResourcePrefix: "packetfs.io",
		Links: []LinkSpec{spec("pfsdata0"), spec("0000:3b:00.0/queues"), spec("notyet0")}}
	links, err := resolveLinks(cfg)
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ Spec, IfName, Resource, Pool, Socket string }
	got := make([]row, 0, len(links))
	for _, l := range links {
		got = append(got, row{l.spec.String(), l.ifname, l.resource, l.pool, l.socket})
	}
	want := []row{
		{"pfsdata0", "pfsdata0", "packetfs.io/pfsdata0", "PFSDATA0", "pfs-pfsdata0.sock"},
		{"0000:3b:00.0/queues", "ens1f0", "packetfs.io/ens1f0", "ENS1F0", "pfs-ens1f0.sock"},
		// Absent at start is not an error for a named link: it may be in a pod.
		{"notyet0", "notyet0", "packetfs.io/notyet0", "NOTYET0", "pfs-notyet0.sock"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("links (-want +got):\n%s", diff)
	}

	bad := map[string]struct {
		links []string
		err   string
	}{
		"PCI address and its name":      {[]string{"ens1f0", "0000:3b:00.0"}, "--link ens1f0 and --link 0000:3b:00.0 are both ens1f0"},
		"one environment suffix":        {[]string{"data_a", "0000:3b:00.1"}, "interfaces data_a and data-a give the same environment suffix DATA_A"},
		"PCI address without interface": {[]string{"0000:3b:00.7"}, "--link 0000:3b:00.7: PCI device 0000:3b:00.7: not found"},
	}
	for name, tc := range bad {
		t.Run(name, func(t *testing.T) {
			c := cfg
			c.Links = nil
			for _, s := range tc.links {
				c.Links = append(c.Links, spec(s))
			}
			if _, err := resolveLinks(c); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			}
		})
	}
}

func TestPoolName(t *testing.T) {
	for in, want := range map[string]string{"pfsdata0": "PFSDATA0", "data.link-1": "DATA_LINK_1", "Ens1f0": "ENS1F0", "a_b": "A_B"} {
		if got := poolName(in); got != want {
			t.Errorf("poolName(%q) = %q, want %q", in, got, want)
		}
	}
}
