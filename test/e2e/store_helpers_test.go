// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// s3Store is a real S3-compatible server (SeaweedFS, hack/s3-server.sh) on
// the host, bound to the kind network's gateway address: the pods reach it
// at an IP literal (the data-plane image has no resolver of its own), over
// TLS signed by a throwaway CA.
type s3Store struct {
	dir                          string
	addr                         string // the gateway address it listens on
	endpoint, access, secret, ca string
	s3Port, filerPort            string
	iface                        string // the bridge the nodes hang off
	env                          []string
}

// kindNetwork is the podman network kind put the nodes on: its gateway
// address (the host, seen from the nodes) and its bridge interface.
func kindNetwork(t *testing.T) (addr, iface string) {
	t.Helper()
	cmd := exec.Command("podman", "network", "inspect", "kind",
		"--format", "{{range .Subnets}}{{.Gateway}} {{end}}{{.NetworkInterface}}")
	// The cluster's podman configuration (netavark, its network directory).
	cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+filepath.Join(env.root, "hack/kind/containers.conf"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("podman network inspect kind: %v", err)
	}
	f := strings.Fields(string(out))
	// IPv4 first: the pods are given an IP-literal endpoint.
	for _, a := range f[:len(f)-1] {
		if !strings.Contains(a, ":") {
			return a, f[len(f)-1]
		}
	}
	t.Fatalf("podman network kind has no IPv4 gateway: %q", out)
	return "", ""
}

// startStore starts the server in a directory of its own until the test
// ends.
// deleteBlobs deletes PfsBlobs and waits until they (and so their holder
// pods) are gone.
func deleteBlobs(t *testing.T, names ...string) {
	t.Helper()
	args := append([]string{"-n", testNS, "delete", "pfsblob"}, names...)
	if out, err := kubectl(append(args, "--ignore-not-found", "--wait=true", "--timeout=180s")...); err != nil {
		t.Errorf("deleting %v: %v\n%s", names, err, out)
	}
}

func startStore(t *testing.T) *s3Store {
	t.Helper()
	// Not t.TempDir(): weed splits its -dir flags at commas, and a subtest's
	// name (in the temporary directory's) may have one.
	dir, err := os.MkdirTemp("", "pfs-e2e-s3-")
	if err != nil {
		t.Fatal(err)
	}
	s := &s3Store{dir: dir}
	s.addr, s.iface = kindNetwork(t)
	t.Cleanup(func() {
		if out, err := exec.Command(filepath.Join(env.root, "hack/s3-server.sh"), "stop", s.dir).CombinedOutput(); err != nil {
			t.Errorf("s3-server stop: %v\n%s", err, out)
		}
		_ = os.RemoveAll(dir)
	})
	s.start(t)
	ports, err := os.ReadFile(filepath.Join(s.dir, "ports"))
	if err != nil {
		t.Fatal(err)
	}
	// hack/s3-server.sh: s3 s3-grpc master master-grpc volume volume-grpc filer filer-grpc.
	p := strings.Fields(string(ports))
	s.s3Port, s.filerPort = p[0], p[6]
	return s
}

// start runs `hack/s3-server.sh start` (again, after a kill: same
// directory, same endpoint, keys and objects) and takes its environment.
func (s *s3Store) start(t *testing.T) {
	t.Helper()
	line, err := run("hack/s3-server.sh", "start", s.dir, "--tls", "--bind", s.addr)
	if err != nil {
		t.Fatalf("s3-server start: %v", err)
	}
	s.env = strings.Fields(line)
	vars := map[string]string{}
	for _, kv := range s.env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	s.endpoint, s.access, s.secret, s.ca = vars["S3_ENDPOINT"], vars["S3_ACCESS_KEY"], vars["S3_SECRET_KEY"], vars["S3_CA_FILE"]
	if s.endpoint == "" || s.access == "" || s.secret == "" || s.ca == "" {
		t.Fatalf("s3-server start printed %q: want S3_ENDPOINT, S3_ACCESS_KEY, S3_SECRET_KEY and S3_CA_FILE", line)
	}
}

