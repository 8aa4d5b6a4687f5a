#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Write a single-layer image as a docker archive (the format `docker save`
# writes and `ctr images import` / `kind load image-archive` read), with no
# container engine or registry: a FROM-scratch image is one layer tar plus a
# config and a manifest.
#
# Usage: mkimage.sh <rootfs-dir> <repo:tag> <out.tar> [entrypoint-arg...]
# The layer is reproducible: sorted names, zero mtimes, uid/gid 0.
set -euo pipefail

[ $# -ge 3 ] || { echo "usage: $0 <rootfs-dir> <repo:tag> <out.tar> [entrypoint...]" >&2; exit 2; }
root=$1 tag=$2 out=$3; shift 3
[ -d "$root" ] || { echo "mkimage: $root is not a directory" >&2; exit 1; }

work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$root" -cf "$work/layer.tar" .
layer=$(sha256sum "$work/layer.tar" | cut -d' ' -f1)
mkdir "$work/$layer"; mv "$work/layer.tar" "$work/$layer/layer.tar"

entry=$(jq -cn '$ARGS.positional' --args "$@")
jq -cn --arg diff "sha256:$layer" --argjson entry "$entry" '{
  architecture: "amd64", os: "linux", created: "1970-01-01T00:00:00Z",
  config: ({Env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}
           + (if ($entry | length) > 0 then {Entrypoint: $entry} else {} end)),
  rootfs: {type: "layers", diff_ids: [$diff]},
  history: [{created: "1970-01-01T00:00:00Z", created_by: "packetfs hack/images/mkimage.sh"}]
}' > "$work/config.json"
cfg=$(sha256sum "$work/config.json" | cut -d' ' -f1)
mv "$work/config.json" "$work/$cfg.json"
jq -cn --arg cfg "$cfg.json" --arg tag "$tag" --arg layer "$layer/layer.tar" \
  '[{Config: $cfg, RepoTags: [$tag], Layers: [$layer]}]' > "$work/manifest.json"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$work" -cf "$out.tmp" manifest.json "$cfg.json" "$layer"
mv "$out.tmp" "$out"
