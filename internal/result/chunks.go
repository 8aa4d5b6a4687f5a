// SPDX-License-Identifier: Apache-2.0

package result

import "fmt"

// Chunks is the "chunks" member of a blob create: the blob's BLAKE3 chunk
// digests (dataplane/include/pfs/blob_chunks.h), computed by the origin,
// received and verified by a relay.
type Chunks struct {
	// Count is the blob's chunks.
	Count int64
	// Root is the BLAKE3 of the blob size and every digest of the list,
	// 64 hex digits; empty when the holder has no list.
	Root string
	// List is where the list came from: ChunksComputed (the origin),
	// ChunksReceived (a relay), ChunksKept (loaded), ChunksNone.
	List string
	// Verified and Failed count chunks verified against the list and
	// comparisons that failed; Rounds the fetches again for failed chunks,
	// RefetchedBytes the bytes they received.
	Verified, Failed, Rounds, RefetchedBytes int64
}

// Where a holder's chunk list came from.
const (
	ChunksComputed = "computed"
	ChunksReceived = "received"
	ChunksKept     = "kept"
	ChunksNone     = "none"
)

// How a relay verified its bytes (fetch.verified_by).
const (
	VerifiedByChunks = "chunks"
	VerifiedByFiles  = "files"
)

func parseChunks(j *chunksJSON) (*Chunks, error) {
	var m missing
	m.need(j.Count != nil, "chunks.count")
	m.need(j.List != nil, "chunks.list")
	if err := m.err("blob create"); err != nil {
		return nil, err
	}
	c := &Chunks{List: *j.List}
	switch c.List {
	case ChunksComputed, ChunksReceived, ChunksKept, ChunksNone:
	default:
		return nil, fmt.Errorf("field \"chunks.list\": %q is not computed, received, kept or none", c.List)
	}
	var err error
	for _, f := range []struct {
		name string
		in   *int64
		out  *int64
	}{{"chunks.count", j.Count, &c.Count}, {"chunks.verified", j.Verified, &c.Verified}, {"chunks.failed", j.Failed, &c.Failed},
		{"chunks.rounds", j.Rounds, &c.Rounds}, {"chunks.refetched_bytes", j.RefetchedBytes, &c.RefetchedBytes}} {
		if *f.out, err = count(f.name, f.in); err != nil {
			return nil, err
		}
	}
	if j.Root != nil {
		if c.Root, err = sha256Hex("chunks.root", *j.Root); err != nil {
			return nil, err
		}
	}
	if c.List != ChunksNone && c.Root == "" {
		return nil, missing{"chunks.root"}.err("blob create")
	}
	return c, nil
}
