// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
)

// The blob-source tests read real files that hack/testdata.sh put in the
// cluster's data directory, which every node sees at /pfs-data: a 193 MiB
// dictionary file (sudachi/system.dic) and a model directory
// (minilm/, all-MiniLM-L6-v2 with its safetensors weights).
const (
	modelsPV  = "pfs-e2e-models"
	modelsPVC = "models"
	fileBlob  = "dict-file"
	dirBlob   = "minilm"
	xdpBlob   = "minilm-weights"
	// The two versions of silero-vad's model a Delta transfer moves.
	deltaBase = "silero-v5"
	deltaNew  = "silero-v6"
	// The new version again, as blobs with spec.base: against the old one
	// on every node, and against a copy of it on the origin only.
	deltaFan     = "silero-v6-fan"
	deltaBaseOne = "silero-v5-one"
	deltaPartial = "silero-v6-partial"
	treeBlob     = "silero-v6-tree"
	// fanoutRate paces every hop of the file blob so the test can delete
	// the middle node's holder while bytes still flow through it.
	fanoutRate = "40Mi"
)

// blobStatus is the part of a PfsBlob's status the fan-out tests read, by
// its JSON names: the test checks what `kubectl get -o json` shows.
type blobStatus struct {
	Source              string `json:"source"`
	Size                string `json:"size"`
	SHA256              string `json:"sha256"`
	Ready               string `json:"ready"`
	DistributionSeconds string `json:"distributionSeconds"`
	DistributionMBps    string `json:"distributionMBps"`
	ReadyNodes          int    `json:"readyNodes"`
	Conditions          []struct {
		Type, Status, Reason, Message string
	} `json:"conditions"`
	Delta *struct {
		Base                      string
		DeltaNodes, FullCopyNodes int
		WireBytes, EffectiveBytes int64
		Ratio, Message            string
	} `json:"delta"`
	Nodes []struct {
		Node, Pod, State, Role, From, Seconds, MBps, SHA256, Reason, Message string
		Transport, Datapath, SteppedAside                                    string
		Bytes, NAKs                                                          int64
		Attempts                                                             int
		Delta                                                                *struct {
			Encoding, Ratio, Reason, Message string
			WireBytes, DeltaBytes            int64
		}
		Verification *struct {
			By, Root     string
			Chunks       int64
			FailedChunks int64
		}
	} `json:"nodes"`
}

// ready is the Ready condition's status, reason and message.
func (s *blobStatus) ready() (status, reason, msg string) {
	for _, c := range s.Conditions {
		if c.Type == "Ready" {
			return c.Status, c.Reason, c.Message
		}
	}
	return "", "", ""
}

