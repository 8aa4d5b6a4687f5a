#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Whereabouts, the cluster-wide IPAM plugin, on every node of the kind
# cluster: its binary (built from the Go module proxy by go-tools.sh) next
# to the other CNI plugins, its CRDs (from its module), and a kubeconfig
# with the token of its ServiceAccount. A NetworkAttachmentDefinition with
# "ipam": {"type": "whereabouts", "range": ...} then gets addresses that no
# two pods share, on any node. Idempotent.
# Usage: whereabouts.sh <kubectl> <kubeconfig> <node...>
set -euo pipefail
source "$(dirname "$0")/lib.sh"

kubectl=$1 kubeconfig=$2; shift 2
nodes=("$@")
k() { "$kubectl" --kubeconfig "$kubeconfig" "$@"; }
on() { local n=$1; shift; podman exec -i "$n" "$@"; }

"$HACK_KIND/go-tools.sh" whereabouts
bin="$TOOLS_DIR/whereabouts-$WHEREABOUTS_VERSION/whereabouts"
crds="$(go env GOMODCACHE)/github.com/k8snetworkplumbingwg/whereabouts@$WHEREABOUTS_VERSION/doc/crds"
for c in ippools overlappingrangeipreservations; do
  k apply -f "$crds/whereabouts.cni.cncf.io_$c.yaml" >/dev/null
done
k apply -f "$HACK_KIND/manifests/whereabouts.yaml" >/dev/null
kubeconfig_wb=$(sa_kubeconfig k whereabouts-token whereabouts)

for n in "${nodes[@]}"; do
  podman cp "$bin" "$n:/opt/cni/bin/whereabouts"
  on "$n" mkdir -p /etc/cni/net.d/whereabouts.d
  on "$n" tee /etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig >/dev/null <<<"$kubeconfig_wb"
  on "$n" chmod 600 /etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig
  on "$n" tee /etc/cni/net.d/whereabouts.d/whereabouts.conf >/dev/null <<CONF
{"datastore": "kubernetes", "kubernetes": {"kubeconfig": "/etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig"}}
CONF
done
log "whereabouts $WHEREABOUTS_VERSION on ${#nodes[@]} nodes"
