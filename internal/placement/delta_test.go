// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

func TestPlanDelta(t *testing.T) {
	base, source := []string{"n1", "n2", "n3"}, []string{"n2", "n3", "n4"}
	pin := func(n string) pfsv1alpha1.Endpoint { return pfsv1alpha1.Endpoint{NodeName: n} }
	tests := map[string]struct {
		base, source     []string
		sender, receiver pfsv1alpha1.Endpoint
		want             Delta
	}{
		"unpinned: sender where both are Ready, receiver where the base is": {base: base, source: source,
			want: Delta{SenderNodes: []string{"n2", "n3"}, ReceiverNodes: []string{"n1", "n2", "n3"}}},
		"sender pinned to a node with both": {base: base, source: source, sender: pin("n3"),
			want: Delta{SenderNodes: []string{"n3"}, ReceiverNodes: []string{"n1", "n2", "n3"}}},
		"sender pinned to a node without the source: nowhere": {base: base, source: source, sender: pin("n1"),
			want: Delta{ReceiverNodes: []string{"n1", "n2", "n3"}}},
		"no node holds both: nowhere for the sender": {base: []string{"n1"}, source: []string{"n2"},
			want: Delta{ReceiverNodes: []string{"n1"}}},
		"receiver pinned to a node with the base": {base: base, source: source, receiver: pin("n1"),
			want: Delta{SenderNodes: []string{"n2", "n3"}, ReceiverNodes: []string{"n1", "n2", "n3"}}},
		"receiver pinned to a node without the base: full copy": {base: base, source: source, receiver: pin("n9"),
			want: Delta{SenderNodes: []string{"n2", "n3"}, NoBaseNode: "n9"}},
		"nothing Ready": {sender: pin("n1"), receiver: pin("n2"), want: Delta{NoBaseNode: "n2"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := PlanDelta(tc.base, tc.source, tc.sender, tc.receiver)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("PlanDelta (-want +got):\n%s", diff)
			}
			if got.ReceiverHasBase() != (tc.want.NoBaseNode == "") {
				t.Errorf("ReceiverHasBase = %v with NoBaseNode %q", got.ReceiverHasBase(), got.NoBaseNode)
			}
		})
	}
	// The plan does not share the caller's slice.
	got := PlanDelta(base, source, pfsv1alpha1.Endpoint{}, pfsv1alpha1.Endpoint{})
	got.ReceiverNodes[0] = "x"
	if base[0] != "n1" {
		t.Error("PlanDelta aliases its input")
	}
}
