// SPDX-License-Identifier: Apache-2.0

package csinode

import (
	"encoding/json"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// progress is the holder's progress file, <blob>.d/progress (design29.md
// section 1): only ever the percent of a "not ready" message, never a
// reason to mount.
type progress struct {
	Bytes int64  `json:"bytes"`
	Size  int64  `json:"size"`
	State string `json:"state"`
}

// parseProgress reads one progress line; nil when it is not one (a
// half-written file, or none).
func parseProgress(b []byte) *progress {
	var p progress
	if err := json.Unmarshal(b, &p); err != nil || p.Size <= 0 || p.Bytes < 0 || p.Bytes > p.Size {
		return nil
	}
	return &p
}

// String is "43% (37.5 MiB of 87.0 MiB)".
func (p *progress) String() string {
	const mib = 1 << 20
	return fmt.Sprintf("%d%% (%.1f MiB of %.1f MiB)", p.Bytes*100/p.Size, float64(p.Bytes)/mib, float64(p.Size)/mib)
}

// consumerRequest is what decides a consumer's mount: the pod, the node,
// and the blob it names.
type consumerRequest struct {
	pod       string // namespace/name, for the messages
	podNS     string
	node      string
	blobNS    string
	blob      string
	blobFound bool
}

// decideConsumer decides whether a consumer pod may mount blob b on this
// node now, and from which holder pod's copy. It is pure: progressOf reads
// the percent of a holder's copy for the message, nil when unknown. The
// refusals are gRPC statuses the kubelet shows in the pod's events, and
// retries: each says what is wrong and how to fix it.
func decideConsumer(r consumerRequest, b *pfsv1alpha1.PfsBlob, progressOf func(holder string) *progress) (string, error) {
	name := r.blobNS + "/" + r.blob
	if !r.blobFound {
		return "", status.Errorf(codes.NotFound, "blob %s not found (pod %s on node %s): create the PfsBlob, "+
			"or fix the volume's %s and %s attributes", name, r.pod, r.node, attrBlob, attrNamespace)
	}
	if !b.Grants(r.podNS) {
		return "", status.Errorf(codes.PermissionDenied, "blob %s does not grant namespace %s (pod %s on node %s): "+
			"add %q (or \"*\") to the PfsBlob's spec.access.namespaces, e.g. kubectl -n %s patch pfsblob %s --type merge "+
			"-p '{\"spec\":{\"access\":{\"namespaces\":[\"%s\"]}}}'",
			name, r.podNS, r.pod, r.node, r.podNS, r.blobNS, r.blob, r.podNS)
	}
	var held *pfsv1alpha1.BlobNodeStatus
	for i := range b.Status.Nodes {
		if b.Status.Nodes[i].Node == r.node {
			held = &b.Status.Nodes[i]
		}
	}
	if held == nil {
		return "", status.Errorf(codes.FailedPrecondition, "blob %s is not held on node %s (its nodeSelector does not select it): "+
			"schedule the pod with a nodeSelector or node affinity that matches the PfsBlob's spec.nodeSelector "+
			"(kubectl -n %s get pfsblob %s -o jsonpath='{.spec.nodeSelector}'), or widen that selector to node %s",
			name, r.node, r.blobNS, r.blob, r.node)
	}
	if held.State != pfsv1alpha1.BlobNodeReady || held.Pod == "" {
		state := string(held.State)
		if held.Pod != "" {
			if p := progressOf(held.Pod); p != nil {
				state += ", " + p.String()
			}
		}
		fix := "the pod starts when this node's copy is verified"
		if held.State == pfsv1alpha1.BlobNodeFailed {
			fix = fmt.Sprintf("see why in kubectl -n %s describe pfsblob %s; %s", r.blobNS, r.blob, fix)
		}
		return "", status.Errorf(codes.Unavailable, "blob %s is not ready on node %s: state %s; %s", name, r.node, state, fix)
	}
	return held.Pod, nil
}
