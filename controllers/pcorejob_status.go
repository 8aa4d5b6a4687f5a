// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/placement"
	"packetfs.io/operator/internal/podspec"
	"packetfs.io/operator/internal/result"
)

// pcoreObservation is what the pcore job controller gathered.
type pcoreObservation struct {
	Now time.Time
	// Blob is the referenced PfsBlob; nil when not found.
	Blob *pfsv1alpha1.PfsBlob
	// Pod is the job's pod; nil when absent (confirmed against the apiserver).
	Pod    *corev1.Pod
	Timing Timing
	// CreateFailed is a pod the apiserver did not create: decidePcore then
	// answers as refusedPcore does, which Reconcile calls itself after
	// apply (decide does not run twice).
	CreateFailed *createFailure
}

// pcorePlan is what the controller must do after decidePcore.
type pcorePlan struct {
	CreatePod bool
	BlobNodes []string
	// DeleteActivePod stops a pod that still runs after the job ended.
	DeleteActivePod bool
	RequeueAfter    time.Duration
	Events          []event
}

// decidePcore is the pcore job state machine as one pure function. A job
// runs once: a benchmark that failed is reported, not silently re-run.
func decidePcore(j *pfsv1alpha1.PcoreJob, obs pcoreObservation) (pfsv1alpha1.PcoreJobStatus, pcorePlan) {
	if f := obs.CreateFailed; f != nil {
		st, events := refusedPcore(j, obs, f)
		return st, pcorePlan{Events: events}
	}
	d := &pcoreDecision{j: j, obs: obs, st: *j.Status.DeepCopy()}
	d.runDecision = runDecision{phase: &d.st.Phase, completion: &d.st.CompletionTime,
		decision: decision{gen: j.Generation, now: obs.Now, conds: &d.st.Conditions, events: &d.plan.Events, requeue: &d.plan.RequeueAfter}}
	d.run()
	return d.st, d.plan
}

// refusedPcore is the status after the apiserver did not create the
// decided pod: the stored one, with Placed saying why when it was refused
// (decideCreateFailed), so status never names a pod that does not exist.
func refusedPcore(j *pfsv1alpha1.PcoreJob, obs pcoreObservation, f *createFailure) (pfsv1alpha1.PcoreJobStatus, []event) {
	st := *j.Status.DeepCopy()
	var events []event
	st.Conditions, events = decideCreateFailed(st.Conditions, j.Generation, obs.Now, f)
	return st, events
}

// pcoreDecision is one pass of the job state machine: the shared run
// helpers (cond, emit, wakeIn, failRun) write into st and plan.
type pcoreDecision struct {
	runDecision
	j    *pfsv1alpha1.PcoreJob
	obs  pcoreObservation
	st   pfsv1alpha1.PcoreJobStatus
	plan pcorePlan
}

// run walks the steps in order: the first step that decides ends it.
func (d *pcoreDecision) run() {
	d.st.ObservedGeneration = d.j.Generation
	d.st.Label = pfsv1alpha1.PcoreJobLabel
	if d.st.Phase == "" {
		d.st.Phase = pfsv1alpha1.PhasePending
	}
	if d.st.Phase.IsTerminal() {
		d.plan.DeleteActivePod = true
		return
	}
	if !d.mayRun() {
		return
	}
	if d.obs.Pod == nil {
		d.createPod()
		return
	}
	d.follow()
}

// fail ends the job and stops its pod.
func (d *pcoreDecision) fail(reason, msg string) {
	d.failRun(reason, msg)
	d.plan.DeleteActivePod = true
}

// wait keeps the job Pending for an input it needs.
func (d *pcoreDecision) wait(reason, msg string) {
	d.st.Phase = pfsv1alpha1.PhasePending
	d.cond(pfsv1alpha1.ConditionPlaced, false, reason, msg)
	d.cond(pfsv1alpha1.ConditionSucceeded, false, reason, msg)
}

// mayRun evaluates the preconditions. A pod that status names but that is
// gone counts as launched: the job fails for it rather than waiting for
// the blob.
func (d *pcoreDecision) mayRun() bool {
	j, obs := d.j, d.obs
	name := podspec.PcorePodName(j.Name)
	lost := obs.Pod == nil && d.st.Placement != nil && d.st.Placement.Pod == name
	in := &runInputs{Kind: "job", Namespace: j.Namespace, Created: j.CreationTimestamp.Time, Now: obs.Now,
		ActiveDeadlineSeconds: j.Spec.ActiveDeadlineSeconds, BlobRef: &j.Spec.BlobRef, Range: j.Spec.Range, Blob: obs.Blob,
		PodsExist: obs.Pod != nil, Launched: obs.Pod != nil || lost}
	if in.Blob != nil {
		in.BlobNodes = placement.ReadyBlobNodes(in.Blob)
	}
	if v := runPreconditions.evaluate(in); v != nil {
		if v.Fail {
			d.fail(v.Reason, v.Message)
		} else {
			d.wait(v.Reason, v.Message)
		}
		return false
	}
	d.plan.BlobNodes = in.BlobNodes
	if lost {
		d.fail(pfsv1alpha1.ReasonPodFailed, fmt.Sprintf("pod %s was deleted before the job finished", name))
		return false
	}
	return true
}

