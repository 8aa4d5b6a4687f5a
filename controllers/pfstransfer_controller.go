// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
)

// transferBlobIndex indexes PfsTransfers by the blobs they use
// (transferBlobNames) so a blob change wakes the transfers waiting for it.
const transferBlobIndex = "spec.blobNames"

// transferBlobNames are the PfsBlobs a transfer uses: spec.blobRef and, in
// mode Delta, spec.delta.sourceRef.
func transferBlobNames(x *pfsv1alpha1.PfsTransfer) []string {
	var names []string
	if ref := x.Spec.BlobRef; ref != nil {
		names = append(names, ref.Name)
	}
	if d := x.Spec.Delta; d != nil {
		names = append(names, d.SourceRef.Name)
	}
	return names
}

// PfsTransferReconciler runs a PfsTransfer: a receiver pod, then a sender
// pod once the receiver listens, then the merged results in status.
type PfsTransferReconciler struct {
	Deps
	// Admission bounds the transfers that run at once; nil: no bound.
	Admission *Admission
	// decide is the one decision of a reconcile; nil: decideTransferRun
	// (tests count its calls).
	decide decideTransferFunc
}

// +kubebuilder:rbac:groups=pfs.packetfs.io,resources=pfstransfers,verbs=get;list;watch
// +kubebuilder:rbac:groups=pfs.packetfs.io,resources=pfstransfers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=pfs.packetfs.io,resources=pfstransfers/finalizers,verbs=update
// +kubebuilder:rbac:groups=pfs.packetfs.io,resources=pfsblobs,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=list;watch
// +kubebuilder:rbac:groups=topology.node.k8s.io,resources=noderesourcetopologies,verbs=list;watch

// Reconcile gathers the blobs, the current attempt's pods, the admission
// queue and the nodes' topology, decides once (decideTransferRun), applies
// the finished pod and the deletions, writes status once and then records
// the decided Events.
func (r *PfsTransferReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	x := &pfsv1alpha1.PfsTransfer{}
	if err := r.Client.Get(ctx, req.NamespacedName, x); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !x.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // pods go with their owner references
	}
	obs, ticket, err := r.gather(ctx, x)
	if err != nil {
		return ctrl.Result{}, err
	}
	out := r.decideOnce(x, obs, ticket)
	failed, err := r.apply(ctx, x, out)
	if err != nil {
		return ctrl.Result{}, err
	}
	if failed != nil {
		out.Status, out.Plan.Events = refusedTransfer(x, obs, failed) // a refusal shows in Placed
	}
	requeue := out.Plan.RequeueAfter
	r.withTransferProgress(ctx, &out.Status, obs.Receiver, obs.Now, &requeue)
	if err := commitStatus(ctx, &r.Deps, x, &x.Status, out.Status, out.Plan.Events); err != nil {
		return requeueOnConflict(err)
	}
	if failed != nil {
		return ctrl.Result{}, failed.Err // retried with the controller's backoff
	}
	return ctrl.Result{RequeueAfter: r.Timing.requeueAfter(requeue)}, nil
}

// decideOnce runs the reconcile's one decision and settles the admission
// slot it takes or gives back (the ticket's lock spans the pure decide).
func (r *PfsTransferReconciler) decideOnce(x *pfsv1alpha1.PfsTransfer, obs transferObservation, ticket *admissionTicket) transferOutcome {
	defer ticket.settle(false) // a decide that panics must not keep the lock
	decide := r.decide
	if decide == nil {
		decide = decideTransferRun
	}
	out := decide(r.Pods, x, obs)
	ticket.settle(out.Slot == slotTake)
	if out.Slot == slotRelease {
		r.Admission.release(x.UID)
	}
	return out
}

// gather reads the referenced blobs and, while the transfer runs, the
// current attempt's pods; while a pod of it is missing, the networks, the
// nodes' topology (spec.numa not None) and, last, before the first
// receiver, the admission queue: its ticket holds the queue's lock until
// decideOnce settles it.
func (r *PfsTransferReconciler) gather(ctx context.Context, x *pfsv1alpha1.PfsTransfer) (transferObservation, *admissionTicket, error) {
	obs := transferObservation{Now: r.Clock.Now(), Timing: r.Timing}
	var err error
	if ref := x.Spec.BlobRef; ref != nil {
		if obs.Blob, err = getBlob(ctx, &r.Deps, x.Namespace, ref.Name); err != nil {
			return obs, nil, err
		}
	}
	if d := x.Spec.Delta; d != nil && x.Spec.Mode == pfsv1alpha1.ModeDelta {
		if obs.Source, err = getBlob(ctx, &r.Deps, x.Namespace, d.SourceRef.Name); err != nil {
			return obs, nil, err
		}
	}
	if x.Status.Phase.IsTerminal() {
		return obs, nil, nil
	}
	attempt := x.Status.FailedAttempts
	if obs.Receiver, err = getPod(ctx, &r.Deps, x.Namespace, podspec.TransferPodName(x.Name, attempt, podspec.ComponentReceiver)); err != nil {
		return obs, nil, err
	}
	if obs.Sender, err = getPod(ctx, &r.Deps, x.Namespace, podspec.TransferPodName(x.Name, attempt, podspec.ComponentSender)); err != nil {
		return obs, nil, err
	}
	if obs.Receiver == nil && obs.Sender == nil {
		if obs.MissingNetworks, err = missingNetworks(ctx, &r.Deps, x); err != nil {
			return obs, nil, err
		}
	}
	if (obs.Receiver == nil || obs.Sender == nil) && numaPolicy(x) != pfsv1alpha1.NUMAPolicyNone {
		if obs.Nodes, obs.Topology, err = gatherNodes(ctx, &r.Deps); err != nil {
			return obs, nil, err
		}
	}
	if obs.Receiver != nil || attempt > 0 {
		return obs, nil, nil // admission only lets in a first receiver
	}
	ticket, err := r.Admission.look(ctx, r.Client, x)
	obs.Queue = ticket.queue()
	return obs, ticket, err
}

