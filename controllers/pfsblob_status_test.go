// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/placement"
	"packetfs.io/operator/internal/podspec"
)

func blobCreateMsg(fp, page, fallback string) string {
	fb := "null"
	if fallback != "" {
		fb = fmt.Sprintf("%q", fallback)
	}
	return fmt.Sprintf(`{"ok":true,"cmd":"blob-create","blob":{"size":67108864,"page":%q,"fingerprint":"0x%s","fallback_reason":%s,"map_s":0.001,"prefault_s":0.1,"fill_s":0.4},"error":null}`, page, fp, fb)
}

// holder builds a holder pod on node whose init container ended with code
// and msg (code < 0: still running) and whose server is ready or not.
func holder(node string, age time.Duration, code int32, msg string, ready bool) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "h-" + node + fmt.Sprint(int(age.Seconds())), CreationTimestamp: metav1.NewTime(t0.Add(-age))},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: podspec.ContainerBlobServe}}},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}
	ic := corev1.ContainerStatus{Name: podspec.ContainerBlobCreate}
	switch {
	case code < 0:
		ic.State.Running = &corev1.ContainerStateRunning{}
	default:
		ic.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: code, Message: msg}
		if code == 0 {
			isRunning(ready)(&p)
		}
	}
	p.Status.InitContainerStatuses = []corev1.ContainerStatus{ic}
	return p
}

