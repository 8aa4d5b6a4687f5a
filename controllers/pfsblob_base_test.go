// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
	"packetfs.io/operator/internal/result"
)

// baseBlob is the older version "v1": Ready with fingerprint aa on the
// nodes of ready, in state on the others of states.
func baseBlob(ready []string, states map[string]pfsv1alpha1.BlobNodeState) *pfsv1alpha1.PfsBlob {
	b := &pfsv1alpha1.PfsBlob{ObjectMeta: metav1.ObjectMeta{Name: "v1", Namespace: "ns"},
		Status: pfsv1alpha1.PfsBlobStatus{Fingerprint: "00000000000000aa"}}
	for _, n := range ready {
		b.Status.Nodes = append(b.Status.Nodes, pfsv1alpha1.BlobNodeStatus{Node: n, State: pfsv1alpha1.BlobNodeReady, Fingerprint: "00000000000000aa"})
	}
	for n, s := range states {
		b.Status.Nodes = append(b.Status.Nodes, pfsv1alpha1.BlobNodeStatus{Node: n, State: s})
	}
	return b
}

func withBase(b *pfsv1alpha1.PfsBlob) *pfsv1alpha1.PfsBlob {
	b.Spec.Base = &pfsv1alpha1.BlobBase{Name: "v1"}
	return b
}

// deltaHolder is srcHolder of a pod that was given the base.
func deltaHolder(b *pfsv1alpha1.PfsBlob, node string, role pfsv1alpha1.BlobNodeRole, ip string, msg string) corev1.Pod {
	p := srcHolder(b, node, role, ip, 0, msg, true)
	p.Annotations[podspec.AnnotationDeltaBase] = "v1"
	return p
}

func TestBaseOnNode(t *testing.T) {
	base := baseBlob([]string{"w0"}, map[string]pfsv1alpha1.BlobNodeState{"w1": pfsv1alpha1.BlobNodeMaterializing})
	base.Status.Nodes = append(base.Status.Nodes, pfsv1alpha1.BlobNodeStatus{Node: "w3", State: pfsv1alpha1.BlobNodeReady, Fingerprint: "00000000000000bb"})
	for node, want := range map[string]string{"w0": "", "w1": "the base v1 is Materializing on w1", "w2": "the base v1 has no copy on w2",
		"w3": "the base v1 on w3 has fingerprint 00000000000000bb, not the blob's 00000000000000aa"} {
		ok, why := baseOnNode(base, "v1", node)
		if ok != (want == "") || why != want {
			t.Errorf("%s: %v %q, want %q", node, ok, why, want)
		}
	}
	if ok, why := baseOnNode(nil, "v1", "w0"); ok || why != "PfsBlob v1 (spec.base) not found" {
		t.Errorf("missing base: %v %q", ok, why)
	}
}

// Holders get the base only on nodes where it is Ready.
func TestDecideSourceGivesTheBase(t *testing.T) {
	nodes := []corev1.Node{*testNode("w0", "hugepages-2Mi", "1Gi"), *testNode("w1", "hugepages-2Mi", "1Gi"), *testNode("w2", "hugepages-2Mi", "1Gi")}
	b := withBase(srcBlob(""))
	base := baseBlob([]string{"w0", "w1"}, map[string]pfsv1alpha1.BlobNodeState{"w2": pfsv1alpha1.BlobNodeMaterializing})
	_, plan := decideSource(podspec.Config{}, SourcePolicy{}, b, sourceObservation{ClaimFound: true, Scan: scanPod(0, scanMsg), Nodes: nodes, Base: base})
	got := map[string]string{}
	for _, p := range plan.Create {
		args := strings.Join(p.Spec.InitContainers[0].Args, " ")
		got[p.Annotations[podspec.AnnotationNode]] = p.Annotations[podspec.AnnotationDeltaBase]
		if has := strings.Contains(args, "--delta-base-socket /run/packetfs/ns/v1.sock"); has != (p.Annotations[podspec.AnnotationDeltaBase] != "") {
			t.Errorf("%s: args %q", p.Name, args)
		}
	}
	if diff := cmp.Diff(map[string]string{"w0": "v1", "w1": "v1", "w2": ""}, got); diff != "" {
		t.Errorf("base per node (-want +got):\n%s", diff)
	}
}

func deltaMsg(fetchDelta string) string {
	return strings.Replace(relayMsg(digestA, "10.0.0.1:7470"), `"verified":true`, `"verified":true,"delta":`+fetchDelta, 1)
}

