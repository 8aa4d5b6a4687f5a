// SPDX-License-Identifier: Apache-2.0

package deviceplugin

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// The plugin end to end, in-process, over real unix sockets: a test
// Registration server stands where the kubelet's is, the test dials the
// plugin's sockets the way the kubelet does, and a fake sysfs tree stands
// for the node's interfaces.

const (
	testPoll = 20 * time.Millisecond
	// wait bounds every wait for something the plugin should do.
	wait = 5 * time.Second
)

// testKubelet is a Registration server on <dir>/kubelet.sock that records
// every Register call.
type testKubelet struct {
	pluginapi.UnimplementedRegistrationServer
	srv   *grpc.Server
	calls chan *pluginapi.RegisterRequest
}

func startTestKubelet(t *testing.T, dir string) *testKubelet {
	t.Helper()
	lis, err := net.Listen("unix", filepath.Join(dir, KubeletSocket))
	if err != nil {
		t.Fatal(err)
	}
	k := &testKubelet{srv: grpc.NewServer(), calls: make(chan *pluginapi.RegisterRequest, 64)}
	pluginapi.RegisterRegistrationServer(k.srv, k)
	go func() { _ = k.srv.Serve(lis) }()
	t.Cleanup(k.srv.Stop)
	return k
}

func (k *testKubelet) Register(_ context.Context, req *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	k.calls <- req
	return &pluginapi.Empty{}, nil
}

// registrations waits for n Register calls and returns them by resource.
func (k *testKubelet) registrations(t *testing.T, n int) map[string]*pluginapi.RegisterRequest {
	t.Helper()
	got := map[string]*pluginapi.RegisterRequest{}
	for i := 0; i < n; i++ {
		select {
		case r := <-k.calls:
			got[r.ResourceName] = r
		case <-time.After(wait):
			t.Fatalf("%d Register calls after %s, want %d; have %v", i, wait, n, got)
		}
	}
	return got
}

// dial connects to a plugin socket as the kubelet does.
func dial(t *testing.T, path string) pluginapi.DevicePluginClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return pluginapi.NewDevicePluginClient(conn)
}

// watch opens a ListAndWatch stream; each response arrives on the channel.
func watch(t *testing.T, c pluginapi.DevicePluginClient) <-chan []*pluginapi.Device {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stream, err := c.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan []*pluginapi.Device, 16)
	go func() {
		defer close(ch)
		for {
			r, err := stream.Recv()
			if err != nil {
				return
			}
			ch <- r.Devices
		}
	}()
	return ch
}

// dev is a device as the test compares it.
type dev struct {
	ID, Health string
	NUMA       []int64
}

