// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The JSON kinds, as JSON Schema names them in "type".
const (
	kindObject  = "object"
	kindArray   = "array"
	kindString  = "string"
	kindInteger = "integer"
	kindNumber  = "number"
	kindBoolean = "boolean"
	kindNull    = "null"
)

// Value is a decoded JSON value that keeps what encoding/json drops: the
// order of an object's members, a member given twice, and whether a number
// was written as an integer ("7") or not ("7.000").
type Value struct {
	// Kind is object, array, string, integer, number, boolean or null.
	Kind   string
	Keys   []string          // object: member names in order
	Fields map[string]*Value // object
	Items  []*Value          // array
	Scalar any               // string, json.Number, bool or nil
}

// Parse decodes one JSON object or value; trailing data is an error.
func Parse(raw []byte) (*Value, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

func parseValue(dec *json.Decoder) (*Value, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			return parseObject(dec)
		}
		if t == '[' {
			return parseArray(dec)
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case string:
		return &Value{Kind: kindString, Scalar: t}, nil
	case json.Number:
		kind := kindInteger
		if strings.ContainsAny(t.String(), ".eE") {
			kind = kindNumber
		}
		return &Value{Kind: kind, Scalar: t}, nil
	case bool:
		return &Value{Kind: kindBoolean, Scalar: t}, nil
	case nil:
		return &Value{Kind: kindNull}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

func parseObject(dec *json.Decoder) (*Value, error) {
	v := &Value{Kind: kindObject, Fields: map[string]*Value{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k := tok.(string)
		if _, dup := v.Fields[k]; dup {
			return nil, fmt.Errorf("member %q is given twice", k)
		}
		m, err := parseValue(dec)
		if err != nil {
			return nil, err
		}
		v.Keys = append(v.Keys, k)
		v.Fields[k] = m
	}
	_, err := dec.Token()
	return v, err
}

func parseArray(dec *json.Decoder) (*Value, error) {
	v := &Value{Kind: kindArray}
	for dec.More() {
		m, err := parseValue(dec)
		if err != nil {
			return nil, err
		}
		v.Items = append(v.Items, m)
	}
	_, err := dec.Token()
	return v, err
}

// equal compares a scalar Value with a value of an enum or const.
func (v *Value) equal(want any) bool {
	switch w := want.(type) {
	case nil:
		return v.Kind == kindNull
	case string:
		return v.Kind == kindString && v.Scalar == w
	case bool:
		return v.Kind == kindBoolean && v.Scalar == w
	case float64:
		n, ok := v.Scalar.(json.Number)
		f, err := n.Float64()
		return ok && err == nil && f == w
	}
	return false
}
