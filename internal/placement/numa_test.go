// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

const (
	nic  corev1.ResourceName = "packetfs.io/pfsdata0"
	hp2M corev1.ResourceName = "hugepages-2Mi"
	mi                       = int64(1) << 20
	gi                       = int64(1) << 30
)

var (
	t0    = time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	fresh = t0.Add(time.Minute) // NRT written after the last pod change
)

// zone is a NUMA zone with cpus (whole), memory and hugepages-2Mi (MiB) and
// NICs free; allocatable is twice that (so scores differ with the free part).
func zone(id int32, cpus, memMi, hpMi, nics int64) Zone {
	avail := Resources{corev1.ResourceCPU: cpus * 1000, corev1.ResourceMemory: memMi * mi, hp2M: hpMi * mi}
	if nics >= 0 {
		avail[nic] = nics
	}
	alloc := Resources{}
	for r, v := range avail {
		alloc[r] = 2 * v
		if alloc[r] == 0 {
			alloc[r] = 4 * gi
		}
	}
	return Zone{Name: fmt.Sprintf("node-%d", id), ID: id, Available: avail, Allocatable: alloc}
}

// nrtNode is a node with a fresh NodeResourceTopology of these zones.
func nrtNode(name string, zones ...Zone) *NodeTopology {
	return &NodeTopology{Name: name, HasNRT: true, Zones: zones, Updated: fresh, LastPodChange: t0}
}

// req asks for cpus, 512Mi of memory, hugepages-2Mi (MiB) and NICs.
func req(p pfsv1alpha1.NUMAPolicy, cpus, hpMi, nics int64) Request {
	r := Request{Policy: p, Resources: Resources{corev1.ResourceCPU: cpus * 1000, corev1.ResourceMemory: 512 * mi}}
	if hpMi > 0 {
		r.Resources[hp2M] = hpMi * mi
	}
	if nics > 0 {
		r.Resources[nic] = nics
	}
	return r
}

func topoOf(nodes ...*NodeTopology) (map[string]*NodeTopology, []string) {
	m := map[string]*NodeTopology{}
	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		m[n.Name] = n
		names = append(names, n.Name)
	}
	return m, names
}

const (
	pref = pfsv1alpha1.NUMAPolicyPreferred
	reqd = pfsv1alpha1.NUMAPolicyRequired
)

