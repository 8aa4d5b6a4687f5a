// SPDX-License-Identifier: Apache-2.0

package schema

// Shape describes a result without its measurements, one line per member
// in the order pfs wrote them: its path and JSON kind ("integer" for a
// number written without a fraction), and for a member whose schema has an
// enum its value ("side string = \"sender\""). Two runs of the same command
// have the same shape; a writer that adds, drops, renames, reorders or
// retypes a member, or changes an enum'd value, changes it. Array items
// give one line per kind ("cpus[] integer").
func (s *Schema) Shape(def string, raw []byte) ([]string, error) {
	d, err := s.Def(def)
	if err != nil {
		return nil, err
	}
	v, err := Parse(raw)
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	s.shape("", v, d, func(line string) {
		if !seen[line] {
			seen[line] = true
			out = append(out, line)
		}
	})
	return out, nil
}

func (s *Schema) shape(path string, v *Value, sub *Schema, emit func(string)) {
	sub = s.pick(v, sub)
	if path != "" {
		line := path + " " + v.Kind
		if sub != nil && len(sub.Enum) > 0 {
			line += " = " + show(v)
		}
		emit(line)
	}
	switch v.Kind {
	case kindObject:
		for _, k := range v.Keys {
			var p *Schema
			if sub != nil {
				p = sub.Properties.Get(k)
			}
			s.shape(join(path, k), v.Fields[k], p, emit)
		}
	case kindArray:
		var items *Schema
		if sub != nil {
			items = sub.Items
		}
		for _, it := range v.Items {
			s.shape(path+"[]", it, items, emit)
		}
	}
}

// pick resolves sub for v: its $ref, and of its oneOf or anyOf the
// alternative v matches. nil when the schema does not describe v.
func (s *Schema) pick(v *Value, sub *Schema) *Schema {
	if sub == nil {
		return nil
	}
	sub, err := s.resolve(sub)
	if err != nil {
		return nil
	}
	for _, alt := range append(append([]*Schema{}, sub.OneOf...), sub.AnyOf...) {
		if len(s.validate("", v, alt)) == 0 {
			return s.pick(v, alt)
		}
	}
	return sub
}
