// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// decision is the part of a decide pass every Kind shares: the conditions
// it sets (at the object's generation, at the injected clock's time), the
// Events it records and the wake-up it asks for. It points into the
// status and plan the Kind's own decision builds, so the Kind's steps and
// these helpers write the same values.
type decision struct {
	gen     int64
	now     time.Time
	conds   *[]metav1.Condition
	events  *[]event
	requeue *time.Duration
}

// cond sets condition typ; an unchanged condition keeps its transition time.
func (d decision) cond(typ string, ok bool, reason, msg string) {
	setCondition(d.conds, typ, boolStatus(ok), reason, msg, d.gen, d.now)
}

// emit records an Event after the status write.
func (d decision) emit(typ, reason, msg string) {
	*d.events = append(*d.events, event{Type: typ, Reason: reason, Message: msg})
}

// wakeIn asks for another look after w at the latest: the sooner of the
// wake-ups asked wins; w <= 0 asks nothing.
func (d decision) wakeIn(w time.Duration) { sooner(d.requeue, w) }

// sooner folds the wake-up w into *requeue: the sooner one wins, 0 is none.
func sooner(requeue *time.Duration, w time.Duration) {
	if w > 0 && (*requeue == 0 || w < *requeue) {
		*requeue = w
	}
}

// runDecision is a decision over a run that ends once (a PfsTransfer, a
// PcoreJob): it also owns the run's phase and completion time.
type runDecision struct {
	decision
	phase      *pfsv1alpha1.Phase
	completion **metav1.Time
}

// failRun ends the run with Failed=True, Succeeded=False and reason, and a
// Warning Event saying why.
func (d runDecision) failRun(reason, msg string) {
	*d.phase = pfsv1alpha1.PhaseFailed
	*d.completion = &metav1.Time{Time: d.now.Truncate(time.Second)}
	d.cond(pfsv1alpha1.ConditionFailed, true, reason, msg)
	d.cond(pfsv1alpha1.ConditionSucceeded, false, reason, msg)
	d.emit(corev1.EventTypeWarning, reason, msg)
}
