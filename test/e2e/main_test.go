// SPDX-License-Identifier: Apache-2.0

//go:build e2e

// Package e2e runs PacketFS the way users run it, on the throwaway kind
// cluster of hack/cluster-up.sh (docs/guides/cluster.md): helm install, kubectl
// apply, kubectl get. Run it with `make test-e2e`, which builds the images
// and helm first. A cluster this suite brings up is torn down at the end
// (hack/cluster-down.sh) unless KEEP_CLUSTER=1; a cluster that was already
// running is left running. See docs/guides/e2e.md.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"packetfs.io/operator/test/testenv"
)

const (
	releaseName = "pfs"
	releaseNS   = "pfs-system"
	testNS      = "pfs-e2e"
)

// env is what every test uses; filled by TestMain.
var env struct {
	root, kubectl, helm, kubeconfig, dataplaneImage, operatorImage string
	cpNode, worker                                                 string
	// nodes are every node of the cluster, sorted by name; dataDir is the
	// host directory every node sees read-only at /pfs-data (real files
	// from hack/testdata.sh).
	nodes   []string
	dataDir string
	c       client.WithWatch
}

func getenv(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "e2e %s "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05")}, args...)...)
}

// run runs a command from the repository root; stderr goes to ours, stdout
// is returned.
func run(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = env.root
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}

// clusterRunning tells whether all n node containers of the kind cluster run.
func clusterRunning(name string, n int) bool {
	out, err := exec.Command("podman", "ps", "-q", "--filter", "label=io.x-k8s.kind.cluster="+name).Output()
	return err == nil && len(strings.Fields(string(out))) == n
}

func TestMain(m *testing.M) { os.Exit(mainE(m)) }

func mainE(m *testing.M) (code int) {
	root, err := testenv.RepoRoot()
	if err != nil {
		logf("%v", err)
		return 1
	}
	env.root = root
	env.helm = getenv("HELM", filepath.Join(root, "bin", "helm-v3.19.0"))
	env.dataplaneImage = getenv("DATAPLANE_IMG", "packetfs.io/dataplane:v0.1.0")
	env.operatorImage = getenv("IMG", "packetfs.io/operator:v0.1.0")
	images := getenv("IMAGE_ARCHIVES", filepath.Join(root, "bin", "images"))
	cluster := getenv("CLUSTER_NAME", "pfs")
	env.cpNode, env.worker = cluster+"-control-plane", cluster+"-worker"
	nodes, err := strconv.Atoi(getenv("NODES", "2"))
	if err != nil || nodes < 2 {
		logf("NODES=%q: want a node count of at least 2", os.Getenv("NODES"))
		return 1
	}
	archives := []string{filepath.Join(images, "operator.tar"), filepath.Join(images, "dataplane.tar"),
		filepath.Join(images, "python-consumer.tar")}
	for _, f := range append([]string{env.helm}, archives...) {
		if _, err := os.Stat(f); err != nil {
			logf("%s is missing: run `make test-e2e` (it builds helm and the image archives)", f)
			return 1
		}
	}

	created := !clusterRunning(cluster, nodes)
	if created {
		logf("no kind cluster %q: bringing one up; it is torn down at the end unless KEEP_CLUSTER=1", cluster)
	} else {
		logf("reusing the running kind cluster %q (left running)", cluster)
	}
	start := time.Now()
	env.kubeconfig, err = run("hack/cluster-up.sh")
	if created && os.Getenv("KEEP_CLUSTER") != "1" {
		defer func() {
			logf("tearing down the cluster this run created (KEEP_CLUSTER=1 keeps it)")
			if _, err := run("hack/cluster-down.sh"); err != nil {
				logf("cluster-down: %v", err)
				code = 1
			}
		}()
	}
	if err != nil {
		logf("cluster-up: %v", err)
		return 1
	}
	logf("cluster ready in %s", time.Since(start).Round(time.Second))
	os.Setenv("KUBECONFIG", env.kubeconfig)
	bin, err := run("hack/k8s-binaries.sh", "kubectl")
	if err != nil {
		logf("kubectl: %v", err)
		return 1
	}
	env.kubectl = filepath.Join(bin, "kubectl")

	if _, err := run("hack/kind/load-images.sh", archives...); err != nil {
		logf("loading images: %v", err)
		return 1
	}
	if env.dataDir, err = run("hack/testdata.sh", "stage"); err != nil {
		logf("test data: %v", err)
		return 1
	}
	out, err := kubectl("get", "nodes", "-o", "jsonpath={.items[*].metadata.name}")
	if env.nodes = strings.Fields(out); err != nil || len(env.nodes) != nodes {
		logf("want %d nodes, kubectl get nodes says %q (%v)", nodes, out, err)
		return 1
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", env.kubeconfig)
	if err != nil {
		logf("kubeconfig: %v", err)
		return 1
	}
	if env.c, err = client.NewWithWatch(cfg, client.Options{Scheme: testenv.Scheme()}); err != nil {
		logf("client: %v", err)
		return 1
	}
	defer func() {
		// Objects first (their pods go with them), then the namespace.
		_, _ = run(env.kubectl, "delete", "namespace", testNS, "--ignore-not-found", "--wait=true", "--timeout=180s")
	}()
	return m.Run()
}

// kubectl runs kubectl and returns stdout and stderr together.
func kubectl(args ...string) (string, error) {
	cmd := exec.Command(env.kubectl, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.kubeconfig)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// kubectlIn runs kubectl apply with stdin.
func kubectlIn(stdin string, args ...string) (string, error) {
	cmd := exec.Command(env.kubectl, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.kubeconfig)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// poll calls cond every interval until it returns true or an error, or the
// timeout passes.
func poll(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out after %s", timeout)
		case <-time.After(2 * time.Second):
		}
	}
}
