#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# NodeResourceTopology in the kind cluster: the NRT CRD (from the
# noderesourcetopology-api module the operator reads it with) and
# node-feature-discovery's topology updater on every node, from an image
# built here (FROM scratch, the static binary go-tools.sh built against the
# cluster's Kubernetes) and loaded into the nodes. Waits until every node
# has its NodeResourceTopology. Idempotent.
# Usage: nfd.sh <kubectl> <kubeconfig> <node...>
set -euo pipefail
source "$(dirname "$0")/lib.sh"

kubectl=$1 kubeconfig=$2; shift 2
nodes=("$@")
k() { "$kubectl" --kubeconfig "$kubeconfig" "$@"; }
NRT_API_VERSION=$(sed -n 's#^\s*github.com/k8stopologyawareschedwg/noderesourcetopology-api \(v[^ ]*\).*#\1#p' "$REPO_ROOT/go.mod")
IMG=localhost/packetfs/nfd-topology-updater:$NFD_VERSION

"$HACK_KIND/go-tools.sh" nfd-topology-updater
bin="$TOOLS_DIR/nfd-topology-updater-$NFD_VERSION/nfd-topology-updater"
crd="$(cd "$REPO_ROOT" && go env GOMODCACHE)/github.com/k8stopologyawareschedwg/noderesourcetopology-api@$NRT_API_VERSION/manifests/crd.yaml"
[ -f "$crd" ] || (cd "$REPO_ROOT" && go mod download github.com/k8stopologyawareschedwg/noderesourcetopology-api)
k apply -f "$crd" >/dev/null

archive="$TOOLS_DIR/nfd-topology-updater-$NFD_VERSION/image.tar"
if [ ! -f "$archive" ] || [ "$bin" -nt "$archive" ]; then
  root=$(mktemp -d); trap 'rm -rf "$root"' EXIT
  install -D -m 0755 "$bin" "$root/usr/bin/nfd-topology-updater"
  "$REPO_ROOT/hack/images/mkimage.sh" "$root" "$IMG" "$archive.tmp" /usr/bin/nfd-topology-updater
  mv "$archive.tmp" "$archive"
fi
"$(kind_bin)" load image-archive "$archive" --name "$CLUSTER_NAME" >&2

sed "s#@IMAGE@#$IMG#" "$HACK_KIND/manifests/nfd-topology-updater.yaml" | k apply -f - >/dev/null
for _ in $(seq 90); do
  have=$(k get noderesourcetopologies.topology.node.k8s.io -o jsonpath='{.items[*].metadata.name}' 2>/dev/null || true)
  missing=()
  for n in "${nodes[@]}"; do [[ " $have " == *" $n "* ]] || missing+=("$n"); done
  [ ${#missing[@]} -eq 0 ] && break
  sleep 2
done
[ ${#missing[@]} -eq 0 ] || {
  k -n node-feature-discovery logs -l app=nfd-topology-updater --tail=20 --prefix >&2 || true
  die "no NodeResourceTopology for ${missing[*]} after 180 s (the updater's logs above)"
}
log "nfd-topology-updater $NFD_VERSION publishes NodeResourceTopology for ${#nodes[@]} nodes"
