// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// The gather, apply and watch of the pods that mount a blob as a volume of
// its files (the decisions are blob_mounts.go's). Deleting a blob that pods
// still mount must not pull the pages from under a running server: every
// blob carries the finalizer pfs.packetfs.io/mounted, and a blob being
// deleted keeps it, and so its holders (whose owner is the blob), until no
// pod mounts it; status.mountedBy and the Mounted condition name the pods.

// Cache indexes of pods by the blobs their inline volumes name and by the
// claims they use ("namespace/name"), so finding a blob's pods costs no
// scan of every pod.
const (
	podInlineBlobField = "spec.volumes.csi.blob"
	podClaimField      = "spec.volumes.persistentVolumeClaim.claimName"
)

// mountIndexes are the pod indexes AddIndexes registers for the mounts.
func mountIndexes() map[string]client.IndexerFunc {
	names := func(keys []types.NamespacedName) []string {
		out := make([]string, 0, len(keys))
		for _, k := range keys {
			out = append(out, k.String())
		}
		return out
	}
	return map[string]client.IndexerFunc{
		podInlineBlobField: func(o client.Object) []string { return names(inlineBlobs(o.(*corev1.Pod))) },
		podClaimField:      func(o client.Object) []string { return names(podClaims(o.(*corev1.Pod))) },
	}
}

// gatherMounts lists the pods ("namespace/name", sorted) of any namespace
// that mount blob: those whose inline volumes name it, and those using a
// claim bound to a csi.packetfs.io PersistentVolume that names it; each
// candidate is confirmed by blobsMountedBy, the one definition.
func (r *PfsBlobReconciler) gatherMounts(ctx context.Context, blob *pfsv1alpha1.PfsBlob) ([]string, error) {
	key := client.ObjectKeyFromObject(blob)
	pvs := &corev1.PersistentVolumeList{}
	if err := r.Client.List(ctx, pvs); err != nil {
		return nil, err
	}
	var candidates []corev1.Pod
	list := func(field, value string) error {
		pods := &corev1.PodList{}
		if err := r.Client.List(ctx, pods, client.MatchingFields{field: value}); err != nil {
			return err
		}
		candidates = append(candidates, pods.Items...)
		return nil
	}
	if err := list(podInlineBlobField, key.String()); err != nil {
		return nil, err
	}
	for i := range pvs.Items {
		if b, claim, ok := pvBlob(&pvs.Items[i]); ok && b == key {
			if err := list(podClaimField, claim.String()); err != nil {
				return nil, err
			}
		}
	}
	var out []string
	for i := range candidates {
		if slices.Contains(blobsMountedBy(&candidates[i], pvs.Items), key) {
			out = append(out, client.ObjectKeyFromObject(&candidates[i]).String())
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// ensureFinalizer adds MountedFinalizer to a live blob that lacks it.
func (r *PfsBlobReconciler) ensureFinalizer(ctx context.Context, blob *pfsv1alpha1.PfsBlob) error {
	if controllerutil.ContainsFinalizer(blob, MountedFinalizer) {
		return nil
	}
	controllerutil.AddFinalizer(blob, MountedFinalizer)
	if err := r.Client.Update(ctx, blob); err != nil {
		return err
	}
	logf.FromContext(ctx).Info("Added finalizer", "finalizer", MountedFinalizer)
	return nil
}

// finalize handles a blob being deleted: while pods mount it, it keeps the
// finalizer (and so its holders) and says which pods in status; once none
// does, the finalizer goes and the deletion proceeds (the holders and the
// token go with their owner references).
func (r *PfsBlobReconciler) finalize(ctx context.Context, blob *pfsv1alpha1.PfsBlob) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(blob, MountedFinalizer) {
		return ctrl.Result{}, nil
	}
	pods, err := r.gatherMounts(ctx, blob)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(pods) > 0 {
		st := *blob.Status.DeepCopy()
		var events []event
		d := decision{gen: blob.Generation, now: r.Clock.Now(), conds: &st.Conditions, events: &events}
		setMounted(d, &st, pods, true)
		if c := reasonChanged(blob.Status.Conditions, st.Conditions, pfsv1alpha1.ConditionMounted); c != nil {
			d.emit(corev1.EventTypeNormal, c.Reason, c.Message)
		}
		if err := commitStatus(ctx, &r.Deps, blob, &blob.Status, st, events); err != nil {
			return requeueOnConflict(err)
		}
		return ctrl.Result{}, nil
	}
	controllerutil.RemoveFinalizer(blob, MountedFinalizer)
	if err := r.Client.Update(ctx, blob); err != nil {
		return requeueOnConflict(client.IgnoreNotFound(err))
	}
	logf.FromContext(ctx).Info("Removed finalizer: no pod mounts the blob", "finalizer", MountedFinalizer)
	return ctrl.Result{}, nil
}

// consumerPods passes the pod events that may change a blob's mounts.
var consumerPods = predicate.NewPredicateFuncs(func(o client.Object) bool {
	p, ok := o.(*corev1.Pod)
	return ok && mayMountBlobs(p)
})

// podToMountedBlobs maps a pod to the blobs it names, ended or not: a pod
// that ended or went away is what lets a blob's deletion proceed.
func (r *PfsBlobReconciler) podToMountedBlobs(ctx context.Context, o client.Object) []reconcile.Request {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return nil
	}
	var pvs []corev1.PersistentVolume
	if len(podClaims(p)) > 0 {
		list := &corev1.PersistentVolumeList{}
		if err := r.Client.List(ctx, list); err != nil {
			logf.FromContext(ctx).Error(err, "Listing PersistentVolumes for a pod's claims", "pod", client.ObjectKeyFromObject(p))
			return nil
		}
		pvs = list.Items
	}
	var out []reconcile.Request
	for _, b := range blobsNamedBy(p, pvs) {
		out = append(out, reconcile.Request{NamespacedName: b})
	}
	return out
}
