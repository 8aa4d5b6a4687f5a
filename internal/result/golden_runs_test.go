// SPDX-License-Identifier: Apache-2.0

package result

// The pfs runs of TestGolden (golden_test.go): each as the operator's pods
// run it, over loopback and files in a temporary directory.

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

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
// info, an origin holding its files (--layout files), the scan pod's dry
// run and the failures of both.
func (g *golden) blobs() {
	g.write("src/a.bin", 300000, 1)
	g.write("src/sub/b.bin", 5000, 2)
	blob := []string{"--size", "4M", "--page", "4k"}
	g.add("blob-create", "blobCreate", "pfs blob create --name b --dir DIR --size 4M --page 4k --fill seed --seed 7 --replace", true,
		g.pfs(0, append([]string{"blob", "create", "--name", "b", "--dir", g.dir, "--fill", "seed", "--seed", "7", "--replace"}, blob...)...))
	g.add("blob-info", "blobCreate", "pfs blob info --name b --dir DIR", true,
		g.pfs(0, "blob", "info", "--name", "b", "--dir", g.dir))
	g.add("blob-create-files", "blobCreate", "pfs blob create --name f --dir DIR --layout files --source DIR", true,
		g.pfs(0, "blob", "create", "--name", "f", "--dir", g.dir, "--layout", "files", "--source", "src", "--page", "4k"))
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