func plain(ds []*pluginapi.Device) []dev {
	out := make([]dev, 0, len(ds))
	for _, d := range ds {
		x := dev{ID: d.ID, Health: d.Health}
		for _, n := range d.GetTopology().GetNodes() {
			x.NUMA = append(x.NUMA, n.ID)
		}
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func next(t *testing.T, ch <-chan []*pluginapi.Device) []dev {
	t.Helper()
	select {
	case ds, ok := <-ch:
		if !ok {
			t.Fatal("ListAndWatch stream ended")
		}
		return plain(ds)
	case <-time.After(wait):
		t.Fatalf("no ListAndWatch update after %s", wait)
	}
	return nil
}

func TestPluginEndToEnd(t *testing.T) {
	sys := newFakeSysfs(t)
	sys.veth("pfsdata0", 1, "up")
	sys.pciNIC("0000:3b:00.0", "ens1f0", 4, "1", "up")
	dir := t.TempDir()
	kubelet := startTestKubelet(t, dir)

	cfg := Config{
		Links:           []LinkSpec{{IfName: "pfsdata0"}, {PCIAddress: "0000:3b:00.0", PerQueue: true}},
		ResourcePrefix:  "packetfs.io",
		DevicePluginDir: dir,
		Sysfs:           sys.root,
		PollInterval:    testPoll,
		Health:          HealthOperstate,
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, testr.New(t)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	// Both resources register, each with its own socket.
	regs := kubelet.registrations(t, 2)
	for res, endpoint := range map[string]string{"packetfs.io/pfsdata0": "pfs-pfsdata0.sock", "packetfs.io/ens1f0": "pfs-ens1f0.sock"} {
		r := regs[res]
		if r == nil {
			t.Fatalf("%s not registered; registered %v", res, regs)
		}
		if r.Version != pluginapi.Version || r.Endpoint != endpoint || r.Options.GetPreStartRequired() || r.Options.GetGetPreferredAllocationAvailable() {
			t.Errorf("%s registered as %v, want version %s, endpoint %s, no PreStart, no preferred allocation", res, r, pluginapi.Version, endpoint)
		}
	}

	veth := dial(t, filepath.Join(dir, "pfs-pfsdata0.sock"))
	nic := dial(t, filepath.Join(dir, "pfs-ens1f0.sock"))
	opts, err := veth.GetDevicePluginOptions(ctx, &pluginapi.Empty{})
	if err != nil || opts.PreStartRequired || opts.GetPreferredAllocationAvailable {
		t.Errorf("GetDevicePluginOptions = %v, %v; want no PreStart, no preferred allocation", opts, err)
	}

	// The lists: the veth without topology, the NIC's queues on NUMA node 1.
	vethList := watch(t, veth)
	if diff := cmp.Diff([]dev{{ID: "pfsdata0", Health: "Healthy"}}, next(t, vethList)); diff != "" {
		t.Errorf("pfsdata0 devices (-want +got):\n%s", diff)
	}
	wantNIC := []dev{{"ens1f0-q0", "Healthy", []int64{1}}, {"ens1f0-q1", "Healthy", []int64{1}},
		{"ens1f0-q2", "Healthy", []int64{1}}, {"ens1f0-q3", "Healthy", []int64{1}}}
	if diff := cmp.Diff(wantNIC, next(t, watch(t, nic))); diff != "" {
		t.Errorf("ens1f0 devices (-want +got):\n%s", diff)
	}

	// Link down: an update with the device Unhealthy; up again: Healthy.
	sys.write("devices/virtual/net/pfsdata0/operstate", "down\n")
	if diff := cmp.Diff([]dev{{ID: "pfsdata0", Health: "Unhealthy"}}, next(t, vethList)); diff != "" {
		t.Errorf("after operstate down (-want +got):\n%s", diff)
	}
	sys.write("devices/virtual/net/pfsdata0/operstate", "up\n")
	if diff := cmp.Diff([]dev{{ID: "pfsdata0", Health: "Healthy"}}, next(t, vethList)); diff != "" {
		t.Errorf("after operstate up (-want +got):\n%s", diff)
	}

	// The interface leaves the node's namespace (a pod took it): no update,
	// and a new stream still says Healthy.
	for _, p := range []string{"class/net/pfsdata0", "devices/virtual/net/pfsdata0"} {
		if err := os.RemoveAll(filepath.Join(sys.root, p)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case ds := <-vethList:
		t.Errorf("update after the link left the namespace: %v", plain(ds))
	case <-time.After(10 * testPoll):
	}
	if diff := cmp.Diff([]dev{{ID: "pfsdata0", Health: "Healthy"}}, next(t, watch(t, veth))); diff != "" {
		t.Errorf("absent link (-want +got):\n%s", diff)
	}

	// Allocate: the environment per container, queues ascending.
	resp, err := veth.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{
		{DevicesIds: []string{"pfsdata0"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"AFXDP_DEVICES_PFSDATA0": "pfsdata0", "PFS_DATA_LINK_PFSDATA0": "pfsdata0"},
		resp.ContainerResponses[0].Envs); diff != "" {
		t.Errorf("pfsdata0 env (-want +got):\n%s", diff)
	}
	resp, err = nic.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{
		{DevicesIds: []string{"ens1f0-q2", "ens1f0-q0"}}, {DevicesIds: []string{"ens1f0-q3"}}}})
	if err != nil {
		t.Fatal(err)
	}
	envs := make([]map[string]string, 0, len(resp.ContainerResponses))
	for _, c := range resp.ContainerResponses {
		envs = append(envs, c.Envs)
	}
	wantEnvs := []map[string]string{
		{"AFXDP_DEVICES_ENS1F0": "ens1f0", "PFS_DATA_LINK_ENS1F0": "ens1f0", "PFS_DATA_QUEUES_ENS1F0": "0,2"},
		{"AFXDP_DEVICES_ENS1F0": "ens1f0", "PFS_DATA_LINK_ENS1F0": "ens1f0", "PFS_DATA_QUEUES_ENS1F0": "3"},
	}
	if diff := cmp.Diff(wantEnvs, envs); diff != "" {
		t.Errorf("ens1f0 envs (-want +got):\n%s", diff)
	}
	_, err = nic.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{
		{DevicesIds: []string{"ens1f0-q1", "ens1f0-q9", "pfsdata0"}}}})
	if err == nil || !strings.Contains(err.Error(), "packetfs.io/ens1f0 has no device ens1f0-q9, pfsdata0") {
		t.Errorf("Allocate of unknown IDs: error %v, want one naming ens1f0-q9 and pfsdata0", err)
	}

	// The kubelet restarts: kubelet.sock goes and comes back; the plugin
	// registers both resources with the new one.
	kubelet.srv.Stop()
	kubelet = startTestKubelet(t, dir)
	regs = kubelet.registrations(t, 2)
	if regs["packetfs.io/pfsdata0"] == nil || regs["packetfs.io/ens1f0"] == nil {
		t.Errorf("after the kubelet restarted, registered %v; want both resources", regs)
	}

	// The kubelet removes a plugin socket: the plugin serves it again,
	// registers that resource again, and keeps the health it knew.
	if err := os.Remove(filepath.Join(dir, "pfs-pfsdata0.sock")); err != nil {
		t.Fatal(err)
	}
	regs = kubelet.registrations(t, 1)
	if r := regs["packetfs.io/pfsdata0"]; r == nil || r.Endpoint != "pfs-pfsdata0.sock" {
		t.Errorf("after its socket was removed, registered %v; want packetfs.io/pfsdata0 on pfs-pfsdata0.sock", regs)
	}
	if diff := cmp.Diff([]dev{{ID: "pfsdata0", Health: "Healthy"}}, next(t, watch(t, dial(t, filepath.Join(dir, "pfs-pfsdata0.sock"))))); diff != "" {
		t.Errorf("served again (-want +got):\n%s", diff)
	}
	select {
	case r := <-kubelet.calls:
		t.Errorf("unexpected Register call %v", r)
	case <-time.After(10 * testPoll):
	}

	// SIGTERM: Run returns and the sockets are gone.
	cancel()
	select {
	case err := <-done:
		done <- err // for the cleanup
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(wait):
		t.Fatal("Run did not return after its context ended")
	}
	for _, s := range []string{"pfs-pfsdata0.sock", "pfs-ens1f0.sock"} {
		if _, err := os.Lstat(filepath.Join(dir, s)); !os.IsNotExist(err) {
			t.Errorf("%s left behind after stop (%v)", s, err)
		}
	}
}

// TestPluginWaitsForLinkAndKubelet: a link absent at start is Unhealthy
// until it appears; a kubelet that is not up yet is registered with when
// its socket appears.
func TestPluginWaitsForLinkAndKubelet(t *testing.T) {
	sys := newFakeSysfs(t)
	dir := t.TempDir()
	cfg := Config{Links: []LinkSpec{{IfName: "pfsdata0"}, {IfName: "pfsdata1", PerQueue: true}}, ResourcePrefix: "packetfs.io",
		DevicePluginDir: dir, Sysfs: sys.root, PollInterval: testPoll, Health: HealthOperstate}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, testr.New(t)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	// No kubelet yet: the plugin serves, and registers once kubelet.sock appears.
	path := filepath.Join(dir, "pfs-pfsdata0.sock")
	deadline := time.Now().Add(wait)
	for _, err := os.Lstat(path); err != nil; _, err = os.Lstat(path) {
		if time.Now().After(deadline) {
			t.Fatalf("no plugin socket after %s: %v", wait, err)
		}
		time.Sleep(testPoll)
	}
	time.Sleep(5 * testPoll) // a few failed registrations first
	kubelet := startTestKubelet(t, dir)
	if regs := kubelet.registrations(t, 2); regs["packetfs.io/pfsdata0"] == nil || regs["packetfs.io/pfsdata1"] == nil {
		t.Errorf("registered %v, want both resources", regs)
	}

	whole := watch(t, dial(t, path))
	queues := watch(t, dial(t, filepath.Join(dir, "pfs-pfsdata1.sock")))
	if diff := cmp.Diff([]dev{{ID: "pfsdata0", Health: "Unhealthy"}}, next(t, whole)); diff != "" {
		t.Errorf("absent whole link (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]dev{}, next(t, queues)); diff != "" {
		t.Errorf("absent per-queue link (-want +got):\n%s", diff)
	}

	sys.veth("pfsdata0", 1, "up")
	sys.veth("pfsdata1", 2, "up")
	if diff := cmp.Diff([]dev{{ID: "pfsdata0", Health: "Healthy"}}, next(t, whole)); diff != "" {
		t.Errorf("whole link once seen (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]dev{{ID: "pfsdata1-q0", Health: "Healthy"}, {ID: "pfsdata1-q1", Health: "Healthy"}}, next(t, queues)); diff != "" {
		t.Errorf("per-queue link once seen (-want +got):\n%s", diff)
	}
}

func TestRunRejectsPCIWithoutInterface(t *testing.T) {
	sys := newFakeSysfs(t)
	sys.write("devices/pci0000:00/0000:00:01.0/0000:3b:00.2/numa_node", "0\n")
	sys.symlink("../../../devices/pci0000:00/0000:00:01.0/0000:3b:00.2", "bus/pci/devices/0000:3b:00.2")
	cfg := Config{Links: []LinkSpec{{PCIAddress: "0000:3b:00.2"}}, ResourcePrefix: "packetfs.io",
		DevicePluginDir: t.TempDir(), Sysfs: sys.root, PollInterval: testPoll, Health: HealthOperstate}
	err := Run(context.Background(), cfg, testr.New(t))
	if err == nil || !strings.Contains(err.Error(), "--link 0000:3b:00.2: PCI device 0000:3b:00.2 has no network interface") {
		t.Fatalf("Run: %v, want the PCI address named with what is missing", err)
	}
}

// TestKubeletRestartedByPoll: the poll's fallback tells a re-created
// kubelet.sock from the one registered with, without directory events.
func TestKubeletRestartedByPoll(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, KubeletSocket)
	listen := func() net.Listener {
		t.Helper()
		l, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	p := &plugin{kubelet: path}
	if p.kubeletRestarted() {
		t.Error("restarted before any registration")
	}
	l := listen()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	p.kubeletFile = fi
	if p.kubeletRestarted() {
		t.Error("restarted with the socket registered with")
	}
	_ = l.Close() // unlinks the socket
	if p.kubeletRestarted() {
		t.Error("restarted while there is no socket")
	}
	// Later than the kernel's coarse file clock, as a kubelet restart is.
	time.Sleep(50 * time.Millisecond)
	l = listen()
	defer func() { _ = l.Close() }()
	if !p.kubeletRestarted() {
		t.Error("a new kubelet.sock not seen as a restart")
	}
}
