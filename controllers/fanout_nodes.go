// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/podspec"
	"packetfs.io/operator/internal/result"
)

// The fan-out of a source blob as pure functions, each taking what the
// one before returned: selectNodes (which nodes, which holder pods),
// readHolders (what the holders say), planNodes (each node's status and
// new pod, in topology order) and summarise (fanout_summary.go).

// fanoutIn is what a fan-out is planned from: the blob, the pod config,
// what was gathered, the node the scan ran on (the origin) and the size.
type fanoutIn struct {
	cfg    podspec.Config
	b      *pfsv1alpha1.PfsBlob
	obs    sourceObservation
	origin string
	size   int64
}

// nodeSelection is which nodes take part and which holder pods count.
type nodeSelection struct {
	// nodes are the selected nodes, by name.
	nodes map[string]*corev1.Node
	// newest is the newest holder pod per node.
	newest map[string]*corev1.Pod
	// stale are holders to delete: older attempts, and holders on nodes no
	// longer selected (or gone).
	stale []*corev1.Pod
	// order is the topology order of the nodes that hold or may get a
	// holder: the origin first.
	order []string
	// prev is the stored status per node.
	prev map[string]pfsv1alpha1.BlobNodeStatus
}

// selectNodes finds the selected nodes, the newest holder per node and
// the topology order.
func selectNodes(in fanoutIn) nodeSelection {
	selector := labels.SelectorFromSet(in.b.Spec.NodeSelector)
	sel := nodeSelection{nodes: map[string]*corev1.Node{}, prev: map[string]pfsv1alpha1.BlobNodeStatus{}}
	var names []string
	for i := range in.obs.Nodes {
		n := &in.obs.Nodes[i]
		if selector.Matches(labels.Set(n.Labels)) && in.cfg.Operands.Admits(n) {
			sel.nodes[n.Name] = n
			names = append(names, n.Name)
		}
	}
	sel.newest, sel.stale = newestHolders(in.obs.Holders)
	var eligible []string
	for _, n := range names {
		// A holder already there stays whatever taints came since (a copy
		// is never dropped for one); a new one goes only where it would be
		// bound, or the blob would wait on a pod that never runs.
		if _, has := sel.newest[n]; has || nodeUsable(sel.nodes[n]) && tolerated(in.cfg, sel.nodes[n], in.b) {
			eligible = append(eligible, n)
		}
	}
	for n, p := range sel.newest {
		if _, selected := sel.nodes[n]; !selected && n != in.origin {
			sel.stale = append(sel.stale, p) // the node left the selector, or is gone
		}
	}
	sel.order = topologyOrder(in.origin, eligible)
	for _, n := range in.b.Status.Nodes {
		sel.prev[n.Node] = n
	}
	return sel
}

// tolerated says whether the blob's pods tolerate every NoSchedule and
// NoExecute taint of the node.
func tolerated(cfg podspec.Config, n *corev1.Node, b *pfsv1alpha1.PfsBlob) bool {
	_, untolerated := cfg.UntoleratedTaint(n, b.Spec.Scheduling)
	return !untolerated
}

// originRead is what the origin's holder says of the source.
type originRead struct {
	// digest and fingerprint are the source's, once the origin loaded it;
	// chunkRoot the root of its chunk list ("" when it reported none).
	digest, fingerprint, chunkRoot string
	// failed says why the origin failed ("" while it has not); reason is
	// the Reason its nodes then carry.
	failed, reason string
}

// holderReads is what the existing holders say.
type holderReads struct {
	// info is each node's holder as read.
	info map[string]*holderInfo
	// addr is where each usable holder serves (DNS name or IP).
	addr map[string]string
	// readyPeer are the nodes whose holder is Ready.
	readyPeer map[string]bool
	origin    originRead
	// recheck asks for another look when a holder's address grace ends.
	recheck time.Duration
}