// kill ends the server at once (SIGKILL), as a crashed store would.
func (s *s3Store) kill(t *testing.T) {
	t.Helper()
	pid, err := os.ReadFile(filepath.Join(s.dir, "weed.pid"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("kill", "-KILL", strings.TrimSpace(string(pid))).CombinedOutput(); err != nil {
		t.Fatalf("kill weed: %v: %s", err, out)
	}
}

// upload puts src (a file or a directory) under bucket/prefix with boto3,
// the way users' tools write objects, with the sha256 checksum the store
// keeps and the origin compares. It returns how many objects have a
// checksum of their bytes: a multipart upload's is a checksum of its
// parts' checksums ("...-N"), which the origin cannot compare.
func (s *s3Store) upload(t *testing.T, src, bucket, prefix string) (wholeChecksums int) {
	t.Helper()
	venv, err := run("hack/python-venv.sh", "hack/s3/requirements.txt")
	if err != nil {
		t.Fatalf("python venv for boto3: %v", err)
	}
	cmd := exec.Command(filepath.Join(venv, "bin", "python"), "hack/s3/s3put.py", "--checksum-sha256", src, bucket, prefix)
	cmd.Dir, cmd.Env = env.root, append(os.Environ(), s.env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("s3put %s: %v\n%s", src, err, errOut.String())
	}
	var res struct {
		Objects []struct {
			Key      string
			Checksum *string `json:"checksum_sha256"`
		}
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res.Objects) == 0 {
		t.Fatalf("s3put %s printed %q (%v): want the objects it wrote", src, out.String(), err)
	}
	for _, o := range res.Objects {
		if o.Checksum != nil && !strings.Contains(*o.Checksum, "-") {
			wholeChecksums++
		}
	}
	return wholeChecksums
}

// applySecrets creates the credentials Secret (good or bad keys) and the
// CA bundle ConfigMap the blobs refer to.
func (s *s3Store) applySecrets(t *testing.T, name, secretKey string) {
	t.Helper()
	ca, err := os.ReadFile(s.ca)
	if err != nil {
		t.Fatal(err)
	}
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: %[1]s, namespace: %[2]s}
stringData: {AWS_ACCESS_KEY_ID: %[3]q, AWS_SECRET_ACCESS_KEY: %[4]q}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: store-ca, namespace: %[2]s}
data:
  ca.crt: %[5]q
`, name, testNS, s.access, secretKey, string(ca))
	if out, err := kubectlIn(manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply secret %s: %v\n%s", name, err, out)
	}
}

// applyS3Blob creates a PfsBlob of an object (keyOrPrefix "key: K") or
// a prefix ("prefix: P/") of the store's bucket.
func (s *s3Store) applyS3Blob(t *testing.T, name, keyOrPrefix, secret string) {
	t.Helper()
	applySourceBlob(t, name, s3Source(s, keyOrPrefix, secret))
}

// applySourceBlob creates a PfsBlob of 2 MiB pages with source (its
// members, indented under spec.source) and anything after it.
func applySourceBlob(t *testing.T, name, source string) {
	t.Helper()
	manifest := fmt.Sprintf(`apiVersion: pfs.packetfs.io/v1alpha1
kind: PfsBlob
metadata: {name: %s, namespace: %s}
spec:
  pageSize: 2Mi
  source:
%s`, name, testNS, source)
	if out, err := kubectlIn(manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply pfsblob %s: %v\n%s\n%s", name, err, out, manifest)
	}
}

// localDigest is the digest pfs computes loading path from the local disk:
// what the same files read from a store must give.
func localDigest(t *testing.T, path string) string {
	t.Helper()
	out, err := run(filepath.Join(env.root, "dataplane/build/pfs"), "blob", "create", "--source", path)
	if err != nil {
		t.Fatalf("pfs blob create --source %s: %v", path, err)
	}
	var r struct{ Source struct{ SHA256 string } }
	if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Source.SHA256) != 64 {
		t.Fatalf("pfs blob create --source %s printed %q (%v)", path, out, err)
	}
	return r.Source.SHA256
}

// throttle slows what the host sends from port to the nodes to rate (tc
// htb on the bridge, only that source port), so a read lasts long enough
// to kill the server in the middle of it; undone when the test ends.
func throttle(t *testing.T, iface, port, rate string) {
	t.Helper()
	tc := func(args ...string) {
		if out, err := exec.Command("tc", args...).CombinedOutput(); err != nil {
			t.Fatalf("tc %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	tc("qdisc", "add", "dev", iface, "root", "handle", "1:", "htb", "default", "1")
	t.Cleanup(func() { _ = exec.Command("tc", "qdisc", "del", "dev", iface, "root").Run() })
	tc("class", "add", "dev", iface, "parent", "1:", "classid", "1:1", "htb", "rate", "10gbit")
	tc("class", "add", "dev", iface, "parent", "1:", "classid", "1:2", "htb", "rate", rate)
	tc("filter", "add", "dev", iface, "parent", "1:", "protocol", "ip", "u32", "match", "ip", "sport", port, "0xffff", "flowid", "1:2")
}

// originRemote is the origin's source.remote result, read from its init
// container's termination message (what the operator parses).
type originRemote struct {
	Kind              string
	OCIManifest       string `json:"oci_manifest"`
	Requests, Retries int64
	ResumedBytes      int64 `json:"resumed_bytes"`
	Checksums         int64
}

func originResultRemote(t *testing.T, st *blobStatus) originRemote {
	t.Helper()
	pod := ""
	for _, n := range st.Nodes {
		if n.Role == "Origin" {
			pod = n.Pod
		}
	}
	if pod == "" {
		t.Fatalf("no origin in %+v", st.Nodes)
	}
	msg, err := kubectl("-n", testNS, "get", "pod", pod, "-o",
		`jsonpath={.status.initContainerStatuses[?(@.name=="create")].state.terminated.message}`)
	if err != nil {
		t.Fatalf("origin pod %s: %v: %s", pod, err, msg)
	}
	var r struct {
		Source struct{ Remote *originRemote }
	}
	if err := json.Unmarshal([]byte(msg), &r); err != nil || r.Source.Remote == nil {
		t.Fatalf("origin %s result %q (%v): want source.remote", pod, msg, err)
	}
	return *r.Source.Remote
}
