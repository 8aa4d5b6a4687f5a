// SPDX-License-Identifier: Apache-2.0

// Package api tests the PacketFS API as the apiserver serves it: the CRDs
// from config/crd/bases installed in a real kube-apiserver (envtest), their
// OpenAPI and CEL validation, defaulting, the samples, and what kubectl shows.
package api

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"packetfs.io/operator/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// testContext bounds each test's calls so a stuck apiserver fails the test.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newNamespace gives a test its own namespace.
func newNamespace(t *testing.T, ctx context.Context) string {
	t.Helper()
	ns, err := env.CreateNamespace(ctx, "pfs")
	if err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return ns
}

// object builds an unstructured PacketFS object from a YAML spec, so a test
// can send exactly what a user would write, including wrong types and
// missing fields that typed Go structs cannot express.
func object(t *testing.T, kind, namespace, name, specYAML string) *unstructured.Unstructured {
	t.Helper()
	var spec map[string]any
	if err := yaml.Unmarshal([]byte(specYAML), &spec); err != nil {
		t.Fatalf("bad test spec YAML: %v", err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "pfs.packetfs.io/v1alpha1",
		"kind":       kind,
		"metadata":   map[string]any{"name": name, "namespace": namespace},
	}}
	if spec != nil {
		u.Object["spec"] = spec
	}
	return u
}
