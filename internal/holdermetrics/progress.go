// SPDX-License-Identifier: Apache-2.0

// Package holdermetrics reads a holder's /metrics page (the data plane's
// --metrics-listen, dataplane/tools/pfs/holder_metrics.c), or a transfer
// receiver's (xfer_metrics.c): the same pages Prometheus scrapes, so the
// progress the operator writes into status and what PromQL returns come
// from one source.
package holdermetrics

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// The names the operator reads; the page has more (docs/guides/observability.md).
const (
	MetricSize   = "packetfs_blob_size_bytes"
	MetricFilled = "packetfs_blob_filled_bytes"
	MetricFillS  = "packetfs_blob_fill_seconds"
	MetricPhase  = "packetfs_blob_phase"
	// A receiver's page: the bytes its sender announced and those done.
	MetricPlanned  = "packetfs_transfer_planned_bytes"
	MetricReceived = "packetfs_transfer_effective_bytes_total"
)

// maxPage bounds what is read of a page: a holder's is a few kilobytes.
const maxPage = 1 << 20

// Progress is a holder's fill, or a receiver's transfer, as its page says it.
type Progress struct {
	// Size and Filled are the blob's bytes and those held so far (a
	// receiver: the bytes its sender announced, 0 before its HELLO, and
	// those it received and executed).
	Size, Filled int64
	// Seconds is the time since the fill started.
	Seconds float64
	// Phase is mapping, filling, ready or failed ("" when the page has none).
	Phase string
}

// Parse reads the progress from a page in the Prometheus text format.
func Parse(r io.Reader) (Progress, error) {
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(io.LimitReader(r, maxPage))
	if err != nil {
		return Progress{}, fmt.Errorf("parsing the metrics page: %w", err)
	}
	var out Progress
	if fams[MetricPlanned] != nil && fams[MetricReceived] != nil {
		out.Size, out.Filled = int64(gauge(fams[MetricPlanned])), int64(gauge(fams[MetricReceived]))
		return out, nil
	}
	for _, need := range []string{MetricSize, MetricFilled} {
		if fams[need] == nil {
			return Progress{}, fmt.Errorf("the metrics page has no %s", need)
		}
	}
	out.Size = int64(gauge(fams[MetricSize]))
	out.Filled = int64(gauge(fams[MetricFilled]))
	out.Seconds = gauge(fams[MetricFillS])
	if f := fams[MetricPhase]; f != nil {
		for _, m := range f.GetMetric() {
			if value(m) != 1 {
				continue
			}
			for _, l := range m.GetLabel() {
				if l.GetName() == "phase" {
					out.Phase = l.GetValue()
				}
			}
		}
	}
	return out, nil
}

// gauge is the value of a family's first sample, 0 when there is none.
func gauge(f *dto.MetricFamily) float64 {
	if f == nil || len(f.GetMetric()) == 0 {
		return 0
	}
	return value(f.GetMetric()[0])
}

// value is a sample's value whatever its TYPE line said (none: untyped).
func value(m *dto.Metric) float64 {
	switch {
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	default:
		return m.GetUntyped().GetValue()
	}
}

// Target is one holder to read: its pod and where its page is.
type Target struct {
	Pod  string
	Host string
	Port int32
}

// Reader reads holders' pages over HTTP.
type Reader struct {
	// Client is the HTTP client; its Timeout bounds each read.
	Client *http.Client
	// Parallel is how many pages are read at once.
	Parallel int
}

// NewReader is a Reader with a 2 s timeout per page and 16 reads at once.
func NewReader() *Reader {
	return &Reader{Client: &http.Client{Timeout: 2 * time.Second}, Parallel: 16}
}

// Read reads every target's page at once (Parallel at a time) and returns
// the progress of those that answered, by pod. A holder that does not
// answer is left out: its node keeps the progress status last showed.
func (r *Reader) Read(ctx context.Context, targets []Target) map[string]Progress {
	out := map[string]Progress{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, max(1, r.Parallel))
	for _, t := range targets {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			p, err := r.readOne(ctx, t)
			if err != nil {
				return
			}
			mu.Lock()
			out[t.Pod] = p
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

func (r *Reader) readOne(ctx context.Context, t Target) (Progress, error) {
	url := "http://" + net.JoinHostPort(t.Host, strconv.Itoa(int(t.Port))) + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Progress{}, err
	}
	resp, err := r.Client.Do(req)
	if err != nil {
		return Progress{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return Progress{}, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return Parse(resp.Body)
}
