#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The PacketFS data network: veth pairs whose two ends live in the network
# namespaces of two node containers, so a pod on each node can own one end
# (host-device CNI) and traffic crosses nodes on a link of its own.
#   pfsdata0  one queue each way
#   pfsdata1  4 TX/RX queues each way (multi-queue AF_XDP)
#   pfsdata2  one queue each way, left in the nodes: the master of macvlan
#             interfaces (pods share it; PfsTransfer endpoints' ips)
# MTU 3500 keeps native XDP possible on veth (peer MTU must be <= 3506).
# The links a pod takes whole (pfsdata0, pfsdata1) are advertised as the
# extended resources packetfs.io/<link> by the operator's device plugin
# (chart value devicePlugin.enabled, hack/demo/values.yaml), not here.
# Idempotent.
# Usage: data-network.sh <kubectl> <kubeconfig> <node-a> <node-b>
set -euo pipefail
source "$(dirname "$0")/lib.sh"

kubectl=$1 kubeconfig=$2 a=$3 b=$4
k() { "$kubectl" --kubeconfig "$kubeconfig" "$@"; }
DATA_MTU=${DATA_MTU:-3500}
declare -A queues=([pfsdata0]=1 [pfsdata1]=4 [pfsdata2]=1)

pid_a=$(podman inspect -f '{{.State.Pid}}' "$a")
pid_b=$(podman inspect -f '{{.State.Pid}}' "$b")
has() { nsenter -t "$1" -n ip link show "$2" >/dev/null 2>&1; }

for link in "${!queues[@]}"; do
  q=${queues[$link]}
  if has "$pid_a" "$link" || has "$pid_b" "$link"; then
    # Present on one side only means a pod holds the other end right now.
    log "data network: $link already wired"
  else
    # Both ends are created straight inside the node namespaces, so nothing
    # appears in the host's namespace, even for a moment.
    ip link add name "$link" netns "$pid_a" mtu "$DATA_MTU" numtxqueues "$q" numrxqueues "$q" \
      type veth peer name "$link" netns "$pid_b" mtu "$DATA_MTU" numtxqueues "$q" numrxqueues "$q"
    log "data network: $link $a <-> $b (mtu $DATA_MTU, $q queues)"
  fi
  for pid in "$pid_a" "$pid_b"; do
    has "$pid" "$link" && nsenter -t "$pid" -n ip link set "$link" up
  done
done

k apply -f "$HACK_KIND/manifests/data-network.yaml" >/dev/null