// createPod asks for the job's pod.
func (d *pcoreDecision) createPod() {
	name := podspec.PcorePodName(d.j.Name)
	d.plan.CreatePod = true
	d.st.Phase = pfsv1alpha1.PhasePlacing
	d.st.Placement = &pfsv1alpha1.Placement{Pod: name}
	d.cond(pfsv1alpha1.ConditionPlaced, false, pfsv1alpha1.ReasonPodsPending, "pod created, waiting to be scheduled")
	d.cond(pfsv1alpha1.ConditionSucceeded, false, pfsv1alpha1.ReasonPodsPending, "waiting for the pod to start")
	d.emit(corev1.EventTypeNormal, pfsv1alpha1.ReasonPodsPending, "Created pod "+name)
}

// follow records where the pod runs and follows it to its result.
func (d *pcoreDecision) follow() {
	st, pod, now := &d.st, d.obs.Pod, d.obs.Now
	if st.Placement == nil {
		st.Placement = &pfsv1alpha1.Placement{}
	}
	st.Placement.Pod, st.Placement.Node = pod.Name, pod.Spec.NodeName
	o := classifyPod(pod, podspec.ContainerPcore, now, d.obs.Timing.UnschedulableTimeout, d.j.Spec.NUMA, placement.RetryOnTopologyError)
	switch o.State {
	case podFailed:
		d.fail(o.Reason, o.Detail)
		return
	case podUnschedulable:
		d.cond(pfsv1alpha1.ConditionPlaced, false, pfsv1alpha1.ReasonPodsPending, o.Detail)
		d.plan.RequeueAfter = o.RetryAt.Sub(now)
		return
	case podWaiting:
		st.Phase = pfsv1alpha1.PhasePlacing
		if !o.RetryAt.IsZero() {
			d.wakeIn(o.RetryAt.Sub(now)) // a starting pod's timeout
		}
		if pod.Spec.NodeName == "" {
			return
		}
	}
	if pod.Spec.NodeName != "" {
		d.cond(pfsv1alpha1.ConditionPlaced, true, pfsv1alpha1.ReasonPodsScheduled, "on node "+pod.Spec.NodeName)
	}
	switch o.State {
	case podRunning, podReady:
		st.Phase = pfsv1alpha1.PhaseRunning
		if st.StartTime == nil {
			st.StartTime = &metav1.Time{Time: now.Truncate(time.Second)}
		}
		d.cond(pfsv1alpha1.ConditionSucceeded, false, pfsv1alpha1.ReasonRunning, "pcores are processing the range")
	case podSucceeded:
		d.finish(o)
	}
}

// finish reads the result of a pod that succeeded.
func (d *pcoreDecision) finish(o podOutcome) {
	j, st, pod := d.j, &d.st, d.obs.Pod
	r, err := result.ParsePcore(o.Message, j.Spec.Baseline != pfsv1alpha1.BaselineNone)
	if err != nil {
		d.fail(pfsv1alpha1.ReasonResultInvalid, fmt.Sprintf("pod %s: %v", pod.Name, err))
		return
	}
	if err := mergePcore(j, r, st); err != nil {
		d.fail(pfsv1alpha1.ReasonResultInvalid, fmt.Sprintf("pod %s: %v", pod.Name, err))
		return
	}
	st.Phase = pfsv1alpha1.PhaseSucceeded
	st.CompletionTime = &metav1.Time{Time: d.now.Truncate(time.Second)}
	msg := fmt.Sprintf("%s MB/s on %d pcores, result %s", st.ThroughputMBps, j.Spec.Pcores, st.Result)
	if st.BaselineMBps != "" {
		msg += fmt.Sprintf("; baseline %s MB/s, CPUpwn %s", st.BaselineMBps, st.CPUpwn)
	}
	d.cond(pfsv1alpha1.ConditionSucceeded, true, pfsv1alpha1.ReasonCompleted, msg)
	d.emit(corev1.EventTypeNormal, pfsv1alpha1.ReasonCompleted, msg)
}

// mergePcore writes a pcore result into status. The throughput is
// bytes / seconds as measured; CPUpwn is recomputed from the two rates.
func mergePcore(j *pfsv1alpha1.PcoreJob, r *result.Pcore, st *pfsv1alpha1.PcoreJobStatus) error {
	if !r.Complete {
		return fmt.Errorf("the run stopped before it completed (%s)", r.Error)
	}
	win := secondsDuration(r.Seconds)
	st.ProcessedBytes = r.Bytes
	st.ElapsedSeconds = pfsv1alpha1.FormatSeconds(win)
	st.ThroughputMBps = pfsv1alpha1.FormatMBps(r.Bytes, win)
	switch j.Spec.Op {
	case pfsv1alpha1.OpXor, pfsv1alpha1.OpAdd:
		st.Result = r.RangeCRC32CAfter
	default:
		st.Result = r.Value
	}
	if b := r.Baseline; b != nil {
		if !b.ResultMatch {
			return fmt.Errorf("pcores and baseline disagree: pcore result %s, baseline %s", r.Value, b.Value)
		}
		st.BaselineMBps = strconv.FormatFloat(b.MBps, 'f', 1, 64)
		st.CPUpwn = pfsv1alpha1.FormatRatio(float64(r.Bytes)/1e6/r.Seconds, b.MBps)
		if !j.Spec.Op.UsesImm() || j.Spec.Op == pfsv1alpha1.OpCountEq {
			st.BaselineResult = b.Value
		}
	}
	if st.Placement == nil {
		st.Placement = &pfsv1alpha1.Placement{}
	}
	st.Placement.CPUs = placement.CPUSet(r.CPUs)
	st.Placement.NUMAZone = placement.ValidNUMAZone(r.NUMANode)
	return nil
}
