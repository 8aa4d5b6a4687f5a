// SPDX-License-Identifier: Apache-2.0

package csinode

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The plugin end to end, in-process, over real unix sockets: the test
// stands where the kubelet does, reads the registration socket, dials the
// endpoint it names, and publishes volumes under a pods directory of its
// own. Publishing mounts for real (in TestMain's private mount namespace).

const (
	testPoll = 20 * time.Millisecond
	// wait bounds every wait for something the plugin should do.
	wait = 5 * time.Second
)

// node is a running plugin and the kubelet's clients of it.
type node struct {
	cfg   Config
	pods  string // the kubelet's pods directory
	reg   registerapi.RegistrationClient
	ident csi.IdentityClient
	csi   csi.NodeClient
}

// startNode runs the plugin on temporary directories until the test ends,
// with no API client (volumes of the socket directory and holders need none).
func startNode(t *testing.T) *node { return startNodeWith(t, nil) }

// startNodeWith runs the plugin reading PfsBlobs with blobs.
func startNodeWith(t *testing.T, blobs client.Reader) *node {
	t.Helper()
	root := t.TempDir()
	cfg := Config{NodeName: "node-1", SocketRoot: filepath.Join(root, "run", "packetfs"),
		Endpoint:        filepath.Join(root, "plugins", DriverName, "csi.sock"),
		StagingDir:      filepath.Join(root, "plugins", DriverName, "blobs"),
		RegistrationDir: filepath.Join(root, "plugins_registry"), PollInterval: testPoll}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, blobs, testr.New(t)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		for _, s := range []string{cfg.Endpoint, cfg.RegistrationSocket()} {
			if _, err := os.Lstat(s); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s left behind after stop (%v)", s, err)
			}
		}
	})
	waitFor(t, cfg.RegistrationSocket())
	n := &node{cfg: cfg, pods: filepath.Join(root, "pods")}
	n.reg = registerapi.NewRegistrationClient(dial(t, cfg.RegistrationSocket()))
	conn := dial(t, cfg.Endpoint)
	n.ident, n.csi = csi.NewIdentityClient(conn), csi.NewNodeClient(conn)
	return n
}

func waitFor(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for _, err := os.Lstat(path); err != nil; _, err = os.Lstat(path) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %s: %v", path, wait, err)
		}
		time.Sleep(testPoll)
	}
}

func dial(t *testing.T, path string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// target is where the kubelet would publish a pod's volume; the kubelet
// creates its parent, the plugin the target itself.
func (n *node) target(t *testing.T, pod string) string {
	t.Helper()
	dir := filepath.Join(n.pods, pod, "volumes", "kubernetes.io~csi", "blob-sockets")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "mount")
}

func (n *node) publish(namespace, target string, readOnly bool) error {
	_, err := n.csi.NodePublishVolume(context.Background(), publishReq(func(r *csi.NodePublishVolumeRequest) {
		r.TargetPath, r.Readonly = target, readOnly
		r.VolumeContext[keyPodNamespace] = namespace
	}))
	return err
}

func (n *node) unpublish(t *testing.T, target string) {
	t.Helper()
	if _, err := n.csi.NodeUnpublishVolume(context.Background(),
		&csi.NodeUnpublishVolumeRequest{VolumeId: "csi-0123abcd", TargetPath: target}); err != nil {
		t.Fatalf("unpublish %s: %v", target, err)
	}
	if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("target %s still there after unpublish (%v)", target, err)
	}
}