// readHolders reads every existing holder: the origin's digest first, then
// the relays against it, and the addresses new relays may fetch from (DNS
// names, or the holders' IPs on spec.replication.network).
func readHolders(in fanoutIn, sel nodeSelection) holderReads {
	rd := holderReads{info: map[string]*holderInfo{}, addr: map[string]string{}, readyPeer: map[string]bool{}}
	network := in.b.Spec.Replication.NetworkOrDefault()
	hostNode := map[string]string{}
	for _, p := range in.obs.Holders {
		for _, h := range holderHosts(&p, network) {
			hostNode[h] = holderPodNode(&p)
		}
	}
	addr := map[string]string{}
	for _, n := range sel.order {
		p := sel.newest[n]
		if p == nil {
			continue
		}
		hi := readHolder(in.b, n, p)
		rd.info[n] = hi
		if hi.failed {
			continue
		}
		a := holderAddress(p, network, in.obs.Now)
		addr[n] = a.Host
		if w := a.RecheckAfter; w > 0 && (rd.recheck == 0 || w < rd.recheck) {
			rd.recheck = w
		}
		if a.Missing != "" {
			hi.failed = true
			hi.status.State, hi.status.Reason, hi.status.Message = pfsv1alpha1.BlobNodeFailed, pfsv1alpha1.ReasonNetworkUnavailable, a.Missing
		}
	}
	if oi := rd.info[in.origin]; oi != nil {
		rd.origin = readOrigin(oi)
	}
	for _, n := range sel.order {
		hi := rd.info[n]
		if hi == nil || hi.failed {
			continue
		}
		if addr[n] != "" {
			rd.addr[n] = addr[n]
		}
		if n != in.origin {
			verifyRelay(hi, rd.origin, hostNode)
			hi.status.Delta = relayDelta(in.b, sel.newest[n], hi.result)
		}
		if hi.status.State == pfsv1alpha1.BlobNodeReady {
			rd.readyPeer[n] = true
		}
	}
	return rd
}

// readOrigin takes the digest and fingerprint from the origin's result, or
// marks the origin failed (oi) and says why.
func readOrigin(oi *holderInfo) originRead {
	switch r := oi.result; {
	case oi.failed:
	case r == nil:
		return originRead{}
	case r.Source == nil || r.Manifest == nil:
		oi.failed = true
		oi.status.Message = pfsv1alpha1.ReasonResultInvalid + ": the origin's result has no \"source\" and \"manifest\""
	case r.Source.SHA256 != r.Manifest.SHA256:
		oi.failed = true
		oi.status.Message = fmt.Sprintf("the manifest's sha256 %s differs from the source's %s", r.Manifest.SHA256, r.Source.SHA256)
	default:
		o := originRead{digest: r.Source.SHA256, fingerprint: r.Fingerprint}
		oi.status.Verification = &pfsv1alpha1.BlobNodeVerification{By: pfsv1alpha1.VerifiedBySource}
		if c := r.Chunks; c != nil && c.List == result.ChunksComputed {
			o.chunkRoot = c.Root
			oi.status.Verification.Chunks, oi.status.Verification.Root = c.Count, c.Root
		}
		return o
	}
	o := originRead{failed: oi.status.Message, reason: pfsv1alpha1.ReasonSourceFailed}
	if oi.status.Reason == pfsv1alpha1.ReasonNetworkUnavailable {
		o.reason = oi.status.Reason
	}
	oi.status.State, oi.status.Reason = pfsv1alpha1.BlobNodeFailed, o.reason
	return o
}

// plannedNodes is every node's decided status and the children it needs.
type plannedNodes struct {
	// status is one entry per node, sorted by node; nil when none.
	status []pfsv1alpha1.BlobNodeStatus
	create []*corev1.Pod
	// retried are failed relays' pods to delete (a new attempt follows).
	retried []*corev1.Pod
	// service is the holders' Service, set once a holder with a DNS name
	// is planned.
	service *corev1.Service
	// originAdmission says why the origin node cannot take a holder.
	originAdmission string
}

