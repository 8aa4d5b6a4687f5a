// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
)

// tokenBytes is how many random bytes a blob's token holds; the Secret
// stores them as 2*tokenBytes hex digits (see encodeToken).
const tokenBytes = 32

// encodeToken turns random bytes into the token text the data plane reads:
// lowercase hex. pfs reads token files as text (it cuts trailing whitespace
// and passes the token as a C string), so raw random bytes broke whenever
// they held a NUL (the holder refused every client, about one blob in eight)
// or ended in whitespace; found by the e2e tests.
func encodeToken(raw []byte) []byte { return []byte(hex.EncodeToString(raw)) }

// PfsBlobReconciler materialises a PfsBlob on the selected nodes through a
// holder DaemonSet and reports each node's copy.
type PfsBlobReconciler struct {
	Deps
	// Random is the token source; crypto/rand.Reader unless a test sets it.
	Random io.Reader
	// Sources is the policy on blob sources (host paths).
	Sources SourcePolicy
}

// update: the finalizer pfs.packetfs.io/mounted (pfsblob_mounts.go).
// +kubebuilder:rbac:groups=pfs.packetfs.io,resources=pfsblobs,verbs=get;list;watch;update
// +kubebuilder:rbac:groups=pfs.packetfs.io,resources=pfsblobs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=pfs.packetfs.io,resources=pfsblobs/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete
// Services: create only, the holders' headless Service (see applySource).
// +kubebuilder:rbac:groups="",resources=services,verbs=create
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get
// +kubebuilder:rbac:groups="",resources=nodes,verbs=list;watch
// PersistentVolumes: which csi.packetfs.io volumes name a blob, for the pods
// that mount it through a claim (pfsblob_mounts.go).
// +kubebuilder:rbac:groups="",resources=persistentvolumes,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile ensures the token Secret and the holder DaemonSet, then decides
// status from the holder pods' init-container results with decideBlob,
// writes it once and records the decided Events. The children come first:
// the blob always wants the same ones (built by podspec), and its status is
// read from them.
func (r *PfsBlobReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	blob := &pfsv1alpha1.PfsBlob{}
	if err := r.Client.Get(ctx, req.NamespacedName, blob); err != nil {
		if apierrors.IsNotFound(err) {
			forgetDeletedBlob(req.Namespace, req.Name) // gone: its series go too
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !blob.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, blob)
	}
	if err := r.ensureFinalizer(ctx, blob); err != nil {
		return requeueOnConflict(err)
	}
	if err := r.ensureToken(ctx, blob); err != nil {
		return ctrl.Result{}, err
	}
	mounted, err := r.gatherMounts(ctx, blob)
	if err != nil {
		return ctrl.Result{}, err
	}
	if blob.Spec.Source != nil {
		return r.reconcileSource(ctx, blob, mounted)
	}
	obs := blobObservation{}
	if obs.DaemonSet, obs.CreatedDaemonSet, err = r.ensureDaemonSet(ctx, blob); err != nil {
		return ctrl.Result{}, err
	}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(blob.Namespace), client.MatchingLabels(podspec.BlobHolderLabels(blob))); err != nil {
		return ctrl.Result{}, err
	}
	obs.Pods, obs.Now = pods.Items, r.Clock.Now()
	st, plan := decideBlob(blob, obs)
	setMounted(decision{gen: blob.Generation, now: obs.Now, conds: &st.Conditions}, &st, mounted, false)
	if err := commitStatus(ctx, &r.Deps, blob, &blob.Status, st, plan.Events); err != nil {
		return requeueOnConflict(err)
	}
	if c := plan.ReadinessChanged; c != nil {
		logf.FromContext(ctx).Info("Blob readiness changed", "ready", c.Status, "reason", c.Reason,
			"readyNodes", st.ReadyNodes, "desiredNodes", st.DesiredNodes)
	}
	return ctrl.Result{}, nil
}

// ensureToken creates the blob's token Secret once.
func (r *PfsBlobReconciler) ensureToken(ctx context.Context, blob *pfsv1alpha1.PfsBlob) error {
	return ensureTokenSecret(ctx, &r.Deps, r.Random, blob, func(token []byte) *corev1.Secret {
		return podspec.BlobTokenSecret(blob, token)
	})
}

