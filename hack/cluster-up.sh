#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Bring up the throwaway kind cluster of the e2e tests (idempotent): builds or
# reuses the offline node image, reserves hugepages, creates a control-plane
# and NODES-1 workers on podman (NODES=2 by default, at most 4), then wires
# the pod network (bridge + Multus) and
# the veth data network. Writes the kubeconfig under the cache dir (never
# ~/.kube/config) and prints its path on stdout. hack/cluster-down.sh undoes
# every change to the host recorded in $STATE_DIR.
set -euo pipefail
source "$(dirname "$0")/kind/lib.sh"

HUGEPAGES=${HUGEPAGES:-1024}
NODES=${NODES:-2}
case $NODES in 2|3|4) ;; *) die "NODES=$NODES: the throwaway cluster has 2 to 4 nodes";; esac
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
"$HACK_KIND/hugepages.sh" settle
"$HACK_KIND/hugepages.sh" reserve "$HUGEPAGES" "$STATE_DIR/hugepages-added"

# The host side of /pfs-data in every node (e2e test data; see cluster.yaml.tmpl).
mkdir -p "$STATE_DIR/data"
workers=""
for _ in $(seq 2 "$NODES"); do
  workers+=$'- role: worker\n  image: '"$image"$'\n  extraMounts:\n  - {hostPath: "'"$STATE_DIR/data"$'", containerPath: /pfs-data, readOnly: true}\n'
done
want=$(sed -e "s|@NAME@|$CLUSTER_NAME|" -e "s|@IMAGE@|$image|" -e "s|@DATA@|$STATE_DIR/data|" \
  "$HACK_KIND/cluster.yaml.tmpl" | W="$workers" awk '$0 == "@WORKERS@" { printf "%s", ENVIRON["W"]; next } { print }')
# A cluster is reused only when it has this shape and its API server answers:
# one left behind by a run that was killed, or being torn down by another
# run, is recreated rather than failing the tests that would use it.
reusable() {
  "$kind" get clusters 2>/dev/null | grep -qx "$CLUSTER_NAME" &&
    [ "$(podman ps -q --filter "label=io.x-k8s.kind.cluster=$CLUSTER_NAME" | wc -l)" -eq "$NODES" ] &&
    [ "$want" = "$(cat "$STATE_DIR/kind.yaml" 2>/dev/null)" ] || return 1
  local err
  if ! err=$("$kind" export kubeconfig --name "$CLUSTER_NAME" --kubeconfig "$KUBECONFIG_PATH" 2>&1 4>&-); then
    log "cluster $CLUSTER_NAME: kind export kubeconfig failed: $err"
    return 1
  fi
  if ! err=$("$kubectl" --kubeconfig "$KUBECONFIG_PATH" --request-timeout=20s get --raw /readyz 2>&1); then
    log "cluster $CLUSTER_NAME: its API server does not answer: $err"
    return 1
  fi
}
if reusable; then
  log "cluster $CLUSTER_NAME is already running"
else
  # A half-created cluster (a failed earlier run), one whose API server does
  # not answer, or one of another shape (NODES, node image) is removed first.
  "$kind" delete cluster --name "$CLUSTER_NAME" --kubeconfig "$KUBECONFIG_PATH" >/dev/null 2>&1 4>&- || true
  printf '%s\n' "$want" > "$STATE_DIR/kind.yaml"
  log "creating cluster $CLUSTER_NAME from $image"
  "$kind" create cluster --config "$STATE_DIR/kind.yaml" --kubeconfig "$KUBECONFIG_PATH" \
    ${KIND_RETAIN:+--retain} >&2 4>&-
fi
chmod 600 "$KUBECONFIG_PATH"

k() { "$kubectl" --kubeconfig "$KUBECONFIG_PATH" "$@"; }
mapfile -t nodes < <(k get nodes -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
[ ${#nodes[@]} -eq "$NODES" ] || die "expected $NODES nodes, got ${#nodes[@]}: ${nodes[*]}"
# Every node runs PacketFS pods: blob holders (a DaemonSet, which does not
# tolerate the control-plane taint) and one side of every transfer.
k taint nodes "$CLUSTER_NAME-control-plane" node-role.kubernetes.io/control-plane:NoSchedule- >/dev/null 2>&1 || true
# One CoreDNS is plenty here; the second one's 100m of CPU requests is what a
# blob holder next to a 1-CPU transfer pod needs on the control-plane node.
k -n kube-system scale deployment coredns --replicas=1 >/dev/null
"$HACK_KIND/pod-network.sh" "$kubectl" "$KUBECONFIG_PATH" "${nodes[@]}" 4>&-
"$HACK_KIND/data-network.sh" "$kubectl" "$KUBECONFIG_PATH" "${nodes[@]}" 4>&-
"$HACK_KIND/whereabouts.sh" "$kubectl" "$KUBECONFIG_PATH" "${nodes[@]}" 4>&-

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
"$HACK_KIND/nfd.sh" "$kubectl" "$KUBECONFIG_PATH" "${nodes[@]}" 4>&-
log "cluster $CLUSTER_NAME is up in $(( $(date +%s) - start ))s"
echo "$KUBECONFIG_PATH"
