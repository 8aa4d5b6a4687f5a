// SPDX-License-Identifier: Apache-2.0

package uninstall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"packetfs.io/operator/internal/podspec"
)

// An AF_XDP pfs attaches its XDP program through netlink, so a run that
// crashes leaves it on the link. In a pod's own network namespace it goes
// with the namespace; on a link that outlives the pod (an SR-IOV VF handed
// back to the host, a host-network pod's NIC) it stays. The sweep removes
// those: one pod per node in the host network namespace runs
// `pfs xsk detach --all`, which removes only programs named pfs_xdp.

// Sweep says how the sweep pods run; a zero Image means no sweep.
type Sweep struct {
	// Namespace is where the pods run (the release's namespace, which
	// admits host-network pods: the CSI plugin runs there).
	Namespace string
	// Image, PullPolicy and Binary are the data plane's (--dataplane-*).
	Image      string
	PullPolicy corev1.PullPolicy
	Binary     string
}

// Sweep pods carry this component label, not the operand label: they are
// the uninstall's own, listed and removed by it.
const (
	// SweepLabel is the label key every sweep pod carries, with SweepLabelValue.
	SweepLabel = "app.kubernetes.io/component"
	// SweepLabelValue is SweepLabel's value on a sweep pod.
	SweepLabelValue = "xdp-sweep"
	sweepName       = "pfs-xdp-sweep"
)

// SweepCapabilities are the sweep container's only capabilities:
// NET_ADMIN detaches a program (netlink); SYS_ADMIN is what the kernel asks
// to open a program by id and read its name, the only way to tell pfs's
// program from another's (CAP_BPF is not enough).
var SweepCapabilities = []corev1.Capability{"NET_ADMIN", "SYS_ADMIN"}

// SweepPod is the sweep pod for one node: bound to it by name (no
// scheduler; every taint tolerated, so NoExecute does not evict it), in
// the host network namespace, root with exactly SweepCapabilities, its
// JSON result in the termination message.
func SweepPod(s Sweep, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			// A fresh name per run: a pod of an earlier run may still be
			// terminating, and its result is not this run's.
			GenerateName: podspec.ChildName(sweepName, node, podspec.PodNameMax-6) + "-", Namespace: s.Namespace,
			Labels: map[string]string{"app.kubernetes.io/name": "packetfs", SweepLabel: SweepLabelValue},
		},
		Spec: corev1.PodSpec{
			NodeName:                     node,
			HostNetwork:                  true,
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr.To(false),
			Tolerations:                  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			SecurityContext:              &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "sweep", Image: s.Image, ImagePullPolicy: s.PullPolicy,
				Command: []string{s.Binary, "xsk", "detach", "--all", "--result-file", corev1.TerminationMessagePathDefault},
				SecurityContext: &corev1.SecurityContext{
					RunAsUser: ptr.To(int64(0)), RunAsNonRoot: ptr.To(false), Privileged: ptr.To(false),
					AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: SweepCapabilities},
				},
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
				},
			}},
		},
	}
}

// SweepResult is what `pfs xsk detach --all` printed on one node.
type SweepResult struct {
	Links map[string]struct {
		ProgID   uint32 `json:"prog_id"`
		ProgName string `json:"prog_name"`
		Action   string `json:"action"`
		Why      string `json:"why"`
	} `json:"links"`
	Detached int    `json:"detached"`
	Kept     int    `json:"kept"`
	Verdict  string `json:"verdict"`
	Error    string `json:"error"`
}

// ParseSweep reads a finished sweep pod: its result, or why there is none.
func ParseSweep(p *corev1.Pod) (SweepResult, error) {
	var r SweepResult
	var msg string
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			msg = t.Message
		}
	}
	if err := json.Unmarshal([]byte(msg), &r); err != nil {
		return r, fmt.Errorf("pod %s (%s) left no result: %q", p.Name, p.Status.Phase, firstLine(msg+" "+p.Status.Message))
	}
	if r.Verdict != "OK" {
		return r, errors.New(r.Error)
	}
	return r, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// sweepXDP runs the sweep on every Ready node and waits for each pod to
// finish; the error names each node where a program could not be told
// apart or removed. Its pods are deleted either way.
func sweepXDP(ctx context.Context, c client.Client, s Sweep, timeout, poll time.Duration, log logr.Logger) error {
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes); err != nil {
		return fmt.Errorf("list nodes for the XDP sweep: %w", err)
	}
	pods := map[string]*corev1.Pod{}
	var errs []error
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if !podspec.NodeReady(n) {
			log.Info("XDP sweep skips a node that is not Ready", "node", n.Name)
			continue
		}
		p := SweepPod(s, n.Name)
		if err := c.Create(ctx, p); err != nil {
			errs = append(errs, fmt.Errorf("node %s: create the XDP sweep pod: %w", n.Name, err))
			continue
		}
		pods[n.Name] = p
	}
	defer func() {
		for _, p := range pods {
			if err := c.Delete(context.WithoutCancel(ctx), p); err != nil && !apierrors.IsNotFound(err) {
				log.Error(err, "Deleting an XDP sweep pod", "pod", p.Name)
			}
		}
	}()
	done := map[string]bool{}
	err := wait.PollUntilContextTimeout(ctx, poll, timeout, true, func(ctx context.Context) (bool, error) {
		for node, p := range pods {
			if done[node] {
				continue
			}
			if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				continue
			}
			done[node] = true
			r, err := ParseSweep(p)
			if err != nil {
				errs = append(errs, fmt.Errorf("node %s: %w", node, err))
				continue
			}
			log.Info("Swept the node's links of stale pfs XDP programs", "node", node, "detached", r.Detached,
				"kept", r.Kept, "links", sweptLinks(r))
		}
		return len(done) == len(pods), nil
	})
	if err != nil {
		var waiting []string
		for node := range pods {
			if !done[node] {
				waiting = append(waiting, node)
			}
		}
		slices.Sort(waiting)
		errs = append(errs, fmt.Errorf("the XDP sweep did not finish on %s: %w", strings.Join(waiting, ", "), err))
	}
	return errors.Join(errs...)
}

// sweptLinks names each link with a program and what became of it.
func sweptLinks(r SweepResult) string {
	out := make([]string, 0, len(r.Links))
	for name, l := range r.Links {
		out = append(out, fmt.Sprintf("%s: %s id %d '%s'", name, l.Action, l.ProgID, l.ProgName))
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}
