// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// What hack/images/model-check.py prints (one JSON object; see its
// docstring), by its JSON names.
type checkResult struct {
	Start       float64       `json:"start"`
	Imported    float64       `json:"imported"`
	Begin       checkUsage    `json:"begin"`
	End         checkUsage    `json:"end"`
	Safetensors []tensorsRead `json:"safetensors"`
	Mmap        []tensorsRead `json:"mmap"`
	Socket      []tensorsRead `json:"socket"`
	Tokenizer   []struct {
		Path   string   `json:"path"`
		Vocab  int      `json:"vocab"`
		IDs    []int    `json:"ids"`
		Tokens []string `json:"tokens"`
	} `json:"tokenizer"`
	Onnx []struct {
		Path    string                `json:"path"`
		Outputs map[string]onnxOutput `json:"outputs"`
	} `json:"onnx"`
	Files []struct {
		Root  string                `json:"root"`
		Files map[string]fileDigest `json:"files"`
	} `json:"files"`
}

type checkUsage struct {
	Minflt     int64            `json:"minflt"`
	Majflt     int64            `json:"majflt"`
	MaxRSS     int64            `json:"maxrss"`
	Status     map[string]int64 `json:"status"`
	Cgroup     *int64           `json:"cgroup"`
	CgroupFile string           `json:"cgroupFile"`
}

type tensorsRead struct {
	Path    string                  `json:"path"`
	Count   int                     `json:"count"`
	Tensors map[string]tensorDigest `json:"tensors"`
	First   float64                 `json:"first"`
	Done    float64                 `json:"done"`
}

type tensorDigest struct {
	Dtype  string `json:"dtype"`
	Shape  []int  `json:"shape"`
	SHA256 string `json:"sha256"`
}

type onnxOutput struct {
	Shape  []int     `json:"shape"`
	SHA256 string    `json:"sha256"`
	First  []float64 `json:"first"`
}

type fileDigest struct {
	Size   int64  `json:"size"`
	Mode   string `json:"mode"`
	SHA256 string `json:"sha256"`
}

// parseCheck finds model-check's result among a pod's log lines (it may
// also print phase lines and, in the pods that run it, sha256sum's lines).
func parseCheck(t *testing.T, logs string) *checkResult {
	t.Helper()
	for _, line := range strings.Split(logs, "\n") {
		if !strings.HasPrefix(line, "{") || !strings.Contains(line, `"begin"`) {
			continue
		}
		r := &checkResult{}
		if err := json.Unmarshal([]byte(line), r); err != nil {
			t.Fatalf("model-check's result: %v\n%s", err, line)
		}
		return r
	}
	t.Fatalf("no model-check result in the pod's log:\n%s", logs)
	return nil
}

// sourceTensors reads a safetensors file on the host the way the format
// defines it (a little-endian u64 header length, then JSON naming each
// tensor's dtype, shape and byte range after the header) and returns every
// tensor's digest: an independent reading of the source that the real
// library's reading in the pod must equal.
func sourceTensors(t *testing.T, path string) map[string]tensorDigest {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var n uint64
	if err := binary.Read(f, binary.LittleEndian, &n); err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, n)
	if _, err := io.ReadFull(f, raw); err != nil {
		t.Fatal(err)
	}
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(raw, &hdr); err != nil {
		t.Fatalf("%s header: %v", path, err)
	}
	out := map[string]tensorDigest{}
	for name, v := range hdr {
		if name == "__metadata__" {
			continue
		}
		var ti struct {
			Dtype   string   `json:"dtype"`
			Shape   []int    `json:"shape"`
			Offsets [2]int64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(v, &ti); err != nil {
			t.Fatalf("%s tensor %s: %v", path, name, err)
		}
		h := sha256.New()
		if _, err := io.Copy(h, io.NewSectionReader(f, int64(8+n)+ti.Offsets[0], ti.Offsets[1]-ti.Offsets[0])); err != nil {
			t.Fatal(err)
		}
		out[name] = tensorDigest{Dtype: ti.Dtype, Shape: ti.Shape, SHA256: hex.EncodeToString(h.Sum(nil))}
	}
	return out
}

