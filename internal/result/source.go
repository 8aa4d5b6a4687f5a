// SPDX-License-Identifier: Apache-2.0

package result

import (
	"fmt"
	"math"
	"time"
)

// A blob with a source (`pfs blob create --source` on the origin node,
// `--fetch-from` on the relays) adds members to the blob create result:
// "source" (origin), "fetch" (relay), "manifest" (both) and "repl" (both,
// when the holder served other nodes). The scan (`--dry-run`) prints its own
// small result: ParseSourceScan.

// Source is the "source" member of an origin's result: what it read.
type Source struct {
	// Kind is "file" or "dir".
	Kind string
	// Path is the --source path as given.
	Path string
	// Files and Bytes are the number of files and their total size.
	Files, Bytes int64
	// SHA256 is the source digest (64 lower-case hex digits): the manifest's.
	SHA256 string
	// Read is the time spent reading; Load the whole load.
	Read, Load time.Duration
	// ODirect says whether the reads bypassed the page cache; ODirectWhy why not.
	ODirect    bool
	ODirectWhy string
	// T0, T1 are the wall-clock start (first byte read) and end of the load;
	// zero when the data plane did not report them.
	T0, T1 time.Time
}

// Manifest is the "manifest" member: the blob's manifest as written (origin)
// or received and checked (relay).
type Manifest struct {
	Kind           string
	Files, Bytes   int64
	SHA256         string
	Offset, Length int64
}

// Fetch is the "fetch" member of a relay's result.
type Fetch struct {
	// From is the upstream "IP:PORT" the bytes came from (the last one, after
	// any resumption).
	From string
	// Bytes and Elapsed are the bytes fetched and the time it took.
	Bytes   int64
	Elapsed time.Duration
	// Attempts is how many connections the fetch took; ResumedAt the offsets
	// it resumed from.
	Attempts  int64
	ResumedAt []int64
	// Verified says the relay verified the bytes; VerifiedBy how:
	// VerifiedByChunks (every chunk against the origin's BLAKE3 list) or
	// VerifiedByFiles (every file's sha256 against the manifest; also when
	// not reported).
	Verified   bool
	VerifiedBy string
	Verify     time.Duration
	// T0, T1 are the wall-clock start and end of the fetch; zero when not reported.
	T0, T1 time.Time
	// Transport is FetchTCP, FetchUDP or FetchAFXDP; Path describes the
	// datapath ("" when not reported).
	Transport, Path string
	// Dgrams counts a UDP or AF_XDP fetch's datagrams; nil when not reported.
	Dgrams *Datagrams
	// Delta is what came as delta grams over the relay's base; nil without
	// a base.
	Delta *FetchDelta
	// Skipped are the upstreams that stepped aside on this fetch, in order;
	// MovedTo the tail holder this relay finished from once it stepped
	// aside itself ("" when it did not). See step.go.
	Skipped []string
	MovedTo string
}

// Repl is the "repl" member: what the holder served to other nodes.
type Repl struct {
	Listen                        string
	Clients, BytesServed, Refused int64
	// Delta is what the holder served as delta grams; nil without a base.
	Delta *ReplDelta
	// SteppedAside says why this relay stepped aside; nil when it did not.
	SteppedAside *StepAside
}

// sha256Hex checks 64 lower-case hex digits.
func sha256Hex(field, s string) (string, error) {
	if len(s) != 64 {
		return "", fmt.Errorf("field %q: %q is not 64 hex digits", field, s)
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", fmt.Errorf("field %q: %q is not lower-case hex", field, s)
		}
	}
	return s, nil
}

func count(field string, v *int64) (int64, error) {
	if v == nil {
		return 0, nil
	}
	if *v < 0 {
		return 0, fmt.Errorf("field %q: %d is negative", field, *v)
	}
	return *v, nil
}

func duration(field string, v *float64) (time.Duration, error) {
	if v == nil {
		return 0, nil
	}
	if err := seconds(field, *v); err != nil {
		return 0, err
	}
	return time.Duration(*v * float64(time.Second)), nil
}

