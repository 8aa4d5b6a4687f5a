// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/holdermetrics"
)

func progressStatus(states ...pfsv1alpha1.BlobNodeState) *pfsv1alpha1.PfsBlobStatus {
	size := resource.MustParse("100Mi")
	st := &pfsv1alpha1.PfsBlobStatus{Size: &size, DesiredNodes: int32(len(states)), ObservedGeneration: 1,
		Conditions: []metav1.Condition{{Type: pfsv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: pfsv1alpha1.ReasonMaterializing}}}
	for i, s := range states {
		n := string(rune('a' + i))
		st.Nodes = append(st.Nodes, pfsv1alpha1.BlobNodeStatus{Node: "node-" + n, Pod: "pod-" + n, State: s, Attempts: 1})
	}
	return st
}

func TestProgressTargetsAndMerge(t *testing.T) {
	st := progressStatus(pfsv1alpha1.BlobNodeReady, pfsv1alpha1.BlobNodeMaterializing, pfsv1alpha1.BlobNodeMaterializing, pfsv1alpha1.BlobNodePending)
	holders := []corev1.Pod{*testPod("pod-a", "c", withIP("10.0.0.1")), *testPod("pod-b", "c", withIP("10.0.0.2")), *testPod("pod-c", "c")}
	got := progressTargets(st, holders, 9470)
	want := []holdermetrics.Target{{Pod: "pod-b", Host: "10.0.0.2", Port: 9470}} // pod-c has no IP yet
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	if got := progressTargets(st, holders, 0); got != nil {
		t.Errorf("no metrics port, targets %v", got)
	}
	size := int64(100 << 20)
	mergeProgress(st, map[string]holdermetrics.Progress{
		"pod-a": {Size: size, Filled: size, Seconds: 1}, // Ready: not a running fill
		"pod-b": {Size: size, Filled: size / 4, Seconds: 2},
	})
	if st.Nodes[0].Progress != nil || st.Nodes[2].Progress != nil {
		t.Errorf("progress on a Ready or unread node: %+v %+v", st.Nodes[0].Progress, st.Nodes[2].Progress)
	}
	if diff := cmp.Diff(&pfsv1alpha1.BlobNodeProgress{Bytes: size / 4, Percent: 25, MBps: "13.1"}, st.Nodes[1].Progress); diff != "" {
		t.Errorf("node b (-want +got):\n%s", diff)
	}
	// One whole copy and a quarter of another over four nodes' worth.
	if got := summariseProgress(st); got != "31%" {
		t.Errorf("summary %q, want 31%%", got)
	}
}

func TestCarryProgressKeepsOnlyRunningFills(t *testing.T) {
	prev := progressStatus(pfsv1alpha1.BlobNodeMaterializing, pfsv1alpha1.BlobNodeMaterializing, pfsv1alpha1.BlobNodeMaterializing)
	for i := range prev.Nodes {
		prev.Nodes[i].Progress = &pfsv1alpha1.BlobNodeProgress{Bytes: 10, Percent: 1}
	}
	pt := metav1.NewTime(t0)
	prev.ProgressTime = &pt
	st := progressStatus(pfsv1alpha1.BlobNodeMaterializing, pfsv1alpha1.BlobNodeReady, pfsv1alpha1.BlobNodeMaterializing)
	st.Nodes[2].Pod = "pod-c-attempt-2" // a new pod starts from nothing
	carryProgress(prev, st)
	if st.Nodes[0].Progress == nil || st.Nodes[1].Progress != nil || st.Nodes[2].Progress != nil {
		t.Errorf("carried %+v %+v %+v", st.Nodes[0].Progress, st.Nodes[1].Progress, st.Nodes[2].Progress)
	}
	if !st.ProgressTime.Equal(&pt) {
		t.Errorf("progress time %v", st.ProgressTime)
	}
}

// The write budget: within the interval of the last budgeted write a
// change of node states waits; a condition change, a new generation or a
// pod claimed does not; progress is read once the interval passed.
func TestStepProgress(t *testing.T) {
	every := 5 * time.Second
	last := metav1.NewTime(t0)
	base := func() *pfsv1alpha1.PfsBlobStatus {
		st := progressStatus(pfsv1alpha1.BlobNodeMaterializing, pfsv1alpha1.BlobNodeMaterializing)
		st.ProgressTime = &last
		return st
	}
	nodeReady := func(st *pfsv1alpha1.PfsBlobStatus) { st.Nodes[0].State = pfsv1alpha1.BlobNodeReady }
	for name, tc := range map[string]struct {
		after       time.Duration
		change      func(*pfsv1alpha1.PfsBlobStatus)
		podsChanged bool
		targets     int
		want        progressStep
	}{
		"nothing changed, fills running, early": {after: 2 * time.Second, targets: 2, want: progressStep{wake: 3 * time.Second}},
		"nothing changed, fills running, due":   {after: 6 * time.Second, targets: 2, want: progressStep{read: true, wake: every}},
		"a node Ready within the interval":      {after: time.Second, change: nodeReady, targets: 1, want: progressStep{hold: true, wake: 4 * time.Second}},
		"a node Ready, no fill left to read":    {after: time.Second, change: nodeReady, want: progressStep{hold: true, wake: 4 * time.Second}},
		"a node Ready after the interval":       {after: 5 * time.Second, change: nodeReady, targets: 1, want: progressStep{read: true, wake: every}},
		"the Ready condition changed": {after: time.Second, change: func(st *pfsv1alpha1.PfsBlobStatus) {
			st.Conditions[0].Status, st.Conditions[0].Reason = metav1.ConditionTrue, pfsv1alpha1.ReasonMaterialized
		}, want: progressStep{}},
		"a pod claimed":          {after: time.Second, change: func(st *pfsv1alpha1.PfsBlobStatus) { st.Nodes[1].Attempts = 2 }, podsChanged: true, want: progressStep{}},
		"a new generation":       {after: time.Second, change: func(st *pfsv1alpha1.PfsBlobStatus) { st.ObservedGeneration = 2 }, want: progressStep{}},
		"nothing runs, all done": {after: time.Second, want: progressStep{}},
	} {
		t.Run(name, func(t *testing.T) {
			prev, st := base(), base()
			if tc.change != nil {
				tc.change(st)
			}
			got := stepProgress(prev, st, tc.podsChanged, tc.targets, t0.Add(tc.after), every)
			if got != tc.want {
				t.Errorf("step %+v, want %+v", got, tc.want)
			}
		})
	}
}
