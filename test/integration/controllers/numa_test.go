// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	topov1alpha2 "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/placement"
)

const nrtModule = "github.com/k8stopologyawareschedwg/noderesourcetopology-api"

// nrtCRD is the NodeResourceTopology CRD as the API module ships it
// (manifests/crd.yaml in the module go.mod requires), not a copy.
func nrtCRD(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", nrtModule).Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", nrtModule, err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "manifests", "crd.yaml")
}

// numaTransfer is an Offset transfer of blob data whose receiver asks for
// 2 CPUs (queues) and, when nic is set, one unit of that device.
func numaOffsetTransfer(ns, name, nic string) *pfsv1alpha1.PfsTransfer {
	return &pfsv1alpha1.PfsTransfer{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: pfsv1alpha1.PfsTransferSpec{Mode: pfsv1alpha1.ModeOffset, BlobRef: &pfsv1alpha1.BlobReference{Name: "data"}, Gram: gram(),
			NUMA:     pfsv1alpha1.NUMAPolicyPreferred,
			Receiver: pfsv1alpha1.Endpoint{Queues: 2, ResourceName: nic},
			Sender:   pfsv1alpha1.Endpoint{Queues: 1, NodeName: "numa-b"}},
	}
}

// nrt is a NodeResourceTopology with zones node-0 and node-1 holding these
// CPUs and NICs free (4Gi of memory each).
func nrt(node string, cpus, nics [2]string) *topov1alpha2.NodeResourceTopology {
	o := &topov1alpha2.NodeResourceTopology{ObjectMeta: metav1.ObjectMeta{Name: node},
		TopologyPolicies: []string{"SingleNUMANodeContainerLevel"}}
	for i := range 2 {
		ri := func(name, v string) topov1alpha2.ResourceInfo {
			return topov1alpha2.ResourceInfo{Name: name, Capacity: resource.MustParse("8"), Allocatable: resource.MustParse("8"), Available: resource.MustParse(v)}
		}
		mem := ri("memory", "4Gi")
		mem.Capacity, mem.Allocatable = resource.MustParse("8Gi"), resource.MustParse("8Gi")
		o.Zones = append(o.Zones, topov1alpha2.Zone{Name: fmt.Sprintf("node-%d", i), Type: "Node",
			Resources: topov1alpha2.ResourceInfoList{ri("cpu", cpus[i]), mem, ri("packetfs.io/pfsdata0", nics[i])}})
	}
	return o
}

func numaPlacement(t *testing.T, ctx context.Context, x *pfsv1alpha1.PfsTransfer, sender bool) *pfsv1alpha1.NUMAPlacement {
	t.Helper()
	var p *pfsv1alpha1.NUMAPlacement
	waitTransfer(t, ctx, x, "a placement decision in status", func(x *pfsv1alpha1.PfsTransfer) error {
		es := x.Status.Receiver
		if sender {
			es = x.Status.Sender
		}
		if es == nil || es.NUMAPlacement == nil {
			return fmt.Errorf("no numaPlacement yet; conditions %+v", x.Status.Conditions)
		}
		p = es.NUMAPlacement
		return nil
	})
	return p
}