// ensureTokenSecret creates, once, the token Secret build makes for owner
// (blob or transfer) from fresh random bytes of src (crypto/rand when nil),
// owned by owner. It is read with the API reader so the manager needs no
// list/watch on Secrets; the token is never logged.
func ensureTokenSecret(ctx context.Context, d *Deps, src io.Reader, owner client.Object,
	build func(token []byte) *corev1.Secret) error {
	token := make([]byte, tokenBytes)
	if src == nil {
		src = rand.Reader
	}
	if _, err := io.ReadFull(src, token); err != nil {
		return fmt.Errorf("generating a token: %w", err)
	}
	sec := build(encodeToken(token))
	key := client.ObjectKeyFromObject(sec)
	if err := d.APIReader.Get(ctx, key, &corev1.Secret{}); err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	if err := ctrl.SetControllerReference(owner, sec, d.Client.Scheme()); err != nil {
		return err
	}
	if err := d.Client.Create(ctx, sec); err != nil {
		return ignoreAlreadyExists(err)
	}
	logf.FromContext(ctx).Info("Created Secret", "secret", key)
	return nil
}

// ensureDaemonSet creates the holder DaemonSet (created says so) or updates
// it when the desired template changed (e.g. spec.nodeSelector, or a new
// data-plane image after an upgrade). Its OnDelete strategy leaves running
// holders as they are; a nodeSelector change still removes the holders of
// nodes it no longer selects (the DaemonSet controller does that whatever
// the strategy).
func (r *PfsBlobReconciler) ensureDaemonSet(ctx context.Context, blob *pfsv1alpha1.PfsBlob) (ds *appsv1.DaemonSet, created bool, err error) {
	want := podspec.BlobHolderDaemonSet(r.Pods, blob)
	if err := ctrl.SetControllerReference(blob, want, r.Client.Scheme()); err != nil {
		return nil, false, err
	}
	have := &appsv1.DaemonSet{}
	err = r.Client.Get(ctx, client.ObjectKeyFromObject(want), have)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.Client.Create(ctx, want); err != nil {
			return nil, false, err
		}
		logf.FromContext(ctx).Info("Created DaemonSet", "daemonset", client.ObjectKeyFromObject(want))
		return want, true, nil
	case err != nil:
		return nil, false, err
	}
	if have.Annotations[podspec.AnnotationTemplateHash] == want.Annotations[podspec.AnnotationTemplateHash] &&
		have.Spec.UpdateStrategy.Type == want.Spec.UpdateStrategy.Type {
		return have, false, nil
	}
	// The strategy is written with the template, in one update: a
	// DaemonSet an earlier operator made (RollingUpdate) turns OnDelete in
	// the same write that changes its template, so it never rolls.
	have.Annotations = want.Annotations
	have.Labels = want.Labels
	have.Spec.Template = want.Spec.Template
	have.Spec.UpdateStrategy = want.Spec.UpdateStrategy
	if err := r.Client.Update(ctx, have); err != nil {
		return nil, false, err
	}
	logf.FromContext(ctx).Info("Updated DaemonSet", "daemonset", client.ObjectKeyFromObject(have))
	return have, false, nil
}

// SetupWithManager watches blobs, their DaemonSets, the holder pods (which
// the DaemonSet owns; they name their blob in an annotation) and the pods
// that mount a blob, of any namespace (pfsblob_mounts.go). Not the
// holders' Services: they are only created (see applySource).
func (r *PfsBlobReconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	holderPods := predicate.NewPredicateFuncs(func(o client.Object) bool {
		c := o.GetLabels()[podspec.LabelComponent]
		return (c == podspec.ComponentBlobHolder || c == podspec.ComponentBlobScan) &&
			o.GetLabels()[podspec.LabelManagedBy] == podspec.ManagedBy
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&pfsv1alpha1.PfsBlob{}).
		Owns(&appsv1.DaemonSet{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToBlob), builder.WithPredicates(holderPods)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.podToMountedBlobs), builder.WithPredicates(consumerPods)).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.nodeToSourceBlobs), builder.WithPredicates(nodeChanged)).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Named("pfsblob").
		Complete(withErrorMetrics("pfsblob", r))
}

func podToBlob(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetAnnotations()[podspec.AnnotationBlob]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}
