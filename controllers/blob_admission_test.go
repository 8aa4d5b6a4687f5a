// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
)

func testNode(name string, alloc ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	for i := 0; i < len(alloc); i += 2 {
		n.Status.Allocatable[corev1.ResourceName(alloc[i])] = resource.MustParse(alloc[i+1])
	}
	return n
}

func TestAdmitNode(t *testing.T) {
	cfg := podspec.Config{}
	gi := int64(1 << 30)
	tests := map[string]struct {
		node      *corev1.Node
		used      corev1.ResourceList
		page      pfsv1alpha1.PageSize
		fallback  pfsv1alpha1.PageFallback
		want      admission
		transport pfsv1alpha1.Transport
		csi       bool
	}{
		"fits": {testNode("w1", "hugepages-2Mi", "2Gi", "memory", "4Gi"), nil, pfsv1alpha1.PageSize2Mi, pfsv1alpha1.PageFallbackNever,
			admission{OK: true, Page: pfsv1alpha1.PageSize2Mi}, "", false},
		"other pods use the hugepages, Never": {testNode("w1", "hugepages-2Mi", "1536Mi", "memory", "4Gi"),
			corev1.ResourceList{"hugepages-2Mi": resource.MustParse("1Gi")}, pfsv1alpha1.PageSize2Mi, pfsv1alpha1.PageFallbackNever,
			admission{Message: "node w1 has 512Mi of hugepages-2Mi free, blob needs 1Gi"}, "", false},
		"no hugepages, Allow maps 4Ki": {testNode("w1", "memory", "4Gi"), nil, pfsv1alpha1.PageSize2Mi, pfsv1alpha1.PageFallbackAllow,
			admission{OK: true, Page: pfsv1alpha1.PageSize4Ki,
				Fallback: "node w1 has 0 of hugepages-2Mi free, blob needs 1Gi: the holder maps 4Ki pages instead (spec.pageFallback Allow)"}, "", false},
		"no hugepages, Allow, memory short": {testNode("w1", "memory", "1Gi"), nil, pfsv1alpha1.PageSize2Mi, pfsv1alpha1.PageFallbackAllow,
			admission{Message: "node w1 has 0 of hugepages-2Mi free, blob needs 1Gi; on 4Ki pages it needs 1089Mi of memory and the node has 1Gi free"}, "", false},
		"4Ki counts memory": {testNode("w1", "memory", "1Gi"), nil, pfsv1alpha1.PageSize4Ki, pfsv1alpha1.PageFallbackAllow,
			admission{Message: "node w1 has 1Gi of memory free, blob needs 1089Mi"}, "", false},
		"4Ki over UDP counts the datagram windows": {testNode("w1", "memory", "1100Mi"), nil, pfsv1alpha1.PageSize4Ki, pfsv1alpha1.PageFallbackAllow,
			admission{Message: "node w1 has 1100Mi of memory free, blob needs 1153Mi"}, pfsv1alpha1.TransportUDP, false},
		"4Ki over TCP fits the same node": {testNode("w1", "memory", "1100Mi"), nil, pfsv1alpha1.PageSize4Ki, pfsv1alpha1.PageFallbackAllow,
			admission{OK: true, Page: pfsv1alpha1.PageSize4Ki}, pfsv1alpha1.TransportTCP, false},
		// Under the CSI plugin a source holder keeps its blob as files on a
		// tmpfs: memory, never hugepages, whatever spec.pageSize says.
		"csi 2Mi counts memory, not hugepages": {testNode("w1", "hugepages-2Mi", "2Gi", "memory", "1Gi"), nil, pfsv1alpha1.PageSize2Mi,
			pfsv1alpha1.PageFallbackAllow, admission{Message: "node w1 has 1Gi of memory free, blob needs 1088Mi"}, "", true},
		"csi 2Mi fits in memory without hugepages": {testNode("w1", "memory", "2Gi"), corev1.ResourceList{"memory": resource.MustParse("512Mi")},
			pfsv1alpha1.PageSize2Mi, pfsv1alpha1.PageFallbackNever, admission{OK: true, Page: pfsv1alpha1.PageSize2Mi}, "", true},
		"csi 1Gi over UDP counts the windows": {testNode("w1", "memory", "1100Mi"), nil, pfsv1alpha1.PageSize1Gi,
			pfsv1alpha1.PageFallbackAllow, admission{Message: "node w1 has 1100Mi of memory free, blob needs 1152Mi"}, pfsv1alpha1.TransportUDP, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := cfg
			if tc.csi {
				cfg.SocketVolume = podspec.SocketVolumeCSI
			}
			got := admitNode(cfg, tc.node, tc.used, gi, tc.page, tc.fallback, tc.transport)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckSourcePolicy(t *testing.T) {
	hp := func(p string) *pfsv1alpha1.PfsBlob {
		return &pfsv1alpha1.PfsBlob{Spec: pfsv1alpha1.PfsBlobSpec{Source: &pfsv1alpha1.BlobSource{HostPath: &pfsv1alpha1.HostPathBlobSource{Path: p}}}}
	}
	tests := map[string]struct {
		b    *pfsv1alpha1.PfsBlob
		pol  SourcePolicy
		want string // substring of the message; "" means allowed
	}{
		"pvc always allowed": {&pfsv1alpha1.PfsBlob{Spec: pfsv1alpha1.PfsBlobSpec{Source: &pfsv1alpha1.BlobSource{
			PersistentVolumeClaim: &pfsv1alpha1.PVCBlobSource{ClaimName: "d"}}}}, SourcePolicy{}, ""},
		"hostPath disabled": {hp("/srv/x"), SourcePolicy{}, "sources.hostPath.enabled"},
		"under a prefix":    {hp("/srv/models/x"), SourcePolicy{HostPathEnabled: true, HostPathPrefixes: []string{"/data", "/srv/models"}}, ""},
		"the prefix itself": {hp("/srv/models"), SourcePolicy{HostPathEnabled: true, HostPathPrefixes: []string{"/srv/models/"}}, ""},
		"a sibling is not under": {hp("/srv/models2/x"), SourcePolicy{HostPathEnabled: true, HostPathPrefixes: []string{"/srv/models"}},
			"not under an allowed prefix (/srv/models)"},
		"enabled without prefixes": {hp("/srv/x"), SourcePolicy{HostPathEnabled: true}, "allowed prefix (none)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			v := checkSourcePolicy(tc.b, tc.pol)
			switch {
			case tc.want == "" && v != nil:
				t.Errorf("refused: %+v", v)
			case tc.want != "" && (v == nil || v.Reason != pfsv1alpha1.ReasonSourceNotAllowed || !strings.Contains(v.Message, tc.want)):
				t.Errorf("verdict %+v, want SourceNotAllowed with %q", v, tc.want)
			}
		})
	}
}
