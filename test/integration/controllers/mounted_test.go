// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
)

// readerPod is a consumer pod with the given volumes (what a user writes;
// nothing of ours in it but the volume).
func readerPod(ns, name string, vols ...corev1.Volume) *corev1.Pod {
	mounts := make([]corev1.VolumeMount, 0, len(vols))
	for _, v := range vols {
		mounts = append(mounts, corev1.VolumeMount{Name: v.Name, MountPath: "/models/" + v.Name, ReadOnly: true})
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{Volumes: vols, Containers: []corev1.Container{{Name: "reader", Image: "reader:v1", VolumeMounts: mounts}}}}
}

// A blob that pods mount is not deleted from under them: it carries the
// finalizer pfs.packetfs.io/mounted, lists the pods (an inline volume from
// another namespace, a claim bound to a csi.packetfs.io PersistentVolume) in
// status.mountedBy, and when deleted keeps its holders, saying which pods
// hold it, until the last of them is gone or has ended.
func TestBlobDeleteWhileMounted(t *testing.T) {
	ctx := testContext(t)
	ns, other := newNamespace(t, ctx), newNamespace(t, ctx)
	blob := readyBlob(t, ctx, ns, "llama", "node-a")
	eventually(t, "finalizer added", func() error {
		if err := get(ctx, ns, blob.Name, blob); err != nil {
			return err
		}
		if !slices.Contains(blob.Finalizers, "pfs.packetfs.io/mounted") {
			return fmt.Errorf("finalizers %v", blob.Finalizers)
		}
		return nil
	})

	// A pod of another namespace, inline; a pod of the blob's namespace
	// through a static PV + PVC; a pod of another blob's volume, which
	// must not count.
	inline := readerPod(other, "inline-reader", corev1.Volume{Name: "model", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
		Driver: "csi.packetfs.io", ReadOnly: ptr.To(true), VolumeAttributes: map[string]string{"blob": "llama", "namespace": ns}}}})
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "llama-" + ns},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: "llama"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "csi.packetfs.io", VolumeHandle: ns + "/llama", ReadOnly: true, VolumeAttributes: map[string]string{"blob": "llama"}}},
		}}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "llama", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany},
			VolumeName: pv.Name, StorageClassName: ptr.To(""),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}}}}
	claimed := readerPod(ns, "claim-reader", corev1.Volume{Name: "model", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "llama", ReadOnly: true}}})
	unrelated := readerPod(ns, "other-reader", corev1.Volume{Name: "model", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
		Driver: "csi.packetfs.io", ReadOnly: ptr.To(true), VolumeAttributes: map[string]string{"blob": "qwen"}}}})
	for _, o := range []client.Object{inline, pv, pvc, claimed, unrelated} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, pv) })

	both := []string{ns + "/claim-reader", other + "/inline-reader"}
	slices.Sort(both) // the namespaces' names are random
	mountedBy := func(want []string, reason string) func() error {
		return func() error {
			if err := get(ctx, ns, blob.Name, blob); err != nil {
				return err
			}
			if !slices.Equal(blob.Status.MountedBy, want) || int(blob.Status.MountedPods) != len(want) {
				return fmt.Errorf("mountedBy %v (%d), want %v", blob.Status.MountedBy, blob.Status.MountedPods, want)
			}
			return conditionIs(blob.Status.Conditions, pfsv1alpha1.ConditionMounted, metav1.ConditionTrue, reason)
		}
	}
	eventually(t, "mountedBy lists both readers", mountedBy(both, pfsv1alpha1.ReasonMountedByPods))

	if err := env.Client.Delete(ctx, blob); err != nil {
		t.Fatal(err)
	}
	eventually(t, "deletion waits for the readers", mountedBy(both, pfsv1alpha1.ReasonDeletionWaitsForMounts))
	c := meta.FindStatusCondition(blob.Status.Conditions, pfsv1alpha1.ConditionMounted)
	for _, p := range both {
		if !strings.Contains(c.Message, p) {
			t.Errorf("the Mounted condition does not name %s: %q", p, c.Message)
		}
	}
	holders := func() error {
		if err := get(ctx, ns, blob.Name, blob); err != nil {
			return fmt.Errorf("the blob went while mounted: %w", err)
		}
		if blob.DeletionTimestamp.IsZero() {
			return fmt.Errorf("no deletionTimestamp")
		}
		if err := get(ctx, ns, podspec.HolderName(blob.Name), &appsv1.DaemonSet{}); err != nil {
			return fmt.Errorf("holder DaemonSet: %w", err)
		}
		return get(ctx, ns, podspec.HolderName(blob.Name)+"-node-a", &corev1.Pod{})
	}
	consistently(t, "blob and holders kept while mounted", 2*time.Second, holders)

	// The inline reader goes; the claim's reader still holds it.
	if err := env.Client.Delete(ctx, inline, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "mountedBy follows the pods", mountedBy([]string{ns + "/claim-reader"}, pfsv1alpha1.ReasonDeletionWaitsForMounts))
	consistently(t, "blob and holders kept while one pod mounts it", time.Second, holders)

	// The last reader ends (its volumes are torn down): the deletion proceeds.
	setStatus(t, ctx, ns, claimed.Name, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })
	eventually(t, "blob deleted once no pod mounts it", func() error {
		err := get(ctx, ns, blob.Name, &pfsv1alpha1.PfsBlob{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("blob still there (%v): mountedBy %v", err, blob.Status.MountedBy)
	})
}

// A blob no pod mounts goes at once: the finalizer does not hold it.
func TestBlobDeleteNotMounted(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	blob := &pfsv1alpha1.PfsBlob{ObjectMeta: metav1.ObjectMeta{Name: "idle", Namespace: ns},
		Spec: pfsv1alpha1.PfsBlobSpec{Size: resource.MustParse("64Mi")}}
	if err := env.Client.Create(ctx, blob); err != nil {
		t.Fatal(err)
	}
	eventually(t, "finalizer added", func() error {
		if err := get(ctx, ns, blob.Name, blob); err != nil {
			return err
		}
		if !slices.Contains(blob.Finalizers, "pfs.packetfs.io/mounted") {
			return fmt.Errorf("finalizers %v", blob.Finalizers)
		}
		return nil
	})
	if meta.FindStatusCondition(blob.Status.Conditions, pfsv1alpha1.ConditionMounted) != nil {
		t.Errorf("a blob never mounted has a Mounted condition: %+v", blob.Status.Conditions)
	}
	if err := env.Client.Delete(ctx, blob); err != nil {
		t.Fatal(err)
	}
	eventually(t, "blob deleted", func() error {
		if err := get(ctx, ns, blob.Name, &pfsv1alpha1.PfsBlob{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("blob still there: %v", err)
		}
		return nil
	})
}
