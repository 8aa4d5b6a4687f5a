// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/result"
)

// podState is what the controllers need to know about one data-plane pod.
type podState int

const (
	podWaiting       podState = iota // not scheduled yet, or starting
	podUnschedulable                 // the scheduler found no node (within the timeout)
	podRunning                       // running, not ready
	podReady                         // running and ready
	podSucceeded                     // exited 0; Message is its result
	podFailed                        // failed; Reason and Detail say why
)

// podOutcome classifies a pod at one instant.
type podOutcome struct {
	State podState
	// Reason is a condition reason for podFailed (and for podUnschedulable).
	Reason string
	// Detail is a human-readable explanation for podFailed/podUnschedulable.
	Detail string
	// Retriable says whether a new attempt may succeed where this one failed.
	Retriable bool
	// Message is the container's termination message (the CLI's JSON).
	Message string
	// RetryAt is when a waiting pod times out: unschedulable, or scheduled but not started.
	RetryAt time.Time
}

// CLI exit codes (the data-plane contract).
const (
	exitError    = 1
	exitUsage    = 2
	exitMismatch = 3
	exitRefused  = 4
	exitTimeout  = 5
	// exitUnavailable: the transport cannot run on this node (AF_XDP
	// socket or XDP program refused, no interface for it).
	exitUnavailable = 6
)

// classifyPod reads a pod's phase, reason, conditions and its container's
// state. numa decides whether a TopologyAffinityError may be retried.
func classifyPod(pod *corev1.Pod, container string, now time.Time, unschedulableTimeout time.Duration,
	numa pfsv1alpha1.NUMAPolicy, retryTopology func(pfsv1alpha1.NUMAPolicy) bool) podOutcome {
	cs := containerStatus(pod, container)
	var term *corev1.ContainerStateTerminated
	if cs != nil {
		term = cs.State.Terminated
		if term == nil && cs.LastTerminationState.Terminated != nil {
			term = cs.LastTerminationState.Terminated
		}
	}
	msg := ""
	if term != nil {
		msg = term.Message
	}
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		return podOutcome{State: podSucceeded, Message: msg}
	case corev1.PodFailed:
		return failedOutcome(pod, term, numa, retryTopology)
	}
	if term != nil && term.ExitCode != 0 {
		// The container failed; the pod's phase follows shortly.
		return failedOutcome(pod, term, numa, retryTopology)
	}
	if pod.DeletionTimestamp != nil {
		return podOutcome{State: podFailed, Reason: pfsv1alpha1.ReasonPodFailed,
			Detail: fmt.Sprintf("pod %s is being deleted", pod.Name), Retriable: true}
	}
	if pod.Status.Phase == corev1.PodRunning {
		if podReadyCondition(pod) {
			return podOutcome{State: podReady}
		}
		return podOutcome{State: podRunning}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			since := c.LastTransitionTime.Time
			if since.IsZero() {
				since = pod.CreationTimestamp.Time
			}
			o := podOutcome{State: podUnschedulable, Reason: pfsv1alpha1.ReasonUnschedulable,
				Detail:  fmt.Sprintf("pod %s cannot be scheduled: %s", pod.Name, c.Message),
				RetryAt: since.Add(unschedulableTimeout), Retriable: true}
			if !now.Before(o.RetryAt) {
				o.State = podFailed
				o.Detail = fmt.Sprintf("pod %s could not be scheduled within %s: %s", pod.Name, unschedulableTimeout, c.Message)
			}
			return o
		}
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			return startingOutcome(pod, cs, c.LastTransitionTime.Time, now, unschedulableTimeout)
		}
	}
	return podOutcome{State: podWaiting}
}

// startingOutcome is a scheduled pod whose containers have not started: it
// waits, until it has waited as long as an unschedulable pod may. A sandbox
// whose network cannot be set up (a CNI error, a NetworkAttachmentDefinition
// that does not exist) or an image that cannot be pulled keeps a pod here
// for ever, and the pod's status only says "ContainerCreating": the attempt
// fails with what the container status says and where to look for the rest.
func startingOutcome(pod *corev1.Pod, cs *corev1.ContainerStatus, scheduled, now time.Time, timeout time.Duration) podOutcome {
	if scheduled.IsZero() {
		scheduled = pod.CreationTimestamp.Time
	}
	retryAt := scheduled.Add(timeout)
	if now.Before(retryAt) {
		return podOutcome{State: podWaiting, RetryAt: retryAt}
	}
	waiting := "its containers were never created"
	if cs != nil && cs.State.Waiting != nil {
		waiting = "waiting: " + cs.State.Waiting.Reason
		if m := strings.TrimSpace(cs.State.Waiting.Message); m != "" {
			waiting += ": " + truncate(m, 200)
		}
	}
	return podOutcome{State: podFailed, Reason: pfsv1alpha1.ReasonStartTimeout, Retriable: true,
		Detail: fmt.Sprintf("pod %s was scheduled to node %s but did not start within %s (%s); "+
			"kubectl describe pod %s shows why (sandbox or network setup, image pull)",
			pod.Name, pod.Spec.NodeName, timeout, waiting, pod.Name)}
}

