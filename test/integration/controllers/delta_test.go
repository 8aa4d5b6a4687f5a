// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
)

// deltaResult is one side's result of `pfs send/recv --mode delta` in the
// shape pfs prints it (internal/result's tests parse real ones): 64 MiB of
// source rebuilt from 8 MiB on the wire, bound by the sender's encoder.
func deltaResult(side string, fullCopy bool, sha string) string {
	cmd, stages, extra := "send", `"index_s":0.010,"encode_s":0.040`,
		`,"bound":"encode","threads":1,"regions":{"same":{"n":60,"bytes":58720256},"zstd":{"n":4,"bytes":8388608,"wire":8388608}}`
	if side == "receiver" {
		cmd, stages, extra = "recv", `"apply_s":0.020,"verify_s":0.015`, `,"bound":"sender"`
	}
	return fmt.Sprintf(`{"ok":true,"cmd":%q,"label":"PFS-Delta-TCP","side":%q,"transport":"tcp","mode":"delta","integrity":"OK",`+
		`"bytes":67108864,"wire_bytes":8388608,"elapsed_s":0.064,"user_s":0.030,"sys_s":0.010,"error":null,`+
		`"delta":{"base_bytes":67108864,"target_bytes":67108864,"wire_bytes":8388608,"ratio":8.0,"full_copy":%t,"sha256":%q,`+
		`"stages":{%s}%s}}`, cmd, side, fullCopy, sha, stages, extra)
}

func deltaXfer(ns, name string) *pfsv1alpha1.PfsTransfer {
	return &pfsv1alpha1.PfsTransfer{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: pfsv1alpha1.PfsTransferSpec{Mode: pfsv1alpha1.ModeDelta, Gram: gram(),
			BlobRef: &pfsv1alpha1.BlobReference{Name: "old"},
			Delta:   &pfsv1alpha1.DeltaSpec{SourceRef: pfsv1alpha1.BlobReference{Name: "new"}}},
	}
}

// affinityNodes lists the nodes a pod's required node affinity allows.
func affinityNodes(p *corev1.Pod) string {
	var nodes []string
	if a := p.Spec.Affinity; a != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			nodes = append(nodes, term.MatchFields[0].Values...)
		}
	}
	return strings.Join(nodes, ",")
}

func volumeNames(p *corev1.Pod) string {
	names := make([]string, 0, len(p.Spec.Volumes))
	for _, v := range p.Spec.Volumes {
		names = append(names, v.Name)
	}
	return strings.Join(names, ",")
}

// runDelta plays both pods to the end with the given results and waits for
// the transfer to succeed; the receiver is bound to recvNode unless pinned.
func runDelta(t *testing.T, ctx context.Context, x *pfsv1alpha1.PfsTransfer, recv *corev1.Pod, recvNode string, fullCopy bool) *corev1.Pod {
	t.Helper()
	ns, sha := x.Namespace, strings.Repeat("c0", 32)
	if recv.Spec.NodeName == "" {
		bind(t, ctx, recv, recvNode)
	}
	setStatus(t, ctx, ns, recv.Name, running(true, "10.0.0.5"))
	send := waitPod(t, ctx, ns, sendName(x.Name))
	bind(t, ctx, send, "node-b")
	setStatus(t, ctx, ns, recv.Name, exited(0, deltaResult("receiver", fullCopy, sha)))
	setStatus(t, ctx, ns, send.Name, exited(0, deltaResult("sender", fullCopy, sha)))
	waitTransfer(t, ctx, x, "Succeeded", phaseIs(pfsv1alpha1.PhaseSucceeded))
	return send
}

