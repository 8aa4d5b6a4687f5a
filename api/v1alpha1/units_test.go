// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"math"
	"regexp"
	"testing"
	"time"
)

// decimalPattern is the status schema's pattern for measured numbers; every
// non-empty string the Format functions produce must match it.
var decimalPattern = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

func TestFormat(t *testing.T) {
	cases := map[string]struct {
		got  string
		want string
	}{
		"seconds":                {FormatSeconds(3690 * time.Millisecond), "3.690"},
		"seconds rounds to ms":   {FormatSeconds(1234567 * time.Microsecond), "1.235"},
		"seconds zero":           {FormatSeconds(0), "0.000"},
		"seconds negative":       {FormatSeconds(-time.Second), ""},
		"MB/s decimal megabytes": {FormatMBps(1_000_000_000, time.Second), "1000.0"},
		"MB/s from a GiB":        {FormatMBps(1<<30, 10660*time.Millisecond), "100.7"},
		"MB/s empty window":      {FormatMBps(1<<30, 0), ""},
		"MB/s negative bytes":    {FormatMBps(-1, time.Second), ""},
		"MB/s nothing moved":     {FormatMBps(0, time.Second), "0.0"},
		"MB per CPU-second":      {FormatMBPerCPUSecond(1<<30, 5290*time.Millisecond), "203.0"},
		"MB per CPU-second zero": {FormatMBPerCPUSecond(1<<30, 0), ""},
		"ratio":                  {FormatRatio(15600, 2580), "6.05"},
		"ratio below one":        {FormatRatio(1, 3), "0.33"},
		"ratio zero denominator": {FormatRatio(1, 0), ""},
		"ratio NaN":              {FormatRatio(math.NaN(), 1), ""},
		"ratio infinite":         {FormatRatio(math.Inf(1), 1), ""},
		"ratio negative":         {FormatRatio(-1, 1), ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
			if tc.got != "" && !decimalPattern.MatchString(tc.got) {
				t.Errorf("%q does not match the status schema pattern %s", tc.got, decimalPattern)
			}
		})
	}
}

func TestParseDecimal(t *testing.T) {
	good := map[string]float64{"0": 0, "1062.3": 1062.3, "0.001": 0.001, "42": 42}
	for s, want := range good {
		got, err := ParseDecimal(s)
		if err != nil || got != want {
			t.Errorf("ParseDecimal(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "-1", "+1", "1e3", ".5", "5.", "1.2.3", "NaN", "Inf", "1,5", " 1"} {
		if v, err := ParseDecimal(s); err == nil {
			t.Errorf("ParseDecimal(%q) = %v, want an error", s, v)
		}
		if decimalPattern.MatchString(s) {
			t.Errorf("%q matches the schema pattern but ParseDecimal rejects it", s)
		}
	}
	// What the Format functions write, ParseDecimal reads back.
	for _, s := range []string{FormatSeconds(time.Hour), FormatMBps(123456789, time.Second), FormatRatio(2, 3)} {
		if _, err := ParseDecimal(s); err != nil {
			t.Errorf("ParseDecimal(%q): %v", s, err)
		}
	}
}
