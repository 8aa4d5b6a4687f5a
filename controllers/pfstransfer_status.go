// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/placement"
	"packetfs.io/operator/internal/podspec"
	"packetfs.io/operator/internal/result"
)

// transferObservation is what the transfer controller gathered.
type transferObservation struct {
	Now time.Time
	// Blob is the referenced PfsBlob; nil without blobRef or when not found.
	Blob *pfsv1alpha1.PfsBlob
	// Source is the PfsBlob of spec.delta.sourceRef (mode Delta); nil
	// otherwise or when not found.
	Source *pfsv1alpha1.PfsBlob
	// Receiver and Sender are the current attempt's pods; nil when absent
	// (confirmed against the apiserver, not only the cache).
	Receiver, Sender *corev1.Pod
	Timing           Timing
	// CreateFailed is a pod the apiserver did not create: decideTransfer
	// then answers as refusedTransfer does, which Reconcile calls itself
	// after apply (decide does not run twice).
	CreateFailed *createFailure
	// MissingNetworks names the endpoint networks whose
	// NetworkAttachmentDefinition does not exist (checked before an
	// attempt's pods are created).
	MissingNetworks []string
	// Queue is where the transfer stands in the admission queue, read while
	// its first receiver is missing; nil: no queue.
	Queue *queueState
	// Nodes and Topology are what a NUMA decision reads: the cluster's
	// nodes and what is known of each, by name. Read while a pod of the
	// attempt is missing and spec.numa is not None.
	Nodes    []corev1.Node
	Topology map[string]*placement.NodeTopology
}

// transferPlan is what the controller must do after decideTransfer.
type transferPlan struct {
	CreateReceiver bool
	CreateSender   bool
	// ReceiverAddr is where the sender connects (with CreateSender).
	ReceiverAddr placement.Address
	// BlobNodes restrict blob consumers to nodes holding a Ready copy.
	BlobNodes []string
	// Delta is where a Delta transfer's pods run (mode Delta).
	Delta placement.Delta
	// DeleteActivePods deletes this attempt's pods that have not ended.
	DeleteActivePods bool
	// DeleteAllPods deletes every pod of the transfer (ttlSecondsAfterFinished).
	DeleteAllPods bool
	RequeueAfter  time.Duration
	Events        []event
}

// decideTransfer is the transfer state machine as one pure function: from the
// transfer and what was observed, the new status and the actions to take.
// Order: receiver first; the sender only once the receiver is Ready (it
// listens); results once both pods succeeded.
func decideTransfer(x *pfsv1alpha1.PfsTransfer, obs transferObservation) (pfsv1alpha1.PfsTransferStatus, transferPlan) {
	if f := obs.CreateFailed; f != nil {
		st, events := refusedTransfer(x, obs, f)
		return st, transferPlan{Events: events}
	}
	d := newTransferDecision(x, obs)
	d.run()
	return d.st, d.plan
}

// transferDecision is one pass of the transfer state machine: the shared
// run helpers (cond, emit, wakeIn, failRun) write into st and plan.
type transferDecision struct {
	runDecision
	x    *pfsv1alpha1.PfsTransfer
	obs  transferObservation
	st   pfsv1alpha1.PfsTransferStatus
	plan transferPlan
	// senderWait holds a Delta sender back while no node holds both its
	// blobs Ready (the preconditions no longer ask once the receiver runs).
	senderWait *verdict
}

func newTransferDecision(x *pfsv1alpha1.PfsTransfer, obs transferObservation) *transferDecision {
	d := &transferDecision{x: x, obs: obs, st: *x.Status.DeepCopy()}
	d.runDecision = runDecision{phase: &d.st.Phase, completion: &d.st.CompletionTime,
		decision: decision{gen: x.Generation, now: obs.Now, conds: &d.st.Conditions, events: &d.plan.Events, requeue: &d.plan.RequeueAfter}}
	return d
}

