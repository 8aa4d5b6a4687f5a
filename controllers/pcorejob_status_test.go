// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

const pcoreMsg = `{"label":"pCPU Offset-mode","op":"counteq","pcores":2,"cpus":[4,5],"complete":true,"bytes":200000000,"seconds":0.100000,"MBps":2000.0,` +
	`"result":{"kind":"count","value":781250,"passes_agree":true},"baseline":{"MBps":1000.0,"result":781250,"result_match":true,"complete":true},"CPUpwn":2.000}`

func TestDecidePcore(t *testing.T) {
	job := func(mut ...func(*pfsv1alpha1.PcoreJob)) *pfsv1alpha1.PcoreJob {
		j := &pfsv1alpha1.PcoreJob{
			ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", Generation: 1, CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))},
			Spec: pfsv1alpha1.PcoreJobSpec{BlobRef: pfsv1alpha1.BlobReference{Name: "b"}, Op: pfsv1alpha1.OpCountEq, Imm: ptr.To(int32(7)),
				Pcores: 2, Baseline: pfsv1alpha1.BaselineThreads, NUMA: pfsv1alpha1.NUMAPolicyPreferred},
		}
		for _, m := range mut {
			m(j)
		}
		return j
	}
	created := func(j *pfsv1alpha1.PcoreJob) {
		j.Status = pfsv1alpha1.PcoreJobStatus{Phase: "Placing", Placement: &pfsv1alpha1.Placement{Pod: "j-pcore"}}
	}
	blob := readyBlobObj("256Mi", "n1")
	type want struct {
		phase  pfsv1alpha1.Phase
		conds  map[string]string
		plan   pcorePlan
		msg    string
		events []string // Event reasons in order, when checked
	}
	tests := map[string]struct {
		j    *pfsv1alpha1.PcoreJob
		obs  pcoreObservation
		want want
	}{
		"blob missing: wait": {j: job(),
			want: want{phase: "Pending", conds: map[string]string{"Placed": "False/BlobNotFound", "Succeeded": "False/BlobNotFound"}}},
		"blob not Ready: wait": {j: job(), obs: pcoreObservation{Blob: readyBlobObj("256Mi")},
			want: want{phase: "Pending", conds: map[string]string{"Placed": "False/BlobNotReady", "Succeeded": "False/BlobNotReady"}}},
		"create the pod on the blob's nodes": {j: job(), obs: pcoreObservation{Blob: blob},
			want: want{phase: "Placing", conds: map[string]string{"Placed": "False/PodsPending", "Succeeded": "False/PodsPending"},
				plan: pcorePlan{CreatePod: true, BlobNodes: []string{"n1"}}}},
		"range past the blob": {j: job(func(j *pfsv1alpha1.PcoreJob) {
			j.Spec.Range = &pfsv1alpha1.Range{Offset: resource.MustParse("200Mi"), Length: resource.MustParse("100Mi")}
		}), obs: pcoreObservation{Blob: blob},
			want: want{phase: "Failed", conds: map[string]string{"Failed": "True/RangeOutOfBounds", "Succeeded": "False/RangeOutOfBounds"},
				plan: pcorePlan{DeleteActivePod: true}}},
		"running": {j: job(created), obs: pcoreObservation{Blob: blob, Pod: testPod("j-pcore", "pcore", onNode("n1"), isRunning(false))},
			want: want{phase: "Running", conds: map[string]string{"Placed": "True/PodsScheduled", "Succeeded": "False/Running"},
				plan: pcorePlan{BlobNodes: []string{"n1"}}}},
		"pod deleted": {j: job(created), obs: pcoreObservation{Blob: blob},
			want: want{phase: "Failed", conds: map[string]string{"Failed": "True/PodFailed", "Succeeded": "False/PodFailed"},
				plan: pcorePlan{DeleteActivePod: true, BlobNodes: []string{"n1"}}, msg: "pod j-pcore was deleted before the job finished"}},
		"OOM killed": {j: job(created), obs: pcoreObservation{Blob: blob, Pod: testPod("j-pcore", "pcore", onNode("n1"), isTerminated(137, "OOMKilled", ""))},
			want: want{phase: "Failed", conds: map[string]string{"Failed": "True/OOMKilled", "Succeeded": "False/OOMKilled"},
				plan: pcorePlan{DeleteActivePod: true, BlobNodes: []string{"n1"}}}},
		"succeeded": {j: job(created), obs: pcoreObservation{Blob: blob, Pod: testPod("j-pcore", "pcore", onNode("n1"), isTerminated(0, "Completed", pcoreMsg))},
			want: want{phase: "Succeeded", conds: map[string]string{"Placed": "True/PodsScheduled", "Succeeded": "True/Completed"},
				plan: pcorePlan{BlobNodes: []string{"n1"}}, msg: "2000.0 MB/s on 2 pcores, result 781250; baseline 1000.0 MB/s, CPUpwn 2.00"}},
		"baseline disagrees": {j: job(created), obs: pcoreObservation{Blob: blob, Pod: testPod("j-pcore", "pcore", onNode("n1"),
			isTerminated(0, "Completed", `{"complete":true,"bytes":1,"seconds":1,"MBps":1,"result":{"value":5},"baseline":{"MBps":1,"result":6,"result_match":false},"CPUpwn":1}`))},
			want: want{phase: "Failed", conds: map[string]string{"Placed": "True/PodsScheduled", "Failed": "True/ResultInvalid", "Succeeded": "False/ResultInvalid"},
				plan: pcorePlan{DeleteActivePod: true, BlobNodes: []string{"n1"}}, msg: "pod j-pcore: pcores and baseline disagree: pcore result 5, baseline 6"}},
		"malformed result": {j: job(created), obs: pcoreObservation{Blob: blob, Pod: testPod("j-pcore", "pcore", onNode("n1"), isTerminated(0, "Completed", "core dumped"))},
			want: want{phase: "Failed", conds: map[string]string{"Placed": "True/PodsScheduled", "Failed": "True/ResultInvalid", "Succeeded": "False/ResultInvalid"},
				plan: pcorePlan{DeleteActivePod: true, BlobNodes: []string{"n1"}}}},
		"pod deleted while the blob has no Ready copy: still failed": {j: job(created), obs: pcoreObservation{Blob: readyBlobObj("256Mi")},
			want: want{phase: "Failed", conds: map[string]string{"Failed": "True/PodFailed", "Succeeded": "False/PodFailed"},
				plan: pcorePlan{DeleteActivePod: true}, msg: "pod j-pcore was deleted before the job finished", events: []string{"PodFailed"}}},
		"the apiserver refused the pod: the old status, Placed says why": {j: job(), obs: pcoreObservation{Blob: blob,
			CreateFailed: &createFailure{Pod: "j-pcore", Err: refusedByPSA}},
			want: want{conds: map[string]string{"Placed": "False/PodsPending"}, events: []string{"PodsPending"}}},
		"a create that failed otherwise changes nothing": {j: job(), obs: pcoreObservation{Blob: blob,
			CreateFailed: &createFailure{Pod: "j-pcore", Err: apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "j-pcore", errors.New("x"))}},
			want: want{events: []string{}}},
		"finished: nothing more": {j: job(func(j *pfsv1alpha1.PcoreJob) { j.Status.Phase = "Succeeded" }), obs: pcoreObservation{Blob: blob},
			want: want{phase: "Succeeded", plan: pcorePlan{DeleteActivePod: true}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.obs.Now, tc.obs.Timing = t0, timing
			st, plan := decidePcore(tc.j, tc.obs)
			if st.Phase != tc.want.phase {
				t.Errorf("phase %q, want %q", st.Phase, tc.want.phase)
			}
			wantConds := tc.want.conds
			if wantConds == nil {
				wantConds = map[string]string{}
			}
			if diff := cmp.Diff(wantConds, condSummary(st.Conditions)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want.plan, plan, cmpopts.IgnoreFields(pcorePlan{}, "Events"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if tc.want.msg != "" {
				got := condMessage(st.Conditions, "Failed")
				if got == "" {
					got = condMessage(st.Conditions, "Succeeded")
				}
				if got != tc.want.msg {
					t.Errorf("message\n got %q\nwant %q", got, tc.want.msg)
				}
			}
			if tc.want.events != nil {
				if diff := cmp.Diff(tc.want.events, eventReasons(plan.Events), cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("event reasons (-want +got):\n%s", diff)
				}
			}
			if name == "succeeded" {
				want := pfsv1alpha1.PcoreJobStatus{ProcessedBytes: 200000000, ElapsedSeconds: "0.100", ThroughputMBps: "2000.0",
					BaselineMBps: "1000.0", CPUpwn: "2.00", Result: "781250", BaselineResult: "781250", Label: "pCPU Offset-mode",
					Placement: &pfsv1alpha1.Placement{Pod: "j-pcore", Node: "n1", CPUs: "4-5"}}
				got := st
				got.Conditions, got.Phase, got.ObservedGeneration, got.CompletionTime, got.StartTime = nil, "", 0, nil, nil
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("status (-want +got):\n%s", diff)
				}
			}
		})
	}
}
