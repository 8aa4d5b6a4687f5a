// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The chart is installed as a platform team would: from an OCI registry
// that holds this build's release (make dist, then hack/dist.sh publish),
// the nodes' containerd pulling the operator and data-plane images from it.
// The registry is CNCF distribution over TLS with a throwaway CA, on the
// kind network's gateway; each node trusts that CA for that registry alone
// (containerd's hosts.toml under /etc/containerd/certs.d, which the
// cluster's containerd reads: hack/kind/cluster.yaml.tmpl). E2E_INSTALL=local
// installs the chart directory with the side-loaded images instead.

// release is the registry holding this build's release.
type release struct {
	dir, addr, caFile, version string
}

// chartRef is what helm install takes.
func (r *release) chartRef() string { return "oci://" + r.addr + "/packetfs/charts/packetfs-operator" }

// image is the registry's repository of one of the release's images.
func (r *release) image(name string) string { return r.addr + "/packetfs/" + name }

// releaseRegistry is the run's; nil with E2E_INSTALL=local.
var releaseRegistry *release

// startReleaseRegistry publishes E2E_DIST (make dist's directory) to a
// fresh registry and makes every node trust it.
func startReleaseRegistry(t *testing.T) *release {
	t.Helper()
	dist := os.Getenv("E2E_DIST")
	if dist == "" {
		t.Fatal("E2E_DIST is not set: make test-e2e passes make dist's directory (E2E_INSTALL=local installs without a registry)")
	}
	dir, err := os.MkdirTemp("", "pfs-e2e-release-")
	if err != nil {
		t.Fatal(err)
	}
	r := &release{dir: dir}
	gw, _ := kindNetwork(t)
	line, err := run("hack/oci-registry.sh", "start", filepath.Join(dir, "registry"), "--bind", gw)
	if err != nil {
		t.Fatalf("oci-registry start: %v", err)
	}
	for _, kv := range strings.Fields(line) {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "OCI_REGISTRY":
			r.addr = v
		case "OCI_CA_FILE":
			r.caFile = v
		}
	}
	if r.addr == "" || r.caFile == "" {
		t.Fatalf("oci-registry start printed %q", line)
	}
	if r.version, err = run("hack/dist.sh", "version"); err != nil {
		t.Fatalf("hack/dist.sh version: %v", err)
	}
	cmd := exec.Command(filepath.Join(env.root, "hack/dist.sh"), "publish", dist, r.addr, "--ca-file", r.caFile)
	cmd.Env = append(os.Environ(), "HELM="+env.helm)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/dist.sh publish %s %s: %v\n%s", dist, r.addr, err, out)
	}
	hosts := fmt.Sprintf("server = \"https://%s\"\n\n[host.\"https://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = \"/etc/containerd/certs.d/%s/ca.crt\"\n",
		r.addr, r.addr, r.addr)
	for _, node := range env.nodes {
		d := "/etc/containerd/certs.d/" + r.addr
		if out, err := run("podman", "exec", node, "mkdir", "-p", d); err != nil {
			t.Fatalf("%s: mkdir %s: %v %s", node, d, err, out)
		}
		if out, err := run("podman", "cp", r.caFile, node+":"+d+"/ca.crt"); err != nil {
			t.Fatalf("%s: the registry's CA: %v %s", node, err, out)
		}
		c := exec.Command("podman", "exec", "-i", node, "sh", "-c", "cat >"+d+"/hosts.toml")
		c.Stdin = strings.NewReader(hosts)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%s: hosts.toml: %v %s", node, err, out)
		}
	}
	t.Logf("release %s published to %s (chart %s)", r.version, r.addr, r.chartRef())
	return r
}

// stop stops the registry and forgets it on the nodes.
func (r *release) stop() {
	if r == nil {
		return
	}
	for _, node := range env.nodes {
		_, _ = run("podman", "exec", node, "rm", "-rf", "/etc/containerd/certs.d/"+r.addr)
	}
	if out, err := exec.Command(filepath.Join(env.root, "hack/oci-registry.sh"), "stop", filepath.Join(r.dir, "registry")).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "oci-registry stop: %v\n%s", err, out)
	}
	_ = os.RemoveAll(r.dir)
}

// orasBin is the oras binary (hack/oci-registry.sh builds it).
func (r *release) orasBin() string {
	out, err := run("hack/oci-registry.sh", "oras")
	if err != nil {
		return "oras"
	}
	return out
}

// installArgs are helm's chart and values for the registry's release.
func (r *release) installArgs() []string {
	return []string{r.chartRef(), "--version", r.version, "--ca-file", r.caFile,
		"--set", "image.repository=" + r.image("operator") + ",image.pullPolicy=IfNotPresent",
		"--set", "dataplane.image.repository=" + r.image("dataplane") + ",dataplane.image.pullPolicy=IfNotPresent"}
}

// checkPulledFromRegistry: the operator's pod and the CSI plugin's pods
// run the registry's image, pulled by their node's containerd: their
// imageID is the registry's repository at the digest of the manifest the
// release's archive holds.
func (r *release) checkPulledFromRegistry(t *testing.T) {
	t.Helper()
	index, err := exec.Command("tar", "-xOf", filepath.Join(os.Getenv("E2E_DIST"), "packetfs-operator-v"+r.version+".oci.tar"), "index.json").Output()
	if err != nil {
		t.Fatalf("the operator image's archive: %v", err)
	}
	var idx struct {
		Manifests []struct{ Digest string } `json:"manifests"`
	}
	if err := json.Unmarshal(index, &idx); err != nil || len(idx.Manifests) != 1 {
		t.Fatalf("the operator image's index.json %s: %v", index, err)
	}
	want := r.image("operator") + "@" + idx.Manifests[0].Digest
	out, err := kubectl("-n", releaseNS, "get", "pods", "-l", "app.kubernetes.io/instance="+releaseName,
		"-o", `jsonpath={range .items[*]}{.metadata.name}{" "}{.status.containerStatuses[0].imageID}{"\n"}{end}`)
	if err != nil {
		t.Fatalf("the release's pods: %v %s", err, out)
	}
	pods := 0
	for _, l := range strings.Split(out, "\n") {
		name, id, _ := strings.Cut(l, " ")
		if name == "" {
			continue
		}
		pods++
		if id != want {
			t.Errorf("pod %s runs image %q, want %s (pulled from the release registry)", name, id, want)
		}
	}
	if pods == 0 {
		t.Error("no pod of the release")
	}
}
