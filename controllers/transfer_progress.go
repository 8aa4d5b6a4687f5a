// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/holdermetrics"
)

// A running transfer's progress in status: its receiver's /metrics page
// (pfs recv --metrics-listen) read at most once per progress interval, so
// a transfer's status is written at most once per interval for progress.

// transferProgressStep is what one reconcile does about progress: read
// the target now (nil: not now), and when to look again (0: no need).
type transferProgressStep struct {
	target *holdermetrics.Target
	wake   time.Duration
}

// stepTransferProgress decides from the decided status: a Running
// transfer whose receiver has an IP is read once the interval since the
// last read passed, and looked at again then.
func stepTransferProgress(st *pfsv1alpha1.PfsTransferStatus, recv *corev1.Pod, port int32, now time.Time, every time.Duration) transferProgressStep {
	if st.Phase != pfsv1alpha1.PhaseRunning || port == 0 || recv == nil || recv.Status.PodIP == "" {
		return transferProgressStep{}
	}
	if st.ProgressTime != nil {
		if since := now.Sub(st.ProgressTime.Time); since < every {
			return transferProgressStep{wake: every - since}
		}
	}
	return transferProgressStep{target: &holdermetrics.Target{Pod: recv.Name, Host: recv.Status.PodIP, Port: port}, wake: every}
}

// percentOf is done over planned as status.progress, "" before the sender
// announced anything.
func percentOf(done, planned int64) string {
	if planned <= 0 {
		return ""
	}
	// In floating point: bytes times 100 overflows int64 past 92 PB.
	return fmt.Sprintf("%d%%", int64(float64(min(max(done, 0), planned))/float64(planned)*100))
}

// withTransferProgress puts the receiver's progress into st (and "100%"
// once Succeeded); the wake-up is folded into *requeue.
func (r *PfsTransferReconciler) withTransferProgress(ctx context.Context, st *pfsv1alpha1.PfsTransferStatus, recv *corev1.Pod, now time.Time, requeue *time.Duration) {
	if st.Phase == pfsv1alpha1.PhaseSucceeded {
		st.Progress = "100%"
		return
	}
	var port int32
	if r.Progress != nil {
		port = r.Pods.MetricsPort
	}
	step := stepTransferProgress(st, recv, port, now, r.Timing.progressInterval())
	sooner(requeue, step.wake)
	if step.target == nil {
		return
	}
	p, ok := r.Progress.Read(ctx, []holdermetrics.Target{*step.target})[step.target.Pod]
	t := metav1.NewTime(now)
	st.ProgressTime = &t
	if pct := percentOf(p.Filled, p.Size); ok && pct != "" {
		st.Progress = pct
	}
}