// nodeStep is what planNode decided for one node.
type nodeStep struct {
	status pfsv1alpha1.BlobNodeStatus
	// create is the node's new holder; retire its failed one.
	create, retire *corev1.Pod
	// admission says why the node cannot take a holder.
	admission string
}

// planNodes decides every node in topology order (a node's upstreams are
// decided before it): a new holder's DNS name is an address the next
// nodes may fetch from at once.
func planNodes(in fanoutIn, sel nodeSelection, rd holderReads) plannedNodes {
	var out plannedNodes
	addr := maps.Clone(rd.addr)
	decided := make([]pfsv1alpha1.BlobNodeStatus, 0, len(sel.order))
	for i, n := range sel.order {
		s := planNode(in, sel, rd, nodeContext{i: i, addr: addr, decided: decided, originAdmission: out.originAdmission})
		decided = append(decided, s.status)
		if s.retire != nil {
			out.retried = append(out.retried, s.retire)
		}
		if n == in.origin && s.admission != "" {
			out.originAdmission = s.admission
		}
		if p := s.create; p != nil {
			out.create = append(out.create, p)
			if name := podspec.PodDNSName(p); name != "" {
				addr[n] = name
				if out.service == nil {
					out.service = podspec.BlobHolderService(in.b)
				}
			}
		}
	}
	sort.Slice(decided, func(i, j int) bool { return decided[i].Node < decided[j].Node })
	if len(decided) > 0 {
		out.status = decided
	}
	return out
}

// nodeContext is what planNode reads of the nodes decided before it.
type nodeContext struct {
	// i is the node's position in the topology order.
	i int
	// addr are the serving addresses known so far (read, or planned).
	addr map[string]string
	// decided are the statuses of the nodes before it.
	decided []pfsv1alpha1.BlobNodeStatus
	// originAdmission says why the origin cannot take a holder.
	originAdmission string
}

// planNode decides one node: its holder as read, or a new pod (first
// attempt, or a retry of a failed relay) once the node is admitted and,
// for a relay, its nearest upstream has an address: on the pod network
// from the moment that upstream's pod is planned, so all holders are
// created in one pass.
func planNode(in fanoutIn, sel nodeSelection, rd holderReads, nc nodeContext) nodeStep {
	n := sel.order[nc.i]
	role := pfsv1alpha1.BlobNodeRelay
	if n == in.origin {
		role = pfsv1alpha1.BlobNodeOrigin
	}
	attempts := sel.prev[n].Attempts
	if p := sel.newest[n]; p != nil && holderAttempt(p) > attempts {
		attempts = holderAttempt(p)
	}
	step := nodeStep{status: pfsv1alpha1.BlobNodeStatus{Node: n, Role: role, Attempts: attempts, State: pfsv1alpha1.BlobNodePending}}
	if hi := rd.info[n]; hi != nil {
		step.status = hi.status
		step.status.Role, step.status.Attempts = role, attempts
		if !hi.failed {
			return step
		}
		ns := &step.status
		if role == pfsv1alpha1.BlobNodeOrigin || rd.origin.failed != "" || attempts >= maxRelayAttempts || sel.newest[n].DeletionTimestamp != nil {
			if rd.origin.failed != "" && role == pfsv1alpha1.BlobNodeRelay && ns.Reason == "" {
				ns.Reason = rd.origin.reason
			}
			return step
		}
		// A relay that failed gets a new pod, fetching from the others.
		step.retire = sel.newest[n]
		ns.Message = fmt.Sprintf("attempt %d failed (%s); retrying", attempts, ns.Message)
	} else if sel.prev[n].State == pfsv1alpha1.BlobNodeFailed && attempts >= maxRelayAttempts {
		step.status = sel.prev[n]
		return step
	}
	return newHolder(in, sel, rd, nc, step)
}

