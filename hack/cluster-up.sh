#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Bring up the throwaway kind cluster of the e2e tests (idempotent): builds or
# reuses the offline node image, reserves hugepages, creates a control-plane
# and a worker on podman, then wires the pod network (bridge + Multus) and
# the veth data network. Writes the kubeconfig under the cache dir (never
# ~/.kube/config) and prints its path on stdout. hack/cluster-down.sh undoes
# every change to the host recorded in $STATE_DIR.
set -euo pipefail
source "$(dirname "$0")/kind/lib.sh"

HUGEPAGES=${HUGEPAGES:-512}
need_root
ensure_pkgs "${HOST_PKGS[@]}"
check_network_backend
start=$(date +%s)
image=$("$HACK_KIND/node-image.sh")
bin=$("$REPO_ROOT/hack/k8s-binaries.sh" kubectl)
kind=$(kind_bin)
kubectl="$bin/kubectl"
mkdir -p "$STATE_DIR"
# fd 4 holds the lock; every command that may start a daemon (podman starts
# aardvark-dns, which lives as long as the network) runs with fd 4 closed,
# or the daemon would hold the lock forever.
exec 4>"$STATE_DIR/.lock"; flock 4

# What we change on the host is recorded first, so a failed bring-up can
# still be torn down completely.
if [ ! -d /lib/modules ]; then
  # kind always bind-mounts /lib/modules; an empty one is enough.
  mkdir /lib/modules && touch "$STATE_DIR/created-lib-modules"
fi
if [ ! -f "$STATE_DIR/netavark-before" ]; then
  iptables-save 2>/dev/null | grep -c '^:NETAVARK' > "$STATE_DIR/netavark-before" || true
fi
"$HACK_KIND/hugepages.sh" reserve "$HUGEPAGES" "$STATE_DIR/hugepages-added"

if "$kind" get clusters 2>/dev/null | grep -qx "$CLUSTER_NAME" &&
   [ "$(podman ps -q --filter "label=io.x-k8s.kind.cluster=$CLUSTER_NAME" | wc -l)" -eq 2 ]; then
  log "cluster $CLUSTER_NAME is already running"
  "$kind" export kubeconfig --name "$CLUSTER_NAME" --kubeconfig "$KUBECONFIG_PATH" >/dev/null 2>&1 4>&-
else
  # A half-created cluster (a failed earlier run) is removed first.
  "$kind" delete cluster --name "$CLUSTER_NAME" --kubeconfig "$KUBECONFIG_PATH" >/dev/null 2>&1 4>&- || true
  sed -e "s|@NAME@|$CLUSTER_NAME|" -e "s|@IMAGE@|$image|" "$HACK_KIND/cluster.yaml.tmpl" > "$STATE_DIR/kind.yaml"
  log "creating cluster $CLUSTER_NAME from $image"
  "$kind" create cluster --config "$STATE_DIR/kind.yaml" --kubeconfig "$KUBECONFIG_PATH" \
    ${KIND_RETAIN:+--retain} >&2 4>&-
fi
chmod 600 "$KUBECONFIG_PATH"

k() { "$kubectl" --kubeconfig "$KUBECONFIG_PATH" "$@"; }
mapfile -t nodes < <(k get nodes -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
[ ${#nodes[@]} -eq 2 ] || die "expected 2 nodes, got ${#nodes[@]}: ${nodes[*]}"
# Both nodes run PacketFS pods: blob holders (a DaemonSet, which does not
# tolerate the control-plane taint) and one side of every transfer.
k taint nodes "$CLUSTER_NAME-control-plane" node-role.kubernetes.io/control-plane:NoSchedule- >/dev/null 2>&1 || true
# One CoreDNS is plenty here; the second one's 100m of CPU requests is what a
# blob holder next to a 1-CPU transfer pod needs on the control-plane node.
k -n kube-system scale deployment coredns --replicas=1 >/dev/null
"$HACK_KIND/pod-network.sh" "$kubectl" "$KUBECONFIG_PATH" "${nodes[@]}" 4>&-
"$HACK_KIND/data-network.sh" "$kubectl" "$KUBECONFIG_PATH" "${nodes[@]}" 4>&-

log "waiting for nodes and CoreDNS"
if ! k wait --for=condition=Ready nodes --all --timeout=300s >/dev/null; then
  # Say why, not just that it timed out: each node's Ready condition and the
  # kubelet's last words (CNI not ready, runtime errors, certificate trouble).
  k get nodes -o jsonpath='{range .items[*]}{.metadata.name}: {range .status.conditions[?(@.type=="Ready")]}{.reason}: {.message}{end}{"\n"}{end}' >&2 || true
  for n in "${nodes[@]}"; do
    log "last kubelet log lines on $n:"
    podman exec "$n" journalctl -u kubelet -n 15 --no-pager >&2 4>&- || true
  done
  die "nodes not Ready after 300 s (above: their Ready condition and kubelet logs); 'make cluster-down' cleans up"
fi
k -n kube-system rollout status deployment/coredns --timeout=180s >/dev/null
log "cluster $CLUSTER_NAME is up in $(( $(date +%s) - start ))s"
echo "$KUBECONFIG_PATH"
