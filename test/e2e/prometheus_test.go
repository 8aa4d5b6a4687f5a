// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// A real Prometheus (Debian's package, hack/prometheus.sh) scrapes the
// operator and every holder from the chart's install on, and evaluates the
// chart's alert rules: the fan-out tests compare what PromQL returns with
// status, and the last step checks that the alerts fired on the faults the
// tests injected and that every dashboard panel has data.

// promServer is the run's Prometheus; nil when it could not start (the
// steps that need it then fail, they do not skip).
var promServer *prometheus

type prometheus struct {
	url, dir string
	// started is when it started: the range the dashboard is checked over.
	started time.Time
	// startErr is why it did not start.
	startErr error
}

// startPrometheus starts it against the operator's metrics endpoint, as
// the metrics reader (a token in its directory), and the holders' pages.
func startPrometheus(t *testing.T) *prometheus {
	p := &prometheus{dir: filepath.Join(os.TempDir(), fmt.Sprintf("pfs-e2e-prometheus-%d", os.Getpid()))}
	token := filepath.Join(p.dir, "token")
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		p.startErr = err
		return p
	}
	tok, err := kubectl("-n", releaseNS, "create", "token", metricsReaderSA, "--duration=24h")
	if err != nil {
		p.startErr = fmt.Errorf("a token of %s: %v %s", metricsReaderSA, err, tok)
		return p
	}
	if err := os.WriteFile(token, []byte(tok), 0o600); err != nil {
		p.startErr = err
		return p
	}
	out, err := run("hack/prometheus.sh", "start", p.dir, env.kubectl, env.kubeconfig, releaseNS, token)
	if err != nil {
		p.startErr = fmt.Errorf("hack/prometheus.sh start: %v: %s", err, out)
		return p
	}
	p.url, p.started = strings.TrimSpace(out[strings.LastIndex(out, "\n")+1:]), time.Now()
	t.Logf("Prometheus at %s (%s)", p.url, p.dir)
	return p
}

func (p *prometheus) stop() {
	if p == nil {
		return
	}
	if out, err := exec.Command(filepath.Join(env.root, "hack/prometheus.sh"), "stop", p.dir).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping prometheus: %v\n%s", err, out)
	}
	_ = os.RemoveAll(p.dir)
}

// need fails the test when Prometheus did not start.
func (p *prometheus) need(t *testing.T) {
	t.Helper()
	if p == nil || p.url == "" {
		t.Fatalf("no Prometheus: %v", p.startErr)
	}
}

// promSample is one series of an instant vector.
type promSample struct {
	Metric map[string]string
	Value  float64
}

// query runs an instant query.
func (p *prometheus) query(expr string) ([]promSample, error) {
	resp, err := http.Get(p.url + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status, Error string
		Data          struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, fmt.Errorf("query %q: %v", expr, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", expr, r.Error)
	}
	out := make([]promSample, 0, len(r.Data.Result))
	for _, s := range r.Data.Result {
		v, _ := s.Value[1].(string)
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("query %q: value %v", expr, s.Value[1])
		}
		out = append(out, promSample{Metric: s.Metric, Value: f})
	}
	return out, nil
}

