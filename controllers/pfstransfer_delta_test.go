// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/placement"
	"packetfs.io/operator/internal/result"
)

// deltaSide is a delta-mode result of one side moving 1,000,000 source
// bytes in 137,000 wire bytes; the sender reports the encoding, the
// receiver its stages and the bound.
func deltaSide(role string, fullCopy bool, sha, verdict string) string {
	stages, extra := `"index_s":0.25,"encode_s":0.5`, `,"threads":2,"regions":{"same":{"n":9,"bytes":800000},"xor":{"n":1,"bytes":100000,"wire":37000},"zstd":{"n":1,"bytes":100000,"wire":100000}}`
	if role == "receiver" {
		stages, extra = `"apply_s":0.125,"verify_s":0.0625`, `,"bound":"wire"`
	}
	errField := "null"
	if verdict != "OK" {
		errField = `"sha256 MISMATCH"`
	}
	return fmt.Sprintf(`{"ok":%t,"side":%q,"label":"PFS-Delta-TCP","mode":"delta","verdict":%q,"bytes":1000000,"wire_bytes":137000,`+
		`"elapsed_s":0.5,"user_s":0.25,"sys_s":0.125,"error":%s,"delta":{"base_bytes":900000,"target_bytes":1000000,"wire_bytes":137000,`+
		`"ratio":7.3,"full_copy":%t,"sha256":%q,"stages":{%s}%s}}`, verdict == "OK", role, verdict, errField, fullCopy, sha, stages, extra)
}

