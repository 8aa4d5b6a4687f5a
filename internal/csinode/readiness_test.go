// SPDX-License-Identifier: Apache-2.0

package csinode

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

func TestParseProgress(t *testing.T) {
	tests := map[string]struct {
		in   string
		want string // String(); "" means nil
	}{
		"filling":       {`{"bytes":39321600,"size":91226112,"state":"fetching"}`, "43% (37.5 MiB of 87.0 MiB)"},
		"done":          {`{"bytes":1048576,"size":1048576,"state":"verified"}` + "\n", "100% (1.0 MiB of 1.0 MiB)"},
		"half-written":  {`{"bytes":3932`, ""},
		"zero size":     {`{"bytes":0,"size":0,"state":"reading"}`, ""},
		"more than all": {`{"bytes":2,"size":1,"state":"reading"}`, ""},
		"empty":         {"", ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := parseProgress([]byte(tc.in))
			got := ""
			if p != nil {
				got = p.String()
			}
			if got != tc.want {
				t.Errorf("parseProgress(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestDecideConsumer(t *testing.T) {
	blob := func(access []string, nodes ...pfsv1alpha1.BlobNodeStatus) *pfsv1alpha1.PfsBlob {
		b := &pfsv1alpha1.PfsBlob{ObjectMeta: metav1.ObjectMeta{Namespace: "models", Name: "llama"}}
		if access != nil {
			b.Spec.Access = &pfsv1alpha1.BlobAccess{Namespaces: access}
		}
		b.Status.Nodes = nodes
		return b
	}
	ready := pfsv1alpha1.BlobNodeStatus{Node: "node-1", Pod: "llama-holder-x", State: pfsv1alpha1.BlobNodeReady}
	other := pfsv1alpha1.BlobNodeStatus{Node: "node-2", Pod: "llama-holder-y", State: pfsv1alpha1.BlobNodeReady}
	filling := pfsv1alpha1.BlobNodeStatus{Node: "node-1", Pod: "llama-holder-x", State: pfsv1alpha1.BlobNodeMaterializing}
	failed := pfsv1alpha1.BlobNodeStatus{Node: "node-1", Pod: "llama-holder-x", State: pfsv1alpha1.BlobNodeFailed}
	pending := pfsv1alpha1.BlobNodeStatus{Node: "node-1", State: pfsv1alpha1.BlobNodePending}
	own := consumerRequest{pod: "models/vllm", podNS: "models", node: "node-1", blobNS: "models", blob: "llama", blobFound: true}
	foreign := own
	foreign.pod, foreign.podNS = "team-a/vllm", "team-a"
	missing := own
	missing.blobFound = false
	progress43 := &progress{Bytes: 39321600, Size: 91226112, State: "fetching"}

	tests := map[string]struct {
		req      consumerRequest
		blob     *pfsv1alpha1.PfsBlob
		progress *progress
		want     string     // the holder pod
		code     codes.Code // when refused
		msg      string     // the whole message when refused
	}{
		"own namespace, Ready here": {req: own, blob: blob(nil, other, ready), want: "llama-holder-x"},
		"granted namespace":         {req: foreign, blob: blob([]string{"team-b", "team-a"}, ready), want: "llama-holder-x"},
		"every namespace":           {req: foreign, blob: blob([]string{"*"}, ready), want: "llama-holder-x"},
		"not found": {req: missing, blob: blob(nil), code: codes.NotFound,
			msg: "blob models/llama not found (pod models/vllm on node node-1): create the PfsBlob, or fix the volume's blob and namespace attributes"},
		"not granted": {req: foreign, blob: blob([]string{"team-b"}, ready), code: codes.PermissionDenied,
			msg: `blob models/llama does not grant namespace team-a (pod team-a/vllm on node node-1): add "team-a" (or "*") to the ` +
				`PfsBlob's spec.access.namespaces, e.g. kubectl -n models patch pfsblob llama --type merge -p '{"spec":{"access":{"namespaces":["team-a"]}}}'`},
		"no grant at all": {req: foreign, blob: blob(nil, ready), code: codes.PermissionDenied, msg: "does not grant namespace team-a"},
		"not held here": {req: own, blob: blob(nil, other), code: codes.FailedPrecondition,
			msg: "blob models/llama is not held on node node-1 (its nodeSelector does not select it): schedule the pod with a nodeSelector " +
				"or node affinity that matches the PfsBlob's spec.nodeSelector (kubectl -n models get pfsblob llama -o jsonpath='{.spec.nodeSelector}'), " +
				"or widen that selector to node node-1"},
		"materializing, with progress": {req: own, blob: blob(nil, other, filling), progress: progress43, code: codes.Unavailable,
			msg: "blob models/llama is not ready on node node-1: state Materializing, 43% (37.5 MiB of 87.0 MiB); the pod starts when this node's copy is verified"},
		"materializing, no progress file": {req: own, blob: blob(nil, filling), code: codes.Unavailable,
			msg: "blob models/llama is not ready on node node-1: state Materializing; the pod starts when this node's copy is verified"},
		"pending, no pod yet": {req: own, blob: blob(nil, pending), progress: progress43, code: codes.Unavailable,
			msg: "blob models/llama is not ready on node node-1: state Pending; the pod starts when this node's copy is verified"},
		"failed": {req: own, blob: blob(nil, failed), code: codes.Unavailable,
			msg: "blob models/llama is not ready on node node-1: state Failed; see why in kubectl -n models describe pfsblob llama; the pod starts when this node's copy is verified"},
		"ready without a pod": {req: own, blob: blob(nil, pfsv1alpha1.BlobNodeStatus{Node: "node-1", State: pfsv1alpha1.BlobNodeReady}),
			code: codes.Unavailable, msg: "state Ready; the pod starts"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var asked []string
			got, err := decideConsumer(tc.req, tc.blob, func(pod string) *progress { asked = append(asked, pod); return tc.progress })
			if tc.code == codes.OK {
				if err != nil || got != tc.want {
					t.Errorf("decideConsumer = %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			st := status.Convert(err)
			if st.Code() != tc.code || !strings.Contains(st.Message(), tc.msg) {
				t.Errorf("decideConsumer: %s %q\nwant %s containing %q", st.Code(), st.Message(), tc.code, tc.msg)
			}
			for _, p := range asked {
				if p != "llama-holder-x" {
					t.Errorf("read the progress of pod %q, not this node's holder", p)
				}
			}
		})
	}
}