// seriesOver is how many series with a number a range query from the
// start until now returns (what a dashboard panel over the run would draw),
// at one point a second: a blob's gauges may live only seconds between its
// Ready and its deletion by the test.
func (p *prometheus) seriesOver(expr string) (int, error) {
	q := url.Values{"query": {expr}, "start": {strconv.FormatInt(p.started.Unix(), 10)},
		"end": {strconv.FormatInt(time.Now().Unix(), 10)}, "step": {"1"}}
	resp, err := http.Get(p.url + "/api/v1/query_range?" + q.Encode())
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var r struct {
		Status, Error string
		Data          struct {
			Result []struct {
				Values [][2]any `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return 0, fmt.Errorf("query_range %q: %v", expr, err)
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("query_range %q: %s", expr, r.Error)
	}
	// A series counts when it has a number somewhere: 0/0 (a throughput
	// with no run) is NaN, which a panel draws as nothing.
	n := 0
	for _, s := range r.Data.Result {
		for _, v := range s.Values {
			if str, _ := v[1].(string); str != "NaN" && str != "" {
				n++
				break
			}
		}
	}
	return n, nil
}

// value is the one sample an aggregating query returns, or an error.
func (p *prometheus) value(expr string) (float64, error) {
	s, err := p.query(expr)
	if err != nil {
		return 0, err
	}
	if len(s) != 1 {
		return 0, fmt.Errorf("query %q: %d series, want 1: %v", expr, len(s), s)
	}
	return s[0].Value, nil
}

// checkPromMatchesStatus: once the blob is Ready, what PromQL returns of
// the operator's series and of the holders' pages says what status says
// (each node's bytes, the Ready count, the states), after the next scrapes.
func checkPromMatchesStatus(ctx context.Context, t *testing.T, blob string, st *blobStatus, size int64) {
	t.Helper()
	promServer.need(t)
	n := float64(len(st.Nodes))
	checks := map[string]float64{
		fmt.Sprintf(`sum(packetfs_blob_nodes{blob=%q, state="Ready"})`, blob):                float64(st.ReadyNodes),
		fmt.Sprintf(`sum(packetfs_blob_nodes{blob=%q, state!="Ready"})`, blob):               0,
		fmt.Sprintf(`sum(packetfs_blob_node_held_bytes{blob=%q})`, blob):                     n * float64(size),
		fmt.Sprintf(`max(packetfs_blob_ready{blob=%q})`, blob):                               1,
		fmt.Sprintf(`max(packetfs_blob_size_bytes{job="packetfs-operator", blob=%q})`, blob): float64(size),
		// The holders' own pages: every node's serve process holds it all.
		fmt.Sprintf(`count(packetfs_blob_filled_bytes{blob=%q} == packetfs_blob_size_bytes{blob=%q})`, blob, blob): n,
		fmt.Sprintf(`count(packetfs_blob_phase{blob=%q, phase="ready"} == 1)`, blob):                               n,
	}
	var last error
	err := poll(ctx, 30*time.Second, func() (bool, error) {
		for expr, want := range checks {
			got, err := promServer.value(expr)
			if err != nil || got != want {
				last = fmt.Errorf("%s = %v (%v), want %v as status says", expr, got, err, want)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("Prometheus and status disagree on %s: %v", blob, last)
	}
}

// progressWatch polls an object's status every half second while it runs
// and keeps the first signs of progress its look saw: for a blob, a
// Materializing node with some but not all bytes (part) and the blob's
// PROGRESS strictly between 0% and 100% (whole); for a transfer, its phase
// Running (part) and such a PROGRESS (whole).
type progressWatch struct {
	mu          sync.Mutex
	part, whole string
	stop, done  chan struct{}
}

// watch starts polling with look, which returns what it saw of each ("":
// nothing yet).
func watch(look func() (part, whole string)) *progressWatch {
	w := &progressWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
			part, whole := look()
			w.mu.Lock()
			if w.part == "" {
				w.part = part
			}
			if w.whole == "" {
				w.whole = whole
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// inProgress is a PROGRESS value strictly between 0% and 100%.
func inProgress(p string) bool { return p != "" && p != "0%" && p != "100%" }

// watchProgress watches a blob of size bytes while it fans out.
func watchProgress(name string, size int64) *progressWatch {
	return watch(func() (string, string) {
		out, err := kubectl("-n", testNS, "get", "pfsblob", name, "-o", "json")
		if err != nil {
			return "", ""
		}
		var b struct {
			Status struct {
				Progress string
				Nodes    []struct {
					Node, State string
					Progress    *struct {
						Bytes   int64
						Percent int
						MBps    string
					}
				}
			}
		}
		if json.Unmarshal([]byte(out), &b) != nil {
			return "", ""
		}
		part, whole := "", ""
		if inProgress(b.Status.Progress) {
			whole = b.Status.Progress
		}
		for _, n := range b.Status.Nodes {
			if p := n.Progress; n.State == "Materializing" && p != nil && p.Bytes > 0 && p.Bytes < size && p.MBps != "" {
				part = fmt.Sprintf("node %s %d bytes %d%% %s MB/s", n.Node, p.Bytes, p.Percent, p.MBps)
			}
		}
		return part, whole
	})
}

// watchTransferProgress watches a transfer while it runs.
func watchTransferProgress(name string) *progressWatch {
	return watch(func() (string, string) {
		out, err := kubectl("-n", testNS, "get", "pfstransfer", name, "-o", "jsonpath={.status.phase} {.status.progress}")
		phase, p, _ := strings.Cut(out, " ")
		if err != nil || phase != "Running" || !inProgress(p) {
			return "", ""
		}
		return phase, p
	})
}

// check stops the watch and fails the test unless it saw progress.
func (w *progressWatch) check(t *testing.T) {
	t.Helper()
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.part == "" || w.whole == "" {
		t.Errorf("status never showed it in progress: %q, %q", w.part, w.whole)
		return
	}
	t.Logf("progress seen in status while it ran: %s; %s", w.part, w.whole)
}

// testPrometheusAfter: the alerts fired on the faults the steps before
// injected (a relay's upstream deleted mid-fan-out, transfers failed on
// purpose, a node's copy failing verification), and every panel of the
// chart's dashboard has data. An alert is waited for as long as its own
// "for" plus a few scrapes and evaluations (a step run alone, just before
// this one, may have injected its fault seconds ago); after a whole run
// each has long fired.
func testPrometheusAfter(t *testing.T) {
	promServer.need(t)
	defer endFaultCopy(t)
	faults := map[string]string{
		"PacketFSRelayRerouted":      "the middle holder deleted mid-fan-out (its downstream resumed on the origin)",
		"PacketFSTransfersFailing":   "the fault steps' transfers that fail on purpose (deadline, missing network)",
		"PacketFSBlobNodeFailed":     "the node whose upstream's copy was damaged (" + faultBlob + "), Failed for good",
		"PacketFSVerificationFailed": "that node's relays receiving bytes that do not match the manifest",
	}
	fired := map[string]string{}
	_ = poll(context.Background(), 100*time.Second, func() (bool, error) {
		for alert := range faults {
			if fired[alert] != "" {
				continue
			}
			got, err := promServer.query(fmt.Sprintf(`max_over_time(ALERTS{alertname=%q, alertstate="firing"}[3h])`, alert))
			if err == nil && len(got) > 0 {
				fired[alert] = fmt.Sprint(got[0].Metric)
			}
		}
		return len(fired) == len(faults), nil
	})
	for alert, fault := range faults {
		if fired[alert] == "" {
			t.Errorf("alert %s never fired on %s", alert, fault)
			continue
		}
		t.Logf("alert %s fired: %s", alert, fired[alert])
	}
	// Every alert that was pending or firing at some point, for the log.
	if seen, err := promServer.query(`count by (alertname, alertstate) (max_over_time(ALERTS[3h]))`); err == nil {
		for _, s := range seen {
			t.Logf("alert seen during the run: %s %s", s.Metric["alertname"], s.Metric["alertstate"])
		}
	}
	raw, err := os.ReadFile(filepath.Join(env.root, "charts/packetfs-operator/files/dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	var empty []string
	for _, p := range d.Panels {
		series := 0
		for _, tg := range p.Targets {
			n, err := promServer.seriesOver(tg.Expr)
			if err != nil {
				t.Errorf("panel %q: %v", p.Title, err)
			}
			series += n
		}
		if series == 0 {
			empty = append(empty, p.Title)
		}
	}
	sort.Strings(empty)
	if len(empty) > 0 {
		t.Errorf("dashboard panels without data after the run: %q", empty)
	}
}
