// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// pcoreCase is one op of the e2e's PcoreJobs, with the operand it takes.
type pcoreCase struct {
	op  pfsv1alpha1.PcoreOp
	imm *int32
}

// pcoreCases is every op the API accepts. xor and add run on a private
// copy of the blob (they write in place); the others map the node's copy.
var pcoreCases = []pcoreCase{
	{pfsv1alpha1.OpCRC32C, nil},
	{pfsv1alpha1.OpFNV, nil},
	{pfsv1alpha1.OpCountEq, ptr.To(int32(0))},
	{pfsv1alpha1.OpXor, ptr.To(int32(0x5a))},
	{pfsv1alpha1.OpAdd, ptr.To(int32(7))},
}

// testPcoreOps runs every op as a PcoreJob over the e2e blob, one pass on
// one pcore (a node of this cluster has one exclusive CPU: more pcores do
// not fit), with the thread baseline. Its status.result must equal the
// baseline's and what this build's pfs computes here over the same seeded
// bytes: only the real data plane over the node's real copy gives that.
func testPcoreOps(ctx context.Context, t *testing.T) {
	for _, c := range pcoreCases {
		t.Run(string(c.op), func(t *testing.T) {
			j := &pfsv1alpha1.PcoreJob{
				ObjectMeta: metav1.ObjectMeta{Name: "op-" + string(c.op), Namespace: testNS},
				Spec: pfsv1alpha1.PcoreJobSpec{BlobRef: pfsv1alpha1.BlobReference{Name: blobName}, Op: c.op, Imm: c.imm,
					Pcores: 1, Passes: ptr.To(int32(1)), Baseline: pfsv1alpha1.BaselineThreads},
			}
			runPcoreJob(ctx, t, j)
			st := j.Status
			want := localPcoreResult(t, c)
			// The baseline of an in-place op reports the bytes it modified, not
			// a checksum of its copy: baselineResult is left empty for xor and add
			// (pfs checked that both agree, or the job would have failed).
			wantBaseline := want
			if c.op.WritesBlob() {
				wantBaseline = ""
			}
			if st.Result != want || st.BaselineResult != wantBaseline {
				t.Errorf("result %q baseline %q; want %q and %q (pfs pcore run here over seed 42)", st.Result, st.BaselineResult, want, wantBaseline)
			}
			if pwn, err := strconv.ParseFloat(st.CPUpwn, 64); err != nil || pwn <= 0 {
				t.Errorf("cpupwn %q, want a positive ratio", st.CPUpwn)
			}
			row := getRow(t, "pcorejob", j.Name, "-o", "wide")
			if row["PHASE"] != "Succeeded" || row["CPUPWN"] != st.CPUpwn || row["RESULT"] != st.Result {
				t.Errorf("kubectl get pcorejob -o wide: %v; want Succeeded, %s, %s", row, st.CPUpwn, st.Result)
			}
			t.Logf("pcore %s on %s: %s MB/s, baseline %s MB/s, CPUpwn %s, result %s", c.op, st.Placement.Node,
				st.ThroughputMBps, st.BaselineMBps, st.CPUpwn, st.Result)
			if err := env.c.Delete(ctx, j); err != nil {
				t.Error(err)
			}
		})
	}
}

// runPcoreJob creates j and waits until it ends; it must succeed.
func runPcoreJob(ctx context.Context, t *testing.T, j *pfsv1alpha1.PcoreJob) {
	t.Helper()
	if err := env.c.Create(ctx, j); err != nil {
		t.Fatal(err)
	}
	err := poll(ctx, 5*time.Minute, func() (bool, error) {
		if err := env.c.Get(ctx, client.ObjectKeyFromObject(j), j); err != nil {
			return false, err
		}
		return j.Status.Phase == pfsv1alpha1.PhaseSucceeded || j.Status.Phase == pfsv1alpha1.PhaseFailed, nil
	})
	if err != nil || j.Status.Phase != pfsv1alpha1.PhaseSucceeded || j.Status.Placement == nil {
		t.Fatalf("pcore job %s: %v, phase %s: %s\n%s", j.Name, err, j.Status.Phase, conditions(j.Status.Conditions), describe("pcorejob", j.Name))
	}
}

// localPcoreResult runs the same op with this build's pfs over a private
// blob of the e2e blob's size and seed and returns the value the operator
// puts in status.result: the op's value, or for an in-place op the
// range's CRC-32C after it.
func localPcoreResult(t *testing.T, c pcoreCase) string {
	t.Helper()
	pfs, err := filepath.Abs("../../dataplane/build/pfs")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"pcore", "run", "--op", string(c.op), "--passes", "1", "--pcores", "1", "--baseline",
		"--size", strconv.Itoa(blobSize), "--seed", "42", "--fill", "seed", "--page", "4k"}
	if c.imm != nil {
		args = append(args, "--imm", strconv.Itoa(int(*c.imm)))
	}
	out, err := exec.Command(pfs, args...).Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", pfs, args, err, out)
	}
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		After *string `json:"range_crc32c_after"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("pfs pcore run printed %q: %v", out, err)
	}
	if c.op.WritesBlob() {
		if r.After == nil {
			t.Fatalf("pfs pcore run --op %s printed no range_crc32c_after: %s", c.op, out)
		}
		return *r.After
	}
	var v any
	if err := json.Unmarshal(r.Result.Value, &v); err != nil {
		t.Fatalf("result.value %s: %v", r.Result.Value, err)
	}
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatInt(int64(v), 10)
	}
	return fmt.Sprint(v)
}
