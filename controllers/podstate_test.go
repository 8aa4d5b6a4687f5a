// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/placement"
)

func TestClassifyPod(t *testing.T) {
	tests := map[string]struct {
		opts []podOpt
		numa pfsv1alpha1.NUMAPolicy
		want podOutcome
	}{
		"pending":            {want: podOutcome{State: podWaiting}},
		"running, not ready": {opts: []podOpt{onNode("n"), isRunning(false)}, want: podOutcome{State: podRunning}},
		"ready":              {opts: []podOpt{onNode("n"), isRunning(true)}, want: podOutcome{State: podReady}},
		"succeeded":          {opts: []podOpt{isTerminated(0, "Completed", `{"ok":true}`)}, want: podOutcome{State: podSucceeded, Message: `{"ok":true}`}},
		"unschedulable, within the timeout": {opts: []podOpt{unschedulable(t0.Add(-10 * time.Second))},
			want: podOutcome{State: podUnschedulable, Reason: pfsv1alpha1.ReasonUnschedulable, Retriable: true, RetryAt: t0.Add(50 * time.Second),
				Detail: "pod p cannot be scheduled: 0/3 nodes are available: 3 Insufficient cpu."}},
		"unschedulable beyond the timeout": {opts: []podOpt{unschedulable(t0.Add(-2 * time.Minute))},
			want: podOutcome{State: podFailed, Reason: pfsv1alpha1.ReasonUnschedulable, Retriable: true, RetryAt: t0.Add(-time.Minute),
				Detail: "pod p could not be scheduled within 1m0s: 0/3 nodes are available: 3 Insufficient cpu."}},
		"exit 1 with the CLI's error": {opts: []podOpt{isTerminated(1, "Error", `{"ok":false,"error":"recv: bind: Address in use"}`)},
			want: podOutcome{State: podFailed, Reason: pfsv1alpha1.ReasonPodFailed, Retriable: true, Message: `{"ok":false,"error":"recv: bind: Address in use"}`,
				Detail: "pod p exited with code 1: recv: bind: Address in use"}},
		"exit 1 after a crash (not JSON)": {opts: []podOpt{isTerminated(139, "Error", "")},
			want: podOutcome{State: podFailed, Reason: pfsv1alpha1.ReasonPodFailed, Retriable: true, Detail: "pod p exited with code 139 (killed by signal 11, SIGSEGV): Error"}},
		"exit 2: usage, not retried": {opts: []podOpt{isTerminated(2, "Error", "")},
			want: podOutcome{State: podFailed, Reason: pfsv1alpha1.ReasonPodFailed,
				Detail: "pod p exited with code 2: usage error: the operator and the data-plane image disagree on pfs options"}},
		"exit 3: integrity mismatch": {opts: []podOpt{isTerminated(3, "Error", `{"ok":false,"error":"integrity MISMATCH"}`)},
			want: podOutcome{State: podFailed, Reason: pfsv1alpha1.ReasonIntegrityMismatch, Message: `{"ok":false,"error":"integrity MISMATCH"}`,
				Detail: "pod p exited with code 3: integrity MISMATCH"}},
		"exit 4: refused": {opts: []podOpt{isTerminated(4, "Error", `{"ok":false,"error":"recv: blob fingerprint differs"}`)},
			want: podOutcome{State: podFailed, Reason: pfsv1alpha1.ReasonRefused, Message: `{"ok":false,"error":"recv: blob fingerprint differs"}`,
				Detail: "pod p exited with code 4: recv: blob fingerprint differs"}},
		"exit 5: timeout, retried": {opts: []podOpt{isTerminated(5, "Error", "")},
			want: podOutcome{State: podFailed, Reason: pfsv1alpha1.ReasonTimeout, Retriable: true, Detail: "pod p exited with code 5: Error"}},
		"exit 6: transport unavailable, not retried": {opts: []podOpt{isTerminated(6, "Error",
			`{"ok":false,"error":"recv: attaching the XDP program to net1: Operation not permitted (needs CAP_BPF)"}`)},
			want: podOutcome{State: podFailed, Reason: pfsv1alpha1.ReasonTransportUnavailable,
				Message: `{"ok":false,"error":"recv: attaching the XDP program to net1: Operation not permitted (needs CAP_BPF)"}`,
				Detail:  "pod p exited with code 6: recv: attaching the XDP program to net1: Operation not permitted (needs CAP_BPF)"}},
		"OOMKilled": {opts: []podOpt{isTerminated(137, "OOMKilled", "")},
			want: podOutcome{State: podFailed, Reason: pfsv1alpha1.ReasonOOMKilled, Retriable: true,
				Detail: "container c of pod p exceeded its memory limit (exit code 137)"}},
		"evicted": {opts: []podOpt{podReason("Evicted", "The node was low on resource: memory.")},
			want: podOutcome{State: podFailed, Reason: pfsv1alpha1.ReasonEvicted, Retriable: true,
				Detail: "pod p was evicted: The node was low on resource: memory."}},
		"topology error, Preferred: retried": {opts: []podOpt{onNode("n"), podReason("TopologyAffinityError", "Resources cannot be allocated with Topology locality")},
			numa: pfsv1alpha1.NUMAPolicyPreferred,
			want: podOutcome{State: podFailed, Reason: pfsv1alpha1.ReasonTopologyAffinityError, Retriable: true,
				Detail: "pod p was rejected by the kubelet's Topology Manager on node n (numa Preferred): Resources cannot be allocated with Topology locality"}},
		"topology error, Required: final": {opts: []podOpt{onNode("n"), podReason("TopologyAffinityError", "x")},
			numa: pfsv1alpha1.NUMAPolicyRequired,
			want: podOutcome{State: podFailed, Reason: pfsv1alpha1.ReasonTopologyAffinityError,
				Detail: "pod p was rejected by the kubelet's Topology Manager on node n (numa Required): x"}},
		"deadline exceeded": {opts: []podOpt{podReason("DeadlineExceeded", "")},
			want: podOutcome{State: podFailed, Reason: pfsv1alpha1.ReasonDeadlineExceeded, Detail: "pod p ran longer than spec.activeDeadlineSeconds"}},
		"being deleted": {opts: []podOpt{isRunning(true), func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0} }},
			want: podOutcome{State: podFailed, Reason: pfsv1alpha1.ReasonPodFailed, Retriable: true, Detail: "pod p is being deleted"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := testPod("p", "c", tc.opts...)
			got := classifyPod(pod, "c", t0, time.Minute, tc.numa, placement.RetryOnTopologyError)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(podOutcome{})); diff != "" {
				t.Errorf("classifyPod (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTruncate(t *testing.T) {
	tests := map[string]struct {
		s    string
		n    int
		want string
	}{
		"fits":                 {"abc", 3, "abc"},
		"cut, ellipsis inside": {"abcdefgh", 6, "abc..."},
		"no room but the dots": {"abcdefgh", 2, ".."},
		"not inside a rune":    {"ab\u00e9\u00e9\u00e9", 6, "ab..."},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := truncate(tc.s, tc.n)
			if got != tc.want || len(got) > tc.n {
				t.Errorf("truncate(%q, %d) = %q (%d bytes), want %q", tc.s, tc.n, got, len(got), tc.want)
			}
		})
	}
}