// unixTime reads seconds since the epoch with a fraction; absent is zero.
func unixTime(field string, v *float64) (time.Time, error) {
	if v == nil {
		return time.Time{}, nil
	}
	if *v <= 0 || math.IsNaN(*v) || math.IsInf(*v, 0) || *v > 1e11 {
		return time.Time{}, fmt.Errorf("field %q: %v is not a Unix time", field, *v)
	}
	sec, frac := math.Modf(*v)
	// Microseconds: a float64 of ~1.7e9 s holds no more digits.
	return time.Unix(int64(sec), int64(math.Round(frac*1e6))*1e3).UTC(), nil
}

func parseSource(j *sourceJSON) (*Source, error) {
	var m missing
	m.need(j.Kind != nil, "source.kind")
	m.need(j.Bytes != nil, "source.bytes")
	m.need(j.SHA256 != nil, "source.sha256")
	if err := m.err("blob create"); err != nil {
		return nil, err
	}
	s := &Source{Kind: *j.Kind}
	var err error
	if s.SHA256, err = sha256Hex("source.sha256", *j.SHA256); err != nil {
		return nil, err
	}
	if j.Path != nil {
		s.Path = *j.Path
	}
	if j.ODirect != nil {
		s.ODirect = *j.ODirect
	}
	if j.ODirectWhy != nil {
		s.ODirectWhy = *j.ODirectWhy
	}
	if s.Files, err = count("source.files", j.Files); err != nil {
		return nil, err
	}
	if s.Bytes, err = count("source.bytes", j.Bytes); err != nil {
		return nil, err
	}
	if s.Read, err = duration("source.read_seconds", j.ReadSeconds); err != nil {
		return nil, err
	}
	if s.Load, err = duration("source.seconds", j.Seconds); err != nil {
		return nil, err
	}
	if s.T0, err = unixTime("source.t0_unix", j.T0Unix); err != nil {
		return nil, err
	}
	if s.T1, err = unixTime("source.t1_unix", j.T1Unix); err != nil {
		return nil, err
	}
	return s, nil
}

