// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Validate checks a result against the definition called def: every
// required member present, no member the schema does not name, every value
// of its type (an integer written with a fraction is not one) and in its
// enum. It returns every violation, each naming its path.
func (s *Schema) Validate(def string, raw []byte) []error {
	d, err := s.Def(def)
	if err != nil {
		return []error{err}
	}
	v, err := Parse(raw)
	if err != nil {
		return []error{fmt.Errorf("not JSON: %v", err)}
	}
	return s.validate("", v, d)
}

func (s *Schema) validate(path string, v *Value, sub *Schema) []error {
	sub, err := s.resolve(sub)
	if err != nil {
		return []error{err}
	}
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", where(path), fmt.Sprintf(format, args...)))
	}
	if len(sub.OneOf) > 0 {
		if n := s.matches(path, v, sub.OneOf); n != 1 {
			fail("matches %d of the %d alternatives of oneOf, not one", n, len(sub.OneOf))
		}
	}
	if len(sub.AnyOf) > 0 && s.matches(path, v, sub.AnyOf) == 0 {
		fail("matches none of the alternatives of anyOf")
	}
	if len(sub.Type) > 0 && !typeOK(sub.Type, v.Kind) {
		fail("is %s, want %s", v.Kind, strings.Join(sub.Type, " or "))
		return errs
	}
	if len(sub.Enum) > 0 && !inEnum(v, sub.Enum) {
		fail("%s is not one of %s", show(v), enumText(sub.Enum))
	}
	if sub.Const != nil {
		var c any
		if err := json.Unmarshal(*sub.Const, &c); err != nil || !v.equal(c) {
			fail("%s is not %s", show(v), *sub.Const)
		}
	}
	switch v.Kind {
	case kindObject:
		errs = append(errs, s.validateObject(path, v, sub)...)
	case kindArray:
		if sub.Items != nil {
			for i, it := range v.Items {
				errs = append(errs, s.validate(fmt.Sprintf("%s[%d]", path, i), it, sub.Items)...)
			}
		}
	}
	return errs
}

func (s *Schema) validateObject(path string, v *Value, sub *Schema) []error {
	var errs []error
	for _, k := range v.Keys {
		p := sub.Properties.Get(k)
		if p == nil {
			if sub.AdditionalProperties != nil && !*sub.AdditionalProperties {
				errs = append(errs, fmt.Errorf("%s: member the schema does not name", where(join(path, k))))
			}
			continue
		}
		errs = append(errs, s.validate(join(path, k), v.Fields[k], p)...)
	}
	required := sub.Required
	if sub.If != nil && sub.Then != nil && len(s.validate(path, v, sub.If)) == 0 {
		required = append(append([]string{}, required...), sub.Then.Required...)
	}
	var missing []string
	for _, r := range required {
		if _, ok := v.Fields[r]; !ok {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("%s: lacks required %s", where(path), strings.Join(missing, ", ")))
	}
	return errs
}

// matches counts the alternatives v validates against.
func (s *Schema) matches(path string, v *Value, alts []*Schema) int {
	n := 0
	for _, a := range alts {
		if len(s.validate(path, v, a)) == 0 {
			n++
		}
	}
	return n
}

func typeOK(t Types, kind string) bool {
	return t.Has(kind) || (kind == kindInteger && t.Has(kindNumber))
}

func inEnum(v *Value, enum []any) bool {
	for _, e := range enum {
		if v.equal(e) {
			return true
		}
	}
	return false
}

func enumText(enum []any) string {
	s := make([]string, 0, len(enum))
	for _, e := range enum {
		b, _ := json.Marshal(e)
		s = append(s, string(b))
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}

func show(v *Value) string {
	if v.Kind == kindNull {
		return kindNull
	}
	b, _ := json.Marshal(v.Scalar)
	return string(b)
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func where(path string) string {
	if path == "" {
		return "the result"
	}
	return path
}
