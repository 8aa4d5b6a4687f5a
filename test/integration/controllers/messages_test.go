// SPDX-License-Identifier: Apache-2.0

package controllers

import "fmt"

// Termination messages in the shape the pfs CLI writes them (recorded from
// `pfs blob create`, `pfs send`, `pfs recv` and `pfs pcore run`, with the
// numbers made parameters).

// blobCreateResult is a holder's result: a 64 MiB blob on 2M pages.
func blobCreateResult(fingerprint string) string {
	return fmt.Sprintf(`{"ok":true,"cmd":"blob-create","crc32c_impl":"sse4.2-3way","blob":{"size":67108864,`+
		`"page":"2M","huge_bytes":67108864,"fingerprint":%q,"path":"/dev/hugepages-blob/b","fallback_reason":null,`+
		`"map_s":0.0001,"prefault_s":0.0064,"fill_s":0.0205},"fingerprint_s":0.0030,"error":null}`, fingerprint)
}

// transferResult is one side's result: bytes moved in elapsed seconds with
// the given CPU time and checksums.
func transferResult(side string, bytes int64, elapsed, user, sys float64, crc, peerCRC, integrity string) string {
	cmd := "send"
	if side == "receiver" {
		cmd = "recv"
	}
	ok := integrity == "OK"
	exit := 0
	errField := "null"
	if !ok {
		exit, errField = 3, `"integrity MISMATCH"`
	}
	return fmt.Sprintf(`{"ok":%t,"cmd":%q,"label":"Native PFS Offset-only Mode - TCP","purpose":"Transfer","side":%q,`+
		`"transport":"tcp","mode":"offset","peer":"10.0.0.2:5000","size_mb":%.3f,"bytes":%d,"elapsed_s":%.6f,`+
		`"effective_mb_s":1.0,"user_s":%.3f,"sys_s":%.3f,"cpu_s":%.3f,"mb_per_cpu_s":1.0,"integrity":%q,"pthreads":1,`+
		`"crc32c":%q,"peer_crc32c":%q,"crc32c_impl":"sse4.2-3way","descs":60,"grams":2,"wire_bytes":%d,`+
		`"decode_errors":0,"peer_fingerprint":"0x3489d5a4287083f7","notes":"x","exit_code":%d,"error":%s}`,
		ok, cmd, side, float64(bytes)/1e6, bytes, elapsed, user, sys, user+sys, integrity, crc, peerCRC, bytes/100, exit, errField)
}

func pcoreResult(bytes int64, seconds, mbps, baselineMBps float64, value string) string {
	return fmt.Sprintf(`{"label":"pCPU Offset-mode","op":"crc32c","imm":0,"pcores":2,"cpus":[2,3],"isa":"avx2",`+
		`"crc32c_impl":"sse4.2-3way","page":"2M","page_fallback":null,"numa":"node 0","range_off":0,"range_len":%d,`+
		`"desc_len":65536,"dpf":64,"align":64,"ring_slots":128,"passes":1,"rounds":1,"warmup_s":0.010,"complete":true,`+
		`"stopped_by":null,"bytes":%d,"seconds":%.6f,"MBps":%.1f,"MB_per_cpu_s":1.0,"passes_done":1,"frames":16,`+
		`"per_core_MBps":[1.0,1.0],"per_core_cpu_s":[0.1,0.1],"ring_stalls":{"producer_full":0,"consumer_empty":[0,0],`+
		`"consumer_wait_s":[0.0,0.0]},"result":{"kind":"CRC32C of the range, per pass","value":%q,"passes_agree":true},`+
		`"baseline":{"label":"plain threads, static partition","MBps":%.1f,"MB_per_cpu_s":1.0,"seconds":0.1,"bytes":%d,`+
		`"result":%q,"result_match":true,"complete":true},"CPUpwn":%.3f}`,
		bytes, bytes, seconds, mbps, value, baselineMBps, bytes, value, mbps/baselineMBps)
}
