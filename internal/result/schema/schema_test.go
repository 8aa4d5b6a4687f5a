// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testSchema has one of each construct the result schema uses.
const testSchema = `{
  "$defs": {
    "top": {
      "type": "object", "additionalProperties": false,
      "x-operator-reads": ["ok", "n", "side", "sub", "alt"],
      "required": ["ok", "n"],
      "if": {"properties": {"ok": {"const": true}}},
      "then": {"required": ["side"]},
      "properties": {
        "ok": {"type": "boolean", "description": "Verdict."},
        "n": {"type": "integer", "description": "A count."},
        "f": {"type": "number", "description": "A time."},
        "side": {"type": ["string", "null"], "enum": ["a", "b", null], "description": "Which."},
        "sub": {"$ref": "#/$defs/sub", "description": "Nested."},
        "alt": {"oneOf": [{"type": "array", "items": {"type": "number"}}, {"$ref": "#/$defs/sub"}], "description": "Either."},
        "list": {"type": "array", "items": {"type": "integer", "format": "int32"}, "description": "CPUs."}
      }
    },
    "sub": {
      "type": "object", "additionalProperties": false, "x-operator-reads": ["x"],
      "required": ["x"],
      "properties": {"x": {"type": "integer", "description": "X."}}
    }
  }
}`

func load(t *testing.T, text string) *Schema {
	t.Helper()
	file := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestValidate(t *testing.T) {
	s := load(t, testSchema)
	tests := map[string]struct {
		msg  string
		want []string // substrings of the errors, in order
	}{
		"valid":                      {msg: `{"ok":true,"n":1,"f":0.5,"side":"a","sub":{"x":2},"alt":[1.5,2],"list":[0,1]}`},
		"a failure needs no side":    {msg: `{"ok":false,"n":0}`},
		"a number may be integral":   {msg: `{"ok":false,"n":0,"f":1}`},
		"null in the enum":           {msg: `{"ok":true,"n":0,"side":null}`},
		"the other oneOf":            {msg: `{"ok":false,"n":0,"alt":{"x":1}}`},
		"missing required":           {msg: `{"ok":true}`, want: []string{"the result: lacks required n, side"}},
		"a member the schema lacks":  {msg: `{"ok":false,"n":0,"extra":1}`, want: []string{"extra: member the schema does not name"}},
		"nested member unknown":      {msg: `{"ok":false,"n":0,"sub":{"x":1,"y":2}}`, want: []string{"sub.y: member the schema does not name"}},
		"nested required":            {msg: `{"ok":false,"n":0,"sub":{}}`, want: []string{"sub: lacks required x"}},
		"integer with a fraction":    {msg: `{"ok":false,"n":1.0}`, want: []string{"n: is number, want integer"}},
		"wrong type":                 {msg: `{"ok":"yes","n":1}`, want: []string{"ok: is string, want boolean"}},
		"not in the enum":            {msg: `{"ok":true,"n":1,"side":"c"}`, want: []string{`side: "c" is not one of "a", "b", null`}},
		"array item of another type": {msg: `{"ok":false,"n":0,"list":[1,"2"]}`, want: []string{"list[1]: is string, want integer"}},
		"neither alternative":        {msg: `{"ok":false,"n":0,"alt":"x"}`, want: []string{"alt: matches 0 of the 2 alternatives"}},
		"member twice":               {msg: `{"ok":false,"n":0,"n":1}`, want: []string{`member "n" is given twice`}},
		"trailing data":              {msg: `{"ok":false,"n":0} {}`, want: []string{"data after the JSON value"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			errs := s.Validate("top", []byte(tc.msg))
			if len(errs) != len(tc.want) {
				t.Fatalf("errors %v, want %d containing %q", errs, len(tc.want), tc.want)
			}
			for i, err := range errs {
				if !strings.Contains(err.Error(), tc.want[i]) {
					t.Errorf("error %q does not contain %q", err, tc.want[i])
				}
			}
		})
	}
}

func TestShape(t *testing.T) {
	s := load(t, testSchema)
	got, err := s.Shape("top", []byte(`{"n":3,"ok":true,"side":"b","alt":{"x":1},"list":[4,5],"f":0.25}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"n integer", "ok boolean", `side string = "b"`, "alt object", "alt.x integer",
		"list array", "list[] integer", "f number"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestLoadRefuses: a schema this package would misread is an error, not a
// weaker check.
func TestLoadRefuses(t *testing.T) {
	obj := `"type": "object", "additionalProperties": false, "properties": {"a": {"type": "integer"}}`
	tests := map[string]struct{ schema, want string }{
		"an unknown keyword":    {`{"$defs": {"t": {` + obj + `, "minimum": 0}}}`, `unknown field "minimum"`},
		"an open object":        {`{"$defs": {"t": {"type": "object", "properties": {}}}}`, "additionalProperties: false"},
		"required not a member": {`{"$defs": {"t": {` + obj + `, "required": ["b"]}}}`, `required "b" is not a property`},
		"a dangling $ref":       {`{"$defs": {"t": {"type": "object", "additionalProperties": false, "properties": {"a": {"$ref": "#/$defs/u"}}}}}`, `defines no "u"`},
		"an unknown type":       {`{"$defs": {"t": {"type": "object", "additionalProperties": false, "properties": {"a": {"type": "int"}}}}}`, `unknown type "int"`},
		"reads an unread object": {`{"$defs": {"t": {"type": "object", "additionalProperties": false, "x-operator-reads": ["a"], "properties": {"a": {"$ref": "#/$defs/u"}}},
			"u": {` + obj + `}}}`, "has no x-operator-reads"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "s.json")
			if err := os.WriteFile(file, []byte(tc.schema), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(file)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestGoSource(t *testing.T) {
	src, err := load(t, testSchema).GoSource("p", "s.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"// Code generated by resultgen from s.json. DO NOT EDIT.",
		"type topJSON struct {",
		"OK *bool `json:\"ok\"`",
		"N *int64 `json:\"n\"`",
		"Side *string `json:\"side\"`",
		"Sub *subJSON `json:\"sub\"`",
		"Alt json.RawMessage `json:\"alt\"`",
		"type subJSON struct {",
	} {
		if !strings.Contains(string(src), want) {
			t.Errorf("generated source lacks %q:\n%s", want, src)
		}
	}
	// Members the operator does not read get no field.
	for _, absent := range []string{"`json:\"f\"`", "`json:\"list\"`"} {
		if strings.Contains(string(src), absent) {
			t.Errorf("generated source has %s, which x-operator-reads does not list", absent)
		}
	}
}

func TestGoName(t *testing.T) {
	for in, want := range map[string]string{
		"ok": "OK", "elapsed_s": "ElapsedS", "peer_crc32c": "PeerCRC32C", "MB_per_cpu_s": "MBPerCPUS",
		"numa_node": "NUMANode", "afxdp_mode": "AFXDPMode", "o_direct_why": "ODirectWhy", "CPUpwn": "CPUpwn",
		"zstd_ref": "ZstdRef", "cpus": "CPUs", "t0_unix": "T0Unix", "naks": "NAKs", "read_mbps": "ReadMBps",
	} {
		if got := GoName(in); got != want {
			t.Errorf("GoName(%q) = %q, want %q", in, got, want)
		}
	}
}