// run walks the steps in order: the first step that decides ends it.
func (d *transferDecision) run() {
	x := d.x
	d.st.ObservedGeneration = x.Generation
	d.st.Label = pfsv1alpha1.TransferLabel(x.Spec.Mode, x.Spec.Transport)
	if d.st.Phase == "" {
		d.st.Phase = pfsv1alpha1.PhasePending
	}
	if d.st.Phase.IsTerminal() {
		d.afterFinish()
		return
	}
	defer d.wakeAtDeadline()
	if !d.mayRun() {
		return
	}
	ro, ok := d.receiver()
	if !ok {
		return
	}
	if d.obs.Sender == nil {
		d.startSender(ro)
		return
	}
	d.progress(ro)
}

// wakeAtDeadline asks for a look at the transfer's activeDeadlineSeconds
// while it has not ended: the verdict is the operator's, written at the
// deadline, and the pods it deletes then end at once (the kubelet's own
// deadline on them is a later backstop, podspec.PodDeadline).
func (d *transferDecision) wakeAtDeadline() {
	s := d.x.Spec.ActiveDeadlineSeconds
	if s == nil || d.st.Phase.IsTerminal() {
		return
	}
	d.wakeIn(deadlineAt(d.x.CreationTimestamp.Time, *s).Sub(d.obs.Now))
}

// mayRun evaluates the preconditions and waits out the backoff after a
// failed attempt.
func (d *transferDecision) mayRun() bool {
	x, obs, now := d.x, d.obs, d.obs.Now
	podsExist := obs.Receiver != nil || obs.Sender != nil
	in := &runInputs{Kind: "transfer", Namespace: x.Namespace, Created: x.CreationTimestamp.Time, Now: now,
		ActiveDeadlineSeconds: x.Spec.ActiveDeadlineSeconds, BlobRef: x.Spec.BlobRef, Range: x.Spec.Range, Blob: obs.Blob,
		PodsExist: podsExist, Launched: podsExist, MissingNetworks: obs.MissingNetworks, WaitTimeout: obs.Timing.UnschedulableTimeout,
		NetworkWaitSince: waitSince(x.Status.Conditions, pfsv1alpha1.ReasonNetworkNotFound, now)}
	if in.BlobRef != nil && in.Blob != nil {
		in.BlobNodes = placement.ReadyBlobNodes(in.Blob)
	}
	if x.Spec.Mode == pfsv1alpha1.ModeDelta && x.Spec.Delta != nil {
		in.SourceRef, in.Source, in.SenderNodeName = &x.Spec.Delta.SourceRef, obs.Source, x.Spec.Sender.NodeName
		var sourceNodes []string
		if in.Source != nil {
			sourceNodes = placement.ReadyBlobNodes(in.Source)
		}
		d.plan.Delta = placement.PlanDelta(in.BlobNodes, sourceNodes, x.Spec.Sender, x.Spec.Receiver)
		in.SenderNodes = d.plan.Delta.SenderNodes
	}
	if v := runPreconditions.evaluate(in); v != nil {
		d.plan.Delta = placement.Delta{}
		d.stop(v)
		return false
	}
	d.plan.BlobNodes = in.BlobNodes
	if in.SourceRef != nil {
		before := *in
		before.Launched = false
		d.senderWait = sourceReadyWithBase(&before)
	}
	if d.st.FailedAttempts > 0 && d.st.LastFailureTime != nil && !podsExist {
		at := d.st.LastFailureTime.Add(backoff(d.st.FailedAttempts, obs.Timing.BackoffBase, obs.Timing.BackoffMax))
		if now.Before(at) {
			d.st.Phase = pfsv1alpha1.PhasePending
			d.plan.RequeueAfter = at.Sub(now)
			return false
		}
	}
	return true
}

