// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/placement"
	"packetfs.io/operator/internal/podspec"
)

// The NUMA placement of a transfer's pods (docs/design/numa.md). gather reads the
// nodes' topology (topology.go); decideTransferRun builds the pod the plan
// asks for and asks placement.Place where it goes (placeNUMA); the pure
// functions here turn that decision into status and Events, and a
// TopologyAffinityError into a misfit.

// noFitRecheck is how often a transfer that waits for a node to fit
// decides again. Room frees when another transfer's pods end (which wakes
// it too), but the zones' publisher shows it a few seconds later
// (nfd-topology-updater: 3 s here), so the wake-up alone often comes too
// early; at most --max-active-transfers transfers wait like this.
const noFitRecheck = 5 * time.Second

// maxMisfits is status.numaMisfits' MaxItems.
const maxMisfits = 16

// maxPlacementReason is status.<side>.numaPlacement.reason's MaxLength.
const maxPlacementReason = 1024

// placedPod is the NUMA decision for the pod the plan asks for.
type placedPod struct {
	// Component is podspec.ComponentReceiver or podspec.ComponentSender.
	Component string
	Pod       string
	Decision  placement.Decision
}

// numaPolicy is spec.numa, Preferred when unset (the CRD's default).
func numaPolicy(x *pfsv1alpha1.PfsTransfer) pfsv1alpha1.NUMAPolicy {
	if x.Spec.NUMA == "" {
		return pfsv1alpha1.NUMAPolicyPreferred
	}
	return x.Spec.NUMA
}

// numaRequest is what the decision places for pod: its requests, under
// spec.numa, away from the misfits (Preferred: Required fails on one).
func numaRequest(x *pfsv1alpha1.PfsTransfer, pod *corev1.Pod) placement.Request {
	req := placement.Request{Policy: numaPolicy(x), Resources: placement.PodResources(pod)}
	for _, m := range x.Status.NUMAMisfits {
		req.Misfits = append(req.Misfits, m.Node)
	}
	return req
}

