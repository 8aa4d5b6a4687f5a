// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/placement"
	"packetfs.io/operator/internal/podspec"
)

// The shape of a source blob's fan-out: which node fetches from which.
// Pure functions over node names and the holder pods' addresses: DNS names
// on the pod network, IPs on spec.replication.network.

// maxRelayAttempts bounds the holder pods created for one relay node.
const maxRelayAttempts = 3

// maxUpstreams bounds a relay's --fetch-from list.
const maxUpstreams = 8

// topologyOrder is the origin first, then the other nodes by name.
func topologyOrder(origin string, others []string) []string {
	rest := make([]string, 0, len(others))
	for _, n := range others {
		if n != origin {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	return append([]string{origin}, rest...)
}

// upstreamIndexes are the positions node i fetches from, nearest first:
// Chain i-1, i-2, i-3 then the origin; Tree the parent (i-1)/2 and its
// ancestors up to the origin.
func upstreamIndexes(topology pfsv1alpha1.ReplicationTopology, i int) []int {
	if i <= 0 {
		return nil
	}
	var out []int
	if topology == pfsv1alpha1.TopologyTree {
		for j := (i - 1) / 2; ; j = (j - 1) / 2 {
			out = append(out, j)
			if j == 0 {
				return out
			}
		}
	}
	for j := i - 1; j >= 1 && j >= i-3; j-- {
		out = append(out, j)
	}
	return append(out, 0)
}

// upstreamAddrs is node i's --fetch-from list: its topology upstreams whose
// holder has an address (not failed; on the pod network a DNS name, known
// as soon as the pod is planned), then the other Ready holders (late
// joiners and retries fetch from any complete copy), at most maxUpstreams,
// as "host:port".
func upstreamAddrs(topology pfsv1alpha1.ReplicationTopology, order []string, i int,
	addr map[string]string, ready map[string]bool) []string {
	var out []string
	seen := map[string]bool{order[i]: true}
	add := func(node string) {
		if seen[node] || addr[node] == "" || len(out) >= maxUpstreams {
			return
		}
		seen[node] = true
		out = append(out, net.JoinHostPort(addr[node], strconv.Itoa(podspec.ReplicationPort)))
	}
	for _, j := range upstreamIndexes(topology, i) {
		add(order[j])
	}
	for _, n := range order {
		if ready[n] {
			add(n)
		}
	}
	return out
}

// maxTail bounds a relay's --fetch-tail list.
const maxTail = 2

// tailAddrs is a relay's --fetch-tail list: the chain's last holders after
// position i, last first, which it finishes from once it stepped aside
// (docs/design/fanout.md "A slow relay"). The last holder never steps
// aside itself (no one relays through it), so a relay that moved there
// closes no cycle. Only in a chain (a tree has no one tail) and over TCP
// (a datagram relay does not step aside). A holder's address is its DNS
// name on the pod network, known before its pod exists (name is
// podspec.HolderDNSName for this blob), or its IP on a network once it has
// one; a node whose address is unknown yet, or whose holder failed for
// good (gone), is left out.
func tailAddrs(topology pfsv1alpha1.ReplicationTopology, transport pfsv1alpha1.Transport, order []string, i int,
	addr map[string]string, name func(node string) string, gone func(node string) bool) []string {
	if topology == pfsv1alpha1.TopologyTree || transport != pfsv1alpha1.TransportTCP || i <= 0 {
		return nil
	}
	var out []string
	for j := len(order) - 1; j > i && len(out) < maxTail; j-- {
		if gone != nil && gone(order[j]) {
			continue
		}
		host := addr[order[j]]
		if host == "" && name != nil {
			host = name(order[j])
		}
		if host != "" {
			out = append(out, net.JoinHostPort(host, strconv.Itoa(podspec.ReplicationPort)))
		}
	}
	return out
}

// holderDNS names b's holder on a node before its pod exists: on the pod
// network, its DNS name; nil on spec.replication.network (an IP comes
// with the pod).
func holderDNS(b *pfsv1alpha1.PfsBlob) func(node string) string {
	if b.Spec.Replication.NetworkOrDefault() != "" {
		return nil
	}
	return func(node string) string { return podspec.HolderDNSName(b.Name, b.Namespace, node) }
}

// networkStatusGrace is how long a started holder may go without an
// address on spec.replication.network before its node fails. Multus writes
// the network-status annotation when it sets up the pod's sandbox, before
// any container starts, so a started pod without it will not get it.
const networkStatusGrace = 30 * time.Second

// holderAddr is where a holder serves the blob to the next nodes.
type holderAddr struct {
	// Host is the pod's DNS name, its IP on the replication network, or the
	// pod IP of a holder from before DNS names; "" while unknown.
	Host string
	// Missing, when set, is the Failed message of a holder that started
	// more than networkStatusGrace ago and has no address on the network.
	Missing string
	// RecheckAfter asks for another look when the grace runs out.
	RecheckAfter time.Duration
}

// holderAddress is pod's serving address. Without a network: its DNS name,
// which needs no IP yet (the relay resolves it when it connects), or the
// pod IP of a holder created without one (by an operator from before DNS
// names: it stays reachable). On a network: its first IP there from the
// Multus network-status annotation (the address a PfsTransfer sender uses
// too), as a name resolves to the pod IP; only a holder whose containers
// started can be judged: its sandbox, and Multus, are done.
func holderAddress(p *corev1.Pod, network string, now time.Time) holderAddr {
	if name := podspec.PodDNSName(p); network == "" && name != "" {
		return holderAddr{Host: name}
	}
	a, err := placement.ReceiverAddress(p, network)
	if err == nil {
		return holderAddr{Host: a.IP}
	}
	started, ok := holderStarted(p)
	if network == "" || !ok {
		return holderAddr{}
	}
	if wait := started.Add(networkStatusGrace).Sub(now); wait > 0 {
		return holderAddr{RecheckAfter: wait}
	}
	return holderAddr{Missing: fmt.Sprintf("holder pod %s has no address on network %s: is the NetworkAttachmentDefinition right? (%v)",
		p.Name, network, err)}
}

// holderStarted is when the first of pod's containers (the init container
// first) started; ok is false before any did.
func holderStarted(p *corev1.Pod) (time.Time, bool) {
	var first time.Time
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, c := range list {
			var t time.Time
			switch {
			case c.State.Running != nil:
				t = c.State.Running.StartedAt.Time
			case c.State.Terminated != nil:
				t = c.State.Terminated.StartedAt.Time
			}
			if !t.IsZero() && (first.IsZero() || t.Before(first)) {
				first = t
			}
		}
	}
	if first.IsZero() && p.Status.Phase == corev1.PodRunning && p.Status.StartTime != nil {
		first = p.Status.StartTime.Time
	}
	return first, !first.IsZero()
}

// holderHosts are the hosts a relay's result may name pod's holder by
// (fetch.from, as given in --fetch-from): its DNS name, its pod IP and its
// IP on the replication network.
func holderHosts(p *corev1.Pod, network string) []string {
	var out []string
	if name := podspec.PodDNSName(p); name != "" {
		out = append(out, name)
	}
	if p.Status.PodIP != "" {
		out = append(out, p.Status.PodIP)
	}
	if network != "" {
		if a, err := placement.ReceiverAddress(p, network); err == nil {
			out = append(out, a.IP)
		}
	}
	return out
}

// holderAttempt is the attempt a source holder pod carries in its label.
func holderAttempt(p *corev1.Pod) int32 {
	n, err := strconv.Atoi(p.Labels[podspec.LabelAttempt])
	if err != nil || n < 1 {
		return 1
	}
	return int32(n)
}

// holderPodNode is the node a source holder pod is for (its annotation,
// else where it is bound or pinned).
func holderPodNode(p *corev1.Pod) string {
	if n := p.Annotations[podspec.AnnotationNode]; n != "" {
		return n
	}
	return podNode(p)
}

// newestHolders groups holder pods by node: the newest attempt per node, and
// the older ones (to delete).
func newestHolders(pods []corev1.Pod) (newest map[string]*corev1.Pod, older []*corev1.Pod) {
	newest = map[string]*corev1.Pod{}
	for i := range pods {
		p := &pods[i]
		node := holderPodNode(p)
		if node == "" {
			continue
		}
		cur, ok := newest[node]
		switch {
		case !ok:
			newest[node] = p
		case holderAttempt(p) > holderAttempt(cur):
			older = append(older, cur)
			newest[node] = p
		default:
			older = append(older, p)
		}
	}
	return newest, older
}
