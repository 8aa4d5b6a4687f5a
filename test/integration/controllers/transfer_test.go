// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
)

func recvName(x string, attempt int32) string {
	return podspec.TransferPodName(x, attempt, podspec.ComponentReceiver)
}

// sendName is the first attempt's sender (the tests retry only receivers).
func sendName(x string) string {
	return podspec.TransferPodName(x, 0, podspec.ComponentSender)
}

func createTransfer(t *testing.T, ctx context.Context, x *pfsv1alpha1.PfsTransfer) {
	t.Helper()
	if err := env.Client.Create(ctx, x); err != nil {
		t.Fatalf("creating transfer: %v", err)
	}
}

func payloadTransfer(ns, name string) *pfsv1alpha1.PfsTransfer {
	return &pfsv1alpha1.PfsTransfer{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: pfsv1alpha1.PfsTransferSpec{Mode: pfsv1alpha1.ModePayload, Gram: gram(),
			Range: &pfsv1alpha1.Range{Length: resource.MustParse("8Mi")}},
	}
}

// gram spells out the defaults: GramSpec's quantities are not pointers, so a
// typed client cannot leave them out for the apiserver to default.
func gram() pfsv1alpha1.GramSpec {
	return pfsv1alpha1.GramSpec{DescriptorsPerGram: 1024, SlabBytes: resource.MustParse("1Mi"),
		MaxDescriptorLength: resource.MustParse("256Ki"), Align: 64}
}

// waitTransfer polls the transfer until check passes.
func waitTransfer(t *testing.T, ctx context.Context, x *pfsv1alpha1.PfsTransfer, what string, check func(*pfsv1alpha1.PfsTransfer) error) {
	t.Helper()
	eventually(t, what, func() error {
		if err := get(ctx, x.Namespace, x.Name, x); err != nil {
			return err
		}
		return check(x)
	})
}

func phaseIs(p pfsv1alpha1.Phase) func(*pfsv1alpha1.PfsTransfer) error {
	return func(x *pfsv1alpha1.PfsTransfer) error {
		if x.Status.Phase != p {
			return fmt.Errorf("phase %q, want %q; conditions %+v", x.Status.Phase, p, x.Status.Conditions)
		}
		return nil
	}
}

