// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// The OCI test (issue 30) pushes a real model to a real registry on the
// host (CNCF distribution over TLS with Basic auth, hack/oci-registry.sh,
// bound to the kind network's gateway) with the oras CLI, every file a
// layer titled with its name, and loads it as a PfsBlob.
const (
	ociBlob    = "minilm-oci"
	ociPull    = "registry-pull"
	ociRepoTag = "models/minilm:v1"
)

// registry is the running registry and what a client needs to reach it.
type registry struct {
	dir, addr, caFile, authFile, user, password string
	oras                                        string
}

func startRegistry(t *testing.T) *registry {
	t.Helper()
	dir, err := os.MkdirTemp("", "pfs-e2e-oci-")
	if err != nil {
		t.Fatal(err)
	}
	r := &registry{dir: dir}
	gw, _ := kindNetwork(t)
	t.Cleanup(func() {
		if out, err := exec.Command(filepath.Join(env.root, "hack/oci-registry.sh"), "stop", dir).CombinedOutput(); err != nil {
			t.Errorf("oci-registry stop: %v\n%s", err, out)
		}
		_ = os.RemoveAll(dir)
	})
	line, err := run("hack/oci-registry.sh", "start", dir, "--auth", "--bind", gw)
	if err != nil {
		t.Fatalf("oci-registry start: %v", err)
	}
	vars := map[string]string{}
	for _, kv := range strings.Fields(line) {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	r.addr, r.caFile, r.authFile = vars["OCI_REGISTRY"], vars["OCI_CA_FILE"], vars["OCI_AUTH_FILE"]
	r.user, r.password = vars["OCI_USER"], vars["OCI_PASSWORD"]
	if r.addr == "" || r.caFile == "" || r.authFile == "" || r.user == "" || r.password == "" {
		t.Fatalf("oci-registry start printed %q: want OCI_REGISTRY, OCI_CA_FILE, OCI_AUTH_FILE, OCI_USER and OCI_PASSWORD", line)
	}
	if r.oras, err = run("hack/oci-registry.sh", "oras"); err != nil {
		t.Fatalf("oras: %v", err)
	}
	return r
}

// orasCmd runs oras against the registry with its CA and the credentials.
func (r *registry) orasCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	args = append(args, "--ca-file", r.caFile, "--registry-config", filepath.Join(r.dir, "oras.json"),
		"-u", r.user, "--password-stdin")
	cmd := exec.Command(r.oras, args...)
	cmd.Dir, cmd.Stdin = dir, strings.NewReader(r.password)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if e, ok := err.(*exec.ExitError); ok {
			stderr = string(e.Stderr)
		}
		t.Fatalf("oras %s: %v\n%s", args[0], err, stderr)
	}
	return strings.TrimSpace(string(out))
}

// pushDir pushes every file of dir as a layer titled with its relative
// name and returns the manifest's digest.
func (r *registry) pushDir(t *testing.T, dir, ref string) string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	r.orasCmd(t, dir, append([]string{"push", r.addr + "/" + ref}, files...)...)
	return r.orasCmd(t, dir, "resolve", r.addr+"/"+ref)
}

// applyPullSecret creates the kubernetes.io/dockerconfigjson Secret of the
// registry's credentials, and the CA bundle ConfigMap.
func (r *registry) applyPullSecret(t *testing.T) {
	t.Helper()
	for _, args := range [][]string{
		{"create", "secret", "generic", ociPull, "--type=kubernetes.io/dockerconfigjson", "--from-file=.dockerconfigjson=" + r.authFile},
		{"create", "configmap", "registry-ca", "--from-file=ca.crt=" + r.caFile},
	} {
		if out, err := kubectl(append([]string{"-n", testNS}, args...)...); err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args[:2], " "), err, out)
		}
	}
}

func ociSource(r *registry, ref, pull string) string {
	s := fmt.Sprintf("    oci:\n      reference: %s/%s\n      caBundle: {configMapName: registry-ca}\n", r.addr, ref)
	if pull != "" {
		s += fmt.Sprintf("      pullSecretRef: {name: %s}\n", pull)
	}
	return s
}

// testOCISource is issue 30's OCI proof on the cluster.
func testOCISource(ctx context.Context, t *testing.T) {
	r := startRegistry(t)
	t.Cleanup(func() { deleteBlobs(t, ociBlob) })
	dir := filepath.Join(env.dataDir, "minilm")
	digest := r.pushDir(t, dir, ociRepoTag)
	r.applyPullSecret(t)
	t.Run("a model pushed by oras as titled layers reaches every node with the digest of the same files read from disk", func(t *testing.T) {
		want := localDigest(t, dir)
		applySourceBlob(t, ociBlob, ociSource(r, ociRepoTag, ociPull))
		st := waitBlob(ctx, t, ociBlob, 5*time.Minute, blobReady)
		checkEveryNode(t, st, want)
		if wantSrc := "oci://" + r.addr + "/" + ociRepoTag; st.Source != wantSrc {
			t.Errorf("status.source %q, want %q", st.Source, wantSrc)
		}
		res := originResultRemote(t, st)
		// Every layer's digest is the sha256 of a file: all 13 compared.
		if res.Kind != "oci" || res.OCIManifest != digest || res.Checksums != 13 {
			t.Errorf("origin source.remote %+v: want kind oci, manifest %s (what oras pushed), 13 layer digests compared", res, digest)
		}
		noneShows(t, r.password, ociBlob)
		t.Logf("OCI artifact Ready %s in %s s, sha256 %s, origin %+v", st.Ready, st.DistributionSeconds, st.SHA256, res)
	})
	t.Run("bad references: each a clear condition, no password shown", func(t *testing.T) {
		_, _ = kubectl("-n", testNS, "create", "secret", "generic", "not-a-pull-secret", "--from-literal=token=x")
		cases := []refusal{
			{"bad-oci-tag-missing", ociSource(r, "models/minilm:v9", ociPull), "SourceInvalid", []string{"404", "v9"}},
			{"bad-oci-no-credentials", ociSource(r, ociRepoTag, ""), "SourceInvalid", []string{"401"}},
			{"bad-oci-secret-kind", ociSource(r, ociRepoTag, "not-a-pull-secret"), "SourceNotFound", []string{".dockerconfigjson"}},
		}
		checkRefusals(ctx, t, cases, r.password)
	})
}
