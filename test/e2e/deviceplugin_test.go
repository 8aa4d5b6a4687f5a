// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// testDevicePlugin: the chart's device plugin (hack/demo/values.yaml) runs
// on every node, registers packetfs.io/pfsdata0 and pfsdata1 with each
// kubelet, and the kubelets of the two nodes that hold the links
// (hack/kind/data-network.sh wires the first two) advertise one healthy
// unit of each; a node without them has them registered (in its capacity)
// with none allocatable. Nothing patches
// node status any more: the data-link transfers after this step get their
// links from the kubelet.
func testDevicePlugin(ctx context.Context, t *testing.T) {
	links := []string{"packetfs.io/pfsdata0", "packetfs.io/pfsdata1"}
	want := map[string]string{}
	for i, n := range env.nodes {
		want[n] = "0"
		if i < 2 {
			want[n] = "1"
		}
	}
	var got map[string]string
	err := poll(ctx, 2*time.Minute, func() (bool, error) {
		got = map[string]string{}
		for n, w := range want {
			node := &corev1.Node{}
			if err := env.c.Get(ctx, client.ObjectKey{Name: n}, node); err != nil {
				return false, err
			}
			for _, l := range links {
				q, ok := node.Status.Allocatable[corev1.ResourceName(l)]
				v := "absent"
				if ok {
					v = q.String()
				}
				// Registered means the kubelet lists the resource in capacity
				// (a node without the links: its unhealthy device, allocatable
				// 0). Absent is only the moment before its plugin registers:
				// the poll waits it out, and absent at the end fails.
				c, registered := node.Status.Capacity[corev1.ResourceName(l)]
				got[n+" "+l] = fmt.Sprintf("allocatable %s, capacity %s", v, map[bool]string{true: c.String(), false: "absent"}[registered])
				if v != w || !registered {
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		pods, _ := kubectl("-n", releaseNS, "get", "pods", "-o", "wide")
		logs, _ := kubectl("-n", releaseNS, "logs", "-l", "app.kubernetes.io/component=device-plugin", "--tail=20", "--prefix")
		t.Fatalf("allocatable %v, want 1 of each link on %s: %v\n%s\n%s", got, strings.Join(env.nodes[:2], ", "), err, pods, logs)
	}
	t.Logf("allocatable from the kubelets: %v", got)
	// Its pods: host network, never privileged, no capability.
	out, err := kubectl("-n", releaseNS, "get", "pods", "-l", "app.kubernetes.io/component=device-plugin", "-o",
		`jsonpath={range .items[*]}{.spec.hostNetwork} {.spec.containers[0].securityContext.privileged} {.spec.containers[0].securityContext.capabilities.drop}{"\n"}{end}`)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(line); len(f) != 3 || f[0] != "true" || f[1] != "false" || f[2] != `["ALL"]` {
			t.Errorf("device plugin pod (hostNetwork, privileged, capabilities dropped): %q, want host network, not privileged, ALL dropped", line)
		}
	}
	if n := strings.Count(strings.TrimSpace(out), "\n") + 1; n != len(env.nodes) {
		t.Errorf("%d device plugin pods, want one per node (%d)", n, len(env.nodes))
	}
	kubeletRestart(ctx, t, env.nodes[1])
}

// kubeletRestart restarts node's kubelet, which forgets every device
// plugin: the plugin there must notice its socket and the kubelet's go and
// come back, register again (its log says so), and the node keep its link.
func kubeletRestart(ctx context.Context, t *testing.T, node string) {
	pod, err := kubectl("-n", releaseNS, "get", "pods", "-l", "app.kubernetes.io/component=device-plugin",
		"--field-selector", "spec.nodeName="+node, "-o", "name")
	if err != nil || strings.TrimSpace(pod) == "" {
		t.Fatalf("the device plugin pod on %s: %v %q", node, err, pod)
	}
	since := time.Now().UTC().Format(time.RFC3339)
	if out, err := run("podman", "exec", node, "systemctl", "restart", "kubelet"); err != nil {
		t.Fatalf("restarting the kubelet on %s: %v\n%s", node, err, out)
	}
	var logs string
	err = poll(ctx, 2*time.Minute, func() (bool, error) {
		logs, _ = kubectl("-n", releaseNS, "logs", strings.TrimSpace(pod), "--since-time="+since)
		if !strings.Contains(logs, "registering again") || strings.Count(logs, "Registered with the kubelet") < 2 {
			return false, nil
		}
		n := &corev1.Node{}
		if err := env.c.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			return false, nil
		}
		q := n.Status.Allocatable[corev1.ResourceName("packetfs.io/pfsdata0")]
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue && q.Value() == 1, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("after the kubelet restart on %s: %v; the plugin's log since:\n%s", node, err, logs)
	}
	t.Logf("kubelet on %s restarted: the plugin registered both links again, the node is Ready with its link", node)
}