// receiver creates the attempt's receiver, or records where it runs and
// classifies it; ok is false when that decided the step.
func (d *transferDecision) receiver() (ro podOutcome, ok bool) {
	x, obs := d.x, d.obs
	attempt := d.st.FailedAttempts
	recvName := podspec.TransferPodName(x.Name, attempt, podspec.ComponentReceiver)
	if obs.Receiver == nil {
		if d.st.Receiver != nil && d.st.Receiver.Pod == recvName {
			d.attemptFailed(pfsv1alpha1.ReasonPodFailed, fmt.Sprintf("receiver pod %s was deleted before the transfer finished", recvName), true)
			return ro, false
		}
		if q := obs.Queue; q != nil && !q.Admitted {
			d.queued(*q)
			return ro, false
		}
		d.plan.CreateReceiver = true
		d.st.Phase = pfsv1alpha1.PhasePlacing
		d.st.Receiver = &pfsv1alpha1.EndpointStatus{Placement: pfsv1alpha1.Placement{Pod: recvName}}
		d.st.Sender = nil
		msg := fmt.Sprintf("Created receiver pod %s (attempt %d)", recvName, attempt+1)
		if x.Spec.Mode == pfsv1alpha1.ModeDelta {
			d.st.Delta = plannedDelta(x, d.plan.Delta)
			if m := d.st.Delta.Message; m != "" {
				msg += "; " + m
			}
		}
		d.cond(pfsv1alpha1.ConditionPlaced, false, pfsv1alpha1.ReasonPodsPending, "receiver pod created, waiting to be scheduled")
		d.cond(pfsv1alpha1.ConditionSucceeded, false, pfsv1alpha1.ReasonReceiverNotReady, "waiting for the receiver to listen")
		d.emit(corev1.EventTypeNormal, pfsv1alpha1.ReasonPodsPending, msg)
		return ro, false
	}
	d.place(&d.st.Receiver, obs.Receiver)
	ro = classifyPod(obs.Receiver, podspec.ContainerReceiver, obs.Now, obs.Timing.UnschedulableTimeout, x.Spec.NUMA, placement.RetryOnTopologyError)
	if ro.State == podFailed && !d.bothEnded(ro) {
		d.attemptFailed(ro.Reason, "receiver: "+d.misfitDetail(ro, obs.Receiver, d.st.Receiver), ro.Retriable)
		return ro, false
	}
	return ro, true
}

// startSender creates the sender once the receiver listens at a known
// address; the transfer stays Placing until then.
func (d *transferDecision) startSender(ro podOutcome) {
	x, obs, now := d.x, d.obs, d.obs.Now
	sendName := podspec.TransferPodName(x.Name, d.st.FailedAttempts, podspec.ComponentSender)
	if d.st.Sender != nil && d.st.Sender.Pod == sendName {
		d.attemptFailed(pfsv1alpha1.ReasonPodFailed, fmt.Sprintf("sender pod %s was deleted before the transfer finished", sendName), true)
		return
	}
	d.st.Phase = pfsv1alpha1.PhasePlacing
	switch ro.State {
	case podSucceeded:
		d.attemptFailed(pfsv1alpha1.ReasonPodFailed, fmt.Sprintf("receiver pod %s exited before the sender started", obs.Receiver.Name), true)
		return
	case podUnschedulable:
		d.cond(pfsv1alpha1.ConditionPlaced, false, pfsv1alpha1.ReasonPodsPending, ro.Detail)
		d.plan.RequeueAfter = ro.RetryAt.Sub(now)
		return
	case podReady:
	default:
		d.requeueAt(ro.RetryAt)
		d.cond(pfsv1alpha1.ConditionPlaced, false, pfsv1alpha1.ReasonPodsPending, "receiver pod "+obs.Receiver.Name+" is starting; the sender is created once it listens")
		d.cond(pfsv1alpha1.ConditionSucceeded, false, pfsv1alpha1.ReasonReceiverNotReady, "waiting for the receiver to listen")
		return
	}
	if v := d.senderWait; v != nil {
		d.cond(pfsv1alpha1.ConditionPlaced, false, v.Reason, "receiver pod "+obs.Receiver.Name+" listens; the sender waits: "+v.Message)
		d.cond(pfsv1alpha1.ConditionSucceeded, false, v.Reason, v.Message)
		return
	}
	addr, err := placement.ReceiverAddress(obs.Receiver, x.Spec.Receiver.Network)
	if err != nil {
		d.cond(pfsv1alpha1.ConditionPlaced, false, pfsv1alpha1.ReasonPodsPending, "receiver pod "+obs.Receiver.Name+" listens; the sender is created once its address is known")
		d.cond(pfsv1alpha1.ConditionSucceeded, false, pfsv1alpha1.ReasonReceiverNotReady, err.Error())
		return
	}
	d.plan.CreateSender, d.plan.ReceiverAddr = true, addr
	d.st.Sender = &pfsv1alpha1.EndpointStatus{Placement: pfsv1alpha1.Placement{Pod: sendName}}
	d.st.StartTime = &metav1.Time{Time: now.Truncate(time.Second)}
	d.cond(pfsv1alpha1.ConditionPlaced, false, pfsv1alpha1.ReasonPodsPending, "sender pod created, waiting to be scheduled")
	d.cond(pfsv1alpha1.ConditionSucceeded, false, pfsv1alpha1.ReasonRunning, "the receiver listens; the sender is starting")
	d.emit(corev1.EventTypeNormal, pfsv1alpha1.ReasonRunning,
		fmt.Sprintf("Receiver %s listens at %s; created sender pod %s", obs.Receiver.Name, addr.HostPort(podspec.ReceiverPort), sendName))
}

