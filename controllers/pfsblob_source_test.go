// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/placement"
	"packetfs.io/operator/internal/podspec"
)

var digestA = strings.Repeat("ab", 32)

func srcBlob(size string) *pfsv1alpha1.PfsBlob {
	b := &pfsv1alpha1.PfsBlob{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns", UID: "uid-w", Generation: 1},
		Spec: pfsv1alpha1.PfsBlobSpec{PageSize: pfsv1alpha1.PageSize2Mi, PageFallback: pfsv1alpha1.PageFallbackNever,
			Source: &pfsv1alpha1.BlobSource{PersistentVolumeClaim: &pfsv1alpha1.PVCBlobSource{ClaimName: "data", Path: "m/x"}}}}
	if size != "" {
		b.Spec.Size = resource.MustParse(size)
	}
	return b
}

func scanPod(code int32, msg string) *corev1.Pod {
	p := testPod("w-holder-scan", podspec.ContainerBlobScan, onNode("w0"), isTerminated(code, "", msg))
	return p
}

const scanMsg = `{"ok":true,"cmd":"blob-create","dry_run":true,"source":{"kind":"file","path":"m/x","files":1,"bytes":3000000,"needed":4194304}}`

func originMsg(sha string) string {
	return fmt.Sprintf(`{"ok":true,"blob":{"size":4194304,"page":"2M","fingerprint":"0x00000000000000aa"},"source":{"kind":"file","bytes":3000000,"sha256":%q,"seconds":0.5,"t0_unix":1767225600,"t1_unix":1767225600.5},"manifest":{"sha256":%q,"bytes":3000000,"offset":3000000,"length":100}}`, sha, sha)
}

func relayMsg(sha, from string) string {
	return fmt.Sprintf(`{"ok":true,"blob":{"size":4194304,"page":"2M","fingerprint":"0x00000000000000aa"},"fetch":{"from":%q,"bytes":4194304,"seconds":0.25,"verified":true,"t0_unix":1767225600.1,"t1_unix":1767225601},"manifest":{"sha256":%q,"bytes":3000000,"offset":3000000,"length":100}}`, from, sha)
}

var (
	rootA = strings.Repeat("1f", 32)
	rootB = strings.Repeat("2e", 32)
)

// withChunks adds a chunk list of @list ("computed" by an origin,
// "received" by a relay, which then verified by it) with @root to a
// result; a relay's counts one failed chunk fetched again.
func withChunks(msg, list, root string) string {
	chunks := fmt.Sprintf(`"chunks":{"algo":"blake3","impl":"avx512","size":4194304,"count":1,"root":%q,"list":%q,"threads":1,"hashed":1,"verified":%d,"failed":%d,"rounds":%d,"refetched_bytes":%d,"hash_busy_s":0.001,"wait_s":0,"kept":true},`,
		root, list, map[bool]int{true: 0, false: 1}[list == "computed"], map[bool]int{true: 0, false: 1}[list == "computed"],
		map[bool]int{true: 0, false: 1}[list == "computed"], map[bool]int{true: 0, false: 4194304}[list == "computed"])
	if list == "received" {
		msg = strings.Replace(msg, `"verified":true`, `"verified":true,"verified_by":"chunks"`, 1)
	}
	return strings.Replace(msg, `"manifest":`, chunks+`"manifest":`, 1)
}

// srcHolder is a holder pod built by the real builder, then given an IP
// and an init-container result (code < 0: still running).
func srcHolder(b *pfsv1alpha1.PfsBlob, node string, role pfsv1alpha1.BlobNodeRole, ip string, code int32, msg string, ready bool) corev1.Pod {
	p := podspec.BlobSourceHolderPod(podspec.Config{}, b, podspec.SourceHolder{Node: node, Role: role, Size: 4194304,
		Page: pfsv1alpha1.PageSize2Mi, Upstreams: []string{"x:1"}, Attempt: 1})
	p.Spec.NodeName = node
	p.Status.PodIP = ip
	if code >= 0 {
		holder := holder(node, 0, code, msg, ready)
		p.Status.Phase, p.Status.Conditions = holder.Status.Phase, holder.Status.Conditions
		p.Status.InitContainerStatuses = holder.Status.InitContainerStatuses
		if code != 0 {
			p.Status.Phase = corev1.PodFailed
		}
	}
	return *p
}

