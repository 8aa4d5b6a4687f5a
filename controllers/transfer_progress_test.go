// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/holdermetrics"
)

func TestStepTransferProgress(t *testing.T) {
	every := 5 * time.Second
	recv := testPod("x-recv", "recv", withIP("10.0.0.9"))
	last := metav1.NewTime(t0)
	target := &holdermetrics.Target{Pod: "x-recv", Host: "10.0.0.9", Port: 9470}
	for name, tc := range map[string]struct {
		phase pfsv1alpha1.Phase
		read  *metav1.Time
		after time.Duration
		noIP  bool
		port  int32
		want  transferProgressStep
	}{
		"running, never read":         {phase: pfsv1alpha1.PhaseRunning, port: 9470, want: transferProgressStep{target: target, wake: every}},
		"running, read 2 s ago":       {phase: pfsv1alpha1.PhaseRunning, read: &last, after: 2 * time.Second, port: 9470, want: transferProgressStep{wake: 3 * time.Second}},
		"running, read 6 s ago":       {phase: pfsv1alpha1.PhaseRunning, read: &last, after: 6 * time.Second, port: 9470, want: transferProgressStep{target: target, wake: every}},
		"running, receiver has no IP": {phase: pfsv1alpha1.PhaseRunning, noIP: true, port: 9470},
		"running, no pages":           {phase: pfsv1alpha1.PhaseRunning},
		"placing":                     {phase: pfsv1alpha1.PhasePlacing, port: 9470},
		"succeeded":                   {phase: pfsv1alpha1.PhaseSucceeded, port: 9470},
	} {
		t.Run(name, func(t *testing.T) {
			st := &pfsv1alpha1.PfsTransferStatus{Phase: tc.phase, ProgressTime: tc.read}
			p := recv
			if tc.noIP {
				p = testPod("x-recv", "recv")
			}
			got := stepTransferProgress(st, p, tc.port, t0.Add(tc.after), every)
			if (got.target == nil) != (tc.want.target == nil) || got.target != nil && *got.target != *tc.want.target || got.wake != tc.want.wake {
				t.Errorf("step %+v (target %+v), want %+v", got, got.target, tc.want)
			}
		})
	}
}

func TestPercentOf(t *testing.T) {
	for _, tc := range []struct {
		done, planned int64
		want          string
	}{{0, 0, ""}, {5, 0, ""}, {0, 100, "0%"}, {45, 100, "45%"}, {99, 100, "99%"}, {100, 100, "100%"}, {150, 100, "100%"},
		{1 << 40, 16 << 40, "6%"}} {
		if got := percentOf(tc.done, tc.planned); got != tc.want {
			t.Errorf("percentOf(%d, %d) = %q, want %q", tc.done, tc.planned, got, tc.want)
		}
	}
}
