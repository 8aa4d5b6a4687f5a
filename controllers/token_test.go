// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"bytes"
	"testing"
)

// TestEncodeToken: the token the data plane reads is text: no NUL (a C
// string ends there) and no trailing whitespace (pfs cuts it), whatever the
// random bytes were.
func TestEncodeToken(t *testing.T) {
	cases := map[string]struct {
		raw  []byte
		want string
	}{
		"NUL inside":          {[]byte{0x8a, 0x00, 0x90}, "8a0090"},
		"ends in a newline":   {[]byte{0x41, 0x0a}, "410a"},
		"ends in a space":     {[]byte{0x20}, "20"},
		"32 bytes, 64 digits": {bytes.Repeat([]byte{0xff}, tokenBytes), string(bytes.Repeat([]byte("ff"), tokenBytes))},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := string(encodeToken(tc.raw)); got != tc.want {
				t.Errorf("encodeToken(%x) = %q, want %q", tc.raw, got, tc.want)
			}
		})
	}
}