func TestComputeBlobStatus(t *testing.T) {
	rolled := func(desired int32) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Generation: 1},
			Status: appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: desired}}
	}
	const fpA, fpB = "00000000000000aa", "00000000000000bb"
	type nodeSum struct {
		Node, State, Page, FP string
	}
	tests := map[string]struct {
		never      bool
		ds         *appsv1.DaemonSet
		pods       []corev1.Pod
		wantReady  int32
		wantFP     string
		wantPage   pfsv1alpha1.PageSize
		wantNodes  []nodeSum
		wantConds  map[string]string
		wantReadyM string
	}{
		"no DaemonSet yet": {
			wantConds:  map[string]string{"Ready": "False/Materializing", "Degraded": "False/AsExpected"},
			wantReadyM: "waiting for the holder DaemonSet to be rolled out"},
		"no matching node": {ds: rolled(0),
			wantConds: map[string]string{"Ready": "False/NoMatchingNodes", "Degraded": "False/AsExpected"}},
		"all nodes agree": {ds: rolled(2),
			pods:      []corev1.Pod{holder("a", time.Minute, 0, blobCreateMsg(fpA, "2M", ""), true), holder("b", time.Minute, 0, blobCreateMsg(fpA, "2M", ""), true)},
			wantReady: 2, wantFP: fpA, wantPage: pfsv1alpha1.PageSize2Mi,
			wantNodes:  []nodeSum{{"a", "Ready", "2Mi", fpA}, {"b", "Ready", "2Mi", fpA}},
			wantConds:  map[string]string{"Ready": "True/Materialized", "Degraded": "False/AsExpected"},
			wantReadyM: "2 of 2 nodes hold the blob, fingerprint " + fpA},
		"one still filling, one created but not serving": {ds: rolled(3),
			pods: []corev1.Pod{holder("a", time.Minute, 0, blobCreateMsg(fpA, "2M", ""), true), holder("b", time.Minute, -1, "", false),
				holder("c", time.Minute, 0, blobCreateMsg(fpA, "2M", ""), false)},
			wantReady: 1, wantFP: fpA, wantPage: pfsv1alpha1.PageSize2Mi,
			wantNodes:  []nodeSum{{"a", "Ready", "2Mi", fpA}, {"b", "Materializing", "", ""}, {"c", "Materializing", "2Mi", fpA}},
			wantConds:  map[string]string{"Ready": "False/Materializing", "Degraded": "False/AsExpected"},
			wantReadyM: "1 of 3 nodes ready"},
		"fingerprints differ": {ds: rolled(3),
			pods: []corev1.Pod{holder("a", time.Minute, 0, blobCreateMsg(fpA, "2M", ""), true), holder("b", time.Minute, 0, blobCreateMsg(fpB, "2M", ""), true),
				holder("c", time.Minute, 0, blobCreateMsg(fpA, "2M", ""), true)},
			wantReady: 3, wantPage: pfsv1alpha1.PageSize2Mi,
			wantNodes:  []nodeSum{{"a", "Ready", "2Mi", fpA}, {"b", "Ready", "2Mi", fpB}, {"c", "Ready", "2Mi", fpA}},
			wantConds:  map[string]string{"Ready": "False/FingerprintMismatch", "Degraded": "True/FingerprintMismatch"},
			wantReadyM: "nodes hold different bytes: " + fpA + " on a, c; " + fpB + " on b"},
		"page size fallback is reported": {ds: rolled(2),
			pods:      []corev1.Pod{holder("a", time.Minute, 0, blobCreateMsg(fpA, "2M", ""), true), holder("b", time.Minute, 0, blobCreateMsg(fpA, "4K", "hugetlb 2M: 0 free"), true)},
			wantReady: 2, wantFP: fpA,
			wantNodes: []nodeSum{{"a", "Ready", "2Mi", fpA}, {"b", "Ready", "4Ki", fpA}},
			wantConds: map[string]string{"Ready": "True/Materialized", "Degraded": "True/PageSizeFallback"}},
		"a node failed; the newest pod on a node wins": {ds: rolled(2),
			pods: []corev1.Pod{holder("a", time.Minute, 0, blobCreateMsg(fpA, "2M", ""), true),
				holder("b", time.Hour, 0, blobCreateMsg(fpA, "2M", ""), true),
				holder("b", time.Minute, 1, `{"ok":false,"cmd":"blob-create","error":"blob create failed: Cannot allocate memory"}`, false)},
			wantReady: 1, wantFP: fpA, wantPage: pfsv1alpha1.PageSize2Mi,
			wantNodes: []nodeSum{{"a", "Ready", "2Mi", fpA}, {"b", "Failed", "", ""}},
			wantConds: map[string]string{"Ready": "False/Materializing", "Degraded": "True/NodeFailed"}},
		"no hugepages and fallback Never": {never: true, ds: rolled(1),
			pods:      []corev1.Pod{holder("a", time.Minute, 1, `{"ok":false,"error":"hugepages missing: reserve them"}`, false)},
			wantNodes: []nodeSum{{"a", "Failed", "", ""}},
			wantConds: map[string]string{"Ready": "False/HugePagesUnavailable", "Degraded": "True/NodeFailed"}},
		"unbound DaemonSet pod is attributed by its affinity": {ds: rolled(1),
			pods: []corev1.Pod{func() corev1.Pod {
				p := holder("", time.Minute, -1, "", false)
				p.Status.InitContainerStatuses = nil
				p.Spec.Affinity = placement.NodeAffinity([]string{"z"})
				return p
			}()},
			wantNodes: []nodeSum{{"z", "Pending", "", ""}},
			wantConds: map[string]string{"Ready": "False/Materializing", "Degraded": "False/AsExpected"}},
		"a holder the scheduler cannot place: Ready says why": {ds: rolled(2),
			pods: []corev1.Pod{holder("a", time.Minute, 0, blobCreateMsg(fpA, "2M", ""), true), func() corev1.Pod {
				p := holder("", time.Minute, -1, "", false)
				p.Status.InitContainerStatuses = nil
				p.Spec.Affinity = placement.NodeAffinity([]string{"z"})
				unschedulable(t0.Add(-time.Minute))(&p)
				return p
			}()},
			wantReady: 1, wantFP: fpA, wantPage: pfsv1alpha1.PageSize2Mi,
			wantNodes:  []nodeSum{{"a", "Ready", "2Mi", fpA}, {"z", "Pending", "", ""}},
			wantConds:  map[string]string{"Ready": "False/Materializing", "Degraded": "False/AsExpected"},
			wantReadyM: "1 of 2 nodes ready; holder pod not scheduled: 0/3 nodes are available: 3 Insufficient cpu."},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b := &pfsv1alpha1.PfsBlob{ObjectMeta: metav1.ObjectMeta{Name: "b", Generation: 1},
				Spec: pfsv1alpha1.PfsBlobSpec{Size: resource.MustParse("64Mi"), PageSize: pfsv1alpha1.PageSize2Mi, PageFallback: pfsv1alpha1.PageFallbackAllow}}
			if tc.never {
				b.Spec.PageFallback = pfsv1alpha1.PageFallbackNever
			}
			st := computeBlobStatus(b, blobObservation{DaemonSet: tc.ds, Pods: tc.pods, Now: t0})
			var nodes []nodeSum
			for _, n := range st.Nodes {
				nodes = append(nodes, nodeSum{n.Node, string(n.State), string(n.PageSize), n.Fingerprint})
			}
			if diff := cmp.Diff(tc.wantNodes, nodes); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantConds, condSummary(st.Conditions)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if st.ReadyNodes != tc.wantReady || st.Fingerprint != tc.wantFP || st.PageSize != tc.wantPage {
				t.Errorf("ready %d fp %q page %q, want %d %q %q", st.ReadyNodes, st.Fingerprint, st.PageSize, tc.wantReady, tc.wantFP, tc.wantPage)
			}
			if tc.wantReadyM != "" {
				if got := condMessage(st.Conditions, "Ready"); got != tc.wantReadyM {
					t.Errorf("Ready message %q, want %q", got, tc.wantReadyM)
				}
			}
			// A second pass over the same inputs changes nothing: no status churn.
			b.Status = st
			if diff := cmp.Diff(st, computeBlobStatus(b, blobObservation{DaemonSet: tc.ds, Pods: tc.pods, Now: t0.Add(time.Hour)})); diff != "" {
				t.Errorf("status not stable (-first +second):\n%s", diff)
			}
		})
	}
}

