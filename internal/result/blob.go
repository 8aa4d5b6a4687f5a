// SPDX-License-Identifier: Apache-2.0

package result

import (
	"fmt"
	"time"
)

// BlobCreate is the result of `pfs blob create` in a holder's init container.
type BlobCreate struct {
	OK bool
	// Size is the blob size in bytes.
	Size int64
	// Page is the page kind obtained as the CLI names it: 4K, THP, 2M or 1G.
	Page string
	// FallbackReason says why Page is smaller than asked; empty without a fallback.
	FallbackReason string
	// Fingerprint is 16 lower-case hex digits.
	Fingerprint string
	// Map, Prefault and Fill are the setup timings.
	Map, Prefault, Fill time.Duration
	// NUMANode is where the blob's memory was bound, when reported.
	NUMANode *int32
	// Source is what the origin read (a blob with --source); nil otherwise.
	Source *Source
	// Fetch is what a relay fetched (--fetch-from); nil otherwise.
	Fetch *Fetch
	// Manifest is the blob's manifest (with Source or Fetch); nil otherwise.
	Manifest *Manifest
	// Repl is what the holder served to other nodes, when reported.
	Repl *Repl
	// Chunks is the blob's chunk digests, when the holder has them.
	Chunks *Chunks
	// Bound is what bound an origin's or a relay's fill ("source",
	// "upstream", "verification", "cpu-quota"), BoundWhy its numbers;
	// empty when not reported.
	Bound, BoundWhy string
	// Error is the CLI's error message for a failed create.
	Error string
}

// ParseBlobCreate parses the result of `pfs blob create`. A successful result
// must carry blob.size, blob.page and blob.fingerprint; timings are optional.
// With "source" (origin) or "fetch" (relay) it must also carry "manifest";
// each of those members has its own required fields (sha256 above all).
func ParseBlobCreate(msg string) (*BlobCreate, error) {
	var j blobCreateJSON
	if err := decode(msg, &j); err != nil {
		return nil, err
	}
	if j.OK == nil {
		return nil, missing{"ok"}.err("blob create")
	}
	b := &BlobCreate{OK: *j.OK}
	if j.Error != nil {
		b.Error = *j.Error
	}
	if !b.OK {
		if b.Error == "" {
			return nil, fmt.Errorf("blob create result says ok=false without an error message")
		}
		return b, nil
	}
	if j.Blob == nil {
		return nil, missing{"blob"}.err("blob create")
	}
	var m missing
	m.need(j.Blob.Size != nil, "blob.size")
	m.need(j.Blob.Page != nil, "blob.page")
	m.need(j.Blob.Fingerprint != nil, "blob.fingerprint")
	if err := m.err("blob create"); err != nil {
		return nil, err
	}
	if *j.Blob.Size <= 0 {
		return nil, fmt.Errorf("field \"blob.size\": %d is not a size", *j.Blob.Size)
	}
	switch *j.Blob.Page {
	case "4K", "THP", "2M", "1G":
	default:
		return nil, fmt.Errorf("field \"blob.page\": %q is not 4K, THP, 2M or 1G", *j.Blob.Page)
	}
	fp, err := hexValue("blob.fingerprint", *j.Blob.Fingerprint)
	if err != nil {
		return nil, err
	}
	if len(fp) != 16 {
		return nil, fmt.Errorf("field \"blob.fingerprint\": %q is not 16 hex digits", *j.Blob.Fingerprint)
	}
	b.Size, b.Page, b.Fingerprint, b.NUMANode = *j.Blob.Size, *j.Blob.Page, fp, j.Blob.NUMANode
	if f := j.Files; f != nil && f.Page != nil {
		// A files-layout blob: blob.page is the region's mapping (4 KiB PTEs,
		// files start at 4 KiB offsets); what the node keeps is what the
		// files themselves got, THP or 4K, measured by pfs.
		switch *f.Page {
		case "4K", "THP":
			b.Page = *f.Page
		default:
			return nil, fmt.Errorf("field \"files.page\": %q is not 4K or THP", *f.Page)
		}
	}
	if j.Blob.FallbackReason != nil {
		b.FallbackReason = *j.Blob.FallbackReason
	}
	for _, t := range []struct {
		name string
		in   *float64
		out  *time.Duration
	}{{"blob.map_s", j.Blob.MapS, &b.Map}, {"blob.prefault_s", j.Blob.PrefaultS, &b.Prefault}, {"blob.fill_s", j.Blob.FillS, &b.Fill}} {
		if t.in == nil {
			continue
		}
		if err := seconds(t.name, *t.in); err != nil {
			return nil, err
		}
		*t.out = time.Duration(*t.in * float64(time.Second))
	}
	if err := parseFanout(&j, b); err != nil {
		return nil, err
	}
	if j.Bound != nil {
		switch *j.Bound {
		case "source", "upstream", "verification", "cpu-quota":
			b.Bound = *j.Bound
		default:
			return nil, fmt.Errorf("field \"bound\": %q is not source, upstream, verification or cpu-quota", *j.Bound)
		}
	}
	if j.BoundWhy != nil {
		b.BoundWhy = *j.BoundWhy
	}
	return b, nil
}

// parseFanout reads the members of a blob with a source.
func parseFanout(j *blobCreateJSON, b *BlobCreate) error {
	var err error
	if j.Source != nil {
		if b.Source, err = parseSource(j.Source); err != nil {
			return err
		}
	}
	if j.Fetch != nil {
		if b.Fetch, err = parseFetch(j.Fetch); err != nil {
			return err
		}
	}
	if j.Source != nil && j.Fetch != nil {
		return fmt.Errorf("blob create result has both \"source\" and \"fetch\": a holder either reads the source or fetches it")
	}
	if j.Manifest == nil && (j.Source != nil || j.Fetch != nil) {
		return missing{"manifest"}.err("blob create")
	}
	if j.Manifest != nil {
		if b.Manifest, err = parseManifest(j.Manifest); err != nil {
			return err
		}
	}
	if j.Repl != nil {
		if b.Repl, err = parseRepl(j.Repl); err != nil {
			return err
		}
	}
	if j.Chunks != nil {
		if b.Chunks, err = parseChunks(j.Chunks); err != nil {
			return err
		}
	}
	return nil
}