func TestPlace(t *testing.T) {
	stale := func(n *NodeTopology) *NodeTopology { n.Updated = t0.Add(-time.Minute); return n }
	noTime := func(n *NodeTopology) *NodeTopology { n.Updated = time.Time{}; return n }
	nodeLevel := func(name string, cpus int64) *NodeTopology {
		free := Resources{corev1.ResourceCPU: cpus * 1000, corev1.ResourceMemory: 8 * gi, hp2M: 2 * gi, nic: 1}
		return &NodeTopology{Name: name, Free: free, Allocatable: Resources{corev1.ResourceCPU: 8000, corev1.ResourceMemory: 16 * gi, hp2M: 4 * gi, nic: 2}}
	}
	tests := map[string]struct {
		nodes      []*NodeTopology
		candidates []string // default: every node
		req        Request
		want       Decision
		reason     []string // substrings of Reason
	}{
		"1 zone": {
			nodes:  []*NodeTopology{nrtNode("n1", zone(0, 4, 4096, 1024, 1))},
			req:    req(pref, 2, 512, 1),
			want:   Decision{Node: "n1", Zone: ptr.To[int32](0), Fit: FitZone},
			reason: []string{"node n1 zone node-0: 4 cpu, 1Gi hugepages-2Mi, 4Gi memory, 1 packetfs.io/pfsdata0 free"},
		},
		"2 zones: the one with the most left after placement": {
			nodes:  []*NodeTopology{nrtNode("n1", zone(0, 2, 4096, 1024, 1), zone(1, 6, 4096, 1024, 1))},
			req:    req(pref, 2, 0, 1),
			want:   Decision{Node: "n1", Zone: ptr.To[int32](1), Fit: FitZone},
			reason: []string{"zone node-1: 6 cpu"},
		},
		"4 zones: only zone 3 has everything": {
			nodes: []*NodeTopology{nrtNode("n1", zone(0, 8, 4096, 0, 1), zone(1, 8, 4096, 1024, 0),
				zone(2, 1, 4096, 1024, 1), zone(3, 2, 4096, 1024, 1))},
			req:  req(reqd, 2, 512, 1),
			want: Decision{Node: "n1", Zone: ptr.To[int32](3), Fit: FitZone},
			reason: []string{"zone node-0 lacks hugepages-2Mi (0 free, 512Mi needed)",
				"zone node-1 lacks packetfs.io/pfsdata0 (0 free, 1 needed)", "zone node-2 lacks cpu (1 free, 2 needed)"},
		},
		"fragmented: 3 cpus over two zones of 2, Preferred goes across zones": {
			nodes:  []*NodeTopology{nrtNode("n1", zone(0, 2, 4096, 0, -1), zone(1, 2, 4096, 0, -1))},
			req:    req(pref, 3, 0, 0),
			want:   Decision{Node: "n1", Fit: FitCrossZone},
			reason: []string{"node n1 across zones (numa Preferred): no single zone fits", "zone node-0 lacks cpu (2 free, 3 needed)"},
		},
		"fragmented: Required refuses across zones": {
			nodes:  []*NodeTopology{nrtNode("n1", zone(0, 2, 4096, 0, -1), zone(1, 2, 4096, 0, -1))},
			req:    req(reqd, 3, 0, 0),
			want:   Decision{Fit: FitNone},
			reason: []string{"no candidate node fits (spec.numa Required): n1: no single zone fits: zone node-0 lacks cpu (2 free, 3 needed), zone node-1 lacks cpu"},
		},
		"fragmented: a node with one whole zone beats a cross-zone one with more in total": {
			nodes: []*NodeTopology{nrtNode("a", zone(0, 3, 4096, 0, -1), zone(1, 3, 4096, 0, -1)),
				nrtNode("b", zone(0, 4, 4096, 0, -1), zone(1, 0, 4096, 0, -1))},
			req:  req(pref, 4, 0, 0),
			want: Decision{Node: "b", Zone: ptr.To[int32](0), Fit: FitZone},
		},
		"the NIC on another zone than the free CPUs: Preferred crosses, with the reason": {
			nodes:  []*NodeTopology{nrtNode("n1", zone(0, 8, 4096, 1024, 0), zone(1, 0, 4096, 1024, 1))},
			req:    req(pref, 2, 0, 1),
			want:   Decision{Node: "n1", Fit: FitCrossZone},
			reason: []string{"zone node-0 lacks packetfs.io/pfsdata0 (0 free, 1 needed)", "zone node-1 lacks cpu (0 free, 2 needed)"},
		},
		"the NIC on another zone than the free CPUs: Required goes to the node where they meet": {
			nodes: []*NodeTopology{nrtNode("a", zone(0, 8, 4096, 1024, 0), zone(1, 0, 4096, 1024, 1)),
				nrtNode("b", zone(0, 0, 4096, 1024, 1), zone(1, 2, 4096, 1024, 1))},
			req:    req(reqd, 2, 0, 1),
			want:   Decision{Node: "b", Zone: ptr.To[int32](1), Fit: FitZone},
			reason: []string{"node b zone node-1", "zone node-0 lacks cpu (0 free, 2 needed)"},
		},
		"hugepages on one zone only": {
			nodes:  []*NodeTopology{nrtNode("n1", zone(0, 8, 4096, 0, 1), zone(1, 2, 4096, 2048, 1))},
			req:    req(reqd, 2, 1024, 1),
			want:   Decision{Node: "n1", Zone: ptr.To[int32](1), Fit: FitZone},
			reason: []string{"2Gi hugepages-2Mi", "zone node-0 lacks hugepages-2Mi (0 free, 1Gi needed)"},
		},
		"nothing fits: each node's why": {
			nodes: []*NodeTopology{nrtNode("a", zone(0, 1, 4096, 0, 1)), nodeLevel("b", 1)},
			req:   req(pref, 2, 0, 1),
			want:  Decision{Fit: FitNone},
			reason: []string{"a: its zones together lack cpu (1 free, 2 needed)", "b: node lacks cpu (1 free, 2 needed)",
				"spec.numa Preferred"},
		},
		"a stale NRT comes after a fresh one with less free": {
			nodes: []*NodeTopology{stale(nrtNode("a", zone(0, 8, 8192, 2048, 1))), nrtNode("b", zone(0, 2, 4096, 1024, 1))},
			req:   req(reqd, 2, 0, 1),
			want:  Decision{Node: "b", Zone: ptr.To[int32](0), Fit: FitZone},
		},
		"only a stale NRT fits: chosen, and said": {
			nodes:  []*NodeTopology{stale(nrtNode("a", zone(0, 8, 8192, 2048, 1))), nrtNode("b", zone(0, 1, 4096, 1024, 1))},
			req:    req(reqd, 2, 0, 1),
			want:   Decision{Node: "a", Zone: ptr.To[int32](0), Fit: FitZone, Stale: true},
			reason: []string{"its NodeResourceTopology is stale (updated 2026-11-27T09:59:00Z, a pod changed on the node at 2026-11-27T10:00:00Z): no fresh node fits"},
		},
		"an NRT without update time is stale": {
			nodes:  []*NodeTopology{noTime(nrtNode("a", zone(0, 8, 8192, 2048, 1)))},
			req:    req(pref, 2, 0, 1),
			want:   Decision{Node: "a", Zone: ptr.To[int32](0), Fit: FitZone, Stale: true},
			reason: []string{"stale (no update time)"},
		},
		"node-level data (no NRT) ranks after fresh zones, before stale ones": {
			nodes:  []*NodeTopology{stale(nrtNode("a", zone(0, 8, 8192, 2048, 1))), nodeLevel("b", 2)},
			req:    req(reqd, 2, 0, 1),
			want:   Decision{Node: "b", Fit: FitNode},
			reason: []string{"node b: 2 cpu, 8Gi memory, 1 packetfs.io/pfsdata0 free; no NodeResourceTopology for it: the kubelet picks the NUMA zone"},
		},
		"a device no zone reports is counted node-wide": {
			nodes: []*NodeTopology{func() *NodeTopology {
				n := nrtNode("a", zone(0, 4, 4096, 0, -1), zone(1, 4, 4096, 0, -1))
				n.Free, n.Allocatable = Resources{nic: 1}, Resources{nic: 1}
				return n
			}()},
			req:    req(reqd, 2, 0, 1),
			want:   Decision{Node: "a", Zone: ptr.To[int32](0), Fit: FitZone},
			reason: []string{"packetfs.io/pfsdata0 in no NUMA zone (no topology from its device plugin): counted node-wide"},
		},
		"a device no zone reports and the node has none free": {
			nodes:  []*NodeTopology{func() *NodeTopology { n := nrtNode("a", zone(0, 4, 4096, 0, -1)); n.Free = Resources{nic: 0}; return n }()},
			req:    req(reqd, 2, 0, 1),
			want:   Decision{Fit: FitNone},
			reason: []string{"a: node lacks packetfs.io/pfsdata0 (0 free, 1 needed)"},
		},
		"tie: the node name decides": {
			nodes: []*NodeTopology{nrtNode("b", zone(0, 4, 4096, 0, 1)), nrtNode("a", zone(0, 4, 4096, 0, 1))},
			req:   req(reqd, 2, 0, 1),
			want:  Decision{Node: "a", Zone: ptr.To[int32](0), Fit: FitZone},
		},
		"tie: the lower zone id decides": {
			nodes: []*NodeTopology{nrtNode("a", zone(1, 4, 4096, 0, 1), zone(0, 4, 4096, 0, 1))},
			req:   req(reqd, 2, 0, 1),
			want:  Decision{Node: "a", Zone: ptr.To[int32](0), Fit: FitZone},
		},
		"only candidates count": {
			nodes:      []*NodeTopology{nrtNode("a", zone(0, 8, 4096, 0, 1)), nrtNode("b", zone(0, 2, 4096, 0, 1))},
			candidates: []string{"b"},
			req:        req(reqd, 2, 0, 1),
			want:       Decision{Node: "b", Zone: ptr.To[int32](0), Fit: FitZone},
		},
		"a misfit node is out": {
			nodes: []*NodeTopology{nrtNode("a", zone(0, 8, 4096, 0, 1)), nrtNode("b", zone(0, 2, 4096, 0, 1))},
			req:   Request{Policy: pref, Resources: req(pref, 2, 0, 1).Resources, Misfits: []string{"a"}},
			want:  Decision{Node: "b", Zone: ptr.To[int32](0), Fit: FitZone},
		},
		"every candidate a misfit": {
			nodes:  []*NodeTopology{nrtNode("a", zone(0, 8, 4096, 0, 1))},
			req:    Request{Policy: pref, Resources: req(pref, 2, 0, 1).Resources, Misfits: []string{"a"}},
			want:   Decision{Fit: FitNone, OnlyMisfits: true},
			reason: []string{"a: the kubelet rejected this object's pod here (TopologyAffinityError)"},
		},
		"no data on any candidate: the scheduler places": {
			candidates: []string{"x", "y", "x"},
			req:        req(reqd, 2, 0, 1),
			want:       Decision{Fit: FitScheduler},
			reason:     []string{"no topology data for x, y (no NodeResourceTopology, no Node object)"},
		},
		"no data on one candidate: the others decide": {
			nodes:      []*NodeTopology{nrtNode("a", zone(0, 8, 4096, 0, 1))},
			candidates: []string{"a", "x"},
			req:        req(reqd, 2, 0, 1),
			want:       Decision{Node: "a", Zone: ptr.To[int32](0), Fit: FitZone},
		},
		"numa None: not decided here": {
			nodes:  []*NodeTopology{nrtNode("a", zone(0, 8, 4096, 0, 1))},
			req:    req(pfsv1alpha1.NUMAPolicyNone, 2, 0, 1),
			want:   Decision{Fit: FitScheduler},
			reason: []string{"spec.numa is None"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			topo, names := topoOf(tc.nodes...)
			if tc.candidates != nil {
				names = tc.candidates
			}
			got := Place(names, topo, tc.req)
			reason := got.Reason
			got.Reason = ""
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Place (-want +got):\n%s\nreason: %s", diff, reason)
			}
			for _, s := range tc.reason {
				if !strings.Contains(reason, s) {
					t.Errorf("reason %q\n does not say %q", reason, s)
				}
			}
			if reason == "" {
				t.Error("no reason")
			}
			if strings.HasSuffix(reason, ": ") || strings.Contains(reason, ": ;") {
				t.Errorf("reason %q has a clause with nothing after its colon", reason)
			}
		})
	}
}

