// SPDX-License-Identifier: Apache-2.0

package result

import (
	"strings"
	"testing"
	"time"
)

var sha = strings.Repeat("5a", 32)

// The data-plane contract of a blob with a source (issue 14): an origin adds
// "source" and "manifest", a relay "fetch" and "manifest", both may add "repl".
// Written by hand for what a loopback run of pfs does not show: a fetch
// that resumed on its second upstream, a source on tmpfs (no O_DIRECT), two
// clients served. The results of the current pfs are TestGolden's.
const (
	originOK = `{"ok":true,"cmd":"blob-create","blob":{"size":314572800,"page":"2M","fingerprint":"0x0123456789abcdef","fallback_reason":null,"map_s":0.001,"prefault_s":0.05,"fill_s":0},` +
		`"source":{"kind":"file","path":"models/x.safetensors","root":"/source","files":1,"bytes":314000000,"sha256":"` + "SHA" + `","crc32c":"0x1234abcd","read_seconds":0.5,"read_mbps":628.0,"o_direct":false,"o_direct_why":"tmpfs","seconds":0.75,"t0_unix":1767225600.25,"t1_unix":1767225601.0},` +
		`"manifest":{"kind":"file","files":1,"bytes":314000000,"sha256":"` + "SHA" + `","offset":314000000,"length":200},` +
		`"repl":{"listen":"0.0.0.0:7470","clients":2,"bytes_served":628000000,"refused":0},"error":null}`
	relayOK = `{"ok":true,"cmd":"blob-create","blob":{"size":314572800,"page":"2M","fingerprint":"0x0123456789abcdef"},` +
		`"fetch":{"from":"10.0.0.1:7470","bytes":314572800,"seconds":0.9,"mbps":349.5,"attempts":2,"resumed_at":[1048576],"t0_unix":1767225600.5,"t1_unix":1767225601.4,"verified":true,"verify_seconds":0.2},` +
		`"manifest":{"kind":"file","files":1,"bytes":314000000,"sha256":"` + "SHA" + `","offset":314000000,"length":200}}`
)

func withSHA(s string) string { return strings.ReplaceAll(s, "SHA", sha) }