// newHolder plans node's new holder pod, or says what it waits for.
func newHolder(in fanoutIn, sel nodeSelection, rd holderReads, nc nodeContext, step nodeStep) nodeStep {
	b, ns, n := in.b, &step.status, sel.order[nc.i]
	if rd.origin.failed != "" {
		ns.State, ns.Reason, ns.Message = pfsv1alpha1.BlobNodeFailed, rd.origin.reason, "the origin failed: "+rd.origin.failed
		return step
	}
	ad := admission{Message: "node " + n + " does not match spec.nodeSelector or is gone"}
	if sel.nodes[n] != nil {
		ad = admitNode(in.cfg, sel.nodes[n], in.obs.Requested[n], in.size, b.Spec.PageSize, b.Spec.PageFallback,
			b.Spec.Replication.TransportOrDefault())
	}
	if !ad.OK {
		ns.State, ns.Reason, ns.Message = pfsv1alpha1.BlobNodeFailed, pfsv1alpha1.ReasonHugePagesUnavailable, ad.Message
		step.admission = ad.Message
		return step
	}
	h := podspec.SourceHolder{Node: n, Role: ns.Role, Size: in.size, Page: ad.Page, PageFallback: ad.Fallback, Attempt: ns.Attempts + 1,
		Base: holderBase(in.b, in.obs.Base, n)}
	if ns.Role == pfsv1alpha1.BlobNodeRelay {
		if nc.originAdmission != "" {
			return step
		}
		topo := b.Spec.Replication.TopologyOrDefault()
		// A relay waits for its nearest upstream's address unless that node
		// failed for good. A DNS name exists as soon as the upstream's pod
		// is planned (it resolves once the pod has an IP, which the data
		// plane waits for); an IP on a network only once the pod has one,
		// so there holders start in topology order.
		nearest := sel.order[upstreamIndexes(topo, nc.i)[0]]
		h.Upstreams = upstreamAddrs(topo, sel.order, nc.i, nc.addr, rd.readyPeer)
		h.Tail = tailAddrs(topo, b.Spec.Replication.TransportOrDefault(), sel.order, nc.i, nc.addr, holderDNS(b),
			func(n string) bool {
				return sel.prev[n].State == pfsv1alpha1.BlobNodeFailed && sel.prev[n].Attempts >= maxRelayAttempts
			})
		if len(h.Upstreams) == 0 || (nc.addr[nearest] == "" && !failedIn(nc.decided, nearest)) {
			ns.State, ns.Message = pfsv1alpha1.BlobNodePending, "waiting for the holder on "+nearest+" (upstream) to get an address"
			return step
		}
	}
	step.create = podspec.BlobSourceHolderPod(in.cfg, b, h)
	ns.Pod, ns.Attempts, ns.State, ns.Reason = step.create.Name, h.Attempt, pfsv1alpha1.BlobNodePending, ""
	if !strings.HasPrefix(ns.Message, "attempt ") {
		ns.Message = ""
	}
	if ad.Fallback != "" {
		ns.PageSize, ns.FallbackReason, ns.Reason = pfsv1alpha1.PageSize4Ki, truncate(ad.Fallback, 1024), pfsv1alpha1.ReasonPageSizeFallback
	}
	return step
}

// failedIn reports whether node is Failed in the statuses decided so far.
func failedIn(st []pfsv1alpha1.BlobNodeStatus, node string) bool {
	for _, n := range st {
		if n.Node == node {
			return n.State == pfsv1alpha1.BlobNodeFailed
		}
	}
	return false
}

// originResult is the origin's data-plane result, nil before it has one.
func originResult(rd holderReads, origin string) *result.BlobCreate {
	if oi := rd.info[origin]; oi != nil {
		return oi.result
	}
	return nil
}

// originHasBase: the origin's holder was given the base (or none exists
// yet: nothing to say).
func originHasBase(sel nodeSelection, origin string) bool {
	p := sel.newest[origin]
	return p == nil || p.Annotations[podspec.AnnotationDeltaBase] != ""
}
