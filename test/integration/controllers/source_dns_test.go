// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
)

// On the pod network every holder is created once the scan is done, before
// any pod has an IP: each has a DNS name through the blob's headless
// Service, and relays name their upstreams by it.
func TestSourceBlobHoldersAtOnce(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	w0, w1, w2 := ns+"-w0", ns+"-w1", ns+"-w2"
	testNodes(t, ctx, ns, "1Gi", w0, w1, w2)
	testClaim(t, ctx, ns, "data")
	blob := sourceBlob(ns, "model", pvcSource("data", ""))
	if err := env.Client.Create(ctx, blob); err != nil {
		t.Fatal(err)
	}
	finishScan(t, ctx, blob, w0, 0, scanResult)

	// No pod is bound or given an IP here: the test plays no kubelet.
	name := func(node string) string { return "h-" + podspec.NodeHash(node) + ".model-holders." + ns + ".svc:7470" }
	want := map[string]string{w0: "", w1: name(w0), w2: name(w1) + "," + name(w0)}
	for _, node := range []string{w0, w1, w2} {
		p := waitPod(t, ctx, ns, podspec.SourceHolderPodName("model", node, 1))
		if p.Status.PodIP != "" || p.Spec.NodeName != "" {
			t.Errorf("pod %s has IP %q node %q: nobody gave it one", p.Name, p.Status.PodIP, p.Spec.NodeName)
		}
		if p.Spec.Hostname != "h-"+podspec.NodeHash(node) || p.Spec.Subdomain != "model-holders" {
			t.Errorf("pod %s hostname %q subdomain %q", p.Name, p.Spec.Hostname, p.Spec.Subdomain)
		}
		_, from, _ := strings.Cut(args(p, true), "--fetch-from ")
		from, _, _ = strings.Cut(from, " ")
		if from != want[node] {
			t.Errorf("node %s: --fetch-from %q, want %q", node, from, want[node])
		}
	}

	svc := &corev1.Service{}
	if err := get(ctx, ns, "model-holders", svc); err != nil {
		t.Fatal(err)
	}
	assertControlledBy(t, svc.OwnerReferences, "PfsBlob", blob.Name)
	if s := svc.Spec; s.ClusterIP != corev1.ClusterIPNone || !s.PublishNotReadyAddresses ||
		s.Selector[podspec.LabelBlobUID] != string(blob.UID) || s.Selector[podspec.LabelComponent] != podspec.ComponentBlobHolder ||
		len(s.Ports) != 1 || s.Ports[0].Port != 7470 || s.Ports[0].Name != "repl" || s.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("service spec %+v", s)
	}
}

// A refused Service (here a quota of none) creates no holder: a relay
// would spend its attempts on names that do not resolve. The nodes keep
// their attempts, and the holders follow once the Service is allowed.
func TestSourceBlobServiceRefused(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	w0, w1 := ns+"-w0", ns+"-w1"
	testNodes(t, ctx, ns, "1Gi", w0, w1)
	testClaim(t, ctx, ns, "data")
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "no-services", Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceServices: resource.MustParse("0")}}}
	if err := env.Client.Create(ctx, quota); err != nil {
		t.Fatal(err)
	}
	// The quota controller is not running: write the usage it would.
	quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{corev1.ResourceServices: resource.MustParse("0")}}
	if err := env.Client.Status().Update(ctx, quota); err != nil {
		t.Fatal(err)
	}
	blob := sourceBlob(ns, "model", pvcSource("data", ""))
	if err := env.Client.Create(ctx, blob); err != nil {
		t.Fatal(err)
	}
	finishScan(t, ctx, blob, w0, 0, scanResult)
	eventually(t, "the refusal in status", func() error {
		if err := get(ctx, ns, blob.Name, blob); err != nil {
			return err
		}
		for _, n := range blob.Status.Nodes {
			if n.Pod != "" || n.Attempts != 0 || n.Message != "the apiserver refused the holders' Service model-holders; retrying" {
				return fmt.Errorf("node %+v", n)
			}
		}
		if len(blob.Status.Nodes) != 2 {
			return fmt.Errorf("nodes %+v", blob.Status.Nodes)
		}
		return nil
	})
	for _, node := range []string{w0, w1} {
		if err := absent(ctx, ns, podspec.SourceHolderPodName("model", node, 1)); err != nil {
			t.Error(err)
		}
	}
	eventually(t, "a PodsPending event", func() error {
		evs := &corev1.EventList{}
		if err := env.Client.List(ctx, evs, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Reason == pfsv1alpha1.ReasonPodsPending && strings.HasPrefix(e.Message, "cannot create service model-holders: ") {
				return nil
			}
		}
		return fmt.Errorf("none in %d events", len(evs.Items))
	})

	if err := env.Client.Delete(ctx, quota); err != nil {
		t.Fatal(err)
	}
	for _, node := range []string{w0, w1} {
		if p := waitPod(t, ctx, ns, podspec.SourceHolderPodName("model", node, 1)); p.Labels[podspec.LabelAttempt] != "1" {
			t.Errorf("pod %s labels %v", p.Name, p.Labels)
		}
	}
	if err := get(ctx, ns, "model-holders", &corev1.Service{}); err != nil {
		t.Error(err)
	}
}