func getBlobStatus(name string) (*blobStatus, error) {
	out, err := kubectl("-n", testNS, "get", "pfsblob", name, "-o", "jsonpath={.status}")
	if err != nil {
		return nil, fmt.Errorf("kubectl get pfsblob %s: %v: %s", name, err, out)
	}
	st := &blobStatus{}
	if out == "" {
		return st, nil
	}
	if err := json.Unmarshal([]byte(out), st); err != nil {
		return nil, fmt.Errorf("pfsblob %s status: %v: %s", name, err, out)
	}
	return st, nil
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// blobBytes is status.size in bytes.
func blobBytes(t *testing.T, st *blobStatus) int64 {
	t.Helper()
	q, err := resource.ParseQuantity(st.Size)
	if err != nil {
		t.Fatalf("status.size %q: %v", st.Size, err)
	}
	return q.Value()
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// testFanout is the issue-14 proof on the cluster: real files in a PVC,
// loaded once by the origin, relayed node to node, verified everywhere.
func testFanout(ctx context.Context, t *testing.T) {
	applyModelsVolume(t)
	t.Run("a node's copy damaged after it was verified: the node joining later fails verification on each attempt, Failed, VerificationFailed", func(t *testing.T) {
		testFaultCopy(ctx, t)
	})
	t.Run("a 193 MiB file reaches every node over UDP with its sha256, through a holder killed mid-fan-out", func(t *testing.T) {
		testFileBlob(ctx, t)
	})
	t.Run("model weights reach every node through AF_XDP sockets on the pod network", func(t *testing.T) {
		testXDPBlob(ctx, t)
	})
	t.Run("a file fanned out in a Tree: every node of the first level fetches from the origin", func(t *testing.T) {
		testTreeBlob(ctx, t)
	})
	t.Run("a model directory, a node joining later, a consumer pod reading a tensor through the Python client", func(t *testing.T) {
		testDirBlob(ctx, t)
	})
	t.Run("a node tainted for one team: a blob that tolerates it gets a copy there, with its own PriorityClass; one that does not is Ready without it", func(t *testing.T) {
		testObjectScheduling(ctx, t)
	})
	t.Run("a new model version sent as a Delta PfsTransfer against the version both nodes hold", func(t *testing.T) {
		testDeltaTransfer(ctx, t)
	})
	t.Run("a new model version fanned out as delta grams to the nodes that hold the old one, whole to the others", func(t *testing.T) {
		testDeltaFanout(ctx, t)
	})
	_, _ = kubectl("-n", testNS, "delete", "pfsblob", fileBlob, dirBlob, xdpBlob, deltaBase, deltaNew, deltaFan, deltaBaseOne, deltaPartial, treeBlob, "--ignore-not-found", "--wait=true", "--timeout=120s")
}

// applyModelsVolume makes the PVC the blobs load from: a local
// PersistentVolume over /pfs-data on the last node, so the origin holder
// must run there (the volume's node affinity decides, as for any RWO
// volume) and every other node is filled through the chain.
func applyModelsVolume(t *testing.T) {
	t.Helper()
	originNode := env.nodes[len(env.nodes)-1]
	manifest := fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata:
  name: %[1]s
spec:
  capacity: {storage: 1Gi}
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
metadata:
  name: %[3]s
  namespace: %[2]s
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  volumeName: %[1]s
  resources: {requests: {storage: 1Gi}}
`, modelsPV, testNS, modelsPVC, originNode)
	if out, err := kubectlIn(manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply PV/PVC: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = kubectl("delete", "pv", modelsPV, "--ignore-not-found", "--wait=false") })
}

func applyBlob(t *testing.T, name, path, extra string) {
	t.Helper()
	manifest := fmt.Sprintf(`apiVersion: pfs.packetfs.io/v1alpha1
kind: PfsBlob
metadata:
  name: %s
  namespace: %s
spec:
  pageSize: 2Mi
  source:
    persistentVolumeClaim: {claimName: %s, path: %q}
%s`, name, testNS, modelsPVC, path, extra)
	if out, err := kubectlIn(manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply pfsblob %s: %v\n%s", name, err, out)
	}
}

// waitBlob polls the blob's status until done says so; it fails the test
// with the blob's description on a timeout.
func waitBlob(ctx context.Context, t *testing.T, name string, timeout time.Duration, done func(*blobStatus) (bool, error)) *blobStatus {
	t.Helper()
	var st *blobStatus
	err := poll(ctx, timeout, func() (bool, error) {
		var err error
		if st, err = getBlobStatus(name); err != nil {
			return false, err
		}
		return done(st)
	})
	if err != nil {
		pods, _ := kubectl("-n", testNS, "get", "pods", "-o", "wide")
		t.Fatalf("pfsblob %s: %v; status %+v\n%s\n%s", name, err, st, describe("pfsblob", name), pods)
	}
	return st
}

// blobReady: Ready, or an error when the blob failed for good (a reason the
// operator never retries), so a broken run ends at once.
func blobReady(st *blobStatus) (bool, error) {
	s, reason, msg := st.ready()
	switch reason {
	case "SourceFailed", "SourceInvalid", "SourceNotAllowed", "SourceTooLarge", "DigestMismatch":
		return false, fmt.Errorf("blob failed: %s: %s", reason, msg)
	}
	return s == "True", nil
}

// checkEveryNode asserts the blob is Ready on every node of the cluster with
// the file's digest, and that exactly one node read the source.
func checkEveryNode(t *testing.T, st *blobStatus, want string) {
	t.Helper()
	if st.SHA256 != want {
		t.Errorf("status.sha256 %q, want %q (sha256sum of the source)", st.SHA256, want)
	}
	if n := len(env.nodes); st.ReadyNodes != n || len(st.Nodes) != n || st.Ready != fmt.Sprintf("%d/%d", n, n) {
		t.Fatalf("ready %q readyNodes %d, %d node entries; want every one of %d nodes: %+v", st.Ready, st.ReadyNodes, len(st.Nodes), n, st.Nodes)
	}
	origins := 0
	for _, n := range st.Nodes {
		if n.State != "Ready" || n.SHA256 != want {
			t.Errorf("node %s: state %s sha256 %q; want Ready with %q", n.Node, n.State, n.SHA256, want)
		}
		if n.Role == "Origin" {
			origins++
			continue
		}
		if n.From == "" || n.From == n.Node {
			t.Errorf("relay %s: from %q, want the peer it received from", n.Node, n.From)
		}
	}
	if origins != 1 {
		t.Errorf("%d nodes read the source, want exactly one origin: %+v", origins, st.Nodes)
	}
	checkVerification(t, st)
	if st.DistributionSeconds == "" || st.DistributionMBps == "" {
		t.Errorf("distributionSeconds %q distributionMBps %q: want both measured", st.DistributionSeconds, st.DistributionMBps)
	}
}

// checkVerification asserts what each node says it verified: the origin
// its source, with the root of the chunk list it computed; a relay (TCP,
// UDP or AF_XDP, whole grams or delta grams) every chunk against that list
// (the same root).
func checkVerification(t *testing.T, st *blobStatus) {
	t.Helper()
	root := ""
	for _, n := range st.Nodes {
		if n.Role == "Origin" {
			if v := n.Verification; v == nil || v.By != "Source" || len(v.Root) != 64 || v.Chunks < 1 {
				t.Errorf("origin %s: verification %+v, want Source with the root of its chunk list", n.Node, v)
			} else {
				root = v.Root
			}
		}
	}
	for _, n := range st.Nodes {
		if n.Role == "Origin" {
			continue
		}
		v := n.Verification
		switch {
		case v == nil || v.By != "Chunks":
			t.Errorf("relay %s over %s: verification %+v, want Chunks", n.Node, n.Transport, v)
		case v.Root != root || v.Chunks < 1:
			t.Errorf("relay %s: verified %d chunks against root %s, the origin's is %s", n.Node, v.Chunks, v.Root, root)
		default:
			t.Logf("relay %s over %s verified by %s (%d chunks, %d failed)", n.Node, n.Transport, v.By, v.Chunks, v.FailedChunks)
		}
	}
}

func testFileBlob(ctx context.Context, t *testing.T) {
	want := sha256File(t, filepath.Join(env.dataDir, "sudachi", "system.dic"))
	size := fileSize(t, filepath.Join(env.dataDir, "sudachi", "system.dic"))
	progress := watchProgress(fileBlob, size)
	applyBlob(t, fileBlob, "sudachi/system.dic", fmt.Sprintf("  replication: {transport: UDP, topology: Chain, bandwidthLimit: %s}\n", fanoutRate))
	// The chain is origin (last node), then the others by name: the middle
	// one is a relay that both receives and forwards. Delete its holder
	// while it is receiving; its downstream must go on from the origin and
	// the operator must fill the node again.
	middle := waitMiddleRelay(ctx, t)
	// The fault must land mid-stream for the downstream too: wait until it
	// receives from the middle (its first upstream, which it waits for),
	// so that deleting the middle breaks a connection it is using and it
	// must reconnect (what PacketFSRelayRerouted alerts on).
	waitDownstreamReceiving(ctx, t)
	// The fault must land mid-fetch: the holder's fetch still running.
	if out, _ := kubectl("-n", testNS, "get", "pod", middle, "-o", "jsonpath={.status.initContainerStatuses[0].state.running.startedAt}"); out == "" {
		t.Fatalf("holder %s finished its fetch before it could be deleted: lower fanoutRate", middle)
	}
	if out, err := kubectl("-n", testNS, "delete", "pod", middle, "--grace-period=0", "--force", "--wait=false"); err != nil {
		t.Fatalf("deleting the middle holder %s: %v\n%s", middle, err, out)
	}
	t.Logf("deleted holder pod %s mid-fan-out", middle)
	st := waitBlob(ctx, t, fileBlob, 6*time.Minute, blobReady)
	progress.check(t)
	checkEveryNode(t, st, want)
	checkPromMatchesStatus(ctx, t, fileBlob, st, blobBytes(t, st))
	for _, n := range st.Nodes {
		if n.Node == env.nodes[0] && (n.Pod == middle || n.Attempts < 2) {
			t.Errorf("middle node %s: holder %s after %d attempt(s); want a new holder after the deleted %s", n.Node, n.Pod, n.Attempts, middle)
		}
	}
	row := getRow(t, "pfsblob", fileBlob)
	if row["READY"] != st.Ready || !strings.HasPrefix(st.SHA256, row["DIGEST"]) || row["DIGEST"] == "" || row["SOURCE"] == "" {
		t.Errorf("kubectl get pfsblob row %v does not show the status (%s, %s)", row, st.Ready, st.SHA256)
	}
	checkTransport(t, st, "UDP", "udp ")
	t.Logf("file blob Ready %s in %s s (%s MB/s), sha256 %s; nodes %+v", st.Ready, st.DistributionSeconds, st.DistributionMBps, st.SHA256, st.Nodes)
}

// checkTransport asserts every relay reports having received over the
// transport the spec asked for, with a datapath that starts with prefix.
func checkTransport(t *testing.T, st *blobStatus, transport, prefix string) {
	t.Helper()
	for _, n := range st.Nodes {
		if n.Role == "Origin" {
			continue
		}
		if n.Transport != transport || !strings.HasPrefix(n.Datapath, prefix) {
			t.Errorf("relay %s: transport %q datapath %q, want %s (%q...)", n.Node, n.Transport, n.Datapath, transport, prefix)
		}
	}
}

// testXDPBlob: the relays attach our XDP program to their pod's eth0 and
// receive the datagrams through AF_XDP sockets (copy mode: veth), with the
// capabilities the API documents and nothing more.
func testXDPBlob(ctx context.Context, t *testing.T) {
	want := sha256File(t, filepath.Join(env.dataDir, "minilm", "model.safetensors"))
	applyBlob(t, xdpBlob, "minilm/model.safetensors", "  replication: {transport: AFXDP, topology: Chain}\n")
	st := waitBlob(ctx, t, xdpBlob, 5*time.Minute, blobReady)
	checkEveryNode(t, st, want)
	checkTransport(t, st, "AFXDP", "afxdp ")
	checkCreatedAtOnce(t, st)
	checkUpstreams(t, st, pfsv1alpha1.TopologyChain)
	t.Logf("AF_XDP blob Ready %s in %s s (%s MB/s); nodes %+v", st.Ready, st.DistributionSeconds, st.DistributionMBps, st.Nodes)
}

// testTreeBlob: with topology Tree, node i of the order (origin first)
// fetches from node (i-1)/2, so on 3 nodes both relays fetch from the
// origin, where a Chain would put one behind the other.
func testTreeBlob(ctx context.Context, t *testing.T) {
	want := sha256File(t, filepath.Join(env.dataDir, "silero6", "silero_vad.onnx"))
	applyBlob(t, treeBlob, "silero6/silero_vad.onnx", "  replication: {transport: TCP, topology: Tree}\n")
	st := waitBlob(ctx, t, treeBlob, 4*time.Minute, blobReady)
	checkEveryNode(t, st, want)
	checkUpstreams(t, st, pfsv1alpha1.TopologyTree)
	if out, err := kubectl("-n", testNS, "delete", "pfsblob", treeBlob, "--wait=true", "--timeout=120s"); err != nil {
		t.Errorf("deleting %s: %v\n%s", treeBlob, err, out)
	}
}

// checkUpstreams asserts each relay received from the node its topology
// names. The order is the origin, then the other nodes by name; in a Chain
// node i fetches from node i-1, in a Tree from node (i-1)/2, unless a relay
// stepped aside (status.nodes[].steppedAside; docs/design/fanout.md "A slow
// relay"): then as wantUpstreams says.
func checkUpstreams(t *testing.T, st *blobStatus, topo pfsv1alpha1.ReplicationTopology) {
	t.Helper()
	order := []string{}
	for _, n := range st.Nodes {
		if n.Role == "Origin" {
			order = append(order, n.Node)
		}
	}
	if len(order) != 1 {
		t.Fatalf("%d origins: %+v", len(order), st.Nodes)
	}
	relays := []string{}
	from := map[string]string{}
	stepped := map[string]bool{}
	for _, n := range st.Nodes {
		if n.Role != "Origin" {
			relays = append(relays, n.Node)
			from[n.Node] = n.From
		}
		if n.SteppedAside != "" {
			stepped[n.Node] = true
			t.Logf("relay %s stepped aside: %s", n.Node, n.SteppedAside)
		}
	}
	sort.Strings(relays)
	order = append(order, relays...)
	want := wantUpstreams(order, topo, stepped)
	for _, n := range order[1:] {
		if !slices.Contains(want[n], from[n]) {
			t.Errorf("%s: node %s of %v received from %q, want one of %v (stepped aside: %v)", topo, n, order, from[n], want[n], stepped)
		}
	}
	t.Logf("%s order %v; upstreams %v", topo, order, from)
}

// wantUpstreams is where each relay of order may have received from, given
// the relays that stepped aside: its downstreams skip such a relay for
// their next upstream, which in a Chain is the nearest of i-1, i-2, i-3 and
// the origin that did not step aside, in a Tree the nearest ancestor that
// did not; a Chain relay that stepped aside finished from one of the last
// two nodes after it (the operator's --fetch-tail), a Tree relay from its
// own upstream.
func wantUpstreams(order []string, topo pfsv1alpha1.ReplicationTopology, stepped map[string]bool) map[string][]string {
	want := map[string][]string{}
	for i := 1; i < len(order); i++ {
		if topo == pfsv1alpha1.TopologyTree {
			up := (i - 1) / 2
			for up > 0 && stepped[order[up]] {
				up = (up - 1) / 2
			}
			want[order[i]] = []string{order[up]}
			continue
		}
		if stepped[order[i]] {
			for j := len(order) - 1; j > i && j >= len(order)-2; j-- {
				want[order[i]] = append(want[order[i]], order[j])
			}
			continue
		}
		up := 0
		for j := i - 1; j >= 1 && j >= i-3; j-- {
			if !stepped[order[j]] {
				up = j
				break
			}
		}
		want[order[i]] = []string{order[up]}
	}
	return want
}

// waitMiddleRelay waits until the middle node of the chain has a holder pod
// whose init container (the fetch) runs, and returns its name. The chain is
// the origin (the last node: the volume's node affinity), then the other
// nodes by name, so with 3 nodes the middle one is the first by name.
func waitMiddleRelay(ctx context.Context, t *testing.T) string {
	t.Helper()
	middle := env.nodes[0]
	var pod string
	err := poll(ctx, 3*time.Minute, func() (bool, error) {
		st, err := getBlobStatus(fileBlob)
		if err != nil {
			return false, err
		}
		if s, reason, msg := st.ready(); s == "False" && strings.HasPrefix(reason, "Source") {
			return false, fmt.Errorf("blob failed before the fan-out: %s: %s", reason, msg)
		}
		for _, n := range st.Nodes {
			if n.Node != middle || n.Pod == "" {
				continue
			}
			out, _ := kubectl("-n", testNS, "get", "pod", n.Pod, "-o", "jsonpath={.status.initContainerStatuses[0].state.running.startedAt}")
			pod = n.Pod
			return out != "", nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no holder receiving the file blob on %s: %v\n%s", middle, err, describe("pfsblob", fileBlob))
	}
	return pod
}

// waitDownstreamReceiving waits until the relay after the middle one has
// its layout from its upstream: connected, and receiving.
func waitDownstreamReceiving(ctx context.Context, t *testing.T) {
	t.Helper()
	downstream := env.nodes[1]
	var pod, logs string
	err := poll(ctx, time.Minute, func() (bool, error) {
		st, err := getBlobStatus(fileBlob)
		if err != nil {
			return false, err
		}
		for _, n := range st.Nodes {
			if n.Node == downstream && n.Pod != "" {
				pod = n.Pod
				logs, _ = kubectl("-n", testNS, "logs", n.Pod, "-c", podspec.ContainerBlobCreate)
				return strings.Contains(logs, "sent a layout of"), nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the downstream relay on %s (%s) never received from its upstream: %v\n%s", downstream, pod, err, logs)
	}
}

// modelsLabel selects the nodes that hold the directory blob: all but one
// at first, so the last one joins later and must be filled from a peer.
const modelsLabel = "pfs-e2e/models"

func labelNode(t *testing.T, node string) {
	t.Helper()
	if out, err := kubectl("label", "node", node, modelsLabel+"=true", "--overwrite"); err != nil {
		t.Fatalf("labelling %s: %v\n%s", node, err, out)
	}
	t.Cleanup(func() { _, _ = kubectl("label", "node", node, modelsLabel+"-") })
}

func testDirBlob(ctx context.Context, t *testing.T) {
	dir := filepath.Join(env.dataDir, "minilm")
	origin, late := env.nodes[len(env.nodes)-1], env.nodes[len(env.nodes)-2]
	for _, n := range env.nodes {
		if n != late {
			labelNode(t, n)
		}
	}
	applyBlob(t, dirBlob, "minilm", fmt.Sprintf("  nodeSelector: {%s: \"true\"}\n", modelsLabel))
	first := len(env.nodes) - 1
	st := waitBlob(ctx, t, dirBlob, 5*time.Minute, blobReady)
	if st.Ready != fmt.Sprintf("%d/%d", first, first) {
		t.Fatalf("before %s joins: ready %q, want %d/%d", late, st.Ready, first, first)
	}
	// A node that matches the selector later is filled from a Ready peer.
	labelNode(t, late)
	st = waitBlob(ctx, t, dirBlob, 5*time.Minute, func(st *blobStatus) (bool, error) {
		ok, err := blobReady(st)
		return ok && st.ReadyNodes == len(env.nodes), err
	})
	// A directory's digest is the sha256 of its manifest's files text; each
	// file's own digest is checked by every node before it is Ready.
	for _, n := range st.Nodes {
		if n.State != "Ready" || n.SHA256 != st.SHA256 || st.SHA256 == "" {
			t.Errorf("node %s: %s sha256 %q, blob %q", n.Node, n.State, n.SHA256, st.SHA256)
		}
		if n.Node == late && (n.From == "" || n.From == late) {
			t.Errorf("late node %s: from %q, want the Ready peer it was filled from", late, n.From)
		}
	}
	name, sum := firstTensor(t, filepath.Join(dir, "model.safetensors"))
	fileSum := sha256File(t, filepath.Join(dir, "model.safetensors"))
	for _, node := range []string{late, origin} {
		got := readTensorOnNode(ctx, t, node, name)
		if !strings.Contains(got, "sha256="+sum) || !strings.Contains(got, "file model.safetensors sha256="+fileSum) {
			t.Errorf("consumer on %s printed:\n%s\nwant tensor %s sha256=%s and the file's digest", node, got, name, sum)
		}
	}
}

// firstTensor reads a safetensors header the way the format defines it (a
// little-endian u64 length, then JSON) and returns the first tensor by name
// and the sha256 of its bytes: what the consumer pod must print.
func firstTensor(t *testing.T, path string) (string, string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(data[:8])
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(data[8:8+n], &hdr); err != nil {
		t.Fatal(err)
	}
	best := ""
	for k := range hdr {
		if k != "__metadata__" && (best == "" || k < best) {
			best = k
		}
	}
	var ti struct {
		Offsets [2]uint64 `json:"data_offsets"`
	}
	if err := json.Unmarshal(hdr[best], &ti); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data[8+n+ti.Offsets[0] : 8+n+ti.Offsets[1]])
	return best, hex.EncodeToString(sum[:])
}

// consumerScript maps the blob through the holder's socket with the Python
// client, finds the model file in the manifest, loads its tensors as numpy
// views into the mapping and prints one, with the digests of its bytes and
// of the whole file.
const consumerScript = `
import hashlib, os, sys
import packetfs
from packetfs import tensors
blob = packetfs.attach(os.environ["PFS_BLOB_SOCKET"], open(os.environ["PFS_BLOB_TOKEN_FILE"]).read().strip())
f = blob.file("model.safetensors")
print("file model.safetensors sha256=" + hashlib.sha256(f).hexdigest())
a = tensors.load(f)[sys.argv[1]]
print("tensor", sys.argv[1], a.dtype, a.shape, "sha256=" + hashlib.sha256(a.tobytes()).hexdigest())
print("first values", a.ravel()[:4])
`

// readTensorOnNode runs the Python consumer image on node and returns what it
// printed.
func readTensorOnNode(ctx context.Context, t *testing.T, node, tensor string) string {
	t.Helper()
	name := "reader-" + fmt.Sprintf("%x", sha256.Sum256([]byte(node)))[:8]
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
  namespace: %[2]s
spec:
  restartPolicy: Never
  nodeName: %[3]s
  securityContext: {runAsUser: 65532, runAsGroup: 65532, runAsNonRoot: true, fsGroup: 65532, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: reader
    image: packetfs.io/python-consumer:v0.1.0
    imagePullPolicy: Never
    command: ["python3", "-c", %[4]q, %[5]q]
    env:
    - {name: PFS_BLOB_SOCKET, value: /run/packetfs/%[2]s/%[6]s.sock}
    - {name: PFS_BLOB_TOKEN_FILE, value: /etc/packetfs/token/token}
    resources: {limits: {memory: 256Mi, cpu: 500m}}
    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
    volumeMounts:
    - {name: sockets, mountPath: /run/packetfs/%[2]s, readOnly: true}
    - {name: token, mountPath: /etc/packetfs/token, readOnly: true}
  volumes:
  - {name: sockets, csi: {driver: csi.packetfs.io, readOnly: true}}
  - {name: token, secret: {secretName: %[6]s-blob-token, defaultMode: 0440}}
`, name, testNS, node, consumerScript, tensor, dirBlob)
	if out, err := kubectlIn(manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("consumer pod: %v\n%s", err, out)
	}
	defer func() { _, _ = kubectl("-n", testNS, "delete", "pod", name, "--wait=false") }()
	var phase string
	err := poll(ctx, 2*time.Minute, func() (bool, error) {
		phase, _ = kubectl("-n", testNS, "get", "pod", name, "-o", "jsonpath={.status.phase}")
		return phase == "Succeeded" || phase == "Failed", nil
	})
	logs, _ := kubectl("-n", testNS, "logs", name)
	if err != nil || phase != "Succeeded" {
		t.Fatalf("consumer on %s: phase %q (%v)\n%s\n%s", node, phase, err, logs, describe("pod", name))
	}
	t.Logf("consumer on %s:\n%s", node, logs)
	return logs
}

// checkCreatedAtOnce asserts the operator created every holder in one go:
// on the pod network relays name their upstreams by DNS, so none waits for
// its upstream's pod IP (in chain order that cost about 2 s per hop here).
// The timestamps have a resolution of one second.
func checkCreatedAtOnce(t *testing.T, st *blobStatus) {
	t.Helper()
	var first, last time.Time
	for _, n := range st.Nodes {
		out, err := kubectl("-n", testNS, "get", "pod", n.Pod, "-o", "jsonpath={.metadata.creationTimestamp}")
		if err != nil {
			t.Fatalf("holder %s: %v: %s", n.Pod, err, out)
		}
		at, err := time.Parse(time.RFC3339, out)
		if err != nil {
			t.Fatalf("holder %s creationTimestamp %q: %v", n.Pod, out, err)
		}
		if first.IsZero() || at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
	}
	if spread := last.Sub(first); spread > time.Second {
		t.Errorf("holders created %s apart, want at once (<= 1 s): the relays waited for their upstreams", spread)
	}
}