// progress follows both pods: placement, the sender's failure, running,
// and the results once both ended.
func (d *transferDecision) progress(ro podOutcome) {
	x, obs, now := d.x, d.obs, d.obs.Now
	d.place(&d.st.Sender, obs.Sender)
	so := classifyPod(obs.Sender, podspec.ContainerSender, now, obs.Timing.UnschedulableTimeout, x.Spec.NUMA, placement.RetryOnTopologyError)
	if so.State == podFailed && !d.bothEnded(so) {
		d.attemptFailed(so.Reason, "sender: "+d.misfitDetail(so, obs.Sender, d.st.Sender), so.Retriable)
		return
	}
	if obs.Receiver.Spec.NodeName != "" && obs.Sender.Spec.NodeName != "" {
		msg := fmt.Sprintf("receiver on node %s, sender on node %s", obs.Receiver.Spec.NodeName, obs.Sender.Spec.NodeName)
		if !meta.IsStatusConditionTrue(d.x.Status.Conditions, pfsv1alpha1.ConditionPlaced) {
			d.emit(corev1.EventTypeNormal, pfsv1alpha1.ReasonPodsScheduled, "Both pods scheduled: "+msg)
		}
		d.cond(pfsv1alpha1.ConditionPlaced, true, pfsv1alpha1.ReasonPodsScheduled, msg)
	} else if so.State == podUnschedulable {
		d.cond(pfsv1alpha1.ConditionPlaced, false, pfsv1alpha1.ReasonPodsPending, so.Detail)
		d.plan.RequeueAfter = so.RetryAt.Sub(now)
		return
	}
	if ended(ro) && ended(so) {
		d.finish(ro, so)
		return
	}
	if so.State == podWaiting {
		d.requeueAt(so.RetryAt)
	}
	if so.State == podRunning || so.State == podReady || so.State == podSucceeded {
		if d.x.Status.Phase != pfsv1alpha1.PhaseRunning {
			d.emit(corev1.EventTypeNormal, pfsv1alpha1.ReasonRunning, "Sender "+obs.Sender.Name+" is running: moving bytes")
		}
		d.st.Phase = pfsv1alpha1.PhaseRunning
		d.cond(pfsv1alpha1.ConditionSucceeded, false, pfsv1alpha1.ReasonRunning, "moving bytes")
	}
}

