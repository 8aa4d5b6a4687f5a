// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// The NUMA decision: which node and which NUMA zone one data-plane pod goes
// to, from what each candidate node has free per zone. Pure: the caller
// gathers the topology (topology.go converts NodeResourceTopology objects
// and Node objects) and applies the decision (node affinity to the node,
// `--numa <zone>` to pfs).
//
// Rules, in order:
//  1. Only candidates count (the nodes holding the blob Ready, or the nodes
//     that match nodeName/nodeSelector). A node where the kubelet already
//     rejected this object's pod (TopologyAffinityError, a misfit) is out.
//  2. A resource that some zone of the node's NodeResourceTopology reports
//     must fit in one zone together with the other zoned resources; a
//     resource that no zone reports (a device whose plugin gives no
//     topology, e.g. a veth link) is counted node-wide: the Node's
//     allocatable minus what its pods request.
//  3. A node fits in tiers, best first: one zone on fresh topology; the
//     node as a whole when it has no NodeResourceTopology (one zone: the
//     kubelet picks the NUMA node); one zone on stale topology; then, with
//     numa Preferred only, across zones (no single zone has it all, the
//     node's zones together do), fresh before stale. Required never takes
//     a cross-zone fit.
//  4. Within a tier, the node (and within a node, the zone) with the most
//     left free after placement wins: the mean over the requested
//     resources of (free - request) / allocatable, in thousandths; ties go
//     to the lower zone id, then the node name.
//  5. When no candidate has any data (no NodeResourceTopology, no Node
//     object: nothing to count), the decision leaves the pod to the
//     scheduler on the candidates, as without NUMA placement, and says so.
//
// Staleness: a NodeResourceTopology is stale when it has no update time,
// or when its update time (the newest write recorded in its managedFields)
// is before the node's last pod change (the newest time a pod on the node
// was bound or ended, see LastPodChange). A stale object may not count the
// pods that changed since, so its nodes come after fresh ones and the
// reason says "stale". When the best a decision finds is a stale node whose
// zones show no room but whose scheduler's count has some (the last tier),
// it first waits Request.CatchUp from the node's last pod change for the
// publisher to write it, then takes it.

// Resources are amounts by resource name: cpu in millicores, memory and
// hugepages in bytes, devices in units.
type Resources map[corev1.ResourceName]int64

// Zone is one NUMA zone of a node.
type Zone struct {
	// Name is the zone's name in the NodeResourceTopology ("node-0").
	Name string
	// ID is its NUMA node id; -1 when the name carries none.
	ID int32
	// Available is what new pods may still get in the zone; Allocatable
	// what the zone has for pods at all.
	Available, Allocatable Resources
}

// NodeTopology is what the decision knows of one node.
type NodeTopology struct {
	Name string
	// Zones are the NUMA zones from the node's NodeResourceTopology; nil
	// when it has none (HasNRT false).
	Zones  []Zone
	HasNRT bool
	// Free is the Node's allocatable minus the requests of the pods on it;
	// Allocatable its allocatable. Nil when the Node object is unknown.
	Free, Allocatable Resources
	// Updated is when the NodeResourceTopology was last written (zero:
	// unknown, which counts as stale).
	Updated time.Time
	// LastPodChange is the newest bind or end of a pod on the node.
	LastPodChange time.Time
}

// Stale says the node's NodeResourceTopology may not show its pods (see
// the package comment on staleness).
func (n *NodeTopology) Stale() bool {
	return n.HasNRT && (n.Updated.IsZero() || n.Updated.Before(n.LastPodChange))
}

// Request is what one pod asks for.
type Request struct {
	// Policy is spec.numa.
	Policy pfsv1alpha1.NUMAPolicy
	// Resources are the pod's requests: cpu, memory, hugepages-*, the device.
	Resources Resources
	// Misfits are the nodes where the kubelet rejected this object's pod
	// with TopologyAffinityError.
	Misfits []string
	// Now and CatchUp: a node whose stale zones show no room is taken by
	// the scheduler's count only CatchUp after its last pod change (0: at
	// once). Before that the publisher may simply not have written the
	// change yet, so the decision waits (Decision.RecheckAfter).
	Now     time.Time
	CatchUp time.Duration
	// CatchUpSince is when this pod's decision began waiting for a catch-up
	// (zero: it is not waiting). The wait ends CatchUp after it at the
	// latest, so a node whose pods keep changing cannot hold the pod.
	CatchUpSince time.Time
}

