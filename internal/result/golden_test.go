// SPDX-License-Identifier: Apache-2.0

package result

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"packetfs.io/operator/internal/result/schema"
)

// The golden test runs the current pfs (PFS_BIN; make test-go builds it)
// for every result the operator reads, over loopback and temporary files,
// without privileges, and checks each result three ways:
//
//   - against the schema: every required member present, none it does not
//     name, every value of its type and in its enum;
//   - against its golden shape (testdata/golden/<case>.shape: the members
//     in the order pfs wrote them, their JSON kinds and enum'd values), so
//     a writer that adds, drops, reorders or retypes a member fails here
//     even where the schema allows it;
//   - through the operator's parser, which must accept it and report what
//     it says.
//
// After a deliberate change of a result, regenerate the shapes with
//
//	PFS_BIN=$PWD/dataplane/build/pfs go test ./internal/result -run TestGolden -update
//
// and review their diff. Not covered here, because they need privileges:
// the afxdp transport (CAP_NET_ADMIN, CAP_BPF, CAP_NET_RAW; its extra
// member "afxdp_mode" is in the schema and the data plane's root tests),
// blobs of 2M and 1G pages (hugetlbfs; only "page" and "huge_bytes"
// differ), and a holder's blob behind `pfs blob serve` (--delta-base-socket,
// --src-blob-socket: the same members as --delta-base and --src files).
var update = flag.Bool("update", false, "rewrite testdata/golden/*.shape from the current pfs")

// schemaFile is the result schema, relative to this package.
const schemaFile = "../../dataplane/include/pfs/result.schema.json"

// goldenCase is one pfs run: the definition its result follows and the
// shape file it must match.
type goldenCase struct {
	name string // testdata/golden/<name>.shape
	def  string // the schema definition
	what string // the golden file's header: what ran
	raw  []byte
	// wantOK is the "ok" (or "complete") the run must report.
	wantOK bool
}

// mayBeAbsent are members pfs writes only on some machines: "cpus" with
// fewer than 64 allowed CPUs, "numa_node" when they share a node, "cpu"
// of a fill where the cgroup CPU counters can be read. The schema checks
// them wherever they appear; the shapes leave them out.
var mayBeAbsent = map[string]bool{"cpus": true, "cpus[]": true, "numa_node": true,
	"cpu": true, "cpu.quota_cores": true, "cpu.usage_seconds": true, "cpu.throttled_seconds": true,
	"cpu.throttled_periods": true, "cpu.periods": true}

// machineKind are members whose kind depends on the machine: O_DIRECT
// works on the temporary directory's file system or it does not.
var machineKind = map[string]string{"source.o_direct_why": "string|null"}

// measured are enum'd members whose value is a measurement: which delta
// stage limited a run, or what bound a fill, depends on its timing.
var measured = map[string]bool{"delta.bound": true, "bound": true}

