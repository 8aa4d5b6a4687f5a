// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	topov1alpha2 "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func podOn(phase corev1.PodPhase, created time.Time, init, main corev1.ResourceList) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: init}}},
			Containers:     []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: main}}}},
		Status: corev1.PodStatus{Phase: phase}}
}

func TestSumRequests(t *testing.T) {
	got := SumRequests([]corev1.Pod{
		podOn(corev1.PodRunning, t0, rl("hugepages-2Mi", "1Gi"), rl("hugepages-2Mi", "1Gi")),
		podOn(corev1.PodPending, t0, rl("hugepages-2Mi", "2Gi"), rl("hugepages-2Mi", "512Mi")),
		podOn(corev1.PodFailed, t0, rl("hugepages-2Mi", "4Gi"), rl("hugepages-2Mi", "4Gi")),
	})
	q := got["hugepages-2Mi"]
	if q.Cmp(resource.MustParse("3Gi")) != 0 {
		t.Errorf("hugepages-2Mi = %s, want 3Gi (init max, ended pods free)", q.String())
	}
}

func TestTopologyFromNRTAndNode(t *testing.T) {
	ri := func(name, alloc, avail string) topov1alpha2.ResourceInfo {
		return topov1alpha2.ResourceInfo{Name: name, Capacity: resource.MustParse(alloc),
			Allocatable: resource.MustParse(alloc), Available: resource.MustParse(avail)}
	}
	updated := metav1.NewTime(t0.Add(2 * time.Minute))
	nrt := &topov1alpha2.NodeResourceTopology{
		ObjectMeta: metav1.ObjectMeta{Name: "w1", ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "nfd-topology-updater", Time: &metav1.Time{Time: t0}}, {Manager: "nfd-topology-updater", Time: &updated}, {Manager: "x"}}},
		Zones: topov1alpha2.ZoneList{
			{Name: "node-0", Type: "Node", Resources: topov1alpha2.ResourceInfoList{ri("cpu", "8", "6"), ri("hugepages-2Mi", "1Gi", "512Mi")}},
			{Name: "node-1", Type: "Node", Resources: topov1alpha2.ResourceInfoList{ri("cpu", "8", "1500m"), ri("packetfs.io/pfsdata0", "2", "1")}},
			{Name: "socket-0", Type: "Socket"},
			{Name: "weird", Type: "Node"},
		},
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w1"},
		Status: corev1.NodeStatus{Allocatable: rl("cpu", "16", "memory", "32Gi", "packetfs.io/pfsdata0", "2")}}
	bound := podOn(corev1.PodRunning, t0, nil, rl("cpu", "2", "memory", "1Gi", "packetfs.io/pfsdata0", "1"))
	bound.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(t0.Add(time.Minute))}}
	ended := podOn(corev1.PodSucceeded, t0, nil, rl("cpu", "4"))
	ended.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		FinishedAt: metav1.NewTime(t0.Add(3 * time.Minute))}}}}

	got := Topology("w1", nrt, node, []corev1.Pod{bound, ended})
	want := &NodeTopology{
		Name: "w1", HasNRT: true, Updated: updated.Time, LastPodChange: t0.Add(3 * time.Minute),
		Zones: []Zone{
			{Name: "node-0", ID: 0, Available: Resources{"cpu": 6000, "hugepages-2Mi": 512 * mi}, Allocatable: Resources{"cpu": 8000, "hugepages-2Mi": gi}},
			{Name: "node-1", ID: 1, Available: Resources{"cpu": 1500, nic: 1}, Allocatable: Resources{"cpu": 8000, nic: 2}},
			{Name: "weird", ID: -1, Available: Resources{}, Allocatable: Resources{}},
		},
		Free:        Resources{"cpu": 14000, "memory": 31 * gi, nic: 1},
		Allocatable: Resources{"cpu": 16000, "memory": 32 * gi, nic: 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Topology (-want +got):\n%s", diff)
	}
	if !got.Stale() {
		t.Error("an NRT written before the last pod ended must be stale")
	}
	if got := Topology("w2", nil, nil, nil); got.HasNRT || got.Free != nil || got.Stale() {
		t.Errorf("nothing known: %+v", got)
	}
	if got := PodResources(&bound); got["cpu"] != 2000 || got[nic] != 1 {
		t.Errorf("PodResources = %v", got)
	}
}
