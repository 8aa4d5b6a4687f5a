#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Tear down the throwaway kind cluster and undo what hack/cluster-up.sh did
# to the host: node containers and their volumes, the podman network, the
# NETAVARK iptables chains podman leaves behind, the veths (they live in the
# node namespaces), the hugepages we added, /lib/modules if we created it.
# Caches under $PFS_CACHE stay. Safe to run when nothing is up.
set -euo pipefail
source "$(dirname "$0")/kind/lib.sh"

need_root
start=$(date +%s)
kind=$(kind_bin)
label="io.x-k8s.kind.cluster=$CLUSTER_NAME"

if [ -x "$kind" ] && command -v podman >/dev/null; then
  "$kind" delete cluster --name "$CLUSTER_NAME" --kubeconfig "$KUBECONFIG_PATH" >&2 || true
fi
if command -v podman >/dev/null; then
  # Anything kind did not remove (a failed create, --retain).
  ids=$(podman ps -aq --filter "label=$label")
  [ -z "$ids" ] || podman rm -f -v $ids >/dev/null
  vols=$(podman volume ls -q --filter "label=$label")
  [ -z "$vols" ] || podman volume rm -f $vols >/dev/null
  # The "kind" network is shared by all kind clusters: remove it only when
  # no container uses it any more.
  if podman network exists kind && [ -z "$(podman ps -aq --filter network=kind)" ]; then
    podman network rm kind >/dev/null
  fi
fi

# netavark keeps its top-level chains after the last network is gone. Drop
# them only if there were none before cluster-up and no container runs.
before=$(cat "$STATE_DIR/netavark-before" 2>/dev/null || echo 0)
if [ "$before" -eq 0 ] && { ! command -v podman >/dev/null || [ -z "$(podman ps -q)" ]; }; then
  for ipt in iptables ip6tables; do
    for table in filter nat; do
      $ipt -t "$table" -S 2>/dev/null | { grep -E '^-A [A-Z]+ .*-j NETAVARK' || true; } | sed 's/^-A/-D/' |
        while read -r rule; do eval "$ipt -t $table $rule"; done
      for chain in $($ipt -t "$table" -S 2>/dev/null | awk '/^-N NETAVARK/ {print $2}'); do
        $ipt -t "$table" -F "$chain"
      done
      for chain in $($ipt -t "$table" -S 2>/dev/null | awk '/^-N NETAVARK/ {print $2}'); do
        $ipt -t "$table" -X "$chain"
      done
    done
  done
fi

"$HACK_KIND/hugepages.sh" release "$STATE_DIR/hugepages-added"
if [ -f "$STATE_DIR/created-lib-modules" ]; then
  rmdir /lib/modules 2>/dev/null || log "WARNING: /lib/modules is not empty any more; left in place"
fi
rm -rf "$STATE_DIR"; rmdir "$(dirname "$STATE_DIR")" 2>/dev/null || true
log "cluster $CLUSTER_NAME is down in $(( $(date +%s) - start ))s"
