#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The BLAKE3 team's C implementation (CC0-1.0 OR Apache-2.0), from the
# blake3 crate on crates.io (whose c/ directory is that implementation),
# built once into a static library and cached outside the repo in
# $PFS_CACHE/blake3-<version>/: the crate's sha256 is checked before
# anything is built. Prints the directory, which holds blake3.h and
# libblake3.a (x86-64: portable, SSE2, SSE4.1, AVX2 and AVX-512 kernels,
# chosen at run time by the library's own CPUID dispatch).
#   hack/blake3.sh
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=kind/lib.sh
source "$(dirname "$0")/kind/lib.sh"

BLAKE3_VERSION=1.8.2
BLAKE3_SHA256=3888aaa89e4b2a40fca9848e400f6a658a5a3978de7be858e209cafa8be9a4a0
out="$PFS_CACHE/blake3-$BLAKE3_VERSION"
if [ -f "$out/libblake3.a" ] && [ -f "$out/blake3.h" ]; then
  echo "$out"
  exit 0
fi
[ "$(uname -m)" = x86_64 ] || die "blake3.sh: builds the x86-64 kernels only (this is $(uname -m))"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log "blake3: fetching the blake3 $BLAKE3_VERSION crate from crates.io"
curl -fsSL --retry 3 -o "$tmp/blake3.crate" \
  "https://static.crates.io/crates/blake3/blake3-$BLAKE3_VERSION.crate"
echo "$BLAKE3_SHA256  $tmp/blake3.crate" | sha256sum -c --quiet - ||
  die "blake3.sh: the crate's sha256 is not $BLAKE3_SHA256"
tar -xzf "$tmp/blake3.crate" -C "$tmp"
c="$tmp/blake3-$BLAKE3_VERSION/c"
mkdir -p "$tmp/obj"
for f in blake3.c blake3_dispatch.c blake3_portable.c blake3_sse2_x86-64_unix.S \
  blake3_sse41_x86-64_unix.S blake3_avx2_x86-64_unix.S blake3_avx512_x86-64_unix.S; do
  cc -O3 -fPIC -c "$c/$f" -o "$tmp/obj/${f%.*}.o"
done
ar rcs "$tmp/libblake3.a" "$tmp"/obj/*.o
mkdir -p "$out.tmp"
cp "$tmp/libblake3.a" "$c/blake3.h" "$c/README.md" "$out.tmp/"
rm -rf "$out"
mv "$out.tmp" "$out"
log "blake3: built $out/libblake3.a"
echo "$out"