// The receiver comes first; the sender is created only once the receiver is
// ready, and connects to its address on the secondary network; both results
// are merged into status and kubectl shows them.
func TestTransferOrderingAndResult(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	readyBlob(t, ctx, ns, "data", "node-a", "node-b")
	x := &pfsv1alpha1.PfsTransfer{
		ObjectMeta: metav1.ObjectMeta{Name: "offset-tcp", Namespace: ns},
		Spec: pfsv1alpha1.PfsTransferSpec{
			Mode: pfsv1alpha1.ModeOffset, BlobRef: &pfsv1alpha1.BlobReference{Name: "data"}, Gram: gram(),
			Sender:   pfsv1alpha1.Endpoint{Network: "datanet"},
			Receiver: pfsv1alpha1.Endpoint{Network: "datanet", ResourceName: "example.com/nic"},
		},
	}
	createNAD(t, ctx, ns, "datanet")
	createTransfer(t, ctx, x)

	recv := waitPod(t, ctx, ns, recvName(x.Name, 0))
	assertControlledBy(t, recv.OwnerReferences, "PfsTransfer", x.Name)
	// The transfer's token exists before its first pod, owned by the
	// transfer, 32 random bytes hex-encoded; both pods pass it.
	sec := &corev1.Secret{}
	if err := get(ctx, ns, podspec.TransferTokenSecretName(x.Name), sec); err != nil {
		t.Fatalf("the transfer's token Secret: %v", err)
	}
	assertControlledBy(t, sec.OwnerReferences, "PfsTransfer", x.Name)
	if tok := sec.Data[podspec.TokenKey]; len(tok) != 64 {
		t.Errorf("token of %d bytes, want 64 (32 random bytes in hex)", len(tok))
	}
	if !strings.Contains(strings.Join(recv.Spec.Containers[0].Args, " "), "--token-file "+podspec.TransferTokenFile) {
		t.Errorf("receiver args lack --token-file %s: %v", podspec.TransferTokenFile, recv.Spec.Containers[0].Args)
	}
	if got := recv.Annotations[podspec.AnnotationNetworks]; got != "datanet" {
		t.Errorf("receiver networks annotation = %q", got)
	}
	var nodes []string
	for _, term := range recv.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		nodes = append(nodes, term.MatchFields[0].Values...)
	}
	if strings.Join(nodes, ",") != "node-a,node-b" {
		t.Errorf("receiver may run on %v, want the blob's Ready nodes", nodes)
	}
	nic := recv.Spec.Containers[0].Resources.Limits["example.com/nic"]
	if nic.Value() != 1 {
		t.Errorf("device resource limit = %s, want 1", nic.String())
	}
	noSender := func() error { return absent(ctx, ns, sendName(x.Name)) }
	consistently(t, "no sender while the receiver is pending", time.Second, noSender)

	bind(t, ctx, recv, "node-a")
	setStatus(t, ctx, ns, recv.Name, running(false, "10.0.0.5"))
	consistently(t, "no sender while the receiver is not ready", time.Second, noSender)
	waitTransfer(t, ctx, x, "Placing, waiting for the receiver", func(x *pfsv1alpha1.PfsTransfer) error {
		if err := phaseIs(pfsv1alpha1.PhasePlacing)(x); err != nil {
			return err
		}
		return conditionIs(x.Status.Conditions, pfsv1alpha1.ConditionSucceeded, metav1.ConditionFalse, pfsv1alpha1.ReasonReceiverNotReady)
	})

	// Multus reports the secondary interface; the kubelet reports readiness.
	eventually(t, "annotating network-status", func() error {
		p := &corev1.Pod{}
		if err := get(ctx, ns, recv.Name, p); err != nil {
			return err
		}
		p.Annotations[podspec.AnnotationNetworkStatus] = `[{"name":"cbr0","interface":"eth0","ips":["10.0.0.5"],"default":true},` +
			`{"name":"` + ns + `/datanet","interface":"net1","ips":["192.168.50.2"],"mac":"02:00:00:00:00:02"}]`
		return env.Client.Update(ctx, p)
	})
	setStatus(t, ctx, ns, recv.Name, running(true, "10.0.0.5"))

	send := waitPod(t, ctx, ns, sendName(x.Name))
	if args := strings.Join(send.Spec.Containers[0].Args, " "); !strings.Contains(args, "--connect 192.168.50.2:5000") {
		t.Errorf("sender args %q do not connect to the receiver's datanet address", args)
	}
	bind(t, ctx, send, "node-b")
	const n = 67108864
	// The receiver's /metrics page (played by holderPages) says how far it
	// got: status.progress follows it while Running.
	if !strings.Contains(strings.Join(recv.Spec.Containers[0].Args, " "), "--metrics-listen :9470") {
		t.Errorf("receiver args lack --metrics-listen :9470: %v", recv.Spec.Containers[0].Args)
	}
	holderPages.fill(recv.Name, n)
	setStatus(t, ctx, ns, send.Name, running(true, "10.0.0.6"))
	waitTransfer(t, ctx, x, "Running with progress", func(x *pfsv1alpha1.PfsTransfer) error {
		if err := phaseIs(pfsv1alpha1.PhaseRunning)(x); err != nil {
			return err
		}
		if p := x.Status.Progress; p == "" || p == "0%" || p == "100%" || x.Status.ProgressTime == nil {
			return fmt.Errorf("progress %q at %v, want a share read from the receiver's page", p, x.Status.ProgressTime)
		}
		return nil
	})
	// A later read may have moved it on: the column shows some share.
	if out, _, err := env.Kubectl(ctx, "get", "pfstransfers", "-n", ns, x.Name); err != nil || !regexp.MustCompile(`PROGRESS[\s\S]*Running\s+[0-9]{1,3}%`).MatchString(out) {
		t.Errorf("kubectl get pfstransfers does not show a PROGRESS share (%v):\n%s", err, out)
	}

	setStatus(t, ctx, ns, recv.Name, exited(0, transferResult("receiver", n, 0.050, 0.030, 0.020, "0x287083f7", "0x287083f7", "OK")))
	setStatus(t, ctx, ns, send.Name, exited(0, transferResult("sender", n, 0.051, 0.020, 0.010, "0x287083f7", "0x287083f7", "OK")))
	waitTransfer(t, ctx, x, "Succeeded", phaseIs(pfsv1alpha1.PhaseSucceeded))

	st := x.Status
	checks := []struct{ name, got, want string }{
		{"progress", st.Progress, "100%"},
		{"label", st.Label, "Native PFS Offset-only Mode - TCP"},
		{"effectiveBytes", fmt.Sprint(st.EffectiveBytes), fmt.Sprint(n)},
		{"wireBytes", fmt.Sprint(st.WireBytes), fmt.Sprint(n / 100)},
		{"elapsedSeconds (the longer side)", st.ElapsedSeconds, "0.051"},
		{"effectiveMBps", st.EffectiveMBps, "1315.9"},
		{"cpu.user (both sides)", st.CPU.UserSeconds, "0.050"},
		{"cpu.sys (both sides)", st.CPU.SysSeconds, "0.030"},
		{"mbPerCPUSecond", st.MBPerCPUSecond, "838.9"},
		{"integrity", string(st.Integrity.Result), "OK"},
		{"senderChecksum", st.Integrity.SenderChecksum, "287083f7"},
		{"receiver node", st.Receiver.Node, "node-a"},
		{"sender node", st.Sender.Node, "node-b"},
		{"receiver cpu.user", st.Receiver.CPU.UserSeconds, "0.030"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if err := conditionIs(st.Conditions, pfsv1alpha1.ConditionPlaced, metav1.ConditionTrue, pfsv1alpha1.ReasonPodsScheduled); err != nil {
		t.Error(err)
	}
	if err := conditionIs(st.Conditions, pfsv1alpha1.ConditionSucceeded, metav1.ConditionTrue, pfsv1alpha1.ReasonCompleted); err != nil {
		t.Error(err)
	}
	out, _, err := env.Kubectl(ctx, "get", "pfstransfers", "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Offset", "TCP", "Succeeded", "1315.9", "838.9", "OK"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get pfstransfers does not show %q:\n%s", want, out)
		}
	}
}

