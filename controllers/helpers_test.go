// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// t0 is the fixed "now" of the unit tests: every decision takes time as input.
var t0 = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

var timing = Timing{UnschedulableTimeout: time.Minute, BackoffBase: 10 * time.Second, BackoffMax: time.Minute}

type podOpt func(*corev1.Pod)

func testPod(name, container string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(t0.Add(-time.Minute))},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: container}}},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func onNode(n string) podOpt { return func(p *corev1.Pod) { p.Spec.NodeName = n } }

func withIP(ip string) podOpt { return func(p *corev1.Pod) { p.Status.PodIP = ip } }

func isRunning(ready bool) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: st})
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name, Ready: ready,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	}
}

func isTerminated(code int32, reason, msg string) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodSucceeded
		if code != 0 || reason == "OOMKilled" {
			p.Status.Phase = corev1.PodFailed
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: msg}}}}
	}
}

func podReason(reason, msg string) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, reason, msg
	}
}

func unschedulable(since time.Time) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available: 3 Insufficient cpu.",
			LastTransitionTime: metav1.NewTime(since)}}
	}
}

// hasReason reports whether any condition carries reason.
func hasReason(conds []metav1.Condition, reason string) bool {
	for _, c := range conds {
		if c.Reason == reason {
			return true
		}
	}
	return false
}

// condSummary reduces conditions to "Type=Status/Reason" for comparisons.
func condSummary(conds []metav1.Condition) map[string]string {
	out := map[string]string{}
	for _, c := range conds {
		out[c.Type] = string(c.Status) + "/" + c.Reason
	}
	return out
}

func condMessage(conds []metav1.Condition, typ string) string {
	for _, c := range conds {
		if c.Type == typ {
			return c.Message
		}
	}
	return ""
}

// eventReasons lists the reasons of events in order.
func eventReasons(events []event) []string {
	out := make([]string, 0, len(events))
	for _, e := range events {
		out = append(out, e.Reason)
	}
	return out
}
