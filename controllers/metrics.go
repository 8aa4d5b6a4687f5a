// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// The operator's own metrics, on controller-runtime's registry (served on
// --metrics-bind-address beside controller-runtime's). Every value comes
// from a status the operator has just written (recordStatus, called by
// commitStatus after a successful write), so PromQL and status agree and
// an outcome is counted once: a write that conflicts counts nothing, the
// next one counts it. Names follow the Prometheus conventions; the list
// is in docs/guides/observability.md.

// labelKind is the Kind label of the run, refusal and event counters;
// labelBlob the blob's name; reasonOther the reason of what has none.
const (
	labelKind      = "kind"
	labelNamespace = "namespace"
	labelBlob      = "blob"
	reasonOther    = "Other"
)

var (
	blobLabels = []string{labelNamespace, labelBlob}

	blobNodes = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "packetfs_blob_nodes",
		Help: "Nodes of a blob by state (Pending, Materializing, Ready, Failed)."}, append(blobLabels, "state"))
	blobDesired = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "packetfs_blob_desired_nodes",
		Help: "Nodes that should hold a copy of the blob."}, blobLabels)
	blobReady = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "packetfs_blob_ready",
		Help: "1 when the blob's Ready condition is True, else 0."}, blobLabels)
	blobSize = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "packetfs_blob_size_bytes",
		Help: "The blob's effective size in bytes."}, blobLabels)
	blobHeld = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "packetfs_blob_node_held_bytes",
		Help: "Bytes of the blob a node holds, as status says: the size once Ready, the progress while it fills."}, append(blobLabels, "node"))
	blobDistSeconds = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "packetfs_blob_distribution_seconds",
		Help: "A source blob's distribution time: the origin's first byte read to the last node's last byte."}, blobLabels)
	blobDistRate = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "packetfs_blob_distribution_bytes_per_second",
		Help: "The blob's size over its distribution time."}, blobLabels)
	blobDeltaRatio = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "packetfs_blob_delta_ratio",
		Help: "A blob with spec.base: its size times the relays that rebuilt it from delta grams, over the bytes those relays received (status.nodes[].delta.ratio over them all)."}, blobLabels)

	blobNodeFailures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "packetfs_blob_node_failures_total",
		Help: "Holder pods of a blob that failed, by node status reason (VerificationFailed: the relay's bytes did not match the manifest; Other: no reason). Counted once per pod, retried or not."},
		append(blobLabels, "reason"))

	runs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "packetfs_runs_total",
		Help: "PfsTransfers and PcoreJobs that ended, by kind and outcome (Succeeded, Failed)."}, []string{labelKind, "outcome"})
	runBytes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "packetfs_run_bytes_total",
		Help: "Bytes moved (transfers) or processed (pcore jobs) by runs that succeeded."}, []string{labelKind})
	runSeconds = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "packetfs_run_seconds_total",
		Help: "Elapsed seconds of runs that succeeded; rate(bytes) / rate(seconds) is their throughput."}, []string{labelKind})

	refusals = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "packetfs_admission_refusals_total",
		Help: "Times an object was refused or held back before running, by kind and reason."}, []string{labelKind, "reason"})
	eventsRecorded = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "packetfs_events_total",
		Help: "Events the operator recorded, by kind, type and reason."}, []string{labelKind, "type", "reason"})
	reconcileErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "packetfs_reconcile_errors_total",
		Help: "Reconciles that returned an error, by controller and reason (the API status reason, or Other)."}, []string{"controller", "reason"})
)

func init() {
	metrics.Registry.MustRegister(blobNodes, blobDesired, blobReady, blobSize, blobHeld, blobDistSeconds, blobDistRate,
		blobDeltaRatio, blobNodeFailures, runs, runBytes, runSeconds, refusals, eventsRecorded, reconcileErrors)
	// The counters whose labels are known start at 0, so a rate or an
	// increase has a series to work on before the first outcome.
	for _, kind := range []string{"PfsBlob", "PfsTransfer", "PcoreJob"} {
		for reason := range admissionReasons {
			refusals.WithLabelValues(kind, reason)
		}
		if kind == "PfsBlob" {
			continue
		}
		for _, outcome := range []pfsv1alpha1.Phase{pfsv1alpha1.PhaseSucceeded, pfsv1alpha1.PhaseFailed} {
			runs.WithLabelValues(kind, string(outcome))
		}
		runBytes.WithLabelValues(kind)
		runSeconds.WithLabelValues(kind)
	}
}

