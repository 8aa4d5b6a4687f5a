// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
)

const pcoreBlobIndex = "spec.blobRef.name"

// PcoreJobReconciler runs a PcoreJob in one pod on a node holding the blob.
type PcoreJobReconciler struct {
	Deps
}

// +kubebuilder:rbac:groups=pfs.packetfs.io,resources=pcorejobs,verbs=get;list;watch
// +kubebuilder:rbac:groups=pfs.packetfs.io,resources=pcorejobs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=pfs.packetfs.io,resources=pcorejobs/finalizers,verbs=update
// +kubebuilder:rbac:groups=pfs.packetfs.io,resources=pfsblobs,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile gathers the blob and the job's pod, decides once with
// decidePcore, applies the plan, writes status once and then records the
// decided Events.
func (r *PcoreJobReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	j := &pfsv1alpha1.PcoreJob{}
	if err := r.Client.Get(ctx, req.NamespacedName, j); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !j.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the pod goes with its owner reference
	}
	obs, err := r.gather(ctx, j)
	if err != nil {
		return ctrl.Result{}, err
	}
	st, plan := decidePcore(j, obs)
	failed, err := r.apply(ctx, j, obs, plan)
	if err != nil {
		return ctrl.Result{}, err
	}
	if failed != nil {
		st, plan.Events = refusedPcore(j, obs, failed) // a refusal shows in Placed
	}
	if err := commitStatus(ctx, &r.Deps, j, &j.Status, st, plan.Events); err != nil {
		return requeueOnConflict(err)
	}
	if failed != nil {
		return ctrl.Result{}, failed.Err // retried with the controller's backoff
	}
	return ctrl.Result{RequeueAfter: r.Timing.requeueAfter(plan.RequeueAfter)}, nil
}

// gather reads the referenced blob and the job's pod.
func (r *PcoreJobReconciler) gather(ctx context.Context, j *pfsv1alpha1.PcoreJob) (pcoreObservation, error) {
	obs := pcoreObservation{Now: r.Clock.Now(), Timing: r.Timing}
	var err error
	if obs.Blob, err = getBlob(ctx, &r.Deps, j.Namespace, j.Spec.BlobRef.Name); err != nil {
		return obs, err
	}
	obs.Pod, err = getPod(ctx, &r.Deps, j.Namespace, podspec.PcorePodName(j.Name))
	return obs, err
}

// apply creates the pod the plan asks for (a failed create comes back as
// the createFailure to decide with) or deletes the job's pod that still runs.
func (r *PcoreJobReconciler) apply(ctx context.Context, j *pfsv1alpha1.PcoreJob, obs pcoreObservation, plan pcorePlan) (*createFailure, error) {
	if plan.CreatePod {
		if f := createPod(ctx, &r.Deps, j, podspec.PcorePod(r.Pods, j, obs.Blob, plan.BlobNodes)); f != nil {
			return f, nil
		}
	}
	if p := obs.Pod; plan.DeleteActivePod && p != nil && !podEnded(p) && p.DeletionTimestamp.IsZero() {
		if err := r.Client.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
			return nil, err
		}
		logf.FromContext(ctx).Info("Deleted Pod", "pod", client.ObjectKeyFromObject(p))
	}
	return nil, nil
}

// SetupWithManager watches jobs, their pods and the blobs they use.
func (r *PcoreJobReconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &pfsv1alpha1.PcoreJob{}, pcoreBlobIndex,
		func(o client.Object) []string { return []string{o.(*pfsv1alpha1.PcoreJob).Spec.BlobRef.Name} }); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&pfsv1alpha1.PcoreJob{}).
		Owns(&corev1.Pod{}).
		Watches(&pfsv1alpha1.PfsBlob{}, handler.EnqueueRequestsFromMapFunc(r.blobToJobs)).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Named("pcorejob").
		Complete(withErrorMetrics("pcorejob", r))
}

func (r *PcoreJobReconciler) blobToJobs(ctx context.Context, o client.Object) []reconcile.Request {
	list := &pfsv1alpha1.PcoreJobList{}
	if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{pcoreBlobIndex: o.GetName()}); err != nil {
		logf.FromContext(ctx).Error(err, "Listing jobs of a blob", "blob", client.ObjectKeyFromObject(o))
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, j := range list.Items {
		if !j.Status.Phase.IsTerminal() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&j)})
		}
	}
	return reqs
}
