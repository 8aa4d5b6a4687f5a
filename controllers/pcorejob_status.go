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
	// CreateFailed is set when the pod the first decision asked for was not
	// created; the controller then decides again with it.
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
	st := *j.Status.DeepCopy()
	var plan pcorePlan
	now := obs.Now
	if f := obs.CreateFailed; f != nil {
		// Keep the old status (it must not name a pod that does not exist);
		// Placed says why.
		st.Conditions, plan.Events = decideCreateFailed(st.Conditions, j.Generation, now, f)
		return st, plan
	}
	cond := func(typ string, ok bool, reason, msg string) {
		setCondition(&st.Conditions, typ, boolStatus(ok), reason, msg, j.Generation, now)
	}
	fail := func(reason, msg string) {
		st.Phase = pfsv1alpha1.PhaseFailed
		st.CompletionTime = &metav1.Time{Time: now.Truncate(time.Second)}
		cond(pfsv1alpha1.ConditionFailed, true, reason, msg)
		cond(pfsv1alpha1.ConditionSucceeded, false, reason, msg)
		plan.DeleteActivePod = true
		plan.Events = append(plan.Events, event{corev1.EventTypeWarning, reason, msg})
	}
	wait := func(reason, msg string) {
		st.Phase = pfsv1alpha1.PhasePending
		cond(pfsv1alpha1.ConditionPlaced, false, reason, msg)
		cond(pfsv1alpha1.ConditionSucceeded, false, reason, msg)
	}
	st.ObservedGeneration = j.Generation
	st.Label = pfsv1alpha1.PcoreJobLabel
	if st.Phase == "" {
		st.Phase = pfsv1alpha1.PhasePending
	}
	if st.Phase.IsTerminal() {
		plan.DeleteActivePod = true
		return st, plan
	}
	name := podspec.PcorePodName(j.Name)
	// A pod that status names but that is gone counts as launched: the job
	// fails for it below rather than waiting for the blob.
	lost := obs.Pod == nil && st.Placement != nil && st.Placement.Pod == name
	in := &runInputs{Kind: "job", Namespace: j.Namespace, Created: j.CreationTimestamp.Time, Now: now,
		ActiveDeadlineSeconds: j.Spec.ActiveDeadlineSeconds, BlobRef: &j.Spec.BlobRef, Range: j.Spec.Range, Blob: obs.Blob,
		PodsExist: obs.Pod != nil, Launched: obs.Pod != nil || lost}
	if in.Blob != nil {
		in.BlobNodes = placement.ReadyBlobNodes(in.Blob)
	}
	if v := runPreconditions.evaluate(in); v != nil {
		if v.Fail {
			fail(v.Reason, v.Message)
		} else {
			wait(v.Reason, v.Message)
		}
		return st, plan
	}
	plan.BlobNodes = in.BlobNodes
	if lost {
		fail(pfsv1alpha1.ReasonPodFailed, fmt.Sprintf("pod %s was deleted before the job finished", name))
		return st, plan
	}
	if obs.Pod == nil {
		plan.CreatePod = true
		st.Phase = pfsv1alpha1.PhasePlacing
		st.Placement = &pfsv1alpha1.Placement{Pod: name}
		cond(pfsv1alpha1.ConditionPlaced, false, pfsv1alpha1.ReasonPodsPending, "pod created, waiting to be scheduled")
		cond(pfsv1alpha1.ConditionSucceeded, false, pfsv1alpha1.ReasonPodsPending, "waiting for the pod to start")
		plan.Events = append(plan.Events, event{corev1.EventTypeNormal, pfsv1alpha1.ReasonPodsPending, "Created pod " + name})
		return st, plan
	}
	if st.Placement == nil {
		st.Placement = &pfsv1alpha1.Placement{}
	}
	st.Placement.Pod, st.Placement.Node = obs.Pod.Name, obs.Pod.Spec.NodeName
	o := classifyPod(obs.Pod, podspec.ContainerPcore, now, obs.Timing.UnschedulableTimeout, j.Spec.NUMA, placement.RetryOnTopologyError)
	switch o.State {
	case podFailed:
		fail(o.Reason, o.Detail)
		return st, plan
	case podUnschedulable:
		cond(pfsv1alpha1.ConditionPlaced, false, pfsv1alpha1.ReasonPodsPending, o.Detail)
		plan.RequeueAfter = o.RetryAt.Sub(now)
		return st, plan
	case podWaiting:
		st.Phase = pfsv1alpha1.PhasePlacing
		if !o.RetryAt.IsZero() && o.RetryAt.After(now) {
			plan.RequeueAfter = o.RetryAt.Sub(now) // a starting pod's timeout
		}
		if obs.Pod.Spec.NodeName == "" {
			return st, plan
		}
	}
	if obs.Pod.Spec.NodeName != "" {
		cond(pfsv1alpha1.ConditionPlaced, true, pfsv1alpha1.ReasonPodsScheduled, "on node "+obs.Pod.Spec.NodeName)
	}
	if o.State == podRunning || o.State == podReady {
		st.Phase = pfsv1alpha1.PhaseRunning
		if st.StartTime == nil {
			st.StartTime = &metav1.Time{Time: now.Truncate(time.Second)}
		}
		cond(pfsv1alpha1.ConditionSucceeded, false, pfsv1alpha1.ReasonRunning, "pcores are processing the range")
		return st, plan
	}
	if o.State != podSucceeded {
		return st, plan
	}
	want := j.Spec.Baseline != pfsv1alpha1.BaselineNone
	r, err := result.ParsePcore(o.Message, want)
	if err != nil {
		fail(pfsv1alpha1.ReasonResultInvalid, fmt.Sprintf("pod %s: %v", obs.Pod.Name, err))
		return st, plan
	}
	if err := mergePcore(j, r, &st); err != nil {
		fail(pfsv1alpha1.ReasonResultInvalid, fmt.Sprintf("pod %s: %v", obs.Pod.Name, err))
		return st, plan
	}
	st.Phase = pfsv1alpha1.PhaseSucceeded
	st.CompletionTime = &metav1.Time{Time: now.Truncate(time.Second)}
	msg := fmt.Sprintf("%s MB/s on %d pcores, result %s", st.ThroughputMBps, j.Spec.Pcores, st.Result)
	if st.BaselineMBps != "" {
		msg += fmt.Sprintf("; baseline %s MB/s, CPUpwn %s", st.BaselineMBps, st.CPUpwn)
	}
	cond(pfsv1alpha1.ConditionSucceeded, true, pfsv1alpha1.ReasonCompleted, msg)
	plan.Events = append(plan.Events, event{corev1.EventTypeNormal, pfsv1alpha1.ReasonCompleted, msg})
	return st, plan
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