// A truncated termination message gives Failed with ResultInvalid and a
// message naming the pod and the problem; the controller keeps working.
func TestTransferTruncatedResult(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	x := payloadTransfer(ns, "cut")
	createTransfer(t, ctx, x)
	recv := waitPod(t, ctx, ns, recvName(x.Name, 0))
	bind(t, ctx, recv, "node-a")
	setStatus(t, ctx, ns, recv.Name, running(true, "10.0.0.7"))
	send := waitPod(t, ctx, ns, sendName(x.Name))
	hp := send.Spec.Containers[0].Resources.Limits["hugepages-2Mi"]
	if hp.Cmp(resource.MustParse("8Mi")) != 0 {
		t.Errorf("scratch sender hugepages-2Mi = %s, want 8Mi", hp.String())
	}
	bind(t, ctx, send, "node-b")
	full := transferResult("receiver", 8388608, 0.01, 0.01, 0.01, "0x1", "0x1", "OK")
	setStatus(t, ctx, ns, recv.Name, exited(0, full[:100]))
	setStatus(t, ctx, ns, send.Name, exited(0, transferResult("sender", 8388608, 0.01, 0.01, 0.01, "0x1", "0x1", "OK")))
	waitTransfer(t, ctx, x, "Failed with ResultInvalid", func(x *pfsv1alpha1.PfsTransfer) error {
		return conditionIs(x.Status.Conditions, pfsv1alpha1.ConditionFailed, metav1.ConditionTrue, pfsv1alpha1.ReasonResultInvalid)
	})
	msg := failedMessage(x)
	if !strings.Contains(msg, recv.Name) || !strings.Contains(msg, "truncated JSON") {
		t.Errorf("Failed message %q should name the receiver pod and say the result is truncated", msg)
	}
	if x.Status.Phase != pfsv1alpha1.PhaseFailed || x.Status.EffectiveMBps != "" {
		t.Errorf("phase %q MB/s %q: a failed parse must not report numbers", x.Status.Phase, x.Status.EffectiveMBps)
	}
}

