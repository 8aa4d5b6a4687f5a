// SPDX-License-Identifier: Apache-2.0

package result

import (
	"fmt"
	"time"
)

// A transfer in delta mode (`pfs send/recv --mode delta`) adds the member
// "delta" to the transfer result: what the encoder made of the source
// against the base, and how long each stage took. The sender fills the
// index and encode stages, the receiver apply and verify; the ones a side
// did not run are 0. Its "sha256" is the source's digest: the sender's of
// the source it read, the receiver's of the source it rebuilt. Its
// "integrity" is the verdict on those two ("integrity_alg": "sha256").

// Delta is the "delta" member of a delta-mode transfer result.
type Delta struct {
	// BaseBytes, TargetBytes and WireBytes are the sizes of the base, of the
	// source (target) and of the encoded delta on the wire.
	BaseBytes, TargetBytes, WireBytes int64
	// FullCopy says the receiver held no base: the source was encoded
	// against an empty one (a compressed full copy).
	FullCopy bool
	// SHA256 is the source's digest, 64 lower-case hex digits.
	SHA256 string
	// Same, Moved, XOR, Zstd, ZstdRef and Raw count the regions of each
	// kind; nil when this side did not report them. ZstdRef regions are zstd
	// whose matches may refer to a window of the base (bytes that moved a
	// little); older pfs binaries do not report them.
	Same, Moved, XOR, Zstd, ZstdRef, Raw *DeltaRegion
	// Index, Encode, Apply and Verify are the stage times (0: not this side's).
	Index, Encode, Apply, Verify time.Duration
	// Bound is the stage that limited this side: the sender's "encode" or
	// "wire", the receiver's "sender" (it waited for the sender), "apply"
	// or "verify"; "" when not reported.
	Bound string
	// Threads is how many encoder threads ran; 0 when not reported.
	Threads int32
}

// DeltaRegion counts one kind of region: how many, the source bytes they
// cover, and their encoded size on the wire (xor and zstd only).
type DeltaRegion struct {
	Count, Bytes, WireBytes int64
}

// deltaBounds are the values "bound" may take.
var deltaBounds = map[string]bool{"encode": true, "wire": true, "sender": true, "apply": true, "verify": true}

// parseDelta checks the "delta" member of a measured result. sha256 is
// required unless the integrity verdict is NA.
func parseDelta(j *deltaJSON, needSHA bool) (*Delta, error) {
	var m missing
	m.need(j.BaseBytes != nil, "delta.base_bytes")
	m.need(j.TargetBytes != nil, "delta.target_bytes")
	m.need(j.WireBytes != nil, "delta.wire_bytes")
	m.need(j.FullCopy != nil, "delta.full_copy")
	m.need(j.SHA256 != nil || !needSHA, "delta.sha256")
	if err := m.err("transfer"); err != nil {
		return nil, err
	}
	d := &Delta{FullCopy: *j.FullCopy}
	var err error
	for _, c := range []struct {
		field string
		v     *int64
		into  *int64
	}{{"delta.base_bytes", j.BaseBytes, &d.BaseBytes}, {"delta.target_bytes", j.TargetBytes, &d.TargetBytes},
		{"delta.wire_bytes", j.WireBytes, &d.WireBytes}} {
		if *c.into, err = count(c.field, c.v); err != nil {
			return nil, err
		}
	}
	if j.SHA256 != nil {
		if d.SHA256, err = sha256Hex("delta.sha256", *j.SHA256); err != nil {
			return nil, err
		}
	}
	r := j.Regions
	if r == nil {
		r = &deltaRegionsJSON{}
	}
	for _, c := range []struct {
		name string
		j    *deltaRegionJSON
		into **DeltaRegion
	}{{"same", r.Same, &d.Same}, {"moved", r.Moved, &d.Moved}, {"xor", r.XOR, &d.XOR}, {"zstd", r.Zstd, &d.Zstd}, {"zstd_ref", r.ZstdRef, &d.ZstdRef}, {"raw", r.Raw, &d.Raw}} {
		if *c.into, err = parseDeltaRegion("delta.regions."+c.name, c.j); err != nil {
			return nil, err
		}
	}
	s := j.Stages
	if s == nil {
		s = &deltaStagesJSON{}
	}
	for _, c := range []struct {
		field string
		v     *float64
		into  *time.Duration
	}{{"delta.stages.index_s", s.IndexS, &d.Index}, {"delta.stages.encode_s", s.EncodeS, &d.Encode},
		{"delta.stages.apply_s", s.ApplyS, &d.Apply}, {"delta.stages.verify_s", s.VerifyS, &d.Verify}} {
		if *c.into, err = duration(c.field, c.v); err != nil {
			return nil, err
		}
	}
	if j.Bound != nil && *j.Bound != "" {
		if !deltaBounds[*j.Bound] {
			return nil, fmt.Errorf("field \"delta.bound\": %q is not encode, wire, sender, apply or verify", *j.Bound)
		}
		d.Bound = *j.Bound
	}
	if j.Threads != nil {
		if *j.Threads < 0 {
			return nil, fmt.Errorf("field \"delta.threads\": %d is negative", *j.Threads)
		}
		d.Threads = *j.Threads
	}
	return d, nil
}

func parseDeltaRegion(field string, j *deltaRegionJSON) (*DeltaRegion, error) {
	if j == nil {
		return nil, nil
	}
	r := &DeltaRegion{}
	var err error
	if r.Count, err = count(field+".n", j.N); err != nil {
		return nil, err
	}
	if r.Bytes, err = count(field+".bytes", j.Bytes); err != nil {
		return nil, err
	}
	if r.WireBytes, err = count(field+".wire", j.Wire); err != nil {
		return nil, err
	}
	return r, nil
}