// admissionReasons are the condition reasons that hold an object back
// before it runs.
var admissionReasons = map[string]bool{
	pfsv1alpha1.ReasonSourceNotAllowed: true, pfsv1alpha1.ReasonHugePagesUnavailable: true,
	pfsv1alpha1.ReasonQueued: true, pfsv1alpha1.ReasonNoNUMAFit: true, pfsv1alpha1.ReasonUnschedulable: true,
}

// kindOf names an object's Kind for the metrics' labels.
func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *pfsv1alpha1.PfsBlob:
		return "PfsBlob"
	case *pfsv1alpha1.PfsTransfer:
		return "PfsTransfer"
	case *pfsv1alpha1.PcoreJob:
		return "PcoreJob"
	}
	return reasonOther
}

// recordStatus updates the metrics after obj's status was written; prev is
// the status it replaced.
func recordStatus(obj client.Object, prev any) {
	switch o := obj.(type) {
	case *pfsv1alpha1.PfsBlob:
		p, _ := prev.(pfsv1alpha1.PfsBlobStatus)
		countRefusals("PfsBlob", p.Conditions, o.Status.Conditions)
		countNodeFailures(o, p.Nodes)
		observeBlob(o)
	case *pfsv1alpha1.PfsTransfer:
		p, _ := prev.(pfsv1alpha1.PfsTransferStatus)
		countRefusals("PfsTransfer", p.Conditions, o.Status.Conditions)
		if !p.Phase.IsTerminal() && o.Status.Phase.IsTerminal() {
			countRun("PfsTransfer", o.Status.Phase, o.Status.EffectiveBytes, o.Status.ElapsedSeconds)
		}
	case *pfsv1alpha1.PcoreJob:
		p, _ := prev.(pfsv1alpha1.PcoreJobStatus)
		countRefusals("PcoreJob", p.Conditions, o.Status.Conditions)
		if !p.Phase.IsTerminal() && o.Status.Phase.IsTerminal() {
			countRun("PcoreJob", o.Status.Phase, o.Status.ProcessedBytes, o.Status.ElapsedSeconds)
		}
	}
}

// countRefusals counts each condition that moved to an admission reason.
func countRefusals(kind string, prev, now []metav1.Condition) {
	before := map[string]string{}
	for _, c := range prev {
		before[c.Type] = c.Reason
	}
	for _, c := range now {
		if admissionReasons[c.Reason] && before[c.Type] != c.Reason {
			refusals.WithLabelValues(kind, c.Reason).Inc()
		}
	}
}

// countNodeFailures counts each node whose holder pod is newly Failed: a
// pod's failure stays in status until its retry replaces it, and a retry
// that fails again names another pod, so each failed pod counts once.
func countNodeFailures(b *pfsv1alpha1.PfsBlob, prev []pfsv1alpha1.BlobNodeStatus) {
	failed := map[string]string{}
	for _, n := range prev {
		if n.State == pfsv1alpha1.BlobNodeFailed {
			failed[n.Node] = n.Pod
		}
	}
	for _, n := range b.Status.Nodes {
		if n.State != pfsv1alpha1.BlobNodeFailed || n.Pod == "" {
			continue
		}
		if pod, ok := failed[n.Node]; ok && pod == n.Pod {
			continue
		}
		reason := n.Reason
		if reason == "" {
			reason = reasonOther
		}
		blobNodeFailures.WithLabelValues(b.Namespace, b.Name, reason).Inc()
	}
}

func countRun(kind string, phase pfsv1alpha1.Phase, bytes int64, elapsed string) {
	runs.WithLabelValues(kind, string(phase)).Inc()
	if phase != pfsv1alpha1.PhaseSucceeded {
		return
	}
	runBytes.WithLabelValues(kind).Add(float64(bytes))
	if s, err := strconv.ParseFloat(elapsed, 64); err == nil && s > 0 {
		runSeconds.WithLabelValues(kind).Add(s)
	}
}

