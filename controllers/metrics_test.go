// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// A blob's gauges follow its written status, and go with it.
func TestBlobMetricsFollowStatus(t *testing.T) {
	b := &pfsv1alpha1.PfsBlob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-m", Name: "model"}}
	b.Status = *progressStatus(pfsv1alpha1.BlobNodeReady, pfsv1alpha1.BlobNodeMaterializing, pfsv1alpha1.BlobNodeFailed)
	b.Status.Nodes[1].Progress = &pfsv1alpha1.BlobNodeProgress{Bytes: 1 << 20, Percent: 1}
	b.Status.DistributionSeconds = "2.000"
	recordStatus(b, pfsv1alpha1.PfsBlobStatus{})
	size := float64(100 << 20)
	for what, tc := range map[string]struct {
		c    prometheus.Collector
		want float64
	}{
		"Ready nodes":         {blobNodes.WithLabelValues("ns-m", "model", "Ready"), 1},
		"Failed nodes":        {blobNodes.WithLabelValues("ns-m", "model", "Failed"), 1},
		"Pending nodes":       {blobNodes.WithLabelValues("ns-m", "model", "Pending"), 0},
		"desired":             {blobDesired.WithLabelValues("ns-m", "model"), 3},
		"ready":               {blobReady.WithLabelValues("ns-m", "model"), 0},
		"held on a Ready one": {blobHeld.WithLabelValues("ns-m", "model", "node-a"), size},
		"held while filling":  {blobHeld.WithLabelValues("ns-m", "model", "node-b"), 1 << 20},
		"distribution rate":   {blobDistRate.WithLabelValues("ns-m", "model"), size / 2},
	} {
		if got := testutil.ToFloat64(tc.c); got != tc.want {
			t.Errorf("%s = %v, want %v", what, got, tc.want)
		}
	}
	forgetDeletedBlob("ns-m", "model")
	if n := testutil.CollectAndCount(blobHeld, "packetfs_blob_node_held_bytes"); n != 0 {
		t.Errorf("%d held-bytes series left after the blob went", n)
	}
}

// A failed holder pod is counted once, by reason: the writes that keep it
// Failed add nothing, its retry failing again adds one more.
func TestNodeFailuresCountedOncePerPod(t *testing.T) {
	b := &pfsv1alpha1.PfsBlob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-f", Name: "model"}}
	verify := blobNodeFailures.WithLabelValues("ns-f", "model", pfsv1alpha1.ReasonVerificationFailed)
	other := blobNodeFailures.WithLabelValues("ns-f", "model", "Other")
	write := func(mut func(st *pfsv1alpha1.PfsBlobStatus)) {
		prev := b.Status
		prev.Nodes = append([]pfsv1alpha1.BlobNodeStatus(nil), b.Status.Nodes...)
		mut(&b.Status)
		recordStatus(b, prev)
	}
	b.Status = *progressStatus(pfsv1alpha1.BlobNodeReady, pfsv1alpha1.BlobNodeMaterializing, pfsv1alpha1.BlobNodeMaterializing)
	recordStatus(b, pfsv1alpha1.PfsBlobStatus{})
	write(func(st *pfsv1alpha1.PfsBlobStatus) {
		st.Nodes[1].State, st.Nodes[1].Reason = pfsv1alpha1.BlobNodeFailed, pfsv1alpha1.ReasonVerificationFailed
		st.Nodes[2].State = pfsv1alpha1.BlobNodeFailed
	})
	write(func(st *pfsv1alpha1.PfsBlobStatus) { st.Nodes[1].Message = "attempt 1 failed; retrying" })
	if v, o := testutil.ToFloat64(verify), testutil.ToFloat64(other); v != 1 || o != 1 {
		t.Fatalf("after one failed pod each: VerificationFailed %v, Other %v; want 1, 1", v, o)
	}
	write(func(st *pfsv1alpha1.PfsBlobStatus) {
		st.Nodes[1].Pod, st.Nodes[1].State, st.Nodes[1].Reason = "pod-b2", pfsv1alpha1.BlobNodeMaterializing, ""
	})
	write(func(st *pfsv1alpha1.PfsBlobStatus) {
		st.Nodes[1].State, st.Nodes[1].Reason = pfsv1alpha1.BlobNodeFailed, pfsv1alpha1.ReasonVerificationFailed
	})
	if v := testutil.ToFloat64(verify); v != 2 {
		t.Errorf("the retry pod-b2 failed too: VerificationFailed %v, want 2", v)
	}
	forgetBlob("ns-f", "model")
	if n := testutil.CollectAndCount(blobNodeFailures, "packetfs_blob_node_failures_total"); n == 0 {
		t.Error("a status observed anew dropped the failure counters")
	}
	forgetDeletedBlob("ns-f", "model")
	if n := testutil.CollectAndCount(blobNodeFailures, "packetfs_blob_node_failures_total"); n != 0 {
		t.Errorf("%d failure series left after the blob was deleted", n)
	}
}

