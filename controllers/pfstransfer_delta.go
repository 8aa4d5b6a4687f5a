// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"fmt"
	"time"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/placement"
	"packetfs.io/operator/internal/result"
)

// The status of a Delta transfer (status.delta): what was planned when the
// receiver was created (with the base, or a full copy and why), then what
// both sides reported. Pure functions, used by decideTransfer.

// plannedDelta is status.delta once the receiver is created: whether it
// holds the base, and when it does not, why.
func plannedDelta(x *pfsv1alpha1.PfsTransfer, p placement.Delta) *pfsv1alpha1.DeltaStatus {
	if p.ReceiverHasBase() {
		return &pfsv1alpha1.DeltaStatus{Encoding: pfsv1alpha1.DeltaEncodingDelta}
	}
	base := ""
	if x.Spec.BlobRef != nil {
		base = x.Spec.BlobRef.Name
	}
	return &pfsv1alpha1.DeltaStatus{Encoding: pfsv1alpha1.DeltaEncodingFullCopy,
		Message: fmt.Sprintf("base %s not Ready on node %s: sent as a full compressed copy", base, p.NoBaseNode)}
}

// deltaBounds maps the CLI's "bound" to the API's; the receiver's "sender"
// (it waited for the sender) is refined by the sender's own.
var deltaBounds = map[string]pfsv1alpha1.DeltaBound{
	"encode": pfsv1alpha1.DeltaBoundEncode, "wire": pfsv1alpha1.DeltaBoundWire,
	"apply": pfsv1alpha1.DeltaBoundApply, "verify": pfsv1alpha1.DeltaBoundVerify,
}

// mergeDelta writes both sides' "delta" members into status.delta (planned
// is what plannedDelta wrote). The receiver is the authority on what it
// rebuilt and on the wire, the sender on the encoding (regions, threads);
// each side times its own stages. The bound is the receiver's, which sees
// the end of the pipeline (apply, verify), unless it says it waited for the
// sender: then the sender's (encode, wire).
func mergeDelta(planned *pfsv1alpha1.DeltaStatus, s, r *result.Delta) (*pfsv1alpha1.DeltaStatus, error) {
	if s == nil || r == nil {
		return nil, fmt.Errorf("mode Delta, but a side reported no \"delta\" member (sender %t, receiver %t)", s != nil, r != nil)
	}
	ds := &pfsv1alpha1.DeltaStatus{Encoding: pfsv1alpha1.DeltaEncodingDelta}
	if s.FullCopy || r.FullCopy {
		ds.Encoding = pfsv1alpha1.DeltaEncodingFullCopy
		ds.Message = "the receiver held no base: sent as a full compressed copy"
		if planned != nil && planned.Message != "" {
			ds.Message = planned.Message
		}
	}
	ds.BaseBytes, ds.EffectiveBytes, ds.WireBytes = s.BaseBytes, r.TargetBytes, r.WireBytes
	if ds.WireBytes == 0 {
		ds.WireBytes = s.WireBytes
	}
	ds.Ratio = pfsv1alpha1.FormatRatio(float64(ds.EffectiveBytes), float64(ds.WireBytes))
	ds.Bound = deltaBounds[r.Bound]
	if ds.Bound == "" { // the receiver waited for the sender, or did not say
		ds.Bound = deltaBounds[s.Bound]
	}
	ds.Threads = s.Threads
	ds.Stages = &pfsv1alpha1.DeltaStages{IndexSeconds: stageSeconds(s.Index), EncodeSeconds: stageSeconds(s.Encode),
		ApplySeconds: stageSeconds(r.Apply), VerifySeconds: stageSeconds(r.Verify)}
	ds.Regions = deltaRegions(s)
	if ds.Regions == nil {
		ds.Regions = deltaRegions(r)
	}
	return ds, nil
}

func stageSeconds(d time.Duration) string { return pfsv1alpha1.FormatSeconds(d) }

// deltaRegions is the region counts one side reported; nil for none.
func deltaRegions(d *result.Delta) *pfsv1alpha1.DeltaRegions {
	if d.Same == nil && d.Moved == nil && d.XOR == nil && d.Zstd == nil && d.ZstdRef == nil && d.Raw == nil {
		return nil
	}
	count := func(r *result.DeltaRegion) *pfsv1alpha1.DeltaRegionCount {
		if r == nil {
			return nil
		}
		return &pfsv1alpha1.DeltaRegionCount{Count: r.Count, Bytes: r.Bytes, WireBytes: r.WireBytes}
	}
	return &pfsv1alpha1.DeltaRegions{Same: count(d.Same), Moved: count(d.Moved), XOR: count(d.XOR), Zstd: count(d.Zstd), ZstdRef: count(d.ZstdRef), Raw: count(d.Raw)}
}

// deltaSummary ends the Succeeded message of a Delta transfer.
func deltaSummary(ds *pfsv1alpha1.DeltaStatus) string {
	what := "delta:"
	if ds.Encoding == pfsv1alpha1.DeltaEncodingFullCopy {
		what = ds.Message + ";"
	}
	return fmt.Sprintf("%s %d bytes on the wire, ratio %s", what, ds.WireBytes, ds.Ratio)
}
