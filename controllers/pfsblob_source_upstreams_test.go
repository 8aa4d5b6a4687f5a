// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
)

// TestRelayUpstreams checks the --fetch-from of every holder decideSource
// creates: DNS names on the pod network, all in one pass; IPs on a
// network, in topology order.
func TestRelayUpstreams(t *testing.T) {
	names := []string{"w0", "w1", "w2", "w3"}
	nodes := make([]corev1.Node, 0, len(names))
	for _, n := range names {
		nodes = append(nodes, *testNode(n, "hugepages-2Mi", "1Gi"))
	}
	b := srcBlob("")
	tree := srcBlob("")
	tree.Spec.Replication = &pfsv1alpha1.BlobReplication{Topology: pfsv1alpha1.TopologyTree}
	gaveUp := srcBlob("")
	gaveUp.Status.Nodes = []pfsv1alpha1.BlobNodeStatus{{Node: "w1", Role: pfsv1alpha1.BlobNodeRelay, State: pfsv1alpha1.BlobNodeFailed, Attempts: maxRelayAttempts}}
	nb := srcBlob("")
	nb.Spec.Replication = &pfsv1alpha1.BlobReplication{Network: "fabric"}
	name := func(node string) string { return podspec.HolderDNSName("w", "ns", node) + ":7470" }
	tests := map[string]struct {
		blob    *pfsv1alpha1.PfsBlob
		holders []corev1.Pod
		want    map[string]string // node -> --fetch-from of its new pod ("" for the origin)
	}{
		"chain, before any pod has an IP": {blob: b, want: map[string]string{"w0": "", "w1": name("w0"),
			"w2": name("w1") + "," + name("w0"), "w3": name("w2") + "," + name("w1") + "," + name("w0")}},
		"tree": {blob: tree, want: map[string]string{"w0": "", "w1": name("w0"), "w2": name("w0"), "w3": name("w1") + "," + name("w0")}},
		"a node that failed for good is no upstream": {blob: gaveUp, want: map[string]string{"w0": "",
			"w2": name("w0"), "w3": name("w2") + "," + name("w0")}},
		"a retry fetches from the others, Ready peers last": {blob: b, holders: []corev1.Pod{
			srcHolder(b, "w0", pfsv1alpha1.BlobNodeOrigin, "10.0.0.1", 0, originMsg(digestA), true),
			srcHolder(b, "w1", pfsv1alpha1.BlobNodeRelay, "10.0.0.2", 1, `{"ok":false,"error":"fetch: connection reset"}`, false),
			srcHolder(b, "w2", pfsv1alpha1.BlobNodeRelay, "", -1, "", false),
			srcHolder(b, "w3", pfsv1alpha1.BlobNodeRelay, "10.0.0.4", 0, relayMsg(digestA, name("w0")), true)},
			want: map[string]string{"w1": name("w0") + "," + name("w3")}},
		"network: IPs there, the origin first": {blob: nb, want: map[string]string{"w0": ""}},
		"network: the next relay once its upstream has an address": {blob: nb, holders: []corev1.Pod{
			onFabric(srcHolder(nb, "w0", pfsv1alpha1.BlobNodeOrigin, "10.0.0.1", -1, "", false), "192.168.9.1", 0)},
			want: map[string]string{"w1": "192.168.9.1:7470"}},
	}
	for n, tc := range tests {
		t.Run(n, func(t *testing.T) {
			obs := sourceObservation{ClaimFound: true, Scan: scanPod(0, scanMsg), Nodes: nodes, Holders: tc.holders, Now: t0}
			_, plan := decideSource(podspec.Config{}, SourcePolicy{}, tc.blob, obs)
			got := map[string]string{}
			for _, p := range plan.Create {
				got[p.Annotations[podspec.AnnotationNode]] = fetchFromArg(p)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("--fetch-from by node (-want +got):\n%s", diff)
			}
		})
	}
}

// fetchFromArg is the value of --fetch-from in p's init container.
func fetchFromArg(p *corev1.Pod) string { return initArg(p, "--fetch-from") }

