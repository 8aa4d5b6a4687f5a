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
