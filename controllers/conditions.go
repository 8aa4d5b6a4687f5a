// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// setCondition sets a condition with the transition time taken from the
// injected clock; meta.SetStatusCondition keeps the old time when the status
// did not change, so an unchanged condition does not change status.
func setCondition(conds *[]metav1.Condition, typ string, status metav1.ConditionStatus, reason, msg string, gen int64, now time.Time) {
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: truncate(msg, 32000),
		ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(now.Truncate(time.Second)),
	})
}

// setWaitCondition sets Placed=False for a wait. Unlike setCondition, a new
// reason restarts LastTransitionTime, so it tells when this wait began
// (waitSince), which bounds waits that must end (a missing network, no node
// that fits).
func setWaitCondition(conds *[]metav1.Condition, reason, msg string, gen int64, now time.Time) {
	if c := meta.FindStatusCondition(*conds, pfsv1alpha1.ConditionPlaced); c != nil && c.Reason != reason {
		meta.RemoveStatusCondition(conds, pfsv1alpha1.ConditionPlaced)
	}
	setCondition(conds, pfsv1alpha1.ConditionPlaced, metav1.ConditionFalse, reason, msg, gen, now)
}

// waitSince is when the run began waiting for reason: the Placed
// condition's transition time when it carries reason, else now.
func waitSince(conds []metav1.Condition, reason string, now time.Time) time.Time {
	if c := meta.FindStatusCondition(conds, pfsv1alpha1.ConditionPlaced); c != nil && c.Reason == reason &&
		c.Status == metav1.ConditionFalse && !c.LastTransitionTime.IsZero() {
		return c.LastTransitionTime.Time
	}
	return now
}

func boolStatus(b bool) metav1.ConditionStatus {
	if b {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

// podRefused handles an apiserver that refuses a pod for reasons of its own
// (Pod Security Admission, quota, validation). It returns a copy of the
// object's current conditions with Placed=False saying why; the caller keeps
// the rest of the old status, so status never names a pod that does not
// exist. ok is false for other errors (conflicts, timeouts), only retried.
func podRefused(conds []metav1.Condition, gen int64, now time.Time, pod string, err error) ([]metav1.Condition, bool) {
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		return nil, false
	}
	out := make([]metav1.Condition, len(conds))
	copy(out, conds)
	setCondition(&out, pfsv1alpha1.ConditionPlaced, metav1.ConditionFalse, pfsv1alpha1.ReasonPodsPending, refusedMessage(pod, err), gen, now)
	return out, true
}

func refusedMessage(pod string, err error) string {
	return fmt.Sprintf("the apiserver refused to create pod %s (retrying): %v", pod, err)
}

// createFailure is what applying a plan reports when the apiserver did not
// create the pod the plan asked for. The controller then takes the stored
// status with Placed saying why (refusedTransfer, refusedPcore), from the
// same pure function the decide functions use for it (decideCreateFailed).
type createFailure struct {
	// Pod is the name of the pod that was not created.
	Pod string
	Err error
}

// decideCreateFailed is the decision after a failed create, for any Kind:
// the old conditions with Placed=False naming the refusal and a Warning
// Event with the same reason; the caller keeps the rest of the old status.
// An error that is not a refusal (a conflict, a timeout) changes nothing:
// it is only retried.
func decideCreateFailed(conds []metav1.Condition, gen int64, now time.Time, f *createFailure) ([]metav1.Condition, []event) {
	out, ok := podRefused(conds, gen, now, f.Pod, f.Err)
	if !ok {
		return conds, nil
	}
	return out, []event{{Type: corev1.EventTypeWarning, Reason: pfsv1alpha1.ReasonPodsPending, Message: refusedMessage(f.Pod, f.Err)}}
}
