// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	topov1alpha2 "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha2"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

// testTopology: node-feature-discovery's topology updater (hack/kind/nfd.sh)
// publishes a NodeResourceTopology for every node, written from the
// kubelets' pod-resources API (static CPU manager, Memory Manager,
// single-numa-node Topology Manager): one zone node-0 with its cpu, memory
// and hugepages. The operator places from these objects (checkNUMAPlacement).
func testTopology(ctx context.Context, t *testing.T) {
	var list topov1alpha2.NodeResourceTopologyList
	err := poll(ctx, 2*time.Minute, func() (bool, error) {
		if err := env.c.List(ctx, &list); err != nil {
			return false, err
		}
		return len(list.Items) == len(env.nodes), nil
	})
	if err != nil {
		t.Fatalf("%d NodeResourceTopology objects, want one per node (%d): %v", len(list.Items), len(env.nodes), err)
	}
	for _, nrt := range list.Items {
		var zones []string
		for _, z := range nrt.Zones {
			var res []string
			for _, r := range z.Resources {
				res = append(res, r.Name+"="+r.Available.String())
			}
			zones = append(zones, z.Name+" ("+z.Type+"): "+strings.Join(res, " "))
			if z.Type == "Node" && z.Name == "node-0" && !strings.Contains(strings.Join(res, " "), "cpu=") {
				t.Errorf("%s zone %s reports no cpu: %v", nrt.Name, z.Name, res)
			}
		}
		if len(zones) == 0 {
			t.Errorf("%s has no zone", nrt.Name)
		}
		t.Logf("%s: %s", nrt.Name, strings.Join(zones, "; "))
	}
}

// checkNUMAPlacement: with NodeResourceTopology published, the operator
// chose a node and a zone for each side of x, and says why.
func checkNUMAPlacement(t *testing.T, x *pfsv1alpha1.PfsTransfer) {
	t.Helper()
	for side, st := range map[string]*pfsv1alpha1.EndpointStatus{"sender": x.Status.Sender, "receiver": x.Status.Receiver} {
		p := (*pfsv1alpha1.NUMAPlacement)(nil)
		if st != nil {
			p = st.NUMAPlacement
		}
		// A side placed a moment after the previous transfer's pods ended
		// may find nfd-topology-updater's zones not yet written: the
		// operator waits --topology-catch-up for them (docs/design/numa.md), so a
		// single zone is still required here.
		if p == nil || p.Fit != pfsv1alpha1.NUMAFitSingleZone || p.Zone == nil || p.Node != st.Node || !strings.Contains(p.Reason, "node-0") {
			t.Errorf("%s numaPlacement %+v on %s: want one zone (node-0) chosen from the NodeResourceTopology", side, p, st.Node)
			continue
		}
		t.Logf("%s placed on %s zone %d: %s", side, p.Node, *p.Zone, p.Reason)
	}
}
