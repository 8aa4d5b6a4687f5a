// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

func boolStatus(b bool) metav1.ConditionStatus {
	if b {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

// backoff is the delay before attempt n+1 after n failures: base, 2*base,
// 4*base ... capped at max.
func backoff(failures int32, base, max time.Duration) time.Duration {
	if failures < 1 {
		return 0
	}
	d := base
	for i := int32(1); i < failures && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	return d
}
