// SPDX-License-Identifier: Apache-2.0

// Package schema reads the pfs result schema
// (dataplane/include/pfs/result.schema.json), checks a pfs result against
// it, and writes the Go structs package result decodes results into.
//
// It understands the part of JSON Schema (draft 2020-12) the file uses and
// refuses any other keyword, so a schema edit this code would silently
// ignore fails loudly instead: type (one or a list), properties (in their
// order), required, additionalProperties false, items, enum, const, oneOf,
// anyOf, if/then, $ref to #/$defs/..., format int32, description; and
// x-operator-reads, the members package result decodes.
package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Schema is one (sub)schema of the subset this package understands.
type Schema struct {
	Meta        string           `json:"$schema,omitempty"`
	ID          string           `json:"$id,omitempty"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Ref         string           `json:"$ref,omitempty"`
	Type        Types            `json:"type,omitempty"`
	Format      string           `json:"format,omitempty"`
	Enum        []any            `json:"enum,omitempty"`
	Const       *json.RawMessage `json:"const,omitempty"`
	Properties  Properties       `json:"properties,omitempty"`
	Required    []string         `json:"required,omitempty"`
	// AdditionalProperties must be false on every object: a result carries
	// only what the schema names.
	AdditionalProperties *bool      `json:"additionalProperties,omitempty"`
	Items                *Schema    `json:"items,omitempty"`
	OneOf                []*Schema  `json:"oneOf,omitempty"`
	AnyOf                []*Schema  `json:"anyOf,omitempty"`
	If                   *Schema    `json:"if,omitempty"`
	Then                 *Schema    `json:"then,omitempty"`
	Defs                 Properties `json:"$defs,omitempty"`
	// Reads lists the members of an object the operator decodes: the
	// generated struct has those fields and no others, so a member the
	// operator ignores cannot fail its parse.
	Reads []string `json:"x-operator-reads,omitempty"`
}

// Types is "type": one name or a list of them.
type Types []string

// UnmarshalJSON reads a string or a list of strings.
func (t *Types) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*t = Types{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("type: %v", err)
	}
	*t = many
	return nil
}

// Has says whether the type list names t.
func (t Types) Has(name string) bool {
	for _, n := range t {
		if n == name {
			return true
		}
	}
	return false
}

// Property is one named member, in the order the file lists them.
type Property struct {
	Name   string
	Schema *Schema
}

// Properties keeps the order of "properties" and "$defs": the generated
// structs and the error messages follow the file.
type Properties []Property

// UnmarshalJSON reads an object keeping its order; a name given twice is an error.
func (p *Properties) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fmt.Errorf("properties: not an object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name := tok.(string)
		if seen[name] {
			return fmt.Errorf("property %q is given twice", name)
		}
		seen[name] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		s, err := parse(raw)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		*p = append(*p, Property{Name: name, Schema: s})
	}
	_, err := dec.Token()
	return err
}

// Get returns the member called name, or nil.
func (p Properties) Get(name string) *Schema {
	for _, x := range p {
		if x.Name == name {
			return x.Schema
		}
	}
	return nil
}

// parse decodes one schema strictly: a keyword outside the subset is an error.
func parse(raw []byte) (*Schema, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	s := &Schema{}
	if err := dec.Decode(s); err != nil {
		return nil, err
	}
	return s, nil
}

// Load reads and checks the schema file.
func Load(path string) (*Schema, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Def returns the definition called name.
func (s *Schema) Def(name string) (*Schema, error) {
	d := s.Defs.Get(name)
	if d == nil {
		return nil, fmt.Errorf("the schema defines no %q", name)
	}
	return d, nil
}

// resolve follows a $ref of the form #/$defs/NAME.
func (s *Schema) resolve(sub *Schema) (*Schema, error) {
	if sub.Ref == "" {
		return sub, nil
	}
	name, ok := strings.CutPrefix(sub.Ref, "#/$defs/")
	if !ok {
		return nil, fmt.Errorf("$ref %q is not #/$defs/NAME", sub.Ref)
	}
	return s.Def(name)
}

var knownTypes = map[string]bool{kindObject: true, kindArray: true, kindString: true, kindInteger: true, kindNumber: true, kindBoolean: true, kindNull: true}

// check walks the whole schema once: every $ref resolves, every type is
// known, every object is closed and every required name is a property.
func (s *Schema) check() error {
	for _, d := range s.Defs {
		if err := s.checkSub(d.Name, d.Schema); err != nil {
			return err
		}
	}
	for _, a := range s.AnyOf {
		if _, err := s.resolve(a); err != nil {
			return err
		}
	}
	return nil
}

func (s *Schema) checkSub(path string, sub *Schema) error {
	if _, err := s.resolve(sub); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, t := range sub.Type {
		if !knownTypes[t] {
			return fmt.Errorf("%s: unknown type %q", path, t)
		}
	}
	if sub.Format != "" && sub.Format != "int32" {
		return fmt.Errorf("%s: unknown format %q", path, sub.Format)
	}
	if sub.Type.Has(kindObject) {
		if sub.AdditionalProperties == nil || *sub.AdditionalProperties {
			return fmt.Errorf("%s: an object must say additionalProperties: false", path)
		}
		for _, r := range sub.Required {
			if sub.Properties.Get(r) == nil {
				return fmt.Errorf("%s: required %q is not a property", path, r)
			}
		}
	}
	for _, r := range sub.Reads {
		p := sub.Properties.Get(r)
		if p == nil {
			return fmt.Errorf("%s: x-operator-reads names %q, which is not a property", path, r)
		}
		if err := s.readable(p); err != nil {
			return fmt.Errorf("%s.%s: %w", path, r, err)
		}
	}
	if sub.Then != nil {
		for _, r := range sub.Then.Required {
			if sub.Properties.Get(r) == nil {
				return fmt.Errorf("%s: then requires %q, which is not a property", path, r)
			}
		}
	}
	for _, p := range sub.Properties {
		if err := s.checkSub(path+"."+p.Name, p.Schema); err != nil {
			return err
		}
	}
	for _, alt := range append(append([]*Schema{}, sub.OneOf...), sub.AnyOf...) {
		if err := s.checkSub(path, alt); err != nil {
			return err
		}
	}
	if sub.Items != nil {
		return s.checkSub(path+"[]", sub.Items)
	}
	return nil
}

// readable checks that an object the operator reads says what of it it reads.
func (s *Schema) readable(p *Schema) error {
	for _, alt := range append([]*Schema{p}, p.OneOf...) {
		if alt.Ref == "" {
			continue
		}
		d, err := s.resolve(alt)
		if err != nil {
			return err
		}
		if len(d.Reads) == 0 {
			return fmt.Errorf("the operator reads %s, which has no x-operator-reads", alt.Ref)
		}
	}
	return nil
}