// Fit is how the chosen node fits the request.
type Fit string

const (
	// FitZone means one NUMA zone holds everything the pod asks for.
	FitZone Fit = "SingleZone"
	// FitCrossZone means only the node's zones together do (numa Preferred).
	FitCrossZone Fit = "CrossZone"
	// FitNode means the node has no NodeResourceTopology; it fits as a whole.
	FitNode Fit = "Node"
	// FitScheduler means no data on any candidate; the scheduler decides.
	FitScheduler Fit = "Scheduler"
	// FitNone means no candidate fits.
	FitNone Fit = "None"
)

// Decision is where one pod goes and why.
type Decision struct {
	// Node is the chosen node; "" with FitScheduler or FitNone.
	Node string
	// Zone is the chosen NUMA zone's id (nil: none chosen or unknown).
	Zone *int32
	Fit  Fit
	// Stale says the choice rests on a stale NodeResourceTopology.
	Stale bool
	// Reason is the decision in words, for status and the Event.
	Reason string
	// OnlyMisfits says every candidate was rejected as a misfit (FitNone).
	OnlyMisfits bool
	// RecheckAfter (FitNone) says the best node is the scheduler's-count
	// fallback within Request.CatchUp of its last pod change: decide again
	// after this long, when its NodeResourceTopology may have caught up.
	RecheckAfter time.Duration
}

// tier orders fits, best first (rule 3).
type tier int

const (
	tierZoneFresh tier = iota
	tierNode
	tierZoneStale
	tierCrossFresh
	tierCrossStale
	// tierSchedulerOnly: stale zones show no room but the scheduler's
	// node-wide count does (see schedulerFallback); the kubelet picks.
	tierSchedulerOnly
	tierReject
)

// nodeFit is the evaluation of one node.
type nodeFit struct {
	tier  tier
	zone  int // index into Zones; -1 for none
	score int64
}

// better orders two fits of two nodes (rule 4).
func (f nodeFit) better(g nodeFit, fName, gName string) bool {
	if f.tier != g.tier {
		return f.tier < g.tier
	}
	if f.score != g.score {
		return f.score > g.score
	}
	return fName < gName
}

// Place decides where a pod with req goes among candidates (node names;
// duplicates are ignored); topo holds what is known of the nodes, by name.
func Place(candidates []string, topo map[string]*NodeTopology, req Request) Decision {
	if req.Policy == pfsv1alpha1.NUMAPolicyNone {
		return Decision{Fit: FitScheduler, Reason: "spec.numa is None: the scheduler places the pod without regard to NUMA zones"}
	}
	var (
		best     nodeFit
		bestNode *NodeTopology
		unknown  []string
	)
	best.tier = tierReject
	for _, name := range candidates {
		n := topo[name]
		if n == nil || (!n.HasNRT && n.Free == nil) {
			unknown = append(unknown, name)
			continue
		}
		if slices.Contains(req.Misfits, name) {
			continue
		}
		f := evaluate(n, req)
		if f.tier != tierReject && (bestNode == nil || f.better(best, n.Name, bestNode.Name)) {
			best, bestNode = f, n
		}
	}
	if bestNode != nil {
		if wait := catchUpWait(bestNode, best, req); wait > 0 {
			return Decision{Fit: FitNone, RecheckAfter: wait, Stale: true, Reason: catchUpReason(bestNode, req, wait)}
		}
		return decided(bestNode, best, req)
	}
	if len(uniq(unknown)) == len(uniq(candidates)) {
		return Decision{Fit: FitScheduler, Reason: schedulerReason(unknown)}
	}
	return noFit(candidates, topo, req)
}

// uniq returns the sorted distinct names.
func uniq(names []string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	return slices.Compact(out)
}

func schedulerReason(unknown []string) string {
	if len(unknown) == 0 {
		return "no candidate node is known: the scheduler places the pod"
	}
	return fmt.Sprintf("no topology data for %s (no NodeResourceTopology, no Node object): the scheduler places the pod",
		nameList(uniq(unknown), 8))
}

// zoned says some zone of the node reports resource name.
func zoned(n *NodeTopology, name corev1.ResourceName) bool {
	for i := range n.Zones {
		if _, ok := n.Zones[i].Allocatable[name]; ok {
			return true
		}
		if _, ok := n.Zones[i].Available[name]; ok {
			return true
		}
	}
	return false
}

