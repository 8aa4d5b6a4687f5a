// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/placement"
	"packetfs.io/operator/internal/podspec"
)

func numaTransfer(policy pfsv1alpha1.NUMAPolicy, backoffLimit int32, st pfsv1alpha1.PfsTransferStatus) *pfsv1alpha1.PfsTransfer {
	return &pfsv1alpha1.PfsTransfer{
		ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns", Generation: 1, CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))},
		Spec: pfsv1alpha1.PfsTransferSpec{Mode: pfsv1alpha1.ModePayload, Transport: pfsv1alpha1.TransportTCP,
			BackoffLimit: ptr.To(backoffLimit), NUMA: policy},
		Status: st,
	}
}

// A TopologyAffinityError records the node (and the zone the operator had
// chosen there) as a misfit. Preferred places the next attempt elsewhere
// without counting it against backoffLimit, once per node; Required fails.
func TestTransferTopologyAffinityErrorMisfits(t *testing.T) {
	placed := pfsv1alpha1.PfsTransferStatus{Phase: pfsv1alpha1.PhasePlacing,
		Receiver: &pfsv1alpha1.EndpointStatus{Placement: pfsv1alpha1.Placement{Pod: "x-a0-recv"},
			NUMAPlacement: &pfsv1alpha1.NUMAPlacement{Node: "n1", Zone: ptr.To[int32](1), Fit: pfsv1alpha1.NUMAFitSingleZone}}}
	rejected := func(node string) *corev1.Pod {
		return testPod("x-a0-recv", "receiver", onNode(node), podReason("TopologyAffinityError", "Resources cannot be allocated with Topology locality"))
	}
	misfitN1 := []pfsv1alpha1.NUMAMisfit{{Node: "n1", Zone: ptr.To[int32](1), Pod: "x-a0-recv"}}
	tests := map[string]struct {
		x         *pfsv1alpha1.PfsTransfer
		pod       *corev1.Pod
		phase     pfsv1alpha1.Phase
		reason    string
		misfits   []pfsv1alpha1.NUMAMisfit
		msg       string
		requeueAt bool
	}{
		"Preferred, backoffLimit 0: placed again elsewhere": {
			x: numaTransfer(pfsv1alpha1.NUMAPolicyPreferred, 0, placed), pod: rejected("n1"),
			phase: pfsv1alpha1.PhasePending, reason: pfsv1alpha1.ReasonTopologyAffinityError, misfits: misfitN1,
			msg: "node n1 recorded as a misfit: the next attempt is placed elsewhere", requeueAt: true,
		},
		"Preferred, the same node again: counted": {
			x: func() *pfsv1alpha1.PfsTransfer {
				st := *placed.DeepCopy()
				st.FailedAttempts, st.NUMAMisfits = 1, misfitN1
				st.Receiver.Pod = "x-a1-recv"
				return numaTransfer(pfsv1alpha1.NUMAPolicyPreferred, 0, st)
			}(),
			pod:   testPod("x-a1-recv", "receiver", onNode("n1"), podReason("TopologyAffinityError", "again")),
			phase: pfsv1alpha1.PhaseFailed, reason: pfsv1alpha1.ReasonBackoffLimitExceeded, misfits: misfitN1,
			msg: "2 attempt(s) failed and spec.backoffLimit is 0",
		},
		"Required: fails, with the misfit recorded": {
			x: numaTransfer(pfsv1alpha1.NUMAPolicyRequired, 3, placed), pod: rejected("n1"),
			phase: pfsv1alpha1.PhaseFailed, reason: pfsv1alpha1.ReasonTopologyAffinityError, misfits: misfitN1,
			msg: "node n1 recorded as a misfit",
		},
		"None: the operator did not place it, nothing recorded": {
			x: numaTransfer(pfsv1alpha1.NUMAPolicyNone, 0, placed), pod: rejected("n1"),
			phase: pfsv1alpha1.PhaseFailed, reason: pfsv1alpha1.ReasonBackoffLimitExceeded,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.x.Status.FailedAttempts == 0 {
				tc.x.Status.Receiver.Pod = "x-a0-recv"
			}
			st, plan := decideTransfer(tc.x, transferObservation{Now: t0, Timing: DefaultTiming, Receiver: tc.pod})
			if st.Phase != tc.phase {
				t.Errorf("phase %s, want %s; conditions %v", st.Phase, tc.phase, condSummary(st.Conditions))
			}
			if !hasReason(st.Conditions, tc.reason) {
				t.Errorf("no condition with reason %s: %v", tc.reason, condSummary(st.Conditions))
			}
			if diff := cmp.Diff(tc.misfits, st.NUMAMisfits); diff != "" {
				t.Errorf("numaMisfits (-want +got):\n%s", diff)
			}
			if msg := condMessage(st.Conditions, pfsv1alpha1.ConditionSucceeded); !strings.Contains(msg, tc.msg) {
				t.Errorf("message %q does not say %q", msg, tc.msg)
			}
			if tc.requeueAt && (plan.RequeueAfter == 0 || !plan.DeleteActivePods) {
				t.Errorf("a retry deletes the rejected pod and requeues: %+v", plan)
			}
		})
	}
}