// numpyDtype is the numpy name of a safetensors dtype, for the ones the
// test models hold.
var numpyDtype = map[string]string{"F32": "float32", "F16": "float16", "F64": "float64", "I64": "int64", "I32": "int32", "U8": "uint8", "I8": "int8", "BOOL": "bool"}

// checkTensors asserts that got (read in a pod) holds every tensor of want
// (read from the source on the host) and nothing else, with equal bytes.
// numpy names dtypes its own way (mmap reads keep the file's names).
func checkTensors(t *testing.T, what string, got tensorsRead, want map[string]tensorDigest) {
	t.Helper()
	if got.Count != len(want) || len(got.Tensors) != len(want) {
		t.Errorf("%s: %d tensors read, the source has %d", what, got.Count, len(want))
	}
	bad := 0
	for name, w := range want {
		g, ok := got.Tensors[name]
		if !ok {
			t.Errorf("%s: tensor %s not read", what, name)
			bad++
		} else if g.SHA256 != w.SHA256 || fmt.Sprint(g.Shape) != fmt.Sprint(w.Shape) ||
			(g.Dtype != w.Dtype && g.Dtype != numpyDtype[w.Dtype]) {
			t.Errorf("%s: tensor %s is %s %v sha256 %s, the source's is %s %v %s", what, name, g.Dtype, g.Shape, g.SHA256, w.Dtype, w.Shape, w.SHA256)
			bad++
		}
		if bad > 5 {
			t.Fatalf("%s: more tensors differ; stopping", what)
		}
	}
}

// sourceFiles is every regular file under dir on the host: size and sha256.
func sourceFiles(t *testing.T, dir string) map[string]fileDigest {
	t.Helper()
	out := map[string]fileDigest{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out[rel] = fileDigest{Size: fi.Size(), SHA256: sha256File(t, p)}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkFiles asserts a mounted directory shows exactly the source's files,
// each with its exact size, mode 0444 (design29 section 1) and bytes.
func checkFiles(t *testing.T, what string, got, want map[string]fileDigest) {
	t.Helper()
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s: %s is missing from the mounted directory", what, name)
		case g.Size != w.Size || g.SHA256 != w.SHA256:
			t.Errorf("%s: %s is %d bytes sha256 %s, the source's %d bytes %s", what, name, g.Size, g.SHA256, w.Size, w.SHA256)
		case g.Mode != "0444":
			t.Errorf("%s: %s has mode %s, want 0444 (read-only for everyone)", what, name, g.Mode)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: the mounted directory has %s, which the source does not", what, name)
		}
	}
}

// sha256sumLines parses the `sha256sum` lines a pod printed, prefixed
// "sha256sum " and naming each file as <dir>/<path under the mount>:
// that name -> digest.
func sha256sumLines(logs string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(logs, "\n") {
		rest, ok := strings.CutPrefix(line, "sha256sum ")
		if !ok {
			continue
		}
		sum, name, ok := strings.Cut(rest, "  ")
		if ok {
			out[name] = sum
		}
	}
	return out
}