// split sorts the requested resources into those the node's zones report
// (they must fit in one zone) and the rest, counted node-wide (rule 2).
func split(n *NodeTopology, req Resources) (inZone, nodeWide []corev1.ResourceName) {
	for r := range req {
		if n.HasNRT && zoned(n, r) {
			inZone = append(inZone, r)
		} else {
			nodeWide = append(nodeWide, r)
		}
	}
	return inZone, nodeWide
}

// evaluate fits req on one node: the best zone, else across zones.
func evaluate(n *NodeTopology, req Request) nodeFit {
	reject := nodeFit{tier: tierReject, zone: -1}
	inZone, nodeWide := split(n, req.Resources)
	var nodeScore, nodeCount int64
	for _, r := range nodeWide {
		need := req.Resources[r]
		if n.Free == nil || n.Free[r] < need {
			return reject
		}
		nodeScore += leftover(n.Free[r], need, n.Allocatable[r])
		nodeCount++
	}
	if !n.HasNRT {
		return nodeFit{tier: tierNode, zone: -1, score: mean(nodeScore, nodeCount)}
	}
	// The scheduler counts requests against the Node's allocatable, not
	// the zones' figures, which another publisher writes late and in whole
	// CPUs (kube-reserved's millicores do not show): a node the scheduler
	// would refuse is no candidate, whatever its zones say.
	for _, r := range inZone {
		if free, ok := n.Free[r]; ok && free < req.Resources[r] {
			return reject
		}
	}
	stale := n.Stale()
	bestZone, bestScore := -1, int64(0)
	for i := range n.Zones {
		z := &n.Zones[i]
		score, count, ok := nodeScore, nodeCount, true
		for _, r := range inZone {
			need := req.Resources[r]
			if z.Available[r] < need {
				ok = false
				break
			}
			score += leftover(z.Available[r], need, z.Allocatable[r])
			count++
		}
		if !ok {
			continue
		}
		s := mean(score, count)
		if bestZone < 0 || s > bestScore || (s == bestScore && z.ID < n.Zones[bestZone].ID) {
			bestZone, bestScore = i, s
		}
	}
	if bestZone >= 0 {
		t := tierZoneFresh
		if stale {
			t = tierZoneStale
		}
		return nodeFit{tier: t, zone: bestZone, score: bestScore}
	}
	fallback := schedulerFallback(n, req, stale)
	if req.Policy != pfsv1alpha1.NUMAPolicyPreferred {
		return fallback
	}
	score, count := nodeScore, nodeCount
	for _, r := range inZone {
		var avail, alloc int64
		for i := range n.Zones {
			avail += n.Zones[i].Available[r]
			alloc += n.Zones[i].Allocatable[r]
		}
		if avail < req.Resources[r] {
			return fallback
		}
		score += leftover(avail, req.Resources[r], alloc)
		count++
	}
	t := tierCrossFresh
	if stale {
		t = tierCrossStale
	}
	return nodeFit{tier: t, zone: -1, score: mean(score, count)}
}

// schedulerFallback is the last resort for a node whose stale zones show
// no room: the zones come from another publisher (nfd-topology-updater
// here), which, seen on the kind nodes, kept counting the exclusive CPUs of
// pods that had finished (so it wrote nothing new, and the zones stayed
// older than the node's last pod change), while the scheduler's count (the
// Node's allocatable minus the requests of the pods bound to it) had room.
// Refusing such a node left transfers waiting for a fit the nodes had. It
// is taken only when nothing better fits and leaves the zone to the kubelet,
// whose Topology Manager still aligns. Fresh zones that show no room are
// believed.
func schedulerFallback(n *NodeTopology, req Request, stale bool) nodeFit {
	reject := nodeFit{tier: tierReject, zone: -1}
	if n.Free == nil || !stale {
		return reject
	}
	var score, count int64
	for r, need := range req.Resources {
		free, ok := n.Free[r]
		if !ok || free < need {
			return reject
		}
		score += leftover(free, need, n.Allocatable[r])
		count++
	}
	return nodeFit{tier: tierSchedulerOnly, zone: -1, score: mean(score, count)}
}

