// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Measured numbers are stored in status as decimal strings: the schema has no
// floats (they do not round-trip exactly through JSON and controller-gen
// refuses them), and a string with a fixed number of digits is what a user
// wants to read in `kubectl get`. These functions are the one place that
// decides how many digits each kind of number gets, so every writer agrees.
// Rates use decimal megabytes: 1 MB = 1,000,000 bytes.

const bytesPerMB = 1e6

// FormatSeconds writes d as decimal seconds with millisecond precision
// ("3.690"). A negative d gives "".
func FormatSeconds(d time.Duration) string {
	if d < 0 {
		return ""
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
}

// FormatMBps writes bytes moved in d as decimal MB/s with one digit after the
// point ("1062.3"). It returns "" when nothing was measured (d <= 0 or bytes
// < 0): a rate over an empty window is not a number to print.
func FormatMBps(bytes int64, d time.Duration) string {
	if d <= 0 || bytes < 0 {
		return ""
	}
	return formatFixed(float64(bytes)/bytesPerMB/d.Seconds(), 1)
}

// FormatMBPerCPUSecond writes bytes per CPU time (user + sys) as decimal MB per
// CPU-second with one digit after the point. It returns "" when cpu <= 0.
func FormatMBPerCPUSecond(bytes int64, cpu time.Duration) string {
	return FormatMBps(bytes, cpu)
}

// FormatRatio writes num/den with two digits after the point ("6.02"), as
// used for CPUpwn. It returns "" when den <= 0 or either value is not finite.
func FormatRatio(num, den float64) string {
	if den <= 0 || num < 0 || math.IsInf(num, 0) || math.IsNaN(num) || math.IsInf(den, 0) || math.IsNaN(den) {
		return ""
	}
	return formatFixed(num/den, 2)
}

// ParseDecimal reads a number written by the Format functions. It rejects
// anything the status schema would reject (signs, exponents, NaN).
func ParseDecimal(s string) (float64, error) {
	if s == "" {
		return 0, fmt.Errorf("empty decimal")
	}
	dot := false
	for i, c := range s {
		switch {
		case c >= '0' && c <= '9':
		case c == '.' && !dot && i > 0 && i < len(s)-1:
			dot = true
		default:
			return 0, fmt.Errorf("invalid decimal %q: want digits with an optional fractional part", s)
		}
	}
	return strconv.ParseFloat(s, 64)
}

func formatFixed(v float64, digits int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return ""
	}
	return strconv.FormatFloat(v, 'f', digits, 64)
}
