// SPDX-License-Identifier: Apache-2.0

package result

import (
	"strings"
	"testing"
	"time"
)

// deltaSend has the shape of a `pfs send --mode delta` result as the CLI
// contract of issue 15 describes it (the data plane's delta mode lands
// separately; replace with a real result once it does).
var deltaSend = `{"ok":true,"cmd":"send","label":"PFS-Delta-TCP","side":"sender","transport":"tcp","mode":"delta",` +
	`"verdict":"OK","bytes":1073741824,"wire_bytes":146880000,"elapsed_s":1.5,"user_s":2.25,"sys_s":0.125,"error":null,` +
	`"delta":{"base_bytes":1073741824,"target_bytes":1073741824,"wire_bytes":146880000,"ratio":7.31,"full_copy":false,"sha256":"` + sha + `",` +
	`"regions":{"same":{"n":900,"bytes":900000000},"moved":{"n":10,"bytes":10000000},"xor":{"n":50,"bytes":100000000,"wire":20000000},` +
	`"zstd":{"n":30,"bytes":60000000,"wire":120000000},"raw":{"n":2,"bytes":3741824}},` +
	`"stages":{"index_s":0.25,"encode_s":1.25,"apply_s":0,"verify_s":0},"bound":"encode","threads":4}}`

func TestParseDeltaTransfer(t *testing.T) {
	sender := &Transfer{OK: true, Measured: true, Side: "sender", Transport: "tcp", Label: "PFS-Delta-TCP", Mode: "delta",
		Bytes: 1073741824, WireBytes: 146880000, ElapsedSeconds: 1.5, UserSeconds: 2.25, SysSeconds: 0.125,
		Integrity: "OK", Checksum: sha,
		Delta: &Delta{BaseBytes: 1073741824, TargetBytes: 1073741824, WireBytes: 146880000, SHA256: sha,
			Same: &DeltaRegion{Count: 900, Bytes: 900000000}, Moved: &DeltaRegion{Count: 10, Bytes: 10000000},
			XOR: &DeltaRegion{Count: 50, Bytes: 100000000, WireBytes: 20000000}, Zstd: &DeltaRegion{Count: 30, Bytes: 60000000, WireBytes: 120000000},
			Raw: &DeltaRegion{Count: 2, Bytes: 3741824}, Index: 250 * time.Millisecond, Encode: 1250 * time.Millisecond,
			Bound: "encode", Threads: 4}}
	runParseCases(t, ParseTransfer, map[string]parseCase[Transfer]{
		"sender": {msg: deltaSend, want: sender},
		"receiver of a full copy, verdict without ok, stages of its own": {
			msg: `{"side":"receiver","mode":"delta","verdict":"OK","bytes":4096,"wire_bytes":100,"elapsed_s":0.5,"user_s":0.1,"sys_s":0,` +
				`"delta":{"base_bytes":0,"target_bytes":4096,"wire_bytes":100,"full_copy":true,"sha256":"` + sha + `",` +
				`"stages":{"apply_s":0.0125,"verify_s":0.002},"bound":"wire"}}`,
			want: &Transfer{OK: true, Measured: true, Side: "receiver", Mode: "delta", Bytes: 4096, WireBytes: 100, ElapsedSeconds: 0.5,
				UserSeconds: 0.1, Integrity: "OK", Checksum: sha,
				Delta: &Delta{TargetBytes: 4096, WireBytes: 100, FullCopy: true, SHA256: sha,
					Apply: 12500 * time.Microsecond, Verify: 2 * time.Millisecond, Bound: "wire"}}},
		"a mismatch is measured and not ok": {
			msg: strings.NewReplacer(`"verdict":"OK"`, `"verdict":"MISMATCH"`, `"ok":true`, `"ok":false`,
				`"error":null`, `"error":"integrity MISMATCH"`).Replace(deltaSend),
			want: func() *Transfer {
				w := *sender
				w.OK, w.Integrity, w.Error = false, "MISMATCH", "integrity MISMATCH"
				return &w
			}()},
		"refused: a failure report": {msg: `{"mode":"delta","verdict":"REFUSED","error":"recv: base fingerprint differs from the sender's"}`,
			want: &Transfer{Mode: "delta", Error: "recv: base fingerprint differs from the sender's"}},
		"delta member missing": {msg: strings.Split(deltaSend, `,"delta":`)[0] + "}", wantErr: "lacks required field(s): delta"},
		"delta fields missing": {msg: strings.Split(deltaSend, `,"delta":`)[0] + `,"delta":{"wire_bytes":1}}`,
			wantErr: "delta.base_bytes, delta.target_bytes, delta.full_copy, delta.sha256"},
		"short sha256":    {msg: strings.Replace(deltaSend, sha, "abcd", 1), wantErr: "not 64 hex digits"},
		"target differs":  {msg: strings.Replace(deltaSend, `"target_bytes":1073741824`, `"target_bytes":1`, 1), wantErr: "delta.target_bytes 1 differs from bytes 1073741824"},
		"unknown bound":   {msg: strings.Replace(deltaSend, `"bound":"encode"`, `"bound":"disk"`, 1), wantErr: "not encode, wire, apply or verify"},
		"negative region": {msg: strings.Replace(deltaSend, `"n":900`, `"n":-1`, 1), wantErr: `"delta.regions.same.n": -1 is negative`},
		"negative stage":  {msg: strings.Replace(deltaSend, `"index_s":0.25`, `"index_s":-1`, 1), wantErr: `"delta.stages.index_s"`},
	})
}
