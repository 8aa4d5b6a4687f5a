// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestGrants(t *testing.T) {
	cases := map[string]struct {
		access *BlobAccess
		ns     string
		want   bool
	}{
		"own namespace without access":      {nil, "models", true},
		"own namespace with other grants":   {&BlobAccess{Namespaces: []string{"serving"}}, "models", true},
		"other namespace without access":    {nil, "serving", false},
		"other namespace with empty list":   {&BlobAccess{}, "serving", false},
		"other namespace granted":           {&BlobAccess{Namespaces: []string{"a", "serving"}}, "serving", true},
		"other namespace not granted":       {&BlobAccess{Namespaces: []string{"a", "b"}}, "serving", false},
		"every namespace":                   {&BlobAccess{Namespaces: []string{AllNamespaces}}, "serving", true},
		"a prefix of a granted name is not": {&BlobAccess{Namespaces: []string{"serving-prod"}}, "serving", false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := &PfsBlob{ObjectMeta: metav1.ObjectMeta{Namespace: "models", Name: "llama"}, Spec: PfsBlobSpec{Access: tc.access}}
			if got := b.Grants(tc.ns); got != tc.want {
				t.Errorf("Grants(%q) = %v, want %v", tc.ns, got, tc.want)
			}
		})
	}
}