// The decision does not depend on the order of the candidates or of a
// request's map.
func TestPlaceDeterministic(t *testing.T) {
	nodes := []*NodeTopology{
		nrtNode("c", zone(0, 4, 4096, 1024, 1), zone(1, 4, 4096, 1024, 1)),
		nrtNode("a", zone(0, 4, 4096, 1024, 1), zone(1, 4, 4096, 1024, 1)),
		nrtNode("b", zone(1, 4, 4096, 1024, 1), zone(0, 4, 4096, 1024, 1)),
	}
	topo, _ := topoOf(nodes...)
	want := Place([]string{"a", "b", "c"}, topo, req(reqd, 2, 512, 1))
	for i := 0; i < 50; i++ {
		got := Place([]string{"c", "b", "a"}, topo, req(reqd, 2, 512, 1))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("run %d differs (-first +now):\n%s", i, diff)
		}
	}
	if want.Node != "a" || *want.Zone != 0 {
		t.Errorf("got node %s zone %d, want a, 0", want.Node, *want.Zone)
	}
}

// BenchmarkPlace1000Nodes8Zones is one decision over 1000 candidate nodes
// with 8 NUMA zones each (the bound: under 10 ms per decision).
//
//	go test ./internal/placement -run '^$' -bench Place1000 -benchmem
func BenchmarkPlace1000Nodes8Zones(b *testing.B) {
	topo := map[string]*NodeTopology{}
	names := make([]string, 0, 1000)
	for i := 0; i < 1000; i++ {
		zones := make([]Zone, 8)
		for z := range zones {
			// Most zones lack something; a few fit, with varying room.
			zones[z] = zone(int32(z), int64((i+z)%5), 4096, int64((i*z)%3)*512, int64((i+z)%2))
		}
		n := nrtNode(fmt.Sprintf("node-%04d", i), zones...)
		if i%7 == 0 {
			n.Updated = t0.Add(-time.Minute)
		}
		topo[n.Name] = n
		names = append(names, n.Name)
	}
	r := req(reqd, 3, 512, 1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if d := Place(names, topo, r); d.Fit != FitZone {
			b.Fatalf("decision %+v", d)
		}
	}
}

