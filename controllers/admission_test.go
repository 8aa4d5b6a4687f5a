// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

func queued(created time.Time, name string) queueEntry {
	return queueEntry{UID: types.UID(name), Key: client.ObjectKey{Namespace: "ns", Name: name}, Created: created, Queued: true}
}

func TestAdmit(t *testing.T) {
	active := queueEntry{UID: "a", Active: true}
	done := queueEntry{UID: "d"} // finished: neither active nor queued
	self := queueEntry{UID: "s", Key: client.ObjectKey{Namespace: "ns", Name: "s"}, Created: t0}
	tests := map[string]struct {
		all   []queueEntry
		limit int
		want  queueState
	}{
		"no limit":                       {all: []queueEntry{active, active}, limit: 0, want: queueState{Admitted: true, Active: 2}},
		"a free slot":                    {all: []queueEntry{active, done, self}, limit: 2, want: queueState{Admitted: true, Active: 1, Limit: 2}},
		"full":                           {all: []queueEntry{active, {UID: "b", Active: true}}, limit: 2, want: queueState{Active: 2, Limit: 2}},
		"an older queued one goes first": {all: []queueEntry{active, queued(t0.Add(-time.Second), "q")}, limit: 2, want: queueState{Active: 1, Ahead: 1, Limit: 2}},
		"a younger queued one waits":     {all: []queueEntry{active, queued(t0.Add(time.Second), "q")}, limit: 2, want: queueState{Admitted: true, Active: 1, Limit: 2}},
		"same second: by name":           {all: []queueEntry{queued(t0, "z"), queued(t0, "a")}, limit: 1, want: queueState{Ahead: 1, Limit: 1}},
		"a transfer waiting for its blob does not hold the queue": {all: []queueEntry{{UID: "w", Created: t0.Add(-time.Hour)}}, limit: 1,
			want: queueState{Admitted: true, Limit: 1}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, admit(tc.all, self, tc.limit)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestEntryOf(t *testing.T) {
	x := func(st pfsv1alpha1.PfsTransferStatus) *pfsv1alpha1.PfsTransfer {
		return &pfsv1alpha1.PfsTransfer{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns", UID: "u"}, Status: st}
	}
	queuedCond := []metav1.Condition{{Type: pfsv1alpha1.ConditionPlaced, Status: metav1.ConditionFalse, Reason: pfsv1alpha1.ReasonQueued}}
	recv := &pfsv1alpha1.EndpointStatus{Placement: pfsv1alpha1.Placement{Pod: "x-a0-recv"}}
	tests := map[string]struct {
		st             pfsv1alpha1.PfsTransferStatus
		held           bool
		active, queued bool
	}{
		"new":                     {},
		"queued":                  {st: pfsv1alpha1.PfsTransferStatus{Phase: pfsv1alpha1.PhasePending, Conditions: queuedCond}, queued: true},
		"admitted, status behind": {st: pfsv1alpha1.PfsTransferStatus{Conditions: queuedCond}, held: true, active: true},
		"receiver created":        {st: pfsv1alpha1.PfsTransferStatus{Phase: pfsv1alpha1.PhasePlacing, Receiver: recv}, active: true},
		"between attempts":        {st: pfsv1alpha1.PfsTransferStatus{Phase: pfsv1alpha1.PhasePending, FailedAttempts: 1}, active: true},
		"succeeded":               {st: pfsv1alpha1.PfsTransferStatus{Phase: pfsv1alpha1.PhaseSucceeded, Receiver: recv}, held: true},
		"failed":                  {st: pfsv1alpha1.PfsTransferStatus{Phase: pfsv1alpha1.PhaseFailed, Receiver: recv}},
	}
	for name, tc := range tests {
		e := entryOf(x(tc.st), tc.held)
		if e.Active != tc.active || e.Queued != tc.queued {
			t.Errorf("%s: active %v queued %v, want %v %v", name, e.Active, e.Queued, tc.active, tc.queued)
		}
	}
}

// Admission remembers what it let in before the cache shows it, so two
// reconciles in a row never both take the last slot; a finished transfer
// frees its slot.
func TestAdmissionHoldsSlotsUntilFinished(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := pfsv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	mk := func(name string, age time.Duration) *pfsv1alpha1.PfsTransfer {
		return &pfsv1alpha1.PfsTransfer{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name),
			CreationTimestamp: metav1.NewTime(t0.Add(-age))}}
	}
	a, b := mk("a", 2*time.Second), mk("b", time.Second)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(a, b).WithStatusSubresource(a, b).Build()
	adm := &Admission{Limit: 1}
	ctx := context.Background()
	if q, err := adm.tryAdmit(ctx, c, a); err != nil || !q.Admitted {
		t.Fatalf("a: %+v %v", q, err)
	}
	// a's status still says nothing (no pod yet): b must not get a's slot.
	if q, _ := adm.tryAdmit(ctx, c, b); q.Admitted || q.Active != 1 {
		t.Fatalf("b while a runs: %+v", q)
	}
	if q, _ := adm.tryAdmit(ctx, c, a); !q.Admitted {
		t.Fatalf("a again: %+v", q)
	}
	a.Status.Phase = pfsv1alpha1.PhaseSucceeded
	if err := c.Status().Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	if q, _ := adm.tryAdmit(ctx, c, b); !q.Admitted {
		t.Fatalf("b after a finished: %+v", q)
	}
	if _, held := adm.admitted[a.UID]; held {
		t.Error("a finished transfer still holds a slot")
	}
	var nilAdm *Admission
	if q, _ := nilAdm.tryAdmit(ctx, c, b); !q.Admitted {
		t.Error("no admission: everything runs")
	}
}

func TestToWake(t *testing.T) {
	mk := func(name string, age time.Duration, reason string) pfsv1alpha1.PfsTransfer {
		x := pfsv1alpha1.PfsTransfer{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(t0.Add(-age))}}
		if reason != "" {
			x.Status.Conditions = []metav1.Condition{{Type: pfsv1alpha1.ConditionPlaced, Status: metav1.ConditionFalse, Reason: reason}}
		}
		return x
	}
	list := []pfsv1alpha1.PfsTransfer{mk("young", time.Second, pfsv1alpha1.ReasonQueued), mk("blob", time.Hour, pfsv1alpha1.ReasonBlobNotReady),
		mk("old", time.Minute, pfsv1alpha1.ReasonQueued), mk("oldest", time.Hour, pfsv1alpha1.ReasonQueued),
		mk("noroom", time.Second, pfsv1alpha1.ReasonNoNUMAFit)}
	want := []client.ObjectKey{{Namespace: "ns", Name: "noroom"}, {Namespace: "ns", Name: "oldest"}, {Namespace: "ns", Name: "old"}}
	if diff := cmp.Diff(want, toWake(list, 2)); diff != "" {
		t.Errorf("two slots (-want +got):\n%s", diff)
	}
	if got := toWake(list, 0); len(got) != 4 {
		t.Errorf("no limit: %v, want every waiting transfer", got)
	}
}

// A queued transfer waits in Pending with reason Queued and one Event,
// creates nothing, and looks again later.
func TestDecideTransferQueued(t *testing.T) {
	x := &pfsv1alpha1.PfsTransfer{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns", Generation: 1},
		Spec: pfsv1alpha1.PfsTransferSpec{Mode: pfsv1alpha1.ModePayload, Transport: pfsv1alpha1.TransportTCP}}
	q := &queueState{Active: 2, Ahead: 3, Limit: 2}
	st, plan := decideTransfer(x, transferObservation{Now: t0, Timing: DefaultTiming, Queue: q})
	if plan.CreateReceiver || st.Phase != pfsv1alpha1.PhasePending || plan.RequeueAfter != queueRecheck {
		t.Fatalf("queued: phase %s, plan %+v", st.Phase, plan)
	}
	if got := condSummary(st.Conditions)[pfsv1alpha1.ConditionPlaced]; got != "False/Queued" {
		t.Errorf("Placed = %s", got)
	}
	want := "waiting for one of 2 transfer slots (--max-active-transfers): 2 active, 3 queued ahead of this one"
	if msg := condMessage(st.Conditions, pfsv1alpha1.ConditionPlaced); msg != want {
		t.Errorf("message %q", msg)
	}
	if diff := cmp.Diff([]string{pfsv1alpha1.ReasonQueued}, eventReasons(plan.Events)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	x.Status = st
	if _, plan = decideTransfer(x, transferObservation{Now: t0.Add(time.Second), Timing: DefaultTiming, Queue: q}); len(plan.Events) != 0 {
		t.Errorf("still queued: events %v", eventReasons(plan.Events))
	}
	q.Admitted = true
	if _, plan = decideTransfer(x, transferObservation{Now: t0.Add(2 * time.Second), Timing: DefaultTiming, Queue: q}); !plan.CreateReceiver {
		t.Errorf("admitted: plan %+v", plan)
	}
}

func TestAdmissionRelease(t *testing.T) {
	adm := &Admission{Limit: 1, admitted: map[types.UID]struct{}{"a": {}}}
	adm.release("a")
	if len(adm.admitted) != 0 {
		t.Error("released transfer still holds its slot")
	}
	var nilAdm *Admission
	nilAdm.release("a") // no admission: nothing to give back
}