// TestDecideBlobEvents: the Events a blob reconcile records after its
// status write: the DaemonSet it created, a new Ready reason, a new reason
// for Degraded=True; nothing when the reasons stay.
func TestDecideBlobEvents(t *testing.T) {
	created := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "b-holder", Generation: 1}}
	rolled := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "b-holder", Generation: 1},
		Status: appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 1}}
	const fpA = "00000000000000aa"
	ready := []corev1.Pod{holder("a", time.Minute, 0, blobCreateMsg(fpA, "2M", ""), true)}
	fellBack := []corev1.Pod{holder("a", time.Minute, 0, blobCreateMsg(fpA, "4K", "hugetlb 2M: 0 free"), true)}
	conds := func(ready, degraded string) []metav1.Condition {
		return []metav1.Condition{{Type: "Ready", Status: "False", Reason: ready}, {Type: "Degraded", Status: "True", Reason: degraded}}
	}
	tests := map[string]struct {
		old       []metav1.Condition
		obs       blobObservation
		want      []event
		wantReady string // reason of plan.ReadinessChanged; "" none
	}{
		"DaemonSet created: that, then the first Ready reason": {obs: blobObservation{DaemonSet: created, CreatedDaemonSet: true},
			want: []event{{"Normal", "Materializing", "Created holder DaemonSet b-holder"},
				{"Normal", "Materializing", "waiting for the holder DaemonSet to be rolled out"}},
			wantReady: "Materializing"},
		"same Ready reason: no Event": {old: conds("Materializing", "AsExpected"), obs: blobObservation{DaemonSet: created}},
		"Ready now": {old: conds("Materializing", "AsExpected"), obs: blobObservation{DaemonSet: rolled, Pods: ready},
			want:      []event{{"Normal", "Materialized", "1 of 1 nodes hold the blob, fingerprint " + fpA}},
			wantReady: "Materialized"},
		"Degraded=True with a new reason: a Warning": {old: conds("Materialized", "AsExpected"), obs: blobObservation{DaemonSet: rolled, Pods: fellBack},
			want: []event{{"Warning", "PageSizeFallback", "node(s) a mapped smaller pages than 2Mi: see status.nodes[].fallbackReason"}}},
		"Degraded=True, same reason: no Event": {old: conds("Materialized", "PageSizeFallback"), obs: blobObservation{DaemonSet: rolled, Pods: fellBack}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b := &pfsv1alpha1.PfsBlob{ObjectMeta: metav1.ObjectMeta{Name: "b", Generation: 1},
				Spec:   pfsv1alpha1.PfsBlobSpec{Size: resource.MustParse("64Mi"), PageSize: pfsv1alpha1.PageSize2Mi, PageFallback: pfsv1alpha1.PageFallbackAllow},
				Status: pfsv1alpha1.PfsBlobStatus{Conditions: tc.old}}
			tc.obs.Now = t0
			st, plan := decideBlob(b, tc.obs)
			if diff := cmp.Diff(computeBlobStatus(b, tc.obs), st); diff != "" {
				t.Errorf("status differs from computeBlobStatus (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, plan.Events, cmp.AllowUnexported(event{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			gotReady := ""
			if c := plan.ReadinessChanged; c != nil {
				gotReady = c.Reason
			}
			if gotReady != tc.wantReady {
				t.Errorf("readiness changed to %q, want %q", gotReady, tc.wantReady)
			}
		})
	}
}

// A holder's fill that exits 3 (its bytes failed the manifest's digests) is
// VerificationFailed; any other failing exit code names no reason.
func TestHolderNodeStatusVerificationFailed(t *testing.T) {
	b := &pfsv1alpha1.PfsBlob{}
	for code, want := range map[int32]string{3: pfsv1alpha1.ReasonVerificationFailed, 1: ""} {
		p := testPod("h", podspec.ContainerBlobServe)
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: podspec.ContainerBlobCreate,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code,
				Message: `{"ok":false,"cmd":"blob-create","error":"received bytes do not match the manifest"}`}}}}
		ns := holderNodeStatus(b, "n", p)
		if ns.State != pfsv1alpha1.BlobNodeFailed || ns.Reason != want {
			t.Errorf("exit %d: state %s reason %q, want Failed %q (%s)", code, ns.State, ns.Reason, want, ns.Message)
		}
	}
}