// The zones may say a CPU is free when the scheduler, counting millicores
// against the Node's allocatable (kube-reserved included), would refuse
// the pod: seen on the kind nodes (zone 1 cpu free, Node 990m). The node is
// no candidate then, and the reason gives the scheduler's figure.
func TestPlaceZonesAgreeWithTheScheduler(t *testing.T) {
	n := nrtNode("a", zone(0, 1, 4096, 0, -1))
	n.Free = Resources{corev1.ResourceCPU: 990, corev1.ResourceMemory: 4 * gi}
	b := nrtNode("b", zone(0, 1, 4096, 0, -1))
	b.Free = Resources{corev1.ResourceCPU: 1990, corev1.ResourceMemory: 4 * gi}
	topo := map[string]*NodeTopology{"a": n, "b": b}
	d := Place([]string{"a", "b"}, topo, req(pref, 1, 0, 0))
	if d.Node != "b" {
		t.Errorf("placed on %q (%s), want b: a's Node has 990m cpu left", d.Node, d.Reason)
	}
	d = Place([]string{"a"}, topo, req(pref, 1, 0, 0))
	if d.Fit != FitNone || !strings.Contains(d.Reason, "a: node lacks cpu (990m free, 1 needed)") {
		t.Errorf("a alone: %+v", d)
	}
}

