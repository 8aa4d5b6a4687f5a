// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// summarise is a source blob's status once its nodes are planned: the
// counts, digest, distribution time and the Ready and Degraded conditions,
// with a NodeReady Event per node that became Ready. Pure: st is the
// status so far, returned with the summary.
func summarise(in fanoutIn, sel nodeSelection, rd holderReads, pn plannedNodes, st pfsv1alpha1.PfsBlobStatus) (pfsv1alpha1.PfsBlobStatus, []event) {
	st.Nodes = pn.status
	digest, origin := rd.origin.digest, in.origin
	t := tallyNodes(in.b, sel, st.Nodes, st.Source, digest, in.cfg.FilesLayout())
	st.DesiredNodes, st.ReadyNodes = int32(len(sel.order)), t.ready
	st.SHA256, st.Digest = "", ""
	if t.sameDigest && st.ReadyNodes > 0 {
		st.SHA256, st.Digest = digest, digest[:12]
	}
	st.Fingerprint, st.PageSize = soleKey(t.byFP), soleKey(t.pages)
	st.Delta = blobDeltaSummary(in.b, st.Nodes, originHasBase(sel, origin), originResult(rd, origin))
	all := st.ReadyNodes == st.DesiredNodes && st.DesiredNodes > 0
	if all {
		st.DistributionSeconds, st.DistributionMBps = distribution(in, rd, st.DistributionSeconds, st.DistributionMBps)
	}
	d := decision{gen: in.b.Generation, now: in.obs.Now, conds: &st.Conditions}
	ready := func(ok bool, reason, msg string) { d.cond(pfsv1alpha1.ConditionReady, ok, reason, msg) }
	switch originFailed := rd.origin.failed; {
	case originFailed != "" && rd.origin.reason == pfsv1alpha1.ReasonNetworkUnavailable:
		ready(false, pfsv1alpha1.ReasonNetworkUnavailable, truncate(fmt.Sprintf(
			"the origin node %s cannot serve the blob on spec.replication.network: %s; fix the NetworkAttachmentDefinition and recreate the blob", origin, originFailed), 2048))
	case originFailed != "":
		ready(false, pfsv1alpha1.ReasonSourceFailed, truncate(fmt.Sprintf(
			"the origin node %s could not load the source: %s; fix the source and recreate the blob", origin, originFailed), 2048))
	case pn.originAdmission != "":
		ready(false, pfsv1alpha1.ReasonHugePagesUnavailable, "the origin cannot hold the blob: "+pn.originAdmission)
	case len(t.mismatched) > 0:
		ready(false, pfsv1alpha1.ReasonDigestMismatch, truncate("nodes hold other bytes than the source: "+strings.Join(t.mismatched, "; "), 2048))
	case all:
		ready(true, pfsv1alpha1.ReasonMaterialized, fmt.Sprintf("%d of %d nodes hold the blob, sha256 %s", st.ReadyNodes, st.DesiredNodes, st.Digest))
	case len(t.hugeMissing) > 0:
		ready(false, pfsv1alpha1.ReasonHugePagesUnavailable, truncate(fmt.Sprintf("%d of %d nodes ready; %s", st.ReadyNodes, st.DesiredNodes, strings.Join(t.hugeMissing, "; ")), 2048))
	default:
		ready(false, pfsv1alpha1.ReasonMaterializing, fmt.Sprintf("%d of %d nodes ready", st.ReadyNodes, st.DesiredNodes))
	}
	setDegraded(d, in.b, t.mismatched, t.failed, t.fellBack)
	return st, t.events
}

// nodeTally is what summarise counts over the nodes' statuses.
type nodeTally struct {
	ready int32
	// byFP are the Ready nodes by fingerprint; pages their page sizes.
	byFP  map[string][]string
	pages map[pfsv1alpha1.PageSize]bool
	// sameDigest: every Ready node holds the origin's digest (known).
	sameDigest                                bool
	failed, fellBack, hugeMissing, mismatched []string
	// events are the NodeReady Events of nodes Ready for the first time.
	events []event
}

