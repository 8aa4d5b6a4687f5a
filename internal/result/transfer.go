// SPDX-License-Identifier: Apache-2.0

package result

import (
	"fmt"
	"strings"
)

// Transfer is one side's result of `pfs send` or `pfs recv`.
type Transfer struct {
	// OK is the CLI's own verdict (exit code 0).
	OK bool
	// Measured says the numbers below were reported. A failed run may
	// carry them (an integrity mismatch is measured) or only Error.
	Measured bool
	// Side is "sender" or "receiver".
	Side string
	// Transport is "tcp", "udp" or "afxdp" as the CLI reports it.
	Transport string
	// Label is the CLI's benchmark label, if any.
	Label string
	// Bytes is the effective bytes this side moved.
	Bytes int64
	// WireBytes is the bytes this side saw on the wire.
	WireBytes int64
	// ElapsedSeconds is this side's measured window.
	ElapsedSeconds float64
	// UserSeconds and SysSeconds are this side's CPU time in the window.
	UserSeconds, SysSeconds float64
	// Integrity is "OK", "MISMATCH" or "NA" (not checked).
	Integrity string
	// Checksum and PeerChecksum are lower-case hex without "0x"; PeerChecksum
	// is empty when the peer's checksum never arrived.
	Checksum, PeerChecksum string
	// Grams and Descs are what this side sent or executed.
	Grams int64
	// DecodeErrors counts malformed grams the receiver rejected.
	DecodeErrors int64
	// Repaired counts grams resent over the UDP repair channel, when reported.
	Repaired int64
	// AFXDPMode is the AF_XDP bind mode obtained ("zerocopy" or "copy"), when reported.
	AFXDPMode string
	// NUMANode is the NUMA node the side ran on, when reported.
	NUMANode *int32
	// CPUs is the CPU list the side ran on, when reported.
	CPUs []int
	// Error is the CLI's error message for a failed run.
	Error string
	// Mode is the CLI's mode ("payload", "offset", "arith", "delta"), when reported.
	Mode string
	// Delta is the "delta" member of a measured delta-mode result.
	Delta *Delta
}

// ParseTransfer parses the result of `pfs send` or `pfs recv`. A result with
// "ok": false needs only "error" (its numbers are read when all are there:
// Measured); a successful one must carry bytes,
// wire_bytes, elapsed_s, user_s, sys_s, integrity and, unless integrity is
// "NA", its checksum ("checksum", or "crc32c" from CLIs that only know CRC32C).
// A delta-mode result ("mode": "delta") may name its verdict "verdict"
// instead of "integrity" (and then leave out "ok": the verdict OK without an
// error is ok); its checksum is "delta"."sha256", and "delta" is required.
func ParseTransfer(msg string) (*Transfer, error) {
	var j transferJSON
	if err := decode(msg, &j); err != nil {
		return nil, err
	}
	delta := val(j.Mode) == modeDelta
	j.verdictNames()
	if j.OK == nil {
		return nil, missing{"ok"}.err("transfer")
	}
	t := &Transfer{OK: *j.OK, Side: val(j.Side), Transport: val(j.Transport), Label: val(j.Label),
		Grams: val(j.Grams), DecodeErrors: val(j.DecodeErrors), Repaired: val(j.Repaired),
		AFXDPMode: val(j.AFXDPMode), NUMANode: j.NUMANode, CPUs: ints(j.CPUs), Mode: val(j.Mode)}
	if j.Error != nil {
		t.Error = *j.Error
	}
	if !t.OK && t.Error == "" {
		return nil, fmt.Errorf("transfer result says ok=false without an error message")
	}
	var m missing
	m.need(j.Bytes != nil, "bytes")
	m.need(j.WireBytes != nil, "wire_bytes")
	m.need(j.ElapsedS != nil, "elapsed_s")
	m.need(j.UserS != nil, "user_s")
	m.need(j.SysS != nil, "sys_s")
	m.need(j.Integrity != nil, "integrity")
	m.need(j.Delta != nil || !delta, "delta")
	if err := m.err("transfer"); err != nil {
		if !t.OK {
			return t, nil // a failure report without numbers
		}
		return nil, err
	}
	if *j.Bytes < 0 || *j.WireBytes < 0 || t.Grams < 0 || t.DecodeErrors < 0 || t.Repaired < 0 {
		return nil, fmt.Errorf("transfer result has a negative counter")
	}
	for name, v := range map[string]float64{"elapsed_s": *j.ElapsedS, "user_s": *j.UserS, "sys_s": *j.SysS} {
		if err := seconds(name, v); err != nil {
			return nil, err
		}
	}
	if *j.Bytes > 0 && *j.ElapsedS <= 0 {
		return nil, fmt.Errorf("transfer result moved %d bytes in elapsed_s=0", *j.Bytes)
	}
	t.Measured = true
	t.Bytes, t.WireBytes, t.ElapsedSeconds = *j.Bytes, *j.WireBytes, *j.ElapsedS
	t.UserSeconds, t.SysSeconds = *j.UserS, *j.SysS
	t.Integrity = strings.ToUpper(*j.Integrity)
	switch t.Integrity {
	case "OK", "MISMATCH", "NA":
	default:
		if !t.OK {
			// A failure's own verdict (e.g. a refusal): no checksum verdict.
			t.Measured, t.Integrity = false, ""
			return t, nil
		}
		return nil, fmt.Errorf("field \"integrity\": %q is not OK, MISMATCH or NA", *j.Integrity)
	}
	if delta {
		return parseDeltaTransfer(t, j.Delta)
	}
	return parseChecksums(t, &j)
}

