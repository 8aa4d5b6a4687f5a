// SPDX-License-Identifier: Apache-2.0

package result

import (
	"strings"
	"testing"
)

// A relay with a base: fetch.delta and repl.delta as pfs wrote them on a
// cluster (blob member trimmed), a 50 MB model against a 40 MB base; the
// base of the edge cases below. TestGolden has the current pfs's.
func TestParseBlobCreateDelta(t *testing.T) {
	const msg = `{"ok":true,"blob":{"size":52428800,"page":"4K","fingerprint":"0x35e0c41dbfa61f70"},` +
		`"manifest":{"kind":"dir","files":1180,"bytes":48747237,"sha256":"ac9a10dd48343ca2707fe789571cf74ab1955d7715e5a3b11048124d62cd787e","offset":51777536,"length":169466},` +
		`"fetch":{"from":"10.44.246.2:7471","bytes":52428800,"seconds":0.64,"attempts":1,"resumed_at":[],"verified":true,"transport":"tcp",` +
		`"delta":{"base":true,"error":null,"base_bytes":41943040,"base_fingerprint":"0e83cf15511808ef","bytes":52428800,"delta_wire_bytes":2879010,` +
		`"whole_bytes":0,"wire_bytes":2879010,"ratio":18.211,"refused":0,"apply_s":0.0403,"regions":{"same":{"n":8,"bytes":33345536}}}},` +
		`"repl":{"listen":"0.0.0.0:7470","clients":1,"bytes_served":2879010,"refused":0,"retransmitted":0,` +
		`"delta":{"base":true,"error":null,"base_bytes":41943040,"clients":1,"refused":0,"bytes":52428800,"wire_bytes":2879010,"index_s":0.01,"encode_s":0.3}}}`
	r, err := ParseBlobCreate(msg)
	if err != nil {
		t.Fatal(err)
	}
	d := r.Fetch.Delta
	if d == nil || !d.Base || d.Bytes != 52428800 || d.WireBytes != 2879010 || d.WholeBytes != 0 || d.Refused != 0 {
		t.Errorf("fetch.delta %+v", d)
	}
	if r.Repl.Delta == nil || !r.Repl.Delta.Base || r.Repl.Delta.Clients != 1 {
		t.Errorf("repl.delta %+v", r.Repl.Delta)
	}
	bad := strings.Replace(msg, `"whole_bytes":0`, `"whole_bytes":-1`, 1)
	if _, err := ParseBlobCreate(bad); err == nil || !strings.Contains(err.Error(), "fetch.delta.whole_bytes") {
		t.Errorf("negative whole_bytes: %v", err)
	}
	noBase := strings.Replace(msg, `"delta":{"base":true,"error":null,"base_bytes":41943040,"base_fingerprint"`, `"delta":{"error":"x","base_fingerprint"`, 1)
	if _, err := ParseBlobCreate(noBase); err == nil || !strings.Contains(err.Error(), "fetch.delta.base") {
		t.Errorf("fetch.delta without base: %v", err)
	}
}
