// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// The model-volume proof of issue 29 (docs/guides/csi.md): a PfsBlob mounted as a read-only directory of its
// files by csi.packetfs.io, read by the real PyPI libraries in
// packetfs.io/python-consumer (hack/images/model-check.py). The blobs load
// real models from a PVC over /pfs-data (hack/testdata.sh):
//   - minilm: all-MiniLM-L6-v2 (model.safetensors 87 MiB, tokenizer.json)
//   - silero6: silero-vad 6.2.3 (silero_vad.onnx and friends)
//   - mpnet: all-mpnet-base-v2 (model.safetensors 418 MiB): the memory test
const (
	volPV        = "pfs-e2e-volume-models"
	volPVC       = "volume-models"
	volMiniLM    = "vol-minilm"
	volSilero    = "vol-silero"
	volMPNet     = "vol-mpnet"
	volSlow      = "vol-slow"
	volDelete    = "vol-delete"
	volNowhere   = "vol-nowhere"
	volClaimPV   = "pfs-e2e-vol-minilm"
	volClaim     = "minilm-weights"
	grantedNS    = "pfs-e2e-vol-granted"
	deniedNS     = "pfs-e2e-vol-denied"
	mountedFinal = "pfs.packetfs.io/mounted"
	// The bound on what reading a mounted blob may add, per pod and
	// for the node.
	memSlack = 16 << 20
)

func testModelVolumes(ctx context.Context, t *testing.T) {
	origin := applyVolumeModels(t)
	// Registered before any blob exists, so a failed wait leaves none behind
	// (the PV/PVC cleanup, registered first, runs after this one).
	t.Cleanup(func() {
		_, _ = kubectl("-n", testNS, "delete", "pfsblob", volMiniLM, volSilero, volMPNet, volSlow, volDelete,
			volNowhere, "--ignore-not-found", "--wait=true", "--timeout=180s")
	})
	// The minilm blob grants one other namespace from the start; the denied
	// one is not in the list.
	applyVolumeBlob(t, volMiniLM, "minilm", fmt.Sprintf("  access: {namespaces: [%s]}\n", grantedNS))
	applyVolumeBlob(t, volSilero, "silero6", "")
	applyVolumeBlob(t, volMPNet, "mpnet", "")
	for _, b := range []string{volMiniLM, volSilero, volMPNet} {
		st := waitBlob(ctx, t, b, 8*time.Minute, func(st *blobStatus) (bool, error) {
			ok, err := blobReady(st)
			return ok && st.ReadyNodes == len(env.nodes), err
		})
		t.Logf("blob %s Ready on %s in %s s", b, st.Ready, st.DistributionSeconds)
	}
	reader := env.nodes[0] // the origin is the last node (the PV's affinity)
	ref := runReference(ctx, t)

	t.Run("a pod on another node than the origin loads the model from an inline volume with the real safetensors, tokenizers and onnxruntime", func(t *testing.T) {
		testVolumeReader(ctx, t, reader, origin, ref, inlineVolumes())
	})
	t.Run("the same through a static PersistentVolume and a ReadOnlyMany claim", func(t *testing.T) {
		testVolumeReader(ctx, t, env.nodes[len(env.nodes)-2], origin, ref, claimVolumes(t))
	})
	t.Run("two pods on one node map and read a 418 MiB blob: each cgroup and the node's used memory grow by less than 16 MiB", func(t *testing.T) {
		testVolumeMemory(ctx, t, reader)
	})
	t.Run("a fill (no source) mounts as one file named for the blob, holding the bytes of its seed", func(t *testing.T) {
		testVolumeFill(ctx, t, reader)
	})
	t.Run("a pod whose node's copy is still materializing starts only after that copy is verified", func(t *testing.T) {
		testVolumeNotReady(ctx, t)
	})
	t.Run("a pod on a node the blob does not select is refused with how to schedule it", func(t *testing.T) {
		testVolumeNotHeld(ctx, t)
	})
	t.Run("another namespace: refused without a grant, mounted with one, under Pod Security restricted", func(t *testing.T) {
		testVolumeGrant(ctx, t, ref)
	})
	t.Run("a blob deleted while a pod mounts it keeps its holders and pages until the last pod goes", func(t *testing.T) {
		testVolumeDeleteMounted(ctx, t)
	})
}

