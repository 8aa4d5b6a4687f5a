// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	for n, want := range map[int32]time.Duration{0: 0, 1: 10 * time.Second, 2: 20 * time.Second, 3: 40 * time.Second, 4: time.Minute, 30: time.Minute} {
		if got := backoff(n, 10*time.Second, time.Minute); got != want {
			t.Errorf("backoff(%d) = %s, want %s", n, got, want)
		}
	}
}

func TestRequeueAfterCap(t *testing.T) {
	for _, tc := range []struct{ max, d, want time.Duration }{
		{0, 2 * time.Minute, 2 * time.Minute}, // no cap: the deadline itself
		{10 * time.Second, 2 * time.Minute, 10 * time.Second},
		{10 * time.Second, 3 * time.Second, 3 * time.Second},
		{10 * time.Second, 0, 0}, // no wake-up planned stays none
	} {
		if got := (Timing{MaxRequeueAfter: tc.max}).requeueAfter(tc.d); got != tc.want {
			t.Errorf("cap %s: requeueAfter(%s) = %s, want %s", tc.max, tc.d, got, tc.want)
		}
	}
}
