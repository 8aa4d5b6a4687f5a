// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/placement"
	"packetfs.io/operator/internal/podspec"
)

// NetworkAttachmentDefinitions as users write them, on the third data link
// pfsdata2, which stays in the nodes as the master of macvlan interfaces
// (hack/kind/data-network.sh, hack/demo/values.yaml): one network for both
// ends, each pod getting its own address.

// netTransfer runs x (a TCP Payload transfer from the control-plane node to
// the worker whose endpoints the caller set), requires it Succeeded with
// integrity OK, and returns its sender and receiver pods.
func netTransfer(ctx context.Context, t *testing.T, x *pfsv1alpha1.PfsTransfer) (send, recv *corev1.Pod) {
	t.Helper()
	runTransfer(ctx, t, x)
	st := x.Status
	recv, send = &corev1.Pod{}, &corev1.Pod{}
	if err := env.c.Get(ctx, client.ObjectKey{Namespace: testNS, Name: st.Receiver.Pod}, recv); err != nil {
		t.Fatal(err)
	}
	if err := env.c.Get(ctx, client.ObjectKey{Namespace: testNS, Name: st.Sender.Pod}, send); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s -> %s: %s MB/s", st.Sender.Node, st.Receiver.Node, st.EffectiveMBps)
	return send, recv
}

// networkIP is pod's first address on network, from Multus's
// network-status annotation.
func networkIP(t *testing.T, pod *corev1.Pod, network string) string {
	t.Helper()
	a, err := placement.ReceiverAddress(pod, network)
	if err != nil {
		t.Fatalf("pod %s on %s: %v", pod.Name, network, err)
	}
	return a.IP
}

// connectsTo requires the sender to have dialled ip.
func connectsTo(t *testing.T, send *corev1.Pod, ip string) {
	t.Helper()
	if args := strings.Join(send.Spec.Containers[0].Args, " "); !strings.Contains(args, ip+":") {
		t.Errorf("sender args %q do not connect to %s", args, ip)
	}
}

// testMacvlanIPs: macvlan with static IPAM and the "ips" capability, each
// endpoint naming its address in spec.*.ips.
func testMacvlanIPs(ctx context.Context, t *testing.T) {
	const network, sendIP, recvIP = releaseNS + "/pfsdata2", "192.168.79.1", "192.168.79.2"
	x := transferSpec("tcp-payload-macvlan", pfsv1alpha1.TransportTCP, pfsv1alpha1.ModePayload, false)
	x.Spec.Sender.Network, x.Spec.Sender.IPs = network, []string{sendIP + "/24"}
	x.Spec.Receiver.Network, x.Spec.Receiver.IPs = network, []string{recvIP + "/24"}
	send, recv := netTransfer(ctx, t, x)
	if sel := recv.Annotations[podspec.AnnotationNetworks]; !strings.Contains(sel, `"ips":["`+recvIP+`/24"]`) {
		t.Errorf("receiver's network selection %q lacks its ips", sel)
	}
	if got := networkIP(t, recv, network); got != recvIP {
		t.Errorf("receiver's address on pfsdata2 %s, want %s (Multus's network-status)", got, recvIP)
	}
	if got := networkIP(t, send, network); got != sendIP {
		t.Errorf("sender's address on pfsdata2 %s, want %s", got, sendIP)
	}
	connectsTo(t, send, recvIP)
}

// testWhereabouts: macvlan with whereabouts IPAM (hack/kind/whereabouts.sh):
// the transfer names no address, each pod gets its own from
// 192.168.80.0/24, and the sender reaches the receiver's.
func testWhereabouts(ctx context.Context, t *testing.T) {
	const network = releaseNS + "/pfsdata2-wb"
	x := transferSpec("tcp-payload-whereabouts", pfsv1alpha1.TransportTCP, pfsv1alpha1.ModePayload, false)
	x.Spec.Sender.Network, x.Spec.Receiver.Network = network, network
	send, recv := netTransfer(ctx, t, x)
	sendIP, recvIP := networkIP(t, send, network), networkIP(t, recv, network)
	if !strings.HasPrefix(sendIP, "192.168.80.") || !strings.HasPrefix(recvIP, "192.168.80.") || sendIP == recvIP {
		t.Errorf("addresses %s and %s: want two in 192.168.80.0/24 from whereabouts", sendIP, recvIP)
	}
	connectsTo(t, send, recvIP)
	t.Logf("whereabouts gave %s (sender) and %s (receiver)", sendIP, recvIP)
}
