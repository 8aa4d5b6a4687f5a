// SPDX-License-Identifier: Apache-2.0

package result

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
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
// fewer than 64 allowed CPUs, "numa_node" when they share a node. The
// schema checks them wherever they appear; the shapes leave them out.
var mayBeAbsent = map[string]bool{"cpus": true, "cpus[]": true, "numa_node": true}

// machineKind are members whose kind depends on the machine: O_DIRECT
// works on the temporary directory's file system or it does not.
var machineKind = map[string]string{"source.o_direct_why": "string|null"}

// measured are enum'd members whose value is a measurement: which delta
// stage limited a run depends on its timing.
var measured = map[string]bool{"delta.bound": true}

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

// golden runs pfs and collects the cases.
type golden struct {
	t     *testing.T
	bin   string
	dir   string
	mu    sync.Mutex
	cases []goldenCase
	n     int
}

// path is a file in the test's directory.
func (g *golden) path(name string) string { return filepath.Join(g.dir, name) }

// add records a result under name.
func (g *golden) add(name, def, what string, wantOK bool, raw []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cases = append(g.cases, goldenCase{name: name, def: def, what: what, raw: raw, wantOK: wantOK})
}

// pfs runs pfs with --result-file and returns the result, checking that
// stdout is that one object on one line and the file holds the same.
// wantExit is the exit code the run must end with.
func (g *golden) pfs(wantExit int, args ...string) []byte {
	g.t.Helper()
	g.mu.Lock()
	g.n++
	file := g.path(fmt.Sprintf("result-%d.json", g.n))
	g.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, g.bin, append(args, "--result-file", file)...)
	cmd.Dir = g.dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	exit := cmd.ProcessState.ExitCode()
	if exit != wantExit {
		g.t.Errorf("pfs %s: exit %d (%v), want %d\n%s", strings.Join(args, " "), exit, err, wantExit, stderr.String())
		return nil
	}
	out := stdout.Bytes()
	if bytes.Count(out, []byte("\n")) != 1 || out[len(out)-1] != '\n' {
		g.t.Errorf("pfs %s: stdout is not one line:\n%s", strings.Join(args, " "), out)
	}
	inFile, err := os.ReadFile(file)
	if err != nil {
		g.t.Errorf("pfs %s: --result-file: %v", strings.Join(args, " "), err)
	}
	if !bytes.Equal(bytes.TrimSpace(inFile), bytes.TrimSpace(out)) {
		g.t.Errorf("pfs %s: --result-file differs from stdout:\n%s\n%s", strings.Join(args, " "), inFile, out)
	}
	return bytes.TrimSpace(out)
}

// parallel runs the functions at once and waits for them.
func parallel(fns ...func()) {
	var wg sync.WaitGroup
	for _, fn := range fns {
		wg.Add(1)
		go func() { defer wg.Done(); fn() }()
	}
	wg.Wait()
}

// with is base and more in a new slice: the runs that start at once
// never share an array.
func with(base []string, more ...string) []string {
	return append(append([]string{}, base...), more...)
}

// port returns a free loopback port (tcp or udp) for a pfs to bind.
func (g *golden) port(network string) string {
	g.t.Helper()
	if network == "udp" {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			g.t.Fatal(err)
		}
		defer c.Close()
		return fmt.Sprint(c.LocalAddr().(*net.UDPAddr).Port)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		g.t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
}

// write creates a file of n pseudo-random bytes (seeded: the same every run).
func (g *golden) write(name string, n int, seed byte) {
	g.t.Helper()
	b := make([]byte, n)
	x := uint32(seed) + 1
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
	if err := os.MkdirAll(filepath.Dir(g.path(name)), 0o755); err != nil {
		g.t.Fatal(err)
	}
	if err := os.WriteFile(g.path(name), b, 0o644); err != nil {
		g.t.Fatal(err)
	}
}