// Failed attempts are retried with new pods up to backoffLimit, then the
// transfer fails with BackoffLimitExceeded naming the last reason.
func TestTransferRetriesThenBackoffLimitExceeded(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	x := payloadTransfer(ns, "flaky")
	x.Spec.BackoffLimit = ptr.To(int32(1))
	createTransfer(t, ctx, x)

	r0 := waitPod(t, ctx, ns, recvName(x.Name, 0))
	bind(t, ctx, r0, "node-a")
	setStatus(t, ctx, ns, r0.Name, exited(1, `{"ok":false,"cmd":"recv","error":"recv: bind 0.0.0.0:5000: Address in use"}`))
	waitTransfer(t, ctx, x, "one failed attempt", func(x *pfsv1alpha1.PfsTransfer) error {
		if x.Status.FailedAttempts != 1 || x.Status.LastFailureTime == nil {
			return fmt.Errorf("failedAttempts %d lastFailureTime %v", x.Status.FailedAttempts, x.Status.LastFailureTime)
		}
		return nil
	})
	// The condition moves on with the next attempt; the Event, whose reason
	// is the condition reason, keeps the failure.
	eventually(t, "a PodFailed event with the CLI's error", func() error {
		return hasEvent(ctx, x, corev1.EventTypeWarning, pfsv1alpha1.ReasonPodFailed, "attempt 1 failed: receiver: pod "+recvName(x.Name, 0)+" exited with code 1: recv: bind 0.0.0.0:5000: Address in use")
	})

	r1 := waitPod(t, ctx, ns, recvName(x.Name, 1))
	bind(t, ctx, r1, "node-a")
	setStatus(t, ctx, ns, r1.Name, exited(5, `{"ok":false,"cmd":"recv","error":"recv: no sender within 300 s"}`))
	waitTransfer(t, ctx, x, "Failed with BackoffLimitExceeded", func(x *pfsv1alpha1.PfsTransfer) error {
		return conditionIs(x.Status.Conditions, pfsv1alpha1.ConditionFailed, metav1.ConditionTrue, pfsv1alpha1.ReasonBackoffLimitExceeded)
	})
	if x.Status.FailedAttempts != 2 || x.Status.Phase != pfsv1alpha1.PhaseFailed {
		t.Errorf("failedAttempts %d phase %q, want 2 Failed", x.Status.FailedAttempts, x.Status.Phase)
	}
	if msg := failedMessage(x); !strings.Contains(msg, "last failure: Timeout") {
		t.Errorf("Failed message %q should name the last reason (Timeout)", msg)
	}
	consistently(t, "no third attempt", time.Second, func() error { return absent(ctx, ns, recvName(x.Name, 2)) })
}

// An integrity mismatch is a measured result, not a flake: it is reported
// with both checksums and not retried even with backoffLimit left.
func TestTransferIntegrityMismatchNotRetried(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	x := payloadTransfer(ns, "corrupt")
	x.Spec.BackoffLimit = ptr.To(int32(3))
	createTransfer(t, ctx, x)
	recv := waitPod(t, ctx, ns, recvName(x.Name, 0))
	bind(t, ctx, recv, "node-a")
	setStatus(t, ctx, ns, recv.Name, running(true, "10.0.0.8"))
	send := waitPod(t, ctx, ns, sendName(x.Name))
	bind(t, ctx, send, "node-b")
	setStatus(t, ctx, ns, recv.Name, exited(3, transferResult("receiver", 8388608, 0.01, 0.01, 0.01, "0xdeadbeef", "0x287083f7", "MISMATCH")))
	setStatus(t, ctx, ns, send.Name, exited(3, transferResult("sender", 8388608, 0.01, 0.01, 0.01, "0x287083f7", "0xdeadbeef", "MISMATCH")))
	waitTransfer(t, ctx, x, "Failed with IntegrityMismatch", func(x *pfsv1alpha1.PfsTransfer) error {
		return conditionIs(x.Status.Conditions, pfsv1alpha1.ConditionFailed, metav1.ConditionTrue, pfsv1alpha1.ReasonIntegrityMismatch)
	})
	if in := x.Status.Integrity; in == nil || in.Result != pfsv1alpha1.IntegrityMismatch || in.SenderChecksum != "287083f7" || in.ReceiverChecksum != "deadbeef" {
		t.Errorf("integrity = %+v", x.Status.Integrity)
	}
	consistently(t, "no retry", time.Second, func() error { return absent(ctx, ns, recvName(x.Name, 1)) })
}

// A receiver the scheduler cannot place fails its attempt after the
// unschedulable timeout with reason Unschedulable and the scheduler's words.
func TestTransferUnschedulable(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	x := payloadTransfer(ns, "nowhere")
	createTransfer(t, ctx, x)
	recv := waitPod(t, ctx, ns, recvName(x.Name, 0))
	setStatus(t, ctx, ns, recv.Name, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: "0/2 nodes are available: 2 Insufficient hugepages-2Mi.",
			LastTransitionTime: now()}}
	})
	waitTransfer(t, ctx, x, "Failed after the unschedulable timeout", func(x *pfsv1alpha1.PfsTransfer) error {
		return conditionIs(x.Status.Conditions, pfsv1alpha1.ConditionFailed, metav1.ConditionTrue, pfsv1alpha1.ReasonBackoffLimitExceeded)
	})
	if msg := failedMessage(x); !strings.Contains(msg, "Unschedulable") || !strings.Contains(msg, "Insufficient hugepages-2Mi") {
		t.Errorf("Failed message %q should say Unschedulable and why", msg)
	}
}