// The zones' publisher lags: its zones show no CPU where the scheduler's
// count has one (it kept counting the exclusive CPUs of pods that finished,
// seen on the kind nodes). Stale zones that show no room give way to the
// scheduler's count, last, and the kubelet picks the zone; fresh ones are
// believed.
func TestPlaceSchedulerOnlyFallback(t *testing.T) {
	n := nrtNode("a", zone(0, 0, 4096, 0, -1))
	n.Free = Resources{corev1.ResourceCPU: 1990, corev1.ResourceMemory: 4 * gi}
	n.Allocatable = Resources{corev1.ResourceCPU: 1990, corev1.ResourceMemory: 8 * gi}
	topo := map[string]*NodeTopology{"a": n}
	for _, p := range []pfsv1alpha1.NUMAPolicy{pref, reqd} {
		if d := Place([]string{"a"}, topo, req(p, 1, 0, 0)); d.Fit != FitNone {
			t.Errorf("%s on fresh zones: %+v, want no fit", p, d)
		}
	}
	n.LastPodChange = n.Updated.Add(time.Second) // a pod finished after the zones were written
	for _, p := range []pfsv1alpha1.NUMAPolicy{pref, reqd} {
		d := Place([]string{"a"}, topo, req(p, 1, 0, 0))
		if d.Node != "a" || d.Fit != FitNode || d.Zone != nil || !strings.Contains(d.Reason, "free by the scheduler's count, though its stale NodeResourceTopology shows no zone with room") {
			t.Errorf("%s on stale zones: %+v", p, d)
		}
	}
	// Any zone fit beats it.
	topo["b"] = nrtNode("b", zone(0, 1, 4096, 0, -1))
	if d := Place([]string{"a", "b"}, topo, req(pref, 1, 0, 0)); d.Node != "b" || d.Fit != FitZone {
		t.Errorf("a zone fit elsewhere: %+v", d)
	}
}