// A Delta transfer whose receiver holds the base: the receiver maps it on a
// node where it is Ready, the sender maps base and source where both are,
// requests cover the rebuilt source, and status reports the delta.
func TestDeltaTransferWithBase(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	readyBlob(t, ctx, ns, "old", "node-a", "node-b")
	readyBlob(t, ctx, ns, "new", "node-b")
	x := deltaXfer(ns, "delta")
	createTransfer(t, ctx, x)

	recv := waitPod(t, ctx, ns, recvName(x.Name, 0))
	args := strings.Join(recv.Spec.Containers[0].Args, " ")
	for _, want := range []string{"--mode delta", "--blob-socket /run/packetfs/" + ns + "/old.sock", "--max-size 67108864", "--delta-threads 1"} {
		if !strings.Contains(args, want) {
			t.Errorf("receiver args %q lack %q", args, want)
		}
	}
	if strings.Contains(args, "--no-base") || affinityNodes(recv) != "node-a,node-b" {
		t.Errorf("receiver args %q, affinity %q: want the base, where it is Ready", args, affinityNodes(recv))
	}
	if mem := recv.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory]; mem.Cmp(resource.MustParse("336Mi")) != 0 {
		t.Errorf("receiver memory request %s, want 336Mi (256Mi + the 64Mi source + 16Mi for its one applier)", mem.String())
	}
	waitTransfer(t, ctx, x, "status.delta planned", func(x *pfsv1alpha1.PfsTransfer) error {
		if x.Status.Delta == nil || x.Status.Delta.Encoding != pfsv1alpha1.DeltaEncodingDelta {
			return fmt.Errorf("status.delta %+v", x.Status.Delta)
		}
		return nil
	})

	send := runDelta(t, ctx, x, recv, "node-a", false)
	sargs := strings.Join(send.Spec.Containers[0].Args, " ")
	for _, want := range []string{"--connect 10.0.0.5:5000", "--mode delta", "--blob-socket /run/packetfs/" + ns + "/old.sock",
		"--src-blob-socket /run/packetfs/" + ns + "/new.sock --src-blob-token-file /etc/packetfs/source-token/token", "--zstd-level 3"} {
		if !strings.Contains(sargs, want) {
			t.Errorf("sender args %q lack %q", sargs, want)
		}
	}
	if affinityNodes(send) != "node-b" || volumeNames(send) != "run,blob-sockets,blob-token,source-token,transfer-token" {
		t.Errorf("sender affinity %q volumes %q: want node-b and both tokens", affinityNodes(send), volumeNames(send))
	}
	if mem := send.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory]; mem.Cmp(resource.MustParse("384Mi")) != 0 {
		t.Errorf("sender memory request %s, want 384Mi (256Mi + the 64Mi source + 64Mi for the encoder)", mem.String())
	}

	st := x.Status
	ds := st.Delta
	checks := []struct{ name, got, want string }{
		{"label", st.Label, "PFS-Delta-TCP"},
		{"effectiveBytes", fmt.Sprint(st.EffectiveBytes), "67108864"},
		{"integrity", fmt.Sprintf("%s %s", st.Integrity.Algorithm, st.Integrity.Result), "SHA256 OK"},
		{"delta.encoding", string(ds.Encoding), "Delta"},
		{"delta.wireBytes", fmt.Sprint(ds.WireBytes), "8388608"},
		{"delta.ratio", ds.Ratio, "8.00"},
		{"delta.bound", string(ds.Bound), "Encode"},
		{"delta.stages", fmt.Sprintf("%+v", *ds.Stages), "{IndexSeconds:0.010 EncodeSeconds:0.040 ApplySeconds:0.020 VerifySeconds:0.015}"},
		{"delta.regions.same", fmt.Sprintf("%+v", *ds.Regions.Same), "{Count:60 Bytes:58720256 WireBytes:0}"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	out, _, err := env.Kubectl(ctx, "get", "pfstransfers", "-n", ns, "-o", "wide")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"RATIO", "Delta", "PFS-Delta-TCP", "8.00"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get pfstransfers -o wide does not show %q:\n%s", want, out)
		}
	}
}