// A decision is recorded on its side and as a NUMAPlaced Event; "no fit"
// keeps the old status, says why in Placed, waits and rechecks; when every
// candidate is a misfit the transfer fails.
func TestTransferNUMADecisionStatus(t *testing.T) {
	d := placement.Decision{Node: "w1", Zone: ptr.To[int32](0), Fit: placement.FitZone, Reason: "node w1 zone node-0: 2 cpu free"}
	x := numaTransfer(pfsv1alpha1.NUMAPolicyRequired, 0, pfsv1alpha1.PfsTransferStatus{})
	st, plan := decideTransfer(x, transferObservation{Now: t0, Timing: DefaultTiming})
	if !plan.CreateReceiver {
		t.Fatalf("plan %+v", plan)
	}
	recordPlacement(&st, &plan, placedPod{Component: podspec.ComponentReceiver, Pod: "x-a0-recv", Decision: d})
	want := &pfsv1alpha1.NUMAPlacement{Node: "w1", Zone: ptr.To[int32](0), Fit: pfsv1alpha1.NUMAFitSingleZone, Reason: d.Reason}
	if diff := cmp.Diff(want, st.Receiver.NUMAPlacement); diff != "" {
		t.Errorf("receiver.numaPlacement (-want +got):\n%s", diff)
	}
	last := plan.Events[len(plan.Events)-1]
	if last.Reason != pfsv1alpha1.ReasonNUMAPlaced || last.Message != "receiver pod x-a0-recv: "+d.Reason {
		t.Errorf("event %+v", last)
	}

	noFit := &placedPod{Component: podspec.ComponentSender, Pod: "x-a0-send",
		Decision: placement.Decision{Fit: placement.FitNone, Reason: "no candidate node fits (spec.numa Required): w1: its zones together lack cpu"}}
	old := pfsv1alpha1.PfsTransferStatus{Phase: pfsv1alpha1.PhasePlacing, Receiver: st.Receiver}
	x = numaTransfer(pfsv1alpha1.NUMAPolicyRequired, 0, old)
	st, plan = decideNoFit(x, transferObservation{Now: t0, Timing: DefaultTiming}, *noFit)
	if st.Phase != pfsv1alpha1.PhasePlacing || st.Sender != nil || plan.RequeueAfter != noFitRecheck || plan.CreateSender {
		t.Errorf("no fit: phase %s, sender %+v, plan %+v", st.Phase, st.Sender, plan)
	}
	if got := condSummary(st.Conditions)[pfsv1alpha1.ConditionPlaced]; got != "False/NoNUMAFit" {
		t.Errorf("Placed = %s", got)
	}
	if msg := condMessage(st.Conditions, pfsv1alpha1.ConditionPlaced); msg != "sender pod x-a0-send is not created: "+noFit.Decision.Reason {
		t.Errorf("Placed message %q", msg)
	}
	if diff := cmp.Diff([]string{pfsv1alpha1.ReasonNoNUMAFit}, eventReasons(plan.Events)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	x.Status = st // still no fit: no second Warning
	if _, plan = decideNoFit(x, transferObservation{Now: t0, Timing: DefaultTiming}, *noFit); len(plan.Events) != 0 {
		t.Errorf("a repeated no-fit emits %v", eventReasons(plan.Events))
	}

	noFit.Decision.OnlyMisfits = true
	st, _ = decideNoFit(x, transferObservation{Now: t0, Timing: DefaultTiming}, *noFit)
	if st.Phase != pfsv1alpha1.PhaseFailed || !hasReason(st.Conditions, pfsv1alpha1.ReasonTopologyAffinityError) {
		t.Errorf("every candidate a misfit: phase %s, %v", st.Phase, condSummary(st.Conditions))
	}
}

// A wait for a stale NodeResourceTopology to catch up says so in Placed,
// rechecks when the decision asks, emits no Warning and starts no
// unschedulable clock.
func TestTransferNUMATopologyCatchUp(t *testing.T) {
	wait := &placedPod{Component: podspec.ComponentReceiver, Pod: "x-a0-recv",
		Decision: placement.Decision{Fit: placement.FitNone, RecheckAfter: 6 * time.Second, Stale: true,
			Reason: "node w1: its NodeResourceTopology shows no zone with room (zone node-0 lacks cpu); waiting 6s more"}}
	x := numaTransfer(pfsv1alpha1.NUMAPolicyPreferred, 0, pfsv1alpha1.PfsTransferStatus{})
	st, plan := decideNoFit(x, transferObservation{Now: t0, Timing: DefaultTiming}, *wait)
	if st.Phase != pfsv1alpha1.PhasePending || st.Receiver != nil || plan.RequeueAfter != 6*time.Second || plan.CreateReceiver {
		t.Errorf("catch-up: phase %s, receiver %+v, plan %+v", st.Phase, st.Receiver, plan)
	}
	if got := condSummary(st.Conditions)[pfsv1alpha1.ConditionPlaced]; got != "False/TopologyCatchUp" {
		t.Errorf("Placed = %s", got)
	}
	if msg := condMessage(st.Conditions, pfsv1alpha1.ConditionPlaced); msg != "receiver pod x-a0-recv waits: "+wait.Decision.Reason {
		t.Errorf("Placed message %q", msg)
	}
	if len(plan.Events) != 0 {
		t.Errorf("a catch-up wait emits %v", eventReasons(plan.Events))
	}
	// The next decision is told when the wait began, so a node whose pods
	// keep changing cannot extend it.
	if got := catchUpSince(st.Conditions); !got.Equal(t0) {
		t.Errorf("catchUpSince = %s, want %s", got, t0)
	}
	if got := catchUpSince(nil); !got.IsZero() {
		t.Errorf("catchUpSince without a wait = %s", got)
	}
}

// A decision whose status write was lost (a conflict after the pod was
// created) comes back from the pod's annotation.
func TestTransferNUMAPlacementFromPod(t *testing.T) {
	x := numaTransfer(pfsv1alpha1.NUMAPolicyPreferred, 0, pfsv1alpha1.PfsTransferStatus{Phase: pfsv1alpha1.PhasePlacing})
	want := &pfsv1alpha1.NUMAPlacement{Node: "n1", Zone: ptr.To[int32](1), Fit: pfsv1alpha1.NUMAFitSingleZone, Reason: "node n1 zone node-1: 2 cpu free"}
	in := podspec.TransferInputs{NUMA: want}
	recv := podspec.ReceiverPod(podspec.Config{Binary: "/pfs"}, x, in)
	recv.Spec.NodeName = "n1"
	st, _ := decideTransfer(x, transferObservation{Now: t0, Timing: DefaultTiming, Receiver: recv})
	if st.Receiver == nil {
		t.Fatal("no receiver status")
	}
	if diff := cmp.Diff(want, st.Receiver.NUMAPlacement); diff != "" {
		t.Errorf("receiver.numaPlacement (-want +got):\n%s", diff)
	}
}

// No node fitting is waited out like an unschedulable pod: from the first
// no-fit (not from the transfer's creation), then Failed, Unschedulable.
func TestTransferNoFitTimesOut(t *testing.T) {
	noFit := &placedPod{Component: podspec.ComponentReceiver, Pod: "x-a0-recv",
		Decision: placement.Decision{Fit: placement.FitNone, Reason: "no candidate node fits (spec.numa Preferred): n1: node lacks packetfs.io/pfsdata9 (0 free, 1 needed)"}}
	x := numaTransfer(pfsv1alpha1.NUMAPolicyPreferred, 0, pfsv1alpha1.PfsTransferStatus{Phase: pfsv1alpha1.PhasePending,
		Conditions: []metav1.Condition{{Type: pfsv1alpha1.ConditionPlaced, Status: metav1.ConditionFalse, Reason: pfsv1alpha1.ReasonQueued,
			LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))}}})
	timing := Timing{UnschedulableTimeout: 2 * time.Minute, BackoffBase: time.Second, BackoffMax: time.Minute}
	st, plan := decideNoFit(x, transferObservation{Now: t0, Timing: timing}, *noFit)
	if st.Phase.IsTerminal() || plan.RequeueAfter != noFitRecheck {
		t.Fatalf("first no-fit after an hour in the queue: phase %s, plan %+v", st.Phase, plan)
	}
	x.Status = st
	st, plan = decideNoFit(x, transferObservation{Now: t0.Add(110 * time.Second), Timing: timing}, *noFit)
	if st.Phase.IsTerminal() || plan.RequeueAfter != min(noFitRecheck, 10*time.Second) {
		t.Fatalf("before the timeout: phase %s, plan %+v", st.Phase, plan)
	}
	x.Status = st
	st, _ = decideNoFit(x, transferObservation{Now: t0.Add(2 * time.Minute), Timing: timing}, *noFit)
	c := meta.FindStatusCondition(st.Conditions, pfsv1alpha1.ConditionFailed)
	if st.Phase != pfsv1alpha1.PhaseFailed || c == nil || c.Reason != pfsv1alpha1.ReasonUnschedulable ||
		!strings.Contains(c.Message, "no node could take it within 2m0s: receiver pod x-a0-recv is not created: ") ||
		!strings.Contains(c.Message, "packetfs.io/pfsdata9") {
		t.Errorf("past the timeout: phase %s, %+v", st.Phase, c)
	}
}