// A run is counted once, when its written status turns terminal; a
// refusal when a condition moves to an admission reason.
func TestRunAndRefusalCounters(t *testing.T) {
	ok0 := testutil.ToFloat64(runs.WithLabelValues("PfsTransfer", "Succeeded"))
	bytes0 := testutil.ToFloat64(runBytes.WithLabelValues("PfsTransfer"))
	queued0 := testutil.ToFloat64(refusals.WithLabelValues("PfsTransfer", pfsv1alpha1.ReasonQueued))
	x := &pfsv1alpha1.PfsTransfer{}
	x.Status.Conditions = []metav1.Condition{{Type: pfsv1alpha1.ConditionPlaced, Status: metav1.ConditionFalse, Reason: pfsv1alpha1.ReasonQueued}}
	recordStatus(x, pfsv1alpha1.PfsTransferStatus{})
	recordStatus(x, *x.Status.DeepCopy()) // still queued: not counted again
	running := *x.Status.DeepCopy()
	running.Phase = pfsv1alpha1.PhaseRunning
	x.Status.Phase, x.Status.EffectiveBytes, x.Status.ElapsedSeconds = pfsv1alpha1.PhaseSucceeded, 1000, "0.5"
	recordStatus(x, running)
	recordStatus(x, *x.Status.DeepCopy()) // a later write of the ended run
	if got := testutil.ToFloat64(refusals.WithLabelValues("PfsTransfer", pfsv1alpha1.ReasonQueued)) - queued0; got != 1 {
		t.Errorf("queued counted %v times, want 1", got)
	}
	if got := testutil.ToFloat64(runs.WithLabelValues("PfsTransfer", "Succeeded")) - ok0; got != 1 {
		t.Errorf("success counted %v times, want 1", got)
	}
	if got := testutil.ToFloat64(runBytes.WithLabelValues("PfsTransfer")) - bytes0; got != 1000 {
		t.Errorf("bytes %v, want 1000", got)
	}
}

type failing struct{ err error }

func (f failing) Reconcile(context.Context, ctrl.Request) (ctrl.Result, error) {
	return ctrl.Result{}, f.err
}

func TestReconcileErrorsByReason(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p", errors.New("stale"))
	before := testutil.ToFloat64(reconcileErrors.WithLabelValues("test", "Conflict"))
	other := testutil.ToFloat64(reconcileErrors.WithLabelValues("test", "Other"))
	_, _ = withErrorMetrics("test", failing{conflict}).Reconcile(context.Background(), ctrl.Request{})
	_, _ = withErrorMetrics("test", failing{errors.New("boom")}).Reconcile(context.Background(), ctrl.Request{})
	_, _ = withErrorMetrics("test", failing{}).Reconcile(context.Background(), ctrl.Request{})
	if got := testutil.ToFloat64(reconcileErrors.WithLabelValues("test", "Conflict")) - before; got != 1 {
		t.Errorf("conflicts %v, want 1", got)
	}
	if got := testutil.ToFloat64(reconcileErrors.WithLabelValues("test", "Other")) - other; got != 1 {
		t.Errorf("others %v, want 1", got)
	}
}

// What the operator exposes passes promtool's checks (format and naming
// conventions). promtool is Debian's prometheus package, installed by
// hack/install-deps.sh.
func TestOperatorMetricsPassPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found (hack/install-deps.sh installs Debian's prometheus): %v", err)
	}
	b := &pfsv1alpha1.PfsBlob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-p", Name: "b"}}
	size := resource.MustParse("4Mi")
	b.Status = pfsv1alpha1.PfsBlobStatus{Size: &size, DesiredNodes: 1, DistributionSeconds: "1.0",
		Nodes: []pfsv1alpha1.BlobNodeStatus{{Node: "n", State: pfsv1alpha1.BlobNodeReady}}}
	recordStatus(b, pfsv1alpha1.PfsBlobStatus{})
	defer forgetBlob("ns-p", "b")
	fams, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	for _, f := range fams {
		if !strings.HasPrefix(f.GetName(), "packetfs_") {
			continue
		}
		if _, err := expfmt.MetricFamilyToText(&page, f); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = &page
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s\npage:\n%s", err, out, page.String())
	}
}
