// SPDX-License-Identifier: Apache-2.0

package api

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// TestTypedCreateTakesDefaults: a PfsTransfer built in Go with every
// optional field unset (as the e2e suite and any Go client builds one) is
// accepted and gets the CRD defaults; zero quantities must not reach the
// apiserver as "0".
func TestTypedCreateTakesDefaults(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	x := &pfsv1alpha1.PfsTransfer{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "typed-"},
		Spec:       pfsv1alpha1.PfsTransferSpec{BlobRef: &pfsv1alpha1.BlobReference{Name: "b"}, Mode: pfsv1alpha1.ModeOffset},
	}
	if err := env.Client.Create(ctx, x); err != nil {
		t.Fatalf("a typed PfsTransfer without gram settings was rejected: %v", err)
	}
	g := x.Spec.Gram
	if g.SlabBytes.String() != "1Mi" || g.MaxDescriptorLength.String() != "256Ki" || g.DescriptorsPerGram != 1024 || g.Align != 64 {
		t.Errorf("gram %+v, want the CRD defaults (1Mi, 256Ki, 1024, 64)", g)
	}
}
