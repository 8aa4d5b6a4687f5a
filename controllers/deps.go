// SPDX-License-Identifier: Apache-2.0

// Package controllers holds one reconciler per Kind: PfsBlob (a holder
// DaemonSet and a token Secret), PfsTransfer (a receiver pod, then a sender
// pod) and PcoreJob (one pod). Every Reconcile has one shape: gather what
// exists → decide with a pure function (the *_status.go files; time comes
// from the injected clock) → apply the children → one status write, only
// when it changed (commit.go) → the decided Events after it. Children are
// built by internal/podspec; the preconditions that PfsTransfer and PcoreJob
// share are one chain (preconditions.go).
package controllers

import (
	"time"

	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"packetfs.io/operator/internal/podspec"
)

// Deps are what every reconciler needs besides its own settings.
type Deps struct {
	// Client reads through the manager's cache and writes to the apiserver.
	Client client.Client
	// APIReader reads the apiserver directly: used to confirm that a pod the
	// cache does not show is really gone before calling it deleted, and for
	// Secrets, which are not cached (no list/watch on Secrets is needed).
	APIReader client.Reader
	Recorder  record.EventRecorder
	// Clock is the time source; tests inject their own.
	Clock clock.PassiveClock
	// Pods configures the data-plane containers.
	Pods podspec.Config
	// Timing bounds waits and retries.
	Timing Timing
	// Progress reads running holders' and receivers' /metrics pages into
	// status (progress.go, transfer_progress.go); nil: none is read.
	Progress ProgressReader
}

// Timing bounds waits and retries; it comes from the manager's flags.
type Timing struct {
	// UnschedulableTimeout is how long a pod may stay unschedulable before
	// its attempt fails with reason Unschedulable.
	UnschedulableTimeout time.Duration
	// BackoffBase and BackoffMax bound the exponential delay between attempts.
	BackoffBase, BackoffMax time.Duration
	// TopologyCatchUp is how long after a pod change on a node a
	// NodeResourceTopology that shows no room is given to catch up before
	// the node is taken by the scheduler's count (placement.Request.CatchUp).
	TopologyCatchUp time.Duration
	// MaxRequeueAfter caps every wake-up a reconcile plans (a pod's start
	// deadline, the queue's recheck, a backoff); 0: none. Decisions are
	// pure in the clock, so a look before the deadline decides the same
	// and plans again. A workqueue cannot take back a planned wake-up, so
	// the cap also bounds how long after an object's last change one may
	// still fire: the e2e's loop check waits for that, not for minutes.
	MaxRequeueAfter time.Duration
	// ProgressInterval is the least time between two reads of a running
	// fan-out's progress into status, and between two status writes of a
	// blob that change nothing but progress and node states
	// (progress.go); zero means DefaultTiming's.
	ProgressInterval time.Duration
}

// requeueAfter is the wake-up a reconcile asks for: d, capped at
// MaxRequeueAfter when that is set; 0 stays 0 (no wake-up).
func (t Timing) requeueAfter(d time.Duration) time.Duration {
	if t.MaxRequeueAfter > 0 && d > t.MaxRequeueAfter {
		return t.MaxRequeueAfter
	}
	return d
}

// DefaultTiming follows the Job controller's retry delays.
var DefaultTiming = Timing{UnschedulableTimeout: 5 * time.Minute, BackoffBase: 10 * time.Second, BackoffMax: 6 * time.Minute,
	TopologyCatchUp: 10 * time.Second, ProgressInterval: 5 * time.Second}

// backoff is the delay before attempt n+1 after n failures: base, 2*base,
// 4*base ... capped at ceiling.
func backoff(failures int32, base, ceiling time.Duration) time.Duration {
	if failures < 1 {
		return 0
	}
	d := base
	for i := int32(1); i < failures && d < ceiling; i++ {
		d *= 2
	}
	return min(d, ceiling)
}