// verdictNames reads a delta-mode result's "verdict" as "integrity" and,
// when "ok" is absent, the verdict OK without an error as ok.
func (j *transferJSON) verdictNames() {
	if j.Integrity == nil {
		j.Integrity = j.Verdict
	}
	if j.OK == nil && val(j.Mode) == modeDelta && j.Verdict != nil {
		j.OK = ptrTo(*j.Verdict == "OK" && (j.Error == nil || *j.Error == ""))
	}
}

// parseChecksums finishes a measured result of the gram modes: its
// checksum ("checksum", or "crc32c" from CLIs that only know CRC32C) unless
// integrity is NA, and the peer's when reported.
func parseChecksums(t *Transfer, j *transferJSON) (*Transfer, error) {
	sum, peer := j.Checksum, j.PeerChecksum
	name, peerName := "checksum", "peer_checksum"
	if sum == nil {
		sum, peer, name, peerName = j.CRC32C, j.PeerCRC32C, "crc32c", "peer_crc32c"
	}
	if t.Integrity != "NA" {
		if sum == nil {
			return nil, missing{"checksum (or crc32c)"}.err("transfer")
		}
		v, err := hexValue(name, *sum)
		if err != nil {
			return nil, err
		}
		t.Checksum = v
	}
	if peer != nil && *peer != "" {
		v, err := hexValue(peerName, *peer)
		if err != nil {
			return nil, err
		}
		t.PeerChecksum = v
	}
	return t, nil
}

// modeDelta is the CLI's name of mode Delta in "mode".
const modeDelta = "delta"

// parseDeltaTransfer finishes a measured delta-mode result: its "delta"
// member, whose sha256 is the side's checksum, and whose target is the
// effective bytes.
func parseDeltaTransfer(t *Transfer, j *deltaJSON) (*Transfer, error) {
	d, err := parseDelta(j, t.Integrity != "NA")
	if err != nil {
		return nil, err
	}
	if d.TargetBytes != t.Bytes {
		return nil, fmt.Errorf("transfer result: delta.target_bytes %d differs from bytes %d", d.TargetBytes, t.Bytes)
	}
	t.Delta, t.Checksum = d, d.SHA256
	return t, nil
}

func ptrTo[T any](v T) *T { return &v }
