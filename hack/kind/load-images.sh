#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Load image archives (docker-archive, as `make images` writes them) into
# every node of the throwaway kind cluster, then check that each node's
# containerd lists every tag. Pods use imagePullPolicy IfNotPresent or Never
# with these non-latest tags, so nothing is ever pulled.
# Usage: hack/kind/load-images.sh <archive.tar>...
set -euo pipefail
source "$(dirname "$0")/lib.sh"

[ $# -ge 1 ] || die "usage: $0 <archive.tar>..."
need_root
kind=$(kind_bin)
[ -x "$kind" ] || die "no kind binary: run make cluster-up first"
"$kind" get clusters 2>/dev/null | grep -qx "$CLUSTER_NAME" || die "no cluster $CLUSTER_NAME: run make cluster-up first"
mapfile -t nodes < <(podman ps --format '{{.Names}}' --filter "label=io.x-k8s.kind.cluster=$CLUSTER_NAME")
for a in "$@"; do
  [ -f "$a" ] || die "no archive $a"
  # kind load does not need crictl (absent from our node image).
  "$kind" load image-archive "$a" --name "$CLUSTER_NAME" >&2
  for tag in $(tar -xOf "$a" manifest.json | jq -r '.[].RepoTags[]'); do
    for n in "${nodes[@]}"; do
      # (listed first, then matched: grep -q closing the pipe early would
      # fail the pipeline under pipefail)
      have=$(podman exec "$n" ctr -n k8s.io images ls -q)
      grep -qx -- "$tag" <<<"$have" || die "$tag is not in $n's containerd after kind load"
    done
    log "loaded $tag into ${nodes[*]}"
  done
done
