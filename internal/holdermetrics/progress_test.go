// SPDX-License-Identifier: Apache-2.0

package holdermetrics

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The page of a real holder: pfs blob create loading a real tree with
// --metrics-listen, read by Reader while it lingers after the fill.
func TestReadRealHolder(t *testing.T) {
	bin := os.Getenv("PFS_BIN")
	if bin == "" {
		t.Skip("PFS_BIN is not set: run through `make test-go`, which builds dataplane/build/pfs")
	}
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte(strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	name := fmt.Sprintf("pfs-hm-%d", os.Getpid())
	cmd := exec.Command(bin, "blob", "create", "--name", name, "--source", "/usr/include/linux",
		"--replicate-listen", "127.0.0.1:0", "--token-file", tok, "--replicate-linger", "3",
		"--metrics-listen", fmt.Sprintf("127.0.0.1:%d", port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = os.Remove("/dev/shm/" + name)
		_ = os.Remove("/dev/shm/" + name + ".chunks") // the chunk list pfs keeps beside it
	})
	r := NewReader()
	target := []Target{{Pod: "origin", Host: "127.0.0.1", Port: int32(port)}}
	var got Progress
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if p, ok := r.Read(context.Background(), target)["origin"]; ok && p.Phase == "ready" {
			got = p
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got.Phase != "ready" || got.Size <= 0 || got.Filled != got.Size || got.Seconds <= 0 {
		t.Fatalf("progress %+v, want ready with every byte held", got)
	}
	// A target that does not answer is left out, not an error.
	none := r.Read(context.Background(), []Target{{Pod: "gone", Host: "127.0.0.1", Port: int32(freePort(t))}})
	if len(none) != 0 {
		t.Errorf("a closed port gave %v", none)
	}
}

func TestParseRefusesPagesWithoutProgress(t *testing.T) {
	for name, page := range map[string]string{
		"no filled bytes": "# TYPE packetfs_blob_size_bytes gauge\npacketfs_blob_size_bytes 10\n",
		"not the format":  "<html>hello</html>\n",
	} {
		if _, err := Parse(strings.NewReader(page)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	p, err := Parse(strings.NewReader("packetfs_blob_size_bytes 100\npacketfs_blob_filled_bytes 40\n" +
		"packetfs_blob_fill_seconds 2\npacketfs_blob_phase{phase=\"filling\"} 1\npacketfs_blob_phase{phase=\"ready\"} 0\n"))
	if err != nil || p != (Progress{Size: 100, Filled: 40, Seconds: 2, Phase: "filling"}) {
		t.Errorf("Parse = %+v, %v", p, err)
	}
	p, err = Parse(strings.NewReader("# TYPE packetfs_transfer_planned_bytes gauge\npacketfs_transfer_planned_bytes 1000\n" +
		"# TYPE packetfs_transfer_effective_bytes_total counter\npacketfs_transfer_effective_bytes_total 250\n"))
	if err != nil || p != (Progress{Size: 1000, Filled: 250}) {
		t.Errorf("a receiver's page: Parse = %+v, %v", p, err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}
