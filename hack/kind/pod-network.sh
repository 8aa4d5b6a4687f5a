#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The pod network of the kind cluster, without kindnetd: on every node a
# bridge CNI config for the node's podCIDR, routes to the other nodes'
# podCIDRs, masquerade for traffic that leaves the pod network, and Multus
# in front of the bridge so pods can ask for extra networks.
# Idempotent. Usage: pod-network.sh <kubectl> <kubeconfig> <node...>
set -euo pipefail
source "$(dirname "$0")/lib.sh"

kubectl=$1 kubeconfig=$2; shift 2
nodes=("$@")
k() { "$kubectl" --kubeconfig "$kubeconfig" "$@"; }
on() { local n=$1; shift; podman exec -i "$n" "$@"; }
POD_NET=10.244.0.0/16

declare -A cidr ip
for n in "${nodes[@]}"; do
  for _ in $(seq 60); do
    cidr[$n]=$(k get node "$n" -o jsonpath='{.spec.podCIDR}')
    [ -n "${cidr[$n]}" ] && break; sleep 1
  done
  [ -n "${cidr[$n]}" ] || die "node $n has no podCIDR (controller-manager not allocating?)"
  ip[$n]=$(k get node "$n" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}')
done

# Multus identity: a token of the multus ServiceAccount and the cluster CA.
k apply -f "$HACK_KIND/manifests/multus.yaml" >/dev/null
kubeconfig_multus=$(sa_kubeconfig k multus-token multus)

for n in "${nodes[@]}"; do
  on "$n" mkdir -p /etc/cni/net.d/multus.d
  on "$n" tee /etc/cni/net.d/multus.d/multus.kubeconfig >/dev/null <<<"$kubeconfig_multus"
  on "$n" chmod 600 /etc/cni/net.d/multus.d/multus.kubeconfig
  # Pods get the bridge as eth0; masquerade is ours (below) so that pod IPs
  # stay visible between nodes.
  bridge=$(jq -n --arg subnet "${cidr[$n]}" '{
    cniVersion: "0.4.0", name: "pfs-pods",
    plugins: [
      {type: "bridge", bridge: "cni0", isDefaultGateway: true, hairpinMode: true, ipMasq: false,
       ipam: {type: "host-local", ranges: [[{subnet: $subnet}]]}},
      {type: "portmap", capabilities: {portMappings: true}}
    ]}')
  on "$n" tee /etc/cni/net.d/10-pfs-bridge.conflist >/dev/null <<<"$bridge"
  # containerd uses the first config by name: Multus, which delegates the
  # default network to the bridge. The delegate is inline: Multus keeps only
  # the fields it knows when it loads a conflist by path.
  jq -n --argjson bridge "$bridge" '{
    cniVersion: "0.4.0", name: "multus-cni-network", type: "multus",
    kubeconfig: "/etc/cni/net.d/multus.d/multus.kubeconfig",
    cniDir: "/var/lib/cni/multus", delegates: [$bridge]}' |
    on "$n" tee /etc/cni/net.d/00-multus.conf >/dev/null
  for m in "${nodes[@]}"; do
    [ "$m" = "$n" ] || on "$n" ip route replace "${cidr[$m]}" via "${ip[$m]}"
  done
  on "$n" sh -c "iptables -t nat -C POSTROUTING -s $POD_NET ! -d $POD_NET -j MASQUERADE 2>/dev/null ||
    iptables -t nat -A POSTROUTING -s $POD_NET ! -d $POD_NET -j MASQUERADE"
done
log "pod network: ${nodes[*]} ($(for n in "${nodes[@]}"; do printf '%s ' "${cidr[$n]}"; done))"