// observeBlob sets a blob's gauges from its status.
func observeBlob(b *pfsv1alpha1.PfsBlob) {
	forgetBlob(b.Namespace, b.Name) // nodes that left must not linger
	l := prometheus.Labels{labelNamespace: b.Namespace, labelBlob: b.Name}
	// The failure counters exist at 0 before the first failure, so
	// increase() over the alert's window sees that failure.
	for _, reason := range []string{pfsv1alpha1.ReasonVerificationFailed, reasonOther} {
		blobNodeFailures.With(withLabel(l, "reason", reason))
	}
	st := &b.Status
	counts := map[pfsv1alpha1.BlobNodeState]int{pfsv1alpha1.BlobNodePending: 0, pfsv1alpha1.BlobNodeMaterializing: 0,
		pfsv1alpha1.BlobNodeReady: 0, pfsv1alpha1.BlobNodeFailed: 0}
	var size int64
	if st.Size != nil {
		size = st.Size.Value()
	} else {
		size = b.Spec.Size.Value()
	}
	var wire, rebuilt int64
	for _, n := range st.Nodes {
		counts[n.State]++
		held := int64(0)
		switch {
		case n.State == pfsv1alpha1.BlobNodeReady:
			held = size
		case n.Progress != nil:
			held = n.Progress.Bytes
		}
		blobHeld.With(withLabel(l, "node", n.Node)).Set(float64(held))
		if d := n.Delta; d != nil && d.Encoding == pfsv1alpha1.DeltaEncodingDelta && d.WireBytes > 0 {
			wire, rebuilt = wire+d.WireBytes, rebuilt+size
		}
	}
	if len(st.Nodes) > 0 {
		for s, c := range counts {
			blobNodes.With(withLabel(l, "state", string(s))).Set(float64(c))
		}
	}
	blobDesired.With(l).Set(float64(st.DesiredNodes))
	ready := 0.0
	if c := meta.FindStatusCondition(st.Conditions, pfsv1alpha1.ConditionReady); c != nil && c.Status == metav1.ConditionTrue {
		ready = 1
	}
	blobReady.With(l).Set(ready)
	blobSize.With(l).Set(float64(size))
	if s, err := strconv.ParseFloat(st.DistributionSeconds, 64); err == nil && s > 0 {
		blobDistSeconds.With(l).Set(s)
		blobDistRate.With(l).Set(float64(size) / s)
	}
	if wire > 0 {
		blobDeltaRatio.With(l).Set(float64(rebuilt) / float64(wire))
	}
}

func withLabel(l prometheus.Labels, k, v string) prometheus.Labels {
	out := prometheus.Labels{k: v}
	for a, b := range l {
		out[a] = b
	}
	return out
}

// forgetBlob drops a blob's series (it was deleted, or is observed anew).
func forgetBlob(namespace, name string) {
	l := prometheus.Labels{labelNamespace: namespace, labelBlob: name}
	for _, v := range []*prometheus.GaugeVec{blobNodes, blobDesired, blobReady, blobSize, blobHeld, blobDistSeconds, blobDistRate, blobDeltaRatio} {
		v.DeletePartialMatch(l)
	}
}

// forgetDeletedBlob drops every series of a deleted blob, its counters
// too (a blob observed anew keeps them: they only grow).
func forgetDeletedBlob(namespace, name string) {
	forgetBlob(namespace, name)
	blobNodeFailures.DeletePartialMatch(prometheus.Labels{labelNamespace: namespace, labelBlob: name})
}

// countingReconciler counts a reconciler's errors by reason.
type countingReconciler struct {
	name string
	r    reconcile.Reconciler
}

// withErrorMetrics wraps r so its errors are counted in
// packetfs_reconcile_errors_total (controller-runtime counts them without
// a reason).
func withErrorMetrics(name string, r reconcile.Reconciler) reconcile.Reconciler {
	reconcileErrors.WithLabelValues(name, reasonOther) // the series exists before the first error
	return countingReconciler{name: name, r: r}
}

func (c countingReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	res, err := c.r.Reconcile(ctx, req)
	if err != nil {
		reconcileErrors.WithLabelValues(c.name, errorReason(err)).Inc()
	}
	return res, err
}

// errorReason is the API status reason of err (Conflict, Forbidden,
// Invalid, ...), else Other.
func errorReason(err error) string {
	var s apierrors.APIStatus
	if errors.As(err, &s) && s.Status().Reason != "" {
		return string(s.Status().Reason)
	}
	return reasonOther
}
