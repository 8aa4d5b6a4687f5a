#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Smoke test of `pfs blob create --source-oci` against a real registry (TAP):
# hack/oci-registry.sh starts CNCF distribution over TLS (a throwaway CA) in
# a temporary directory, the oras CLI pushes a real model (all-MiniLM-L6-v2
# from PyPI, hack/testdata.sh: every file a layer titled with its path, a
# subdirectory included) and pfs loads it by tag and by digest. Checked: the
# blob's manifest lists every file with sha256sum's digest and the layer
# digests oras pushed, `pfs blob manifest --verify` passes, and the blob
# equals the one `--source` makes of the same directory. The same model as
# an image (a ModelCar's shape): a tar+gzip layer of ./models/ (with a stale
# file and a wrong config.json) and a tar layer (the right config.json, the
# stale file's whiteout), pushed blob by blob with a hand-written manifest
# (`oras push` titles every file it pushes, whatever its media type), loaded with --source-oci-path models/:
# again the blob `--source` makes. Then the registry
# again with Basic authentication (htpasswd): without a pull secret the load
# is refused, with one it loads and the password shows nowhere. Leaves
# nothing behind. Usage: hack/oci/smoke.sh [PFS]  (default
# dataplane/build/pfs; no root; the first run builds the registry and oras,
# about two minutes).
set -euo pipefail
HACK=$(cd "$(dirname "$0")/.." && pwd)
PFS=${1:-$HACK/../dataplane/build/pfs}
[ -x "$PFS" ] || { echo "Bail out! no pfs at $PFS (make -C dataplane pfs)"; exit 1; }

reg=$HACK/oci-registry.sh
"$reg" bin >/dev/null
oras=$("$reg" oras)
data=$("$HACK/testdata.sh" path minilm)
work=$(mktemp -d)
blob=pfs-ocismoke-$$
trap '"$reg" stop "$work/open" 2>/dev/null || true; "$reg" stop "$work/auth" 2>/dev/null || true
      rm -f /dev/shm/$blob-*; rm -rf "$work"' EXIT

n=0 failed=0
tap() {
  local name=$1; shift; n=$((n + 1))
  if "$@" >"$work/out" 2>&1; then echo "ok $n $name"
  else failed=$((failed + 1)); echo "not ok $n $name"; sed 's/^/# /' "$work/out"; fi
}
note() { sed 's/^/# /'; }