// onFabric gives a holder pod an address on the network "fabric" (none
// when ip is empty) and an init container (running, unless it has one)
// started `started` before t0.
func onFabric(p corev1.Pod, ip string, started time.Duration) corev1.Pod {
	if ip != "" {
		p.Annotations[placement.NetworkStatusAnnotation] = fmt.Sprintf(`[{"name":"cbr0","ips":[%q],"default":true},{"name":"ns/fabric","interface":"net1","ips":[%q]}]`, p.Status.PodIP, ip)
	}
	if len(p.Status.InitContainerStatuses) == 0 {
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: podspec.ContainerBlobCreate,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	}
	for i := range p.Status.InitContainerStatuses {
		st := metav1.NewTime(t0.Add(-started))
		if r := p.Status.InitContainerStatuses[i].State.Running; r != nil {
			r.StartedAt = st
		}
		if r := p.Status.InitContainerStatuses[i].State.Terminated; r != nil {
			r.StartedAt = st
		}
	}
	return p
}

func TestDecideSource(t *testing.T) {
	nodes := []corev1.Node{*testNode("w0", "hugepages-2Mi", "1Gi"), *testNode("w1", "hugepages-2Mi", "1Gi"),
		*testNode("w2", "hugepages-2Mi", "1Gi"), *testNode("w3", "hugepages-2Mi", "2Mi")}
	b := srcBlob("")
	nb := srcBlob("")
	nb.Spec.Replication = &pfsv1alpha1.BlobReplication{Network: "fabric"}
	udp := srcBlob("")
	udp.Spec.Replication = &pfsv1alpha1.BlobReplication{Transport: pfsv1alpha1.TransportUDP}
	tests := map[string]struct {
		blob       *pfsv1alpha1.PfsBlob
		obs        sourceObservation
		wantReady  string // Ready reason
		wantMsg    string // substring of the Ready message
		wantCreate []string
		wantDelete []string
		wantNodes  map[string]string // node -> state/reason
		wantEvents []string
		// wantService: the plan creates the holders' Service.
		wantService bool
		check       func(t *testing.T, st pfsv1alpha1.PfsBlobStatus)
	}{
		"a store's Secret missing": {blob: s3Blob(), obs: sourceObservation{RemoteMissing: "Secret s3-creds not found in namespace ns: create it"},
			wantReady: pfsv1alpha1.ReasonSourceNotFound, wantMsg: "Secret s3-creds not found in namespace ns: create it",
			wantEvents: []string{pfsv1alpha1.ReasonSourceNotFound}},
		"a store's scan created, no claim needed": {blob: s3Blob(), obs: sourceObservation{},
			wantReady: pfsv1alpha1.ReasonScanningSource, wantCreate: []string{"w-holder-scan"}, wantEvents: []string{pfsv1alpha1.ReasonScanningSource},
			check: func(t *testing.T, st pfsv1alpha1.PfsBlobStatus) {
				if st.Source != "s3://models/llama/" {
					t.Errorf("status.source %q, want s3://models/llama/", st.Source)
				}
			}},
		"claim missing": {blob: b, obs: sourceObservation{},
			wantReady: pfsv1alpha1.ReasonSourceNotFound, wantMsg: "PersistentVolumeClaim data not found in namespace ns: create it or fix spec.source.persistentVolumeClaim.claimName",
			wantEvents: []string{pfsv1alpha1.ReasonSourceNotFound}},
		"scan created": {blob: b, obs: sourceObservation{ClaimFound: true},
			wantReady: pfsv1alpha1.ReasonScanningSource, wantCreate: []string{"w-holder-scan"}, wantEvents: []string{pfsv1alpha1.ReasonScanningSource}},
		"scan refused the source": {blob: b, obs: sourceObservation{ClaimFound: true,
			Scan: scanPod(1, `{"ok":false,"cmd":"blob-create","error":"'m/x' is a socket: only regular files and directories are read"}`)},
			wantReady: pfsv1alpha1.ReasonSourceInvalid, wantMsg: "'m/x' is a socket", wantEvents: []string{pfsv1alpha1.ReasonSourceInvalid}},
		"source too large": {blob: srcBlob("2Mi"), obs: sourceObservation{ClaimFound: true, Scan: scanPod(0, scanMsg)},
			wantReady: pfsv1alpha1.ReasonSourceTooLarge, wantMsg: "the source needs 4194304 bytes (4Mi, its 1 files and manifest) but spec.size is 2097152 (2Mi)",
			wantEvents: []string{pfsv1alpha1.ReasonSourceTooLarge}},
		// 700 GB of model files: past the old 64Gi cap, held where the
		// nodes have the memory, refused where they do not.
		"a 700G source on nodes that hold it": {blob: b, obs: sourceObservation{ClaimFound: true,
			Scan:  scanPod(0, `{"ok":true,"cmd":"blob-create","dry_run":true,"source":{"kind":"dir","path":"m","files":3,"bytes":700000000000,"needed":700002467840}}`),
			Nodes: []corev1.Node{*testNode("w0", "hugepages-2Mi", "1Ti"), *testNode("w1", "hugepages-2Mi", "1Ti"), *testNode("w2", "hugepages-2Mi", "600Gi")}},
			wantReady: pfsv1alpha1.ReasonHugePagesUnavailable, wantCreate: []string{podspec.SourceHolderPodName("w", "w0", 1), podspec.SourceHolderPodName("w", "w1", 1)},
			wantNodes:   map[string]string{"w0": "Pending/", "w1": "Pending/", "w2": "Failed/HugePagesUnavailable"},
			wantMsg:     "node w2 has 600Gi of hugepages-2Mi free",
			wantEvents:  []string{pfsv1alpha1.ReasonHugePagesUnavailable, pfsv1alpha1.ReasonNodeFailed},
			wantService: true,
			check: func(t *testing.T, st pfsv1alpha1.PfsBlobStatus) {
				if st.Size == nil || st.Size.Value() != 700002467840 {
					t.Errorf("status.size = %v, want the source's 700002467840 bytes", st.Size)
				}
			}},
		"a source past the largest blob": {blob: b, obs: sourceObservation{ClaimFound: true,
			Scan: scanPod(0, `{"ok":true,"cmd":"blob-create","dry_run":true,"source":{"kind":"dir","path":"m","files":3,"bytes":71000000000000,"needed":71000000004096}}`)},
			wantReady: pfsv1alpha1.ReasonSourceTooLarge, wantMsg: "the source needs 71000000004096 bytes (69335937504Ki), more than the largest blob (64Ti): split the data over several blobs",
			wantEvents: []string{pfsv1alpha1.ReasonSourceTooLarge}},
		"every holder at once, by DNS name": {blob: b, obs: sourceObservation{ClaimFound: true, Scan: scanPod(0, scanMsg), Nodes: nodes},
			wantReady: pfsv1alpha1.ReasonHugePagesUnavailable, wantCreate: []string{podspec.SourceHolderPodName("w", "w0", 1),
				podspec.SourceHolderPodName("w", "w1", 1), podspec.SourceHolderPodName("w", "w2", 1)},
			wantNodes: map[string]string{"w0": "Pending/", "w1": "Pending/", "w2": "Pending/",
				"w3": "Failed/HugePagesUnavailable"},
			wantMsg:     "node w3 has 2Mi of hugepages-2Mi free, blob needs 4Mi",
			wantEvents:  []string{pfsv1alpha1.ReasonHugePagesUnavailable, pfsv1alpha1.ReasonNodeFailed},
			wantService: true},
		"the relays of an origin without an IP": {blob: b, obs: sourceObservation{ClaimFound: true, Scan: scanPod(0, scanMsg), Nodes: nodes[:3],
			Holders: []corev1.Pod{srcHolder(b, "w0", pfsv1alpha1.BlobNodeOrigin, "", -1, "", false)}},
			wantReady: pfsv1alpha1.ReasonMaterializing, wantCreate: []string{podspec.SourceHolderPodName("w", "w1", 1),
				podspec.SourceHolderPodName("w", "w2", 1)},
			wantNodes:   map[string]string{"w0": "Pending/", "w1": "Pending/", "w2": "Pending/"},
			wantEvents:  []string{pfsv1alpha1.ReasonMaterializing},
			wantService: true},
		"network: origin first, relays wait for an address": {blob: nb, obs: sourceObservation{ClaimFound: true, Scan: scanPod(0, scanMsg), Nodes: nodes[:3]},
			wantReady: pfsv1alpha1.ReasonMaterializing, wantCreate: []string{podspec.SourceHolderPodName("w", "w0", 1)},
			wantNodes:  map[string]string{"w0": "Pending/", "w1": "Pending/", "w2": "Pending/"},
			wantEvents: []string{pfsv1alpha1.ReasonMaterializing},
			check: func(t *testing.T, st pfsv1alpha1.PfsBlobStatus) {
				if m := st.Nodes[1].Message; m != "waiting for the holder on w0 (upstream) to get an address" {
					t.Errorf("w1 message %q", m)
				}
			}},
		"all verified": {blob: b, obs: sourceObservation{ClaimFound: true, Scan: scanPod(0, scanMsg), Nodes: nodes[:2],
			Holders: []corev1.Pod{srcHolder(b, "w0", pfsv1alpha1.BlobNodeOrigin, "10.0.0.1", 0, originMsg(digestA), true),
				srcHolder(b, "w1", pfsv1alpha1.BlobNodeRelay, "10.0.0.2", 0, relayMsg(digestA, "10.0.0.1:7470"), true)}},
			wantReady: pfsv1alpha1.ReasonMaterialized, wantMsg: "2 of 2 nodes hold the blob, sha256 abababababab",
			wantNodes:  map[string]string{"w0": "Ready/", "w1": "Ready/"},
			wantEvents: []string{pfsv1alpha1.ReasonNodeReady, pfsv1alpha1.ReasonNodeReady, pfsv1alpha1.ReasonMaterialized},
			check: func(t *testing.T, st pfsv1alpha1.PfsBlobStatus) {
				want := []string{st.Ready, st.SHA256, st.Digest, st.Size.String(), st.Source, st.DistributionSeconds, st.DistributionMBps,
					st.Nodes[1].From, st.Nodes[1].Seconds, st.Nodes[1].MBps, string(st.Nodes[0].Role)}
				if diff := cmp.Diff([]string{"2/2", digestA, "abababababab", "4Mi", "pvc:data/m/x", "1.000", "4.2", "w0", "0.250", "16.8", "Origin"}, want); diff != "" {
					t.Errorf("status (-want +got):\n%s", diff)
				}
			}},
		"UDP: all verified, each relay's transport and repair": {blob: udp, obs: sourceObservation{ClaimFound: true, Scan: scanPod(0, scanMsg), Nodes: nodes[:3],
			Holders: []corev1.Pod{srcHolder(udp, "w0", pfsv1alpha1.BlobNodeOrigin, "10.0.0.1", 0, originMsg(digestA), true),
				srcHolder(udp, "w1", pfsv1alpha1.BlobNodeRelay, "10.0.0.2", 0, strings.Replace(relayMsg(digestA, "10.0.0.1:7470"), `"verified":true`,
					`"verified":true,"transport":"udp","path":"udp 1472B datagrams","dgrams":{"received":2900,"naks":2,"dropped":0}`, 1), true),
				srcHolder(udp, "w2", pfsv1alpha1.BlobNodeRelay, "10.0.0.3", 0, relayMsg(digestA, podspec.HolderDNSName("w", "ns", "w1")+":7470"), true)}},
			wantReady: pfsv1alpha1.ReasonMaterialized, wantMsg: "3 of 3 nodes hold the blob",
			wantNodes:  map[string]string{"w0": "Ready/", "w1": "Ready/", "w2": "Ready/"},
			wantEvents: []string{pfsv1alpha1.ReasonNodeReady, pfsv1alpha1.ReasonNodeReady, pfsv1alpha1.ReasonNodeReady, pfsv1alpha1.ReasonMaterialized},
			check: func(t *testing.T, st pfsv1alpha1.PfsBlobStatus) {
				type tr struct {
					Transport pfsv1alpha1.Transport
					Datapath  string
					NAKs      int64
				}
				got := make([]tr, 0, len(st.Nodes))
				for _, n := range st.Nodes {
					got = append(got, tr{n.Transport, n.Datapath, n.NAKs})
				}
				// The origin fetched nothing; w2's pfs did not say, so it had TCP only.
				want := []tr{{}, {pfsv1alpha1.TransportUDP, "udp 1472B datagrams", 2}, {Transport: pfsv1alpha1.TransportTCP}}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("nodes' transport (-want +got):\n%s", diff)
				}
				// fetch.from by pod IP (w1) and by DNS name (w2).
				if from := []string{st.Nodes[1].From, st.Nodes[2].From}; from[0] != "w0" || from[1] != "w1" {
					t.Errorf("from %q, want w0 w1", from)
				}
			}},
		"chunk digests: the relay verified every chunk against the origin's list": {blob: b, obs: sourceObservation{ClaimFound: true, Scan: scanPod(0, scanMsg), Nodes: nodes[:2],
			Holders: []corev1.Pod{srcHolder(b, "w0", pfsv1alpha1.BlobNodeOrigin, "10.0.0.1", 0, withChunks(originMsg(digestA), "computed", rootA), true),
				srcHolder(b, "w1", pfsv1alpha1.BlobNodeRelay, "10.0.0.2", 0, withChunks(relayMsg(digestA, "10.0.0.1:7470"), "received", rootA), true)}},
			wantReady: pfsv1alpha1.ReasonMaterialized, wantMsg: "2 of 2 nodes hold the blob",
			wantNodes:  map[string]string{"w0": "Ready/", "w1": "Ready/"},
			wantEvents: []string{pfsv1alpha1.ReasonNodeReady, pfsv1alpha1.ReasonNodeReady, pfsv1alpha1.ReasonMaterialized},
			check: func(t *testing.T, st pfsv1alpha1.PfsBlobStatus) {
				want := []*pfsv1alpha1.BlobNodeVerification{{By: pfsv1alpha1.VerifiedBySource, Chunks: 1, Root: rootA},
					{By: pfsv1alpha1.VerifiedByChunks, Chunks: 1, FailedChunks: 1, RefetchedBytes: 4194304, Root: rootA}}
				if diff := cmp.Diff(want, []*pfsv1alpha1.BlobNodeVerification{st.Nodes[0].Verification, st.Nodes[1].Verification}); diff != "" {
					t.Errorf("verification (-want +got):\n%s", diff)
				}
			}},
		"chunk digests: a relay that verified against another list than the origin's": {blob: b, obs: sourceObservation{ClaimFound: true, Scan: scanPod(0, scanMsg), Nodes: nodes[:2],
			Holders: []corev1.Pod{srcHolder(b, "w0", pfsv1alpha1.BlobNodeOrigin, "10.0.0.1", 0, withChunks(originMsg(digestA), "computed", rootA), true),
				srcHolder(b, "w1", pfsv1alpha1.BlobNodeRelay, "10.0.0.2", 0, withChunks(relayMsg(digestA, "10.0.0.1:7470"), "received", rootB), true)}},
			wantReady: pfsv1alpha1.ReasonDigestMismatch, wantMsg: "the node verified its chunks against a list of root " + rootB + ", the origin's is \"" + rootA,
			wantNodes:  map[string]string{"w0": "Ready/", "w1": "Failed/DigestMismatch"},
			wantEvents: []string{pfsv1alpha1.ReasonNodeReady, pfsv1alpha1.ReasonDigestMismatch, pfsv1alpha1.ReasonDigestMismatch}},
		"chunk digests: an origin without a list cannot vouch for a relay's": {blob: b, obs: sourceObservation{ClaimFound: true, Scan: scanPod(0, scanMsg), Nodes: nodes[:2],
			Holders: []corev1.Pod{srcHolder(b, "w0", pfsv1alpha1.BlobNodeOrigin, "10.0.0.1", 0, originMsg(digestA), true),
				srcHolder(b, "w1", pfsv1alpha1.BlobNodeRelay, "10.0.0.2", 0, withChunks(relayMsg(digestA, "10.0.0.1:7470"), "received", rootB), true)}},
			wantReady: pfsv1alpha1.ReasonDigestMismatch, wantMsg: "the origin's is \"\"",
			wantNodes:  map[string]string{"w0": "Ready/", "w1": "Failed/DigestMismatch"},
			wantEvents: []string{pfsv1alpha1.ReasonNodeReady, pfsv1alpha1.ReasonDigestMismatch, pfsv1alpha1.ReasonDigestMismatch}},
		"relay with other bytes": {blob: b, obs: sourceObservation{ClaimFound: true, Scan: scanPod(0, scanMsg), Nodes: nodes[:2],
			Holders: []corev1.Pod{srcHolder(b, "w0", pfsv1alpha1.BlobNodeOrigin, "10.0.0.1", 0, originMsg(digestA), true),
				srcHolder(b, "w1", pfsv1alpha1.BlobNodeRelay, "10.0.0.2", 0, relayMsg(strings.Repeat("cd", 32), "10.0.0.1:7470"), true)}},
			wantReady: pfsv1alpha1.ReasonDigestMismatch, wantMsg: "the node holds sha256 cdcd",
			wantNodes:  map[string]string{"w0": "Ready/", "w1": "Failed/DigestMismatch"},
			wantEvents: []string{pfsv1alpha1.ReasonNodeReady, pfsv1alpha1.ReasonDigestMismatch, pfsv1alpha1.ReasonDigestMismatch}},
		"origin failed": {blob: b, obs: sourceObservation{ClaimFound: true, Scan: scanPod(0, scanMsg), Nodes: nodes[:2],
			Holders: []corev1.Pod{srcHolder(b, "w0", pfsv1alpha1.BlobNodeOrigin, "10.0.0.1", 1, `{"ok":false,"error":"m/x changed while it was read"}`, false)}},
			wantReady: pfsv1alpha1.ReasonSourceFailed, wantMsg: "m/x changed while it was read",
			wantNodes:  map[string]string{"w0": "Failed/SourceFailed", "w1": "Failed/SourceFailed"},
			wantEvents: []string{pfsv1alpha1.ReasonSourceFailed, pfsv1alpha1.ReasonNodeFailed}},
		"network: w1 once the origin has an address on it": {blob: nb, obs: sourceObservation{ClaimFound: true, Scan: scanPod(0, scanMsg), Nodes: nodes[:3],
			Holders: []corev1.Pod{onFabric(srcHolder(nb, "w0", pfsv1alpha1.BlobNodeOrigin, "10.0.0.1", -1, "", false), "192.168.9.1", time.Second)}},
			wantReady: pfsv1alpha1.ReasonMaterializing, wantCreate: []string{podspec.SourceHolderPodName("w", "w1", 1)},
			wantNodes:  map[string]string{"w0": "Materializing/", "w1": "Pending/", "w2": "Pending/"},
			wantEvents: []string{pfsv1alpha1.ReasonMaterializing}},
		"network: a pod IP is not an address on it": {blob: nb, obs: sourceObservation{ClaimFound: true, Scan: scanPod(0, scanMsg), Nodes: nodes[:3],
			Holders: []corev1.Pod{onFabric(srcHolder(nb, "w0", pfsv1alpha1.BlobNodeOrigin, "10.0.0.1", -1, "", false), "", time.Second)}},
			wantReady:  pfsv1alpha1.ReasonMaterializing,
			wantNodes:  map[string]string{"w0": "Materializing/", "w1": "Pending/", "w2": "Pending/"},
			wantEvents: []string{pfsv1alpha1.ReasonMaterializing}},
		"network: all verified, from read by the network address": {blob: nb, obs: sourceObservation{ClaimFound: true, Scan: scanPod(0, scanMsg), Nodes: nodes[:2],
			Holders: []corev1.Pod{onFabric(srcHolder(nb, "w0", pfsv1alpha1.BlobNodeOrigin, "10.0.0.1", 0, originMsg(digestA), true), "192.168.9.1", time.Hour),
				onFabric(srcHolder(nb, "w1", pfsv1alpha1.BlobNodeRelay, "10.0.0.2", 0, relayMsg(digestA, "192.168.9.1:7470"), true), "192.168.9.2", time.Hour)}},
			wantReady: pfsv1alpha1.ReasonMaterialized, wantMsg: "2 of 2 nodes hold the blob",
			wantNodes:  map[string]string{"w0": "Ready/", "w1": "Ready/"},
			wantEvents: []string{pfsv1alpha1.ReasonNodeReady, pfsv1alpha1.ReasonNodeReady, pfsv1alpha1.ReasonMaterialized},
			check: func(t *testing.T, st pfsv1alpha1.PfsBlobStatus) {
				if st.Nodes[1].From != "w0" {
					t.Errorf("w1 from %q, want w0", st.Nodes[1].From)
				}
			}},
		"network: an origin without an address on it fails": {blob: nb, obs: sourceObservation{ClaimFound: true, Scan: scanPod(0, scanMsg), Nodes: nodes[:2],
			Holders: []corev1.Pod{onFabric(srcHolder(nb, "w0", pfsv1alpha1.BlobNodeOrigin, "10.0.0.1", 0, originMsg(digestA), true), "", time.Minute)}},
			wantReady:  pfsv1alpha1.ReasonNetworkUnavailable,
			wantMsg:    "the origin node w0 cannot serve the blob on spec.replication.network: holder pod " + podspec.SourceHolderPodName("w", "w0", 1) + " has no address on network fabric: is the NetworkAttachmentDefinition right?",
			wantNodes:  map[string]string{"w0": "Failed/NetworkUnavailable", "w1": "Failed/NetworkUnavailable"},
			wantEvents: []string{pfsv1alpha1.ReasonNetworkUnavailable, pfsv1alpha1.ReasonNodeFailed}},
		"network: a relay without an address on it is retried": {blob: nb, obs: sourceObservation{ClaimFound: true, Scan: scanPod(0, scanMsg), Nodes: nodes[:2],
			Holders: []corev1.Pod{onFabric(srcHolder(nb, "w0", pfsv1alpha1.BlobNodeOrigin, "10.0.0.1", 0, originMsg(digestA), true), "192.168.9.1", time.Hour),
				onFabric(srcHolder(nb, "w1", pfsv1alpha1.BlobNodeRelay, "10.0.0.2", -1, "", false), "", time.Minute)}},
			wantReady: pfsv1alpha1.ReasonMaterializing, wantCreate: []string{podspec.SourceHolderPodName("w", "w1", 2)},
			wantDelete: []string{podspec.SourceHolderPodName("w", "w1", 1)},
			wantNodes:  map[string]string{"w0": "Ready/", "w1": "Pending/"},
			wantEvents: []string{pfsv1alpha1.ReasonNodeReady, pfsv1alpha1.ReasonMaterializing}},
		"a failed relay is retried from the others": {blob: b, obs: sourceObservation{ClaimFound: true, Scan: scanPod(0, scanMsg), Nodes: nodes[:3],
			Holders: []corev1.Pod{srcHolder(b, "w0", pfsv1alpha1.BlobNodeOrigin, "10.0.0.1", 0, originMsg(digestA), true),
				srcHolder(b, "w1", pfsv1alpha1.BlobNodeRelay, "10.0.0.2", 1, `{"ok":false,"error":"fetch: connection reset"}`, false),
				srcHolder(b, "w2", pfsv1alpha1.BlobNodeRelay, "10.0.0.3", -1, "", false)}},
			wantReady: pfsv1alpha1.ReasonMaterializing, wantCreate: []string{podspec.SourceHolderPodName("w", "w1", 2)},
			wantDelete:  []string{podspec.SourceHolderPodName("w", "w1", 1)},
			wantNodes:   map[string]string{"w0": "Ready/", "w1": "Pending/", "w2": "Pending/"},
			wantEvents:  []string{pfsv1alpha1.ReasonNodeReady, pfsv1alpha1.ReasonMaterializing},
			wantService: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.obs.Now = t0
			st, plan := decideSource(podspec.Config{}, SourcePolicy{}, tc.blob, tc.obs)
			if c := condSummary(st.Conditions)[pfsv1alpha1.ConditionReady]; !strings.Contains(c, "/"+tc.wantReady) {
				t.Errorf("Ready = %s (%s), want reason %s", c, condMessage(st.Conditions, pfsv1alpha1.ConditionReady), tc.wantReady)
			}
			if msg := condMessage(st.Conditions, pfsv1alpha1.ConditionReady); !strings.Contains(msg, tc.wantMsg) {
				t.Errorf("Ready message %q, want %q in it", msg, tc.wantMsg)
			}
			var created, deleted []string
			for _, p := range plan.Create {
				created = append(created, p.Name)
			}
			for _, p := range plan.Delete {
				deleted = append(deleted, p.Name)
			}
			if diff := cmp.Diff(tc.wantCreate, created); diff != "" {
				t.Errorf("created (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantDelete, deleted); diff != "" {
				t.Errorf("deleted (-want +got):\n%s", diff)
			}
			if tc.wantNodes != nil {
				got := map[string]string{}
				for _, n := range st.Nodes {
					got[n.Node] = string(n.State) + "/" + n.Reason
				}
				if diff := cmp.Diff(tc.wantNodes, got); diff != "" {
					t.Errorf("nodes (-want +got):\n%s\n%+v", diff, st.Nodes)
				}
			}
			if diff := cmp.Diff(tc.wantEvents, eventReasons(plan.Events)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if (plan.Service != nil) != tc.wantService {
				t.Errorf("plan.Service %v, want one: %v", plan.Service, tc.wantService)
			}
			if tc.check != nil {
				tc.check(t, st)
			}
		})
	}
}
