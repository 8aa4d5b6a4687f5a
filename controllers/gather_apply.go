// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
)

// The reads (gather) and writes (apply) of other objects that the
// reconcilers share.

// getBlob returns the named PfsBlob, or nil when it does not exist.
func getBlob(ctx context.Context, d *Deps, namespace, name string) (*pfsv1alpha1.PfsBlob, error) {
	blob := &pfsv1alpha1.PfsBlob{}
	if err := d.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, blob); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return blob, nil
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

// createPod creates a pod that owner owns. Any error comes back as the
// createFailure the decide functions read (a refusal shows in status).
func createPod(ctx context.Context, d *Deps, owner client.Object, pod *corev1.Pod) *createFailure {
	created, err := createChild(ctx, d, owner, pod)
	if err != nil {
		return &createFailure{Pod: pod.Name, Err: err}
	}
	if created {
		logf.FromContext(ctx).Info("Created Pod", "pod", client.ObjectKeyFromObject(pod), "component", pod.Labels[podspec.LabelComponent])
	}
	return nil
}

// createChild creates obj with owner as its controller. An existing object
// of that name is the one we want (names are deterministic): created is
// then false and err nil.
func createChild(ctx context.Context, d *Deps, owner, obj client.Object) (created bool, err error) {
	if err := ctrl.SetControllerReference(owner, obj, d.Client.Scheme()); err != nil {
		return false, err
	}
	if err := d.Client.Create(ctx, obj); err != nil {
		return false, ignoreAlreadyExists(err)
	}
	return true, nil
}

// podEnded reports whether a pod has stopped for good.
func podEnded(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// ignoreAlreadyExists treats creating an existing child as done: the name is
// deterministic, so it is the child we want.
func ignoreAlreadyExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
