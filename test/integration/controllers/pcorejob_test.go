// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
)

// A pcore job runs one Guaranteed pod with a CPU per pcore on a node holding
// the blob; its result (MB/s, baseline, CPUpwn, value) lands in status.
func TestPcoreJobResult(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	readyBlob(t, ctx, ns, "data", "node-b")
	j := &pfsv1alpha1.PcoreJob{
		ObjectMeta: metav1.ObjectMeta{Name: "crc", Namespace: ns},
		Spec: pfsv1alpha1.PcoreJobSpec{BlobRef: pfsv1alpha1.BlobReference{Name: "data"},
			Op: pfsv1alpha1.OpCRC32C, Pcores: 2},
	}
	if err := env.Client.Create(ctx, j); err != nil {
		t.Fatal(err)
	}
	pod := waitPod(t, ctx, ns, podspec.PcorePodName(j.Name))
	assertControlledBy(t, pod.OwnerReferences, "PcoreJob", j.Name)
	res := pod.Spec.Containers[0].Resources
	if cpu := res.Limits.Cpu(); cpu.Cmp(resource.MustParse("2")) != 0 || !res.Requests.Cpu().Equal(*cpu) {
		t.Errorf("cpu requests %s limits %s, want 2 and 2", res.Requests.Cpu(), cpu)
	}
	if args := strings.Join(pod.Spec.Containers[0].Args, " "); !strings.Contains(args, "pcore run --op crc32c --pcores 2") || !strings.Contains(args, "--baseline") {
		t.Errorf("args %q", args)
	}
	bind(t, ctx, pod, "node-b")
	setStatus(t, ctx, ns, pod.Name, running(false, "10.0.0.10"))
	eventually(t, "Running", func() error {
		if err := get(ctx, ns, j.Name, j); err != nil {
			return err
		}
		if j.Status.Phase != pfsv1alpha1.PhaseRunning {
			return fmt.Errorf("phase %q", j.Status.Phase)
		}
		return nil
	})
	setStatus(t, ctx, ns, pod.Name, exited(0, pcoreResult(67108864, 0.010, 6710.9, 3355.4, "0x1234abcd")))
	eventually(t, "Succeeded", func() error {
		if err := get(ctx, ns, j.Name, j); err != nil {
			return err
		}
		return conditionIs(j.Status.Conditions, pfsv1alpha1.ConditionSucceeded, metav1.ConditionTrue, pfsv1alpha1.ReasonCompleted)
	})
	st := j.Status
	for _, c := range []struct{ name, got, want string }{
		{"phase", string(st.Phase), "Succeeded"},
		{"throughputMBps", st.ThroughputMBps, "6710.9"},
		{"baselineMBps", st.BaselineMBps, "3355.4"},
		{"cpupwn", st.CPUpwn, "2.00"},
		{"result", st.Result, "0x1234abcd"},
		{"baselineResult", st.BaselineResult, "0x1234abcd"},
		{"elapsedSeconds", st.ElapsedSeconds, "0.010"},
		{"placement.node", st.Placement.Node, "node-b"},
		{"placement.cpus", st.Placement.CPUs, "2-3"},
		{"label", st.Label, "pCPU Offset-mode"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
}
