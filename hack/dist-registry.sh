#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# make publish against a real registry (TAP): CNCF distribution over TLS
# with a throwaway CA (hack/oci-registry.sh) in a temporary directory;
# hack/dist.sh publish pushes DIST's images and chart; then what a cluster
# would pull comes back and must be what was built: the chart `helm pull`
# gets is byte for byte the package, and each image's manifest in the
# registry has the digest of the manifest in its OCI archive. Then the same
# publish with no CA given must be refused (an unverified registry is not
# trusted silently). Leaves nothing behind.
# Usage: hack/dist-registry.sh DIST   (HELM names the helm binary)
set -euo pipefail
HACK=$(cd "$(dirname "$0")" && pwd)
DIST=$(cd "${1:?usage: $0 DIST}" && pwd)
HELM=${HELM:-helm}
reg=$HACK/oci-registry.sh
oras=$("$reg" oras)
v=$("$HACK/dist.sh" version)
work=$(mktemp -d)
trap '"$reg" stop "$work/registry" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

n=0 failed=0
tap() {
  local name=$1; shift; n=$((n + 1))
  if "$@" >"$work/out" 2>&1; then echo "ok $n $name"
  else failed=$((failed + 1)); echo "not ok $n $name"; sed 's/^/# /' "$work/out"; fi
}

eval "export $("$reg" start "$work/registry")"

tap "publish to $OCI_REGISTRY (TLS, its CA given)" "$HACK/dist.sh" publish "$DIST" "$OCI_REGISTRY" --ca-file "$OCI_CA_FILE"

chart_back() {
  mkdir -p "$work/pull"
  "$HELM" pull "oci://$OCI_REGISTRY/packetfs/charts/packetfs-operator" --version "$v" --ca-file "$OCI_CA_FILE" -d "$work/pull"
  cmp "$work/pull/packetfs-operator-$v.tgz" "$DIST/packetfs-operator-$v.tgz"
}
tap "helm pull oci://…/packetfs/charts/packetfs-operator --version $v gives the package byte for byte" chart_back

image_back() { # NAME: the registry's manifest digest is the archive's
  local name=$1 want got
  want=$(tar -xOf "$DIST/packetfs-$name-v$v.oci.tar" index.json | python3 -c 'import json, sys
print(json.load(sys.stdin)["manifests"][0]["digest"])')
  got=$("$oras" manifest fetch --ca-file "$OCI_CA_FILE" --descriptor "$OCI_REGISTRY/packetfs/$name:v$v" | python3 -c 'import json, sys
print(json.load(sys.stdin)["digest"])')
  echo "archive $want registry $got"
  [ -n "$want" ] && [ "$want" = "$got" ]
}
for name in operator dataplane; do
  tap "packetfs/$name:v$v in the registry has the archive's manifest digest" image_back "$name"
done

refused() { # for the certificate, not for anything else
  ! "$HACK/dist.sh" publish "$DIST" "$OCI_REGISTRY" >"$work/refused" 2>&1 || return 1
  cat "$work/refused"
  grep -q "x509: certificate signed by unknown authority" "$work/refused"
}
tap "publish without the registry's CA is refused" refused

echo "1..$n"
[ "$failed" = 0 ]
