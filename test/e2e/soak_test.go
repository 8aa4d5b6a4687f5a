//go:build e2e

// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// leakGauge is what a soak must give back: the operator's file descriptors,
// memory and goroutines, the XDP programs loaded on the host (the nodes
// share its kernel), the host's free hugepages and the CSI volumes mounted
// on the nodes.
type leakGauge struct {
	FDs, RSSMiB, Goroutines float64
	XDPPrograms, CSIMounts  int
	HugePagesFree           int
}

func (g leakGauge) String() string {
	return fmt.Sprintf("operator fds %.0f, RSS %.1f MiB, goroutines %.0f; XDP programs %d; free hugepages %d; CSI mounts %d",
		g.FDs, g.RSSMiB, g.Goroutines, g.XDPPrograms, g.HugePagesFree, g.CSIMounts)
}

func measureLeaks(t *testing.T) leakGauge {
	t.Helper()
	m := scrapeOperator(t)
	g := leakGauge{FDs: m["process_open_fds"], RSSMiB: m["process_resident_memory_bytes"] / (1 << 20), Goroutines: m["go_goroutines"]}
	out, err := run("bpftool", "-j", "prog", "show")
	if err != nil {
		t.Fatalf("bpftool prog show: %v", err)
	}
	var progs []struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal([]byte(out), &progs); err != nil {
		t.Fatalf("bpftool's JSON: %v", err)
	}
	for _, p := range progs {
		if p.Type == "xdp" {
			g.XDPPrograms++
		}
	}
	meminfo, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(meminfo), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "HugePages_Free:" {
			g.HugePagesFree, _ = strconv.Atoi(f[1])
		}
	}
	for _, node := range env.nodes {
		out, err := run("podman", "exec", node, "grep", "-c", "kubernetes.io~csi", "/proc/1/mountinfo")
		if n, convErr := strconv.Atoi(strings.TrimSpace(out)); convErr == nil {
			g.CSIMounts += n
		} else if err != nil && strings.TrimSpace(out) != "0" {
			t.Fatalf("mounts of %s: %v %q", node, err, out)
		}
	}
	return g
}

// testSoak repeats transfers for E2E_SOAK (a Go duration, default 2m):
// TCP Payload over the pod network, AF_XDP Offset over the data link, and a
// consumer pod mapping the blob through the CSI volume, each created,
// waited for and deleted. After it, nothing may have grown: operator fds,
// goroutines and memory (within GC noise), XDP programs, hugepages and CSI
// mounts back where they were.
func testSoak(ctx context.Context, t *testing.T) {
	d := 2 * time.Minute
	if v := os.Getenv("E2E_SOAK"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("E2E_SOAK=%q: %v", v, err)
		}
	}
	if transports := imageTransports(ctx, t); !transports["afxdp"] {
		t.Fatalf("pfs in %s has no afxdp transport (it has: %s): the soak runs AF_XDP transfers", env.dataplaneImage, keys(transports))
	}
	before := measureLeaks(t)
	t.Logf("before: %s", before)
	start, rounds := time.Now(), 0
	for time.Since(start) < d {
		rounds++
		x := transferSpec(fmt.Sprintf("soak-xdp-%03d", rounds), pfsv1alpha1.TransportAFXDP, pfsv1alpha1.ModeOffset, true)
		x.Spec.Passes = ptr.To(int32(2))
		xs := []*pfsv1alpha1.PfsTransfer{smallTransfer(fmt.Sprintf("soak-tcp-%03d", rounds), "64Mi"), x}
		for _, x := range xs {
			runTransfer(ctx, t, x)
			if err := env.c.Delete(ctx, x); err != nil {
				t.Fatal(err)
			}
		}
		readTensorFree(ctx, t, fmt.Sprintf("soak-reader-%03d", rounds))
	}
	// Pods go with their transfers: wait until none is left, then let the
	// kubelet unmount and the runtime release what they held.
	err := poll(ctx, 3*time.Minute, func() (bool, error) {
		out, err := kubectl("-n", testNS, "get", "pods", "-o", "name")
		return err == nil && !strings.Contains(out, "soak-"), nil
	})
	if err != nil {
		t.Fatalf("soak pods left: %v", err)
	}
	time.Sleep(20 * time.Second)
	after := measureLeaks(t)
	t.Logf("after %d rounds in %s: %s", rounds, time.Since(start).Round(time.Second), after)
	// What a leak of one object per round breaks. Measured over 6 rounds
	// (2 min): fds equal, goroutines +0..1, RSS -2..0 MiB. A watch or HTTP
	// connection re-opened meanwhile may hold 2 fds and 4 goroutines; RSS
	// may grow by what the Go runtime keeps after a GC: a fixed 6 MiB, so a
	// longer soak (make soak) catches a smaller leak per round.
	if after.FDs > before.FDs+2 {
		t.Errorf("operator file descriptors %.0f -> %.0f after %d rounds", before.FDs, after.FDs, rounds)
	}
	if after.Goroutines > before.Goroutines+4 {
		t.Errorf("operator goroutines %.0f -> %.0f after %d rounds", before.Goroutines, after.Goroutines, rounds)
	}
	if after.RSSMiB > before.RSSMiB+6 {
		t.Errorf("operator RSS %.1f -> %.1f MiB after %d rounds, more than 6 MiB", before.RSSMiB, after.RSSMiB, rounds)
	}
	if after.XDPPrograms > before.XDPPrograms {
		t.Errorf("XDP programs %d -> %d: an AF_XDP endpoint left its program loaded", before.XDPPrograms, after.XDPPrograms)
	}
	if after.HugePagesFree < before.HugePagesFree {
		t.Errorf("free hugepages %d -> %d", before.HugePagesFree, after.HugePagesFree)
	}
	if after.CSIMounts > before.CSIMounts {
		t.Errorf("CSI mounts %d -> %d: a volume was not unpublished", before.CSIMounts, after.CSIMounts)
	}
}

// readTensorFree runs a consumer pod of the e2e blob in testNS that maps it
// through the CSI volume, waits for it and deletes it.
func readTensorFree(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	if out, err := kubectlIn(consumerManifest(testNS, name, blobName), "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var phase string
	err := poll(ctx, 2*time.Minute, func() (bool, error) {
		phase, _ = kubectl("-n", testNS, "get", "pod", name, "-o", "jsonpath={.status.phase}")
		return phase == "Succeeded" || phase == "Failed", nil
	})
	if err != nil || phase != "Succeeded" {
		logs, _ := kubectl("-n", testNS, "logs", name)
		t.Fatalf("consumer %s: phase %q (%v)\n%s", name, phase, err, logs)
	}
	if out, err := kubectl("-n", testNS, "delete", "pod", name, "--wait=true"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}
