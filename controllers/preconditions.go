// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"fmt"
	"strings"
	"time"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// The preconditions of a run (a PfsTransfer attempt or a PcoreJob) are one
// chain of pure checks, in cert-manager's policy-chain style: each check
// reads the gathered inputs and either holds (nil) or gives a verdict, and
// the first verdict in the chain's order decides. decideTransfer and
// decidePcore evaluate the same chain, so both Kinds wait for and fail on
// their deadline and their blob for the same reasons with the same words.

// runInputs are what the preconditions read; the decide functions fill them
// from the object and what the controller gathered.
type runInputs struct {
	// Kind names the run in messages: "transfer" or "job".
	Kind      string
	Namespace string
	// Created is the object's creation time; Now is the injected clock's.
	Created, Now time.Time
	// ActiveDeadlineSeconds is spec.activeDeadlineSeconds; nil: no deadline.
	ActiveDeadlineSeconds *int64
	// BlobRef is spec.blobRef; nil: the run uses no blob (a Payload transfer).
	BlobRef *pfsv1alpha1.BlobReference
	// Range is spec.range; nil: the whole blob.
	Range *pfsv1alpha1.Range
	// Blob is the referenced blob; nil when it was not found.
	Blob *pfsv1alpha1.PfsBlob
	// BlobNodes are the nodes that hold a Ready copy of Blob.
	BlobNodes []string
	// SourceRef is spec.delta.sourceRef of a Delta transfer, its second
	// blob (Blob is then the base); nil otherwise.
	SourceRef *pfsv1alpha1.BlobReference
	// Source is the blob SourceRef names; nil when it was not found.
	Source *pfsv1alpha1.PfsBlob
	// SenderNodes are where a Delta sender may run: the nodes holding Ready
	// copies of both Blob and Source (within SenderNodeName when set).
	SenderNodes []string
	// SenderNodeName is spec.sender.nodeName of a Delta transfer.
	SenderNodeName string
	// PodsExist says pods of the run exist (found, not only named in
	// status): a blob missing under them was deleted while in use.
	PodsExist bool
	// Launched says the run is past creating its pods, so it no longer
	// waits for a Ready copy of the blob: what became of the pods decides.
	// A transfer's attempt is launched while its pods exist; a job also
	// when status names a pod that is gone (the job then fails for it).
	Launched bool
	// MissingNetworks names the endpoint networks whose
	// NetworkAttachmentDefinition does not exist.
	MissingNetworks []string
	// NetworkWaitSince is when the run began waiting for them; WaitTimeout
	// is how long it may (the unschedulable timeout: without its network
	// the pod could not start either).
	NetworkWaitSince time.Time
	WaitTimeout      time.Duration
}

// verdict is the word of the first precondition that does not hold: the
// run waits (Pending) or fails, with the reason and message its conditions
// carry.
type verdict struct {
	Fail            bool
	Reason, Message string
	// RecheckAfter asks a waiting run to be looked at again after it,
	// although nothing it watches changed (a wait with a time limit).
	RecheckAfter time.Duration
}

// precondition is one pure check; nil when it holds.
type precondition func(in *runInputs) *verdict

// preconditionChain is an ordered list of checks.
type preconditionChain []precondition

// evaluate returns the verdict of the first check that does not hold, or
// nil when all hold.
func (c preconditionChain) evaluate(in *runInputs) *verdict {
	for _, check := range c {
		if v := check(in); v != nil {
			return v
		}
	}
	return nil
}

// runPreconditions is the chain of PfsTransfer and PcoreJob, in order: the
// deadline first, then the blob: found, the range inside it, a Ready copy;
// a Delta transfer's source is found and Ready beside the base.
var runPreconditions = preconditionChain{withinDeadline, blobFound, sourceFound, rangeInsideBlob, blobHasReadyCopy, sourceReadyWithBase, networksExist}

// networkRecheck is how often a run looks again for a missing
// NetworkAttachmentDefinition (they are not watched).
const networkRecheck = 10 * time.Second

// networksExist: a run that has not launched its pods waits for the
// NetworkAttachmentDefinitions its endpoints name, as long as a pod may stay
// unschedulable (it may be created a moment after the run), then fails.
func networksExist(in *runInputs) *verdict {
	if len(in.MissingNetworks) == 0 || in.Launched {
		return nil
	}
	what := strings.Join(in.MissingNetworks, "; ")
	if in.WaitTimeout > 0 && !in.Now.Before(in.NetworkWaitSince.Add(in.WaitTimeout)) {
		return &verdict{Fail: true, Reason: pfsv1alpha1.ReasonNetworkNotFound, Message: fmt.Sprintf(
			"%s (waited %s): create it, or name an existing NetworkAttachmentDefinition (\"name\" or \"namespace/name\")", what, in.WaitTimeout)}
	}
	v := &verdict{Reason: pfsv1alpha1.ReasonNetworkNotFound, Message: fmt.Sprintf(
		"%s; waiting up to %s for it to be created", what, in.WaitTimeout)}
	if in.WaitTimeout > 0 {
		v.RecheckAfter = min(networkRecheck, in.NetworkWaitSince.Add(in.WaitTimeout).Sub(in.Now))
	}
	return v
}

