// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestOptionalQuantitiesOmittedWhenZero: an optional quantity a Go client
// leaves unset must not reach the apiserver as "0", which would bypass the
// CRD default and fail validation (the apiserver defaults absent fields only).
func TestOptionalQuantitiesOmittedWhenZero(t *testing.T) {
	cases := map[string]struct {
		in   any
		want string
	}{
		"empty gram":    {GramSpec{}, `{}`},
		"gram set":      {GramSpec{SlabBytes: resource.MustParse("1Mi"), MaxDescriptorLength: resource.MustParse("64Ki")}, `{"slabBytes":"1Mi","maxDescriptorLength":"64Ki"}`},
		"transfer spec": {PfsTransferSpec{Mode: ModePayload}, `{"mode":"Payload","gram":{},"sender":{},"receiver":{}}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := json.Marshal(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(b)); diff != "" {
				t.Errorf("JSON (-want +got):\n%s", diff)
			}
		})
	}
}