// blobManifest reads the manifest of blob from the holder's copy on node,
// the way the data plane lays it out (docs/design/blob-layout.md): the
// file <staging>/<blob>.d/tail on the CSI plugin's holder tmpfs
// (design29 section 3) starts with the manifest JSON and ends with the
// 64-byte footer that gives its length. It returns the per-file digests
// and the sha256 of the "files" text (a directory blob's status.sha256).
func blobManifest(t *testing.T, node, ns, blob, holderPod string) (map[string]string, string) {
	t.Helper()
	tail := fmt.Sprintf("/var/lib/kubelet/plugins/csi.packetfs.io/blobs/%s/%s/%s/%s.d/tail", ns, blob, holderPod, blob)
	raw, err := exec.Command("podman", "exec", node, "cat", tail).Output()
	if err != nil {
		t.Fatalf("reading %s on node %s: %v", tail, node, err)
	}
	if len(raw) < 64 || !bytes.Equal(raw[len(raw)-64:len(raw)-56], []byte("PFSMANIF")) {
		t.Fatalf("%s on %s: %d bytes, no PFSMANIF footer at its end", tail, node, len(raw))
	}
	footer := raw[len(raw)-64:]
	n := binary.LittleEndian.Uint64(footer[24:32])
	if n > uint64(len(raw)-64) {
		t.Fatalf("%s: footer says a manifest of %d bytes in a tail of %d", tail, n, len(raw))
	}
	text := raw[:n]
	var m struct {
		Kind  string `json:"kind"`
		Files []struct {
			Name   string `json:"name"`
			SHA256 string `json:"sha256"`
		} `json:"files"`
	}
	if err := json.Unmarshal(text, &m); err != nil {
		t.Fatalf("%s: manifest: %v\n%s", tail, err, text)
	}
	i := bytes.Index(text, []byte(`"files":`))
	j := bytes.LastIndexByte(text, ']')
	if i < 0 || j < i {
		t.Fatalf("%s: no files array in the manifest", tail)
	}
	filesText := text[i+len(`"files":`) : j+1]
	sum := sha256.Sum256(filesText)
	out := map[string]string{}
	for _, f := range m.Files {
		out[f.Name] = f.SHA256
	}
	return out, hex.EncodeToString(sum[:])
}