func ended(o podOutcome) bool { return o.State == podSucceeded || o.State == podFailed }

// bothEnded lets an integrity mismatch wait for both sides' reports, so the
// failed transfer still shows what was measured and both checksums.
func (d *transferDecision) bothEnded(o podOutcome) bool {
	return o.Reason == pfsv1alpha1.ReasonIntegrityMismatch && d.obs.Sender != nil
}

// place records where a pod runs.
func (d *transferDecision) place(es **pfsv1alpha1.EndpointStatus, pod *corev1.Pod) {
	if *es == nil {
		*es = &pfsv1alpha1.EndpointStatus{}
	}
	(*es).Pod, (*es).Node = pod.Name, pod.Spec.NodeName
	if (*es).NUMAPlacement == nil {
		(*es).NUMAPlacement = podspec.NUMAPlacementOf(pod) // the decision's status write may have been lost
	}
}

// stop follows a precondition's verdict.
func (d *transferDecision) stop(v *verdict) {
	if v.Fail {
		d.fail(v.Reason, v.Message)
		return
	}
	d.wait(v.Reason, v.Message)
	if v.RecheckAfter > 0 {
		d.plan.RequeueAfter = v.RecheckAfter
	}
}

// wait keeps the transfer Pending for an input it needs.
func (d *transferDecision) wait(reason, msg string) {
	d.st.Phase = pfsv1alpha1.PhasePending
	setWaitCondition(&d.st.Conditions, reason, msg, d.x.Generation, d.obs.Now)
	d.cond(pfsv1alpha1.ConditionSucceeded, false, reason, msg)
}

// attemptFailed counts a failed attempt and either schedules the next one
// after a backoff or fails the transfer.
func (d *transferDecision) attemptFailed(reason, detail string, retriable bool) {
	d.st.FailedAttempts++
	d.st.LastFailureTime = &metav1.Time{Time: d.obs.Now.Truncate(time.Second)}
	d.plan.DeleteActivePods = true
	limit := int32(0)
	if d.x.Spec.BackoffLimit != nil {
		limit = *d.x.Spec.BackoffLimit
	}
	switch {
	case !retriable:
		d.fail(reason, detail)
	case d.countedFailures() > limit:
		d.fail(pfsv1alpha1.ReasonBackoffLimitExceeded, fmt.Sprintf("%d attempt(s) failed and spec.backoffLimit is %d; last failure: %s: %s",
			d.st.FailedAttempts, limit, reason, detail))
	default:
		wait := backoff(d.st.FailedAttempts, d.obs.Timing.BackoffBase, d.obs.Timing.BackoffMax)
		msg := fmt.Sprintf("attempt %d failed: %s; retrying in %s", d.st.FailedAttempts, detail, wait)
		d.st.Phase = pfsv1alpha1.PhasePending
		d.cond(pfsv1alpha1.ConditionSucceeded, false, reason, msg)
		d.plan.RequeueAfter = wait
		d.emit(corev1.EventTypeWarning, reason, msg)
	}
}

// queueRecheck is how often a queued transfer looks at the queue although
// no slot was seen to free (a missed event, an operator restart).
const queueRecheck = 30 * time.Second

// queued keeps a transfer Pending in the admission queue.
func (d *transferDecision) queued(q queueState) {
	msg := queuedMessage(q)
	if c := meta.FindStatusCondition(d.x.Status.Conditions, pfsv1alpha1.ConditionPlaced); c == nil || c.Reason != pfsv1alpha1.ReasonQueued {
		d.emit(corev1.EventTypeNormal, pfsv1alpha1.ReasonQueued, msg)
	}
	d.wait(pfsv1alpha1.ReasonQueued, msg)
	d.plan.RequeueAfter = queueRecheck
}

// requeueAt asks to be woken at t (a starting pod's timeout), unless a
// sooner wake-up is already planned; a zero t asks nothing.
func (d *transferDecision) requeueAt(t time.Time) {
	if !t.IsZero() {
		d.wakeIn(t.Sub(d.obs.Now))
	}
}

