// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crevent "sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/placement"
	"packetfs.io/operator/internal/podspec"
)

// The gather and apply of a blob with spec.source; the decision is
// decideSource (pfsblob_source.go).

// reconcileSource gathers, decides, applies and commits a source blob;
// mounted are the pods that mount it (gatherMounts).
func (r *PfsBlobReconciler) reconcileSource(ctx context.Context, blob *pfsv1alpha1.PfsBlob, mounted []string) (reconcile.Result, error) {
	obs, err := r.gatherSource(ctx, blob)
	if err != nil {
		return reconcile.Result{}, err
	}
	st, plan := decideSource(r.Pods, r.Sources, blob, obs)
	setMounted(decision{gen: blob.Generation, now: obs.Now, conds: &st.Conditions}, &st, mounted, false)
	applyErr := r.applySource(ctx, blob, &st, &plan)
	requeue := plan.RequeueAfter
	podsChanged := len(plan.Create)+len(plan.Delete) > 0
	if !r.withProgress(ctx, &blob.Status, &st, obs.Holders, podsChanged, obs.Now, &requeue) {
		// Within the write budget's interval: this change waits (progress.go).
		return reconcile.Result{RequeueAfter: r.Timing.requeueAfter(requeue)}, applyErr
	}
	if err := commitStatus(ctx, &r.Deps, blob, &blob.Status, st, plan.Events); err != nil {
		return requeueOnConflict(err)
	}
	if c := plan.ReadinessChanged; c != nil {
		logf.FromContext(ctx).Info("Blob readiness changed", "ready", c.Status, "reason", c.Reason, "nodes", st.Ready)
	}
	return reconcile.Result{RequeueAfter: r.Timing.requeueAfter(requeue)}, applyErr
}

// applySource deletes and creates what decideSource planned, the holders'
// Service before the pods whose DNS names it makes. A refused child is an
// Event and its nodes' attempts are taken back (st); the error returned
// brings a retry with backoff.
//
// The Service is created, not watched or read (RBAC: create only): its
// spec follows from the blob's name and UID, which never change, so there
// is nothing to update, and the plan carries it whenever it creates a
// holder with a DNS name, which makes "create, AlreadyExists is fine" a
// create-if-missing that costs nothing once every holder runs. Should it
// be deleted, a relay that cannot resolve its upstreams fails, and its
// retry brings the Service back. Owns() would cache every Service in the
// cluster for that.
func (r *PfsBlobReconciler) applySource(ctx context.Context, blob *pfsv1alpha1.PfsBlob, st *pfsv1alpha1.PfsBlobStatus, plan *sourcePlan) error {
	var applyErr error
	refused := func(what string, err error, pods []*corev1.Pod, message string) {
		applyErr = err
		plan.Events = append(plan.Events, event{Type: corev1.EventTypeWarning, Reason: pfsv1alpha1.ReasonPodsPending,
			Message: truncate(fmt.Sprintf("cannot create %s: %v", what, err), 1024)})
		for _, p := range pods {
			unclaim(st, p, message)
		}
	}
	for _, p := range plan.Delete {
		if err := r.Client.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
			applyErr = err
			continue
		}
		logf.FromContext(ctx).Info("Deleted Pod", "pod", client.ObjectKeyFromObject(p))
	}
	if svc := plan.Service; svc != nil {
		created, err := createChild(ctx, &r.Deps, blob, svc)
		if err != nil {
			// No holder this time: a relay would spend its attempts on
			// names that do not resolve.
			refused("service "+svc.Name, err, plan.Create, "the apiserver refused the holders' Service "+svc.Name+"; retrying")
			return applyErr
		}
		if created {
			logf.FromContext(ctx).Info("Created Service", "service", client.ObjectKeyFromObject(svc))
		}
	}
	for _, p := range plan.Create {
		if cf := createPod(ctx, &r.Deps, blob, p); cf != nil {
			refused("pod "+p.Name, cf.Err, []*corev1.Pod{p}, "the apiserver refused the holder pod; retrying")
		}
	}
	return applyErr
}

// unclaim takes back a node's attempt whose pod was not created, so a
// refusal does not use up the node's attempts.
func unclaim(st *pfsv1alpha1.PfsBlobStatus, p *corev1.Pod, message string) {
	node := p.Annotations[podspec.AnnotationNode]
	for i := range st.Nodes {
		if n := &st.Nodes[i]; n.Node == node && n.Pod == p.Name {
			n.Pod, n.Attempts, n.Message = "", n.Attempts-1, message
		}
	}
}

