// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

func TestReadyBlobNodesAndAffinity(t *testing.T) {
	b := &pfsv1alpha1.PfsBlob{Status: pfsv1alpha1.PfsBlobStatus{Nodes: []pfsv1alpha1.BlobNodeStatus{
		{Node: "n3", State: pfsv1alpha1.BlobNodeReady}, {Node: "n1", State: pfsv1alpha1.BlobNodeReady},
		{Node: "n2", State: pfsv1alpha1.BlobNodeMaterializing}, {Node: "n4", State: pfsv1alpha1.BlobNodeFailed},
	}}}
	nodes := ReadyBlobNodes(b)
	if diff := cmp.Diff([]string{"n1", "n3"}, nodes); diff != "" {
		t.Errorf("ReadyBlobNodes (-want +got):\n%s", diff)
	}
	want := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}},
			{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n3"}}}},
		}}}}
	if diff := cmp.Diff(want, NodeAffinity(nodes)); diff != "" {
		t.Errorf("NodeAffinity (-want +got):\n%s", diff)
	}
	if NodeAffinity(nil) != nil {
		t.Error("no nodes must mean no affinity")
	}
}

func TestRetryOnTopologyError(t *testing.T) {
	for p, want := range map[pfsv1alpha1.NUMAPolicy]bool{
		pfsv1alpha1.NUMAPolicyNone: true, pfsv1alpha1.NUMAPolicyPreferred: true, pfsv1alpha1.NUMAPolicyRequired: false,
	} {
		if got := RetryOnTopologyError(p); got != want {
			t.Errorf("RetryOnTopologyError(%s) = %v, want %v", p, got, want)
		}
	}
}

func TestCPUSet(t *testing.T) {
	tests := map[string]struct {
		in   []int
		want string
	}{
		"none":           {nil, ""},
		"one":            {[]int{3}, "3"},
		"range and lone": {[]int{8, 0, 1, 2, 3}, "0-3,8"},
		"duplicates":     {[]int{1, 1, 2}, "1-2"},
		"two short runs": {[]int{4, 5, 7, 9, 10}, "4-5,7,9-10"},
	}
	for name, tc := range tests {
		if got := CPUSet(tc.in); got != tc.want {
			t.Errorf("%s: CPUSet(%v) = %q, want %q", name, tc.in, got, tc.want)
		}
	}
}

func TestReceiverAddress(t *testing.T) {
	pod := func(ip, status string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns"}, Status: corev1.PodStatus{PodIP: ip}}
		if status != "" {
			p.Annotations = map[string]string{NetworkStatusAnnotation: status}
		}
		return p
	}
	const multus = `[{"name":"cbr0","interface":"eth0","ips":["10.0.0.5"],"mac":"aa","default":true},` +
		`{"name":"ns/datanet","interface":"net1","ips":["not-an-ip","192.168.50.2"],"mac":"02:00:00:00:00:02"},` +
		`{"name":"other/xdp","interface":"net2","ips":["fd00::7"]},{"name":"ns/noip","interface":"net3"}]`
	tests := map[string]struct {
		pod     *corev1.Pod
		network string
		want    Address
		wantErr string
	}{
		"pod network":                 {pod: pod("10.0.0.5", ""), want: Address{IP: "10.0.0.5"}},
		"pod network, no IP yet":      {pod: pod("", ""), wantErr: "has no IP yet"},
		"secondary by name":           {pod: pod("10.0.0.5", multus), network: "datanet", want: Address{IP: "192.168.50.2", Interface: "net1", MAC: "02:00:00:00:00:02"}},
		"secondary by namespace/name": {pod: pod("10.0.0.5", multus), network: "ns/datanet", want: Address{IP: "192.168.50.2", Interface: "net1", MAC: "02:00:00:00:00:02"}},
		"other namespace, IPv6":       {pod: pod("10.0.0.5", multus), network: "other/xdp", want: Address{IP: "fd00::7", Interface: "net2"}},
		"name from another namespace": {pod: pod("10.0.0.5", multus), network: "xdp", wantErr: "network xdp is not in"},
		"network without IP":          {pod: pod("10.0.0.5", multus), network: "noip", wantErr: "has no IP address"},
		"no annotation yet":           {pod: pod("10.0.0.5", ""), network: "datanet", wantErr: "no k8s.v1.cni.cncf.io/network-status annotation yet"},
		"malformed annotation":        {pod: pod("10.0.0.5", `[{"name":`), network: "datanet", wantErr: "cannot parse"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ReceiverAddress(tc.pod, tc.network)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ReceiverAddress (-want +got):\n%s", diff)
			}
		})
	}
	if got := (Address{IP: "fd00::7"}).HostPort(5000); got != "[fd00::7]:5000" {
		t.Errorf("HostPort IPv6 = %q", got)
	}
}