// applyVolumeModels makes the PVC the blobs load from (a local PV over
// /pfs-data on the last node, as applyModelsVolume does, under names of its
// own: that PV may still be terminating) and returns the origin node.
func applyVolumeModels(t *testing.T) string {
	t.Helper()
	origin := env.nodes[len(env.nodes)-1]
	manifest := fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata: {name: %[1]s}
spec:
  capacity: {storage: 2Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  claimRef: {namespace: %[2]s, name: %[3]s}
  local: {path: /pfs-data}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: kubernetes.io/hostname, operator: In, values: [%[4]s]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: %[3]s, namespace: %[2]s}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  volumeName: %[1]s
  resources: {requests: {storage: 2Gi}}
`, volPV, testNS, volPVC, origin)
	if out, err := kubectlIn(manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply PV/PVC: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		_, _ = kubectl("-n", testNS, "delete", "pvc", volPVC, "--ignore-not-found", "--wait=false")
		_, _ = kubectl("delete", "pv", volPV, "--ignore-not-found", "--wait=false")
	})
	return origin
}

func applyVolumeBlob(t *testing.T, name, path, extra string) {
	t.Helper()
	applySourceBlob(t, name, fmt.Sprintf("    persistentVolumeClaim: {claimName: %s, path: %q}\n%s", volPVC, path, extra))
}

// The model-check run of the reader pods: the real libraries on the
// mounted paths, then coreutils' sha256sum of every file.
const readerScript = `set -e
model-check --safetensors /models/minilm/model.safetensors --tokenizer /models/minilm/tokenizer.json \
  --onnx /models/silero/silero_vad.onnx --files /models/minilm --files /models/silero
for d in minilm silero; do (cd /models/$d && find . -type f | sort | xargs sha256sum | sed "s|  ./|  $d/|; s|^|sha256sum |"); done
`

type readerVolumes struct{ volumes, mounts string }

func inlineVolumes() readerVolumes {
	return readerVolumes{
		volumes: blobVolume("minilm", volMiniLM, "") + blobVolume("silero", volSilero, ""),
		mounts:  mountAt("minilm", "/models/minilm") + mountAt("silero", "/models/silero"),
	}
}

// claimVolumes binds the minilm blob to a static PV and a ReadOnlyMany
// claim (design29 section 3: the same attributes as the inline volume);
// silero stays inline.
func claimVolumes(t *testing.T) readerVolumes {
	t.Helper()
	manifest := fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata: {name: %[1]s}
spec:
  capacity: {storage: 100Mi}
  accessModes: [ReadOnlyMany]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  claimRef: {namespace: %[2]s, name: %[3]s}
  csi:
    driver: csi.packetfs.io
    volumeHandle: %[2]s-%[4]s
    readOnly: true
    volumeAttributes: {blob: %[4]s, namespace: %[2]s}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: %[3]s, namespace: %[2]s}
spec:
  accessModes: [ReadOnlyMany]
  storageClassName: ""
  volumeName: %[1]s
  resources: {requests: {storage: 100Mi}}
`, volClaimPV, testNS, volClaim, volMiniLM)
	if out, err := kubectlIn(manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply the blob's PV/PVC: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		_, _ = kubectl("-n", testNS, "delete", "pvc", volClaim, "--ignore-not-found", "--wait=false")
		_, _ = kubectl("delete", "pv", volClaimPV, "--ignore-not-found", "--wait=false")
	})
	err := poll(context.Background(), time.Minute, func() (bool, error) {
		phase, _ := kubectl("-n", testNS, "get", "pvc", volClaim, "-o", "jsonpath={.status.phase}")
		return phase == "Bound", nil
	})
	if err != nil {
		out, _ := kubectl("-n", testNS, "describe", "pvc", volClaim)
		t.Fatalf("claim %s not Bound: %v\n%s", volClaim, err, out)
	}
	return readerVolumes{
		volumes: fmt.Sprintf("  - {name: minilm, persistentVolumeClaim: {claimName: %s, readOnly: true}}\n", volClaim) +
			blobVolume("silero", volSilero, ""),
		mounts: mountAt("minilm", "/models/minilm") + mountAt("silero", "/models/silero"),
	}
}

