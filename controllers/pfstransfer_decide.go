// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	corev1 "k8s.io/api/core/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/placement"
	"packetfs.io/operator/internal/podspec"
)

// The one decision of a PfsTransfer reconcile: the state machine
// (decideTransfer), then, when it asks for a pod, the finished pod placed
// on a node and NUMA zone from the topology gather read. apply creates and
// deletes what it returns and nothing else.

// slotAction is what becomes of a transfer's admission slot.
type slotAction int

const (
	// slotKeep leaves the slot as it is.
	slotKeep slotAction = iota
	// slotTake holds a slot: the first receiver is created, or waits a few
	// seconds for a NodeResourceTopology to catch up.
	slotTake
	// slotRelease gives the slot back: the first receiver found no node,
	// and waiting for room must not hold the queue's room too.
	slotRelease
)

// transferOutcome is everything one reconcile decided.
type transferOutcome struct {
	Status pfsv1alpha1.PfsTransferStatus
	Plan   transferPlan
	// Pod is the finished receiver or sender to create, carrying its NUMA
	// decision; nil when none is.
	Pod  *corev1.Pod
	Slot slotAction
}

// decideTransferFunc is the signature of the reconciler's decide step.
type decideTransferFunc func(cfg podspec.Config, x *pfsv1alpha1.PfsTransfer, obs transferObservation) transferOutcome

// decideTransferRun runs the state machine once and finishes the pod it
// asks for: built, placed (placement.Place over obs's nodes and topology),
// and built again on the chosen node and zone. When no node fits, the old
// status stands but for why (decideNoFit) and no pod is created. Pure.
func decideTransferRun(cfg podspec.Config, x *pfsv1alpha1.PfsTransfer, obs transferObservation) transferOutcome {
	st, plan := decideTransfer(x, obs)
	out := transferOutcome{Status: st, Plan: plan, Slot: slotKeep}
	if !plan.CreateReceiver && !plan.CreateSender {
		return out
	}
	in := podspec.TransferInputs{Attempt: st.FailedAttempts, Blob: obs.Blob, BlobNodes: plan.BlobNodes, Source: obs.Source, Delta: plan.Delta}
	build := func(in podspec.TransferInputs) *corev1.Pod { return podspec.ReceiverPod(cfg, x, in) }
	component := podspec.ComponentReceiver
	if plan.CreateSender {
		build = func(in podspec.TransferInputs) *corev1.Pod { return podspec.SenderPod(cfg, x, in, plan.ReceiverAddr) }
		component = podspec.ComponentSender
	}
	// The first receiver was admitted from the queue: its slot is held.
	if plan.CreateReceiver && st.FailedAttempts == 0 {
		out.Slot = slotTake
	}
	pod := build(in)
	placed := placedPod{Component: component, Pod: pod.Name, Decision: placeNUMA(x, obs, pod)}
	if d := placed.Decision; d.Fit == placement.FitNone {
		// A wait of seconds for a publisher to catch up keeps its slot.
		if st.FailedAttempts == 0 && x.Status.Receiver == nil && d.RecheckAfter == 0 {
			out.Slot = slotRelease
		}
		out.Status, out.Plan = decideNoFit(x, obs, placed)
		return out
	}
	in.NUMA = numaPlacementStatus(placed.Decision)
	out.Pod = build(in)
	recordPlacement(&out.Status, &out.Plan, placed)
	return out
}

// decideNoFit is the decision when no node fits the pod the state machine
// asked for: the old status, which names no pod that was not created, with
// Placed saying why (transferDecision.noFit).
func decideNoFit(x *pfsv1alpha1.PfsTransfer, obs transferObservation, p placedPod) (pfsv1alpha1.PfsTransferStatus, transferPlan) {
	d := newTransferDecision(x, obs)
	d.noFit(p)
	return d.st, d.plan
}

// placeNUMA decides pod's node and NUMA zone among its candidates (numa
// None: the scheduler places it). Pure.
func placeNUMA(x *pfsv1alpha1.PfsTransfer, obs transferObservation, pod *corev1.Pod) placement.Decision {
	req := numaRequest(x, pod)
	req.Now, req.CatchUp = obs.Now, obs.Timing.TopologyCatchUp
	req.CatchUpSince = catchUpSince(x.Status.Conditions)
	if req.Policy == pfsv1alpha1.NUMAPolicyNone {
		return placement.Place(nil, nil, req)
	}
	return placement.Place(candidateNodes(pod, obs.Nodes), obs.Topology, req)
}

// refusedTransfer is the status after the apiserver did not create the
// decided pod: the stored one, with Placed saying why when it was refused
// (decideCreateFailed). It keeps status from naming a pod that does not
// exist.
func refusedTransfer(x *pfsv1alpha1.PfsTransfer, obs transferObservation, f *createFailure) (pfsv1alpha1.PfsTransferStatus, []event) {
	st := *x.Status.DeepCopy()
	var events []event
	st.Conditions, events = decideCreateFailed(st.Conditions, x.Generation, obs.Now, f)
	return st, events
}
