// SPDX-License-Identifier: Apache-2.0

// Package result parses the JSON results the pfs CLI writes to
// /dev/termination-log (at most 4 KiB; the kubelet truncates longer
// messages). The structs they are decoded into (zz_generated.result.go) are
// generated from the result schema, dataplane/include/pfs/result.schema.json,
// the one description of every result; the golden test checks the current
// pfs against it. Parsers are tolerant of fields they do not know, so a newer
// data plane keeps working, and strict on the fields the operator reports: a
// missing, mistyped or out-of-range required field is an error naming the
// field, never a zero that would be shown as a measurement.
package result

//go:generate go run ./schema/resultgen -schema ../../dataplane/include/pfs/result.schema.json -name dataplane/include/pfs/result.schema.json -out zz_generated.result.go

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// MaxMessageBytes is the kubelet's limit on a termination message.
const MaxMessageBytes = 4096

// ErrEmpty is returned for an empty termination message.
var ErrEmpty = errors.New("termination message is empty")

// decode unmarshals msg into v, describing truncation and syntax errors so a
// user can tell a cut-off message from a malformed one.
func decode(msg string, v any) error {
	msg = strings.TrimSpace(msg)
	if msg == "" {
		return ErrEmpty
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(msg)))
	if err := dec.Decode(v); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.Is(err, io.ErrUnexpectedEOF):
			return fmt.Errorf("termination message is truncated JSON (%d bytes; the kubelet keeps at most %d)", len(msg), MaxMessageBytes)
		case errors.As(err, &syn):
			return fmt.Errorf("termination message is not valid JSON at byte %d: %v", syn.Offset, err)
		case errors.As(err, &typ):
			return fmt.Errorf("termination message field %q has the wrong type: got JSON %s, want %s", typ.Field, typ.Value, typ.Type)
		default:
			return fmt.Errorf("termination message is not valid JSON: %v", err)
		}
	}
	if dec.More() {
		return errors.New("termination message has data after the JSON object")
	}
	return nil
}

// missing collects the names of required fields that are absent.
type missing []string

func (m *missing) need(ok bool, name string) {
	if !ok {
		*m = append(*m, name)
	}
}

func (m missing) err(what string) error {
	if len(m) == 0 {
		return nil
	}
	return fmt.Errorf("%s result lacks required field(s): %s", what, strings.Join(m, ", "))
}

// maxHexDigits bounds checksums and fingerprints: 64 bits, as the status
// schema wants.
const maxHexDigits = 16

// hexValue strips "0x" from a checksum or fingerprint and checks it is
// 1..maxHexDigits lower-case hex digits.
func hexValue(field, s string) (string, error) {
	v := strings.TrimPrefix(s, "0x")
	if v == "" || len(v) > maxHexDigits {
		return "", fmt.Errorf("field %q: %q is not 1 to %d hex digits", field, s, maxHexDigits)
	}
	for _, c := range v {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", fmt.Errorf("field %q: %q is not lower-case hex", field, s)
		}
	}
	return v, nil
}

// seconds checks a duration in seconds is finite and not negative.
func seconds(field string, v float64) error {
	if v < 0 || v != v || v > 1e9 {
		return fmt.Errorf("field %q: %v is not a number of seconds", field, v)
	}
	return nil
}

// val reads an optional member: its value, or the zero value when absent
// or null.
func val[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// ints converts a CPU list; nil stays nil and [] stays empty.
func ints(v []int64) []int {
	if v == nil {
		return nil
	}
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}