// TestNUMAPlacement places a transfer's pods from what the cluster
// publishes: first without the NodeResourceTopology CRD (node allocatable
// minus its pods' requests, one zone per node), then with the CRD from the
// NRT module and objects for two nodes with two zones each, which choose
// the node and the zone (--numa) of each pod.
func TestNUMAPlacement(t *testing.T) {
	outer := t
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	testNodes(t, ctx, ns, "1Gi", "numa-a", "numa-b")  // 4 CPUs, 8Gi each
	readyBlob(t, ctx, ns, "data", "numa-a", "numa-b") // a 1-CPU holder on each
	hog := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hog", Namespace: ns},
		Spec: corev1.PodSpec{NodeName: "numa-a", Containers: []corev1.Container{{Name: "c", Image: "x",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse("2")}}}}}}
	if err := env.Client.Create(ctx, hog); err != nil {
		t.Fatal(err)
	}

	t.Run("without the NodeResourceTopology CRD", func(t *testing.T) {
		x := numaOffsetTransfer(ns, "numa-none", "")
		createTransfer(t, ctx, x)
		recv := waitPod(t, ctx, ns, recvName(x.Name, 0))
		if got := strings.Join(placement.AffinityNodes(recv.Spec.Affinity), ","); got != "numa-b" {
			t.Errorf("receiver affinity %s, want numa-b (numa-a has 1 CPU left)", got)
		}
		if args := strings.Join(recv.Spec.Containers[0].Args, " "); strings.Contains(args, "--numa") {
			t.Errorf("no zone is known, yet: %s", args)
		}
		p := numaPlacement(t, ctx, x, false)
		if p.Node != "numa-b" || p.Zone != nil || p.Fit != pfsv1alpha1.NUMAFitNode {
			t.Errorf("numaPlacement %+v", p)
		}
		for _, want := range []string{"node numa-b: 3 cpu, 8128Mi memory free", "no NodeResourceTopology"} {
			if !strings.Contains(p.Reason, want) {
				t.Errorf("reason %q does not say %q", p.Reason, want)
			}
		}
		eventually(t, "NUMAPlaced event", func() error {
			return hasEvent(ctx, x, corev1.EventTypeNormal, pfsv1alpha1.ReasonNUMAPlaced, "receiver pod "+recv.Name+": node numa-b")
		})
	})

	t.Run("a nodeSelector narrows the candidates", func(t *testing.T) {
		// numa-b has more free, but the receiver's nodeSelector names
		// numa-a: the decision must stay within it, or the pod would get an
		// affinity its selector excludes and never be scheduled.
		node := &corev1.Node{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "numa-a"}, node); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(node.DeepCopy())
		node.Labels["numa-test/pick"] = "yes"
		if err := env.Client.Patch(ctx, node, patch); err != nil {
			t.Fatal(err)
		}
		x := numaOffsetTransfer(ns, "numa-selector", "")
		x.Spec.Receiver.Queues = 1
		x.Spec.Receiver.NodeSelector = map[string]string{"numa-test/pick": "yes"}
		createTransfer(t, ctx, x)
		recv := waitPod(t, ctx, ns, recvName(x.Name, 0))
		if got := strings.Join(placement.AffinityNodes(recv.Spec.Affinity), ","); got != "numa-a" {
			t.Errorf("receiver affinity %s, want numa-a, the only node its nodeSelector matches", got)
		}
	})

	t.Run("from NodeResourceTopology objects", func(t *testing.T) {
		// The hog stood for the first subtest's "1 CPU left"; the zones
		// below report what the kubelet sees, and the decision also
		// checks the scheduler's count, so they must agree: remove it
		// (at once: no kubelet here confirms a graceful deletion).
		if err := env.Client.Delete(ctx, hog, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
		if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{nrtCRD(t)}, ErrorIfPathMissing: true}); err != nil {
			t.Fatalf("installing the NRT CRD: %v", err)
		}
		// numa-a: the NIC on zone 1 with 2 free CPUs; numa-b: one CPU per zone.
		for _, o := range []*topov1alpha2.NodeResourceTopology{
			nrt("numa-a", [2]string{"4", "2"}, [2]string{"0", "1"}),
			nrt("numa-b", [2]string{"1", "1"}, [2]string{"1", "1"}),
		} {
			if err := env.Client.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
			outer.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) }) // the next subtest uses them too
		}
		x := numaOffsetTransfer(ns, "numa-nrt", "packetfs.io/pfsdata0")
		createTransfer(t, ctx, x)
		recv := waitPod(t, ctx, ns, recvName(x.Name, 0))
		if got := strings.Join(placement.AffinityNodes(recv.Spec.Affinity), ","); got != "numa-a" {
			t.Errorf("receiver affinity %s, want numa-a (the one zone with 2 CPUs and the NIC)", got)
		}
		if args := strings.Join(recv.Spec.Containers[0].Args, " "); !strings.Contains(args+" ", " --numa 1 ") {
			t.Errorf("receiver args %s do not bind zone 1", args)
		}
		p := numaPlacement(t, ctx, x, false)
		if p.Node != "numa-a" || p.Zone == nil || *p.Zone != 1 || p.Fit != pfsv1alpha1.NUMAFitSingleZone {
			t.Errorf("receiver numaPlacement %+v", p)
		}
		for _, want := range []string{"node numa-a zone node-1: 2 cpu, 4Gi memory, 1 packetfs.io/pfsdata0 free",
			"zone node-0 lacks packetfs.io/pfsdata0 (0 free, 1 needed)"} {
			if !strings.Contains(p.Reason, want) {
				t.Errorf("reason %q does not say %q", p.Reason, want)
			}
		}

		// The sender (pinned to numa-b, 1 CPU) follows once the receiver listens.
		bind(t, ctx, recv, "numa-a")
		setStatus(t, ctx, ns, recv.Name, running(true, "10.0.0.5"))
		send := waitPod(t, ctx, ns, sendName(x.Name))
		if args := strings.Join(send.Spec.Containers[0].Args, " "); !strings.HasSuffix(args, "--numa 0") {
			t.Errorf("sender args %s do not bind zone 0", args)
		}
		if send.Spec.NodeName != "numa-b" {
			t.Errorf("sender on %q", send.Spec.NodeName)
		}
		sp := numaPlacement(t, ctx, x, true)
		if sp.Node != "numa-b" || sp.Zone == nil || *sp.Zone != 0 || sp.Fit != pfsv1alpha1.NUMAFitSingleZone {
			t.Errorf("sender numaPlacement %+v", sp)
		}
		// No check of the sender's Event: when the status write after its
		// creation meets a conflict, the write is retried but that
		// reconcile's Events are not (as for every Event here); status comes
		// back from the pod's annotation.
	})

	t.Run("a TopologyAffinityError places the next attempt elsewhere", func(t *testing.T) {
		// The previous subtest's receiver on numa-a ends, as the zones
		// (unchanged) say: the scheduler's count must agree with them.
		setStatus(t, ctx, ns, recvName("numa-nrt", 0), func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })
		x := numaOffsetTransfer(ns, "numa-misfit", "packetfs.io/pfsdata0") // backoffLimit 0
		createTransfer(t, ctx, x)
		waitTransfer(t, ctx, x, "the first receiver placed", func(x *pfsv1alpha1.PfsTransfer) error {
			if x.Status.Receiver == nil || x.Status.Receiver.NUMAPlacement == nil {
				return fmt.Errorf("conditions %+v", x.Status.Conditions)
			}
			return nil
		})
		recv := waitPod(t, ctx, ns, recvName(x.Name, 0))
		if got := strings.Join(placement.AffinityNodes(recv.Spec.Affinity), ","); got != "numa-a" {
			t.Fatalf("first receiver affinity %s, want numa-a", got)
		}
		bind(t, ctx, recv, "numa-a")
		setStatus(t, ctx, ns, recv.Name, func(p *corev1.Pod) {
			p.Status.Phase, p.Status.Reason = corev1.PodFailed, "TopologyAffinityError"
			p.Status.Message = "Pod was rejected: Resources cannot be allocated with Topology locality"
		})
		next := waitPod(t, ctx, ns, recvName(x.Name, 1))
		if got := strings.Join(placement.AffinityNodes(next.Spec.Affinity), ","); got != "numa-b" {
			t.Errorf("second receiver affinity %s, want numa-b", got)
		}
		waitTransfer(t, ctx, x, "the misfit and the cross-zone placement in status", func(x *pfsv1alpha1.PfsTransfer) error {
			m, r := x.Status.NUMAMisfits, x.Status.Receiver
			if len(m) != 1 || m[0].Node != "numa-a" || m[0].Zone == nil || *m[0].Zone != 1 || m[0].Pod != recv.Name {
				return fmt.Errorf("numaMisfits %+v", m)
			}
			if r == nil || r.Pod != next.Name || r.NUMAPlacement == nil || r.NUMAPlacement.Node != "numa-b" ||
				r.NUMAPlacement.Fit != pfsv1alpha1.NUMAFitCrossZone {
				return fmt.Errorf("receiver %+v", r)
			}
			return nil
		})
	})
}