// reference is the same libraries run on the original files (the PVC the
// blobs were loaded from): what a reader of the mounted blob must print.
type reference struct {
	tokenIDs []int
	onnx     map[string]onnxOutput
}

func runReference(ctx context.Context, t *testing.T) reference {
	t.Helper()
	p := readerPod{ns: testNS, name: "vol-reference",
		script:  "model-check --tokenizer /pfs-data/minilm/tokenizer.json --onnx /pfs-data/silero6/silero_vad.onnx",
		volumes: fmt.Sprintf("  - {name: data, persistentVolumeClaim: {claimName: %s, readOnly: true}}\n", volPVC),
		mounts:  mountAt("data", "/pfs-data")}
	applyPod(t, p)
	r := parseCheck(t, waitPodDone(ctx, t, p.ns, p.name))
	if len(r.Tokenizer) != 1 || len(r.Onnx) != 1 || len(r.Tokenizer[0].IDs) == 0 || len(r.Onnx[0].Outputs) == 0 {
		t.Fatalf("the reference run on the original files read nothing: %+v", r)
	}
	return reference{tokenIDs: r.Tokenizer[0].IDs, onnx: r.Onnx[0].Outputs}
}

// testVolumeReader: a reader pod on node mounts the minilm and silero blobs
// and must see what the source files hold, through the real libraries and
// sha256sum, equal to the manifest the holder on node keeps.
func testVolumeReader(ctx context.Context, t *testing.T, node, origin string, ref reference, v readerVolumes) {
	if node == origin {
		t.Fatalf("reader node %s is the origin: the proof wants another node", node)
	}
	name := "vol-reader-" + strings.ReplaceAll(strings.TrimPrefix(node, "pfs-"), "-", "")
	applyPod(t, readerPod{ns: testNS, name: name, node: node, script: readerScript, volumes: v.volumes, mounts: v.mounts})
	logs := waitPodDone(ctx, t, testNS, name)
	r := parseCheck(t, logs)

	minilm := filepath.Join(env.dataDir, "minilm")
	silero := filepath.Join(env.dataDir, "silero6")
	if len(r.Safetensors) != 1 {
		t.Fatalf("model-check read %d safetensors files, want 1", len(r.Safetensors))
	}
	checkTensors(t, "safe_open(/models/minilm/model.safetensors)", r.Safetensors[0], sourceTensors(t, filepath.Join(minilm, "model.safetensors")))
	if len(r.Tokenizer) != 1 || fmt.Sprint(r.Tokenizer[0].IDs) != fmt.Sprint(ref.tokenIDs) {
		t.Errorf("Tokenizer.from_file on the mounted path: %+v; on the original file the ids are %v", r.Tokenizer, ref.tokenIDs)
	}
	if len(r.Onnx) != 1 {
		t.Fatalf("model-check ran %d ONNX models, want 1", len(r.Onnx))
	}
	for out, want := range ref.onnx {
		if got := r.Onnx[0].Outputs[out]; got.SHA256 != want.SHA256 || fmt.Sprint(got.Shape) != fmt.Sprint(want.Shape) {
			t.Errorf("onnxruntime on the mounted silero_vad.onnx: output %s %v sha256 %s (first %v); from the original file %v %s (first %v)",
				out, got.Shape, got.SHA256, got.First, want.Shape, want.SHA256, want.First)
		}
	}
	if len(r.Files) != 2 {
		t.Fatalf("model-check listed %d directories, want 2", len(r.Files))
	}
	checkFiles(t, "/models/minilm", r.Files[0].Files, sourceFiles(t, minilm))
	checkFiles(t, "/models/silero", r.Files[1].Files, sourceFiles(t, silero))

	// sha256sum in the pod against the manifest the holder on that node
	// keeps, and the manifest against the blob's status.
	sums := sha256sumLines(logs)
	for dir, blob := range map[string]string{"minilm": volMiniLM, "silero": volSilero} {
		st, err := getBlobStatus(blob)
		if err != nil {
			t.Fatal(err)
		}
		holder := ""
		for _, n := range st.Nodes {
			if n.Node == node {
				holder = n.Pod
			}
		}
		manifest, filesSum := blobManifest(t, node, testNS, blob, holder)
		if filesSum != st.SHA256 {
			t.Errorf("blob %s: the manifest on %s hashes to %s, status.sha256 is %s", blob, node, filesSum, st.SHA256)
		}
		if len(manifest) == 0 {
			t.Errorf("blob %s: an empty manifest on %s", blob, node)
		}
		for f, want := range manifest {
			if got := sums[dir+"/"+f]; got != want {
				t.Errorf("sha256sum %s/%s in the pod: %q, the manifest says %s", dir, f, got, want)
			}
		}
	}
	t.Logf("reader on %s: %d tensors equal to the source, tokenizer ids %v, onnx outputs equal to the original file's, %d+%d files with the manifest's sha256",
		node, r.Safetensors[0].Count, r.Tokenizer[0].IDs[:8], len(r.Files[0].Files), len(r.Files[1].Files))
}