// catchUpWait is how long the scheduler's-count fallback on n still waits
// for n's NodeResourceTopology to catch up with its last pod change (0: take
// it now; any better fit is taken at once).
func catchUpWait(n *NodeTopology, f nodeFit, req Request) time.Duration {
	if f.tier != tierSchedulerOnly || req.CatchUp <= 0 || n.LastPodChange.IsZero() {
		return 0
	}
	from := n.LastPodChange
	if !req.CatchUpSince.IsZero() && req.CatchUpSince.Before(from) {
		from = req.CatchUpSince
	}
	return max(0, from.Add(req.CatchUp).Sub(req.Now))
}

func catchUpReason(n *NodeTopology, req Request, wait time.Duration) string {
	return fmt.Sprintf("node %s: its NodeResourceTopology shows no zone with room (%s) but predates a pod change there at %s; "+
		"waiting %s more (up to %s after the change) for it to catch up before counting by the scheduler",
		n.Name, zoneMisses(n, req, -1), n.LastPodChange.UTC().Format(time.RFC3339), wait.Round(time.Millisecond), req.CatchUp)
}

// leftover is the share of alloc still free after taking need from avail,
// in thousandths (0 when alloc is unknown).
func leftover(avail, need, alloc int64) int64 {
	if alloc <= 0 {
		return 0
	}
	return (avail - need) * 1000 / alloc
}

func mean(sum, n int64) int64 {
	if n == 0 {
		return 0
	}
	return sum / n
}

// decided writes the decision for the chosen node.
func decided(n *NodeTopology, f nodeFit, req Request) Decision {
	d := Decision{Node: n.Name, Stale: n.Stale()}
	var b strings.Builder
	switch {
	case f.zone >= 0:
		z := &n.Zones[f.zone]
		d.Fit = FitZone
		if z.ID >= 0 {
			id := z.ID
			d.Zone = &id
		}
		fmt.Fprintf(&b, "node %s zone %s: %s free", n.Name, z.Name, amounts(req.Resources, func(r corev1.ResourceName) int64 {
			if zoned(n, r) {
				return z.Available[r]
			}
			return n.Free[r]
		}))
		if others := zoneMisses(n, req, f.zone); others != "" {
			b.WriteString("; " + others)
		}
	case !n.HasNRT:
		d.Fit = FitNode
		fmt.Fprintf(&b, "node %s: %s free; no NodeResourceTopology for it: the kubelet picks the NUMA zone", n.Name, amounts(req.Resources, func(r corev1.ResourceName) int64 {
			return n.Free[r]
		}))
	case f.tier == tierSchedulerOnly:
		d.Fit = FitNode
		fmt.Fprintf(&b, "node %s: %s free by the scheduler's count, though its stale NodeResourceTopology shows no zone with room (%s): the kubelet picks the NUMA zone",
			n.Name, amounts(req.Resources, func(r corev1.ResourceName) int64 { return n.Free[r] }), zoneMisses(n, req, -1))
	default:
		d.Fit = FitCrossZone
		fmt.Fprintf(&b, "node %s across zones (numa Preferred): no single zone fits: %s", n.Name, zoneMisses(n, req, -1))
	}
	if unz := unzonedNames(n, req); n.HasNRT && unz != "" {
		fmt.Fprintf(&b, "; %s in no NUMA zone (no topology from its device plugin): counted node-wide", unz)
	}
	if d.Stale {
		b.WriteString("; " + staleNote(n))
	}
	d.Reason = b.String()
	return d
}

func staleNote(n *NodeTopology) string {
	if n.Updated.IsZero() {
		return "its NodeResourceTopology is stale (no update time)"
	}
	return fmt.Sprintf("its NodeResourceTopology is stale (updated %s, a pod changed on the node at %s): no fresh node fits",
		n.Updated.UTC().Format(time.RFC3339), n.LastPodChange.UTC().Format(time.RFC3339))
}

// zoneMisses says why each zone but skip does not fit.
func zoneMisses(n *NodeTopology, req Request, skip int) string {
	var parts []string
	for i := range n.Zones {
		if i == skip {
			continue
		}
		z := &n.Zones[i]
		if miss := lacks(req.Resources, func(r corev1.ResourceName) (int64, bool) {
			if !zoned(n, r) {
				return 0, false
			}
			return z.Available[r], true
		}); miss != "" {
			parts = append(parts, fmt.Sprintf("zone %s lacks %s", z.Name, miss))
		}
	}
	return strings.Join(parts, ", ")
}