start() { # start DIR [--auth]: the registry's environment
  local line
  line=$("$reg" start "$@") || return 1
  unset OCI_AUTH_FILE OCI_USER OCI_PASSWORD
  eval "export $line"
}
files() { (cd "$data" && find . -type f | sed 's|^\./||' | sort); }
push() { # push REPO:TAG: every file of the model a titled layer
  local creds=()
  [ -z "${OCI_USER:-}" ] || creds=(-u "$OCI_USER" --password-stdin)
  # shellcheck disable=SC2046  # one argument per file name (none has a space)
  (cd "$data" && "$oras" push --ca-file "$OCI_CA_FILE" --registry-config "$work/oras.json" \
    "${creds[@]}" "$OCI_REGISTRY/$1" $(files) <<<"${OCI_PASSWORD:-}") >"$work/push.log" &&
    "$oras" manifest fetch --ca-file "$OCI_CA_FILE" --registry-config "$work/oras.json" \
      "${creds[@]}" "$OCI_REGISTRY/$1" <<<"${OCI_PASSWORD:-}" >"$work/manifest.json" &&
    [ "$(jq '.layers | length' "$work/manifest.json")" = "$(files | wc -l)" ]
}
load() { # load NAME REF [pfs options]: the result in $work/NAME.json
  local name=$1 ref=$2; shift 2
  "$PFS" blob create --source-oci "$OCI_REGISTRY/$ref" --source-ca-file "$OCI_CA_FILE" \
    --page 4k --dir /dev/shm --name "$blob-$name" --replace "$@" >"$work/$name.json" 2>"$work/$name.err" ||
    { cat "$work/$name.err"; return 1; }
}
same_as_files() { # the manifest holds sha256sum's digests; the blob verifies; as --source makes it
  local name=$1 f want got
  "$PFS" blob manifest --name "$blob-$name" --dir /dev/shm --verify >"$work/$name.manifest" || return 1
  while read -r f; do
    want=$(sha256sum "$data/$f" | cut -d' ' -f1)
    got=$(jq -r --arg f "$f" '.files[] | select(.name == $f) | .sha256' "$work/$name.manifest")
    [ "$got" = "$want" ] || { echo "$f: manifest $got, sha256sum $want"; return 1; }
    # and the digest of the layer oras pushed for it
    got=$(jq -r --arg f "$f" '.layers[] | select(.annotations["org.opencontainers.image.title"] == $f) | .digest' "$work/manifest.json")
    [ "$got" = "sha256:$want" ] || { echo "$f: layer digest $got"; return 1; }
  done < <(files)
  [ "$(jq -r .source.sha256 "$work/$name.json")" = "$(jq -r .source.sha256 "$work/ref.json")" ] &&
    [ "$(jq -r .source.remote.checksums "$work/$name.json")" = "$(files | wc -l)" ] &&
    [ "$(jq -r .source.remote.kind "$work/$name.json")" = oci ]
}
reference() {
  "$PFS" blob create --source "$data" --page 4k --dir /dev/shm --name "$blob-ref" --replace >"$work/ref.json"
}
by_digest() {
  local d
  d=$("$oras" resolve --ca-file "$OCI_CA_FILE" --registry-config "$work/oras.json" "$OCI_REGISTRY/models/minilm:v1") &&
    load digest "models/minilm@$d" && [ "$(jq -r .source.remote.oci_manifest "$work/digest.json")" = "$d" ]
}
image_push() { # the model as an image of two untitled layers, models:image
  local img=$work/img cfg l1 l2
  mkdir -p "$img/a/models" "$img/b/models" && cp -r "$data/." "$img/a/models/" &&
    echo stale >"$img/a/models/stale.bin" && echo wrong >"$img/a/models/config.json" &&
    cp "$data/config.json" "$img/b/models/" && : >"$img/b/models/.wh.stale.bin" &&
    tar -C "$img/a" -czf "$img/l1.tar.gz" . && tar -C "$img/b" -cf "$img/l2.tar" models &&
    printf '{}' >"$img/config.json" || return 1
  blob_push() { # FILE MEDIA-TYPE: its descriptor (no annotations)
    "$oras" blob push --ca-file "$OCI_CA_FILE" --registry-config "$work/oras.json" --descriptor \
      --media-type "$2" "$OCI_REGISTRY/models/minilm-image" "$1"
  }
  cfg=$(blob_push "$img/config.json" application/vnd.oci.empty.v1+json) &&
    l1=$(blob_push "$img/l1.tar.gz" application/vnd.oci.image.layer.v1.tar+gzip) &&
    l2=$(blob_push "$img/l2.tar" application/vnd.oci.image.layer.v1.tar) &&
    jq -n --argjson c "$cfg" --argjson a "$l1" --argjson b "$l2" \
      '{schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json", config: $c, layers: [$a, $b]}' \
      >"$img/manifest.json" &&
    jq -e '[.layers[] | has("annotations")] | any | not' "$img/manifest.json" >/dev/null &&
    "$oras" manifest push --ca-file "$OCI_CA_FILE" --registry-config "$work/oras.json" \
      "$OCI_REGISTRY/models/minilm-image:v1" "$img/manifest.json"
}
image_same_as_files() { # the image's models/ is the model directory: as --source makes it
  "$PFS" blob manifest --name "$blob-image" --dir /dev/shm --verify >/dev/null &&
    [ "$(jq -r .source.sha256 "$work/image.json")" = "$(jq -r .source.sha256 "$work/ref.json")" ] &&
    [ "$(jq -r .source.remote.checksums "$work/image.json")" = 2 ] &&
    [ "$(jq -r .source.files "$work/image.json")" = "$(files | wc -l)" ]
}
refused_without_secret() {
  ! load nosecret models/minilm:v1 && grep -q "it asks for credentials (Basic): give a pull secret" "$work/nosecret.err" &&
    [ ! -e "/dev/shm/$blob-nosecret" ]
}
no_password_shown() { ! grep -rqF "$OCI_PASSWORD" "$work"/*.json "$work"/*.err; }
stopped() { "$reg" stop "$work/open" && "$reg" stop "$work/auth" && ! "$reg" status "$work/auth" >/dev/null; }

tap "the reference: --source of the model directory" reference
tap "start a registry (TLS, anonymous)" start "$work/open"
tap "oras pushes every file of the model as a titled layer" push models/minilm:v1
t0=$(date +%s.%N)
tap "pfs loads it by tag" load tag models/minilm:v1
t1=$(date +%s.%N)
tap "its manifest: sha256sum's digests, the layer digests; --verify; as --source makes it" same_as_files tag
tap "pfs loads it by digest; the result names that digest" by_digest
tap "the model as an image: a tar+gzip and a tar layer, untitled (oras blob push, manifest push)" image_push
tap "pfs loads the image with --source-oci-path models/" load image models/minilm-image:v1 --source-oci-path models/
tap "the image's models/: --verify; as --source makes it; both layer digests compared" image_same_as_files
tap "start a registry with Basic authentication (htpasswd)" start "$work/auth" --auth
tap "oras pushes with the credentials" push models/minilm:v1
tap "without a pull secret: refused, says so, no blob" refused_without_secret
tap "with the pull secret (a .dockerconfigjson): loaded" load secret models/minilm:v1 --source-oci-auth "$OCI_AUTH_FILE"
tap "its manifest: sha256sum's digests, the layer digests; --verify; as --source makes it" same_as_files secret
tap "the password is in no result and no message" no_password_shown
tap "stop both registries" stopped

{
  echo "load by tag: $(jq -r '.source | "\(.files) files, \(.bytes) bytes, read \(.read_mbps) MB/s, \(.remote.requests) requests"' "$work/tag.json" 2>/dev/null), $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s wall"
  echo "manifest: $(jq -c '{mediaType, artifactType, config: .config.mediaType, layer: .layers[0].mediaType}' "$work/manifest.json" 2>/dev/null)"
} | note
echo "$((n - failed)) passed, $failed failed"
[ "$failed" = 0 ]