func parseManifest(j *manifestJSON) (*Manifest, error) {
	var m missing
	m.need(j.SHA256 != nil, "manifest.sha256")
	m.need(j.Bytes != nil, "manifest.bytes")
	m.need(j.Offset != nil, "manifest.offset")
	m.need(j.Length != nil, "manifest.length")
	if err := m.err("blob create"); err != nil {
		return nil, err
	}
	out := &Manifest{}
	var err error
	if out.SHA256, err = sha256Hex("manifest.sha256", *j.SHA256); err != nil {
		return nil, err
	}
	if j.Kind != nil {
		out.Kind = *j.Kind
	}
	for _, f := range []struct {
		name string
		in   *int64
		out  *int64
	}{{"manifest.files", j.Files, &out.Files}, {"manifest.bytes", j.Bytes, &out.Bytes},
		{"manifest.offset", j.Offset, &out.Offset}, {"manifest.length", j.Length, &out.Length}} {
		if *f.out, err = count(f.name, f.in); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func parseFetch(j *fetchJSON) (*Fetch, error) {
	var m missing
	m.need(j.From != nil, "fetch.from")
	m.need(j.Bytes != nil, "fetch.bytes")
	m.need(j.Seconds != nil, "fetch.seconds")
	m.need(j.Verified != nil, "fetch.verified")
	if err := m.err("blob create"); err != nil {
		return nil, err
	}
	f := &Fetch{From: *j.From, Verified: *j.Verified, ResumedAt: j.ResumedAt, VerifiedBy: VerifiedByFiles}
	if j.VerifiedBy != nil {
		switch *j.VerifiedBy {
		case VerifiedByChunks, VerifiedByFiles:
			f.VerifiedBy = *j.VerifiedBy
		default:
			return nil, fmt.Errorf("field \"fetch.verified_by\": %q is not chunks or files", *j.VerifiedBy)
		}
	}
	var err error
	if f.Bytes, err = count("fetch.bytes", j.Bytes); err != nil {
		return nil, err
	}
	if f.Attempts, err = count("fetch.attempts", j.Attempts); err != nil {
		return nil, err
	}
	if f.Elapsed, err = duration("fetch.seconds", j.Seconds); err != nil {
		return nil, err
	}
	if f.Verify, err = duration("fetch.verify_seconds", j.VerifySeconds); err != nil {
		return nil, err
	}
	if f.T0, err = unixTime("fetch.t0_unix", j.T0Unix); err != nil {
		return nil, err
	}
	if f.T1, err = unixTime("fetch.t1_unix", j.T1Unix); err != nil {
		return nil, err
	}
	if err := parseFetchTransport(j, f); err != nil {
		return nil, err
	}
	parseFetchStep(j, f)
	if j.Delta != nil {
		if f.Delta, err = parseFetchDelta(j.Delta); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func parseRepl(j *replJSON) (*Repl, error) {
	r := &Repl{}
	if j.Listen != nil {
		r.Listen = *j.Listen
	}
	var err error
	for _, f := range []struct {
		name string
		in   *int64
		out  *int64
	}{{"repl.clients", j.Clients, &r.Clients}, {"repl.bytes_served", j.BytesServed, &r.BytesServed}, {"repl.refused", j.Refused, &r.Refused}} {
		if *f.out, err = count(f.name, f.in); err != nil {
			return nil, err
		}
	}
	if j.Delta != nil {
		if r.Delta, err = parseReplDelta(j.Delta); err != nil {
			return nil, err
		}
	}
	if j.SteppedAside != nil {
		if r.SteppedAside, err = parseReplStep(j.SteppedAside); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// SourceScan is the result of `pfs blob create --source … --dry-run` in the
// scan pod: what the source holds and the blob size it needs.
type SourceScan struct {
	OK bool
	// Kind is "file" or "dir".
	Kind string
	// Files and Bytes describe the source; Needed is the blob size it needs
	// with its manifest; BlobSize the size rounded to the blob alignment.
	Files, Bytes, Needed, BlobSize int64
	// Error is the CLI's message when the scan refused the source.
	Error string
}

// ParseSourceScan parses the scan's result. A successful one must say
// dry_run true and carry source.kind, source.files, source.bytes and
// source.needed.
func ParseSourceScan(msg string) (*SourceScan, error) {
	var j sourceScanJSON
	if err := decode(msg, &j); err != nil {
		return nil, err
	}
	if j.OK == nil {
		return nil, missing{"ok"}.err("source scan")
	}
	s := &SourceScan{OK: *j.OK}
	if j.Error != nil {
		s.Error = *j.Error
	}
	if !s.OK {
		if s.Error == "" {
			return nil, fmt.Errorf("source scan result says ok=false without an error message")
		}
		return s, nil
	}
	if j.DryRun == nil || !*j.DryRun {
		return nil, fmt.Errorf("source scan result is not a dry run (field \"dry_run\" is not true)")
	}
	if j.Source == nil {
		return nil, missing{"source"}.err("source scan")
	}
	var m missing
	m.need(j.Source.Kind != nil, "source.kind")
	m.need(j.Source.Files != nil, "source.files")
	m.need(j.Source.Bytes != nil, "source.bytes")
	m.need(j.Source.Needed != nil, "source.needed")
	if err := m.err("source scan"); err != nil {
		return nil, err
	}
	s.Kind = *j.Source.Kind
	var err error
	if s.Files, err = count("source.files", j.Source.Files); err != nil {
		return nil, err
	}
	if s.Bytes, err = count("source.bytes", j.Source.Bytes); err != nil {
		return nil, err
	}
	if s.BlobSize, err = count("source.blob_size", j.Source.BlobSize); err != nil {
		return nil, err
	}
	if *j.Source.Needed <= 0 {
		return nil, fmt.Errorf("field \"source.needed\": %d is not a size", *j.Source.Needed)
	}
	s.Needed = *j.Source.Needed
	return s, nil
}
