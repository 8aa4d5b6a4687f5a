// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
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

// Reconcile gathers the blob and the job's pod, decides with decidePcore,
// applies the plan and writes status once.
func (r *PcoreJobReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	j := &pfsv1alpha1.PcoreJob{}
	if err := r.Client.Get(ctx, req.NamespacedName, j); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !j.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the pod goes with its owner reference
	}
	obs := pcoreObservation{Now: r.Clock.Now(), Timing: r.Timing}
	blob := &pfsv1alpha1.PfsBlob{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: j.Namespace, Name: j.Spec.BlobRef.Name}, blob)
	switch {
	case err == nil:
		obs.Blob = blob
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, err
	}
	if obs.Pod, err = getPod(ctx, &r.Deps, j.Namespace, podspec.PcorePodName(j.Name)); err != nil {
		return ctrl.Result{}, err
	}

	st, plan := decidePcore(j, obs)

	if plan.CreatePod {
		pod := podspec.PcorePod(r.Pods, j, obs.Blob, plan.BlobNodes)
		if err := ctrl.SetControllerReference(j, pod, r.Client.Scheme()); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Client.Create(ctx, pod); ignoreAlreadyExists(err) != nil {
			if conds, ok := podRefused(j.Status.Conditions, j.Generation, obs.Now, pod.Name, err); ok {
				r.Recorder.Event(j, corev1.EventTypeWarning, pfsv1alpha1.ReasonPodsPending, refusedMessage(pod.Name, err))
				j.Status.Conditions = conds
				if uerr := r.Client.Status().Update(ctx, j); uerr != nil {
					return requeueOnConflict(uerr)
				}
			}
			return ctrl.Result{}, err
		}
		logf.FromContext(ctx).Info("Created Pod", "pod", client.ObjectKeyFromObject(pod))
	}
	if plan.DeleteActivePod && obs.Pod != nil && !podEnded(obs.Pod) && obs.Pod.DeletionTimestamp.IsZero() {
		if err := r.Client.Delete(ctx, obs.Pod); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
		logf.FromContext(ctx).Info("Deleted Pod", "pod", client.ObjectKeyFromObject(obs.Pod))
	}
	for _, e := range plan.Events {
		r.Recorder.Event(j, e.Type, e.Reason, e.Message)
	}
	if !equality.Semantic.DeepEqual(st, j.Status) {
		j.Status = st
		if err := r.Client.Status().Update(ctx, j); err != nil {
			return requeueOnConflict(err)
		}
	}
	return ctrl.Result{RequeueAfter: plan.RequeueAfter}, nil
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
		Complete(r)
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
