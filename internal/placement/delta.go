// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"slices"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// Delta is where the pods of a Delta transfer may run. The sender reads
// both the base (spec.blobRef) and the source (spec.delta.sourceRef) from
// their holders on its node; the receiver reads the base from its node's
// holder, or runs without one (a full compressed copy) when it is pinned
// to a node where the base is not Ready.
type Delta struct {
	// SenderNodes hold Ready copies of both the base and the source, and are
	// spec.sender.nodeName when that is set. Empty: the sender has nowhere
	// to run yet.
	SenderNodes []string
	// ReceiverNodes restrict the receiver: the base's Ready nodes; nil when
	// the receiver runs without the base.
	ReceiverNodes []string
	// NoBaseNode is spec.receiver.nodeName when the base is not Ready there:
	// the receiver runs with --no-base. "" when the receiver holds the base.
	NoBaseNode string
}

// ReceiverHasBase says the receiver reads the base from its node's holder.
func (d Delta) ReceiverHasBase() bool { return d.NoBaseNode == "" }

// PlanDelta decides a Delta transfer's nodes from the sorted Ready nodes of
// the base and of the source and the two endpoints. A receiver that is not
// pinned to a node runs where the base is Ready (as in Offset mode, the
// scheduler cannot be asked to prefer those nodes and tell the operator
// afterwards, and the receiver's command line must be known before it is
// scheduled); to send to a node without the base, pin receiver.nodeName.
func PlanDelta(baseNodes, sourceNodes []string, sender, receiver pfsv1alpha1.Endpoint) Delta {
	var d Delta
	for _, n := range baseNodes {
		if slices.Contains(sourceNodes, n) && (sender.NodeName == "" || sender.NodeName == n) {
			d.SenderNodes = append(d.SenderNodes, n)
		}
	}
	if pin := receiver.NodeName; pin != "" && !slices.Contains(baseNodes, pin) {
		d.NoBaseNode = pin
		return d
	}
	d.ReceiverNodes = slices.Clone(baseNodes)
	return d
}
