// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"

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
// obj's status.
func commitStatus[S any](ctx context.Context, d *Deps, obj client.Object, stored *S, decided S, events []event) error {
	if !equality.Semantic.DeepEqual(decided, *stored) {
		*stored = decided
		if err := d.Client.Status().Update(ctx, obj); err != nil {
			return err
		}
		logf.FromContext(ctx).V(1).Info("Updated status")
	}
	for _, e := range events {
		d.Recorder.Event(obj, e.Type, e.Reason, e.Message)
	}
	return nil
}

// requeueOnConflict turns a stale-object conflict on a status write into a
// quiet requeue: the cache lagged behind the apiserver, and the next
// reconcile recomputes status from the fresh object.
func requeueOnConflict(err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		return ctrl.Result{Requeue: true}, nil
	}
	return ctrl.Result{}, err
}