// fail ends the transfer with Failed=True and the reason.
func (d *transferDecision) fail(reason, msg string) {
	d.failRun(reason, msg)
	d.plan.DeleteActivePods = true
	d.afterFinish()
}

// finish reads both results once both pods ended.
func (d *transferDecision) finish(ro, so podOutcome) {
	recvName, sendName := d.obs.Receiver.Name, d.obs.Sender.Name
	rr, err := result.ParseTransfer(ro.Message)
	if err != nil {
		d.fail(pfsv1alpha1.ReasonResultInvalid, fmt.Sprintf("receiver pod %s: %v", recvName, err))
		return
	}
	sr, err := result.ParseTransfer(so.Message)
	if err != nil {
		d.fail(pfsv1alpha1.ReasonResultInvalid, fmt.Sprintf("sender pod %s: %v", sendName, err))
		return
	}
	if err := mergeTransfer(d.x, sr, rr, &d.st); err != nil {
		d.fail(pfsv1alpha1.ReasonResultInvalid, err.Error())
		return
	}
	if d.st.Integrity != nil && d.st.Integrity.Result == pfsv1alpha1.IntegrityMismatch {
		d.st.FailedAttempts++
		d.fail(pfsv1alpha1.ReasonIntegrityMismatch, fmt.Sprintf("%s checksums differ: sender %s, receiver %s",
			d.st.Integrity.Algorithm, d.st.Integrity.SenderChecksum, d.st.Integrity.ReceiverChecksum))
		return
	}
	if !rr.OK || !sr.OK {
		// Exit 0 (or the integrity exit) with ok=false: the report contradicts itself.
		d.fail(pfsv1alpha1.ReasonResultInvalid, fmt.Sprintf("a side reported ok=false: sender %q, receiver %q", sr.Error, rr.Error))
		return
	}
	d.st.Phase = pfsv1alpha1.PhaseSucceeded
	d.st.CompletionTime = &metav1.Time{Time: d.obs.Now.Truncate(time.Second)}
	msg := fmt.Sprintf("moved %d bytes in %ss: %s MB/s, %s MB/CPU-s, integrity %s",
		d.st.EffectiveBytes, d.st.ElapsedSeconds, d.st.EffectiveMBps, d.st.MBPerCPUSecond, d.st.Integrity.Result)
	if ds := d.st.Delta; ds != nil {
		msg += "; " + deltaSummary(ds)
	}
	d.cond(pfsv1alpha1.ConditionSucceeded, true, pfsv1alpha1.ReasonCompleted, msg)
	d.emit(corev1.EventTypeNormal, pfsv1alpha1.ReasonCompleted, msg)
	d.afterFinish()
}

// afterFinish removes pods still running and, after
// ttlSecondsAfterFinished, every pod; the transfer itself stays.
func (d *transferDecision) afterFinish() {
	d.plan.DeleteActivePods = true
	ttl := d.x.Spec.TTLSecondsAfterFinished
	if ttl == nil || d.st.CompletionTime == nil {
		return
	}
	at := d.st.CompletionTime.Add(time.Duration(*ttl) * time.Second)
	if d.obs.Now.Before(at) {
		d.plan.RequeueAfter = at.Sub(d.obs.Now)
		return
	}
	d.plan.DeleteAllPods = true
}

