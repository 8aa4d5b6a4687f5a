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
	"packetfs.io/operator/internal/placement"
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
}

// +kubebuilder:rbac:groups=pfs.packetfs.io,resources=pfstransfers,verbs=get;list;watch
// +kubebuilder:rbac:groups=pfs.packetfs.io,resources=pfstransfers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=pfs.packetfs.io,resources=pfstransfers/finalizers,verbs=update
// +kubebuilder:rbac:groups=pfs.packetfs.io,resources=pfsblobs,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=list;watch
// +kubebuilder:rbac:groups=topology.node.k8s.io,resources=noderesourcetopologies,verbs=list;watch

// Reconcile gathers the blob and the current attempt's pods, decides with
// decideTransfer, applies the plan, writes status once and then records the
// decided Events.
func (r *PfsTransferReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	x := &pfsv1alpha1.PfsTransfer{}
	if err := r.Client.Get(ctx, req.NamespacedName, x); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !x.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // pods go with their owner references
	}
	obs, err := r.gather(ctx, x)
	if err != nil {
		return ctrl.Result{}, err
	}
	st, plan := decideTransfer(x, obs)
	if plan.CreateReceiver && st.FailedAttempts == 0 {
		q, err := r.Admission.tryAdmit(ctx, r.Client, x)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !q.Admitted {
			obs.Queue = &q
			st, plan = decideTransfer(x, obs) // it waits its turn: Placed says where it stands
		}
	}
	out, err := r.apply(ctx, x, obs, st.FailedAttempts, plan)
	if err != nil {
		return ctrl.Result{}, err
	}
	obs.CreateFailed = out.createFailed
	switch {
	case out.createFailed != nil:
		st, plan = decideTransfer(x, obs) // a refusal shows in Placed
	case out.placed != nil && out.placed.Decision.Fit == placement.FitNone:
		// A wait of seconds for a publisher to catch up keeps its slot.
		if st.FailedAttempts == 0 && x.Status.Receiver == nil && out.placed.Decision.RecheckAfter == 0 {
			r.Admission.release(x.UID)
		}
		obs.NoFit = out.placed
		st, plan = decideTransfer(x, obs) // no node fits: Placed says why
	case out.placed != nil:
		recordPlacement(&st, &plan, *out.placed)
	}
	if err := commitStatus(ctx, &r.Deps, x, &x.Status, st, plan.Events); err != nil {
		return requeueOnConflict(err)
	}
	if f := obs.CreateFailed; f != nil {
		return ctrl.Result{}, f.Err // retried with the controller's backoff
	}
	return ctrl.Result{RequeueAfter: r.Timing.requeueAfter(plan.RequeueAfter)}, nil
}

// gather reads the referenced blobs and, while the transfer runs, the
// current attempt's pods.
func (r *PfsTransferReconciler) gather(ctx context.Context, x *pfsv1alpha1.PfsTransfer) (transferObservation, error) {
	obs := transferObservation{Now: r.Clock.Now(), Timing: r.Timing}
	var err error
	if ref := x.Spec.BlobRef; ref != nil {
		if obs.Blob, err = getBlob(ctx, &r.Deps, x.Namespace, ref.Name); err != nil {
			return obs, err
		}
	}
	if d := x.Spec.Delta; d != nil && x.Spec.Mode == pfsv1alpha1.ModeDelta {
		if obs.Source, err = getBlob(ctx, &r.Deps, x.Namespace, d.SourceRef.Name); err != nil {
			return obs, err
		}
	}
	if x.Status.Phase.IsTerminal() {
		return obs, nil
	}
	attempt := x.Status.FailedAttempts
	if obs.Receiver, err = getPod(ctx, &r.Deps, x.Namespace, podspec.TransferPodName(x.Name, attempt, podspec.ComponentReceiver)); err != nil {
		return obs, err
	}
	if obs.Sender, err = getPod(ctx, &r.Deps, x.Namespace, podspec.TransferPodName(x.Name, attempt, podspec.ComponentSender)); err != nil {
		return obs, err
	}
	if obs.Receiver == nil && obs.Sender == nil {
		obs.MissingNetworks, err = missingNetworks(ctx, &r.Deps, x)
	}
	return obs, err
}

// applied is what apply did that the status must show.
type applied struct {
	// createFailed is a pod the apiserver refused.
	createFailed *createFailure
	// placed is the NUMA decision for the pod the plan asked for; with
	// FitNone the pod was not created.
	placed *placedPod
}

// apply places and creates the pod the plan asks for (a refusal or "no node
// fits" comes back to decide with) and deletes the pods it names.
func (r *PfsTransferReconciler) apply(ctx context.Context, x *pfsv1alpha1.PfsTransfer, obs transferObservation,
	attempt int32, plan transferPlan) (applied, error) {
	in := podspec.TransferInputs{Attempt: attempt, Blob: obs.Blob, BlobNodes: plan.BlobNodes, Source: obs.Source, Delta: plan.Delta}
	build := func(in podspec.TransferInputs) *corev1.Pod { return podspec.ReceiverPod(r.Pods, x, in) }
	component := podspec.ComponentReceiver
	if plan.CreateSender {
		build = func(in podspec.TransferInputs) *corev1.Pod {
			return podspec.SenderPod(r.Pods, x, in, plan.ReceiverAddr)
		}
		component = podspec.ComponentSender
	}
	var out applied
	if plan.CreateReceiver || plan.CreateSender {
		pod := build(in)
		d, err := r.placeNUMA(ctx, x, pod)
		if err != nil {
			return out, err
		}
		out.placed = &placedPod{Component: component, Pod: pod.Name, Decision: d}
		if d.Fit == placement.FitNone {
			return out, nil
		}
		in.NUMA = numaPlacementStatus(d)
		pod = build(in)
		if out.createFailed = createPod(ctx, &r.Deps, x, pod); out.createFailed != nil {
			out.placed = nil
			return out, nil
		}
	}
	if plan.DeleteActivePods || plan.DeleteAllPods {
		return out, r.deletePods(ctx, x, plan.DeleteAllPods)
	}
	return out, nil
}

// placeNUMA decides pod's node and NUMA zone from the topology of its
// candidate nodes (numa None: no reads, the scheduler places it).
func (r *PfsTransferReconciler) placeNUMA(ctx context.Context, x *pfsv1alpha1.PfsTransfer, pod *corev1.Pod) (placement.Decision, error) {
	req := numaRequest(x, pod)
	req.Now, req.CatchUp = r.Clock.Now(), r.Timing.TopologyCatchUp
	req.CatchUpSince = catchUpSince(x.Status.Conditions)
	if req.Policy == pfsv1alpha1.NUMAPolicyNone {
		return placement.Place(nil, nil, req), nil
	}
	nodes, err := candidateNodes(ctx, &r.Deps, pod)
	if err != nil {
		return placement.Decision{}, err
	}
	topo, err := gatherTopology(ctx, &r.Deps, nodes)
	if err != nil {
		return placement.Decision{}, err
	}
	return placement.Place(nodes, topo, req), nil
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
		Complete(r)
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