func failedOutcome(pod *corev1.Pod, term *corev1.ContainerStateTerminated, numa pfsv1alpha1.NUMAPolicy,
	retryTopology func(pfsv1alpha1.NUMAPolicy) bool) podOutcome {
	o := podOutcome{State: podFailed, Reason: pfsv1alpha1.ReasonPodFailed, Retriable: true}
	switch pod.Status.Reason {
	case "Evicted":
		o.Reason, o.Detail = pfsv1alpha1.ReasonEvicted, fmt.Sprintf("pod %s was evicted: %s", pod.Name, pod.Status.Message)
		return o
	case "TopologyAffinityError":
		o.Reason = pfsv1alpha1.ReasonTopologyAffinityError
		o.Detail = fmt.Sprintf("pod %s was rejected by the kubelet's Topology Manager on node %s (numa %s): %s",
			pod.Name, pod.Spec.NodeName, numa, pod.Status.Message)
		o.Retriable = retryTopology(numa)
		return o
	case "DeadlineExceeded":
		o.Reason, o.Detail, o.Retriable = pfsv1alpha1.ReasonDeadlineExceeded,
			fmt.Sprintf("pod %s ran longer than spec.activeDeadlineSeconds", pod.Name), false
		return o
	}
	if term == nil {
		o.Detail = fmt.Sprintf("pod %s failed: %s %s", pod.Name, pod.Status.Reason, pod.Status.Message)
		return o
	}
	o.Message = term.Message
	if term.Reason == "OOMKilled" {
		o.Reason, o.Detail = pfsv1alpha1.ReasonOOMKilled,
			fmt.Sprintf("container %s of pod %s exceeded its memory limit (exit code %d)", containerName(pod), pod.Name, term.ExitCode)
		return o
	}
	cliErr := cliError(term.Message)
	switch term.ExitCode {
	case exitMismatch:
		o.Reason, o.Retriable = pfsv1alpha1.ReasonIntegrityMismatch, false
	case exitRefused:
		o.Reason, o.Retriable = pfsv1alpha1.ReasonRefused, false
	case exitTimeout:
		o.Reason = pfsv1alpha1.ReasonTimeout
	case exitUnavailable:
		// The same node refuses the same way again: the spec (transport,
		// network) or the node must change, which the message says.
		o.Reason, o.Retriable = pfsv1alpha1.ReasonTransportUnavailable, false
	case exitUsage:
		// The operator built arguments this data-plane image does not
		// understand: retrying cannot help.
		o.Retriable = false
		if cliErr == "" {
			cliErr = "usage error: the operator and the data-plane image disagree on pfs options"
		}
	}
	if cliErr == "" {
		cliErr = strings.TrimSpace(term.Reason)
	}
	o.Detail = fmt.Sprintf("pod %s exited with code %d", pod.Name, term.ExitCode)
	if sig := term.ExitCode - 128; sig > 0 && sig < 65 {
		// The runtime reports a process killed by a signal as 128+signal.
		o.Detail += fmt.Sprintf(" (killed by signal %d%s)", sig, signalName(sig))
	}
	if cliErr != "" {
		o.Detail += ": " + cliErr
	}
	return o
}

// cliError extracts the CLI's "error" from a termination message, or a short
// prefix of a message that is not JSON (a crash may leave anything there).
func cliError(msg string) string {
	if strings.TrimSpace(msg) == "" {
		return ""
	}
	if t, err := result.ParseTransfer(msg); err == nil && t.Error != "" {
		return t.Error
	}
	if b, err := result.ParseBlobCreate(msg); err == nil && b.Error != "" {
		return b.Error
	}
	return truncate(strings.TrimSpace(msg), 256)
}

// truncate cuts s to at most n bytes, "..." included, so the result fits a
// field of MaxLength n; it cuts at a rune boundary, never inside a UTF-8
// sequence.
func truncate(s string, n int) string {
	const ellipsis = "..."
	if len(s) <= n {
		return s
	}
	if n <= len(ellipsis) {
		return ellipsis[:max(n, 0)]
	}
	cut := n - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

func containerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

func containerName(pod *corev1.Pod) string {
	if len(pod.Spec.Containers) > 0 {
		return pod.Spec.Containers[0].Name
	}
	return ""
}

func podReadyCondition(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// signalName names the signals a data-plane process is usually killed by.
func signalName(sig int32) string {
	switch sig {
	case 9:
		return ", SIGKILL"
	case 15:
		return ", SIGTERM"
	case 6:
		return ", SIGABRT"
	case 11:
		return ", SIGSEGV"
	case 7:
		return ", SIGBUS"
	}
	return ""
}
