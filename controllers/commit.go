// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// event is an Event to record; Reason is a condition reason.
type event struct {
	Type, Reason, Message string
}

// commitStatus ends every Reconcile: one status write, only when the decided
// status differs from the stored one, then the decided Events. The Events
// follow the write (as in JobSet), so whoever sees an Event can read the
// status that explains it; when the write fails none is recorded, and the
// next reconcile decides again from the stored status. stored points at
// obj's status. The operator's metrics follow the written status
// (metrics.go).
func commitStatus[S any](ctx context.Context, d *Deps, obj client.Object, stored *S, decided S, events []event) error {
	if !equality.Semantic.DeepEqual(decided, *stored) {
		prev := *stored
		*stored = decided
		if err := d.Client.Status().Update(ctx, obj); err != nil {
			return err
		}
		logf.FromContext(ctx).V(1).Info("Updated status")
		recordStatus(obj, prev)
	}
	for _, e := range events {
		d.Recorder.Event(obj, e.Type, e.Reason, e.Message)
		eventsRecorded.WithLabelValues(kindOf(obj), e.Type, e.Reason).Inc()
	}
	return nil
}

// conflictRecheck is when a reconcile whose status write conflicted looks
// again, should the cache's own event for the newer object not come first.
const conflictRecheck = time.Second

// requeueOnConflict turns a stale-object conflict on a status write into a
// quiet requeue: the cache lagged behind the apiserver, and the next
// reconcile recomputes status from the fresh object. The newer object's
// watch event normally brings that reconcile at once; conflictRecheck is
// the fallback. (A rate-limited requeue, Result.Requeue, is deprecated by
// controller-runtime; returning the error would log every conflict.)
func requeueOnConflict(err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: conflictRecheck}, nil
	}
	return ctrl.Result{}, err
}