// A scheduled pod whose containers never start (a sandbox Multus cannot
// set up, an image that cannot be pulled) waits as long as an unschedulable
// pod may, then fails its attempt with what its container status says.
func TestClassifyPodStartTimeout(t *testing.T) {
	scheduled := func(since time.Time, waiting *corev1.ContainerStateWaiting) podOpt {
		return func(p *corev1.Pod) {
			p.Spec.NodeName = "n1"
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(since)}}
			if waiting != nil {
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "receiver", State: corev1.ContainerState{Waiting: waiting}}}
			}
		}
	}
	creating := &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
	o := classifyPod(testPod("r", "receiver", scheduled(t0.Add(-time.Minute), creating)), "receiver", t0, 2*time.Minute, pfsv1alpha1.NUMAPolicyNone, nil)
	if o.State != podWaiting || !o.RetryAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("within the timeout: %+v", o)
	}
	o = classifyPod(testPod("r", "receiver", scheduled(t0.Add(-3*time.Minute), creating)), "receiver", t0, 2*time.Minute, pfsv1alpha1.NUMAPolicyNone, nil)
	want := "pod r was scheduled to node n1 but did not start within 2m0s (waiting: ContainerCreating); " +
		"kubectl describe pod r shows why (sandbox or network setup, image pull)"
	if o.State != podFailed || o.Reason != pfsv1alpha1.ReasonStartTimeout || !o.Retriable || o.Detail != want {
		t.Errorf("past the timeout: %+v", o)
	}
	pull := &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: "Container image \"x\" is not present with pull policy of Never"}
	o = classifyPod(testPod("r", "receiver", scheduled(t0.Add(-3*time.Minute), pull)), "receiver", t0, 2*time.Minute, pfsv1alpha1.NUMAPolicyNone, nil)
	if !strings.Contains(o.Detail, "waiting: ErrImageNeverPull: Container image \"x\" is not present") {
		t.Errorf("image: %q", o.Detail)
	}
	o = classifyPod(testPod("r", "receiver", scheduled(t0.Add(-3*time.Minute), nil)), "receiver", t0, 2*time.Minute, pfsv1alpha1.NUMAPolicyNone, nil)
	if !strings.Contains(o.Detail, "its containers were never created") {
		t.Errorf("no container status: %q", o.Detail)
	}
}
