// SPDX-License-Identifier: Apache-2.0

// Package testenv starts a real control plane (kube-apiserver and etcd from
// KUBEBUILDER_ASSETS) with the PacketFS CRDs from config/crd/bases installed,
// for integration tests. Run tests through `make test-go`, which builds or
// finds the binaries, or set KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)".
package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	topov1alpha2 "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// Env is a running control plane with the CRDs installed.
type Env struct {
	// Root is the repository root (the directory holding go.mod).
	Root string
	// Assets is the KUBEBUILDER_ASSETS directory (kube-apiserver, etcd, kubectl).
	Assets string
	// Config reaches the apiserver as a cluster admin.
	Config *rest.Config
	// Client is a direct (uncached) client with the PacketFS Kinds registered.
	Client client.Client

	env        *envtest.Environment
	kubeconfig string
	tmp        string
}

// Scheme returns a scheme with the built-in Kinds and the PacketFS Kinds.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(pfsv1alpha1.AddToScheme(s))
	utilruntime.Must(topov1alpha2.AddToScheme(s))
	return s
}

// RepoRoot walks up from the working directory to the directory holding go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// Start starts etcd and kube-apiserver and installs the CRDs. It fails, rather
// than skipping, when KUBEBUILDER_ASSETS is unset: an integration test that
// did not run must not look like one that passed.
func Start() (*Env, error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return nil, errors.New("KUBEBUILDER_ASSETS is not set: run `make test-go`, or " +
			"`KUBEBUILDER_ASSETS=\"$(hack/envtest-assets.sh)\" go test ./...` from the repository root")
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "pfs-envtest-")
	if err != nil {
		return nil, err
	}
	e := &Env{Root: root, Assets: assets, tmp: tmp}
	e.env = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases"), filepath.Join(root, "test", "testenv", "crds")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	cfg, err := e.env.Start()
	if err != nil {
		// envtest leaves etcd and kube-apiserver running when a later step
		// (installing the CRDs) fails: stop them, or they outlive the test.
		_ = e.env.Stop()
		_ = os.RemoveAll(tmp)
		return nil, fmt.Errorf("starting envtest with assets %s: %w", assets, err)
	}
	e.Config = cfg
	if e.Client, err = client.New(cfg, client.Options{Scheme: Scheme()}); err != nil {
		_ = e.Stop()
		return nil, err
	}
	return e, nil
}

// WatchClient is a direct client that can also watch (client.WithWatch).
func (e *Env) WatchClient() client.WithWatch {
	c, err := client.NewWithWatch(e.Config, client.Options{Scheme: Scheme()})
	if err != nil {
		panic(fmt.Sprintf("watch client: %v", err))
	}
	return c
}

// Main is a test package's TestMain around a control plane: it starts
// one into *env, runs the tests, stops it and exits with their code.
func Main(m *testing.M, env **Env) {
	var err error
	if *env, err = Start(); err != nil {
		fmt.Fprintf(os.Stderr, "envtest: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := (*env).Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping envtest: %v\n", err)
	}
	os.Exit(code)
}

// Stop stops the control plane and removes temporary files.
func (e *Env) Stop() error {
	err := e.env.Stop()
	_ = os.RemoveAll(e.tmp)
	return err
}

// CreateNamespace creates a namespace with a generated name starting with
// prefix, so that tests do not see each other's objects.
func (e *Env) CreateNamespace(ctx context.Context, prefix string) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := e.Client.Create(ctx, ns); err != nil {
		return "", err
	}
	return ns.Name, nil
}

// Kubeconfig returns the path of a kubeconfig file for a cluster-admin user
// of the apiserver, writing it on first use.
func (e *Env) Kubeconfig() (string, error) {
	if e.kubeconfig != "" {
		return e.kubeconfig, nil
	}
	user, err := e.env.AddUser(envtest.User{Name: "pfs-test-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("adding envtest user: %w", err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("writing kubeconfig: %w", err)
	}
	path := filepath.Join(e.tmp, "kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		return "", err
	}
	e.kubeconfig = path
	return path, nil
}

// UserConfig adds an apiserver user with the given groups and returns a
// config that authenticates as it, so a test can run a component with
// exactly the RBAC it is granted.
func (e *Env) UserConfig(name string, groups []string) (*rest.Config, error) {
	user, err := e.env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return nil, fmt.Errorf("adding envtest user %s: %w", name, err)
	}
	return user.Config(), nil
}

// UserKubeconfig adds an apiserver user with the given groups and writes a
// kubeconfig file for it, for binaries that take --kubeconfig.
func (e *Env) UserKubeconfig(name string, groups []string) (string, error) {
	user, err := e.env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return "", fmt.Errorf("adding envtest user %s: %w", name, err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("writing kubeconfig: %w", err)
	}
	path := filepath.Join(e.tmp, "kubeconfig-"+name)
	return path, os.WriteFile(path, kc, 0o600)
}

// Kubectl runs the kubectl binary from the assets directory against the
// apiserver as a cluster admin and returns its stdout and stderr.
func (e *Env) Kubectl(ctx context.Context, args ...string) (string, string, error) {
	kubeconfig, err := e.Kubeconfig()
	if err != nil {
		return "", "", err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(e.Assets, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Dir = e.Root
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if err != nil {
		err = fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), stderr.String(), err
}
