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

func TestTopologyOrder(t *testing.T) {
	got := topologyOrder("w3", []string{"w2", "w3", "w0", "w1"})
	if diff := cmp.Diff([]string{"w3", "w0", "w1", "w2"}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestUpstreamIndexes(t *testing.T) {
	tests := map[string]struct {
		topo pfsv1alpha1.ReplicationTopology
		i    int
		want []int
	}{
		"chain origin":  {pfsv1alpha1.TopologyChain, 0, nil},
		"chain first":   {pfsv1alpha1.TopologyChain, 1, []int{0}},
		"chain second":  {pfsv1alpha1.TopologyChain, 2, []int{1, 0}},
		"chain fifth":   {pfsv1alpha1.TopologyChain, 5, []int{4, 3, 2, 0}},
		"chain default": {"", 4, []int{3, 2, 1, 0}},
		"tree first":    {pfsv1alpha1.TopologyTree, 1, []int{0}},
		"tree second":   {pfsv1alpha1.TopologyTree, 2, []int{0}},
		"tree fourth":   {pfsv1alpha1.TopologyTree, 4, []int{1, 0}},
		"tree eleventh": {pfsv1alpha1.TopologyTree, 11, []int{5, 2, 0}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, upstreamIndexes(tc.topo, tc.i)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestUpstreamAddrs(t *testing.T) {
	order := []string{"w0", "w1", "w2", "w3", "w4"}
	tests := map[string]struct {
		i     int
		addr  map[string]string
		ready map[string]bool
		want  []string
	}{
		"nothing has an address yet":  {1, map[string]string{}, nil, nil},
		"first relay from the origin": {1, map[string]string{"w0": "10.0.0.1"}, nil, []string{"10.0.0.1:7470"}},
		"chain nearest first": {3, map[string]string{"w0": "10.0.0.1", "w1": "10.0.0.2", "w2": "10.0.0.3"}, nil,
			[]string{"10.0.0.3:7470", "10.0.0.2:7470", "10.0.0.1:7470"}},
		"a failed upstream is skipped": {2, map[string]string{"w0": "10.0.0.1"}, nil, []string{"10.0.0.1:7470"}},
		"ready peers after the topology": {1, map[string]string{"w0": "10.0.0.1", "w4": "10.0.0.5", "w3": "10.0.0.4"},
			map[string]bool{"w4": true}, []string{"10.0.0.1:7470", "10.0.0.5:7470"}},
		"IPv6 in brackets, as pfs parses it": {1, map[string]string{"w0": "fd00::1"}, nil, []string{"[fd00::1]:7470"}},
		"DNS names, nearest first": {2, map[string]string{"w0": "h-0.w-holders.ns.svc", "w1": "h-1.w-holders.ns.svc"}, nil,
			[]string{"h-1.w-holders.ns.svc:7470", "h-0.w-holders.ns.svc:7470"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := upstreamAddrs(pfsv1alpha1.TopologyChain, order, tc.i, tc.addr, tc.ready)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestTailAddrs(t *testing.T) {
	order := []string{"w0", "w1", "w2", "w3", "w4"}
	dns := func(n string) string { return "h-" + n + ".b-holders.ns.svc" }
	chain, tree, tcp, udp := pfsv1alpha1.TopologyChain, pfsv1alpha1.TopologyTree, pfsv1alpha1.TransportTCP, pfsv1alpha1.TransportUDP
	tests := map[string]struct {
		topo pfsv1alpha1.ReplicationTopology
		tr   pfsv1alpha1.Transport
		i    int
		addr map[string]string
		name func(string) string
		want []string
	}{
		"the first relay: the last two, last first": {chain, tcp, 1, nil, dns,
			[]string{"h-w4.b-holders.ns.svc:7470", "h-w3.b-holders.ns.svc:7470"}},
		"the relay before the last: the last alone":       {chain, tcp, 3, nil, dns, []string{"h-w4.b-holders.ns.svc:7470"}},
		"the last relay: none (no one relays through it)": {chain, tcp, 4, nil, dns, nil},
		"the origin: none": {chain, tcp, 0, nil, dns, nil},
		"a known address first": {chain, tcp, 1, map[string]string{"w4": "10.0.0.5"}, dns,
			[]string{"10.0.0.5:7470", "h-w3.b-holders.ns.svc:7470"}},
		"on a network, only the nodes with an IP": {chain, tcp, 1, map[string]string{"w3": "192.168.9.4"}, nil, []string{"192.168.9.4:7470"}},
		"a tree: none": {tree, tcp, 1, nil, dns, nil},
		"the last failed for good: the two before it": {chain, tcp, 1, nil, dns, []string{"h-w3.b-holders.ns.svc:7470", "h-w2.b-holders.ns.svc:7470"}},
		"udp: none": {chain, udp, 1, nil, dns, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gone := func(n string) bool { return strings.HasPrefix(name, "the last failed") && n == "w4" }
			got := tailAddrs(tc.topo, tc.tr, order, tc.i, tc.addr, tc.name, gone)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestHolderAddress(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const status = `[{"name":"cbr0","ips":["10.1.0.5"],"default":true},{"name":"ns/fabric","interface":"net1","ips":["fe80::1x","192.168.9.5"]}]`
	pod := func(phase corev1.PodPhase, ip, netStatus string, initStarted *time.Time) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "h", Namespace: "ns"}, Status: corev1.PodStatus{Phase: phase, PodIP: ip}}
		if netStatus != "" {
			p.Annotations = map[string]string{placement.NetworkStatusAnnotation: netStatus}
		}
		if initStarted != nil {
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "blob-create",
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(*initStarted)}}}}
		}
		return p
	}
	at := func(d time.Duration) *time.Time { t := t0.Add(-d); return &t }
	const missing = "holder pod h has no address on network fabric: is the NetworkAttachmentDefinition right? "
	named := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Hostname, p.Spec.Subdomain = "h-1", "w-holders"
		return p
	}
	tests := map[string]struct {
		pod         *corev1.Pod
		network     string
		wantHost    string
		wantMissing string
		wantRecheck time.Duration
	}{
		"pod network, no IP yet":              {pod(corev1.PodPending, "", "", nil), "", "", "", 0},
		"pod network":                         {pod(corev1.PodPending, "10.1.0.5", status, at(time.Hour)), "", "10.1.0.5", "", 0},
		"pod network, named: no IP needed":    {named(pod(corev1.PodPending, "", "", nil)), "", "h-1.w-holders.ns.svc", "", 0},
		"pod network, named, with an IP":      {named(pod(corev1.PodRunning, "10.1.0.5", "", nil)), "", "h-1.w-holders.ns.svc", "", 0},
		"network: a name is no address on it": {named(pod(corev1.PodPending, "10.1.0.5", status, at(time.Second))), "fabric", "192.168.9.5", "", 0},
		"network, first valid IP":             {pod(corev1.PodPending, "10.1.0.5", status, at(time.Second)), "fabric", "192.168.9.5", "", 0},
		"network by its full name":            {pod(corev1.PodRunning, "10.1.0.5", status, nil), "ns/fabric", "192.168.9.5", "", 0},
		"network, not started yet":            {pod(corev1.PodPending, "", "", nil), "fabric", "", "", 0},
		"network, started a moment ago without the annotation": {pod(corev1.PodPending, "10.1.0.5", "", at(10*time.Second)), "fabric", "", "",
			20 * time.Second},
		"network, started long ago without the annotation": {pod(corev1.PodPending, "10.1.0.5", "", at(time.Minute)), "fabric", "", missing +
			"(pod h has no k8s.v1.cni.cncf.io/network-status annotation yet (is Multus installed?))", 0},
		"network, running long ago, the annotation lacks it": {pod(corev1.PodRunning, "10.1.0.5", status, at(time.Minute)), "other", "",
			"holder pod h has no address on network other: is the NetworkAttachmentDefinition right? (pod h: network other is not in k8s.v1.cni.cncf.io/network-status)", 0},
		"network, the pod IP does not count": {pod(corev1.PodRunning, "10.1.0.5", `[{"name":"ns/fabric","ips":[]}]`, at(time.Minute)), "fabric", "", missing +
			"(pod h: network fabric has no IP address in k8s.v1.cni.cncf.io/network-status)", 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := holderAddress(tc.pod, tc.network, t0)
			want := holderAddr{Host: tc.wantHost, Missing: tc.wantMissing, RecheckAfter: tc.wantRecheck}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestHolderHosts(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "h", Namespace: "ns",
		Annotations: map[string]string{placement.NetworkStatusAnnotation: `[{"name":"fabric","ips":["192.168.9.5"]}]`}},
		Status: corev1.PodStatus{PodIP: "10.1.0.5"}}
	if diff := cmp.Diff([]string{"10.1.0.5"}, holderHosts(p, "")); diff != "" {
		t.Errorf("pod network (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"10.1.0.5", "192.168.9.5"}, holderHosts(p, "fabric")); diff != "" {
		t.Errorf("network (-want +got):\n%s", diff)
	}
	p.Spec.Hostname, p.Spec.Subdomain = "h-1", "w-holders"
	if diff := cmp.Diff([]string{"h-1.w-holders.ns.svc", "10.1.0.5"}, holderHosts(p, "")); diff != "" {
		t.Errorf("named (-want +got):\n%s", diff)
	}
}
