// SPDX-License-Identifier: Apache-2.0

package api

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// TestTypedUpdateOfUserSpelling guards the immutability rules against a trap:
// a user writes a quantity as 1073741824 or 1024Mi, the operator reads the
// object into Go types and writes it back (to add a finalizer or a label),
// and the Go client re-spells every quantity canonically ("1Gi"). The spec
// did not change, so the update must be accepted.
func TestTypedUpdateOfUserSpelling(t *testing.T) {
	cases := map[string]struct {
		kind  string
		spec  string
		typed client.Object
	}{
		"blob size as an integer": {blob, `size: 1073741824`, &pfsv1alpha1.PfsBlob{}},
		"blob size in Mi":         {blob, `size: 1024Mi`, &pfsv1alpha1.PfsBlob{}},
		"transfer quantities": {xfer, "blobRef: {name: b}\nmode: Payload\nrange: {offset: 0, length: 2048Mi}\ntotalBytes: 1099511627776\ngram: {slabBytes: 1024Ki, maxDescriptorLength: 262144}",
			&pfsv1alpha1.PfsTransfer{}},
		"transfer scratch range": {xfer, "mode: Payload\nrange: {length: 67108864}", &pfsv1alpha1.PfsTransfer{}},
		"job range":              {pcj, "blobRef: {name: b}\nop: fnv\nrange: {offset: 1024Ki, length: 1048576}\nduration: 60s", &pfsv1alpha1.PcoreJob{}},
	}
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := object(t, tc.kind, ns, "", tc.spec)
			u.SetGenerateName("spell-")
			if err := env.Client.Create(ctx, u); err != nil {
				t.Fatal(err)
			}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(u), tc.typed); err != nil {
				t.Fatal(err)
			}
			tc.typed.SetLabels(map[string]string{"touched": "yes"})
			tc.typed.SetFinalizers([]string{"pfs.packetfs.io/test"})
			if err := env.Client.Update(ctx, tc.typed); err != nil {
				t.Fatalf("a typed update that changes no spec field was rejected: %v", err)
			}
			// Clean up so the namespace does not keep objects with finalizers.
			tc.typed.SetFinalizers(nil)
			if err := env.Client.Update(ctx, tc.typed); err != nil {
				t.Fatal(err)
			}
		})
	}
}