func TestDecideDeltaTransfer(t *testing.T) {
	sum, other := strings.Repeat("ab", 32), strings.Repeat("cd", 32)
	base := func(mut ...func(*pfsv1alpha1.PfsTransfer)) *pfsv1alpha1.PfsTransfer {
		x := &pfsv1alpha1.PfsTransfer{
			ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns", Generation: 1, CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))},
			Spec: pfsv1alpha1.PfsTransferSpec{Mode: pfsv1alpha1.ModeDelta, Transport: pfsv1alpha1.TransportTCP,
				BlobRef:   &pfsv1alpha1.BlobReference{Name: "old"},
				Delta:     &pfsv1alpha1.DeltaSpec{SourceRef: pfsv1alpha1.BlobReference{Name: "new"}, ZstdLevel: 3},
				Integrity: pfsv1alpha1.IntegrityCRC32C, BackoffLimit: ptr.To(int32(0)), NUMA: pfsv1alpha1.NUMAPolicyPreferred},
		}
		for _, m := range mut {
			m(x)
		}
		return x
	}
	blob := func(name string, nodes ...string) *pfsv1alpha1.PfsBlob {
		b := readyBlobObj("64Mi", nodes...)
		b.Name = name
		return b
	}
	pinReceiver := func(x *pfsv1alpha1.PfsTransfer) { x.Spec.Receiver.NodeName = "n9" }
	bothCreated := func(planned *pfsv1alpha1.DeltaStatus) func(*pfsv1alpha1.PfsTransfer) {
		return func(x *pfsv1alpha1.PfsTransfer) {
			x.Status = pfsv1alpha1.PfsTransferStatus{Phase: pfsv1alpha1.PhaseRunning, Delta: planned,
				Receiver: &pfsv1alpha1.EndpointStatus{Placement: pfsv1alpha1.Placement{Pod: "x-a0-recv"}},
				Sender:   &pfsv1alpha1.EndpointStatus{Placement: pfsv1alpha1.Placement{Pod: "x-a0-send"}}}
		}
	}
	fullCopy := &pfsv1alpha1.DeltaStatus{Encoding: "FullCopy", Message: "base old not Ready on node n9: sent as a full compressed copy"}
	// ran is the plan once both pods ended: delete what still runs (the
	// nodes decided are not used any more).
	ran := transferPlan{DeleteActivePods: true, BlobNodes: []string{"n1", "n2"},
		Delta: placement.Delta{SenderNodes: []string{"n2"}, ReceiverNodes: []string{"n1", "n2"}}}
	ranPinned := ran
	ranPinned.Delta = placement.Delta{SenderNodes: []string{"n2"}, NoBaseNode: "n9"}
	obs := func(recv, send string, code int32) transferObservation {
		reason := "Completed"
		if code != 0 {
			reason = "Error"
		}
		return transferObservation{Blob: blob("old", "n1", "n2"), Source: blob("new", "n2"),
			Receiver: testPod("x-a0-recv", "receiver", onNode("n1"), isTerminated(code, reason, recv)),
			Sender:   testPod("x-a0-send", "sender", onNode("n2"), isTerminated(code, reason, send))}
	}
	type want struct {
		phase pfsv1alpha1.Phase
		conds map[string]string
		plan  transferPlan
		delta *pfsv1alpha1.DeltaStatus
		msg   string // the Failed, Succeeded or first Event message, when checked
	}
	tests := map[string]struct {
		x    *pfsv1alpha1.PfsTransfer
		obs  transferObservation
		want want
	}{
		"source not found: wait": {x: base(), obs: transferObservation{Blob: blob("old", "n1")},
			want: want{phase: "Pending", conds: map[string]string{"Placed": "False/BlobNotFound", "Succeeded": "False/BlobNotFound"},
				msg: "PfsBlob new (spec.delta.sourceRef) not found in namespace ns"}},
		"no node holds both: wait": {x: base(), obs: transferObservation{Blob: blob("old", "n1"), Source: blob("new", "n2")},
			want: want{phase: "Pending", conds: map[string]string{"Placed": "False/BlobNotReady", "Succeeded": "False/BlobNotReady"}}},
		"receiver created where the base is": {x: base(), obs: transferObservation{Blob: blob("old", "n1", "n2"), Source: blob("new", "n2")},
			want: want{phase: "Placing", conds: map[string]string{"Placed": "False/PodsPending", "Succeeded": "False/ReceiverNotReady"},
				plan: transferPlan{CreateReceiver: true, BlobNodes: []string{"n1", "n2"},
					Delta: placement.Delta{SenderNodes: []string{"n2"}, ReceiverNodes: []string{"n1", "n2"}}},
				delta: &pfsv1alpha1.DeltaStatus{Encoding: "Delta"}, msg: "Created receiver pod x-a0-recv (attempt 1)"}},
		"receiver pinned where the base is not Ready: a full copy, said in status and the Event": {x: base(pinReceiver),
			obs: transferObservation{Blob: blob("old", "n1", "n2"), Source: blob("new", "n2")},
			want: want{phase: "Placing", conds: map[string]string{"Placed": "False/PodsPending", "Succeeded": "False/ReceiverNotReady"},
				plan: transferPlan{CreateReceiver: true, BlobNodes: []string{"n1", "n2"},
					Delta: placement.Delta{SenderNodes: []string{"n2"}, NoBaseNode: "n9"}},
				delta: fullCopy,
				msg:   "Created receiver pod x-a0-recv (attempt 1); base old not Ready on node n9: sent as a full compressed copy"}},
		"both succeeded: the delta in status": {x: base(bothCreated(&pfsv1alpha1.DeltaStatus{Encoding: "Delta"})),
			obs: obs(deltaSide("receiver", false, sum, "OK"), deltaSide("sender", false, sum, "OK"), 0),
			want: want{phase: "Succeeded", conds: map[string]string{"Placed": "True/PodsScheduled", "Succeeded": "True/Completed"},
				plan: ran,
				delta: &pfsv1alpha1.DeltaStatus{Encoding: "Delta", BaseBytes: 900000, EffectiveBytes: 1000000, WireBytes: 137000, Ratio: "7.30",
					Bound: "Wire", Threads: 2,
					Stages: &pfsv1alpha1.DeltaStages{IndexSeconds: "0.250", EncodeSeconds: "0.500", ApplySeconds: "0.125", VerifySeconds: "0.062"},
					Regions: &pfsv1alpha1.DeltaRegions{Same: &pfsv1alpha1.DeltaRegionCount{Count: 9, Bytes: 800000},
						XOR:  &pfsv1alpha1.DeltaRegionCount{Count: 1, Bytes: 100000, WireBytes: 37000},
						Zstd: &pfsv1alpha1.DeltaRegionCount{Count: 1, Bytes: 100000, WireBytes: 100000}}},
				msg: "moved 1000000 bytes in 0.500s: 2.0 MB/s, 1.3 MB/CPU-s, integrity OK; delta: 137000 bytes on the wire, ratio 7.30"}},
		"a full copy succeeded: the planned reason stays": {x: base(pinReceiver, bothCreated(fullCopy)),
			obs: obs(deltaSide("receiver", true, sum, "OK"), deltaSide("sender", true, sum, "OK"), 0),
			want: want{phase: "Succeeded", conds: map[string]string{"Placed": "True/PodsScheduled", "Succeeded": "True/Completed"},
				plan: ranPinned,
				msg: "moved 1000000 bytes in 0.500s: 2.0 MB/s, 1.3 MB/CPU-s, integrity OK; " +
					"base old not Ready on node n9: sent as a full compressed copy; 137000 bytes on the wire, ratio 7.30"}},
		"the rebuilt source's sha256 differs": {x: base(bothCreated(&pfsv1alpha1.DeltaStatus{Encoding: "Delta"})),
			obs: obs(deltaSide("receiver", false, other, "MISMATCH"), deltaSide("sender", false, sum, "MISMATCH"), 3),
			want: want{phase: "Failed", conds: map[string]string{"Placed": "True/PodsScheduled", "Failed": "True/IntegrityMismatch", "Succeeded": "False/IntegrityMismatch"},
				plan: ran,
				msg:  "SHA256 checksums differ: sender " + sum + ", receiver " + other}},
		"a side without its delta member: ResultInvalid": {x: base(bothCreated(&pfsv1alpha1.DeltaStatus{Encoding: "Delta"})),
			obs: obs(deltaSide("receiver", false, sum, "OK"), side("sender", 0.4, 0.05, 0.15, "abcd", "OK"), 0),
			want: want{phase: "Failed", conds: map[string]string{"Placed": "True/PodsScheduled", "Failed": "True/ResultInvalid", "Succeeded": "False/ResultInvalid"},
				plan: ran}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.obs.Now, tc.obs.Timing = t0, timing
			st, plan := decideTransfer(tc.x, tc.obs)
			if st.Phase != tc.want.phase {
				t.Errorf("phase %q, want %q", st.Phase, tc.want.phase)
			}
			if diff := cmp.Diff(tc.want.conds, condSummary(st.Conditions)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want.plan, plan, cmpopts.IgnoreFields(transferPlan{}, "Events"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if tc.want.delta != nil {
				if diff := cmp.Diff(tc.want.delta, st.Delta); diff != "" {
					t.Errorf("status.delta (-want +got):\n%s", diff)
				}
			}
			if st.Label != "PFS-Delta-TCP" {
				t.Errorf("label %q", st.Label)
			}
			if tc.want.msg == "" {
				return
			}
			got := condMessage(st.Conditions, "Failed")
			if got == "" {
				got = condMessage(st.Conditions, "Succeeded")
			}
			if st.Phase == pfsv1alpha1.PhasePlacing && len(plan.Events) > 0 {
				got = plan.Events[0].Message
			}
			if got != tc.want.msg {
				t.Errorf("message\n got %q\nwant %q", got, tc.want.msg)
			}
		})
	}
}

func TestMergeDeltaTransfer(t *testing.T) {
	x := &pfsv1alpha1.PfsTransfer{Spec: pfsv1alpha1.PfsTransferSpec{Mode: pfsv1alpha1.ModeDelta, Integrity: pfsv1alpha1.IntegrityCRC32C}}
	sum := strings.Repeat("ab", 32)
	s, err := result.ParseTransfer(deltaSide("sender", false, sum, "OK"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := result.ParseTransfer(deltaSide("receiver", false, sum, "OK"))
	if err != nil {
		t.Fatal(err)
	}
	var st pfsv1alpha1.PfsTransferStatus
	if err := mergeTransfer(x, s, r, &st); err != nil {
		t.Fatal(err)
	}
	if st.Grams != nil {
		t.Errorf("grams %+v: Delta moves no grams", st.Grams)
	}
	wantIn := &pfsv1alpha1.IntegrityStatus{Algorithm: "SHA256", Result: "OK", SenderChecksum: sum, ReceiverChecksum: sum}
	if diff := cmp.Diff(wantIn, st.Integrity); diff != "" {
		t.Errorf("integrity (-want +got):\n%s", diff)
	}
	if st.EffectiveBytes != 1000000 || st.WireBytes != 137000 || st.Delta.Ratio != "7.30" || st.Delta.Encoding != "Delta" {
		t.Errorf("bytes %d wire %d delta %+v", st.EffectiveBytes, st.WireBytes, st.Delta)
	}
	// Either side saying full_copy makes it one; the planned reason is kept.
	r.Delta.FullCopy = true
	st.Delta = &pfsv1alpha1.DeltaStatus{Encoding: "FullCopy", Message: "base old not Ready on node n9: sent as a full compressed copy"}
	if err := mergeTransfer(x, s, r, &st); err != nil || st.Delta.Encoding != "FullCopy" || !strings.HasPrefix(st.Delta.Message, "base old") {
		t.Errorf("full copy: err %v delta %+v", err, st.Delta)
	}
	// Without a planned reason it still says what happened.
	st.Delta = nil
	if err := mergeTransfer(x, s, r, &st); err != nil || st.Delta.Message != "the receiver held no base: sent as a full compressed copy" {
		t.Errorf("full copy, nothing planned: err %v delta %+v", err, st.Delta)
	}
	// Nothing on the wire: no ratio rather than a division by zero.
	r.Delta.WireBytes, s.Delta.WireBytes = 0, 0
	if err := mergeTransfer(x, s, r, &st); err != nil || st.Delta.Ratio != "" {
		t.Errorf("no wire bytes: err %v ratio %q", err, st.Delta.Ratio)
	}
}

func TestTransferBlobNames(t *testing.T) {
	x := &pfsv1alpha1.PfsTransfer{Spec: pfsv1alpha1.PfsTransferSpec{Mode: pfsv1alpha1.ModeDelta,
		BlobRef: &pfsv1alpha1.BlobReference{Name: "old"}, Delta: &pfsv1alpha1.DeltaSpec{SourceRef: pfsv1alpha1.BlobReference{Name: "new"}}}}
	if diff := cmp.Diff([]string{"old", "new"}, transferBlobNames(x)); diff != "" {
		t.Errorf("Delta (-want +got):\n%s", diff)
	}
	if got := transferBlobNames(&pfsv1alpha1.PfsTransfer{}); len(got) != 0 {
		t.Errorf("a Payload transfer without a blob uses %v", got)
	}
}
