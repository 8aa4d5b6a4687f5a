//go:build e2e

// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// metricSample is one scrape of the operator's metrics endpoint: series
// (name with its labels, as printed) to value.
type metricSample map[string]float64

// scrapeOperator reads the operator's Prometheus endpoint as the e2e's
// metrics reader (nothing is exposed outside the cluster).
func scrapeOperator(t *testing.T) metricSample {
	t.Helper()
	code, out := operatorGet(t, saToken(t, metricsReaderSA))
	if code != http.StatusOK {
		t.Fatalf("metrics of the operator: HTTP %d\n%.300s", code, out)
	}
	m := metricSample{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			m[line[:i]] = v
		}
	}
	return m
}

// histogramQuantile estimates quantile q of a histogram from the bucket
// counts gained between two scrapes, interpolating inside the bucket as
// Prometheus's histogram_quantile does.
func histogramQuantile(before, after metricSample, name, labels string, q float64) float64 {
	type bucket struct{ le, n float64 }
	var bs []bucket
	prefix := name + "_bucket{" + labels + ",le=\""
	for k, v := range after {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		le, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimPrefix(k, prefix), "\"}"), 64)
		if strings.HasSuffix(k, "+Inf\"}") {
			le, err = math.Inf(1), nil
		}
		if err == nil {
			bs = append(bs, bucket{le, v - before[k]})
		}
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].le < bs[j].le })
	if len(bs) == 0 || bs[len(bs)-1].n == 0 {
		return math.NaN()
	}
	rank := q * bs[len(bs)-1].n
	lo, prev := 0.0, 0.0
	for _, b := range bs {
		if b.n >= rank {
			if math.IsInf(b.le, 1) {
				return lo
			}
			return lo + (b.le-lo)*(rank-prev)/math.Max(b.n-prev, 1)
		}
		lo, prev = b.le, b.n
	}
	return lo
}

func envInt(k string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v > 0 {
		return v
	}
	return def
}

// testLoad creates E2E_LOAD_TRANSFERS (default 40: twenty times what the
// queue admits at once, and what fits the 60-minute make test) small transfers at once
// and requires every one to reach Succeeded through the admission queue.
// It reports the operator's memory, its reconcile latency and queue wait
// (p50/p99 from the metrics endpoint), and proves there is no error or
// requeue loop: no reconcile errors, and the reconcile count stands still
// once everything finished and the last planned wake-ups fired.
func testLoad(ctx context.Context, t *testing.T) {
	n := envInt("E2E_LOAD_TRANSFERS", 40)
	before := scrapeOperator(t)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- env.c.Create(ctx, smallTransfer(fmt.Sprintf("load-%03d", i), "16Mi"))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("created %d PfsTransfers in %s", n, time.Since(start).Round(time.Millisecond))
	var maxRSS float64
	phases := map[pfsv1alpha1.Phase]int{}
	list := &pfsv1alpha1.PfsTransferList{}
	err := poll(ctx, time.Duration(n)*20*time.Second, func() (bool, error) {
		if m := scrapeOperator(t); m["process_resident_memory_bytes"] > maxRSS {
			maxRSS = m["process_resident_memory_bytes"]
		}
		if err := env.c.List(ctx, list, client.InNamespace(testNS)); err != nil {
			return false, err
		}
		clear(phases)
		final := 0
		for _, x := range list.Items {
			if strings.HasPrefix(x.Name, "load-") {
				phases[x.Status.Phase]++
				if x.Status.Phase.IsTerminal() {
					final++
				}
			}
		}
		return final == n, nil
	})
	wall := time.Since(start)
	if err != nil {
		t.Fatalf("after %s: %v; phases %v", wall.Round(time.Second), err, phases)
	}
	after := scrapeOperator(t)
	// Wake-ups planned while the transfers ran still fire once each after
	// they finished: a queued transfer's 30 s look at the queue, a 5 s look
	// for room, and a scheduled pod's start deadline (scheduled +
	// --unschedulable-timeout), which a workqueue cannot take back. The
	// operator here caps every planned wake-up at --max-requeue-after
	// (testHelmInstall sets maxRequeueAfter), so the last of them fires within that of the last
	// reconcile that planned one, which came before every transfer was
	// seen finished. Wait for the last of them; after that any reconcile
	// is a loop.
	quiet := lastWakeUp(ctx, t)
	settle := max(35*time.Second, time.Until(quiet))
	if c := requeueCap(t); c > 0 {
		settle = min(settle, c+5*time.Second)
	}
	t.Logf("waiting %s for the last planned wake-up (%s; a start deadline alone would be %s)", settle.Round(time.Second),
		time.Now().Add(settle).Format(time.TimeOnly), quiet.Format(time.TimeOnly))
	time.Sleep(settle)
	settled := scrapeOperator(t)
	time.Sleep(30 * time.Second)
	idle := scrapeOperator(t)
	const tr = `controller="pfstransfer"`
	results := []string{"success", "error", "requeue", "requeue_after"}
	total := func(result string) string {
		return fmt.Sprintf(`controller_runtime_reconcile_total{controller="pfstransfer",result="%s"}`, result)
	}
	reconciles := func(m metricSample) float64 {
		var s float64
		for _, r := range results {
			s += m[total(r)]
		}
		return s
	}
	errCount := after[`controller_runtime_reconcile_errors_total{`+tr+`}`] - before[`controller_runtime_reconcile_errors_total{`+tr+`}`]
	t.Logf("%d transfers at once: %v in %s (%.1f transfers/min); operator RSS max %.1f MiB (%.1f MiB before)",
		n, phases, wall.Round(time.Second), float64(n)/wall.Minutes(), maxRSS/(1<<20), before["process_resident_memory_bytes"]/(1<<20))
	t.Logf("pfstransfer reconciles: %.0f (%.1f per transfer), errors %.0f; reconcile time p50 %.1f ms p99 %.1f ms; queue wait p50 %.1f ms p99 %.1f ms",
		reconciles(after)-reconciles(before), (reconciles(after)-reconciles(before))/float64(n), errCount,
		1e3*histogramQuantile(before, after, "controller_runtime_reconcile_time_seconds", tr, 0.5),
		1e3*histogramQuantile(before, after, "controller_runtime_reconcile_time_seconds", tr, 0.99),
		1e3*histogramQuantile(before, after, "workqueue_queue_duration_seconds", `controller="pfstransfer",name="pfstransfer"`, 0.5),
		1e3*histogramQuantile(before, after, "workqueue_queue_duration_seconds", `controller="pfstransfer",name="pfstransfer"`, 0.99))
	if phases[pfsv1alpha1.PhaseSucceeded] != n {
		t.Errorf("phases %v, want all %d Succeeded", phases, n)
	}
	// Conflicts and missing objects are handled inside Reconcile, so a
	// returned error is a bug: none is allowed (0 in every run measured).
	if errCount != 0 {
		t.Errorf("%.0f reconcile errors for %d transfers, want none: see the operator's log", errCount, n)
	}
	byResult := func(m metricSample) string {
		parts := make([]string, 0, len(results))
		for _, r := range results {
			parts = append(parts, fmt.Sprintf("%s %.0f", r, m[total(r)]-settled[total(r)]))
		}
		return strings.Join(parts, ", ")
	}
	t.Logf("reconciles after the last transfer finished: %.0f until the last planned wake-up, %.0f in the next 30 s (%s)",
		reconciles(settled)-reconciles(after), reconciles(idle)-reconciles(settled), byResult(idle))
	// Nothing is left to wake a finished transfer: a requeue loop would
	// reconcile each of them again and again, and a status that never
	// settles would keep its own watch busy.
	if d := reconciles(idle) - reconciles(settled); d > 2 {
		t.Errorf("%.0f reconciles of %d finished transfers in the 30 s after the last planned wake-up: a loop (%s)", d, n, byResult(idle))
	}
	for _, x := range list.Items {
		if strings.HasPrefix(x.Name, "load-") {
			_ = env.c.Delete(ctx, &x)
		}
	}
}

