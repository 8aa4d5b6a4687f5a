// SPDX-License-Identifier: Apache-2.0

package result

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"packetfs.io/operator/internal/result/schema"
)

// TestGeneratedCurrent fails when zz_generated.result.go is not what the
// schema generates (make verify says the same; this says it in go test).
func TestGeneratedCurrent(t *testing.T) {
	s, err := schema.Load(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.GoSource("result", "dataplane/include/pfs/result.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("zz_generated.result.go")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("zz_generated.result.go is stale; run `go generate ./internal/result/...` (make generate):\n%s", diff)
	}
}
