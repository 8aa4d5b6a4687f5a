// SPDX-License-Identifier: Apache-2.0

package result

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Pcore is the result of `pfs pcore run`.
type Pcore struct {
	// Complete is false when the run was stopped early (signal, deadline).
	Complete bool
	// Bytes is what the pcores processed in Seconds.
	Bytes   int64
	Seconds float64
	// MBps is the pcores' throughput as the CLI reports it (median of rounds).
	MBps float64
	// Value is the op's result: "0x..." for fnv and crc32c, decimal otherwise.
	Value string
	// RangeCRC32CAfter is the CRC-32C of the range after an in-place op.
	RangeCRC32CAfter string
	// Baseline is the plain-threads run; nil when none ran.
	Baseline *PcoreBaseline
	// CPUpwn is MBps / Baseline.MBps as the CLI reports it; 0 without a baseline.
	CPUpwn float64
	// CPUs is the CPU list the pcores were pinned to.
	CPUs []int
	// NUMANode is where the pcores ran, when reported.
	NUMANode *int32
	// Error is the CLI's error message, when it wrote one.
	Error string
}

// PcoreBaseline is the plain-threads baseline of a pcore run.
type PcoreBaseline struct {
	MBps        float64
	Value       string
	ResultMatch bool
}

// ParsePcore parses the result of `pfs pcore run`. bytes, seconds, MBps,
// complete and result.value are required; with wantBaseline so are
// baseline.MBps, baseline.result, baseline.result_match and CPUpwn.
func ParsePcore(msg string, wantBaseline bool) (*Pcore, error) {
	var j pcoreJSON
	if err := decode(msg, &j); err != nil {
		return nil, err
	}
	var m missing
	m.need(j.Complete != nil, "complete")
	m.need(j.Bytes != nil, "bytes")
	m.need(j.Seconds != nil, "seconds")
	m.need(j.MBps != nil, "MBps")
	m.need(j.Result != nil && len(j.Result.Value) > 0, "result.value")
	if wantBaseline {
		m.need(j.Baseline != nil, "baseline")
		m.need(j.CPUpwn != nil, "CPUpwn")
		if j.Baseline != nil {
			m.need(j.Baseline.MBps != nil, "baseline.MBps")
			m.need(len(j.Baseline.Result) > 0, "baseline.result")
			m.need(j.Baseline.ResultMatch != nil, "baseline.result_match")
		}
	}
	if err := m.err("pcore"); err != nil {
		return nil, err
	}
	if *j.Bytes < 0 {
		return nil, fmt.Errorf("field \"bytes\": %d is negative", *j.Bytes)
	}
	for name, v := range map[string]float64{"seconds": *j.Seconds, "MBps": *j.MBps} {
		if err := seconds(name, v); err != nil {
			return nil, err
		}
	}
	p := &Pcore{Complete: *j.Complete, Bytes: *j.Bytes, Seconds: *j.Seconds, MBps: *j.MBps,
		CPUs: ints(j.CPUs), NUMANode: j.NUMANode}
	if j.Error != nil {
		p.Error = *j.Error
	}
	var err error
	if p.Value, err = opValue("result.value", j.Result.Value); err != nil {
		return nil, err
	}
	if after := val(j.RangeCRC32CAfter); after != "" {
		v, err := hexValue("range_crc32c_after", after)
		if err != nil {
			return nil, err
		}
		p.RangeCRC32CAfter = "0x" + v
	}
	if j.Baseline != nil && j.Baseline.MBps != nil && j.Baseline.ResultMatch != nil && len(j.Baseline.Result) > 0 {
		b := &PcoreBaseline{MBps: *j.Baseline.MBps, ResultMatch: *j.Baseline.ResultMatch}
		if b.Value, err = opValue("baseline.result", j.Baseline.Result); err != nil {
			return nil, err
		}
		p.Baseline = b
	}
	if j.CPUpwn != nil {
		p.CPUpwn = *j.CPUpwn
	}
	return p, nil
}

// opValue reads an op result written as a hex string ("0x1a2b") or a
// decimal number; null (the CLI had no valid value) is an error.
func opValue(field string, raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if bytes.Equal(raw, []byte("null")) {
		return "", fmt.Errorf("field %q is null: the data plane computed no valid value", field)
	}
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("field %q: %v", field, err)
		}
		v, err := hexValue(field, s)
		if err != nil {
			return "", err
		}
		return "0x" + v, nil
	}
	n, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return "", fmt.Errorf("field %q: %s is neither a hex string nor a whole number", field, raw)
	}
	return strconv.FormatUint(n, 10), nil
}
