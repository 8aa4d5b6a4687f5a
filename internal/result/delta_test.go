// SPDX-License-Identifier: Apache-2.0

package result

import (
	"strings"
	"testing"
	"time"
)

// deltaSend and deltaRecvFull are real results (pfs send/recv --mode delta
// over loopback with --base/--src files: 4 MiB of random bytes, 18 bytes
// changed and 64 KiB of zeros appended; the second receiver ran with
// --no-base) of an older pfs, from before "zstd_ref" regions: they keep the
// parser reading a data plane older than the operator (ZstdRef nil), and
// are the base of the edge cases. The current pfs's delta results are
// TestGolden's.
const deltaSend = `{"ok":true,"cmd":"send","label":"PFS-Delta-TCP","purpose":"Transfer","side":"sender","transport":"tcp","mode":"delta","peer":"127.0.0.1:5917","size_mb":4.260,"bytes":4259840,"elapsed_s":0.010813,"effective_mb_s":393.9,"user_s":0.007,"sys_s":0.000,"cpu_s":0.007,"mb_per_cpu_s":588.4,"integrity":"OK","pthreads":1,"integrity_alg":"sha256","descs":4,"grams":2,"wire_bytes":379,"decode_errors":0,"cpus":[0,1],"numa_node":0,"delta":{"base_bytes":4194304,"target_bytes":4259840,"wire_bytes":379,"ratio":11239.683,"full_copy":false,"sha256":"40893be6aa35229f499b75f00839e0e3662ce738e2d395e502ee05646e703561","regions":{"same":{"n":2,"bytes":4194286},"moved":{"n":0,"bytes":0},"xor":{"n":0,"bytes":0,"wire":0},"zstd":{"n":1,"bytes":65536,"wire":24},"raw":{"n":1,"bytes":18}},"stages":{"index_s":0.004741,"encode_s":0.001724,"send_s":0.000057,"wait_s":0.000000,"apply_s":0.000000,"verify_s":0.000000},"bound":"encode","threads":1},"peer_fingerprint":"0xaccec82eb9b64521","notes":"sender; 127.0.0.1:5917; blob=none; 1024 desc/gram; len 64..262144 align 64; pattern=seq; integrity=crc32c; crc32c=vpclmulqdq-fold","exit_code":0,"error":null}`

const deltaRecvFull = `{"ok":true,"cmd":"recv","label":"PFS-Delta-TCP","purpose":"Transfer","side":"receiver","transport":"tcp","mode":"delta","peer":"127.0.0.1:50978","size_mb":4.260,"bytes":4259840,"elapsed_s":0.055914,"effective_mb_s":76.2,"user_s":0.012,"sys_s":0.000,"cpu_s":0.012,"mb_per_cpu_s":342.4,"integrity":"OK","pthreads":1,"integrity_alg":"sha256","descs":8,"grams":2,"wire_bytes":4194681,"decode_errors":0,"cpus":[0,1],"numa_node":0,"delta":{"base_bytes":0,"target_bytes":4259840,"wire_bytes":4194681,"ratio":1.016,"full_copy":true,"sha256":"40893be6aa35229f499b75f00839e0e3662ce738e2d395e502ee05646e703561","regions":{"same":{"n":0,"bytes":0},"moved":{"n":0,"bytes":0},"xor":{"n":0,"bytes":0,"wire":0},"zstd":{"n":1,"bytes":65536,"wire":24},"raw":{"n":7,"bytes":4194304}},"stages":{"index_s":0.000000,"encode_s":0.000000,"send_s":0.000000,"wait_s":0.043308,"apply_s":0.003106,"verify_s":0.009428},"bound":"sender","threads":1},"peer_fingerprint":"0xaccec82eb9b64521","notes":"receiver; 127.0.0.1:50978; blob=none; 1024 desc/gram; len 64..262144 align 64; pattern=seq; integrity=crc32c; crc32c=vpclmulqdq-fold","exit_code":0,"error":null}`

