// SPDX-License-Identifier: Apache-2.0

package uninstall

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"packetfs.io/operator/internal/uninstall"
	"packetfs.io/operator/test/testenv"
)

// The XDP sweep against a real apiserver, this test acting as the kubelet:
// one pod per Ready node, none for a node that is not; each pod's result is
// read from its termination message; a node whose sweep failed is named
// with pfs's reason, one that succeeded is not; the pods are deleted; a
// second run with every node clean succeeds.
func TestXDPSweep(t *testing.T) {
	ctx := context.Background()
	c, err := client.New(env.Config, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	log := zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr))
	ns, err := env.CreateNamespace(ctx, "pfs-system")
	if err != nil {
		t.Fatal(err)
	}
	ready := map[string]bool{"sweep-w1": true, "sweep-w2": true, "sweep-w3": false}
	for name, ok := range ready {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := c.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		st := corev1.ConditionTrue
		if !ok {
			st = corev1.ConditionFalse
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}
		if err := c.Status().Update(ctx, n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(ctx, n) })
	}
	sweep := uninstall.Sweep{Namespace: ns, Image: "packetfs.io/dataplane:test", PullPolicy: corev1.PullIfNotPresent, Binary: "/usr/local/bin/pfs"}
	opts := uninstall.Options{Timeout: 20 * time.Second, Poll: 100 * time.Millisecond, Sweep: sweep}

	const (
		cleaned = `{"cmd":"xsk detach","links":{"eth1":{"prog_id":41,"prog_name":"pfs_xdp","mode":"native","action":"detached"}},"detached":1,"kept":0,"verdict":"OK"}`
		refused = `{"cmd":"xsk detach","links":{"eth1":{"prog_id":42,"prog_name":"","mode":"native","action":"kept","why":"name unreadable"}},"detached":0,"kept":1,"error":"eth1 runs XDP program id 42 (native mode) whose name cannot be read (Operation not permitted; the kernel needs CAP_SYS_ADMIN for it)","verdict":"ERROR"}`
	)
	// kubelet finishes each new sweep pod with the result its node gives.
	kubelet := func(results map[string]string) map[string]string {
		seen := map[string]string{}
		deadline := time.Now().Add(15 * time.Second)
		for len(seen) < len(results) && time.Now().Before(deadline) {
			pods := &corev1.PodList{}
			if err := c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{uninstall.SweepLabel: uninstall.SweepLabelValue}); err != nil {
				t.Error(err)
				return seen
			}
			for i := range pods.Items {
				p := &pods.Items[i]
				if p.DeletionTimestamp != nil || seen[p.Spec.NodeName] != "" {
					continue
				}
				seen[p.Spec.NodeName] = p.Name
				checkSweepPod(t, p)
				msg, phase := results[p.Spec.NodeName], corev1.PodSucceeded
				if strings.Contains(msg, `"verdict":"ERROR"`) {
					phase = corev1.PodFailed
				}
				p.Status.Phase = phase
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "sweep", State: corev1.ContainerState{
					Terminated: &corev1.ContainerStateTerminated{ExitCode: map[bool]int32{true: 0, false: 1}[phase == corev1.PodSucceeded], Message: msg}}}}
				if err := c.Status().Update(ctx, p); err != nil {
					t.Error(err)
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		return seen
	}

	done := make(chan error, 1)
	go func() { done <- uninstall.Run(ctx, c, opts, log) }()
	seen := kubelet(map[string]string{"sweep-w1": cleaned, "sweep-w2": refused})
	err = <-done
	if _, swept := seen["sweep-w3"]; swept || len(seen) != 2 {
		t.Errorf("sweep pods on %v, want one on each Ready node (sweep-w1, sweep-w2) and none on the NotReady sweep-w3", seen)
	}
	if err == nil || !strings.Contains(err.Error(), "node sweep-w2: eth1 runs XDP program id 42") ||
		!strings.Contains(err.Error(), "CAP_SYS_ADMIN") || strings.Contains(err.Error(), "sweep-w1") {
		t.Errorf("one node's sweep refused: %v, want an error naming sweep-w2 with pfs's reason, and not sweep-w1", err)
	}
	for node, name := range seen {
		p := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err == nil && p.DeletionTimestamp == nil {
			t.Errorf("the sweep pod on %s (%s) was not deleted", node, name)
		}
	}

	go func() { done <- uninstall.Run(ctx, c, opts, log) }()
	seen2 := kubelet(map[string]string{"sweep-w1": cleaned, "sweep-w2": cleaned})
	if err := <-done; err != nil {
		t.Errorf("every node swept: %v", err)
	}
	for node, name := range seen2 {
		if name == seen[node] {
			t.Errorf("the second run reused the first run's pod %s on %s", name, node)
		}
	}
}

// checkSweepPod: bound to its node, host network, root with exactly
// NET_ADMIN and SYS_ADMIN, never privileged, the JSON result in the
// termination message.
func checkSweepPod(t *testing.T, p *corev1.Pod) {
	t.Helper()
	ctr := p.Spec.Containers[0]
	sc := ctr.SecurityContext
	if !p.Spec.HostNetwork || p.Spec.NodeName == "" || sc == nil || sc.Privileged == nil || *sc.Privileged ||
		sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" ||
		len(sc.Capabilities.Add) != 2 || sc.Capabilities.Add[0] != "NET_ADMIN" || sc.Capabilities.Add[1] != "SYS_ADMIN" {
		t.Errorf("sweep pod %s: hostNetwork %v node %q securityContext %+v", p.Name, p.Spec.HostNetwork, p.Spec.NodeName, sc)
	}
	want := []string{"/usr/local/bin/pfs", "xsk", "detach", "--all", "--result-file", corev1.TerminationMessagePathDefault}
	if strings.Join(ctr.Command, " ") != strings.Join(want, " ") {
		t.Errorf("sweep pod %s runs %q, want %q", p.Name, ctr.Command, want)
	}
}
