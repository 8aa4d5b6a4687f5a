// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// inlineVol is a pod's inline CSI volume of driver with attrs.
func inlineVol(name, driver string, attrs map[string]string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
		Driver: driver, VolumeAttributes: attrs}}}
}

func claimVol(name, claim string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
		ClaimName: claim, ReadOnly: true}}}
}

func consumerPod(ns string, phase corev1.PodPhase, vols ...corev1.Volume) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"},
		Spec: corev1.PodSpec{Volumes: vols}, Status: corev1.PodStatus{Phase: phase}}
}

// pv is a PersistentVolume of driver with attrs, bound to claim ns/name
// (claimNS "" leaves it unbound).
func pv(name, driver string, attrs map[string]string, claimNS, claim string) corev1.PersistentVolume {
	v := corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
			Driver: driver, VolumeHandle: name, ReadOnly: true, VolumeAttributes: attrs}}}}
	if claimNS != "" {
		v.Spec.ClaimRef = &corev1.ObjectReference{Namespace: claimNS, Name: claim}
	}
	return v
}

func TestBlobsMountedBy(t *testing.T) {
	const drv = "csi.packetfs.io"
	nn := func(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }
	pvs := []corev1.PersistentVolume{
		pv("llama-pv", drv, map[string]string{"blob": "llama"}, "serving", "llama"),
		pv("shared-pv", drv, map[string]string{"blob": "qwen", "namespace": "models"}, "serving", "qwen"),
		pv("unbound-pv", drv, map[string]string{"blob": "mistral"}, "", ""),
		pv("nfs-pv", "nfs.csi.k8s.io", map[string]string{"blob": "llama"}, "serving", "data"),
		pv("no-blob-pv", drv, nil, "serving", "sockets"),
	}
	tests := map[string]struct {
		pod  *corev1.Pod
		want []types.NamespacedName
	}{
		"inline, the pod's namespace": {consumerPod("serving", corev1.PodRunning,
			inlineVol("model", drv, map[string]string{"blob": "llama"})), []types.NamespacedName{nn("serving", "llama")}},
		"inline, another namespace": {consumerPod("serving", corev1.PodPending,
			inlineVol("model", drv, map[string]string{"blob": "llama", "namespace": "models", "subPath": "tokenizer"})),
			[]types.NamespacedName{nn("models", "llama")}},
		"inline, two blobs and one twice, sorted": {consumerPod("serving", corev1.PodRunning,
			inlineVol("b", drv, map[string]string{"blob": "qwen"}),
			inlineVol("a", drv, map[string]string{"blob": "llama", "namespace": "models"}),
			inlineVol("c", drv, map[string]string{"blob": "qwen"})),
			[]types.NamespacedName{nn("models", "llama"), nn("serving", "qwen")}},
		"inline of another driver": {consumerPod("serving", corev1.PodRunning,
			inlineVol("model", "other.csi.io", map[string]string{"blob": "llama"})), nil},
		"the socket directory volume names no blob": {consumerPod("serving", corev1.PodRunning,
			inlineVol("sockets", drv, nil)), nil},
		"a holder's volume is not a consumer's": {consumerPod("models", corev1.PodRunning,
			inlineVol("blob", drv, map[string]string{"packetfs.io/role": "holder", "packetfs.io/blob": "llama"})), nil},
		"claim bound to a blob's PV": {consumerPod("serving", corev1.PodRunning, claimVol("model", "llama")),
			[]types.NamespacedName{nn("serving", "llama")}},
		"claim bound to a PV naming another namespace's blob": {consumerPod("serving", corev1.PodRunning, claimVol("model", "qwen")),
			[]types.NamespacedName{nn("models", "qwen")}},
		"same claim name in another namespace": {consumerPod("other", corev1.PodRunning, claimVol("model", "llama")), nil},
		"claim bound to another driver's PV":   {consumerPod("serving", corev1.PodRunning, claimVol("data", "data")), nil},
		"claim bound to no PV":                 {consumerPod("serving", corev1.PodRunning, claimVol("model", "mistral")), nil},
		"inline and claim together": {consumerPod("serving", corev1.PodRunning,
			claimVol("m", "llama"), inlineVol("n", drv, map[string]string{"blob": "qwen", "namespace": "models"})),
			[]types.NamespacedName{nn("models", "qwen"), nn("serving", "llama")}},
		"a pod that succeeded mounts nothing": {consumerPod("serving", corev1.PodSucceeded,
			inlineVol("model", drv, map[string]string{"blob": "llama"})), nil},
		"a pod that failed mounts nothing": {consumerPod("serving", corev1.PodFailed, claimVol("model", "llama")), nil},
		"a pod without volumes":            {consumerPod("serving", corev1.PodRunning), nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, blobsMountedBy(tc.pod, pvs)); diff != "" {
				t.Errorf("blobsMountedBy (-want +got):\n%s", diff)
			}
			// The watch maps a pod to the blobs it names even once it
			// ended: that event is what lets a deletion proceed.
			named := blobsNamedBy(tc.pod, pvs)
			if len(tc.want) > 0 && !cmp.Equal(tc.want, named) {
				t.Errorf("blobsNamedBy = %v, want %v", named, tc.want)
			}
			if len(named) > 0 && !mayMountBlobs(tc.pod) {
				t.Error("the watch's filter drops a pod that names a blob")
			}
		})
	}
}