// Status: each relay's encoding and wire bytes, the sum, who fetched whole.
func TestDecideSourceDeltaStatus(t *testing.T) {
	nodes := []corev1.Node{*testNode("w0", "hugepages-2Mi", "1Gi"), *testNode("w1", "hugepages-2Mi", "1Gi"), *testNode("w2", "hugepages-2Mi", "1Gi")}
	b := withBase(srcBlob(""))
	obs := sourceObservation{ClaimFound: true, Scan: scanPod(0, scanMsg), Nodes: nodes, Base: baseBlob([]string{"w0", "w1"}, nil),
		Holders: []corev1.Pod{deltaHolder(b, "w0", pfsv1alpha1.BlobNodeOrigin, "10.0.0.1", strings.Replace(originMsg(digestA), `"manifest"`,
			`"repl":{"listen":"0.0.0.0:7470","clients":1,"bytes_served":262144,"refused":0,"delta":{"base":true,"error":null,"clients":1,"index_s":0.01,"encode_s":0.2}},"manifest"`, 1)),
			deltaHolder(b, "w1", pfsv1alpha1.BlobNodeRelay, "10.0.0.2",
				deltaMsg(`{"base":true,"error":null,"bytes":4194304,"whole_bytes":0,"wire_bytes":262144,"refused":0,"apply_s":0.04}`)),
			srcHolder(b, "w2", pfsv1alpha1.BlobNodeRelay, "10.0.0.3", 0, relayMsg(digestA, "10.0.0.1:7470"), true)}}
	st, _ := decideSource(podspec.Config{}, SourcePolicy{}, b, obs)
	if st.Nodes[0].Delta != nil {
		t.Errorf("origin delta %+v", st.Nodes[0].Delta)
	}
	want1 := &pfsv1alpha1.BlobNodeDelta{Encoding: pfsv1alpha1.DeltaEncodingDelta, WireBytes: 262144, DeltaBytes: 4194304, Ratio: "16.00", ApplySeconds: "0.040"}
	if diff := cmp.Diff(want1, st.Nodes[1].Delta); diff != "" {
		t.Errorf("w1 (-want +got):\n%s", diff)
	}
	if d := st.Nodes[2].Delta; d == nil || d.Encoding != pfsv1alpha1.DeltaEncodingFullCopy || d.Reason != pfsv1alpha1.ReasonBaseNotReady ||
		d.WireBytes != 4194304 || !strings.Contains(d.Message, "was not Ready on this node") {
		t.Errorf("w2 %+v", d)
	}
	wantSum := &pfsv1alpha1.BlobDeltaStatus{Base: "v1", DeltaNodes: 1, FullCopyNodes: 1, WireBytes: 262144 + 4194304,
		EffectiveBytes: 2 * 4194304, Ratio: "1.88", OriginIndexSeconds: "0.010", OriginEncodeSeconds: "0.200",
		Message: "fetched whole: w2: BaseNotReady"}
	if diff := cmp.Diff(wantSum, st.Delta); diff != "" {
		t.Errorf("status.delta (-want +got):\n%s", diff)
	}
	if hasReason(st.Conditions, pfsv1alpha1.ReasonMaterialized) == false {
		t.Errorf("conditions %v", condSummary(st.Conditions))
	}
}

func TestRelayDelta(t *testing.T) {
	b := withBase(srcBlob(""))
	p := deltaHolder(b, "w1", pfsv1alpha1.BlobNodeRelay, "10.0.0.2", "")
	res := func(d *result.FetchDelta) *result.BlobCreate {
		return &result.BlobCreate{Fetch: &result.Fetch{Bytes: 4194304, Delta: d}}
	}
	tests := map[string]struct {
		r          *result.BlobCreate
		wantEnc    pfsv1alpha1.DeltaEncoding
		wantReason string
		wantMsg    string
	}{
		"no base mapped": {res(&result.FetchDelta{Error: "--delta-base-socket /run/x.sock: connection refused"}),
			pfsv1alpha1.DeltaEncodingFullCopy, pfsv1alpha1.ReasonBaseUnavailable, "connection refused"},
		"an old data plane": {res(nil), pfsv1alpha1.DeltaEncodingFullCopy, pfsv1alpha1.ReasonBaseUnavailable, "reported none"},
		"upstream without a base": {res(&result.FetchDelta{Base: true, WholeBytes: 4194304, WireBytes: 4194304, Refused: 1}),
			pfsv1alpha1.DeltaEncodingFullCopy, pfsv1alpha1.ReasonUpstreamWithoutBase, "the upstream holds no base"},
		"part whole after a resume": {res(&result.FetchDelta{Base: true, Bytes: 2097152, WholeBytes: 2097152, WireBytes: 2200000}),
			pfsv1alpha1.DeltaEncodingDelta, "", "2097152 bytes came whole"},
	}
	for name, tc := range tests {
		d := relayDelta(b, &p, tc.r)
		if d == nil || d.Encoding != tc.wantEnc || d.Reason != tc.wantReason || !strings.Contains(d.Message, tc.wantMsg) {
			t.Errorf("%s: %+v", name, d)
		}
	}
	if d := relayDelta(srcBlob(""), &p, res(nil)); d != nil {
		t.Errorf("without spec.base: %+v", d)
	}
}