func TestParseDeltaTransfer(t *testing.T) {
	const sum = "40893be6aa35229f499b75f00839e0e3662ce738e2d395e502ee05646e703561"
	secs := func(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }
	sender := &Transfer{OK: true, Measured: true, Side: "sender", Transport: "tcp", Label: "PFS-Delta-TCP", Mode: "delta",
		Bytes: 4259840, WireBytes: 379, ElapsedSeconds: 0.010813, UserSeconds: 0.007, Integrity: "OK", Checksum: sum,
		Grams: 2, NUMANode: ptr32(0), CPUs: []int{0, 1},
		Delta: &Delta{BaseBytes: 4194304, TargetBytes: 4259840, WireBytes: 379, SHA256: sum,
			Same: &DeltaRegion{Count: 2, Bytes: 4194286}, Moved: &DeltaRegion{}, XOR: &DeltaRegion{},
			Zstd: &DeltaRegion{Count: 1, Bytes: 65536, WireBytes: 24}, Raw: &DeltaRegion{Count: 1, Bytes: 18},
			Index: secs(0.004741), Encode: secs(0.001724), Bound: "encode", Threads: 1}}
	mismatch := *sender
	mismatch.OK, mismatch.Integrity, mismatch.Error = false, "MISMATCH", "integrity MISMATCH"
	runParseCases(t, ParseTransfer, map[string]parseCase[Transfer]{
		"real sender": {msg: deltaSend, want: sender},
		"real receiver of a full copy: no base, it waited for the sender": {msg: deltaRecvFull,
			want: &Transfer{OK: true, Measured: true, Side: "receiver", Transport: "tcp", Label: "PFS-Delta-TCP", Mode: "delta",
				Bytes: 4259840, WireBytes: 4194681, ElapsedSeconds: 0.055914, UserSeconds: 0.012, Integrity: "OK", Checksum: sum,
				Grams: 2, NUMANode: ptr32(0), CPUs: []int{0, 1},
				Delta: &Delta{TargetBytes: 4259840, WireBytes: 4194681, FullCopy: true, SHA256: sum,
					Same: &DeltaRegion{}, Moved: &DeltaRegion{}, XOR: &DeltaRegion{},
					Zstd: &DeltaRegion{Count: 1, Bytes: 65536, WireBytes: 24}, Raw: &DeltaRegion{Count: 7, Bytes: 4194304},
					Apply: secs(0.003106), Verify: secs(0.009428), Bound: "sender", Threads: 1}}},
		"the contract's spelling: verdict, no ok": {
			msg:  strings.NewReplacer(`"ok":true,`, ``, `"integrity":"OK"`, `"verdict":"OK"`).Replace(deltaSend),
			want: sender},
		"a mismatch is measured and not ok": {
			msg: strings.NewReplacer(`"integrity":"OK"`, `"integrity":"MISMATCH"`, `"ok":true`, `"ok":false`,
				`"error":null`, `"error":"integrity MISMATCH"`).Replace(deltaSend),
			want: &mismatch},
		"refused: a failure report": {msg: `{"mode":"delta","verdict":"REFUSED","error":"recv: base fingerprint differs from the sender's"}`,
			want: &Transfer{Mode: "delta", Error: "recv: base fingerprint differs from the sender's"}},
		"delta member missing": {msg: strings.Split(deltaSend, `,"delta":`)[0] + "}", wantErr: "lacks required field(s): delta"},
		"delta fields missing": {msg: strings.Split(deltaSend, `,"delta":`)[0] + `,"delta":{"wire_bytes":1}}`,
			wantErr: "delta.base_bytes, delta.target_bytes, delta.full_copy, delta.sha256"},
		"short sha256": {msg: strings.Replace(deltaSend, sum, "abcd", 1), wantErr: "not 64 hex digits"},
		"target differs": {msg: strings.Replace(deltaSend, `"target_bytes":4259840`, `"target_bytes":1`, 1),
			wantErr: "delta.target_bytes 1 differs from bytes 4259840"},
		"unknown bound":   {msg: strings.Replace(deltaSend, `"bound":"encode"`, `"bound":"disk"`, 1), wantErr: "not encode, wire, sender, apply or verify"},
		"negative region": {msg: strings.Replace(deltaSend, `"n":2`, `"n":-1`, 1), wantErr: `"delta.regions.same.n": -1 is negative`},
		"negative stage":  {msg: strings.Replace(deltaSend, `"index_s":0.004741`, `"index_s":-1`, 1), wantErr: `"delta.stages.index_s"`},
	})
}
