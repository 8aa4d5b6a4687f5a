// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/holdermetrics"
)

// A running fan-out's progress in status, and the budget of its status
// writes. The operator reads each filling holder's /metrics page (the
// page Prometheus scrapes) at most once per Timing.ProgressInterval per
// blob, and a status write that would change nothing but progress and
// node states waits until that interval since the last one passed. So a
// blob's status is written at most once per interval whatever its node
// count, besides the writes that must not wait: a condition's status or
// reason changing, a new generation, a holder pod claimed or given up.

// ProgressReader reads running holders' progress (holdermetrics.Reader;
// tests give their own). A holder that does not answer is left out.
type ProgressReader interface {
	Read(ctx context.Context, targets []holdermetrics.Target) map[string]holdermetrics.Progress
}

// progressInterval is t.ProgressInterval, else DefaultTiming's.
func (t Timing) progressInterval() time.Duration {
	if t.ProgressInterval > 0 {
		return t.ProgressInterval
	}
	return DefaultTiming.ProgressInterval
}

// progressTargets are the Materializing nodes' holder pods that have an IP.
func progressTargets(st *pfsv1alpha1.PfsBlobStatus, holders []corev1.Pod, port int32) []holdermetrics.Target {
	if port == 0 {
		return nil
	}
	ip := map[string]string{}
	for _, p := range holders {
		ip[p.Name] = p.Status.PodIP
	}
	var out []holdermetrics.Target
	for _, n := range st.Nodes {
		if n.State == pfsv1alpha1.BlobNodeMaterializing && n.Pod != "" && ip[n.Pod] != "" {
			out = append(out, holdermetrics.Target{Pod: n.Pod, Host: ip[n.Pod], Port: port})
		}
	}
	return out
}

// carryProgress copies the stored progress into a freshly decided status:
// each node's, while the node is still Materializing on the same pod, and
// the blob's time of its last read.
func carryProgress(prev, st *pfsv1alpha1.PfsBlobStatus) {
	old := map[string]pfsv1alpha1.BlobNodeStatus{}
	for _, n := range prev.Nodes {
		old[n.Node] = n
	}
	for i := range st.Nodes {
		n := &st.Nodes[i]
		n.Progress = nil
		if o, ok := old[n.Node]; ok && o.Pod == n.Pod && n.State == pfsv1alpha1.BlobNodeMaterializing && o.Progress != nil {
			n.Progress = o.Progress.DeepCopy()
		}
	}
	st.ProgressTime = prev.ProgressTime.DeepCopy()
}

// mergeProgress puts what the holders said (by pod) into their nodes.
func mergeProgress(st *pfsv1alpha1.PfsBlobStatus, read map[string]holdermetrics.Progress) {
	for i := range st.Nodes {
		n := &st.Nodes[i]
		p, ok := read[n.Pod]
		if !ok || n.State != pfsv1alpha1.BlobNodeMaterializing || p.Size <= 0 {
			continue
		}
		filled := min(max(p.Filled, 0), p.Size)
		np := &pfsv1alpha1.BlobNodeProgress{Bytes: filled, Percent: int32(filled * 100 / p.Size)}
		if p.Seconds > 0 {
			np.MBps = strconv.FormatFloat(float64(filled)/1e6/p.Seconds, 'f', 1, 64)
		}
		n.Progress = np
	}
}

// summariseProgress is status.progress: the bytes every selected node
// holds (Ready: the whole blob; Materializing: what it last reported) over
// size times the desired nodes; "" before the size is known.
func summariseProgress(st *pfsv1alpha1.PfsBlobStatus) string {
	if st.Size == nil || st.Size.Value() <= 0 || st.DesiredNodes <= 0 {
		return ""
	}
	size := st.Size.Value()
	var held int64
	for _, n := range st.Nodes {
		switch {
		case n.State == pfsv1alpha1.BlobNodeReady:
			held += size
		case n.Progress != nil:
			held += min(n.Progress.Bytes, size)
		}
	}
	// Big blobs on many nodes: divide first so nothing overflows.
	whole := size * int64(st.DesiredNodes)
	pct := int64(float64(held) / float64(whole) * 100)
	return fmt.Sprintf("%d%%", min(pct, 100))
}

// writeUrgent says whether a status change must be written now: a
// condition's status or reason changed, a generation was observed, a node
// came or went, or a holder pod was claimed or given up (pods were created
// or deleted under it). Anything else (node states, progress, counts,
// messages) may wait for the write budget.
func writeUrgent(prev, st *pfsv1alpha1.PfsBlobStatus, podsChanged bool) bool {
	if podsChanged || prev.ObservedGeneration != st.ObservedGeneration || len(prev.Nodes) != len(st.Nodes) ||
		len(prev.Conditions) != len(st.Conditions) {
		return true
	}
	for i := range st.Conditions {
		a, b := prev.Conditions[i], st.Conditions[i]
		if a.Type != b.Type || a.Status != b.Status || a.Reason != b.Reason {
			return true
		}
	}
	for i := range st.Nodes {
		a, b := prev.Nodes[i], st.Nodes[i]
		if a.Node != b.Node || a.Pod != b.Pod || a.Attempts != b.Attempts {
			return true
		}
	}
	return false
}

// progressStep is what the write budget decided for one reconcile.
type progressStep struct {
	// read: read the targets' progress now (the interval passed).
	read bool
	// hold: keep the stored status for now (a change that may wait, within
	// the interval of the last write); wake is when to look again.
	hold bool
	wake time.Duration
}

// stepProgress decides, from the stored and the decided status (progress
// carried over), whether to read progress now, whether the write waits,
// and when to look again.
func stepProgress(prev, st *pfsv1alpha1.PfsBlobStatus, podsChanged bool, targets int, now time.Time, every time.Duration) progressStep {
	since := every
	if prev.ProgressTime != nil {
		since = now.Sub(prev.ProgressTime.Time)
	}
	due := since >= every
	var s progressStep
	if !due {
		s.wake = every - since
	} else if targets > 0 {
		s.wake = every
	}
	changed := !equality.Semantic.DeepEqual(prev, st)
	switch {
	case due:
		s.read = targets > 0
	case changed && !writeUrgent(prev, st, podsChanged):
		s.hold = true
	}
	if !due && targets == 0 && !s.hold {
		s.wake = 0 // nothing runs and nothing waits: no need to look again
	}
	return s
}

// withProgress carries, reads and summarises progress into st, or holds
// the whole write (returns false) when the budget says it waits. The
// wake-up is folded into *requeue.
func (r *PfsBlobReconciler) withProgress(ctx context.Context, prev, st *pfsv1alpha1.PfsBlobStatus, holders []corev1.Pod,
	podsChanged bool, now time.Time, requeue *time.Duration) bool {
	carryProgress(prev, st)
	var port int32
	if r.Progress != nil {
		port = r.Pods.MetricsPort
	}
	targets := progressTargets(st, holders, port)
	st.Progress = summariseProgress(st)
	step := stepProgress(prev, st, podsChanged, len(targets), now, r.Timing.progressInterval())
	sooner(requeue, step.wake)
	if step.hold {
		return false
	}
	if step.read {
		mergeProgress(st, r.Progress.Read(ctx, targets))
		st.Progress = summariseProgress(st)
	}
	if !equality.Semantic.DeepEqual(prev, st) && !writeUrgent(prev, st, podsChanged) || step.read {
		// This write spends the interval's budget.
		t := metav1.NewTime(now)
		st.ProgressTime = &t
	}
	return true
}
