// SPDX-License-Identifier: Apache-2.0

// Package controllers holds one reconciler per Kind: PfsBlob (a holder
// DaemonSet and a token Secret), PfsTransfer (a receiver pod, then a sender
// pod) and PcoreJob (one pod). Each Reconcile gathers what exists, asks a
// pure decide/compute function (the *_status.go files) for the new status
// and the actions, applies the actions and writes status once, only when it
// changed. Children are built by internal/podspec.
package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
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
}

// getPod returns the named pod, or nil when it does not exist: absent from
// the cache and confirmed absent on the apiserver (the cache may lag behind
// a pod created a moment ago).
func getPod(ctx context.Context, d *Deps, namespace, name string) (*corev1.Pod, error) {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	pod := &corev1.Pod{}
	err := d.Client.Get(ctx, key, pod)
	if err == nil {
		return pod, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, err
	}
	if err := d.APIReader.Get(ctx, key, pod); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return pod, nil
}

// podEnded reports whether a pod has stopped for good.
func podEnded(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// requeueOnConflict turns a stale-object conflict on a status write into a
// quiet requeue: the cache lagged behind the apiserver, and the next
// reconcile recomputes status from the fresh object.
func requeueOnConflict(err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		return ctrl.Result{Requeue: true}, nil
	}
	return ctrl.Result{}, err
}

// ignoreAlreadyExists treats creating an existing child as done: the name is
// deterministic, so it is the child we want.
func ignoreAlreadyExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
