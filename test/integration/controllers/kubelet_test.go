// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
)

// Helpers that play the kubelet, the scheduler and the DaemonSet controller.

const (
	waitFor = 20 * time.Second
	tick    = 50 * time.Millisecond
)

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func newNamespace(t *testing.T, ctx context.Context) string {
	t.Helper()
	ns, err := env.CreateNamespace(ctx, "pfs-ctrl")
	if err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return ns
}

// eventually polls cond until it returns nil or waitFor passes, then fails
// the test with cond's last error.
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	var err error
	for time.Now().Before(deadline) {
		if err = cond(); err == nil {
			return
		}
		time.Sleep(tick)
	}
	t.Fatalf("%s: not true after %s: %v", what, waitFor, err)
}

// consistently checks cond stays nil for d.
func consistently(t *testing.T, what string, d time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := cond(); err != nil {
			t.Fatalf("%s: stopped holding: %v", what, err)
		}
		time.Sleep(tick)
	}
}

func get(ctx context.Context, ns, name string, obj client.Object) error {
	return env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj)
}

// waitPod waits until the controller created the named pod.
func waitPod(t *testing.T, ctx context.Context, ns, name string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	eventually(t, "pod "+name+" exists", func() error { return get(ctx, ns, name, pod) })
	return pod
}

func absent(ctx context.Context, ns, name string) error {
	err := get(ctx, ns, name, &corev1.Pod{})
	if err == nil {
		return errExists(name)
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

type errExists string

func (e errExists) Error() string { return "pod " + string(e) + " exists" }

// bind plays the scheduler: it binds the pod to node through the binding
// subresource, as the scheduler does (spec.nodeName cannot be updated).
func bind(t *testing.T, ctx context.Context, pod *corev1.Pod, node string) {
	t.Helper()
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		Target: corev1.ObjectReference{Kind: "Node", Name: node}}
	if err := env.Client.SubResource("binding").Create(ctx, pod, b); err != nil {
		t.Fatalf("binding pod %s to %s: %v", pod.Name, node, err)
	}
}

// setStatus plays the kubelet: it rewrites the pod's status, retrying on conflicts.
func setStatus(t *testing.T, ctx context.Context, ns, name string, mutate func(*corev1.Pod)) {
	t.Helper()
	eventually(t, "updating status of pod "+name, func() error {
		pod := &corev1.Pod{}
		if err := get(ctx, ns, name, pod); err != nil {
			return err
		}
		mutate(pod)
		return env.Client.Status().Update(ctx, pod)
	})
}

func now() metav1.Time { return metav1.NewTime(time.Now().Truncate(time.Second)) }

// running marks the pod Running with its only container started, ready or not.
func running(ready bool, ip string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP = ip
		if ip != "" {
			p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
		}
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now()},
			{Type: corev1.PodReady, Status: st, LastTransitionTime: now()},
		}
		c := p.Spec.Containers[0]
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: c.Name, Image: c.Image, Ready: ready,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now()}}}}
	}
}

// exited marks the pod's only container terminated with code and message,
// and the pod Succeeded (code 0) or Failed, as the kubelet does with
// restartPolicy Never.
func exited(code int32, message string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodSucceeded
		reason := "Completed"
		if code != 0 {
			p.Status.Phase, reason = corev1.PodFailed, "Error"
		}
		p.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now()},
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: now()},
		}
		c := p.Spec.Containers[0]
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: c.Name, Image: c.Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: code, Reason: reason, Message: message, StartedAt: now(), FinishedAt: now()}}}}
	}
}

// readyBlob creates a PfsBlob and plays the DaemonSet controller and the
// kubelet until the blob reports Ready on the given nodes.
func readyBlob(t *testing.T, ctx context.Context, ns, name string, nodes ...string) *pfsv1alpha1.PfsBlob {
	t.Helper()
	blob := &pfsv1alpha1.PfsBlob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       pfsv1alpha1.PfsBlobSpec{Size: resource.MustParse("64Mi")},
	}
	if err := env.Client.Create(ctx, blob); err != nil {
		t.Fatalf("creating blob: %v", err)
	}
	ds := rollOut(t, ctx, blob, int32(len(nodes)))
	for _, n := range nodes {
		holderPod(t, ctx, ds, n, blobCreateResult("0x00c0ffee00c0ffee"), true)
	}
	eventually(t, "blob "+name+" Ready", func() error {
		if err := get(ctx, ns, name, blob); err != nil {
			return err
		}
		return conditionIs(blob.Status.Conditions, pfsv1alpha1.ConditionReady, metav1.ConditionTrue, pfsv1alpha1.ReasonMaterialized)
	})
	return blob
}

// rollOut waits for the blob's DaemonSet and writes the status the
// DaemonSet controller would: desired nodes, observed generation.
func rollOut(t *testing.T, ctx context.Context, blob *pfsv1alpha1.PfsBlob, desired int32) *appsv1.DaemonSet {
	t.Helper()
	ds := &appsv1.DaemonSet{}
	eventually(t, "holder DaemonSet exists", func() error {
		return get(ctx, blob.Namespace, podspec.HolderName(blob.Name), ds)
	})
	eventually(t, "DaemonSet status written", func() error {
		if err := get(ctx, blob.Namespace, ds.Name, ds); err != nil {
			return err
		}
		ds.Status.DesiredNumberScheduled = desired
		ds.Status.ObservedGeneration = ds.Generation
		return env.Client.Status().Update(ctx, ds)
	})
	return ds
}

// holderPod plays the DaemonSet controller and the kubelet for one node: a
// pod from the DaemonSet's template bound to node, whose init container
// exited 0 with message and whose serve container is ready or not.
func holderPod(t *testing.T, ctx context.Context, ds *appsv1.DaemonSet, node, message string, ready bool) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: ds.Name + "-" + node, Namespace: ds.Namespace,
			Labels: ds.Spec.Template.Labels, Annotations: ds.Spec.Template.Annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))},
		},
		Spec: *ds.Spec.Template.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = node
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatalf("creating holder pod: %v", err)
	}
	setStatus(t, ctx, pod.Namespace, pod.Name, func(p *corev1.Pod) {
		running(ready, "10.0.0.9")(p)
		ic := p.Spec.InitContainers[0]
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: ic.Name, Image: ic.Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", Message: message, StartedAt: now(), FinishedAt: now()}}}}
	})
}

func conditionIs(conds []metav1.Condition, typ string, status metav1.ConditionStatus, reason string) error {
	for _, c := range conds {
		if c.Type == typ {
			if c.Status != status || c.Reason != reason {
				return &condErr{typ, c}
			}
			return nil
		}
	}
	return &condErr{typ: typ}
}

type condErr struct {
	typ string
	got metav1.Condition
}

func (e *condErr) Error() string {
	if e.got.Type == "" {
		return "no " + e.typ + " condition"
	}
	return "condition " + e.typ + " is " + string(e.got.Status) + "/" + e.got.Reason + ": " + e.got.Message
}