// blobs: the holder's init container (a named 4K blob, seed fill), blob
// info, the scan pod's dry run and the failures of both.
func (g *golden) blobs() {
	g.write("src/a.bin", 300000, 1)
	g.write("src/sub/b.bin", 5000, 2)
	blob := []string{"--size", "4M", "--page", "4k"}
	g.add("blob-create", "blobCreate", "pfs blob create --name b --dir DIR --size 4M --page 4k --fill seed --seed 7 --replace", true,
		g.pfs(0, append([]string{"blob", "create", "--name", "b", "--dir", g.dir, "--fill", "seed", "--seed", "7", "--replace"}, blob...)...))
	g.add("blob-info", "blobCreate", "pfs blob info --name b --dir DIR", true,
		g.pfs(0, "blob", "info", "--name", "b", "--dir", g.dir))
	g.add("blob-create-failed", "blobCreate", "pfs blob create --source MISSING (refused)", false,
		g.pfs(1, "blob", "create", "--source", "missing", "--page", "4k"))
	g.add("source-scan", "sourceScan", "pfs blob create --source DIR --dry-run", true,
		g.pfs(0, "blob", "create", "--source", "src", "--page", "4k", "--dry-run"))
	g.add("source-scan-failed", "sourceScan", "pfs blob create --source MISSING --dry-run (refused)", false,
		g.pfs(1, "blob", "create", "--source", "missing", "--page", "4k", "--dry-run"))
}

// transfers: a receiver and a sender over loopback in each mode, as the
// transfer pods run them, and a receiver no sender reached.
func (g *golden) transfers() {
	blob := []string{"--size", "4M", "--page", "4k"}
	g.write("base.bin", 300000, 1)
	g.write("new.bin", 300000, 1)
	f, err := os.OpenFile(g.path("new.bin"), os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		g.t.Fatal(err)
	}
	_, _ = f.WriteAt([]byte("changed"), 1000)
	_, _ = f.Write(make([]byte, 5000))
	_ = f.Close()
	for _, x := range []struct {
		name, what         string
		both, recv, send   []string
		recvBlob, sendBlob bool
	}{
		{name: "payload-tcp", what: "payload over tcp, crc32c, the sender with a blob", both: []string{"--mode", "payload"}, sendBlob: true},
		{name: "offset-tcp", what: "offset over tcp, fnv1a64, both with the blob", both: []string{"--mode", "offset", "--integrity", "fnv1a64"}, recvBlob: true, sendBlob: true},
		{name: "arith-tcp", what: "arith over tcp, --integrity none", both: []string{"--mode", "arith", "--integrity", "none"}, recvBlob: true, sendBlob: true},
		{name: "payload-udp", what: "payload over udp, crc32c", both: []string{"--mode", "payload", "--transport", "udp"}, sendBlob: true},
		{name: "delta-tcp", what: "delta over tcp, both with the base", both: []string{"--mode", "delta", "--base", "base.bin"},
			recv: []string{"--out", "out.bin"}, send: []string{"--src", "new.bin"}},
		{name: "delta-tcp-no-base", what: "delta over tcp, the receiver without a base (--no-base)", both: []string{"--mode", "delta"},
			recv: []string{"--no-base", "--out", "out2.bin"}, send: []string{"--base", "base.bin", "--src", "new.bin"}},
	} {
		addr := "127.0.0.1:" + g.port("tcp")
		ready := g.path(x.name + ".ready")
		recv := append(append([]string{"recv", "--listen", addr, "--ready-file", ready, "--accept-timeout", "30"}, x.both...), x.recv...)
		send := append(append([]string{"send", "--connect", addr}, x.both...), x.send...)
		if x.recvBlob {
			recv = append(recv, blob...)
		}
		if x.sendBlob {
			send = append(send, blob...)
		}
		var r, s []byte
		parallel(func() { r = g.pfs(0, recv...) }, func() {
			g.waitFor(ready)
			s = g.pfs(0, send...)
		})
		g.add(x.name+"-recv", "transfer", "pfs recv: "+x.what, true, r)
		g.add(x.name+"-send", "transfer", "pfs send: "+x.what, true, s)
	}
	g.add("recv-timeout", "transfer", "pfs recv --mode payload --accept-timeout 1: no sender (exit 5)", false,
		g.pfs(5, "recv", "--listen", "127.0.0.1:"+g.port("tcp"), "--mode", "payload", "--accept-timeout", "1"))
}