// nodeUsedMemory is what the node's pods use, read from the node itself:
// the kubelet's "kubepods" cgroup inside the kind node container (podman
// exec), memory.current on cgroup v2, memory.usage_in_bytes on v1. It
// counts every pod on the node, their page cache and tmpfs pages included
// (a holder's copy is charged to the holder, under kubepods), so a reader
// that copied the blob, or a second copy anywhere, shows here.
func nodeUsedMemory(t *testing.T, node string) (int64, string) {
	t.Helper()
	// The pods' cgroup, under the kubelet's cgroup root: kind runs the
	// kubelet with --cgroup-root=/kubelet, and a host may have cgroup v2
	// (memory.current) or v1 (memory/…/memory.usage_in_bytes).
	paths := make([]string, 0, 18)
	for _, root := range []string{"", "/kubelet", "/kubelet.slice"} {
		for _, pods := range []string{"kubepods", "kubepods.slice", "kubelet-kubepods.slice"} {
			paths = append(paths, "/sys/fs/cgroup"+root+"/"+pods+"/memory.current",
				"/sys/fs/cgroup/memory"+root+"/"+pods+"/memory.usage_in_bytes")
		}
	}
	for _, p := range paths {
		out, err := exec.Command("podman", "exec", node, "cat", p).Output()
		if err != nil {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
		if err == nil {
			return v, p
		}
	}
	t.Fatalf("node %s: none of %v is readable: cannot read the node's used memory", node, paths)
	return 0, ""
}

// readerPod is a pod that runs model-check (and any shell after it) in the
// consumer image and meets Pod Security restricted with no token, no
// special group and no capability: the consumer.
type readerPod struct {
	ns, name, node string
	script         string // run by sh -c
	volumes        string // YAML list items, indented 2
	mounts         string // YAML list items, indented 4
	memory         string // the container's memory limit
}

func (p readerPod) manifest() string {
	node := ""
	if p.node != "" {
		node = "  nodeName: " + p.node + "\n"
	}
	if p.memory == "" {
		p.memory = "512Mi"
	}
	// No CPU limit and a small request: the readers are pinned to a node
	// (nodeName: no scheduler), beside that node's holders on 2 CPUs. A
	// whole CPU is an exclusive core under the nodes' static CPU manager,
	// which two readers do not find (TopologyAffinityError), and large
	// requests do not fit (OutOfcpu).
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  restartPolicy: Never
%[3]s  securityContext: {runAsUser: 1000, runAsGroup: 1000, runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: reader
    image: packetfs.io/python-consumer:v0.1.0
    imagePullPolicy: Never
    command: ["sh", "-c", %[4]q]
    resources: {requests: {cpu: 100m, memory: %[7]s}, limits: {memory: %[7]s}}
    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
    volumeMounts:
    - {name: tmp, mountPath: /tmp}
%[6]s  volumes:
  - {name: tmp, emptyDir: {sizeLimit: 1Mi}}
%[5]s`, p.ns, p.name, node, p.script, p.volumes, p.mounts, p.memory)
}

// blobVolume is an inline ephemeral volume of blob's files (design29
// section 3); blobNS empty means the pod's own namespace.
func blobVolume(name, blob, blobNS string) string {
	attrs := "blob: " + blob
	if blobNS != "" {
		attrs += ", namespace: " + blobNS
	}
	return fmt.Sprintf("  - {name: %s, csi: {driver: csi.packetfs.io, readOnly: true, volumeAttributes: {%s}}}\n", name, attrs)
}

func mountAt(name, path string) string {
	return fmt.Sprintf("    - {name: %s, mountPath: %s, readOnly: true}\n", name, path)
}

// applyPod creates p and fails the test on an error or an admission
// warning (a consumer must meet restricted without one).
func applyPod(t *testing.T, p readerPod) {
	t.Helper()
	out, err := kubectlIn(p.manifest(), "apply", "-f", "-")
	if err != nil || strings.Contains(out, "Warning") {
		t.Fatalf("pod %s/%s: %v\n%s", p.ns, p.name, err, out)
	}
	t.Cleanup(func() { _, _ = kubectl("-n", p.ns, "delete", "pod", p.name, "--ignore-not-found", "--wait=false") })
}

// readerTimeout bounds a reader pod's run: mount, start, imports and
// reading at most 418 MiB.
const readerTimeout = 3 * time.Minute

// waitPodDone waits for the pod to end and returns its log; it fails the
// test unless it Succeeded.
func waitPodDone(ctx context.Context, t *testing.T, ns, name string) string {
	t.Helper()
	var phase string
	err := poll(ctx, readerTimeout, func() (bool, error) {
		phase, _ = kubectl("-n", ns, "get", "pod", name, "-o", "jsonpath={.status.phase}")
		return phase == "Succeeded" || phase == "Failed", nil
	})
	logs, _ := kubectl("-n", ns, "logs", name)
	if err != nil || phase != "Succeeded" {
		d, _ := kubectl("-n", ns, "describe", "pod", name)
		t.Fatalf("pod %s/%s: phase %q (%v)\n%s\n%s", ns, name, phase, err, logs, d)
	}
	return logs
}

// waitLog waits until the pod's log has a line containing want and
// returns the log.
func waitLog(ctx context.Context, t *testing.T, ns, name, want string, timeout time.Duration) string {
	t.Helper()
	var logs string
	err := poll(ctx, timeout, func() (bool, error) {
		logs, _ = kubectl("-n", ns, "logs", name)
		return strings.Contains(logs, want), nil
	})
	if err != nil {
		d, _ := kubectl("-n", ns, "describe", "pod", name)
		t.Fatalf("pod %s/%s never printed %q: %v\n%s\n%s", ns, name, want, err, logs, d)
	}
	return logs
}

// podEvents is the pod's events in time order, "Reason: message" each.
func podEvents(ns, name string) []string {
	out, _ := kubectl("-n", ns, "get", "events", "--field-selector", "involvedObject.name="+name,
		"--sort-by=.metadata.creationTimestamp", "-o", `jsonpath={range .items[*]}{.reason}{": "}{.message}{"\n"}{end}`)
	var evs []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			evs = append(evs, l)
		}
	}
	return evs
}

// restrictedNamespace (re)creates ns enforcing Pod Security restricted.
func restrictedNamespace(t *testing.T, ns string) {
	t.Helper()
	psaNamespace(t, ns, "restricted")
	t.Cleanup(func() { _, _ = kubectl("delete", "namespace", ns, "--wait=false") })
}
