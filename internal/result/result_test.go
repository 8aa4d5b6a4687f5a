// SPDX-License-Identifier: Apache-2.0

package result

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// recvOK is a real `pfs recv` result (dp-core, payload mode over loopback)
// of an older pfs, from before --integrity: it writes only "crc32c" and
// "peer_crc32c", no "checksum". The current pfs always writes "checksum"
// (TestGolden runs it), so this copy is what keeps the parser reading the
// results of a data plane older than the operator.
const recvOK = `{"ok":true,"cmd":"recv","label":"PFS-With-Payload-TCP","purpose":"Transfer","side":"receiver","transport":"tcp","mode":"payload","peer":"127.0.0.1:55206","size_mb":8.389,"bytes":8388608,"elapsed_s":0.007721,"effective_mb_s":1086.4,"user_s":0.000,"sys_s":0.002,"cpu_s":0.002,"mb_per_cpu_s":3739.9,"integrity":"OK","pthreads":1,"crc32c":"0x287083f7","peer_crc32c":"0x287083f7","crc32c_impl":"sse4.2-3way","descs":60,"grams":2,"wire_bytes":8389568,"decode_errors":0,"peer_fingerprint":"0x3489d5a4287083f7","notes":"receiver","exit_code":0,"error":null}`

// parseCase is a termination message and what a parser makes of it: want,
// or an error containing wantErr.
type parseCase[T any] struct {
	msg     string
	want    *T
	wantErr string
}