func TestRegistrationAndIdentity(t *testing.T) {
	n := startNode(t)
	ctx := context.Background()
	info, err := n.reg.GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: DriverName, Endpoint: n.cfg.Endpoint, SupportedVersions: []string{"1.0.0"}}
	if diff := cmp.Diff(want, info, protocmp.Transform()); diff != "" {
		t.Errorf("GetInfo (-want +got):\n%s", diff)
	}
	for _, ok := range []bool{true, false} {
		if _, err := n.reg.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: ok, Error: "test refusal"}); err != nil {
			t.Errorf("NotifyRegistrationStatus(%t): %v", ok, err)
		}
	}

	pi, err := n.ident.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	if err != nil || pi.Name != DriverName || pi.VendorVersion != Version {
		t.Errorf("GetPluginInfo = %v, %v; want %s %s", pi, err, DriverName, Version)
	}
	caps, err := n.ident.GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
	if err != nil || len(caps.GetCapabilities()) != 0 {
		t.Errorf("GetPluginCapabilities = %v, %v; want none (no controller service)", caps, err)
	}
	if pr, err := n.ident.Probe(ctx, &csi.ProbeRequest{}); err != nil || !pr.GetReady().GetValue() {
		t.Errorf("Probe = %v, %v; want ready", pr, err)
	}
	ni, err := n.csi.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil || ni.NodeId != "node-1" {
		t.Errorf("NodeGetInfo = %v, %v; want node ID node-1", ni, err)
	}
	nc, err := n.csi.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
	if err != nil || len(nc.GetCapabilities()) != 0 {
		t.Errorf("NodeGetCapabilities = %v, %v; want none", nc, err)
	}
	if _, err := n.csi.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("NodeStageVolume: %v, want Unimplemented", err)
	}

	// A namespace that is not a label is refused over the wire too, before
	// anything is created.
	err = n.publish("../../etc", n.target(t, "evil"), true)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `pod namespace "../../etc" is not a DNS-1123 label`) {
		t.Errorf("publish of namespace ../../etc: %v, want InvalidArgument naming it", err)
	}
	if entries, _ := os.ReadDir(n.cfg.SocketRoot); len(entries) != 0 {
		t.Errorf("socket root holds %v after a refusal, want nothing", entries)
	}
}

// TestSocketsServedAgain: removed sockets come back, and answer.
func TestSocketsServedAgain(t *testing.T) {
	n := startNode(t)
	for _, s := range []string{n.cfg.Endpoint, n.cfg.RegistrationSocket()} {
		if err := os.Remove(s); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, n.cfg.Endpoint)
	waitFor(t, n.cfg.RegistrationSocket())
	ctx := context.Background()
	if _, err := registerapi.NewRegistrationClient(dial(t, n.cfg.RegistrationSocket())).GetInfo(ctx, &registerapi.InfoRequest{}); err != nil {
		t.Errorf("GetInfo on the new registration socket: %v", err)
	}
	if _, err := csi.NewNodeClient(dial(t, n.cfg.Endpoint)).NodeGetInfo(ctx, &csi.NodeGetInfoRequest{}); err != nil {
		t.Errorf("NodeGetInfo on the new endpoint: %v", err)
	}
}