// initArg is the value of flag in p's init container, "" without it.
func initArg(p *corev1.Pod, flag string) string {
	args := p.Spec.InitContainers[0].Args
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// TestRelayTail checks the --fetch-tail of every holder decideSource
// creates (docs/design/fanout.md "A slow relay"): in a TCP chain the last
// holders after it, last first, by DNS name before they exist; none for
// the last relay, in a tree, over UDP, or before an IP on a network.
func TestRelayTail(t *testing.T) {
	names := []string{"w0", "w1", "w2", "w3"}
	nodes := make([]corev1.Node, 0, len(names))
	for _, n := range names {
		nodes = append(nodes, *testNode(n, "hugepages-2Mi", "1Gi"))
	}
	name := func(node string) string { return podspec.HolderDNSName("w", "ns", node) + ":7470" }
	with := func(r pfsv1alpha1.BlobReplication) *pfsv1alpha1.PfsBlob {
		b := srcBlob("")
		b.Spec.Replication = &r
		return b
	}
	tests := map[string]struct {
		blob *pfsv1alpha1.PfsBlob
		want map[string]string
	}{
		"chain over tcp":           {srcBlob(""), map[string]string{"w0": "", "w1": name("w3") + "," + name("w2"), "w2": name("w3"), "w3": ""}},
		"tree":                     {with(pfsv1alpha1.BlobReplication{Topology: pfsv1alpha1.TopologyTree}), map[string]string{"w0": "", "w1": "", "w2": "", "w3": ""}},
		"udp":                      {with(pfsv1alpha1.BlobReplication{Transport: pfsv1alpha1.TransportUDP}), map[string]string{"w0": "", "w1": "", "w2": "", "w3": ""}},
		"a network, before any IP": {with(pfsv1alpha1.BlobReplication{Network: "fabric"}), map[string]string{"w0": ""}},
	}
	for n, tc := range tests {
		t.Run(n, func(t *testing.T) {
			obs := sourceObservation{ClaimFound: true, Scan: scanPod(0, scanMsg), Nodes: nodes, Now: t0}
			_, plan := decideSource(podspec.Config{}, SourcePolicy{}, tc.blob, obs)
			got := map[string]string{}
			for _, p := range plan.Create {
				got[p.Annotations[podspec.AnnotationNode]] = initArg(p, "--fetch-tail")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("--fetch-tail by node (-want +got):\n%s", diff)
			}
		})
	}
}

// The status maps a relay's fetch.from back to its node whatever form the
// entry had: a DNS name (whichever attempt's pod it reached), a pod IP.
func TestRelayFromByName(t *testing.T) {
	b := srcBlob("")
	nodes := []corev1.Node{*testNode("w0", "hugepages-2Mi", "1Gi"), *testNode("w1", "hugepages-2Mi", "1Gi"), *testNode("w2", "hugepages-2Mi", "1Gi")}
	for _, from := range []string{podspec.HolderDNSName("w", "ns", "w1") + ":7470", "10.0.0.2:7470"} {
		obs := sourceObservation{ClaimFound: true, Scan: scanPod(0, scanMsg), Nodes: nodes, Now: t0, Holders: []corev1.Pod{
			srcHolder(b, "w0", pfsv1alpha1.BlobNodeOrigin, "10.0.0.1", 0, originMsg(digestA), true),
			srcHolder(b, "w1", pfsv1alpha1.BlobNodeRelay, "10.0.0.2", 0, relayMsg(digestA, podspec.HolderDNSName("w", "ns", "w0")+":7470"), true),
			srcHolder(b, "w2", pfsv1alpha1.BlobNodeRelay, "10.0.0.3", 0, relayMsg(digestA, from), true)}}
		st, _ := decideSource(podspec.Config{}, SourcePolicy{}, b, obs)
		var got []string
		for _, n := range st.Nodes {
			got = append(got, n.From)
		}
		if want := []string{"", "w0", "w1"}; strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("from %s: nodes' from %q, want %q", from, got, want)
		}
	}
}