// deadlineAt is when a run created at created with activeDeadlineSeconds s
// passes its deadline.
func deadlineAt(created time.Time, s int64) time.Time {
	return created.Add(time.Duration(s) * time.Second)
}

// withinDeadline: spec.activeDeadlineSeconds has not passed since creation.
func withinDeadline(in *runInputs) *verdict {
	s := in.ActiveDeadlineSeconds
	if s == nil || in.Now.Before(deadlineAt(in.Created, *s)) {
		return nil
	}
	return &verdict{Fail: true, Reason: pfsv1alpha1.ReasonDeadlineExceeded,
		Message: fmt.Sprintf("the %s ran longer than spec.activeDeadlineSeconds (%ds)", in.Kind, *s)}
}

// blobFound: the referenced blob exists. Missing before the run's pods
// exist, the run waits for it; missing under them, it was deleted in use.
func blobFound(in *runInputs) *verdict { return refFound(in, in.BlobRef, in.Blob, "") }

// sourceFound: a Delta transfer's source exists, as blobFound.
func sourceFound(in *runInputs) *verdict {
	return refFound(in, in.SourceRef, in.Source, " (spec.delta.sourceRef)")
}

// refFound is blobFound of one reference; field names it in messages.
func refFound(in *runInputs, ref *pfsv1alpha1.BlobReference, blob *pfsv1alpha1.PfsBlob, field string) *verdict {
	if ref == nil || blob != nil {
		return nil
	}
	if in.PodsExist {
		return &verdict{Fail: true, Reason: pfsv1alpha1.ReasonBlobDeleted,
			Message: fmt.Sprintf("PfsBlob %s%s was deleted while the %s used it", ref.Name, field, in.Kind)}
	}
	return &verdict{Reason: pfsv1alpha1.ReasonBlobNotFound,
		Message: fmt.Sprintf("PfsBlob %s%s not found in namespace %s", ref.Name, field, in.Namespace)}
}

// rangeInsideBlob: spec.range ends inside the blob.
func rangeInsideBlob(in *runInputs) *verdict {
	r := in.Range
	if in.BlobRef == nil || in.Blob == nil || r == nil {
		return nil
	}
	end, size := r.Offset.Value()+r.Length.Value(), in.Blob.EffectiveSize()
	if end <= size {
		return nil
	}
	return &verdict{Fail: true, Reason: pfsv1alpha1.ReasonRangeOutOfBounds,
		Message: fmt.Sprintf("range [%d, %d) ends past the end of PfsBlob %s (%d bytes)", r.Offset.Value(), end, in.BlobRef.Name, size)}
}

// blobHasReadyCopy: a run that has not launched its pods waits for a node
// with a Ready copy of the blob.
func blobHasReadyCopy(in *runInputs) *verdict {
	if in.BlobRef == nil || in.Blob == nil || len(in.BlobNodes) > 0 || in.Launched {
		return nil
	}
	return &verdict{Reason: pfsv1alpha1.ReasonBlobNotReady,
		Message: fmt.Sprintf("PfsBlob %s has no node with a Ready copy yet", in.BlobRef.Name)}
}

// sourceReadyWithBase: a Delta transfer that has not launched its pods
// waits for a node holding Ready copies of both the base and the source,
// since its sender reads both from their holders on its node.
func sourceReadyWithBase(in *runInputs) *verdict {
	if in.SourceRef == nil || in.Source == nil || in.Blob == nil || len(in.SenderNodes) > 0 || in.Launched {
		return nil
	}
	where := "no node holds"
	if in.SenderNodeName != "" {
		where = fmt.Sprintf("node %s (spec.sender.nodeName) does not hold", in.SenderNodeName)
	}
	return &verdict{Reason: pfsv1alpha1.ReasonBlobNotReady, Message: fmt.Sprintf(
		"%s Ready copies of both PfsBlob %s (the base, spec.blobRef) and PfsBlob %s (the source, spec.delta.sourceRef) yet: the sender reads both on its node",
		where, in.BlobRef.Name, in.SourceRef.Name)}
}
