// SPDX-License-Identifier: Apache-2.0

// Package manager runs the real manager binary against a real apiserver, as
// a user holding only the generated ClusterRole and the leader-election Role
// from config/rbac: it must start, win leader election, serve metrics only
// to scrapers the apiserver authorizes, report ready and stop cleanly on
// SIGTERM; with --watch-namespaces it must run on RoleBindings in those
// namespaces plus the cluster-scoped rules, and leave other namespaces alone.
package manager

import (
	"bytes"
	"context"
	"crypto/tls"
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

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
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

// manager is a running manager binary.
type manager struct {
	probe, metrics string
	logs           lockedBuffer
	cmd            *exec.Cmd
	exited         chan error
	stopped        bool
}

// buildManager compiles ./cmd/manager once per test binary.
var buildManager = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "pfs-manager-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "manager")
	build := exec.Command("go", "build", "-o", bin, "./cmd/manager")
	build.Dir = env.Root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/manager: %v\n%s", err, out)
	}
	return bin, nil
})

// startManager runs the manager as the kubeconfig's user and waits until
// it reports ready; it is killed when the test ends unless stopped.
func startManager(t *testing.T, kubeconfig string, args ...string) *manager {
	t.Helper()
	bin, err := buildManager()
	if err != nil {
		t.Fatal(err)
	}
	m := &manager{probe: fmt.Sprintf("127.0.0.1:%d", freePort(t)), metrics: fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		exited: make(chan error, 1)}
	m.cmd = exec.Command(bin, append([]string{"--kubeconfig=" + kubeconfig, "--metrics-bind-address=" + m.metrics,
		"--health-probe-bind-address=" + m.probe}, args...)...)
	m.cmd.Stdout, m.cmd.Stderr = &m.logs, &m.logs
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { m.exited <- m.cmd.Wait() }()
	t.Cleanup(func() {
		if !m.stopped { // a failed test must not leave the manager running
			_ = m.cmd.Process.Kill()
			t.Logf("manager stopped: %v", <-m.exited)
		}
	})
	// Ready within 60 s, or the manager's log says why not.
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + m.probe + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return m
			}
		}
		select {
		case err := <-m.exited:
			m.stopped = true
			t.Fatalf("manager exited before it was ready: %v\n%s", err, m.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("manager not ready after 60s\n%s", m.logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stop sends SIGTERM and expects a clean exit within 30 s.
func (m *manager) stop(t *testing.T) {
	t.Helper()
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-m.exited:
		m.stopped = true
		if err != nil {
			t.Fatalf("manager exited with %v after SIGTERM\n%s", err, m.logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("manager still running 30s after SIGTERM\n%s", m.logs.String())
	}
}

// noForbidden fails when the manager was refused anything by its RBAC.
func (m *manager) noForbidden(t *testing.T) {
	t.Helper()
	if strings.Contains(m.logs.String(), "forbidden") {
		t.Errorf("the manager was refused something under its least-privilege RBAC:\n%s", m.logs.String())
	}
}

// scrape GETs the manager's /metrics over HTTPS with the bearer token (none
// when empty), retrying a refused connection for 30 s: the metrics server
// listens shortly after the probes. The certificate is the manager's
// self-signed one: what is checked here is who may read, not who serves.
func (m *manager) scrape(t *testing.T, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "https://"+m.metrics+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the manager's self-signed certificate
	resp, err := c.Do(req)
	for deadline := time.Now().Add(30 * time.Second); err != nil && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		resp, err = c.Do(req)
	}
	if err != nil {
		t.Fatalf("scraping %s: %v\n%s", m.metrics, err, m.logs.String())
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// serviceAccountToken creates a ServiceAccount in ns and returns a token
// the apiserver issued for it (TokenRequest), optionally bound to the
// ClusterRole named.
func serviceAccountToken(ctx context.Context, t *testing.T, ns, name, clusterRole string) string {
	t.Helper()
	if _, _, err := env.Kubectl(ctx, "-n", ns, "create", "serviceaccount", name); err != nil {
		t.Fatal(err)
	}
	if clusterRole != "" {
		if _, _, err := env.Kubectl(ctx, "create", "clusterrolebinding", ns+"-"+name, "--clusterrole="+clusterRole,
			"--serviceaccount="+ns+":"+name); err != nil {
			t.Fatal(err)
		}
	}
	tok, _, err := env.Kubectl(ctx, "-n", ns, "create", "token", name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(tok)
}

func TestManagerStartsAndStops(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns, err := env.CreateNamespace(ctx, "mgr")
	if err != nil {
		t.Fatal(err)
	}
	m := startManager(t, leastPrivilege(ctx, t, ns), "--leader-elect", "--leader-election-namespace="+ns)

	// It holds the leader election lease.
	deadline := time.Now().Add(60 * time.Second)
	lease := &coordinationv1.Lease{}
	for {
		err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "manager.pfs.packetfs.io"}, lease)
		if err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leader election lease: %v\n%s", err, m.logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Metrics: only a token the apiserver authorizes for get /metrics (the
	// metrics-reader ClusterRole of config/rbac) reads them.
	reader := &rbacv1.ClusterRole{}
	readYAML(t, "metrics_reader_role.yaml", reader)
	reader.Name = ns + "-metrics-reader"
	if err := env.Client.Create(ctx, reader); err != nil {
		t.Fatal(err)
	}
	if code, body := m.scrape(t, ""); code != http.StatusUnauthorized {
		t.Errorf("scrape without a token: HTTP %d, want 401\n%.300s", code, body)
	}
	if code, body := m.scrape(t, serviceAccountToken(ctx, t, ns, "stranger", "")); code != http.StatusForbidden {
		t.Errorf("scrape with a token not allowed /metrics: HTTP %d, want 403\n%.300s", code, body)
	}
	code, body := m.scrape(t, serviceAccountToken(ctx, t, ns, "prometheus", reader.Name))
	if code != http.StatusOK {
		t.Fatalf("scrape with a metrics-reader token: HTTP %d, want 200\n%.300s\n%s", code, body, m.logs.String())
	}
	for _, want := range []string{`controller_runtime_reconcile_total{controller="pfstransfer"`, `controller_runtime_reconcile_total{controller="pfsblob"`} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	m.noForbidden(t)
	m.stop(t)
}

// clusterScoped are the resources of config/rbac/role.yaml that have no
// namespace: a manager watching some namespaces still needs them
// cluster-wide (the chart's rbac/clusterrole.yaml splits the same way).
var clusterScoped = map[string]bool{"nodes": true, "persistentvolumes": true, "noderesourcetopologies": true,
	"tokenreviews": true, "subjectaccessreviews": true}

// TestManagerWatchesItsNamespaces: with --watch-namespaces the manager
// runs on config/rbac's ClusterRole bound by a RoleBinding in the watched
// namespace only, plus its cluster-scoped rules cluster-wide, without a
// refusal; it reconciles a PfsBlob there and never touches one elsewhere.
func TestManagerWatchesItsNamespaces(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	watched, err := env.CreateNamespace(ctx, "watched")
	if err != nil {
		t.Fatal(err)
	}
	other, err := env.CreateNamespace(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	const user = "pfs-manager-ns-test"
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	ns := &rbacv1.ClusterRole{}
	readYAML(t, "role.yaml", ns)
	ns.Name = user
	cluster := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user + "-cluster"}}
	for _, r := range ns.Rules {
		var res []string
		for _, x := range r.Resources {
			if clusterScoped[x] {
				res = append(res, x)
			}
		}
		if len(res) > 0 {
			r.Resources = res
			cluster.Rules = append(cluster.Rules, r)
		}
	}
	for _, o := range []client.Object{ns, cluster,
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: watched}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ns.Name}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: cluster.Name}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cluster.Name}},
	} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	kc, err := env.UserKubeconfig(user, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := startManager(t, kc, "--watch-namespaces="+watched)

	// The other namespace's blob first: had the manager watched it, its
	// event would be handled before the watched one's.
	blob := func(ns string) *pfsv1alpha1.PfsBlob {
		return &pfsv1alpha1.PfsBlob{ObjectMeta: metav1.ObjectMeta{Name: "weights", Namespace: ns},
			Spec: pfsv1alpha1.PfsBlobSpec{Size: resource.MustParse("64Mi")}}
	}
	for _, ns := range []string{other, watched} {
		if err := env.Client.Create(ctx, blob(ns)); err != nil {
			t.Fatal(err)
		}
	}
	ds := &appsv1.DaemonSet{}
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := env.Client.Get(ctx, types.NamespacedName{Namespace: watched, Name: podspec.HolderName("weights")}, ds)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watched namespace's blob got no holder DaemonSet: %v\n%s", err, m.logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // a reconcile of the other blob, had one been queued, has run by now
	b := blob(other)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
		t.Fatal(err)
	}
	if len(b.Status.Conditions) != 0 || len(b.Finalizers) != 0 {
		t.Errorf("the blob in the unwatched namespace %s was reconciled: finalizers %v, conditions %v", other, b.Finalizers, b.Status.Conditions)
	}
	dss := &appsv1.DaemonSetList{}
	if err := env.Client.List(ctx, dss, client.InNamespace(other)); err != nil || len(dss.Items) != 0 {
		t.Errorf("DaemonSets in the unwatched namespace %s: %d (%v), want none", other, len(dss.Items), err)
	}
	m.noForbidden(t)
	m.stop(t)
}