func TestGolden(t *testing.T) {
	bin := os.Getenv("PFS_BIN")
	if bin == "" {
		t.Skip("PFS_BIN is not set: run through `make test-go`, which builds dataplane/build/pfs")
	}
	s, err := schema.Load(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	g := &golden{t: t, bin: bin, dir: t.TempDir()}
	g.blobs()
	g.transfers()
	g.replication()
	g.pcores()
	for _, c := range g.cases {
		t.Run(c.name, func(t *testing.T) {
			if len(c.raw) > MaxMessageBytes {
				t.Errorf("result is %d bytes, over the %d of a termination message", len(c.raw), MaxMessageBytes)
			}
			for _, err := range s.Validate(c.def, c.raw) {
				t.Errorf("schema %s: %v", c.def, err)
			}
			checkShape(t, s, c)
			checkParse(t, c)
			checkEdges(t, c)
			if t.Failed() {
				t.Logf("the result:\n%s", c.raw)
			}
		})
	}
}

func checkShape(t *testing.T, s *schema.Schema, c goldenCase) {
	t.Helper()
	lines, err := s.Shape(c.def, c.raw)
	if err != nil {
		t.Fatal(err)
	}
	got := "# " + c.def + ": " + c.what + "\n"
	for _, l := range lines {
		path, kind, _ := strings.Cut(l, " ")
		if mayBeAbsent[path] {
			continue
		}
		if k, ok := machineKind[path]; ok {
			l = path + " " + k
		} else if measured[path] {
			l = path + " " + strings.Split(kind, " ")[0]
		}
		got += l + "\n"
	}
	file := filepath.Join("testdata", "golden", c.name+".shape")
	if *update {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(got, "\n")); diff != "" {
		t.Errorf("the result's shape differs from %s (-golden +pfs); if that is meant, run with -update:\n%s", file, diff)
	}
}

// checkParse runs the operator's parser over the result and checks it
// reports what the result says.
func checkParse(t *testing.T, c goldenCase) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(c.raw, &m); err != nil {
		t.Fatal(err)
	}
	num := func(v any) float64 { f, _ := v.(float64); return f }
	sub := func(k string) map[string]any { o, _ := m[k].(map[string]any); return o }
	secs := func(v any) time.Duration { return time.Duration(num(v) * float64(time.Second)) }
	switch c.def {
	case "transfer":
		r, err := ParseTransfer(string(c.raw))
		if err != nil {
			t.Fatalf("ParseTransfer: %v", err)
		}
		if r.OK != c.wantOK || r.Side != m["side"] || r.Mode != m["mode"] || r.Transport != m["transport"] {
			t.Errorf("ParseTransfer: ok %v side %q mode %q transport %q", r.OK, r.Side, r.Mode, r.Transport)
		}
		if r.OK && (!r.Measured || r.Bytes != int64(num(m["bytes"])) || r.Integrity != m["integrity"] ||
			r.ElapsedSeconds != num(m["elapsed_s"]) || r.WireBytes != int64(num(m["wire_bytes"]))) {
			t.Errorf("ParseTransfer: %+v", r)
		}
		if sum, _ := m["checksum"].(string); r.OK && m["mode"] != modeDelta && "0x"+r.Checksum != sum && r.Integrity != "NA" {
			t.Errorf("ParseTransfer: checksum %q, the result says %q", r.Checksum, sum)
		}
		if d := sub("delta"); d != nil && (r.Delta == nil || r.Delta.SHA256 != d["sha256"] || r.Delta.TargetBytes != r.Bytes) {
			t.Errorf("ParseTransfer: delta %+v", r.Delta)
		}
		if !r.OK && r.Error != m["error"] {
			t.Errorf("ParseTransfer: error %q", r.Error)
		}
	case "blobCreate":
		if m["cmd"] == "blob-info" {
			return // the operator does not read blob info
		}
		r, err := ParseBlobCreate(string(c.raw))
		if err != nil {
			t.Fatalf("ParseBlobCreate: %v", err)
		}
		if r.OK != c.wantOK {
			t.Fatalf("ParseBlobCreate: ok %v, error %q", r.OK, r.Error)
		}
		b := sub("blob")
		if r.OK && (r.Size != int64(num(b["size"])) || r.Page != b["page"] || "0x"+r.Fingerprint != b["fingerprint"] ||
			r.Map != secs(b["map_s"]) || r.Prefault != secs(b["prefault_s"]) || r.Fill != secs(b["fill_s"]) ||
			r.FallbackReason != "" || r.NUMANode != nil) {
			t.Errorf("ParseBlobCreate: %+v, the result's blob %v", r, b)
		}
		for k, present := range map[string]bool{"source": r.Source != nil, "fetch": r.Fetch != nil, "manifest": r.Manifest != nil, "repl": r.Repl != nil} {
			if (m[k] != nil) != present {
				t.Errorf("ParseBlobCreate: %q in the result: %v; parsed: %v", k, m[k] != nil, present)
			}
		}
		if r.Manifest != nil && r.Manifest.SHA256 != sub("manifest")["sha256"] {
			t.Errorf("ParseBlobCreate: manifest %+v", r.Manifest)
		}
		if f := sub("fetch"); f != nil && (r.Fetch.Transport != f["transport"] || r.Fetch.Bytes != int64(num(f["bytes"])) ||
			(f["delta"] != nil) != (r.Fetch.Delta != nil) || (f["dgrams"] != nil) != (r.Fetch.Dgrams != nil)) {
			t.Errorf("ParseBlobCreate: fetch %+v", r.Fetch)
		}
		if rp := sub("repl"); rp != nil && (r.Repl.Clients != int64(num(rp["clients"])) || (rp["delta"] != nil) != (r.Repl.Delta != nil)) {
			t.Errorf("ParseBlobCreate: repl %+v", r.Repl)
		}
	case "sourceScan":
		r, err := ParseSourceScan(string(c.raw))
		if err != nil {
			t.Fatalf("ParseSourceScan: %v", err)
		}
		src := sub("source")
		if r.OK != c.wantOK || (!r.OK && r.Error != m["error"]) || (r.OK && (r.Kind != src["kind"] || r.Files != int64(num(src["files"])) ||
			r.Bytes != int64(num(src["bytes"])) || r.Needed != int64(num(src["needed"])) || r.BlobSize != int64(num(src["blob_size"])))) {
			t.Errorf("ParseSourceScan: %+v, the result's source %v", r, src)
		}
	case "pcore":
		r, err := ParsePcore(string(c.raw), m["baseline"] != nil)
		if err != nil {
			t.Fatalf("ParsePcore: %v", err)
		}
		if r.Complete != c.wantOK || r.Bytes != int64(num(m["bytes"])) || r.MBps != num(m["MBps"]) || (m["baseline"] != nil) != (r.Baseline != nil) {
			t.Errorf("ParsePcore: %+v", r)
		}
	default:
		t.Fatalf("no parser for %q", c.def)
	}
}

// edges are results the live binary does not write, made from the ones it
// does by one change each, and the error the parser must give. They stand
// where copies of old output stood: the result they start from is always
// the current pfs's.
var edges = map[string][]struct {
	name, re, repl, wantErr string
	cut                     int // keep only this many bytes
}{
	"blob-create": {{name: "truncated", cut: 150, wantErr: "truncated JSON"}},
	"source-scan": {
		{name: "not a dry run", re: `"dry_run":true`, repl: `"dry_run":false`, wantErr: "not a dry run"},
		{name: "no needed", re: `"needed":\d+,`, repl: ``, wantErr: "source.needed"},
		{name: "zero needed", re: `"needed":\d+`, repl: `"needed":0`, wantErr: "not a size"},
		{name: "truncated", cut: 60, wantErr: "truncated JSON"},
	},
}

// checkEdges runs the parser over the case's edges.
func checkEdges(t *testing.T, c goldenCase) {
	for _, e := range edges[c.name] {
		msg := string(c.raw)
		if e.cut > 0 {
			msg = msg[:e.cut]
		} else {
			re := regexp.MustCompile(e.re)
			if !re.MatchString(msg) {
				t.Errorf("edge %q: the result has no %s", e.name, e.re)
				continue
			}
			msg = re.ReplaceAllString(msg, e.repl)
		}
		var err error
		switch c.def {
		case "blobCreate":
			_, err = ParseBlobCreate(msg)
		case "sourceScan":
			_, err = ParseSourceScan(msg)
		}
		if err == nil || !strings.Contains(err.Error(), e.wantErr) {
			t.Errorf("edge %q: %v, want an error containing %q\n%s", e.name, err, e.wantErr, msg)
		}
	}
}