// testVolumeMemory: two pods on one node map the 418 MiB mpnet model
// (MAP_SHARED, what safetensors and inference servers do) and hash every
// tensor in place. Reading must be served from the holder's pages: each
// pod's cgroup (model-check reads memory.current, or memory.usage_in_bytes
// on cgroup v1, before and after) grows by less than 16 MiB, and so does
// the node's used memory (nodeUsedMemory: the kubepods cgroup read in the
// node container), sampled once both pods have started and imported
// numpy, and again while both still hold their mappings after reading.
func testVolumeMemory(ctx context.Context, t *testing.T, node string) {
	pods := []string{"vol-mem-a", "vol-mem-b"}
	for _, p := range pods {
		applyPod(t, readerPod{ns: testNS, name: p, node: node,
			script:  "model-check --wait-before /tmp/go --mmap /models/mpnet/model.safetensors --hold-after /tmp/release",
			volumes: blobVolume("mpnet", volMPNet, ""), mounts: mountAt("mpnet", "/models/mpnet"), memory: "256Mi"})
	}
	for _, p := range pods {
		waitLog(ctx, t, testNS, p, `"phase": "waiting"`, 3*time.Minute)
	}
	before, src := nodeUsedMemory(t, node)
	for _, p := range pods {
		if out, err := kubectl("-n", testNS, "exec", p, "--", "sh", "-c", ": > /tmp/go"); err != nil {
			t.Fatalf("starting the read in %s: %v\n%s", p, err, out)
		}
	}
	results := map[string]*checkResult{}
	for _, p := range pods {
		results[p] = parseCheck(t, waitLog(ctx, t, testNS, p, `"begin"`, 3*time.Minute))
	}
	after, _ := nodeUsedMemory(t, node)
	want := sourceTensors(t, filepath.Join(env.dataDir, "mpnet", "model.safetensors"))
	for _, p := range pods {
		r := results[p]
		if len(r.Mmap) != 1 {
			t.Fatalf("%s: %d mapped files, want 1", p, len(r.Mmap))
		}
		checkTensors(t, p+": the mapped model.safetensors", r.Mmap[0], want)
		if r.Begin.Cgroup == nil || r.End.Cgroup == nil {
			t.Fatalf("%s: model-check could not read its cgroup's memory (%q)", p, r.End.CgroupFile)
		}
		grew := *r.End.Cgroup - *r.Begin.Cgroup
		t.Logf("%s: %s %d -> %d (+%.1f MiB); RSS %.1f MiB (file %.1f, anon %.1f, shmem %.1f); page faults %d minor, %d major",
			p, r.End.CgroupFile, *r.Begin.Cgroup, *r.End.Cgroup, float64(grew)/(1<<20), mib(r.End.Status["VmRSS"]),
			mib(r.End.Status["RssFile"]), mib(r.End.Status["RssAnon"]), mib(r.End.Status["RssShmem"]),
			r.End.Minflt-r.Begin.Minflt, r.End.Majflt-r.Begin.Majflt)
		if grew >= memSlack {
			t.Errorf("%s: its cgroup grew by %.1f MiB while it mapped and read 418 MiB; want < 16 MiB (the pages are the holder's)", p, float64(grew)/(1<<20))
		}
		// The read went through the mapping: the shared file pages show in
		// the reader's RSS, not as anonymous memory.
		if anon := r.End.Status["RssAnon"] - r.Begin.Status["RssAnon"]; anon >= memSlack {
			t.Errorf("%s: anonymous RSS grew by %.1f MiB: the read copied", p, mib(anon))
		}
	}
	t.Logf("node %s used memory (%s): %d -> %d (%+.1f MiB) while two pods mapped and read the 418 MiB blob", node, src, before, after, mib(after-before))
	if after-before >= memSlack {
		t.Errorf("node %s: used memory grew by %.1f MiB beyond the holder's copy; want < 16 MiB", node, mib(after-before))
	}
	for _, p := range pods {
		_, _ = kubectl("-n", testNS, "exec", p, "--", "sh", "-c", ": > /tmp/release")
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// testVolumeNotReady: a blob is created with its relays paced, and a pod
// that mounts it is placed at once on a node that must receive it. The pod
// must not run while that node's copy is not Ready (checked at every poll),
// its events must show the plugin's "not ready" refusal first, and what it
// then reads must be the whole model.
func testVolumeNotReady(ctx context.Context, t *testing.T) {
	node := env.nodes[0]
	applyVolumeBlob(t, volSlow, "mpnet", "  replication: {transport: TCP, topology: Chain, bandwidthLimit: 20Mi}\n")
	pod := "vol-early"
	applyPod(t, readerPod{ns: testNS, name: pod, node: node,
		script:  "model-check --mmap /models/mpnet/model.safetensors",
		volumes: blobVolume("mpnet", volSlow, ""), mounts: mountAt("mpnet", "/models/mpnet"), memory: "256Mi"})
	var lastNotReady time.Time
	var states []string
	err := poll(ctx, 8*time.Minute, func() (bool, error) {
		// The pod first, then the blob: a pod seen started must find the
		// node's copy Ready at the later read.
		started, _ := kubectl("-n", testNS, "get", "pod", pod, "-o", "jsonpath={.status.containerStatuses[0].state}")
		st, err := getBlobStatus(volSlow)
		if err != nil {
			return false, err
		}
		state := "absent"
		for _, n := range st.Nodes {
			if n.Node == node {
				state = n.State
			}
		}
		if len(states) == 0 || states[len(states)-1] != state {
			states = append(states, state)
		}
		running := strings.Contains(started, "running") || strings.Contains(started, "terminated")
		if state != "Ready" {
			if running {
				return false, fmt.Errorf("the pod's container started while node %s's copy is %s", node, state)
			}
			lastNotReady = time.Now()
		}
		return running, nil
	})
	if err != nil {
		t.Fatalf("%v (node states seen %v)\n%s", err, states, strings.Join(podEvents(testNS, pod), "\n"))
	}
	logs := waitPodDone(ctx, t, testNS, pod)
	evs := podEvents(testNS, pod)
	t.Logf("node %s states %v; the pod's events:\n%s", node, states, strings.Join(evs, "\n"))
	if lastNotReady.IsZero() {
		t.Fatalf("node %s's copy was Ready at the first look (states %v): the test saw no materializing phase; pace the relays more", node, states)
	}
	refusal := fmt.Sprintf("blob %s/%s is not ready on node %s: state ", testNS, volSlow, node)
	firstRefusal, started := -1, -1
	for i, e := range evs {
		if firstRefusal < 0 && strings.HasPrefix(e, "FailedMount") && strings.Contains(e, refusal) {
			firstRefusal = i
		}
		if strings.HasPrefix(e, "Started") {
			started = i
		}
	}
	if firstRefusal < 0 || started < firstRefusal {
		t.Errorf("want a FailedMount event %q... before the container's Started event; events:\n%s", refusal, strings.Join(evs, "\n"))
	}
	startedAt, _ := kubectl("-n", testNS, "get", "pod", pod, "-o", "jsonpath={.status.containerStatuses[0].state.terminated.startedAt}")
	if at, err := time.Parse(time.RFC3339, startedAt); err != nil || at.Add(time.Second).Before(lastNotReady) {
		t.Errorf("the container started at %s (%v), before %s when node %s's copy was last seen not Ready", startedAt, err, lastNotReady.UTC().Format(time.RFC3339), node)
	}
	r := parseCheck(t, logs)
	if len(r.Mmap) != 1 {
		t.Fatalf("%d mapped files, want 1", len(r.Mmap))
	}
	checkTensors(t, "the early pod's model.safetensors", r.Mmap[0], sourceTensors(t, filepath.Join(env.dataDir, "mpnet", "model.safetensors")))
}

// testVolumeNotHeld: a blob whose nodeSelector selects no node has no
// entry for the pod's node; the plugin refuses the mount for good
// (FailedPrecondition, design29 section 3) and says how to schedule the pod.
func testVolumeNotHeld(ctx context.Context, t *testing.T) {
	node := env.nodes[0]
	applyVolumeBlob(t, volNowhere, "silero6", "  nodeSelector: {pfs-e2e/nowhere: \"true\"}\n")
	pod := "vol-nowhere"
	applyPod(t, readerPod{ns: testNS, name: pod, node: node, script: "model-check --files /models/silero",
		volumes: blobVolume("silero", volNowhere, ""), mounts: mountAt("silero", "/models/silero")})
	want := fmt.Sprintf("blob %s/%s is not held on node %s", testNS, volNowhere, node)
	var evs []string
	err := poll(ctx, 2*time.Minute, func() (bool, error) {
		evs = podEvents(testNS, pod)
		for _, e := range evs {
			if strings.HasPrefix(e, "FailedMount") && strings.Contains(e, want) && strings.Contains(e, "nodeSelector") {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("no FailedMount event %q... naming the nodeSelector: %v\n%s", want, err, strings.Join(evs, "\n"))
	}
	if phase, _ := kubectl("-n", testNS, "get", "pod", pod, "-o", "jsonpath={.status.phase}"); phase != "Pending" {
		t.Errorf("the pod on a node the blob does not select is %q, want Pending", phase)
	}
	t.Logf("refused: %s", lastMatching(evs, "FailedMount"))
}

// testVolumeGrant: the minilm blob grants grantedNS only. A pod in
// deniedNS asking for it never starts and its events say why; a pod in
// grantedNS mounts it and loads the model. Both namespaces enforce Pod
// Security restricted, and the pods carry no token and no special group.
func testVolumeGrant(ctx context.Context, t *testing.T, ref reference) {
	restrictedNamespace(t, deniedNS)
	restrictedNamespace(t, grantedNS)
	script := "model-check --safetensors /models/minilm/model.safetensors --tokenizer /models/minilm/tokenizer.json"
	for _, ns := range []string{deniedNS, grantedNS} {
		applyPod(t, readerPod{ns: ns, name: "reader", script: script,
			volumes: blobVolume("minilm", volMiniLM, testNS), mounts: mountAt("minilm", "/models/minilm")})
	}
	r := parseCheck(t, waitPodDone(ctx, t, grantedNS, "reader"))
	if len(r.Safetensors) != 1 || len(r.Tokenizer) != 1 {
		t.Fatalf("granted reader: %+v", r)
	}
	checkTensors(t, grantedNS+"/reader", r.Safetensors[0], sourceTensors(t, filepath.Join(env.dataDir, "minilm", "model.safetensors")))
	if fmt.Sprint(r.Tokenizer[0].IDs) != fmt.Sprint(ref.tokenIDs) {
		t.Errorf("granted reader: tokenizer ids %v, want %v", r.Tokenizer[0].IDs, ref.tokenIDs)
	}

	var evs []string
	blob := testNS + "/" + volMiniLM
	err := poll(ctx, 2*time.Minute, func() (bool, error) {
		evs = podEvents(deniedNS, "reader")
		for _, e := range evs {
			if strings.HasPrefix(e, "FailedMount") && strings.Contains(e, blob) && strings.Contains(e, deniedNS) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("no FailedMount event naming %s and %s for the pod without a grant: %v\n%s", blob, deniedNS, err, strings.Join(evs, "\n"))
	}
	if phase, _ := kubectl("-n", deniedNS, "get", "pod", "reader", "-o", "jsonpath={.status.phase}"); phase != "Pending" {
		t.Errorf("the pod without a grant is %q, want Pending (never mounted)", phase)
	}
	t.Logf("refused in %s: %s", deniedNS, lastMatching(evs, "FailedMount"))
}

func lastMatching(evs []string, prefix string) string {
	for i := len(evs) - 1; i >= 0; i-- {
		if strings.HasPrefix(evs[i], prefix) {
			return evs[i]
		}
	}
	return ""
}

// testVolumeDeleteMounted: the behaviour chosen for item 5 (design29
// section 4): a PfsBlob deleted while a pod mounts it stays, with its
// finalizer, its holders and status.mountedBy naming the pod; the pod
// reads every file again, equal; once the pod is gone the blob and its
// holders go.
func testVolumeDeleteMounted(ctx context.Context, t *testing.T) {
	node := env.nodes[0]
	applyVolumeBlob(t, volDelete, "silero6", "")
	waitBlob(ctx, t, volDelete, 5*time.Minute, func(st *blobStatus) (bool, error) {
		ok, err := blobReady(st)
		return ok && st.ReadyNodes == len(env.nodes), err
	})
	pod := "vol-holding"
	applyPod(t, readerPod{ns: testNS, name: pod, node: node, script: "model-check --files /models/silero --hold-after /tmp/release",
		volumes: blobVolume("silero", volDelete, ""), mounts: mountAt("silero", "/models/silero")})
	first := parseCheck(t, waitLog(ctx, t, testNS, pod, `"begin"`, 3*time.Minute))
	st, err := getBlobStatus(volDelete)
	if err != nil {
		t.Fatal(err)
	}
	holders := make([]string, 0, len(st.Nodes))
	for _, n := range st.Nodes {
		holders = append(holders, n.Pod)
	}

	if out, err := kubectl("-n", testNS, "delete", "pfsblob", volDelete, "--wait=false"); err != nil {
		t.Fatalf("kubectl delete pfsblob: %v\n%s", err, out)
	}
	var obj struct {
		Metadata struct {
			DeletionTimestamp string   `json:"deletionTimestamp"`
			Finalizers        []string `json:"finalizers"`
		} `json:"metadata"`
		Status struct {
			MountedBy json.RawMessage `json:"mountedBy"`
		} `json:"status"`
	}
	err = poll(ctx, time.Minute, func() (bool, error) {
		out, err := kubectl("-n", testNS, "get", "pfsblob", volDelete, "-o", "json")
		if err != nil {
			return false, fmt.Errorf("the mounted blob is gone: %v: %s", err, out)
		}
		if err := json.Unmarshal([]byte(out), &obj); err != nil {
			return false, err
		}
		// mountedBy lists "namespace/name" strings.
		return obj.Metadata.DeletionTimestamp != "" && strings.Contains(string(obj.Status.MountedBy), `"`+testNS+"/"+pod+`"`), nil
	})
	if err != nil {
		t.Fatalf("after delete, while %s mounts it: %v; metadata %+v, mountedBy %s", pod, err, obj.Metadata, obj.Status.MountedBy)
	}
	if !strings.Contains(strings.Join(obj.Metadata.Finalizers, ","), mountedFinal) {
		t.Errorf("finalizers %v, want %s", obj.Metadata.Finalizers, mountedFinal)
	}
	t.Logf("deleted while mounted: finalizers %v, mountedBy %s", obj.Metadata.Finalizers, obj.Status.MountedBy)
	// Some time passes: nothing may be pulled from under the pod.
	time.Sleep(10 * time.Second)
	for _, h := range holders {
		if phase, err := kubectl("-n", testNS, "get", "pod", h, "-o", "jsonpath={.status.phase}"); err != nil || phase != "Running" {
			t.Errorf("holder %s of the deleted, still mounted blob: %q (%v), want Running", h, phase, err)
		}
	}
	out, err := kubectl("-n", testNS, "exec", pod, "--", "model-check", "--files", "/models/silero")
	if err != nil {
		t.Fatalf("reading the files again after the delete: %v\n%s", err, out)
	}
	again := parseCheck(t, out)
	if len(again.Files) != 1 || len(first.Files) != 1 {
		t.Fatalf("file listings: %d then %d", len(first.Files), len(again.Files))
	}
	checkFiles(t, "after the delete", again.Files[0].Files, first.Files[0].Files)

	// The last mount goes: so does the blob, and its holders with it.
	if out, err := kubectl("-n", testNS, "delete", "pod", pod, "--wait=true", "--timeout=120s"); err != nil {
		t.Fatalf("deleting %s: %v\n%s", pod, err, out)
	}
	err = poll(ctx, 3*time.Minute, func() (bool, error) {
		out, err := kubectl("-n", testNS, "get", "pfsblob", volDelete, "-o", "name")
		if err == nil {
			return false, nil
		}
		return strings.Contains(out, "NotFound"), nil
	})
	if err != nil {
		t.Fatalf("the blob stays after its last mount went: %v\n%s", err, describe("pfsblob", volDelete))
	}
	err = poll(ctx, 3*time.Minute, func() (bool, error) {
		for _, h := range holders {
			if _, err := kubectl("-n", testNS, "get", "pod", h, "-o", "name"); err == nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("holders %v still there after the blob went: %v", holders, err)
	}
}

// testVolumeFill: the first step's seeded blob (a fill, no source) mounted
// as a volume shows one file, named for the blob, of the blob's size, mode
// 0644, whose sha256 in the pod equals that of the same seed filled here by
// the data plane built for this run; that local fill's fingerprint must be
// the blob's, so both ends are the seed's bytes and not merely each other.
func testVolumeFill(ctx context.Context, t *testing.T, node string) {
	var b pfsv1alpha1.PfsBlob
	if err := env.c.Get(ctx, client.ObjectKey{Namespace: testNS, Name: blobName}, &b); err != nil {
		t.Fatal(err)
	}
	if b.Spec.Source != nil || b.Spec.Fill.Seed == nil {
		t.Fatalf("blob %s is not a seeded fill: %+v", blobName, b.Spec)
	}
	sum, fp := localFill(t, b.Spec.Size.Value(), *b.Spec.Fill.Seed)
	// pfs prints 0x<hex>; status holds the hex digits.
	if strings.TrimPrefix(fp, "0x") != b.Status.Fingerprint {
		t.Fatalf("the local fill of seed %d has fingerprint %s, the blob's is %s: the generator differs", *b.Spec.Fill.Seed, fp, b.Status.Fingerprint)
	}
	const name = "vol-fill"
	applyPod(t, readerPod{ns: testNS, name: name, node: node, script: "model-check --files /fill",
		volumes: blobVolume("fill", blobName, ""), mounts: mountAt("fill", "/fill")})
	r := parseCheck(t, waitPodDone(ctx, t, testNS, name))
	if len(r.Files) != 1 {
		t.Fatalf("model-check listed %d directories, want 1", len(r.Files))
	}
	want := map[string]fileDigest{blobName: {Size: b.Spec.Size.Value(), Mode: "0644", SHA256: sum}}
	if diff := cmp.Diff(want, r.Files[0].Files); diff != "" {
		t.Errorf("the fill's volume on %s (-want +got):\n%s", node, diff)
	}
	t.Logf("fill %s on %s: one file of %d bytes, sha256 %s, equal to seed %d filled here", blobName, node, b.Spec.Size.Value(), sum, *b.Spec.Fill.Seed)
}

// localFill fills size bytes of seed with the data plane built for this
// run (4 KiB pages in a temporary directory: the fill does not depend on
// the page kind) and returns the file's sha256 and the blob's fingerprint.
func localFill(t *testing.T, size, seed int64) (string, string) {
	t.Helper()
	pfs, err := filepath.Abs("../../dataplane/build/pfs")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, err := exec.Command(pfs, "blob", "create", "--name", "fill", "--dir", dir, "--size", strconv.FormatInt(size, 10),
		"--page", "4K", "--fill", "seed", "--seed", strconv.FormatInt(seed, 10)).Output()
	if err != nil {
		t.Fatalf("%s blob create: %v\n%s", pfs, err, out)
	}
	var res struct {
		Blob struct {
			Fingerprint string `json:"fingerprint"`
		} `json:"blob"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.Blob.Fingerprint == "" {
		t.Fatalf("blob create printed %q: %v", out, err)
	}
	f, err := os.Open(filepath.Join(dir, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil)), res.Blob.Fingerprint
}
