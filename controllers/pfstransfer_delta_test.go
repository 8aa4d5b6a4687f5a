// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/result"
)

// deltaSide is a delta-mode result of one side moving 1,000,000 source
// bytes in 137,000 wire bytes; the sender reports the encoding (bound by the
// wire), the receiver its stages (it waited for the sender).
func deltaSide(role string, fullCopy bool, sha, verdict string) string {
	stages, extra := `"index_s":0.25,"encode_s":0.5`, `,"bound":"wire","threads":2,"regions":{"same":{"n":9,"bytes":800000},"xor":{"n":1,"bytes":100000,"wire":37000},"zstd":{"n":1,"bytes":100000,"wire":100000}}`
	if role == "receiver" {
		stages, extra = `"apply_s":0.125,"verify_s":0.0625`, `,"bound":"sender"`
	}
	errField := "null"
	if verdict != "OK" {
		errField = `"sha256 MISMATCH"`
	}
	return fmt.Sprintf(`{"ok":%t,"side":%q,"label":"PFS-Delta-TCP","mode":"delta","integrity":%q,"integrity_alg":"sha256","bytes":1000000,"wire_bytes":137000,`+
		`"elapsed_s":0.5,"user_s":0.25,"sys_s":0.125,"error":%s,"delta":{"base_bytes":900000,"target_bytes":1000000,"wire_bytes":137000,`+
		`"ratio":7.3,"full_copy":%t,"sha256":%q,"stages":{%s}%s}}`, verdict == "OK", role, verdict, errField, fullCopy, sha, stages, extra)
}

func TestMergeDeltaTransfer(t *testing.T) {
	x := &pfsv1alpha1.PfsTransfer{Spec: pfsv1alpha1.PfsTransferSpec{Mode: pfsv1alpha1.ModeDelta, Integrity: pfsv1alpha1.IntegrityCRC32C}}
	sum := strings.Repeat("ab", 32)
	s, err := result.ParseTransfer(deltaSide("sender", false, sum, "OK"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := result.ParseTransfer(deltaSide("receiver", false, sum, "OK"))
	if err != nil {
		t.Fatal(err)
	}
	var st pfsv1alpha1.PfsTransferStatus
	if err := mergeTransfer(x, s, r, &st); err != nil {
		t.Fatal(err)
	}
	if st.Grams != nil {
		t.Errorf("grams %+v: Delta moves no grams", st.Grams)
	}
	wantIn := &pfsv1alpha1.IntegrityStatus{Algorithm: "SHA256", Result: "OK", SenderChecksum: sum, ReceiverChecksum: sum}
	if diff := cmp.Diff(wantIn, st.Integrity); diff != "" {
		t.Errorf("integrity (-want +got):\n%s", diff)
	}
	if st.EffectiveBytes != 1000000 || st.WireBytes != 137000 || st.Delta.Ratio != "7.30" || st.Delta.Encoding != "Delta" {
		t.Errorf("bytes %d wire %d delta %+v", st.EffectiveBytes, st.WireBytes, st.Delta)
	}
	// Either side saying full_copy makes it one; the planned reason is kept.
	r.Delta.FullCopy = true
	st.Delta = &pfsv1alpha1.DeltaStatus{Encoding: "FullCopy", Message: "base old not Ready on node n9: sent as a full compressed copy"}
	if err := mergeTransfer(x, s, r, &st); err != nil || st.Delta.Encoding != "FullCopy" || !strings.HasPrefix(st.Delta.Message, "base old") {
		t.Errorf("full copy: err %v delta %+v", err, st.Delta)
	}
	// Without a planned reason it still says what happened.
	st.Delta = nil
	if err := mergeTransfer(x, s, r, &st); err != nil || st.Delta.Message != "the receiver held no base: sent as a full compressed copy" {
		t.Errorf("full copy, nothing planned: err %v delta %+v", err, st.Delta)
	}
	// Nothing on the wire: no ratio rather than a division by zero.
	r.Delta.WireBytes, s.Delta.WireBytes = 0, 0
	if err := mergeTransfer(x, s, r, &st); err != nil || st.Delta.Ratio != "" {
		t.Errorf("no wire bytes: err %v ratio %q", err, st.Delta.Ratio)
	}
}

func TestTransferBlobNames(t *testing.T) {
	x := &pfsv1alpha1.PfsTransfer{Spec: pfsv1alpha1.PfsTransferSpec{Mode: pfsv1alpha1.ModeDelta,
		BlobRef: &pfsv1alpha1.BlobReference{Name: "old"}, Delta: &pfsv1alpha1.DeltaSpec{SourceRef: pfsv1alpha1.BlobReference{Name: "new"}}}}
	if diff := cmp.Diff([]string{"old", "new"}, transferBlobNames(x)); diff != "" {
		t.Errorf("Delta (-want +got):\n%s", diff)
	}
	if got := transferBlobNames(&pfsv1alpha1.PfsTransfer{}); len(got) != 0 {
		t.Errorf("a Payload transfer without a blob uses %v", got)
	}
}