// unzonedNames lists the requested resources no zone reports.
func unzonedNames(n *NodeTopology, req Request) string {
	var names []string
	for _, r := range sortedNames(req.Resources) {
		if !zoned(n, r) {
			names = append(names, string(r))
		}
	}
	return strings.Join(names, ", ")
}

// lacks lists "need r (free f)" for every resource short in have; have's
// second result false skips the resource.
func lacks(req Resources, have func(corev1.ResourceName) (int64, bool)) string {
	var parts []string
	for _, r := range sortedNames(req) {
		got, ok := have(r)
		if ok && got < req[r] {
			parts = append(parts, fmt.Sprintf("%s (%s free, %s needed)", r, amount(r, max(got, 0)), amount(r, req[r])))
		}
	}
	return strings.Join(parts, ", ")
}

// noFit says why each candidate was rejected.
func noFit(candidates []string, topo map[string]*NodeTopology, req Request) Decision {
	names := uniq(candidates)
	d := Decision{Fit: FitNone, OnlyMisfits: true}
	var parts []string
	for _, name := range names {
		why := rejection(topo[name], name, req)
		if !slices.Contains(req.Misfits, name) {
			d.OnlyMisfits = false
		}
		parts = append(parts, name+": "+why)
	}
	const show = 8
	if len(parts) > show {
		parts = append(parts[:show], fmt.Sprintf("and %d more", len(parts)-show))
	}
	d.Reason = fmt.Sprintf("no candidate node fits (spec.numa %s): %s", req.Policy, strings.Join(parts, "; "))
	return d
}

// rejection says why node n does not take the pod.
func rejection(n *NodeTopology, name string, req Request) string {
	switch {
	case slices.Contains(req.Misfits, name):
		return "the kubelet rejected this object's pod here (TopologyAffinityError)"
	case n == nil || (!n.HasNRT && n.Free == nil):
		return "no topology data"
	}
	var node []string
	if miss := lacks(req.Resources, func(r corev1.ResourceName) (int64, bool) {
		if free, ok := n.Free[r]; ok || !n.HasNRT || !zoned(n, r) {
			return free, true
		}
		return 0, false
	}); miss != "" {
		node = append(node, "node lacks "+miss)
	}
	if n.HasNRT {
		total := lacks(req.Resources, func(r corev1.ResourceName) (int64, bool) {
			if !zoned(n, r) {
				return 0, false
			}
			var sum int64
			for i := range n.Zones {
				sum += n.Zones[i].Available[r]
			}
			return sum, true
		})
		switch {
		case len(n.Zones) == 0:
			node = append(node, "its NodeResourceTopology has no NUMA zones")
		case total != "":
			node = append(node, "its zones together lack "+total)
		default:
			// With the node-wide shortfall said, zones that lack nothing
			// zoned have nothing to add.
			if zm := zoneMisses(n, req, -1); zm != "" {
				node = append(node, "no single zone fits: "+zm)
			} else if len(node) == 0 {
				node = append(node, "no single zone fits")
			}
		}
	}
	if len(node) == 0 {
		node = append(node, "does not fit")
	}
	return strings.Join(node, "; ")
}

func sortedNames(rs Resources) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(rs))
	for r := range rs {
		names = append(names, r)
	}
	slices.Sort(names)
	return names
}

// amounts writes "2 cpu, 512Mi hugepages-2Mi, 1 packetfs.io/pfsdata0" for the
// requested resources with the amounts free gives.
func amounts(req Resources, free func(corev1.ResourceName) int64) string {
	parts := make([]string, 0, len(req))
	for _, r := range sortedNames(req) {
		parts = append(parts, amount(r, free(r))+" "+string(r))
	}
	return strings.Join(parts, ", ")
}

// amount writes one amount: cpu as cores ("2", "1500m"), memory and
// hugepages as binary quantities ("512Mi"), the rest as counts.
func amount(r corev1.ResourceName, v int64) string {
	switch {
	case r == corev1.ResourceCPU:
		return resource.NewMilliQuantity(v, resource.DecimalSI).String()
	case r == corev1.ResourceMemory || strings.HasPrefix(string(r), corev1.ResourceHugePagesPrefix):
		return resource.NewQuantity(v, resource.BinarySI).String()
	}
	return resource.NewQuantity(v, resource.DecimalSI).String()
}

// nameList joins up to show names, then "and N more".
func nameList(names []string, show int) string {
	if len(names) <= show {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:show], ", ") + fmt.Sprintf(" and %d more", len(names)-show)
}