// tallyNodes counts the nodes by state; source names the origin's source
// in the NodeReady Events; filesLayout says the holders keep the blob as
// files (pageAsAsked).
func tallyNodes(b *pfsv1alpha1.PfsBlob, sel nodeSelection, nodes []pfsv1alpha1.BlobNodeStatus, source, digest string, filesLayout bool) nodeTally {
	t := nodeTally{byFP: map[string][]string{}, pages: map[pfsv1alpha1.PageSize]bool{}, sameDigest: digest != ""}
	for _, n := range nodes {
		switch n.State {
		case pfsv1alpha1.BlobNodeReady:
			t.ready++
			t.byFP[n.Fingerprint] = append(t.byFP[n.Fingerprint], n.Node)
			t.pages[n.PageSize] = true
			t.sameDigest = t.sameDigest && n.SHA256 == digest
			if sel.prev[n.Node].State != pfsv1alpha1.BlobNodeReady {
				t.events = append(t.events, event{Type: corev1.EventTypeNormal, Reason: pfsv1alpha1.ReasonNodeReady,
					Message: nodeReadyMessage(n, source)})
			}
		case pfsv1alpha1.BlobNodeFailed:
			t.failed = append(t.failed, n.Node)
			switch n.Reason {
			case pfsv1alpha1.ReasonHugePagesUnavailable:
				t.hugeMissing = append(t.hugeMissing, n.Message)
			case pfsv1alpha1.ReasonDigestMismatch, pfsv1alpha1.ReasonFingerprintMismatch:
				t.mismatched = append(t.mismatched, n.Node+": "+n.Message)
			}
		}
		if n.PageSize != "" && !pageAsAsked(b.Spec.PageSize, n.PageSize, filesLayout) {
			t.fellBack = append(t.fellBack, n.Node)
		}
	}
	return t
}

// pageAsAsked reports whether a node's page kind is what spec.pageSize
// asks for. Files on a tmpfs get huge pages only as THP (huge=within_size;
// hugetlbfs cannot give a file its exact length), so in the files layout
// THP is what 2Mi, 1Gi and THP ask for; 4Ki there means the kernel gave no
// huge page, a fallback like any other.
func pageAsAsked(asked, got pfsv1alpha1.PageSize, filesLayout bool) bool {
	if got == asked {
		return true
	}
	return filesLayout && got == pfsv1alpha1.PageSizeTHP && asked != pfsv1alpha1.PageSize4Ki
}

// setDegraded sets Degraded from the nodes that hold other bytes, failed,
// or mapped smaller pages than asked.
func setDegraded(d decision, b *pfsv1alpha1.PfsBlob, mismatched, failed, fellBack []string) {
	switch {
	case len(mismatched) > 0:
		d.cond(pfsv1alpha1.ConditionDegraded, true, pfsv1alpha1.ReasonDigestMismatch, truncate(strings.Join(mismatched, "; "), 2048))
	case len(failed) > 0:
		d.cond(pfsv1alpha1.ConditionDegraded, true, pfsv1alpha1.ReasonNodeFailed, "the blob failed on node(s) "+strings.Join(failed, ", ")+": see status.nodes[].message")
	case len(fellBack) > 0:
		d.cond(pfsv1alpha1.ConditionDegraded, true, pfsv1alpha1.ReasonPageSizeFallback, fmt.Sprintf("node(s) %s mapped smaller pages than %s: see status.nodes[].fallbackReason",
			strings.Join(fellBack, ", "), b.Spec.PageSize))
	default:
		d.cond(pfsv1alpha1.ConditionDegraded, false, pfsv1alpha1.ReasonAsExpected, "every node holds the blob as asked")
	}
}

// distribution is the data plane's window: the origin's load start to the
// latest moment a holder had verified its copy (a relay's last byte
// received plus its sha256 verify: it is not Ready before), as seconds and
// MB/s; secs and mbps (the stored ones) when it is not known.
func distribution(in fanoutIn, rd holderReads, secs, mbps string) (string, string) {
	oi := rd.info[in.origin]
	if oi == nil || oi.result == nil || oi.result.Source == nil || oi.result.Source.T0.IsZero() {
		return secs, mbps
	}
	t0, t1 := oi.result.Source.T0, oi.result.Source.T1
	for _, hi := range rd.info {
		if hi.result == nil || hi.result.Fetch == nil {
			continue
		}
		if end := hi.result.Fetch.T1.Add(hi.result.Fetch.Verify); end.After(t1) {
			t1 = end
		}
	}
	if !t1.After(t0) {
		return secs, mbps
	}
	return pfsv1alpha1.FormatSeconds(t1.Sub(t0)), pfsv1alpha1.FormatMBps(in.size, t1.Sub(t0))
}

// nodeReadyMessage: "w1 holds the blob: 300.0 MiB in 0.9 s (333 MB/s) from
// w0, sha256 verified".
func nodeReadyMessage(n pfsv1alpha1.BlobNodeStatus, source string) string {
	from := n.From
	if n.Role == pfsv1alpha1.BlobNodeOrigin {
		from = source
	}
	if from == "" {
		from = "an upstream node"
	}
	secs, _ := pfsv1alpha1.ParseDecimal(n.Seconds)
	mbps, _ := pfsv1alpha1.ParseDecimal(n.MBps)
	return fmt.Sprintf("%s holds the blob: %.1f MiB in %.1f s (%.0f MB/s) from %s, sha256 verified",
		n.Node, float64(n.Bytes)/(1<<20), secs, mbps, from)
}
