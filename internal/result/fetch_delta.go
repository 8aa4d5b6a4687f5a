// SPDX-License-Identifier: Apache-2.0

package result

import (
	"fmt"
	"time"
)

// A relay given a base (pfs blob create --delta-base-socket) says in
// "fetch.delta" whether it could map the base, how many of the blob's
// bytes it rebuilt from delta grams, how many came whole and what crossed
// the wire. The origin and a serving holder say in "repl.delta" whether
// they had a base to encode against and how many clients got delta grams.

// FetchDelta is a relay's "fetch.delta".
type FetchDelta struct {
	// Base says the relay mapped its base; Error says why not.
	Base  bool
	Error string
	// Bytes is how many blob bytes were rebuilt from delta grams;
	// WholeBytes how many came whole; WireBytes what came over the
	// connection for them.
	Bytes, WholeBytes, WireBytes int64
	// Refused is how many upstreams refused to send delta grams (they held
	// no base, or another).
	Refused int64
	// Apply is the time spent applying delta grams.
	Apply time.Duration
}

// ReplDelta is a serving holder's "repl.delta".
type ReplDelta struct {
	Base    bool
	Error   string
	Clients int64
	// Index and Encode are the time to index the base and to encode, for
	// every client.
	Index, Encode time.Duration
}

func parseFetchDelta(j *fetchDeltaJSON) (*FetchDelta, error) {
	if j.Base == nil {
		return nil, fmt.Errorf("field %q is missing", "fetch.delta.base")
	}
	d := &FetchDelta{Base: *j.Base}
	if j.Error != nil {
		d.Error = *j.Error
	}
	for _, c := range []struct {
		name string
		in   *int64
		out  *int64
	}{{"fetch.delta.bytes", j.Bytes, &d.Bytes}, {"fetch.delta.whole_bytes", j.WholeBytes, &d.WholeBytes},
		{"fetch.delta.wire_bytes", j.WireBytes, &d.WireBytes}, {"fetch.delta.refused", j.Refused, &d.Refused}} {
		var err error
		if *c.out, err = count(c.name, c.in); err != nil {
			return nil, err
		}
	}
	var err error
	if d.Apply, err = duration("fetch.delta.apply_s", j.ApplyS); err != nil {
		return nil, err
	}
	return d, nil
}

func parseReplDelta(j *replDeltaJSON) (*ReplDelta, error) {
	if j.Base == nil {
		return nil, fmt.Errorf("field %q is missing", "repl.delta.base")
	}
	d := &ReplDelta{Base: *j.Base}
	if j.Error != nil {
		d.Error = *j.Error
	}
	var err error
	if d.Clients, err = count("repl.delta.clients", j.Clients); err != nil {
		return nil, err
	}
	if d.Index, err = duration("repl.delta.index_s", j.IndexS); err != nil {
		return nil, err
	}
	if d.Encode, err = duration("repl.delta.encode_s", j.EncodeS); err != nil {
		return nil, err
	}
	return d, nil
}
