#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The consumer image of the demo and the e2e tests: Debian's python3 and
# numpy (debootstrap from the mirror apt uses, no registry) plus the packetfs
# Python client from dataplane/python, as packetfs.io/python-consumer:v0.1.0
# (the tag config/samples/apps_v1_deployment_tensor_reader.yaml uses).
# The Debian part is cached as a tarball keyed by suite and package list; the
# client is copied in on every build, so the image always has this checkout's.
#
# Usage: hack/images/python-consumer.sh <out.tar>
#        hack/images/python-consumer.sh --base   only the cached Debian part
set -euo pipefail
source "$(dirname "$0")/../kind/lib.sh"

out=${1:?usage: python-consumer.sh <out.tar>}
TAG=${PYTHON_CONSUMER_IMG:-packetfs.io/python-consumer:v0.1.0}
PKGS=(python3-minimal python3-numpy)
here="$(cd "$(dirname "$0")" && pwd)"

key=$(printf '%s\n' "$DEBIAN_SUITE" "${PKGS[@]}" | sha256sum | cut -c1-12)
base="$PFS_CACHE/images/python-consumer-$DEBIAN_SUITE-$key.tar"
need_root
if [ ! -s "$base" ]; then
  ensure_pkgs debootstrap jq
  mkdir -p "$(dirname "$base")"
  exec 7>"$base.lock"; flock 7
  if [ ! -s "$base" ]; then
    dir=$(mktemp -d "$PFS_CACHE/images/python-consumer.XXXXXX")
    trap 'rm -rf "$dir"' EXIT
    log "debootstrap $DEBIAN_SUITE minbase + ${PKGS[*]} (cold: a few minutes)"
    debootstrap --variant=minbase --include="$(IFS=,; echo "${PKGS[*]}")" "$DEBIAN_SUITE" "$dir" \
      "$(debian_mirror)" >&2
    # A consumer needs python and numpy, not apt, docs or locales.
    rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/* "$dir"/usr/share/doc/* \
      "$dir"/usr/share/man/* "$dir"/usr/share/locale/* "$dir"/usr/share/info/*
    tar --numeric-owner -C "$dir" -cf "$base.tmp" .
    mv "$base.tmp" "$base"
    rm -rf "$dir"; trap - EXIT
  fi
  exec 7>&-
fi
[ "$out" != --base ] || exit 0

root=$(mktemp -d); trap 'rm -rf "$root"' EXIT
tar -C "$root" -xf "$base"
site="$root/usr/lib/python3/dist-packages"
cp -r "$REPO_ROOT/dataplane/python/packetfs" "$site/packetfs"
find "$site/packetfs" -name __pycache__ -prune -exec rm -rf {} +
"$here/mkimage.sh" "$root" "$TAG" "$out" python3
log "image $TAG -> $out"