// Right after a pod on the node ended, its publisher may just not have
// written the change yet (nfd-topology-updater writes every few seconds):
// the fallback waits CatchUp from that change, says so, and is taken after
// it. A zone fit elsewhere never waits.
func TestPlaceSchedulerOnlyWaitsForCatchUp(t *testing.T) {
	n := nrtNode("a", zone(0, 0, 4096, 0, -1))
	n.Free = Resources{corev1.ResourceCPU: 1990, corev1.ResourceMemory: 4 * gi}
	n.Allocatable = Resources{corev1.ResourceCPU: 1990, corev1.ResourceMemory: 8 * gi}
	n.LastPodChange = n.Updated.Add(time.Second)
	topo := map[string]*NodeTopology{"a": n}
	r := req(reqd, 1, 0, 0)
	r.CatchUp = 10 * time.Second
	r.Now = n.LastPodChange.Add(4 * time.Second)
	d := Place([]string{"a"}, topo, r)
	if d.Fit != FitNone || d.Node != "" || d.RecheckAfter != 6*time.Second || d.OnlyMisfits ||
		!strings.Contains(d.Reason, "node a: its NodeResourceTopology shows no zone with room (zone node-0 lacks cpu") ||
		!strings.Contains(d.Reason, "waiting 6s more (up to 10s after the change)") {
		t.Errorf("within the catch-up: %+v", d)
	}
	r.Now = n.LastPodChange.Add(r.CatchUp)
	if d := Place([]string{"a"}, topo, r); d.Fit != FitNode || d.Node != "a" || d.RecheckAfter != 0 {
		t.Errorf("at the end of the catch-up: %+v", d)
	}
	r.Now = n.LastPodChange.Add(time.Second)
	r.CatchUp = 0
	if d := Place([]string{"a"}, topo, r); d.Fit != FitNode {
		t.Errorf("without a catch-up: %+v", d)
	}
	r.CatchUp = 10 * time.Second
	// Pods that keep changing on the node do not extend the wait past
	// CatchUp from when it began.
	r.CatchUpSince = n.LastPodChange
	n.LastPodChange = n.LastPodChange.Add(8 * time.Second)
	r.Now = r.CatchUpSince.Add(9 * time.Second)
	if d := Place([]string{"a"}, topo, r); d.Fit != FitNone || d.RecheckAfter != time.Second {
		t.Errorf("a second pod change during the wait: %+v", d)
	}
	r.Now = r.CatchUpSince.Add(10 * time.Second)
	if d := Place([]string{"a"}, topo, r); d.Fit != FitNode || d.Node != "a" {
		t.Errorf("CatchUp after the wait began, the node changing still: %+v", d)
	}
	r.CatchUpSince = time.Time{}
	topo["b"] = nrtNode("b", zone(0, 1, 4096, 0, -1))
	if d := Place([]string{"a", "b"}, topo, r); d.Node != "b" || d.Fit != FitZone || d.RecheckAfter != 0 {
		t.Errorf("a zone fit elsewhere: %+v", d)
	}
}
