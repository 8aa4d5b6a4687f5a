// SPDX-License-Identifier: Apache-2.0

// Package manager runs the real manager binary against a real apiserver, as
// a user holding only the generated ClusterRole and the leader-election Role
// from config/rbac: it must start, win leader election, serve metrics,
// report ready and stop cleanly on SIGTERM.
package manager

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"packetfs.io/operator/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// lockedBuffer collects the manager's log while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// leastPrivilege binds a fresh user to config/rbac's ClusterRole
// (cluster-wide) and leader-election Role (in ns only) and returns a
// kubeconfig for it.
func leastPrivilege(ctx context.Context, t *testing.T, ns string) string {
	t.Helper()
	const user = "pfs-manager-test"
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	cr := &rbacv1.ClusterRole{}
	readYAML(t, "role.yaml", cr)
	cr.Name = "pfs-manager-test"
	role := &rbacv1.Role{}
	readYAML(t, "leader_election_role.yaml", role)
	role.Namespace = ns
	for _, o := range []client.Object{cr, role,
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: cr.Name}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name, Namespace: ns}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}},
	} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	kc, err := env.UserKubeconfig(user, nil)
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

func readYAML(t *testing.T, name string, into any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.Root, "config", "rbac", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		t.Fatalf("config/rbac/%s: %v", name, err)
	}
}

func TestManagerStartsAndStops(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	bin := filepath.Join(t.TempDir(), "manager")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/manager")
	build.Dir = env.Root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/manager: %v\n%s", err, out)
	}
	ns, err := env.CreateNamespace(ctx, "mgr")
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := leastPrivilege(ctx, t, ns)

	probe := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	metrics := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	var logs lockedBuffer
	cmd := exec.Command(bin, "--kubeconfig="+kubeconfig, "--metrics-bind-address="+metrics,
		"--health-probe-bind-address="+probe, "--leader-elect", "--leader-election-namespace="+ns)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	defer func() {
		if !stopped { // a failed test must not leave the manager running
			_ = cmd.Process.Kill()
			t.Logf("manager stopped: %v", <-exited)
		}
	}()

	// Ready within 60 s, or the manager's log says why not.
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + probe + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-exited:
			stopped = true
			t.Fatalf("manager exited before it was ready: %v\n%s", err, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("manager not ready after 60s\n%s", logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}

	// It holds the leader election lease.
	lease := &coordinationv1.Lease{}
	for {
		err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "manager.pfs.packetfs.io"}, lease)
		if err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leader election lease: %v\n%s", err, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Metrics: the controllers' reconcile counters are exported.
	resp, err := http.Get("http://" + metrics + "/metrics")
	if err != nil {
		t.Fatalf("metrics: %v\n%s", err, logs.String())
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`controller_runtime_reconcile_total{controller="pfstransfer"`, `controller_runtime_reconcile_total{controller="pfsblob"`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(logs.String(), "forbidden") {
		t.Errorf("the manager was refused something under its least-privilege RBAC:\n%s", logs.String())
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Fatalf("manager exited with %v after SIGTERM\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("manager still running 30s after SIGTERM\n%s", logs.String())
	}
}