// A receiver pinned to a node where the base is not Ready runs without it
// (--no-base); status and the Succeeded message say it went as a full copy
// and why.
func TestDeltaTransferFullCopy(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	readyBlob(t, ctx, ns, "old", "node-b")
	readyBlob(t, ctx, ns, "new", "node-b")
	x := deltaXfer(ns, "full")
	x.Spec.Receiver.NodeName = "node-c"
	createTransfer(t, ctx, x)

	recv := waitPod(t, ctx, ns, recvName(x.Name, 0))
	args := strings.Join(recv.Spec.Containers[0].Args, " ")
	if !strings.Contains(args, "--no-base") || strings.Contains(args, "--blob-socket") {
		t.Errorf("receiver args %q: want --no-base and no blob socket", args)
	}
	if recv.Spec.Affinity != nil || recv.Spec.NodeName != "node-c" || volumeNames(recv) != "run,transfer-token" {
		t.Errorf("receiver affinity %v node %q volumes %q: want only node-c, no blob", recv.Spec.Affinity, recv.Spec.NodeName, volumeNames(recv))
	}
	const why = "base old not Ready on node node-c: sent as a full compressed copy"
	waitTransfer(t, ctx, x, "status.delta says full copy", func(x *pfsv1alpha1.PfsTransfer) error {
		if d := x.Status.Delta; d == nil || d.Encoding != pfsv1alpha1.DeltaEncodingFullCopy || d.Message != why {
			return fmt.Errorf("status.delta %+v", x.Status.Delta)
		}
		return nil
	})
	eventually(t, "the receiver's Event says why", func() error {
		return hasEvent(ctx, x, corev1.EventTypeNormal, pfsv1alpha1.ReasonPodsPending, "Created receiver pod "+recv.Name+" (attempt 1); "+why)
	})

	runDelta(t, ctx, x, recv, "node-c", true)
	if d := x.Status.Delta; d.Encoding != pfsv1alpha1.DeltaEncodingFullCopy || d.Message != why {
		t.Errorf("status.delta after the run: %+v", d)
	}
	if msg := findCondition(x, pfsv1alpha1.ConditionSucceeded); !strings.Contains(msg, why+"; 8388608 bytes on the wire, ratio 8.00") {
		t.Errorf("Succeeded message %q should say the full copy and why", msg)
	}
}

// A transfer waits for its source to be Ready beside the base, and a change
// of the source blob (not only of the base) wakes it.
func TestDeltaTransferWaitsForSource(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	readyBlob(t, ctx, ns, "old", "node-a")
	src := &pfsv1alpha1.PfsBlob{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: ns},
		Spec: pfsv1alpha1.PfsBlobSpec{Size: resource.MustParse("64Mi")}}
	if err := env.Client.Create(ctx, src); err != nil {
		t.Fatal(err)
	}
	ds := rollOut(t, ctx, src, 1)
	x := deltaXfer(ns, "early")
	createTransfer(t, ctx, x)
	waitTransfer(t, ctx, x, "Pending with BlobNotReady", func(x *pfsv1alpha1.PfsTransfer) error {
		if err := conditionIs(x.Status.Conditions, pfsv1alpha1.ConditionPlaced, metav1.ConditionFalse, pfsv1alpha1.ReasonBlobNotReady); err != nil {
			return err
		}
		if msg := findCondition(x, pfsv1alpha1.ConditionPlaced); !strings.Contains(msg, "no node holds Ready copies of both PfsBlob old") {
			return fmt.Errorf("Placed message %q", msg)
		}
		return nil
	})
	if err := absent(ctx, ns, recvName(x.Name, 0)); err != nil {
		t.Fatal(err)
	}
	holderPod(t, ctx, ds, "node-a", blobCreateResult("0x00c0ffee00c0ffee"), true)
	recv := waitPod(t, ctx, ns, recvName(x.Name, 0))
	if got := recv.Labels[podspec.LabelComponent]; got != podspec.ComponentReceiver {
		t.Errorf("receiver component label %q", got)
	}
}
