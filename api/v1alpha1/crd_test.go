// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// These tests read the CRDs generated into config/crd/bases (make manifests)
// and hold them to the house style: what `kubectl explain` and `kubectl get`
// show is part of the API.

func loadCRD(t *testing.T, plural string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "pfs.packetfs.io_"+plural+".yaml"))
	if err != nil {
		t.Fatalf("%v (run make manifests)", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

func TestCRDShape(t *testing.T) {
	cases := map[string]struct {
		kind, short string
		columns     []string // default columns, in order
	}{
		"pfsblobs":     {"PfsBlob", "pblob", []string{"Source", "Size", "Ready", "Progress", "Status", "MB/s", "Digest", "Age"}},
		"pfstransfers": {"PfsTransfer", "pxfer", []string{"Mode", "Transport", "Phase", "Progress", "MB/s", "MB/CPU-s", "Integrity", "Age"}},
		"pcorejobs":    {"PcoreJob", "pcj", []string{"Op", "Pcores", "Phase", "MB/s", "CPUpwn", "Age"}},
	}
	for plural, tc := range cases {
		t.Run(plural, func(t *testing.T) {
			crd := loadCRD(t, plural)
			if crd.Spec.Group != GroupVersion.Group || crd.Spec.Names.Kind != tc.kind {
				t.Errorf("group/kind = %s/%s", crd.Spec.Group, crd.Spec.Names.Kind)
			}
			if crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
				t.Errorf("scope = %s, want Namespaced", crd.Spec.Scope)
			}
			if !slices.Equal(crd.Spec.Names.ShortNames, []string{tc.short}) {
				t.Errorf("shortNames = %v, want [%s]", crd.Spec.Names.ShortNames, tc.short)
			}
			if !slices.Contains(crd.Spec.Names.Categories, "packetfs") {
				t.Errorf("categories = %v, want packetfs", crd.Spec.Names.Categories)
			}
			if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != GroupVersion.Version {
				t.Fatalf("versions = %+v, want only %s", crd.Spec.Versions, GroupVersion.Version)
			}
			v := crd.Spec.Versions[0]
			if v.Subresources == nil || v.Subresources.Status == nil {
				t.Error("no status subresource")
			}
			var cols []string
			for _, c := range v.AdditionalPrinterColumns {
				if c.Priority == 0 {
					cols = append(cols, c.Name)
				}
			}
			if !slices.Equal(cols, tc.columns) {
				t.Errorf("default printer columns = %v, want %v", cols, tc.columns)
			}
		})
	}
}

// TestCRDFieldDocs checks that every spec and status field has a description
// that starts with its JSON name, so `kubectl explain` always says what a
// field is.
func TestCRDFieldDocs(t *testing.T) {
	for _, plural := range []string{"pfsblobs", "pfstransfers", "pcorejobs"} {
		t.Run(plural, func(t *testing.T) {
			root := loadCRD(t, plural).Spec.Versions[0].Schema.OpenAPIV3Schema
			checked := 0
			for _, top := range []string{"spec", "status"} {
				s, ok := root.Properties[top]
				if !ok {
					t.Fatalf("no %s in the schema", top)
				}
				checked += checkDocs(t, top, s)
			}
			if checked < 20 {
				t.Errorf("only %d fields checked: is the schema empty?", checked)
			}
		})
	}
}

func checkDocs(t *testing.T, path string, s apiextensionsv1.JSONSchemaProps) int {
	t.Helper()
	n := 0
	for name, p := range s.Properties {
		n++
		field := path + "." + name
		// A toleration's fields (key, value, ...) are Kubernetes' own type,
		// whose docs start with the Go name ("Key is"); ours stay strict.
		goName := strings.Contains(path, ".tolerations[]") && strings.HasPrefix(p.Description, strings.ToUpper(name[:1])+name[1:]+" ")
		if !strings.HasPrefix(p.Description, name+" ") && !goName {
			t.Errorf("%s: description %q does not start with %q", field, p.Description, name)
		}
		n += checkDocs(t, field, p)
	}
	if s.Items != nil && s.Items.Schema != nil {
		n += checkDocs(t, path+"[]", *s.Items.Schema)
	}
	return n
}