// apply creates the pod decided (a failed create comes back for status)
// and deletes the pods the plan names.
func (r *PfsTransferReconciler) apply(ctx context.Context, x *pfsv1alpha1.PfsTransfer, out transferOutcome) (*createFailure, error) {
	if out.Pod != nil {
		// Both pods read the transfer's token (podspec.TransferTokenSecret):
		// it exists before the first of them.
		if err := ensureTokenSecret(ctx, &r.Deps, nil, x, func(token []byte) *corev1.Secret {
			return podspec.TransferTokenSecret(x, token)
		}); err != nil {
			return nil, err
		}
		if f := createPod(ctx, &r.Deps, x, out.Pod); f != nil {
			return f, nil
		}
	}
	if out.Plan.DeleteActivePods || out.Plan.DeleteAllPods {
		return nil, r.deletePods(ctx, x, out.Plan.DeleteAllPods)
	}
	return nil, nil
}

// deletePods deletes the transfer's pods that still run, or all of them.
func (r *PfsTransferReconciler) deletePods(ctx context.Context, x *pfsv1alpha1.PfsTransfer, all bool) error {
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(x.Namespace),
		client.MatchingLabels{podspec.LabelTransferUID: string(x.UID)}); err != nil {
		return err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if (!all && podEnded(p)) || !p.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.Client.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
			return err
		}
		logf.FromContext(ctx).Info("Deleted Pod", "pod", client.ObjectKeyFromObject(p))
	}
	return nil
}

// SetupWithManager watches transfers, their pods and the blobs they use.
func (r *PfsTransferReconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &pfsv1alpha1.PfsTransfer{}, transferBlobIndex,
		func(o client.Object) []string { return transferBlobNames(o.(*pfsv1alpha1.PfsTransfer)) }); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&pfsv1alpha1.PfsTransfer{}).
		Owns(&corev1.Pod{}).
		Watches(&pfsv1alpha1.PfsBlob{}, handler.EnqueueRequestsFromMapFunc(r.blobToTransfers)).
		Watches(&pfsv1alpha1.PfsTransfer{}, handler.EnqueueRequestsFromMapFunc(r.queuedTransfers), builder.WithPredicates(slotFreed)).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Named("pfstransfer").
		Complete(withErrorMetrics("pfstransfer", r))
}

func (r *PfsTransferReconciler) blobToTransfers(ctx context.Context, o client.Object) []reconcile.Request {
	list := &pfsv1alpha1.PfsTransferList{}
	if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{transferBlobIndex: o.GetName()}); err != nil {
		logf.FromContext(ctx).Error(err, "Listing transfers of a blob", "blob", client.ObjectKeyFromObject(o))
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, x := range list.Items {
		if !x.Status.Phase.IsTerminal() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&x)})
		}
	}
	return reqs
}

// slotFreed passes the events that may free a slot of the admission queue:
// a transfer that finished, or went away.
var slotFreed = predicate.Funcs{
	CreateFunc:  func(ctrlevent.CreateEvent) bool { return false },
	GenericFunc: func(ctrlevent.GenericEvent) bool { return false },
	DeleteFunc:  func(ctrlevent.DeleteEvent) bool { return true },
	UpdateFunc: func(e ctrlevent.UpdateEvent) bool {
		o, okOld := e.ObjectOld.(*pfsv1alpha1.PfsTransfer)
		n, okNew := e.ObjectNew.(*pfsv1alpha1.PfsTransfer)
		return okOld && okNew && !o.Status.Phase.IsTerminal() && n.Status.Phase.IsTerminal()
	},
}

// queuedTransfers wakes, when a transfer finishes, those waiting for the
// room it gave back: the ones no node had room for, and the oldest queued
// ones (as many as there are slots, so a burst of finishes starts a burst).
func (r *PfsTransferReconciler) queuedTransfers(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &pfsv1alpha1.PfsTransferList{}
	if err := r.Client.List(ctx, list); err != nil {
		logf.FromContext(ctx).Error(err, "Listing transfers to wake")
		return nil
	}
	slots := 0
	if r.Admission != nil {
		slots = r.Admission.Limit
	}
	keys := toWake(list.Items, slots)
	reqs := make([]reconcile.Request, 0, len(keys))
	for _, k := range keys {
		reqs = append(reqs, reconcile.Request{NamespacedName: k})
	}
	return reqs
}