// runParseCases runs parse over each case.
func runParseCases[T any](t *testing.T, parse func(string) (*T, error), tests map[string]parseCase[T]) {
	t.Helper()
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parse(tc.msg)
			checkErr(t, err, tc.wantErr)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseTransfer(t *testing.T) {
	runParseCases(t, ParseTransfer, map[string]parseCase[Transfer]{
		"real receiver result": {msg: recvOK, want: &Transfer{OK: true, Measured: true, Side: "receiver", Transport: "tcp",
			Label: "PFS-With-Payload-TCP", Bytes: 8388608, WireBytes: 8389568, ElapsedSeconds: 0.007721, SysSeconds: 0.002,
			Integrity: "OK", Checksum: "287083f7", PeerChecksum: "287083f7", Grams: 2, Mode: "payload"}},
		"unknown fields are ignored, generic checksum preferred": {
			msg: `{"ok":true,"bytes":10,"wire_bytes":20,"elapsed_s":1,"user_s":0.5,"sys_s":0.25,"integrity":"ok","checksum":"0xab","crc32c":"0xcd","future":{"x":[1,2]},"afxdp_mode":"copy","numa_node":1,"cpus":[3,4]}`,
			want: &Transfer{OK: true, Measured: true, Bytes: 10, WireBytes: 20, ElapsedSeconds: 1, UserSeconds: 0.5, SysSeconds: 0.25,
				Integrity: "OK", Checksum: "ab", AFXDPMode: "copy", NUMANode: ptr32(1), CPUs: []int{3, 4}}},
		"integrity NA needs no checksum": {msg: `{"ok":true,"bytes":0,"wire_bytes":0,"elapsed_s":0,"user_s":0,"sys_s":0,"integrity":"NA"}`,
			want: &Transfer{OK: true, Measured: true, Integrity: "NA"}},
		"failure with only an error": {msg: `{"ok":false,"cmd":"recv","error":"recv: no sender within 60 s"}`,
			want: &Transfer{Error: "recv: no sender within 60 s"}},
		"failure without error": {msg: `{"ok":false}`, wantErr: "without an error message"},
		"missing ok":            {msg: `{"bytes":1}`, wantErr: "lacks required field(s): ok"},
		"missing numbers":       {msg: `{"ok":true,"bytes":1}`, wantErr: "lacks required field(s): wire_bytes, elapsed_s, user_s, sys_s, integrity"},
		"missing checksum":      {msg: `{"ok":true,"bytes":1,"wire_bytes":1,"elapsed_s":1,"user_s":0,"sys_s":0,"integrity":"OK"}`, wantErr: "checksum (or crc32c)"},
		"wrong type":            {msg: `{"ok":true,"bytes":"many"}`, wantErr: `field "bytes" has the wrong type`},
		"negative counter":      {msg: `{"ok":true,"bytes":-1,"wire_bytes":1,"elapsed_s":1,"user_s":0,"sys_s":0,"integrity":"NA"}`, wantErr: "negative"},
		"bytes in no time":      {msg: `{"ok":true,"bytes":5,"wire_bytes":1,"elapsed_s":0,"user_s":0,"sys_s":0,"integrity":"NA"}`, wantErr: "elapsed_s=0"},
		"bad verdict":           {msg: `{"ok":true,"bytes":0,"wire_bytes":0,"elapsed_s":0,"user_s":0,"sys_s":0,"integrity":"MAYBE"}`, wantErr: "not OK, MISMATCH or NA"},
		"upper-case hex":        {msg: `{"ok":true,"bytes":0,"wire_bytes":0,"elapsed_s":0,"user_s":0,"sys_s":0,"integrity":"OK","crc32c":"0xABCD"}`, wantErr: "not lower-case hex"},
		"truncated":             {msg: recvOK[:200], wantErr: "truncated JSON (200 bytes"},
		"garbage":               {msg: "Segmentation fault", wantErr: "not valid JSON"},
		"empty":                 {msg: "  \n", wantErr: "empty"},
		"two objects":           {msg: `{"ok":false,"error":"a"} {"ok":true}`, wantErr: "data after the JSON object"},
		"not an object":         {msg: `[1,2]`, wantErr: "wrong type"},
	})
}

// The result of `pfs blob create` as the current pfs writes it, read into
// BlobCreate, and cut short, is TestGolden's ("blob-create").
func TestParseBlobCreate(t *testing.T) {
	runParseCases(t, ParseBlobCreate, map[string]parseCase[BlobCreate]{
		"fallback and numa": {msg: `{"ok":true,"blob":{"size":1,"page":"THP","fingerprint":"0x0123456789abcdef","fallback_reason":"hugetlb 2M: no free pages","numa_node":0}}`,
			want: &BlobCreate{OK: true, Size: 1, Page: "THP", Fingerprint: "0123456789abcdef", FallbackReason: "hugetlb 2M: no free pages", NUMANode: ptr32(0)}},
		"failure":           {msg: `{"ok":false,"cmd":"blob-create","error":"blob create failed: Cannot allocate memory"}`, want: &BlobCreate{Error: "blob create failed: Cannot allocate memory"}},
		"no blob object":    {msg: `{"ok":true}`, wantErr: "lacks required field(s): blob"},
		"missing fields":    {msg: `{"ok":true,"blob":{"size":1}}`, wantErr: "blob.page, blob.fingerprint"},
		"short fingerprint": {msg: `{"ok":true,"blob":{"size":1,"page":"2M","fingerprint":"0x1234"}}`, wantErr: "not 16 hex digits"},
		"unknown page":      {msg: `{"ok":true,"blob":{"size":1,"page":"64K","fingerprint":"0x0123456789abcdef"}}`, wantErr: "not 4K, THP, 2M or 1G"},
		"zero size":         {msg: `{"ok":true,"blob":{"size":0,"page":"2M","fingerprint":"0x0123456789abcdef"}}`, wantErr: "not a size"},
		"negative timing":   {msg: `{"ok":true,"blob":{"size":1,"page":"2M","fingerprint":"0x0123456789abcdef","fill_s":-1}}`, wantErr: "not a number of seconds"},
	})
}

// pcoreOK has the shape of a `pfs pcore run --baseline` result of the pcore
// branch, an older pfs (no "crc32c_impl", "per_core_cpu_s", "ring_stalls");
// the current one's are TestGolden's.
const pcoreOK = `{"label":"pCPU Offset-mode","op":"fnv","imm":255,"pcores":2,"cpus":[0,1],"isa":"avx2","page":"2M","page_fallback":null,"numa":"node 0","range_off":0,"range_len":1048576,"desc_len":65536,"dpf":64,"align":64,"ring_slots":128,"passes":1,"rounds":1,"warmup_s":0.001,"complete":true,"stopped_by":null,"bytes":1048576,"seconds":0.001000,"MBps":1048.6,"MB_per_cpu_s":500.0,"passes_done":1,"frames":1,"per_core_MBps":[524.3,524.3],"result":{"kind":"FNV","value":"0x00000000deadbeef","passes_agree":true},"baseline":{"label":"plain threads","MBps":524.3,"MB_per_cpu_s":1.0,"seconds":0.002,"bytes":1048576,"result":"0x00000000deadbeef","result_match":true,"complete":true},"CPUpwn":2.000}`

func TestParsePcore(t *testing.T) {
	tests := map[string]struct {
		msg          string
		wantBaseline bool
		want         *Pcore
		wantErr      string
	}{
		"with baseline": {msg: pcoreOK, wantBaseline: true, want: &Pcore{Complete: true, Bytes: 1048576, Seconds: 0.001, MBps: 1048.6,
			Value: "0x00000000deadbeef", Baseline: &PcoreBaseline{MBps: 524.3, Value: "0x00000000deadbeef", ResultMatch: true},
			CPUpwn: 2, CPUs: []int{0, 1}}},
		"count as a number": {msg: `{"complete":true,"bytes":8,"seconds":1,"MBps":0.1,"result":{"value":42},"range_crc32c_after":"0x0000abcd"}`,
			want: &Pcore{Complete: true, Bytes: 8, Seconds: 1, MBps: 0.1, Value: "42", RangeCRC32CAfter: "0x0000abcd"}},
		"baseline wanted but absent": {msg: `{"complete":true,"bytes":8,"seconds":1,"MBps":0.1,"result":{"value":1}}`, wantBaseline: true,
			wantErr: "lacks required field(s): baseline, CPUpwn"},
		"null value":       {msg: `{"complete":true,"bytes":8,"seconds":1,"MBps":0.1,"result":{"value":null}}`, wantErr: "is null"},
		"negative value":   {msg: `{"complete":true,"bytes":8,"seconds":1,"MBps":0.1,"result":{"value":-3}}`, wantErr: "neither a hex string nor a whole number"},
		"missing required": {msg: `{"bytes":8}`, wantErr: "complete, seconds, MBps, result.value"},
		"truncated":        {msg: pcoreOK[:300], wantErr: "truncated JSON"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParsePcore(tc.msg, tc.wantBaseline)
			checkErr(t, err, tc.wantErr)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParsePcore (-want +got):\n%s", diff)
			}
		})
	}
}

func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != "" && err == nil:
		t.Fatalf("no error, want one containing %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Fatalf("error %q does not contain %q", err, want)
	}
}

func ptr32(v int32) *int32 { return &v }
