// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

func TestRunPreconditions(t *testing.T) {
	ref := &pfsv1alpha1.BlobReference{Name: "b"}
	blob := readyBlobObj("64Mi", "n1")
	inRange := &pfsv1alpha1.Range{Offset: resource.MustParse("32Mi"), Length: resource.MustParse("32Mi")}
	pastEnd := &pfsv1alpha1.Range{Offset: resource.MustParse("60Mi"), Length: resource.MustParse("8Mi")}
	// inputs are those of a job created an hour before t0 that uses blob b,
	// changed by mut.
	inputs := func(mut func(*runInputs)) *runInputs {
		in := &runInputs{Kind: "job", Namespace: "ns", Created: t0.Add(-time.Hour), Now: t0,
			BlobRef: ref, Blob: blob, BlobNodes: []string{"n1"}}
		if mut != nil {
			mut(in)
		}
		return in
	}
	// A Delta transfer: base b, source src.
	src := readyBlobObj("64Mi", "n2")
	src.Name = "src"
	delta := func(mut func(*runInputs)) *runInputs {
		return inputs(func(in *runInputs) {
			in.Kind, in.SourceRef, in.Source, in.SenderNodes = "transfer", &pfsv1alpha1.BlobReference{Name: "src"}, src, []string{"n1"}
			if mut != nil {
				mut(in)
			}
		})
	}
	tests := map[string]struct {
		in   *runInputs
		want *verdict
	}{
		"all hold":                    {in: inputs(nil)},
		"no blob used and none found": {in: inputs(func(in *runInputs) { in.BlobRef, in.Blob, in.BlobNodes = nil, nil, nil })},
		"deadline not reached":        {in: inputs(func(in *runInputs) { in.ActiveDeadlineSeconds = ptr.To(int64(3601)) })},
		"deadline passed": {in: inputs(func(in *runInputs) { in.ActiveDeadlineSeconds = ptr.To(int64(3600)) }),
			want: &verdict{Fail: true, Reason: "DeadlineExceeded", Message: "the job ran longer than spec.activeDeadlineSeconds (3600s)"}},
		"deadline passed comes before a missing blob": {in: inputs(func(in *runInputs) {
			in.Kind, in.ActiveDeadlineSeconds, in.Blob, in.BlobNodes = "transfer", ptr.To(int64(60)), nil, nil
		}), want: &verdict{Fail: true, Reason: "DeadlineExceeded", Message: "the transfer ran longer than spec.activeDeadlineSeconds (60s)"}},
		"blob not found: wait": {in: inputs(func(in *runInputs) { in.Blob, in.BlobNodes = nil, nil }),
			want: &verdict{Reason: "BlobNotFound", Message: "PfsBlob b not found in namespace ns"}},
		"blob not found although launched: wait (status names no live pod)": {
			in:   inputs(func(in *runInputs) { in.Blob, in.BlobNodes, in.Launched = nil, nil, true }),
			want: &verdict{Reason: "BlobNotFound", Message: "PfsBlob b not found in namespace ns"}},
		"blob gone under the pods: fail": {in: inputs(func(in *runInputs) {
			in.Kind, in.Blob, in.BlobNodes, in.PodsExist, in.Launched = "transfer", nil, nil, true, true
		}), want: &verdict{Fail: true, Reason: "BlobDeleted", Message: "PfsBlob b was deleted while the transfer used it"}},
		"range inside the blob, up to its end": {in: inputs(func(in *runInputs) { in.Range = inRange })},
		"range past the end: fail": {in: inputs(func(in *runInputs) { in.Range = pastEnd }),
			want: &verdict{Fail: true, Reason: "RangeOutOfBounds", Message: "range [62914560, 71303168) ends past the end of PfsBlob b (67108864 bytes)"}},
		"range past the end comes before no Ready copy": {in: inputs(func(in *runInputs) { in.Range, in.BlobNodes = pastEnd, nil }),
			want: &verdict{Fail: true, Reason: "RangeOutOfBounds", Message: "range [62914560, 71303168) ends past the end of PfsBlob b (67108864 bytes)"}},
		"no Ready copy before launch: wait": {in: inputs(func(in *runInputs) { in.BlobNodes = nil }),
			want: &verdict{Reason: "BlobNotReady", Message: "PfsBlob b has no node with a Ready copy yet"}},
		"no Ready copy after launch: the pods decide": {in: inputs(func(in *runInputs) { in.BlobNodes, in.PodsExist, in.Launched = nil, true, true })},
		"no Ready copy, a pod named in status is gone: the caller decides": {
			in: inputs(func(in *runInputs) { in.BlobNodes, in.Launched = nil, true })},
		"delta: all hold": {in: delta(nil)},
		"delta: source not found: wait": {in: delta(func(in *runInputs) { in.Source, in.SenderNodes = nil, nil }),
			want: &verdict{Reason: "BlobNotFound", Message: "PfsBlob src (spec.delta.sourceRef) not found in namespace ns"}},
		"delta: base not found comes first": {in: delta(func(in *runInputs) { in.Blob, in.Source, in.BlobNodes, in.SenderNodes = nil, nil, nil, nil }),
			want: &verdict{Reason: "BlobNotFound", Message: "PfsBlob b not found in namespace ns"}},
		"delta: source gone under the pods: fail": {in: delta(func(in *runInputs) { in.Source, in.PodsExist, in.Launched = nil, true, true }),
			want: &verdict{Fail: true, Reason: "BlobDeleted", Message: "PfsBlob src (spec.delta.sourceRef) was deleted while the transfer used it"}},
		"delta: base not Ready anywhere comes first": {in: delta(func(in *runInputs) { in.BlobNodes, in.SenderNodes = nil, nil }),
			want: &verdict{Reason: "BlobNotReady", Message: "PfsBlob b has no node with a Ready copy yet"}},
		"delta: no node holds both: wait": {in: delta(func(in *runInputs) { in.SenderNodes = nil }),
			want: &verdict{Reason: "BlobNotReady", Message: "no node holds Ready copies of both PfsBlob b (the base, spec.blobRef) and " +
				"PfsBlob src (the source, spec.delta.sourceRef) yet: the sender reads both on its node"}},
		"delta: the pinned sender node does not hold both: wait": {in: delta(func(in *runInputs) { in.SenderNodes, in.SenderNodeName = nil, "n3" }),
			want: &verdict{Reason: "BlobNotReady", Message: "node n3 (spec.sender.nodeName) does not hold Ready copies of both PfsBlob b (the base, spec.blobRef) and " +
				"PfsBlob src (the source, spec.delta.sourceRef) yet: the sender reads both on its node"}},
		"delta: no node holds both after launch: the pods decide": {in: delta(func(in *runInputs) { in.SenderNodes, in.PodsExist, in.Launched = nil, true, true })},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, runPreconditions.evaluate(tc.in)); diff != "" {
				t.Errorf("verdict (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPreconditionChainOrder: the first check that does not hold decides;
// the checks after it are not asked.
func TestPreconditionChainOrder(t *testing.T) {
	var asked []string
	check := func(name string, v *verdict) precondition {
		return func(*runInputs) *verdict {
			asked = append(asked, name)
			return v
		}
	}
	first := &verdict{Reason: "First"}
	chain := preconditionChain{check("a", nil), check("b", first), check("c", &verdict{Reason: "Second"})}
	if got := chain.evaluate(&runInputs{}); got != first {
		t.Errorf("verdict %+v, want %+v", got, first)
	}
	if diff := cmp.Diff([]string{"a", "b"}, asked); diff != "" {
		t.Errorf("checks asked (-want +got):\n%s", diff)
	}
	if got := (preconditionChain{}).evaluate(&runInputs{}); got != nil {
		t.Errorf("an empty chain gave %+v", got)
	}
}

// A missing NetworkAttachmentDefinition is waited for as long as a pod may
// stay unschedulable, then fails the run; it is not asked once pods exist.
func TestNetworksExist(t *testing.T) {
	missing := []string{"spec.sender.network: NetworkAttachmentDefinition pfs-system/nope does not exist"}
	in := &runInputs{Now: t0, MissingNetworks: missing, NetworkWaitSince: t0.Add(-time.Minute), WaitTimeout: 2 * time.Minute}
	v := networksExist(in)
	if v == nil || v.Fail || v.Reason != pfsv1alpha1.ReasonNetworkNotFound || v.RecheckAfter != networkRecheck ||
		v.Message != missing[0]+"; waiting up to 2m0s for it to be created" {
		t.Errorf("waiting: %+v", v)
	}
	in.Now = t0.Add(55 * time.Second)
	if v = networksExist(in); v.RecheckAfter != 5*time.Second {
		t.Errorf("recheck at the deadline: %+v", v)
	}
	in.Now = t0.Add(time.Minute)
	v = networksExist(in)
	if v == nil || !v.Fail || !strings.Contains(v.Message, "(waited 2m0s): create it, or name an existing NetworkAttachmentDefinition") {
		t.Errorf("past the timeout: %+v", v)
	}
	in.Launched = true
	if v = networksExist(in); v != nil {
		t.Errorf("launched: %+v", v)
	}
	if v = networksExist(&runInputs{Now: t0}); v != nil {
		t.Errorf("no network: %+v", v)
	}
}
