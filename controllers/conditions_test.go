// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestPodRefused(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	old := []metav1.Condition{{Type: "Succeeded", Status: "False", Reason: "ReceiverNotReady", LastTransitionTime: metav1.NewTime(t0)}}
	tests := map[string]struct {
		err       error
		wantOK    bool
		wantConds map[string]string
	}{
		"forbidden by Pod Security": {err: apierrors.NewForbidden(pods, "p", errors.New(`violates PodSecurity "baseline:latest"`)), wantOK: true,
			wantConds: map[string]string{"Succeeded": "False/ReceiverNotReady", "Placed": "False/PodsPending"}},
		"invalid": {err: apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", nil), wantOK: true,
			wantConds: map[string]string{"Succeeded": "False/ReceiverNotReady", "Placed": "False/PodsPending"}},
		"conflict: only retried":  {err: apierrors.NewConflict(pods, "p", errors.New("x"))},
		"timeout: only retried":   {err: apierrors.NewTimeoutError("slow", 1)},
		"plain error: only retry": {err: errors.New("connection refused")},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			conds, ok := podRefused(old, 1, t0.Add(time.Minute), "p", tc.err)
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if !ok {
				return
			}
			if diff := cmp.Diff(tc.wantConds, condSummary(conds)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if len(old) != 1 {
				t.Error("the old conditions were modified")
			}
		})
	}
}
