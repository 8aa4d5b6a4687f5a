// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
	"packetfs.io/operator/internal/result"
)

// blobObservation is what the blob controller gathered for one reconcile.
type blobObservation struct {
	// DaemonSet is the holder DaemonSet; nil before it exists.
	DaemonSet *appsv1.DaemonSet
	// CreatedDaemonSet says this reconcile created the DaemonSet.
	CreatedDaemonSet bool
	// Pods are the holder pods (any node, any age).
	Pods []corev1.Pod
	Now  time.Time
}

// blobPlan is what the controller must do after decideBlob.
type blobPlan struct {
	Events []event
	// ReadinessChanged is the new Ready condition when its reason changed.
	ReadinessChanged *metav1.Condition
}

// decideBlob is computeBlobStatus with the Events to record: the holder
// DaemonSet created, a new Ready reason, a new reason for Degraded=True.
func decideBlob(b *pfsv1alpha1.PfsBlob, obs blobObservation) (pfsv1alpha1.PfsBlobStatus, blobPlan) {
	st := computeBlobStatus(b, obs)
	var plan blobPlan
	if obs.CreatedDaemonSet {
		plan.Events = append(plan.Events, event{Type: corev1.EventTypeNormal, Reason: pfsv1alpha1.ReasonMaterializing,
			Message: "Created holder DaemonSet " + obs.DaemonSet.Name})
	}
	events, changed := readinessEvents(b.Status.Conditions, st.Conditions, nil)
	plan.Events, plan.ReadinessChanged = append(plan.Events, events...), changed
	return st, plan
}

// readinessEvents are the Events of a blob's new conditions, for every
// blob path: Ready with a new reason (Warning when warn holds the reason,
// else Normal), and Degraded=True with a new reason (Warning). changed is
// the new Ready condition when its reason changed.
func readinessEvents(old, cur []metav1.Condition, warn map[string]bool) (events []event, changed *metav1.Condition) {
	if c := reasonChanged(old, cur, pfsv1alpha1.ConditionReady); c != nil {
		typ := corev1.EventTypeNormal
		if warn[c.Reason] {
			typ = corev1.EventTypeWarning
		}
		events = append(events, event{Type: typ, Reason: c.Reason, Message: c.Message})
		changed = c
	}
	if c := reasonChanged(old, cur, pfsv1alpha1.ConditionDegraded); c != nil && c.Status == metav1.ConditionTrue {
		events = append(events, event{Type: corev1.EventTypeWarning, Reason: c.Reason, Message: c.Message})
	}
	return events, changed
}