func TestSetMounted(t *testing.T) {
	now := time.Date(2026, 12, 3, 20, 0, 0, 0, time.UTC)
	pods := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("serving/r%02d", i)
		}
		return out
	}
	mounted := metav1.Condition{Type: "Mounted", Status: metav1.ConditionTrue, Reason: "MountedByPods"}
	tests := map[string]struct {
		prior     []metav1.Condition
		pods      []string
		deleting  bool
		wantCond  *metav1.Condition // nil: no Mounted condition
		wantBy    []string
		wantCount int32
	}{
		"never mounted: no condition": {nil, nil, false, nil, nil, 0},
		"two pods": {nil, []string{"models/a", "serving/b"}, false,
			&metav1.Condition{Type: "Mounted", Status: metav1.ConditionTrue, Reason: "MountedByPods",
				Message: "2 pod(s) mount the blob: models/a, serving/b"}, []string{"models/a", "serving/b"}, 2},
		"being deleted": {[]metav1.Condition{mounted}, []string{"serving/b"}, true,
			&metav1.Condition{Type: "Mounted", Status: metav1.ConditionTrue, Reason: "DeletionWaitsForMounts",
				Message: "the blob is being deleted and keeps its holders while 1 pod(s) mount it: serving/b; it goes once they are deleted"},
			[]string{"serving/b"}, 1},
		"the last pod went": {[]metav1.Condition{mounted}, nil, false,
			&metav1.Condition{Type: "Mounted", Status: metav1.ConditionFalse, Reason: "NotMounted", Message: "no pod mounts the blob"}, nil, 0},
		"capped list, full count": {nil, pods(40), false,
			&metav1.Condition{Type: "Mounted", Status: metav1.ConditionTrue, Reason: "MountedByPods",
				Message: "40 pod(s) mount the blob: serving/r00, serving/r01, serving/r02, serving/r03, serving/r04 and 35 more (status.mountedBy)"},
			pods(32), 40},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			st := pfsv1alpha1.PfsBlobStatus{Conditions: append([]metav1.Condition(nil), tc.prior...), MountedBy: []string{"stale/pod"}}
			setMounted(decision{gen: 3, now: now, conds: &st.Conditions}, &st, tc.pods, tc.deleting)
			if diff := cmp.Diff(tc.wantBy, st.MountedBy); diff != "" {
				t.Errorf("mountedBy (-want +got):\n%s", diff)
			}
			if st.MountedPods != tc.wantCount {
				t.Errorf("mountedPods = %d, want %d", st.MountedPods, tc.wantCount)
			}
			got := meta.FindStatusCondition(st.Conditions, "Mounted")
			if tc.wantCond == nil {
				if got != nil {
					t.Errorf("condition %+v, want none", got)
				}
				return
			}
			if got == nil {
				t.Fatal("no Mounted condition")
			}
			if got.Status != tc.wantCond.Status || got.Reason != tc.wantCond.Reason || got.Message != tc.wantCond.Message || got.ObservedGeneration != 3 {
				t.Errorf("condition %+v\nwant %+v", *got, *tc.wantCond)
			}
		})
	}
}