// After ttlSecondsAfterFinished the pods are deleted; the transfer and its
// results stay. envtest has no garbage collector, so cascading deletion of
// pods with their transfer is asserted through the owner references (above)
// rather than observed.
func TestTransferTTLDeletesPodsKeepsResults(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	x := payloadTransfer(ns, "short-lived")
	x.Spec.TTLSecondsAfterFinished = ptr.To(int32(1))
	createTransfer(t, ctx, x)
	recv := waitPod(t, ctx, ns, recvName(x.Name, 0))
	setStatus(t, ctx, ns, recv.Name, running(true, "10.0.0.9"))
	send := waitPod(t, ctx, ns, sendName(x.Name))
	assertControlledBy(t, send.OwnerReferences, "PfsTransfer", x.Name)
	setStatus(t, ctx, ns, recv.Name, exited(0, transferResult("receiver", 8388608, 0.01, 0.01, 0.01, "0x1", "0x1", "OK")))
	setStatus(t, ctx, ns, send.Name, exited(0, transferResult("sender", 8388608, 0.01, 0.01, 0.01, "0x1", "0x1", "OK")))
	waitTransfer(t, ctx, x, "Succeeded", phaseIs(pfsv1alpha1.PhaseSucceeded))
	for _, name := range []string{recv.Name, send.Name} {
		eventually(t, "pod "+name+" deleted after the TTL", func() error { return absent(ctx, ns, name) })
	}
	if err := get(ctx, ns, x.Name, x); err != nil || x.Status.EffectiveMBps != "838.9" {
		t.Errorf("transfer after TTL: err %v, MB/s %q (want it kept with 838.9)", err, x.Status.EffectiveMBps)
	}
}

// A transfer that names a missing blob waits (not failed) and starts once
// the blob exists and is Ready.
func TestTransferWaitsForBlob(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	x := &pfsv1alpha1.PfsTransfer{
		ObjectMeta: metav1.ObjectMeta{Name: "early", Namespace: ns},
		Spec: pfsv1alpha1.PfsTransferSpec{Mode: pfsv1alpha1.ModeArithmetic, Gram: gram(),
			BlobRef: &pfsv1alpha1.BlobReference{Name: "later"}},
	}
	createTransfer(t, ctx, x)
	waitTransfer(t, ctx, x, "Pending with BlobNotFound", func(x *pfsv1alpha1.PfsTransfer) error {
		return conditionIs(x.Status.Conditions, pfsv1alpha1.ConditionPlaced, metav1.ConditionFalse, pfsv1alpha1.ReasonBlobNotFound)
	})
	readyBlob(t, ctx, ns, "later", "node-a")
	recv := waitPod(t, ctx, ns, recvName(x.Name, 0))
	if args := strings.Join(recv.Spec.Containers[0].Args, " "); !strings.Contains(args, "--mode arith") ||
		!strings.Contains(args, "--blob-socket /run/packetfs/"+ns+"/later.sock") {
		t.Errorf("receiver args %q", args)
	}
}

func hasEvent(ctx context.Context, x *pfsv1alpha1.PfsTransfer, typ, reason, msgPrefix string) error {
	list := &corev1.EventList{}
	if err := env.Client.List(ctx, list, client.InNamespace(x.Namespace)); err != nil {
		return err
	}
	var seen []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name != x.Name || e.InvolvedObject.Kind != "PfsTransfer" {
			continue
		}
		if e.Type == typ && e.Reason == reason && strings.HasPrefix(e.Message, msgPrefix) {
			return nil
		}
		seen = append(seen, e.Type+"/"+e.Reason+": "+e.Message)
	}
	return fmt.Errorf("no %s event %s %q among %q", typ, reason, msgPrefix, seen)
}

func failedMessage(x *pfsv1alpha1.PfsTransfer) string {
	return findCondition(x, pfsv1alpha1.ConditionFailed)
}

func findCondition(x *pfsv1alpha1.PfsTransfer, typ string) string {
	for _, c := range x.Status.Conditions {
		if c.Type == typ {
			return c.Message
		}
	}
	return ""
}