// TestPublish: a holder's writable volume and a consumer's read-only one
// of the same namespace meet at the holder's socket; another namespace's
// volume does not see it; publish and unpublish are idempotent.
func TestPublish(t *testing.T) {
	needMountNS(t)
	n := startNode(t)
	holder, consumer, other := n.target(t, "holder"), n.target(t, "consumer"), n.target(t, "other")

	if err := n.publish("team-a", holder, false); err != nil {
		t.Fatalf("publish the holder's volume: %v", err)
	}
	dir := filepath.Join(n.cfg.SocketRoot, "team-a")
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o755 || !fi.IsDir() {
		t.Errorf("socket directory %s: %v, %v; want a 0755 directory", dir, fi.Mode(), err)
	}
	// The holder creates its socket through its writable mount.
	lis, err := net.Listen("unix", filepath.Join(holder, "blob.sock"))
	if err != nil {
		t.Fatalf("holder listens through its volume: %v", err)
	}
	defer func() { _ = lis.Close() }()
	if _, err := os.Lstat(filepath.Join(dir, "blob.sock")); err != nil {
		t.Errorf("the holder's socket is not in the node's directory: %v", err)
	}
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("fd"))
			_ = c.Close()
		}
	}()

	if err := n.publish("team-a", consumer, true); err != nil {
		t.Fatalf("publish the consumer's volume: %v", err)
	}
	// Connect through the read-only mount works; creating anything does not.
	c, err := net.Dial("unix", filepath.Join(consumer, "blob.sock"))
	if err != nil {
		t.Fatalf("consumer connects through its read-only volume: %v", err)
	}
	got, err := io.ReadAll(c)
	_ = c.Close()
	if err != nil || string(got) != "fd" {
		t.Errorf("read %q, %v from the holder; want %q", got, err, "fd")
	}
	if _, err := net.Listen("unix", filepath.Join(consumer, "fake.sock")); !errors.Is(err, unix.EROFS) {
		t.Errorf("listen in the read-only volume: %v, want EROFS", err)
	}
	if err := os.WriteFile(filepath.Join(consumer, "file"), nil, 0o600); !errors.Is(err, unix.EROFS) {
		t.Errorf("create a file in the read-only volume: %v, want EROFS", err)
	}
	for target, ro := range map[string]bool{holder: false, consumer: true} {
		var st unix.Statfs_t
		if err := unix.Statfs(target, &st); err != nil {
			t.Fatal(err)
		}
		want := int64(unix.ST_NOSUID | unix.ST_NODEV | unix.ST_NOEXEC)
		if ro {
			want |= unix.ST_RDONLY
		}
		if got := st.Flags & int64(unix.ST_NOSUID|unix.ST_NODEV|unix.ST_NOEXEC|unix.ST_RDONLY); got != want {
			t.Errorf("%s mount flags %#x, want %#x (nosuid, nodev, noexec, read-only %t)", target, got, want, ro)
		}
	}

	// Again with the same request: published already. Asking for other
	// access, or another namespace, on the same target: AlreadyExists.
	if err := n.publish("team-a", consumer, true); err != nil {
		t.Errorf("publish again: %v, want OK", err)
	}
	if err := n.publish("team-a", consumer, false); status.Code(err) != codes.AlreadyExists {
		t.Errorf("publish writable over read-only: %v, want AlreadyExists", err)
	}
	if err := n.publish("team-b", consumer, true); status.Code(err) != codes.AlreadyExists {
		t.Errorf("publish another namespace over the target: %v, want AlreadyExists", err)
	}
	if st, err := mountAt(consumer); err != nil || !st.mounted || !st.readOnly {
		t.Errorf("consumer's mount after the refusals: %+v, %v; want one read-only mount", st, err)
	}

	// Another namespace gets its own, empty directory.
	if err := n.publish("team-b", other, true); err != nil {
		t.Fatalf("publish team-b: %v", err)
	}
	if _, err := net.Dial("unix", filepath.Join(other, "blob.sock")); err == nil {
		t.Error("team-b's volume reaches team-a's holder")
	}

	// Unpublish: the mount and the target go, the holder's socket stays;
	// again, and on a target never published, it is OK.
	n.unpublish(t, consumer)
	n.unpublish(t, consumer)
	n.unpublish(t, n.target(t, "never")+"-missing")
	if _, err := os.Lstat(filepath.Join(dir, "blob.sock")); err != nil {
		t.Errorf("unpublish removed the holder's socket: %v", err)
	}
	if c, err := net.Dial("unix", filepath.Join(holder, "blob.sock")); err != nil {
		t.Errorf("the holder's volume after the consumer's unpublish: %v", err)
	} else {
		_ = c.Close()
	}
	// A target that exists but is not mounted (a publish that failed
	// half-way) is removed.
	stale := n.target(t, "stale")
	if err := os.Mkdir(stale, 0o750); err != nil {
		t.Fatal(err)
	}
	n.unpublish(t, stale)
	n.unpublish(t, other)
	_ = lis.Close()
	n.unpublish(t, holder)
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("the namespace's directory went with the last unpublish: %v; it belongs to the node", err)
	}
}