// mergeTransfer writes both sides' results into status. The receiver is the
// authority on bytes delivered and wire bytes; elapsed is the longer of the
// two windows, so the rate is never flattered; CPU is both sides together.
func mergeTransfer(x *pfsv1alpha1.PfsTransfer, s, r *result.Transfer, st *pfsv1alpha1.PfsTransferStatus) error {
	if !s.Measured || !r.Measured {
		return fmt.Errorf("a side reported no measurements: sender %q, receiver %q", s.Error, r.Error)
	}
	if s.Bytes != r.Bytes {
		return fmt.Errorf("the sender reports %d effective bytes and the receiver %d", s.Bytes, r.Bytes)
	}
	elapsed := r.ElapsedSeconds
	if s.ElapsedSeconds > elapsed {
		elapsed = s.ElapsedSeconds
	}
	win := secondsDuration(elapsed)
	cpu := secondsDuration(s.UserSeconds + s.SysSeconds + r.UserSeconds + r.SysSeconds)
	st.EffectiveBytes, st.WireBytes = r.Bytes, r.WireBytes
	st.ElapsedSeconds = pfsv1alpha1.FormatSeconds(win)
	st.EffectiveMBps = pfsv1alpha1.FormatMBps(r.Bytes, win)
	st.CPU = cpuTime(s.UserSeconds+r.UserSeconds, s.SysSeconds+r.SysSeconds)
	st.MBPerCPUSecond = pfsv1alpha1.FormatMBPerCPUSecond(r.Bytes, cpu)
	repaired := r.Repaired
	if s.Repaired > repaired {
		repaired = s.Repaired
	}
	st.Grams = &pfsv1alpha1.GramCounters{Sent: s.Grams, Received: r.Grams, Rejected: r.DecodeErrors, Repaired: repaired}
	alg := pfsv1alpha1.IntegrityCheck(x.Spec.Integrity)
	if alg == "" {
		alg = pfsv1alpha1.IntegrityCheck(pfsv1alpha1.IntegrityCRC32C)
	}
	if x.Spec.Mode == pfsv1alpha1.ModeDelta {
		// Delta moves no grams; both sides check the source's sha256.
		st.Grams, alg = nil, pfsv1alpha1.IntegritySHA256
		var err error
		if st.Delta, err = mergeDelta(st.Delta, s.Delta, r.Delta); err != nil {
			return err
		}
	}
	for _, side := range []struct {
		es  **pfsv1alpha1.EndpointStatus
		res *result.Transfer
	}{{&st.Sender, s}, {&st.Receiver, r}} {
		if *side.es == nil {
			*side.es = &pfsv1alpha1.EndpointStatus{}
		}
		es := *side.es
		es.CPU = cpuTime(side.res.UserSeconds, side.res.SysSeconds)
		es.NUMAZone = placement.ValidNUMAZone(side.res.NUMANode)
		es.CPUs = placement.CPUSet(side.res.CPUs)
		switch side.res.AFXDPMode {
		case "zerocopy", "ZeroCopy", "zero-copy":
			es.AFXDPBindMode = pfsv1alpha1.AFXDPZeroCopy
		case "copy", "Copy":
			es.AFXDPBindMode = pfsv1alpha1.AFXDPCopy
		}
	}
	in := &pfsv1alpha1.IntegrityStatus{Algorithm: alg, SenderChecksum: s.Checksum, ReceiverChecksum: r.Checksum}
	switch {
	case alg == pfsv1alpha1.IntegrityCheck(pfsv1alpha1.IntegrityNone):
		in.Result = pfsv1alpha1.IntegrityNotChecked
	case s.Checksum == "" || r.Checksum == "":
		return fmt.Errorf("integrity is %s but a side reported no checksum (sender %q, receiver %q)", alg, s.Checksum, r.Checksum)
	case s.Checksum != r.Checksum || s.Integrity == "MISMATCH" || r.Integrity == "MISMATCH":
		in.Result = pfsv1alpha1.IntegrityMismatch
	default:
		in.Result = pfsv1alpha1.IntegrityOK
	}
	st.Integrity = in
	return nil
}

func secondsDuration(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func cpuTime(user, sys float64) *pfsv1alpha1.CPUTime {
	return &pfsv1alpha1.CPUTime{UserSeconds: strconv.FormatFloat(user, 'f', 3, 64), SysSeconds: strconv.FormatFloat(sys, 'f', 3, 64)}
}