// computeBlobStatus derives a blob's status from its holder DaemonSet and
// pods: one entry per node from the newest holder pod there, the node's page
// size, fingerprint and timings from the init container's termination
// message, and the Ready and Degraded conditions.
func computeBlobStatus(b *pfsv1alpha1.PfsBlob, obs blobObservation) pfsv1alpha1.PfsBlobStatus {
	st := *b.Status.DeepCopy()
	st.ObservedGeneration = b.Generation
	st.Nodes = nodeStatuses(b, obs.Pods)
	st.ReadyNodes, st.DesiredNodes = 0, 0
	if ds := obs.DaemonSet; ds != nil {
		st.DesiredNodes = ds.Status.DesiredNumberScheduled
	}

	byFP := map[string][]string{}
	pages := map[pfsv1alpha1.PageSize]bool{}
	var failed, fellBack, hugeMissing, stuck []string
	for _, n := range st.Nodes {
		switch n.State {
		case pfsv1alpha1.BlobNodePending:
			if strings.Contains(n.Message, "not scheduled") {
				stuck = append(stuck, n.Message)
			}
		case pfsv1alpha1.BlobNodeReady:
			st.ReadyNodes++
			byFP[n.Fingerprint] = append(byFP[n.Fingerprint], n.Node)
			pages[n.PageSize] = true
		case pfsv1alpha1.BlobNodeFailed:
			failed = append(failed, n.Node)
			if b.Spec.PageFallback == pfsv1alpha1.PageFallbackNever && strings.Contains(strings.ToLower(n.Message), "hugepage") {
				hugeMissing = append(hugeMissing, n.Node)
			}
		}
		if n.PageSize != "" && n.PageSize != b.Spec.PageSize {
			fellBack = append(fellBack, n.Node)
		}
	}
	st.Fingerprint, st.PageSize = soleKey(byFP), soleKey(pages)

	// The kubectl columns a source blob fills too: size and "ready/desired".
	size := b.Spec.Size.DeepCopy()
	st.Size, st.Ready = &size, fmt.Sprintf("%d/%d", st.ReadyNodes, st.DesiredNodes)

	d := decision{gen: b.Generation, now: obs.Now, conds: &st.Conditions}
	ready := func(ok bool, reason, msg string) { d.cond(pfsv1alpha1.ConditionReady, ok, reason, msg) }
	degraded := func(ok bool, reason, msg string) { d.cond(pfsv1alpha1.ConditionDegraded, ok, reason, msg) }
	ds := obs.DaemonSet
	mismatch := ""
	if len(byFP) > 1 {
		mismatch = "nodes hold different bytes: " + describeGroups(byFP)
	}
	switch {
	case mismatch != "":
		ready(false, pfsv1alpha1.ReasonFingerprintMismatch, mismatch)
	case ds == nil || ds.Status.ObservedGeneration < ds.Generation:
		ready(false, pfsv1alpha1.ReasonMaterializing, "waiting for the holder DaemonSet to be rolled out")
	case st.DesiredNodes == 0:
		ready(false, pfsv1alpha1.ReasonNoMatchingNodes, "no node matches spec.nodeSelector")
	case st.ReadyNodes >= st.DesiredNodes:
		ready(true, pfsv1alpha1.ReasonMaterialized, fmt.Sprintf("%d of %d nodes hold the blob, fingerprint %s", st.ReadyNodes, st.DesiredNodes, st.Fingerprint))
	case len(hugeMissing) > 0:
		ready(false, pfsv1alpha1.ReasonHugePagesUnavailable, fmt.Sprintf("%d of %d nodes ready; too few free %s hugepages on %s and spec.pageFallback is Never",
			st.ReadyNodes, st.DesiredNodes, b.Spec.PageSize, strings.Join(hugeMissing, ", ")))
	default:
		msg := fmt.Sprintf("%d of %d nodes ready", st.ReadyNodes, st.DesiredNodes)
		if len(stuck) > 0 {
			// A holder the scheduler cannot place (hugepages taken, a
			// resource gone) is retried by its DaemonSet; say why it waits.
			msg += "; " + stuck[0]
			if len(stuck) > 1 {
				msg += fmt.Sprintf(" (and %d more)", len(stuck)-1)
			}
		}
		ready(false, pfsv1alpha1.ReasonMaterializing, msg)
	}
	switch {
	case mismatch != "":
		degraded(true, pfsv1alpha1.ReasonFingerprintMismatch, mismatch)
	case len(failed) > 0:
		degraded(true, pfsv1alpha1.ReasonNodeFailed, "the blob failed on node(s) "+strings.Join(failed, ", ")+": see status.nodes[].message")
	case len(fellBack) > 0:
		degraded(true, pfsv1alpha1.ReasonPageSizeFallback, fmt.Sprintf("node(s) %s mapped smaller pages than %s: see status.nodes[].fallbackReason",
			strings.Join(fellBack, ", "), b.Spec.PageSize))
	default:
		degraded(false, pfsv1alpha1.ReasonAsExpected, "every node holds the blob as asked")
	}
	return st
}

// reasonChanged returns the new condition of type typ when there is one and
// its reason differs from the old one's (or there was none).
func reasonChanged(old, cur []metav1.Condition, typ string) *metav1.Condition {
	c := meta.FindStatusCondition(cur, typ)
	if c == nil {
		return nil
	}
	if o := meta.FindStatusCondition(old, typ); o != nil && o.Reason == c.Reason {
		return nil
	}
	out := *c
	return &out
}

// describeGroups writes "fp1 on a, b; fp2 on c" in a stable order.
func describeGroups(byFP map[string][]string) string {
	fps := make([]string, 0, len(byFP))
	for fp := range byFP {
		fps = append(fps, fp)
	}
	sort.Strings(fps)
	parts := make([]string, 0, len(fps))
	for _, fp := range fps {
		nodes := append([]string(nil), byFP[fp]...)
		sort.Strings(nodes)
		parts = append(parts, fp+" on "+strings.Join(nodes, ", "))
	}
	return strings.Join(parts, "; ")
}

