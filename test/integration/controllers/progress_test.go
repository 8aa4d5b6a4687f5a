// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/holdermetrics"
	"packetfs.io/operator/internal/podspec"
)

// fakePages plays the holders' /metrics pages: each registered pod's fill
// advances by a step at every read; reads are counted.
type fakePages struct {
	mu    sync.Mutex
	fills map[string]*holdermetrics.Progress
	reads int
}

func newFakePages() *fakePages { return &fakePages{fills: map[string]*holdermetrics.Progress{}} }

func (f *fakePages) Read(_ context.Context, targets []holdermetrics.Target) map[string]holdermetrics.Progress {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]holdermetrics.Progress{}
	for _, t := range targets {
		p := f.fills[t.Pod]
		if p == nil || t.Port != podspec.DefaultMetricsPort {
			continue
		}
		f.reads++
		p.Filled = min(p.Size, p.Filled+p.Size/64)
		p.Seconds++
		out[t.Pod] = *p
	}
	return out
}

func (f *fakePages) fill(pod string, size int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fills[pod] = &holdermetrics.Progress{Size: size, Phase: "filling"}
}

// A fan-out to 36 nodes whose holders report progress at every read while
// nodes become Ready one every 50 ms: status shows each running node's
// bytes, percent and MB/s and the blob's PROGRESS; the blob's status is
// written at most once per progress interval (1 s here), plus the writes
// that may not wait (the Ready condition changing), and the holders are
// read at most once per interval.
func TestProgressWriteBudget(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	const n = 36
	nodes := make([]string, 0, n)
	for i := range n {
		nodes = append(nodes, fmt.Sprintf("%s-w%02d", ns, i))
	}
	testNodes(t, ctx, ns, "1Gi", nodes...)
	testClaim(t, ctx, ns, "data")
	blob := sourceBlob(ns, "model", pvcSource("data", "models/x.safetensors"))
	if err := env.Client.Create(ctx, blob); err != nil {
		t.Fatal(err)
	}
	finishScan(t, ctx, blob, nodes[0], 0, scanResult)
	for i, node := range nodes {
		pod := podspec.SourceHolderPodName("model", node, 1)
		p := waitPod(t, ctx, ns, pod)
		if !strings.Contains(args(p, true), "--metrics-listen :9470") || !strings.Contains(args(p, false), "--metrics-listen :9470") {
			t.Fatalf("holder %s without its metrics page: %q / %q", pod, args(p, true), args(p, false))
		}
		holderPages.fill(pod, 4194304)
		holderStarted(t, ctx, ns, pod, node, fmt.Sprintf("10.9.%d.%d", i/200, i%200+1))
	}
	eventually(t, "progress of every node in status", func() error {
		if err := get(ctx, ns, "model", blob); err != nil {
			return err
		}
		for _, nd := range blob.Status.Nodes {
			if p := nd.Progress; p == nil || p.Bytes <= 0 || p.Percent <= 0 || p.MBps == "" {
				return fmt.Errorf("node %s progress %+v", nd.Node, nd.Progress)
			}
		}
		if blob.Status.Progress == "" || blob.Status.Progress == "0%" {
			return fmt.Errorf("blob progress %q", blob.Status.Progress)
		}
		return nil
	})

	// From here on, count the blob's status writes.
	w, err := env.WatchClient().Watch(ctx, &pfsv1alpha1.PfsBlobList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	holderPages.mu.Lock()
	reads0 := holderPages.reads
	holderPages.mu.Unlock()
	start := time.Now()
	for i, node := range nodes {
		pod := podspec.SourceHolderPodName("model", node, 1)
		msg := originResult()
		if i > 0 {
			msg = relayResult(podspec.HolderDNSName("model", ns, nodes[i-1])+":7470", "1767225601")
		}
		holderDone(t, ctx, ns, pod, fmt.Sprintf("10.9.%d.%d", i/200, i%200+1), msg)
		time.Sleep(50 * time.Millisecond)
	}
	waitReady(t, ctx, blob, metav1.ConditionTrue, pfsv1alpha1.ReasonMaterialized, fmt.Sprintf("%d of %d nodes hold the blob", n, n))
	elapsed := time.Since(start)
	writes, last := 0, ""
	drain := time.After(500 * time.Millisecond)
	for done := false; !done; {
		select {
		case ev := <-w.ResultChan():
			if b, ok := ev.Object.(*pfsv1alpha1.PfsBlob); ok && ev.Type == watch.Modified && b.Name == "model" && b.ResourceVersion != last {
				writes, last = writes+1, b.ResourceVersion
			}
		case <-drain:
			done = true
		}
	}
	holderPages.mu.Lock()
	reads := holderPages.reads - reads0
	holderPages.mu.Unlock()
	// One budgeted write per started interval, plus the Ready condition's
	// change (urgent), plus one for the write in flight when counting began.
	budget := int(elapsed/testTiming.ProgressInterval) + 1 + 2
	t.Logf("%d nodes Ready over %.1f s: %d status writes (budget %d), %d page reads", n, elapsed.Seconds(), writes, budget, reads)
	if writes > budget {
		t.Errorf("%d status writes in %.1f s, budget %d (one per %s, plus urgent ones)", writes, elapsed.Seconds(), budget, testTiming.ProgressInterval)
	}
	if maxReads := (int(elapsed/testTiming.ProgressInterval) + 2) * n; reads > maxReads {
		t.Errorf("%d page reads in %.1f s, at most %d (each running holder once per interval)", reads, elapsed.Seconds(), maxReads)
	}
	if blob.Status.Progress != "100%" {
		t.Errorf("Ready blob progress %q", blob.Status.Progress)
	}
	for _, nd := range blob.Status.Nodes {
		if nd.Progress != nil {
			t.Errorf("Ready node %s keeps progress %+v", nd.Node, nd.Progress)
		}
	}
}
