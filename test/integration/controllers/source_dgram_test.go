// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
)

// AFXDP replication on spec.replication.network: the apiserver takes the
// relay pod (its init container with the AF_XDP capabilities and the UDP
// data port), the relay fetches on net1, and its reported transport,
// datapath and repair land in status.
func TestSourceBlobFanoutAFXDP(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	w0, w1 := ns+"-w0", ns+"-w1"
	testNodes(t, ctx, ns, "1Gi", w0, w1)
	testClaim(t, ctx, ns, "data")
	blob := sourceBlob(ns, "model", pvcSource("data", ""))
	blob.Spec.Replication = &pfsv1alpha1.BlobReplication{Transport: pfsv1alpha1.TransportAFXDP, Network: "fabric"}
	if err := env.Client.Create(ctx, blob); err != nil {
		t.Fatal(err)
	}
	finishScan(t, ctx, blob, w0, 0, scanResult)
	origin, relay := podspec.SourceHolderPodName("model", w0, 1), podspec.SourceHolderPodName("model", w1, 1)
	p0 := waitPod(t, ctx, ns, origin)
	if got := args(p0, true); strings.Contains(got, "--fetch-") || p0.Spec.InitContainers[0].SecurityContext.Capabilities.Add != nil {
		t.Errorf("the origin fetches nothing, yet has args %q and capabilities %v", got, p0.Spec.InitContainers[0].SecurityContext.Capabilities)
	}
	holderStarted(t, ctx, ns, origin, w0, "10.1.0.1")
	annotateNetwork(t, ctx, ns, origin, "10.1.0.1", "192.168.9.1")

	p1 := waitPod(t, ctx, ns, relay)
	if got := args(p1, true); !strings.Contains(got, "--fetch-from 192.168.9.1:7470 --fetch-transport afxdp --fetch-if net1 --token-file") {
		t.Errorf("relay create args = %q", got)
	}
	create := p1.Spec.InitContainers[0]
	if sc := create.SecurityContext; *sc.Privileged || *sc.AllowPrivilegeEscalation ||
		strings.Join(capNames(sc.Capabilities.Add), ",") != "NET_RAW,NET_ADMIN,BPF,IPC_LOCK" {
		t.Errorf("relay create securityContext %+v", sc)
	}
	if len(create.Ports) != 1 || create.Ports[0].Protocol != corev1.ProtocolUDP || create.Ports[0].ContainerPort != 7470 {
		t.Errorf("relay create ports %+v, want 7470/UDP", create.Ports)
	}
	if add := p1.Spec.Containers[0].SecurityContext.Capabilities.Add; add != nil {
		t.Errorf("the relay's server has capabilities %v", add)
	}
	holderStarted(t, ctx, ns, relay, w1, "10.1.0.2")
	annotateNetwork(t, ctx, ns, relay, "10.1.0.2", "192.168.9.2")

	holderDone(t, ctx, ns, origin, "10.1.0.1", originResult())
	holderDone(t, ctx, ns, relay, "10.1.0.2", strings.Replace(relayResult("192.168.9.1:7470", "1767225600.9"), `"verified":true`,
		`"verified":true,"transport":"afxdp","path":"afxdp net1 q0 native XDP, copy mode","dgrams":{"received":2900,"naks":3,"dropped":0}`, 1))
	waitReady(t, ctx, blob, metav1.ConditionTrue, pfsv1alpha1.ReasonMaterialized, "2 of 2 nodes hold the blob")
	for _, n := range blob.Status.Nodes {
		if n.Node != w1 {
			continue
		}
		if n.Transport != pfsv1alpha1.TransportAFXDP || n.Datapath != "afxdp net1 q0 native XDP, copy mode" || n.NAKs != 3 || n.From != w0 {
			t.Errorf("relay status %+v", n)
		}
	}
}

func capNames(cs []corev1.Capability) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
}