// catchUpSince is when the transfer began waiting for a NodeResourceTopology
// to catch up (Placed=False, TopologyCatchUp), or zero.
func catchUpSince(conds []metav1.Condition) time.Time {
	if c := meta.FindStatusCondition(conds, pfsv1alpha1.ConditionPlaced); c != nil &&
		c.Status == metav1.ConditionFalse && c.Reason == pfsv1alpha1.ReasonTopologyCatchUp {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}

// sideName is how messages name a component.
func sideName(component string) string {
	if component == podspec.ComponentSender {
		return "sender"
	}
	return "receiver"
}

// numaPlacementStatus is a decision as status (and the pod's annotation) shows it.
func numaPlacementStatus(d placement.Decision) *pfsv1alpha1.NUMAPlacement {
	return &pfsv1alpha1.NUMAPlacement{Node: d.Node, Zone: d.Zone, Fit: pfsv1alpha1.NUMAFit(d.Fit),
		Reason: truncate(d.Reason, maxPlacementReason)}
}

// recordPlacement writes a created pod's decision into its side's status
// and the NUMAPlaced Event.
func recordPlacement(st *pfsv1alpha1.PfsTransferStatus, plan *transferPlan, p placedPod) {
	es := &st.Receiver
	if p.Component == podspec.ComponentSender {
		es = &st.Sender
	}
	if *es == nil {
		*es = &pfsv1alpha1.EndpointStatus{Placement: pfsv1alpha1.Placement{Pod: p.Pod}}
	}
	d := p.Decision
	(*es).NUMAPlacement = numaPlacementStatus(d)
	plan.Events = append(plan.Events, event{Type: corev1.EventTypeNormal, Reason: pfsv1alpha1.ReasonNUMAPlaced,
		Message: truncate(fmt.Sprintf("%s pod %s: %s", sideName(p.Component), p.Pod, d.Reason), maxPlacementReason)})
}

// noFit follows a decision that found no node: the pod was not created
// and the old status stands but for why. When every candidate is a misfit
// the transfer fails (nowhere is left to try); otherwise it waits.
func (d *transferDecision) noFit(p placedPod) {
	reason := p.Decision.Reason
	if p.Decision.OnlyMisfits {
		d.fail(pfsv1alpha1.ReasonTopologyAffinityError, fmt.Sprintf(
			"the kubelet of every candidate node rejected a pod of this transfer (status.numaMisfits): %s", reason))
		return
	}
	if w := p.Decision.RecheckAfter; w > 0 {
		msg := fmt.Sprintf("%s pod %s waits: %s", sideName(p.Component), p.Pod, reason)
		if d.st.Phase == "" {
			d.st.Phase = pfsv1alpha1.PhasePending
		}
		setWaitCondition(&d.st.Conditions, pfsv1alpha1.ReasonTopologyCatchUp, msg, d.x.Generation, d.obs.Now)
		d.cond(pfsv1alpha1.ConditionSucceeded, false, pfsv1alpha1.ReasonTopologyCatchUp, msg)
		d.plan.RequeueAfter = w
		return
	}
	msg := fmt.Sprintf("%s pod %s is not created: %s", sideName(p.Component), p.Pod, reason)
	if c := meta.FindStatusCondition(d.x.Status.Conditions, pfsv1alpha1.ConditionPlaced); c == nil || c.Reason != pfsv1alpha1.ReasonNoNUMAFit {
		d.emit(corev1.EventTypeWarning, pfsv1alpha1.ReasonNoNUMAFit, truncate(msg, maxPlacementReason))
	}
	if d.st.Phase == "" {
		d.st.Phase = pfsv1alpha1.PhasePending
	}
	// No node fitting is a pod that cannot be scheduled, before it exists:
	// it fails after as long a wait (a resource no node has must not leave
	// the transfer Pending for ever).
	timeout := d.obs.Timing.UnschedulableTimeout
	since := waitSince(d.x.Status.Conditions, pfsv1alpha1.ReasonNoNUMAFit, d.obs.Now)
	if timeout > 0 && !d.obs.Now.Before(since.Add(timeout)) {
		d.fail(pfsv1alpha1.ReasonUnschedulable, fmt.Sprintf("no node could take it within %s: %s", timeout, msg))
		return
	}
	setWaitCondition(&d.st.Conditions, pfsv1alpha1.ReasonNoNUMAFit, msg, d.x.Generation, d.obs.Now)
	d.cond(pfsv1alpha1.ConditionSucceeded, false, pfsv1alpha1.ReasonNoNUMAFit, msg)
	d.plan.RequeueAfter = noFitRecheck
	if timeout > 0 {
		d.plan.RequeueAfter = min(noFitRecheck, since.Add(timeout).Sub(d.obs.Now))
	}
}

// misfit records the node of a pod the kubelet rejected with
// TopologyAffinityError (numa Preferred or Required: with None the
// operator did not place it). It says whether the node is new to the list:
// with Preferred, that attempt is then not counted against backoffLimit.
func (d *transferDecision) misfit(pod *corev1.Pod, es *pfsv1alpha1.EndpointStatus) bool {
	node := pod.Spec.NodeName
	if numaPolicy(d.x) == pfsv1alpha1.NUMAPolicyNone || node == "" || len(d.st.NUMAMisfits) >= maxMisfits ||
		slices.ContainsFunc(d.st.NUMAMisfits, func(m pfsv1alpha1.NUMAMisfit) bool { return m.Node == node }) {
		return false
	}
	m := pfsv1alpha1.NUMAMisfit{Node: node, Pod: pod.Name}
	if es != nil && es.NUMAPlacement != nil && es.NUMAPlacement.Node == node {
		m.Zone = es.NUMAPlacement.Zone
	}
	d.st.NUMAMisfits = append(d.st.NUMAMisfits, m)
	return true
}

// countedFailures are the failed attempts spec.backoffLimit counts: with
// numa Preferred, an attempt that ended on a new misfit is a placement
// miss (placed elsewhere next), not a failure of the run.
func (d *transferDecision) countedFailures() int32 {
	n := d.st.FailedAttempts
	if numaPolicy(d.x) == pfsv1alpha1.NUMAPolicyPreferred {
		n -= int32(len(d.st.NUMAMisfits))
	}
	return n
}

// misfitDetail is o's detail; a TopologyAffinityError also records the
// node as a misfit, and says what follows.
func (d *transferDecision) misfitDetail(o podOutcome, pod *corev1.Pod, es *pfsv1alpha1.EndpointStatus) string {
	if o.Reason != pfsv1alpha1.ReasonTopologyAffinityError || !d.misfit(pod, es) {
		return o.Detail
	}
	if numaPolicy(d.x) == pfsv1alpha1.NUMAPolicyPreferred {
		return o.Detail + "; node " + pod.Spec.NodeName + " recorded as a misfit: the next attempt is placed elsewhere"
	}
	return o.Detail + "; node " + pod.Spec.NodeName + " recorded as a misfit"
}
