// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/placement"
	"packetfs.io/operator/internal/result"
)

// sideBytes is what every side() report moves.
const sideBytes = 100_000_000

func side(role string, elapsed, user, sys float64, crc, verdict string) string {
	errField := "null"
	if verdict != "OK" {
		errField = `"integrity MISMATCH"`
	}
	return fmt.Sprintf(`{"ok":%t,"side":%q,"bytes":%d,"wire_bytes":%d,"elapsed_s":%g,"user_s":%g,"sys_s":%g,"integrity":%q,"crc32c":"0x%s","grams":4,"decode_errors":0,"error":%s}`,
		verdict == "OK", role, sideBytes, sideBytes/1000, elapsed, user, sys, verdict, crc, errField)
}

func readyBlobObj(size string, nodes ...string) *pfsv1alpha1.PfsBlob {
	b := &pfsv1alpha1.PfsBlob{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}, Spec: pfsv1alpha1.PfsBlobSpec{Size: resource.MustParse(size)}}
	for _, n := range nodes {
		b.Status.Nodes = append(b.Status.Nodes, pfsv1alpha1.BlobNodeStatus{Node: n, State: pfsv1alpha1.BlobNodeReady})
	}
	return b
}

// refusedByPSA is how the apiserver refuses a pod that Pod Security
// Admission does not allow.
var refusedByPSA = apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New(`violates PodSecurity "baseline:latest"`))

