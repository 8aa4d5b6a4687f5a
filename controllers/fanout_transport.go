// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/result"
)

// maxDatapath is status.nodes[].datapath's MaxLength.
const maxDatapath = 256

// maxBoundMessage is status.nodes[].boundMessage's MaxLength.
const maxBoundMessage = 256

// fillBound copies what bound a holder's fill, as its data plane measured
// it, into its node status; nothing when the result does not say.
func fillBound(ns *pfsv1alpha1.BlobNodeStatus, r *result.BlobCreate) {
	bounds := map[string]pfsv1alpha1.FillBound{"source": pfsv1alpha1.FillBoundSource,
		"upstream": pfsv1alpha1.FillBoundUpstream, "verification": pfsv1alpha1.FillBoundVerification,
		"cpu-quota": pfsv1alpha1.FillBoundCPUQuota}
	ns.Bound, ns.BoundMessage = bounds[r.Bound], ""
	if ns.Bound != "" {
		ns.BoundMessage = truncate(r.BoundWhy, maxBoundMessage)
	}
}

// relayTransport copies how a relay fetched, as its data plane reported
// it, into its node status: the wire, the datapath (an AF_XDP relay on a
// veth says it ran in copy mode there) and the loss reports it sent its
// upstreams, the price of the losses on a datagram transport.
func relayTransport(ns *pfsv1alpha1.BlobNodeStatus, ft *result.Fetch) {
	switch ft.Transport {
	case result.FetchUDP:
		ns.Transport = pfsv1alpha1.TransportUDP
	case result.FetchAFXDP:
		ns.Transport = pfsv1alpha1.TransportAFXDP
	default:
		ns.Transport = pfsv1alpha1.TransportTCP
	}
	ns.Datapath = truncate(ft.Path, maxDatapath)
	ns.NAKs = 0
	if ft.Dgrams != nil {
		ns.NAKs = ft.Dgrams.NAKs
	}
}
