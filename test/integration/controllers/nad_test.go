// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// createNAD creates an empty NetworkAttachmentDefinition (the test
// environment installs a stand-in CRD, test/testenv/crds): the operator
// checks that a transfer's networks exist before creating its pods.
func createNAD(t *testing.T, ctx context.Context, ns, name string) {
	t.Helper()
	nad := &unstructured.Unstructured{}
	nad.SetGroupVersionKind(schema.GroupVersionKind{Group: "k8s.cni.cncf.io", Version: "v1", Kind: "NetworkAttachmentDefinition"})
	nad.SetNamespace(ns)
	nad.SetName(name)
	if err := env.Client.Create(ctx, nad); err != nil {
		t.Fatalf("NetworkAttachmentDefinition %s/%s: %v", ns, name, err)
	}
}