// maxRequeueAfter is the operator's --max-requeue-after in the e2e
// installation (testHelmInstall sets it): every wake-up a reconcile plans
// fires within it, so the load step's loop check waits seconds, not the
// --unschedulable-timeout of a start deadline. 30 s is the queue's own
// recheck: the cap shortens no wake-up the load's transfers plan while
// they run, so their pace and reconcile counts stay as without it.
const maxRequeueAfter = 30 * time.Second

// requeueCap is the operator's --max-requeue-after as its Deployment runs
// it (0 when absent), so the load step relies on the cap only when the
// running operator has it.
func requeueCap(t *testing.T) time.Duration {
	t.Helper()
	m := regexp.MustCompile(`--max-requeue-after=([0-9a-z.]+)`).FindStringSubmatch(operatorArgs(t))
	if m == nil {
		return 0
	}
	d, err := time.ParseDuration(m[1])
	if err != nil {
		t.Fatalf("--max-requeue-after=%s: %v", m[1], err)
	}
	return d
}

// operatorArgs are the operator container's args as its Deployment has them.
func operatorArgs(t *testing.T) string {
	t.Helper()
	args, err := kubectl("-n", releaseNS, "get", "deployments", "-l", "app.kubernetes.io/component=manager",
		"-o", "jsonpath={.items[0].spec.template.spec.containers[0].args}")
	if err != nil {
		t.Fatalf("the operator's args: %v", err)
	}
	return args
}

// lastWakeUp is when the last wake-up the operator planned for the load
// transfers fires: the latest start deadline of their pods (scheduled, or
// created, + the operator's --unschedulable-timeout), plus a few seconds
// for the workqueue and the reconcile.
func lastWakeUp(ctx context.Context, t *testing.T) time.Time {
	t.Helper()
	args := operatorArgs(t)
	m := regexp.MustCompile(`--unschedulable-timeout=([0-9a-z.]+)`).FindStringSubmatch(args)
	if m == nil {
		t.Fatalf("no --unschedulable-timeout in the operator's args %s", args)
	}
	timeout, err := time.ParseDuration(m[1])
	if err != nil {
		t.Fatal(err)
	}
	pods := &corev1.PodList{}
	if err := env.c.List(ctx, pods, client.InNamespace(testNS)); err != nil {
		t.Fatal(err)
	}
	var last time.Time
	for _, p := range pods.Items {
		if !strings.HasPrefix(p.Name, "load-") {
			continue
		}
		at := p.CreationTimestamp.Time
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.LastTransitionTime.After(at) {
				at = c.LastTransitionTime.Time
			}
		}
		if at.After(last) {
			last = at
		}
	}
	return last.Add(timeout + 5*time.Second)
}