func TestParseBlobCreateFanout(t *testing.T) {
	manifest := &Manifest{Kind: "file", Files: 1, Bytes: 314000000, SHA256: sha, Offset: 314000000, Length: 200}
	runParseCases(t, ParseBlobCreate, map[string]parseCase[BlobCreate]{
		"origin": {msg: withSHA(originOK), want: &BlobCreate{OK: true, Size: 314572800, Page: "2M", Fingerprint: "0123456789abcdef",
			Map: time.Millisecond, Prefault: 50 * time.Millisecond,
			Source: &Source{Kind: "file", Path: "models/x.safetensors", Files: 1, Bytes: 314000000, SHA256: sha,
				Read: 500 * time.Millisecond, Load: 750 * time.Millisecond, ODirectWhy: "tmpfs",
				T0: time.Unix(1767225600, 250000000).UTC(), T1: time.Unix(1767225601, 0).UTC()},
			Manifest: manifest,
			Repl:     &Repl{Listen: "0.0.0.0:7470", Clients: 2, BytesServed: 628000000}}},
		"relay": {msg: withSHA(relayOK), want: &BlobCreate{OK: true, Size: 314572800, Page: "2M", Fingerprint: "0123456789abcdef",
			Fetch: &Fetch{From: "10.0.0.1:7470", Bytes: 314572800, Elapsed: 900 * time.Millisecond, Attempts: 2, ResumedAt: []int64{1048576},
				Verified: true, VerifiedBy: VerifiedByFiles, Verify: 200 * time.Millisecond, Transport: FetchTCP,
				T0: time.Unix(1767225600, 500000000).UTC(), T1: time.Unix(1767225601, 400000000).UTC()},
			Manifest: manifest}},
		"files-layout relay: the node's page is the files' page": {msg: withSHA(strings.Replace(relayOK, `"fetch":`,
			`"files":{"count":1,"nonempty":1,"bytes":314003456,"page":"THP","huge_files":1,"huge_bytes":312475648,"measured":"smaps"},"fetch":`, 1)),
			want: &BlobCreate{OK: true, Size: 314572800, Page: "THP", Fingerprint: "0123456789abcdef",
				Fetch: &Fetch{From: "10.0.0.1:7470", Bytes: 314572800, Elapsed: 900 * time.Millisecond, Attempts: 2, ResumedAt: []int64{1048576},
					Verified: true, VerifiedBy: VerifiedByFiles, Verify: 200 * time.Millisecond, Transport: FetchTCP,
					T0: time.Unix(1767225600, 500000000).UTC(), T1: time.Unix(1767225601, 400000000).UTC()},
				Manifest: manifest}},
		"what bound the fill": {msg: withSHA(strings.Replace(relayOK, `}}`,
			`},"cpu":{"quota_cores":0.05,"throttled_seconds":3.1,"throttled_periods":40,"periods":41},"bound":"cpu-quota","bound_why":"throttled 3.10 s during the fill's 4.02 s by a CPU limit of 0.05 cores"}`, 1)),
			want: &BlobCreate{OK: true, Size: 314572800, Page: "2M", Fingerprint: "0123456789abcdef",
				Fetch: &Fetch{From: "10.0.0.1:7470", Bytes: 314572800, Elapsed: 900 * time.Millisecond, Attempts: 2, ResumedAt: []int64{1048576},
					Verified: true, VerifiedBy: VerifiedByFiles, Verify: 200 * time.Millisecond, Transport: FetchTCP,
					T0: time.Unix(1767225600, 500000000).UTC(), T1: time.Unix(1767225601, 400000000).UTC()},
				Manifest: manifest, Bound: "cpu-quota", BoundWhy: "throttled 3.10 s during the fill's 4.02 s by a CPU limit of 0.05 cores"}},
		"a relay verified by chunk digests": {msg: withSHA(strings.Replace(strings.Replace(relayOK, `"verified":true,`, `"verified":true,"verified_by":"chunks",`, 1), `}}`,
			`},"chunks":{"algo":"blake3","impl":"avx512","size":4194304,"count":75,"root":"`+sha+`","list":"received","threads":2,"hashed":75,"verified":75,"failed":1,"rounds":1,"first_failed":3,"refetched_bytes":301989888,"hash_busy_s":0.07,"wait_s":0.001,"kept":true}}`, 1)),
			want: &BlobCreate{OK: true, Size: 314572800, Page: "2M", Fingerprint: "0123456789abcdef",
				Fetch: &Fetch{From: "10.0.0.1:7470", Bytes: 314572800, Elapsed: 900 * time.Millisecond, Attempts: 2, ResumedAt: []int64{1048576},
					Verified: true, VerifiedBy: VerifiedByChunks, Verify: 200 * time.Millisecond, Transport: FetchTCP,
					T0: time.Unix(1767225600, 500000000).UTC(), T1: time.Unix(1767225601, 400000000).UTC()},
				Manifest: manifest,
				Chunks:   &Chunks{Count: 75, Root: sha, List: ChunksReceived, Verified: 75, Failed: 1, Rounds: 1, RefetchedBytes: 301989888}}},
		"verified_by not a known word": {msg: withSHA(strings.Replace(relayOK, `"verified":true,`, `"verified":true,"verified_by":"magic",`, 1)),
			wantErr: `"fetch.verified_by": "magic" is not chunks or files`},
		"a received chunk list without its root": {msg: withSHA(strings.Replace(relayOK, `}}`, `},"chunks":{"count":75,"list":"received"}}`, 1)),
			wantErr: "chunks.root"},
		"a chunk list from nowhere": {msg: withSHA(strings.Replace(relayOK, `}}`, `},"chunks":{"count":75,"list":"forged","root":"`+sha+`"}}`, 1)),
			wantErr: `"chunks.list": "forged"`},
		"bound not a known word": {msg: withSHA(strings.Replace(relayOK, `}}`, `},"bound":"disk"}`, 1)),
			wantErr: `"bound": "disk" is not source, upstream, verification or cpu-quota`},
		"files page out of range": {msg: withSHA(strings.Replace(relayOK, `"fetch":`, `"files":{"page":"2M"},"fetch":`, 1)),
			wantErr: "files.page"},
		"relay failure": {msg: `{"ok":false,"cmd":"blob-create","error":"fetch from 10.0.0.1:7470: connection refused"}`,
			want: &BlobCreate{Error: "fetch from 10.0.0.1:7470: connection refused"}},
		"origin without manifest": {msg: withSHA(strings.Replace(originOK, `"manifest":`, `"manifest_x":`, 1)),
			wantErr: "lacks required field(s): manifest"},
		"source without sha256": {msg: strings.Replace(withSHA(originOK), `"sha256":"`+sha+`","crc32c"`, `"crc32c"`, 1),
			wantErr: "source.sha256"},
		"short sha256":      {msg: strings.ReplaceAll(originOK, "SHA", "abcd"), wantErr: "not 64 hex digits"},
		"upper-case sha256": {msg: strings.ReplaceAll(originOK, "SHA", strings.Repeat("AB", 32)), wantErr: "not lower-case hex"},
		"fetch without verified": {msg: withSHA(strings.Replace(relayOK, `"verified":true,`, ``, 1)),
			wantErr: "fetch.verified"},
		"negative fetch bytes": {msg: withSHA(strings.Replace(relayOK, `"bytes":314572800,"seconds"`, `"bytes":-1,"seconds"`, 1)),
			wantErr: "negative"},
		"bad t0": {msg: withSHA(strings.Replace(originOK, `"t0_unix":1767225600.25`, `"t0_unix":-3`, 1)),
			wantErr: "not a Unix time"},
		"both source and fetch": {msg: withSHA(strings.Replace(originOK, `"repl":`, `"fetch":{"from":"a:1","bytes":1,"seconds":1,"verified":true},"repl":`, 1)),
			wantErr: "both \"source\" and \"fetch\""},
	})
}

// The scan's result as the current pfs writes it, and the edges made from
// it (not a dry run, no or zero needed, truncated), are TestGolden's.
func TestParseSourceScan(t *testing.T) {
	runParseCases(t, ParseSourceScan, map[string]parseCase[SourceScan]{
		"refused": {msg: `{"ok":false,"cmd":"blob-create","error":"symlink 'a' -> '/etc/passwd' points outside the source root /source"}`,
			want: &SourceScan{Error: "symlink 'a' -> '/etc/passwd' points outside the source root /source"}},
		"no error text": {msg: `{"ok":false}`, wantErr: "without an error message"},
	})
}