// waitFor waits for a receiver's ready file.
func (g *golden) waitFor(file string) {
	for i := 0; i < 600; i++ {
		if _, err := os.Stat(file); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	g.t.Errorf("%s did not appear in 30 s", file)
}

// replication: an origin that reads the source and serves it, and relays
// that fetch it over tcp and udp; beside them an origin and a relay with a
// delta base. The relays start with their origin and retry a refused
// connection (every 2 s at the most) until it listens; the origin serves
// until no client was incomplete for 3 s, so a relay whose retry comes
// after the other relay finished still finds it.
func (g *golden) replication() {
	g.write("base-a.bin", 290000, 1) // src/a.bin's first 290000 bytes
	if err := os.WriteFile(g.path("token"), []byte(strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		g.t.Fatal(err)
	}
	holder := []string{"blob", "create", "--page", "4k", "--token-file", "token", "--replace"}
	relay := with(holder, "--size", "1M", "--fetch-timeout", "30s")
	origin := with(holder, "--source", "src", "--replicate-linger", "3s")

	up, data := "127.0.0.1:"+g.port("tcp"), g.port("udp")
	deltaUp, serve := "127.0.0.1:"+g.port("tcp"), "127.0.0.1:"+g.port("tcp")
	parallel(
		func() {
			g.add("origin", "blobCreate", "pfs blob create --source DIR --replicate-listen ADDR (origin)", true,
				g.pfs(0, with(origin, "--name", "origin", "--dir", g.dir, "--replicate-listen", up)...))
		},
		func() {
			g.add("relay-tcp", "blobCreate", "pfs blob create --fetch-from ADDR (relay, tcp)", true,
				g.pfs(0, with(relay, "--name", "relay-tcp", "--dir", g.dir, "--fetch-from", up)...))
		},
		func() {
			g.add("relay-udp", "blobCreate", "pfs blob create --fetch-from ADDR --fetch-transport udp (relay)", true,
				g.pfs(0, with(relay, "--fetch-from", up, "--fetch-transport", "udp", "--fetch-data-port", data)...))
		},
		func() {
			g.add("origin-delta", "blobCreate", "pfs blob create --source DIR --replicate-listen ADDR --delta-base FILE (origin)", true,
				g.pfs(0, with(origin, "--replicate-listen", deltaUp, "--delta-base", "base-a.bin")...))
		},
		func() {
			g.add("relay-delta", "blobCreate", "pfs blob create --fetch-from ADDR --delta-base FILE --replicate-listen ADDR (relay)", true,
				g.pfs(0, with(relay, "--fetch-from", deltaUp, "--delta-base", "base-a.bin",
					"--replicate-listen", serve, "--replicate-linger", "100ms")...))
		})
}

// pcores: pfs pcore run as a PcoreJob runs it: by passes, with the
// baseline over rounds, and for a duration.
func (g *golden) pcores() {
	run := []string{"pcore", "run", "--size", "4M", "--page", "4k", "--pcores", "1"}
	g.add("pcore-fnv", "pcore", "pfs pcore run --op fnv --passes 2", true,
		g.pfs(0, with(run, "--op", "fnv", "--passes", "2")...))
	g.add("pcore-xor-baseline", "pcore", "pfs pcore run --op xor --imm 7 --baseline --rounds 2", true,
		g.pfs(0, with(run, "--op", "xor", "--imm", "7", "--baseline", "--rounds", "2")...))
	g.add("pcore-counteq-duration", "pcore", "pfs pcore run --op counteq --duration 0.2", true,
		g.pfs(0, with(run, "--op", "counteq", "--duration", "0.2")...))
}
