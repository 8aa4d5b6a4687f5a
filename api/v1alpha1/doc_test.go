// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestExportedNamesDocumented parses this package and checks that every
// exported type, constant, variable and function has a doc comment that
// starts with its name: the API is read by people who never open the code.
func TestExportedNamesDocumented(t *testing.T) {
	files := parsePackage(t)
	checked := 0
	for name, f := range files {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() {
					checked++
					checkDoc(t, name, d.Name.Name, d.Doc)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							checked++
							doc := s.Doc
							if doc == nil {
								doc = d.Doc
							}
							checkDoc(t, name, s.Name.Name, doc)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								checked++
								doc := s.Doc
								if doc == nil && len(d.Specs) == 1 {
									doc = d.Doc
								}
								checkDoc(t, name, n.Name, doc)
							}
						}
					}
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d exported names checked: did parsing find the package?", checked)
	}
}

func checkDoc(t *testing.T, file, name string, doc *ast.CommentGroup) {
	t.Helper()
	if doc == nil || !strings.HasPrefix(doc.Text(), name+" ") {
		t.Errorf("%s: %s has no doc comment starting with %q", file, name, name)
	}
}

// conditionValue is the pattern metav1.Condition enforces on reasons; types
// follow it too.
var conditionValue = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)

// TestConditionConstants checks the condition types and reasons in
// conditions.go: CamelCase values the apiserver accepts, one constant per
// value, and the constant named after its value.
func TestConditionConstants(t *testing.T) {
	f := parsePackage(t)["conditions.go"]
	if f == nil {
		t.Fatal("conditions.go not found")
	}
	seen := map[string]string{}
	n := 0
	for _, decl := range f.Decls {
		d, ok := decl.(*ast.GenDecl)
		if !ok || d.Tok != token.CONST {
			continue
		}
		for _, spec := range d.Specs {
			s := spec.(*ast.ValueSpec)
			for i, id := range s.Names {
				lit, ok := s.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Errorf("%s is not a string literal", id.Name)
					continue
				}
				v, _ := strconv.Unquote(lit.Value)
				n++
				if !conditionValue.MatchString(v) {
					t.Errorf("%s = %q is not CamelCase", id.Name, v)
				}
				if prev, dup := seen[v]; dup && isType(prev) == isType(id.Name) {
					t.Errorf("%s and %s both have the value %q", prev, id.Name, v)
				}
				seen[v] = id.Name
				trimmed := strings.TrimPrefix(strings.TrimPrefix(id.Name, "Condition"), "Reason")
				if trimmed != v {
					t.Errorf("%s = %q: name a constant after its value", id.Name, v)
				}
			}
		}
	}
	if n < 25 {
		t.Errorf("only %d condition constants found", n)
	}
}

func isType(name string) bool { return strings.HasPrefix(name, "Condition") }

func parsePackage(t *testing.T) map[string]*ast.File {
	t.Helper()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") || strings.HasPrefix(p, "zz_generated") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files[p] = f
	}
	return files
}

// TestFieldMarkers checks every field of the API structs: a doc comment that
// starts with its JSON name and an explicit +required or +optional marker.
// (Embedded metadata and list fields follow the Kubernetes conventions.)
func TestFieldMarkers(t *testing.T) {
	checked := 0
	for file, f := range parsePackage(t) {
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok || strings.HasSuffix(ts.Name.Name, "List") {
				return false
			}
			for _, field := range st.Fields.List {
				if field.Tag == nil || len(field.Names) == 0 {
					continue // embedded TypeMeta, ObjectMeta, Placement
				}
				tag, _ := strconv.Unquote(field.Tag.Value)
				jsonName := strings.Split(reflectTag(tag, "json"), ",")[0]
				if jsonName == "" || jsonName == "-" {
					continue
				}
				checked++
				where := file + ": " + ts.Name.Name + "." + field.Names[0].Name
				text := ""
				if field.Doc != nil {
					text = field.Doc.Text()
				}
				all := ""
				if field.Doc != nil {
					for _, c := range field.Doc.List {
						all += c.Text + "\n"
					}
				}
				if !strings.HasPrefix(text, jsonName+" ") {
					t.Errorf("%s: doc comment does not start with its JSON name %q", where, jsonName)
				}
				if !strings.Contains(all, "+optional") && !strings.Contains(all, "+required") {
					t.Errorf("%s: neither +optional nor +required", where)
				}
			}
			return false
		})
	}
	if checked < 80 {
		t.Errorf("only %d fields checked", checked)
	}
}

// reflectTag reads one key of a struct tag without reflection.
func reflectTag(tag, key string) string {
	for _, part := range strings.Fields(tag) {
		if v, ok := strings.CutPrefix(part, key+":"); ok {
			s, _ := strconv.Unquote(v)
			return s
		}
	}
	return ""
}
