// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
	"packetfs.io/operator/internal/result"
)

// A source blob with spec.base: each node's holder is given the base when
// the base is Ready on that node as its pod is created (it then rebuilds
// the blob from delta grams and serves delta grams on); the others fetch
// whole. Pure functions over the base PfsBlob, the holder pods and their
// results.

// baseOnNode says whether the base is Ready on node, or why not.
func baseOnNode(base *pfsv1alpha1.PfsBlob, name, node string) (bool, string) {
	if base == nil {
		return false, fmt.Sprintf("PfsBlob %s (spec.base) not found", name)
	}
	for _, n := range base.Status.Nodes {
		if n.Node != node {
			continue
		}
		if n.State != pfsv1alpha1.BlobNodeReady {
			return false, fmt.Sprintf("the base %s is %s on %s", name, n.State, node)
		}
		if base.Status.Fingerprint != "" && n.Fingerprint != base.Status.Fingerprint {
			return false, fmt.Sprintf("the base %s on %s has fingerprint %s, not the blob's %s", name, node, n.Fingerprint, base.Status.Fingerprint)
		}
		return true, ""
	}
	return false, fmt.Sprintf("the base %s has no copy on %s", name, node)
}

// holderBase is the base a new holder on node gets: spec.base's name when
// base (the PfsBlob it names, nil when not found) is Ready there, else "".
func holderBase(b, base *pfsv1alpha1.PfsBlob, node string) string {
	if b.Spec.Base == nil {
		return ""
	}
	if ok, _ := baseOnNode(base, b.Spec.Base.Name, node); ok {
		return b.Spec.Base.Name
	}
	return ""
}

// relayDelta is how relay pod p of a blob with spec.base got its bytes, as
// its result says; nil before it has one (or without spec.base).
func relayDelta(b *pfsv1alpha1.PfsBlob, p *corev1.Pod, r *result.BlobCreate) *pfsv1alpha1.BlobNodeDelta {
	if b.Spec.Base == nil || p == nil || r == nil || r.Fetch == nil {
		return nil
	}
	full := func(reason, msg string) *pfsv1alpha1.BlobNodeDelta {
		return &pfsv1alpha1.BlobNodeDelta{Encoding: pfsv1alpha1.DeltaEncodingFullCopy, WireBytes: r.Fetch.Bytes,
			Ratio: pfsv1alpha1.FormatRatio(float64(r.Fetch.Bytes), float64(r.Fetch.Bytes)), Reason: reason, Message: truncate(msg, 1024)}
	}
	name := b.Spec.Base.Name
	d := r.Fetch.Delta
	switch {
	case p.Annotations[podspec.AnnotationDeltaBase] == "":
		return full(pfsv1alpha1.ReasonBaseNotReady, "the base "+name+" was not Ready on this node when its holder was created: fetched whole")
	case d == nil || !d.Base:
		why := "the data plane reported none"
		if d != nil && d.Error != "" {
			why = d.Error
		}
		return full(pfsv1alpha1.ReasonBaseUnavailable, "the holder could not map the base "+name+" ("+why+"): fetched whole")
	case d.Bytes == 0:
		return full(pfsv1alpha1.ReasonUpstreamWithoutBase, "the upstream holds no base like this node's ("+name+"): fetched whole")
	}
	nd := &pfsv1alpha1.BlobNodeDelta{Encoding: pfsv1alpha1.DeltaEncodingDelta, WireBytes: d.WireBytes, DeltaBytes: d.Bytes,
		Ratio: pfsv1alpha1.FormatRatio(float64(r.Fetch.Bytes), float64(d.WireBytes)), ApplySeconds: pfsv1alpha1.FormatSeconds(d.Apply)}
	if d.WholeBytes > 0 {
		nd.Message = fmt.Sprintf("%d bytes came whole from an upstream without the base", d.WholeBytes)
	}
	return nd
}

// blobDeltaSummary is status.delta: the relays by encoding, the bytes on the
// wire against the bytes they hold, and who fetched whole and why.
func blobDeltaSummary(b *pfsv1alpha1.PfsBlob, nodes []pfsv1alpha1.BlobNodeStatus, originBase bool, origin *result.BlobCreate) *pfsv1alpha1.BlobDeltaStatus {
	if b.Spec.Base == nil {
		return nil
	}
	ds := &pfsv1alpha1.BlobDeltaStatus{Base: b.Spec.Base.Name}
	if origin != nil && origin.Repl != nil && origin.Repl.Delta != nil && origin.Repl.Delta.Clients > 0 {
		ds.OriginIndexSeconds = pfsv1alpha1.FormatSeconds(origin.Repl.Delta.Index)
		ds.OriginEncodeSeconds = pfsv1alpha1.FormatSeconds(origin.Repl.Delta.Encode)
	}
	var whole []string
	for _, n := range nodes {
		d := n.Delta
		if d == nil || n.Role != pfsv1alpha1.BlobNodeRelay {
			continue
		}
		if d.Encoding == pfsv1alpha1.DeltaEncodingDelta {
			ds.DeltaNodes++
		} else {
			ds.FullCopyNodes++
			whole = append(whole, n.Node+": "+d.Reason)
		}
		ds.WireBytes += d.WireBytes
		ds.EffectiveBytes += n.Bytes
	}
	if ds.WireBytes > 0 {
		ds.Ratio = pfsv1alpha1.FormatRatio(float64(ds.EffectiveBytes), float64(ds.WireBytes))
	}
	sort.Strings(whole)
	var msg []string
	if !originBase {
		msg = append(msg, "the origin holds no Ready copy of the base: it serves the blob whole")
	}
	if len(whole) > 0 {
		msg = append(msg, "fetched whole: "+strings.Join(whole, ", "))
	}
	ds.Message = truncate(strings.Join(msg, "; "), 2048)
	return ds
}