// nodeStatuses builds one entry per node, sorted by node, from the newest
// holder pod on each node.
func nodeStatuses(b *pfsv1alpha1.PfsBlob, pods []corev1.Pod) []pfsv1alpha1.BlobNodeStatus {
	newest := map[string]*corev1.Pod{}
	for i := range pods {
		p := &pods[i]
		node := podNode(p)
		if node == "" {
			continue
		}
		if cur, ok := newest[node]; !ok || cur.CreationTimestamp.Before(&p.CreationTimestamp) ||
			(cur.CreationTimestamp.Equal(&p.CreationTimestamp) && cur.Name < p.Name) {
			newest[node] = p
		}
	}
	out := make([]pfsv1alpha1.BlobNodeStatus, 0, len(newest))
	for node, p := range newest {
		out = append(out, holderNodeStatus(b, node, p))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	if len(out) == 0 {
		return nil
	}
	return out
}

// podNode is the node a pod is bound to, or for a DaemonSet pod not bound
// yet, the node its affinity names.
func podNode(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range t.MatchFields {
			if f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

func holderNodeStatus(b *pfsv1alpha1.PfsBlob, node string, p *corev1.Pod) pfsv1alpha1.BlobNodeStatus {
	ns := pfsv1alpha1.BlobNodeStatus{Node: node, Pod: p.Name, State: pfsv1alpha1.BlobNodePending}
	var init *corev1.ContainerStatus
	for i := range p.Status.InitContainerStatuses {
		if p.Status.InitContainerStatuses[i].Name == podspec.ContainerBlobCreate {
			init = &p.Status.InitContainerStatuses[i]
		}
	}
	if p.Status.Phase == corev1.PodFailed {
		ns.State = pfsv1alpha1.BlobNodeFailed
		ns.Message = truncate(strings.TrimSpace(fmt.Sprintf("holder pod %s failed: %s %s", p.Name, p.Status.Reason, p.Status.Message)), 4096)
	}
	if init == nil || (init.State.Terminated == nil && init.LastTerminationState.Terminated == nil) {
		if ns.State == pfsv1alpha1.BlobNodeFailed {
			return ns
		}
		if init != nil && init.State.Running != nil {
			ns.State = pfsv1alpha1.BlobNodeMaterializing
			return ns
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				ns.Message = truncate("holder pod not scheduled: "+c.Message, 4096)
			}
		}
		return ns
	}
	term := init.State.Terminated
	if term == nil {
		term = init.LastTerminationState.Terminated
	}
	if term.ExitCode != 0 {
		ns.State = pfsv1alpha1.BlobNodeFailed
		detail := cliError(term.Message)
		if detail == "" {
			detail = term.Reason
		}
		ns.Message = truncate(fmt.Sprintf("pfs blob create exited with code %d: %s", term.ExitCode, detail), 4096)
		if term.ExitCode == exitMismatch {
			ns.Reason = pfsv1alpha1.ReasonVerificationFailed
		}
		return ns
	}
	r, err := result.ParseBlobCreate(term.Message)
	if err == nil && !r.OK {
		err = fmt.Errorf("pfs blob create reported failure: %s", r.Error)
	}
	if err != nil {
		ns.State = pfsv1alpha1.BlobNodeFailed
		ns.Message = truncate(pfsv1alpha1.ReasonResultInvalid+": "+err.Error(), 4096)
		return ns
	}
	ns.PageSize = apiPage(r.Page)
	ns.FallbackReason = truncate(r.FallbackReason, 1024)
	ns.Fingerprint = r.Fingerprint
	ns.NUMAZone = r.NUMANode
	ns.Timings = &pfsv1alpha1.BlobTimings{
		Map: &metav1.Duration{Duration: r.Map}, Prefault: &metav1.Duration{Duration: r.Prefault},
		Fill: &metav1.Duration{Duration: r.Fill}}
	// The CLI may round the blob up to whole pages; fewer bytes than asked
	// would make ranges near the end fail.
	if r.Size < b.Spec.Size.Value() {
		ns.State = pfsv1alpha1.BlobNodeFailed
		ns.Message = fmt.Sprintf("%s: the holder reports %d bytes, fewer than spec.size %d", pfsv1alpha1.ReasonResultInvalid, r.Size, b.Spec.Size.Value())
		return ns
	}
	if ns.State == pfsv1alpha1.BlobNodeFailed {
		return ns
	}
	ns.State = pfsv1alpha1.BlobNodeMaterializing
	if p.Status.Phase == corev1.PodRunning && podReadyCondition(p) {
		ns.State = pfsv1alpha1.BlobNodeReady
	}
	return ns
}

// apiPage maps the CLI's page names to the API's.
func apiPage(p string) pfsv1alpha1.PageSize {
	switch p {
	case "2M":
		return pfsv1alpha1.PageSize2Mi
	case "1G":
		return pfsv1alpha1.PageSize1Gi
	case "THP":
		return pfsv1alpha1.PageSizeTHP
	}
	return pfsv1alpha1.PageSize4Ki
}

// soleKey is the one key of m, or the zero value when m has none or several:
// a blob-wide fingerprint or page size exists only when every node agrees.
func soleKey[K comparable, V any](m map[K]V) K {
	var only K
	if len(m) != 1 {
		return only
	}
	for k := range m {
		only = k
	}
	return only
}