func TestDecideTransfer(t *testing.T) {
	base := func(mut ...func(*pfsv1alpha1.PfsTransfer)) *pfsv1alpha1.PfsTransfer {
		x := &pfsv1alpha1.PfsTransfer{
			ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns", Generation: 1, CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))},
			Spec: pfsv1alpha1.PfsTransferSpec{Mode: pfsv1alpha1.ModePayload, Transport: pfsv1alpha1.TransportTCP,
				Integrity: pfsv1alpha1.IntegrityCRC32C, BackoffLimit: ptr.To(int32(0)), NUMA: pfsv1alpha1.NUMAPolicyPreferred},
		}
		for _, m := range mut {
			m(x)
		}
		return x
	}
	withBlob := func(x *pfsv1alpha1.PfsTransfer) {
		x.Spec.Mode, x.Spec.BlobRef = pfsv1alpha1.ModeOffset, &pfsv1alpha1.BlobReference{Name: "b"}
	}
	status := func(st pfsv1alpha1.PfsTransferStatus) func(*pfsv1alpha1.PfsTransfer) {
		return func(x *pfsv1alpha1.PfsTransfer) { x.Status = st }
	}
	recvCreated := pfsv1alpha1.PfsTransferStatus{Phase: pfsv1alpha1.PhasePlacing,
		Receiver: &pfsv1alpha1.EndpointStatus{Placement: pfsv1alpha1.Placement{Pod: "x-a0-recv"}}}
	bothCreated := *recvCreated.DeepCopy()
	bothCreated.Sender = &pfsv1alpha1.EndpointStatus{Placement: pfsv1alpha1.Placement{Pod: "x-a0-send"}}
	recvReady := testPod("x-a0-recv", "receiver", onNode("n1"), withIP("10.0.0.5"), isRunning(true))
	okRecv := testPod("x-a0-recv", "receiver", onNode("n1"), isTerminated(0, "Completed", side("receiver", 0.5, 0.1, 0.2, "abcd", "OK")))
	okSend := testPod("x-a0-send", "sender", onNode("n2"), isTerminated(0, "Completed", side("sender", 0.4, 0.05, 0.15, "abcd", "OK")))
	// A Delta transfer: base old (Ready on n1 and n2), source new (Ready on n2).
	withDelta := func(x *pfsv1alpha1.PfsTransfer) {
		x.Spec.Mode, x.Spec.BlobRef = pfsv1alpha1.ModeDelta, &pfsv1alpha1.BlobReference{Name: "old"}
		x.Spec.Delta = &pfsv1alpha1.DeltaSpec{SourceRef: pfsv1alpha1.BlobReference{Name: "new"}, ZstdLevel: 3}
	}
	pinReceiver := func(x *pfsv1alpha1.PfsTransfer) { x.Spec.Receiver.NodeName = "n9" }
	base12, source2 := readyBlobObj("64Mi", "n1", "n2"), readyBlobObj("64Mi", "n2")
	fullCopy := &pfsv1alpha1.DeltaStatus{Encoding: "FullCopy", Message: "base old not Ready on node n9: sent as a full compressed copy"}
	deltaRunning := func(planned *pfsv1alpha1.DeltaStatus) func(*pfsv1alpha1.PfsTransfer) {
		st := *bothCreated.DeepCopy()
		st.Phase, st.Delta = pfsv1alpha1.PhaseRunning, planned
		return status(st)
	}
	deltaEnded := func(recv, send string, code int32) transferObservation {
		reason := "Completed"
		if code != 0 {
			reason = "Error"
		}
		return transferObservation{Blob: base12, Source: source2,
			Receiver: testPod("x-a0-recv", "receiver", onNode("n1"), isTerminated(code, reason, recv)),
			Sender:   testPod("x-a0-send", "sender", onNode("n2"), isTerminated(code, reason, send))}
	}
	// deltaRan is the plan once both pods of a Delta transfer ended.
	deltaRan := transferPlan{DeleteActivePods: true, BlobNodes: []string{"n1", "n2"},
		Delta: placement.Delta{SenderNodes: []string{"n2"}, ReceiverNodes: []string{"n1", "n2"}}}
	deltaRanPinned := deltaRan
	deltaRanPinned.Delta = placement.Delta{SenderNodes: []string{"n2"}, NoBaseNode: "n9"}
	sum, other := strings.Repeat("ab", 32), strings.Repeat("cd", 32)

	type want struct {
		phase    pfsv1alpha1.Phase
		attempts int32
		conds    map[string]string
		plan     transferPlan
		msg      string   // Failed or Succeeded message, when checked
		events   []string // Event reasons in order, when checked
		event    string   // the first Event's message, when checked
		delta    *pfsv1alpha1.DeltaStatus
	}
	tests := map[string]struct {
		x    *pfsv1alpha1.PfsTransfer
		obs  transferObservation
		want want
	}{
		"new transfer: receiver first": {x: base(),
			want: want{phase: "Placing", conds: map[string]string{"Placed": "False/PodsPending", "Succeeded": "False/ReceiverNotReady"},
				plan: transferPlan{CreateReceiver: true}}},
		"blob not found: wait": {x: base(withBlob),
			want: want{phase: "Pending", conds: map[string]string{"Placed": "False/BlobNotFound", "Succeeded": "False/BlobNotFound"}}},
		"blob without Ready nodes: wait": {x: base(withBlob), obs: transferObservation{Blob: readyBlobObj("64Mi")},
			want: want{phase: "Pending", conds: map[string]string{"Placed": "False/BlobNotReady", "Succeeded": "False/BlobNotReady"}}},
		"range past the blob: fail": {x: base(withBlob, func(x *pfsv1alpha1.PfsTransfer) {
			x.Spec.Range = &pfsv1alpha1.Range{Offset: resource.MustParse("60Mi"), Length: resource.MustParse("8Mi")}
		}), obs: transferObservation{Blob: readyBlobObj("64Mi", "n1")},
			want: want{phase: "Failed", conds: map[string]string{"Failed": "True/RangeOutOfBounds", "Succeeded": "False/RangeOutOfBounds"},
				plan: transferPlan{DeleteActivePods: true}, msg: "range [62914560, 71303168) ends past the end of PfsBlob b (67108864 bytes)"}},
		"blob Ready: receiver restricted to its nodes": {x: base(withBlob), obs: transferObservation{Blob: readyBlobObj("64Mi", "n2", "n1")},
			want: want{phase: "Placing", conds: map[string]string{"Placed": "False/PodsPending", "Succeeded": "False/ReceiverNotReady"},
				plan: transferPlan{CreateReceiver: true, BlobNodes: []string{"n1", "n2"}}}},
		"receiver running but not ready: no sender": {x: base(status(recvCreated)),
			obs:  transferObservation{Receiver: testPod("x-a0-recv", "receiver", onNode("n1"), isRunning(false))},
			want: want{phase: "Placing", conds: map[string]string{"Placed": "False/PodsPending", "Succeeded": "False/ReceiverNotReady"}}},
		"receiver ready: sender to its pod IP": {x: base(status(recvCreated)), obs: transferObservation{Receiver: recvReady},
			want: want{phase: "Placing", conds: map[string]string{"Placed": "False/PodsPending", "Succeeded": "False/Running"},
				plan: transferPlan{CreateSender: true, ReceiverAddr: placement.Address{IP: "10.0.0.5"}}}},
		"receiver ready but its secondary network is not reported yet": {
			x:    base(status(recvCreated), func(x *pfsv1alpha1.PfsTransfer) { x.Spec.Receiver.Network = "datanet" }),
			obs:  transferObservation{Receiver: recvReady},
			want: want{phase: "Placing", conds: map[string]string{"Placed": "False/PodsPending", "Succeeded": "False/ReceiverNotReady"}}},
		"receiver unschedulable, within the timeout": {x: base(status(recvCreated)),
			obs:  transferObservation{Receiver: testPod("x-a0-recv", "receiver", unschedulable(t0.Add(-20*time.Second)))},
			want: want{phase: "Placing", conds: map[string]string{"Placed": "False/PodsPending"}, plan: transferPlan{RequeueAfter: 40 * time.Second}}},
		"receiver deleted: attempt failed, retried after the backoff": {
			x: base(status(recvCreated), func(x *pfsv1alpha1.PfsTransfer) { x.Spec.BackoffLimit = ptr.To(int32(2)) }),
			want: want{phase: "Pending", attempts: 1, conds: map[string]string{"Succeeded": "False/PodFailed"},
				plan: transferPlan{DeleteActivePods: true, RequeueAfter: 10 * time.Second},
				msg:  "attempt 1 failed: receiver pod x-a0-recv was deleted before the transfer finished; retrying in 10s"}},
		"receiver deleted while the blob has no Ready copy: wait for the blob": {x: base(withBlob, status(recvCreated)),
			obs:  transferObservation{Blob: readyBlobObj("64Mi")},
			want: want{phase: "Pending", conds: map[string]string{"Placed": "False/BlobNotReady", "Succeeded": "False/BlobNotReady"}, events: []string{}}},
		"blob deleted under the pods: fail": {x: base(withBlob, status(recvCreated)),
			obs: transferObservation{Receiver: testPod("x-a0-recv", "receiver", onNode("n1"), isRunning(false))},
			want: want{phase: "Failed", conds: map[string]string{"Failed": "True/BlobDeleted", "Succeeded": "False/BlobDeleted"},
				plan: transferPlan{DeleteActivePods: true}, msg: "PfsBlob b was deleted while the transfer used it", events: []string{"BlobDeleted"}}},
		"backoff not over: wait": {
			x: base(func(x *pfsv1alpha1.PfsTransfer) {
				x.Spec.BackoffLimit = ptr.To(int32(2))
				x.Status = pfsv1alpha1.PfsTransferStatus{Phase: "Pending", FailedAttempts: 2, LastFailureTime: &metav1.Time{Time: t0.Add(-5 * time.Second)}}
			}),
			want: want{phase: "Pending", attempts: 2, plan: transferPlan{RequeueAfter: 15 * time.Second}}},
		"backoff over: next attempt": {
			x: base(func(x *pfsv1alpha1.PfsTransfer) {
				x.Spec.BackoffLimit = ptr.To(int32(2))
				x.Status = pfsv1alpha1.PfsTransferStatus{Phase: "Pending", FailedAttempts: 1, LastFailureTime: &metav1.Time{Time: t0.Add(-10 * time.Second)}}
			}),
			want: want{phase: "Placing", attempts: 1, conds: map[string]string{"Placed": "False/PodsPending", "Succeeded": "False/ReceiverNotReady"},
				plan: transferPlan{CreateReceiver: true}}},
		"sender failed, no retries left": {x: base(status(bothCreated)),
			obs: transferObservation{Receiver: recvReady, Sender: testPod("x-a0-send", "sender", isTerminated(1, "Error", `{"ok":false,"error":"send: connect: refused"}`))},
			want: want{phase: "Failed", attempts: 1, conds: map[string]string{"Failed": "True/BackoffLimitExceeded", "Succeeded": "False/BackoffLimitExceeded"},
				plan: transferPlan{DeleteActivePods: true},
				msg:  "1 attempt(s) failed and spec.backoffLimit is 0; last failure: PodFailed: sender: pod x-a0-send exited with code 1: send: connect: refused"}},
		"Required NUMA: a topology error is final": {
			x: base(status(recvCreated), func(x *pfsv1alpha1.PfsTransfer) {
				x.Spec.NUMA, x.Spec.BackoffLimit = pfsv1alpha1.NUMAPolicyRequired, ptr.To(int32(3))
			}),
			obs: transferObservation{Receiver: testPod("x-a0-recv", "receiver", onNode("n1"), podReason("TopologyAffinityError", "no single NUMA node"))},
			want: want{phase: "Failed", attempts: 1, conds: map[string]string{"Failed": "True/TopologyAffinityError", "Succeeded": "False/TopologyAffinityError"},
				plan: transferPlan{DeleteActivePods: true}}},
		"both sides running": {x: base(status(bothCreated)),
			obs: transferObservation{Receiver: recvReady, Sender: testPod("x-a0-send", "sender", onNode("n2"), isRunning(false))},
			want: want{phase: "Running", conds: map[string]string{"Placed": "True/PodsScheduled", "Succeeded": "False/Running"},
				events: []string{"PodsScheduled", "Running"}}},
		"both succeeded: results merged": {x: base(status(bothCreated)), obs: transferObservation{Receiver: okRecv, Sender: okSend},
			want: want{phase: "Succeeded", conds: map[string]string{"Placed": "True/PodsScheduled", "Succeeded": "True/Completed"},
				plan: transferPlan{DeleteActivePods: true},
				msg:  "moved 100000000 bytes in 0.500s: 200.0 MB/s, 200.0 MB/CPU-s, integrity OK"}},
		"sender's result truncated": {x: base(status(bothCreated)),
			obs: transferObservation{Receiver: okRecv, Sender: testPod("x-a0-send", "sender", onNode("n2"), isTerminated(0, "Completed", `{"ok":true,"bytes":100`))},
			want: want{phase: "Failed", conds: map[string]string{"Placed": "True/PodsScheduled", "Failed": "True/ResultInvalid", "Succeeded": "False/ResultInvalid"},
				plan: transferPlan{DeleteActivePods: true},
				msg:  "sender pod x-a0-send: termination message is truncated JSON (22 bytes; the kubelet keeps at most 4096)"}},
		"both sides report a mismatch": {x: base(status(bothCreated), func(x *pfsv1alpha1.PfsTransfer) { x.Spec.BackoffLimit = ptr.To(int32(3)) }),
			obs: transferObservation{
				Receiver: testPod("x-a0-recv", "receiver", onNode("n1"), isTerminated(3, "Error", side("receiver", 0.5, 0.1, 0.2, "ffff", "MISMATCH"))),
				Sender:   testPod("x-a0-send", "sender", onNode("n2"), isTerminated(3, "Error", side("sender", 0.5, 0.1, 0.2, "abcd", "MISMATCH")))},
			want: want{phase: "Failed", attempts: 1, conds: map[string]string{"Placed": "True/PodsScheduled", "Failed": "True/IntegrityMismatch", "Succeeded": "False/IntegrityMismatch"},
				plan: transferPlan{DeleteActivePods: true}, msg: "CRC32C checksums differ: sender abcd, receiver ffff"}},
		"deadline passed": {x: base(func(x *pfsv1alpha1.PfsTransfer) { x.Spec.ActiveDeadlineSeconds = ptr.To(int64(60)) }),
			want: want{phase: "Failed", conds: map[string]string{"Failed": "True/DeadlineExceeded", "Succeeded": "False/DeadlineExceeded"},
				plan: transferPlan{DeleteActivePods: true}}},
		"both sides running, 25 s before the deadline: woken at it": {
			x:   base(status(bothCreated), func(x *pfsv1alpha1.PfsTransfer) { x.Spec.ActiveDeadlineSeconds = ptr.To(int64(3600 + 25)) }),
			obs: transferObservation{Receiver: recvReady, Sender: testPod("x-a0-send", "sender", onNode("n2"), isRunning(false))},
			want: want{phase: "Running", conds: map[string]string{"Placed": "True/PodsScheduled", "Succeeded": "False/Running"},
				plan: transferPlan{RequeueAfter: 25 * time.Second}, events: []string{"PodsScheduled", "Running"}}},
		"backoff over the deadline: woken at the deadline, not the backoff's end": {
			x: base(func(x *pfsv1alpha1.PfsTransfer) {
				x.Spec.BackoffLimit, x.Spec.ActiveDeadlineSeconds = ptr.To(int32(2)), ptr.To(int64(3600+5))
				x.Status = pfsv1alpha1.PfsTransferStatus{Phase: "Pending", FailedAttempts: 2, LastFailureTime: &metav1.Time{Time: t0.Add(-5 * time.Second)}}
			}),
			want: want{phase: "Pending", attempts: 2, plan: transferPlan{RequeueAfter: 5 * time.Second}}},
		"finished, TTL not over": {x: base(func(x *pfsv1alpha1.PfsTransfer) {
			x.Spec.TTLSecondsAfterFinished = ptr.To(int32(60))
			x.Status = pfsv1alpha1.PfsTransferStatus{Phase: "Succeeded", CompletionTime: &metav1.Time{Time: t0.Add(-20 * time.Second)}}
		}), want: want{phase: "Succeeded", plan: transferPlan{DeleteActivePods: true, RequeueAfter: 40 * time.Second}}},
		"the apiserver refused the receiver: the old status, Placed says why": {x: base(),
			obs:  transferObservation{CreateFailed: &createFailure{Pod: "x-a0-recv", Err: refusedByPSA}},
			want: want{conds: map[string]string{"Placed": "False/PodsPending"}, events: []string{"PodsPending"}}},
		"the apiserver refused the sender: status names no sender": {x: base(status(recvCreated)),
			obs:  transferObservation{Receiver: recvReady, CreateFailed: &createFailure{Pod: "x-a0-send", Err: refusedByPSA}},
			want: want{phase: "Placing", conds: map[string]string{"Placed": "False/PodsPending"}, events: []string{"PodsPending"}}},
		"a create that failed otherwise changes nothing": {x: base(status(recvCreated)),
			obs:  transferObservation{Receiver: recvReady, CreateFailed: &createFailure{Pod: "x-a0-send", Err: apierrors.NewTimeoutError("slow", 1)}},
			want: want{phase: "Placing", events: []string{}}},
		"delta: source not found: wait": {x: base(withDelta), obs: transferObservation{Blob: base12},
			want: want{phase: "Pending", conds: map[string]string{"Placed": "False/BlobNotFound", "Succeeded": "False/BlobNotFound"},
				msg: "PfsBlob new (spec.delta.sourceRef) not found in namespace ns"}},
		"delta: no node holds both: wait": {x: base(withDelta), obs: transferObservation{Blob: readyBlobObj("64Mi", "n1"), Source: source2},
			want: want{phase: "Pending", conds: map[string]string{"Placed": "False/BlobNotReady", "Succeeded": "False/BlobNotReady"}}},
		"delta: receiver created where the base is": {x: base(withDelta), obs: transferObservation{Blob: base12, Source: source2},
			want: want{phase: "Placing", conds: map[string]string{"Placed": "False/PodsPending", "Succeeded": "False/ReceiverNotReady"},
				plan: transferPlan{CreateReceiver: true, BlobNodes: []string{"n1", "n2"},
					Delta: placement.Delta{SenderNodes: []string{"n2"}, ReceiverNodes: []string{"n1", "n2"}}},
				delta: &pfsv1alpha1.DeltaStatus{Encoding: "Delta"}, event: "Created receiver pod x-a0-recv (attempt 1)"}},
		"delta: receiver pinned where the base is not Ready: a full copy, said in status and the Event": {x: base(withDelta, pinReceiver),
			obs: transferObservation{Blob: base12, Source: source2},
			want: want{phase: "Placing", conds: map[string]string{"Placed": "False/PodsPending", "Succeeded": "False/ReceiverNotReady"},
				plan: transferPlan{CreateReceiver: true, BlobNodes: []string{"n1", "n2"},
					Delta: placement.Delta{SenderNodes: []string{"n2"}, NoBaseNode: "n9"}},
				delta: fullCopy, event: "Created receiver pod x-a0-recv (attempt 1); base old not Ready on node n9: sent as a full compressed copy"}},
		"delta: the receiver listens, the sender waits for a node with both blobs": {
			x:   base(withDelta, status(recvCreated)),
			obs: transferObservation{Blob: base12, Source: readyBlobObj("64Mi", "n3"), Receiver: recvReady},
			want: want{phase: "Placing", conds: map[string]string{"Placed": "False/BlobNotReady", "Succeeded": "False/BlobNotReady"},
				plan: transferPlan{BlobNodes: []string{"n1", "n2"}, Delta: placement.Delta{ReceiverNodes: []string{"n1", "n2"}}},
				msg: "no node holds Ready copies of both PfsBlob old (the base, spec.blobRef) and PfsBlob new (the source, spec.delta.sourceRef) yet: " +
					"the sender reads both on its node"}},
		"delta: the receiver listens, the sender goes where both blobs are": {
			x: base(withDelta, status(recvCreated)), obs: transferObservation{Blob: base12, Source: source2, Receiver: recvReady},
			want: want{phase: "Placing", conds: map[string]string{"Placed": "False/PodsPending", "Succeeded": "False/Running"},
				plan: transferPlan{CreateSender: true, ReceiverAddr: placement.Address{IP: "10.0.0.5"}, BlobNodes: []string{"n1", "n2"},
					Delta: placement.Delta{SenderNodes: []string{"n2"}, ReceiverNodes: []string{"n1", "n2"}}}}},
		"delta: both succeeded: status.delta": {x: base(withDelta, deltaRunning(&pfsv1alpha1.DeltaStatus{Encoding: "Delta"})),
			obs: deltaEnded(deltaSide("receiver", false, sum, "OK"), deltaSide("sender", false, sum, "OK"), 0),
			want: want{phase: "Succeeded", conds: map[string]string{"Placed": "True/PodsScheduled", "Succeeded": "True/Completed"}, plan: deltaRan,
				delta: &pfsv1alpha1.DeltaStatus{Encoding: "Delta", BaseBytes: 900000, EffectiveBytes: 1000000, WireBytes: 137000, Ratio: "7.30",
					Bound: "Wire", Threads: 2,
					Stages: &pfsv1alpha1.DeltaStages{IndexSeconds: "0.250", EncodeSeconds: "0.500", ApplySeconds: "0.125", VerifySeconds: "0.062"},
					Regions: &pfsv1alpha1.DeltaRegions{Same: &pfsv1alpha1.DeltaRegionCount{Count: 9, Bytes: 800000},
						XOR:  &pfsv1alpha1.DeltaRegionCount{Count: 1, Bytes: 100000, WireBytes: 37000},
						Zstd: &pfsv1alpha1.DeltaRegionCount{Count: 1, Bytes: 100000, WireBytes: 100000}}},
				msg: "moved 1000000 bytes in 0.500s: 2.0 MB/s, 1.3 MB/CPU-s, integrity OK; delta: 137000 bytes on the wire, ratio 7.30"}},
		"delta: a full copy succeeded: the planned reason stays": {x: base(withDelta, pinReceiver, deltaRunning(fullCopy)),
			obs: deltaEnded(deltaSide("receiver", true, sum, "OK"), deltaSide("sender", true, sum, "OK"), 0),
			want: want{phase: "Succeeded", conds: map[string]string{"Placed": "True/PodsScheduled", "Succeeded": "True/Completed"}, plan: deltaRanPinned,
				msg: "moved 1000000 bytes in 0.500s: 2.0 MB/s, 1.3 MB/CPU-s, integrity OK; " +
					"base old not Ready on node n9: sent as a full compressed copy; 137000 bytes on the wire, ratio 7.30"}},
		"delta: the rebuilt source's sha256 differs": {x: base(withDelta, deltaRunning(&pfsv1alpha1.DeltaStatus{Encoding: "Delta"})),
			obs: deltaEnded(deltaSide("receiver", false, other, "MISMATCH"), deltaSide("sender", false, sum, "MISMATCH"), 3),
			want: want{phase: "Failed", attempts: 1, conds: map[string]string{"Placed": "True/PodsScheduled", "Failed": "True/IntegrityMismatch", "Succeeded": "False/IntegrityMismatch"},
				plan: deltaRan, msg: "SHA256 checksums differ: sender " + sum + ", receiver " + other}},
		"delta: a side without its delta member: ResultInvalid": {x: base(withDelta, deltaRunning(&pfsv1alpha1.DeltaStatus{Encoding: "Delta"})),
			// A sender that does not say it ran in delta mode: its "delta" is not read.
			obs: deltaEnded(deltaSide("receiver", false, sum, "OK"),
				strings.Replace(deltaSide("sender", false, sum, "OK"), `"mode":"delta"`, `"mode":"offset","checksum":"0xab"`, 1), 0),
			want: want{phase: "Failed", conds: map[string]string{"Placed": "True/PodsScheduled", "Failed": "True/ResultInvalid", "Succeeded": "False/ResultInvalid"},
				plan: deltaRan, msg: `mode Delta, but a side reported no "delta" member (sender false, receiver true)`}},
		"finished, TTL over: pods go, the transfer stays": {x: base(func(x *pfsv1alpha1.PfsTransfer) {
			x.Spec.TTLSecondsAfterFinished = ptr.To(int32(60))
			x.Status = pfsv1alpha1.PfsTransferStatus{Phase: "Failed", CompletionTime: &metav1.Time{Time: t0.Add(-time.Minute)}}
		}), want: want{phase: "Failed", plan: transferPlan{DeleteActivePods: true, DeleteAllPods: true}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.obs.Now, tc.obs.Timing = t0, timing
			st, plan := decideTransfer(tc.x, tc.obs)
			if tc.obs.CreateFailed != nil && st.Sender != nil {
				t.Errorf("status names sender %+v, which was not created", st.Sender)
			}
			if st.Phase != tc.want.phase || st.FailedAttempts != tc.want.attempts {
				t.Errorf("phase %q attempts %d, want %q %d", st.Phase, st.FailedAttempts, tc.want.phase, tc.want.attempts)
			}
			wantConds := tc.want.conds
			if wantConds == nil {
				wantConds = map[string]string{}
			}
			if diff := cmp.Diff(wantConds, condSummary(st.Conditions)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want.plan, plan, cmpopts.IgnoreFields(transferPlan{}, "Events"), cmpopts.EquateEmpty()); diff != "" {
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
			for _, e := range plan.Events {
				if e.Reason == "" || (e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning) {
					t.Errorf("bad event %+v", e)
				}
				// An Event names the step with the reason of the condition
				// that step set, so `kubectl describe` and status agree.
				if !hasReason(st.Conditions, e.Reason) {
					t.Errorf("event reason %s matches no condition: %v", e.Reason, condSummary(st.Conditions))
				}
			}
			if tc.want.delta != nil {
				if diff := cmp.Diff(tc.want.delta, st.Delta); diff != "" {
					t.Errorf("status.delta (-want +got):\n%s", diff)
				}
			}
			if tc.want.event != "" && (len(plan.Events) == 0 || plan.Events[0].Message != tc.want.event) {
				t.Errorf("events %+v, want the first saying %q", plan.Events, tc.want.event)
			}
			if tc.want.events != nil {
				if diff := cmp.Diff(tc.want.events, eventReasons(plan.Events), cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("event reasons (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestMergeTransfer(t *testing.T) {
	x := &pfsv1alpha1.PfsTransfer{Spec: pfsv1alpha1.PfsTransferSpec{Integrity: pfsv1alpha1.IntegrityCRC32C}}
	s := &result.Transfer{OK: true, Measured: true, Bytes: 1e9, WireBytes: 1e9 + 10, ElapsedSeconds: 1.0, UserSeconds: 0.25, SysSeconds: 0.25,
		Integrity: "OK", Checksum: "12", Grams: 10, AFXDPMode: "copy", CPUs: []int{2, 3}, NUMANode: ptr.To(int32(1))}
	r := &result.Transfer{OK: true, Measured: true, Bytes: 1e9, WireBytes: 1e9 + 20, ElapsedSeconds: 2.0, UserSeconds: 0.5, SysSeconds: 0.5,
		Integrity: "OK", Checksum: "12", Grams: 10, DecodeErrors: 1, Repaired: 3}
	var st pfsv1alpha1.PfsTransferStatus
	if err := mergeTransfer(x, s, r, &st); err != nil {
		t.Fatal(err)
	}
	want := pfsv1alpha1.PfsTransferStatus{
		EffectiveBytes: 1e9, WireBytes: 1e9 + 20, ElapsedSeconds: "2.000", EffectiveMBps: "500.0",
		CPU: &pfsv1alpha1.CPUTime{UserSeconds: "0.750", SysSeconds: "0.750"}, MBPerCPUSecond: "666.7",
		Integrity: &pfsv1alpha1.IntegrityStatus{Algorithm: "CRC32C", Result: "OK", SenderChecksum: "12", ReceiverChecksum: "12"},
		Grams:     &pfsv1alpha1.GramCounters{Sent: 10, Received: 10, Rejected: 1, Repaired: 3},
		Sender: &pfsv1alpha1.EndpointStatus{Placement: pfsv1alpha1.Placement{CPUs: "2-3", NUMAZone: ptr.To(int32(1))},
			CPU: &pfsv1alpha1.CPUTime{UserSeconds: "0.250", SysSeconds: "0.250"}, AFXDPBindMode: "Copy"},
		Receiver: &pfsv1alpha1.EndpointStatus{CPU: &pfsv1alpha1.CPUTime{UserSeconds: "0.500", SysSeconds: "0.500"}},
	}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("merged status (-want +got):\n%s", diff)
	}

	bad := *r
	bad.Bytes = 5
	if err := mergeTransfer(x, s, &bad, &st); err == nil {
		t.Error("differing byte counts must be an error")
	}
	none := &pfsv1alpha1.PfsTransfer{Spec: pfsv1alpha1.PfsTransferSpec{Integrity: pfsv1alpha1.IntegrityNone}}
	s2, r2 := *s, *r
	s2.Checksum, r2.Checksum = "", ""
	if err := mergeTransfer(none, &s2, &r2, &st); err != nil || st.Integrity.Result != pfsv1alpha1.IntegrityNotChecked {
		t.Errorf("integrity None: err %v result %q", err, st.Integrity.Result)
	}
	if err := mergeTransfer(x, &s2, &r2, &st); err == nil {
		t.Error("CRC32C without checksums must be an error")
	}
}
