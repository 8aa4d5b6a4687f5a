// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"fmt"
	"net"

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

// maxSteppedAside is status.nodes[].steppedAside's MaxLength.
const maxSteppedAside = 256

// steppedAside says why a relay left the middle of the chain, from its
// result (docs/design/fanout.md "A slow relay"); "" when it did not.
// hostNode names the holders by the hosts their results use.
func steppedAside(r *result.BlobCreate, hostNode map[string]string) string {
	if r.Repl == nil || r.Repl.SteppedAside == nil {
		return ""
	}
	st := r.Repl.SteppedAside
	msg := fmt.Sprintf("it forwarded slower than it received: its stream to %s fell %d MiB further behind its own fill "+
		"in %.2f s (from %d to %d MiB behind, at %d MiB)", hostOf(st.Downstream, hostNode), (st.Lag-st.LagStart)>>20,
		st.Elapsed.Seconds(), st.LagStart>>20, st.Lag>>20, st.Mark>>20)
	if r.Fetch != nil && r.Fetch.MovedTo != "" {
		msg += "; it finished from the chain's last node, " + hostOf(r.Fetch.MovedTo, hostNode)
	}
	return truncate(msg, maxSteppedAside)
}

// hostOf is the node whose holder has addr's host, else addr itself.
func hostOf(addr string, hostNode map[string]string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil && hostNode[host] != "" {
		return hostNode[host]
	}
	return addr
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
