// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
	"packetfs.io/operator/internal/result"
)

func podNames(pods []*corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// podNodes are the nodes the holder pods are for.
func podNodes(pods []*corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Annotations[podspec.AnnotationNode])
	}
	return out
}

func TestSelectNodes(t *testing.T) {
	b := srcBlob("")
	cordoned := testNode("w2", "hugepages-2Mi", "1Gi")
	cordoned.Spec.Unschedulable = true
	relay := srcHolder(b, "w1", pfsv1alpha1.BlobNodeRelay, "10.0.0.2", -1, "", false)
	retry := relay.DeepCopy()
	retry.Name, retry.Labels[podspec.LabelAttempt] = "w-holder-w1-a2", "2"
	gone := srcHolder(b, "w9", pfsv1alpha1.BlobNodeRelay, "10.0.0.9", -1, "", false)
	gpu := func(name string) corev1.Node {
		n := testNode(name)
		n.Labels = map[string]string{"pool": "gpu"}
		return *n
	}
	onW0 := srcHolder(b, "w0", pfsv1alpha1.BlobNodeRelay, "10.0.0.1", -1, "", false)
	gpuOnly := podspec.OperandPolicy{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"gpu"}}}}}}}}
	tainted := func(name string) corev1.Node {
		n := testNode(name)
		n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "infer", Effect: corev1.TaintEffectNoSchedule}}
		return *n
	}
	tolerant := b.DeepCopy()
	tolerant.Spec.Scheduling = &pfsv1alpha1.PodScheduling{Tolerations: []corev1.Toleration{
		{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "infer", Effect: corev1.TaintEffectNoSchedule}}}
	tests := map[string]struct {
		blob      *pfsv1alpha1.PfsBlob
		nodes     []corev1.Node
		holders   []corev1.Pod
		operands  podspec.OperandPolicy
		wantOrder []string
		wantStale []string
	}{
		"the operand node affinity admits the GPU pool alone; a holder elsewhere is stale": {
			nodes: []corev1.Node{*testNode("w0"), gpu("w1"), gpu("w3")}, operands: gpuOnly, holders: []corev1.Pod{onW0},
			wantOrder: []string{"w1", "w3"}, wantStale: []string{onW0.Name}},
		"the origin first, then by name": {nodes: []corev1.Node{*testNode("w2"), *testNode("w0"), *testNode("w1")},
			wantOrder: []string{"w1", "w0", "w2"}},
		"a cordoned node without a holder takes no part": {nodes: []corev1.Node{*testNode("w1"), *testNode("w0"), *cordoned},
			wantOrder: []string{"w1", "w0"}},
		"a tainted node without a holder takes no part; one with a holder keeps it": {
			nodes:   []corev1.Node{*testNode("w1"), tainted("w0"), tainted("w2")},
			holders: []corev1.Pod{srcHolder(b, "w2", pfsv1alpha1.BlobNodeRelay, "10.0.0.3", -1, "", false)}, wantOrder: []string{"w1", "w2"}},
		"the operand tolerations admit the tainted node": {nodes: []corev1.Node{*testNode("w1"), tainted("w0")},
			operands:  podspec.OperandPolicy{Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}},
			wantOrder: []string{"w1", "w0"}},
		"the blob's own tolerations admit it": {nodes: []corev1.Node{*testNode("w1"), tainted("w0")}, blob: tolerant,
			wantOrder: []string{"w1", "w0"}},
		"an older attempt and a node gone are stale": {nodes: []corev1.Node{*testNode("w0"), *testNode("w1")},
			holders: []corev1.Pod{relay, *retry, gone}, wantOrder: []string{"w1", "w0"}, wantStale: []string{relay.Name, gone.Name}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := b
			if tc.blob != nil {
				in = tc.blob
			}
			sel := selectNodes(fanoutIn{cfg: podspec.Config{Operands: tc.operands}, b: in, origin: "w1",
				obs: sourceObservation{Nodes: tc.nodes, Holders: tc.holders}})
			if diff := cmp.Diff(tc.wantOrder, sel.order); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantStale, podNames(sel.stale), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("stale (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadOrigin(t *testing.T) {
	ok := &result.BlobCreate{Fingerprint: "0xaa", Source: &result.Source{SHA256: digestA}, Manifest: &result.Manifest{SHA256: digestA}}
	tests := map[string]struct {
		hi        holderInfo
		want      originRead
		wantState pfsv1alpha1.BlobNodeState
	}{
		"still loading": {hi: holderInfo{status: pfsv1alpha1.BlobNodeStatus{State: pfsv1alpha1.BlobNodePending}},
			wantState: pfsv1alpha1.BlobNodePending},
		"loaded": {hi: holderInfo{result: ok, status: pfsv1alpha1.BlobNodeStatus{State: pfsv1alpha1.BlobNodeReady}},
			want: originRead{digest: digestA, fingerprint: "0xaa"}, wantState: pfsv1alpha1.BlobNodeReady},
		"no manifest": {hi: holderInfo{result: &result.BlobCreate{Source: ok.Source}},
			want:      originRead{failed: `ResultInvalid: the origin's result has no "source" and "manifest"`, reason: pfsv1alpha1.ReasonSourceFailed},
			wantState: pfsv1alpha1.BlobNodeFailed},
		"no address on the network": {hi: holderInfo{failed: true, status: pfsv1alpha1.BlobNodeStatus{Reason: pfsv1alpha1.ReasonNetworkUnavailable, Message: "no IP"}},
			want: originRead{failed: "no IP", reason: pfsv1alpha1.ReasonNetworkUnavailable}, wantState: pfsv1alpha1.BlobNodeFailed},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			hi := tc.hi
			got := readOrigin(&hi)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(originRead{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if hi.status.State != tc.wantState {
				t.Errorf("origin state %s, want %s", hi.status.State, tc.wantState)
			}
		})
	}
}

// planNodes threads what each node decided into the next: a holder planned
// on the pod network is an upstream at once, a relay on a network waits
// for its upstream's IP, and an origin that cannot be admitted holds back
// every relay.
func TestPlanNodes(t *testing.T) {
	nodes := []corev1.Node{*testNode("w0", "hugepages-2Mi", "1Gi"), *testNode("w1", "hugepages-2Mi", "1Gi"), *testNode("w2", "hugepages-2Mi", "1Gi")}
	small := []corev1.Node{*testNode("w0", "hugepages-2Mi", "2Mi"), *testNode("w1", "hugepages-2Mi", "1Gi")}
	onNet := srcBlob("")
	onNet.Spec.Replication = &pfsv1alpha1.BlobReplication{Network: "fabric"}
	tests := map[string]struct {
		blob  *pfsv1alpha1.PfsBlob
		nodes []corev1.Node
		// wantCreate are the nodes that get a holder pod.
		wantCreate []string
		wantStates map[string]string
		wantSvc    bool
	}{
		"pod network: every holder in one pass": {blob: srcBlob(""), nodes: nodes, wantSvc: true,
			wantCreate: []string{"w0", "w1", "w2"},
			wantStates: map[string]string{"w0": "Pending/", "w1": "Pending/", "w2": "Pending/"}},
		"a network: relays wait for the origin's IP": {blob: onNet, nodes: nodes,
			wantCreate: []string{"w0"},
			wantStates: map[string]string{"w0": "Pending/", "w1": "Pending/", "w2": "Pending/"}},
		"the origin has no room: no relay starts": {blob: srcBlob(""), nodes: small,
			wantStates: map[string]string{"w0": "Failed/HugePagesUnavailable", "w1": "Pending/"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := fanoutIn{b: tc.blob, origin: "w0", size: 4 << 20, obs: sourceObservation{Now: t0, Nodes: tc.nodes}}
			sel := selectNodes(in)
			pn := planNodes(in, sel, readHolders(in, sel))
			if diff := cmp.Diff(tc.wantCreate, podNodes(pn.create), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("create (-want +got):\n%s", diff)
			}
			states := map[string]string{}
			for _, n := range pn.status {
				states[n.Node] = string(n.State) + "/" + n.Reason
			}
			if diff := cmp.Diff(tc.wantStates, states); diff != "" {
				t.Errorf("states (-want +got):\n%s", diff)
			}
			if (pn.service != nil) != tc.wantSvc {
				t.Errorf("service %v, want %v", pn.service != nil, tc.wantSvc)
			}
		})
	}
}