// gatherSource reads the claim, the scan pod, the holder pods, the nodes
// and, for admission, what the other pods request on each selected node.
func (r *PfsBlobReconciler) gatherSource(ctx context.Context, blob *pfsv1alpha1.PfsBlob) (sourceObservation, error) {
	obs := sourceObservation{Now: r.Clock.Now(), Requested: map[string]corev1.ResourceList{}}
	if pvc := blob.Spec.Source.PersistentVolumeClaim; pvc != nil {
		// The API reader: one get, no cache (and no list/watch) of claims.
		err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: blob.Namespace, Name: pvc.ClaimName}, &corev1.PersistentVolumeClaim{})
		if err != nil && !apierrors.IsNotFound(err) {
			return obs, err
		}
		obs.ClaimFound = err == nil
	}
	if podspec.IsRemoteSource(blob.Spec.Source) {
		missing, err := remoteMissing(ctx, r.APIReader, blob.Namespace, blob.Spec.Source)
		if err != nil {
			return obs, err
		}
		obs.RemoteMissing = missing
	}
	scan, err := getPod(ctx, &r.Deps, blob.Namespace, podspec.ScanPodName(blob.Name))
	if err != nil {
		return obs, err
	}
	obs.Scan = scan
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(blob.Namespace), client.MatchingLabels(podspec.BlobHolderLabels(blob))); err != nil {
		return obs, err
	}
	obs.Holders = pods.Items
	// A pod created a moment ago may not be in the cache yet: confirm the
	// ones status names before deciding they are gone.
	listed := map[string]bool{}
	for _, p := range obs.Holders {
		listed[p.Name] = true
	}
	for _, n := range blob.Status.Nodes {
		if n.Pod == "" || listed[n.Pod] {
			continue
		}
		p, err := getPod(ctx, &r.Deps, blob.Namespace, n.Pod)
		if err != nil {
			return obs, err
		}
		if p != nil && p.Labels[podspec.LabelBlobUID] == string(blob.UID) {
			obs.Holders = append(obs.Holders, *p)
		}
	}
	if scan == nil || scan.Spec.NodeName == "" {
		return obs, nil // no holder before the scan: nodes are not needed yet
	}
	if base := blob.Spec.Base; base != nil {
		b := &pfsv1alpha1.PfsBlob{}
		err := r.Client.Get(ctx, types.NamespacedName{Namespace: blob.Namespace, Name: base.Name}, b)
		if err != nil && !apierrors.IsNotFound(err) {
			return obs, err
		}
		if err == nil {
			obs.Base = b
		}
	}
	nodes := &corev1.NodeList{}
	if err := r.Client.List(ctx, nodes, client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(blob.Spec.NodeSelector)}); err != nil {
		return obs, err
	}
	obs.Nodes = nodes.Items
	for _, n := range obs.Nodes {
		onNode := &corev1.PodList{}
		if err := r.Client.List(ctx, onNode, client.MatchingFields{podNodeNameField: n.Name}); err != nil {
			return obs, err
		}
		others := onNode.Items[:0]
		for _, p := range onNode.Items {
			if p.Labels[podspec.LabelBlobUID] != string(blob.UID) {
				others = append(others, p)
			}
		}
		obs.Requested[n.Name] = placement.SumRequests(others)
	}
	return obs, nil
}

// nodeToSourceBlobs enqueues the blobs with a source when a node changes:
// a new node may be a late joiner, a node gone or cordoned changes the
// fan-out.
func (r *PfsBlobReconciler) nodeToSourceBlobs(ctx context.Context, _ client.Object) []reconcile.Request {
	blobs := &pfsv1alpha1.PfsBlobList{}
	if err := r.Client.List(ctx, blobs); err != nil {
		logf.FromContext(ctx).Error(err, "Listing blobs for a node event")
		return nil
	}
	var out []reconcile.Request
	for _, b := range blobs.Items {
		if b.Spec.Source != nil {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: b.Namespace, Name: b.Name}})
		}
	}
	return out
}

// nodeChanged passes node events that can change a fan-out: creation,
// deletion, and updates of labels, schedulability, readiness, allocatable
// resources, or taints (not the periodic status heartbeats).
var nodeChanged = predicate.Funcs{
	UpdateFunc: func(e crevent.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Node)
		n, ok2 := e.ObjectNew.(*corev1.Node)
		if !ok1 || !ok2 {
			return true
		}
		return !equality.Semantic.DeepEqual(o.Labels, n.Labels) || o.Spec.Unschedulable != n.Spec.Unschedulable ||
			nodeUsable(o) != nodeUsable(n) || !equality.Semantic.DeepEqual(o.Status.Allocatable, n.Status.Allocatable) ||
			!equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints)
	},
}
