// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// Admission bounds how many PfsTransfers run at once. A transfer holds a
// receiver pod that waits for its sender: with more transfers started than
// the cluster has room for, receivers hold the CPUs their senders need, and
// attempts time out instead of queueing. Transfers beyond the limit wait in
// Pending (Placed=False, reason Queued) in creation order; waiting in the
// queue never fails a transfer.
type Admission struct {
	// Limit is the most transfers started and not finished; 0: no limit.
	Limit int

	mu sync.Mutex
	// admitted are transfers let in by this process whose status may not
	// show it yet (the cache lags our own writes): without them, two
	// reconciles a moment apart would both see a free slot.
	admitted map[types.UID]struct{}
}

// queueEntry is what admission reads of one transfer.
type queueEntry struct {
	UID     types.UID
	Key     client.ObjectKey
	Created time.Time
	// Active: started (pods created at least once) and not finished.
	Active bool
	// Queued: not started, and already told it waits in the queue.
	Queued bool
	// NoRoom: it waits for a node with room for its next pod (NoNUMAFit).
	NoRoom bool
}

// queueState is a transfer's place in the queue, for its status.
type queueState struct {
	Admitted      bool
	Ahead, Active int
	Limit         int
}

// admit decides, from every transfer, whether self may start: the active
// ones plus the queued ones created before it must leave a slot. Pure.
func admit(all []queueEntry, self queueEntry, limit int) queueState {
	q := queueState{Limit: limit}
	for _, e := range all {
		switch {
		case e.UID == self.UID:
		case e.Active:
			q.Active++
		case e.Queued && before(e, self):
			q.Ahead++
		}
	}
	q.Admitted = limit <= 0 || q.Active+q.Ahead < limit
	return q
}

// before orders the queue: creation time, then namespace/name.
func before(a, b queueEntry) bool { return order(a, b) < 0 }

func order(a, b queueEntry) int {
	return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.Key.Namespace, b.Key.Namespace), cmp.Compare(a.Key.Name, b.Key.Name))
}

// entryOf reads a transfer's queue entry; held says this process admitted it.
func entryOf(x *pfsv1alpha1.PfsTransfer, held bool) queueEntry {
	e := queueEntry{UID: x.UID, Key: client.ObjectKeyFromObject(x), Created: x.CreationTimestamp.Time}
	if x.Status.Phase.IsTerminal() || !x.DeletionTimestamp.IsZero() {
		return e
	}
	e.Active = held || x.Status.Receiver != nil || x.Status.FailedAttempts > 0
	c := meta.FindStatusCondition(x.Status.Conditions, pfsv1alpha1.ConditionPlaced)
	e.Queued = !e.Active && c != nil && c.Reason == pfsv1alpha1.ReasonQueued
	e.NoRoom = c != nil && c.Reason == pfsv1alpha1.ReasonNoNUMAFit
	return e
}

// admissionTicket is one transfer's look at the queue, taken as the last
// read of gather. It holds the admission's lock until settle, so the
// decision that reads the queue and the slot it takes are one step to the
// other reconciles (two of them a moment apart must not both see the last
// slot free); only the pure decide runs in between.
type admissionTicket struct {
	a      *Admission
	uid    types.UID
	q      queueState
	locked bool
}

// look reads where x stands in the queue and keeps the lock for settle; it
// forgets transfers that finished or are gone. nil: no limit, nothing to
// ask.
func (a *Admission) look(ctx context.Context, c client.Reader, x *pfsv1alpha1.PfsTransfer) (*admissionTicket, error) {
	if a == nil || a.Limit <= 0 {
		return nil, nil
	}
	list := &pfsv1alpha1.PfsTransferList{}
	if err := c.List(ctx, list); err != nil {
		return nil, err
	}
	a.mu.Lock()
	t := &admissionTicket{a: a, uid: x.UID, locked: true}
	if a.admitted == nil {
		a.admitted = map[types.UID]struct{}{}
	}
	if _, ok := a.admitted[x.UID]; ok {
		t.q = queueState{Admitted: true, Limit: a.Limit}
		return t, nil
	}
	entries := make([]queueEntry, 0, len(list.Items))
	live := make(map[types.UID]bool, len(list.Items))
	for i := range list.Items {
		t := &list.Items[i]
		_, held := a.admitted[t.UID]
		e := entryOf(t, held)
		live[t.UID] = e.Active
		entries = append(entries, e)
	}
	for uid := range a.admitted {
		if !live[uid] {
			delete(a.admitted, uid)
		}
	}
	t.q = admit(entries, entryOf(x, false), a.Limit)
	return t, nil
}

// queue is the queue state for decide; nil without a ticket.
func (t *admissionTicket) queue() *queueState {
	if t == nil {
		return nil
	}
	q := t.q
	return &q
}

// settle remembers the slot when take (the decision started the transfer)
// and x was admitted, then lets the lock go; later calls do nothing.
func (t *admissionTicket) settle(take bool) {
	if t == nil || !t.locked {
		return
	}
	if take && t.q.Admitted {
		t.a.admitted[t.uid] = struct{}{}
	}
	t.locked = false
	t.a.mu.Unlock()
}

// tryAdmit admits x if a slot is free and remembers it: a look settled at
// once.
func (a *Admission) tryAdmit(ctx context.Context, c client.Reader, x *pfsv1alpha1.PfsTransfer) (queueState, error) {
	t, err := a.look(ctx, c, x)
	if err != nil || t == nil {
		return queueState{Admitted: err == nil}, err
	}
	t.settle(true)
	return t.q, nil
}

// release gives back the slot of a transfer admitted a moment ago that
// created no pod (no node fits it): waiting for room must not hold the
// queue's room too.
func (a *Admission) release(uid types.UID) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.admitted, uid)
}

// toWake are the transfers to look at again when one finishes: every one
// waiting for a node with room (the finished one's pods gave some back),
// then the oldest queued ones, as many as there are slots.
func toWake(list []pfsv1alpha1.PfsTransfer, slots int) []client.ObjectKey {
	var room, queued []queueEntry
	for i := range list {
		switch e := entryOf(&list[i], false); {
		case e.NoRoom:
			room = append(room, e)
		case e.Queued:
			queued = append(queued, e)
		}
	}
	slices.SortFunc(room, order)
	slices.SortFunc(queued, order)
	if slots > 0 {
		queued = queued[:min(len(queued), slots)]
	}
	keys := make([]client.ObjectKey, 0, len(room)+len(queued))
	for _, e := range append(room, queued...) {
		keys = append(keys, e.Key)
	}
	return keys
}

// queuedMessage says where a queued transfer stands.
func queuedMessage(q queueState) string {
	return fmt.Sprintf("waiting for one of %d transfer slots (--max-active-transfers): %d active, %d queued ahead of this one",
		q.Limit, q.Active, q.Ahead)
}
