#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The consumer image of the demo, the e2e tests and the model-volume bench:
# Debian's python3 (debootstrap from the mirror apt uses, no registry), the
# real PyPI libraries an inference program loads a model with (safetensors,
# tokenizers, onnxruntime, numpy: pinned versions, wheels checked by sha256),
# the packetfs Python client from dataplane/python, and the model checker
# hack/images/model-check.py as /usr/local/bin/model-check, as
# packetfs.io/python-consumer:v0.1.0 (the tag config/samples/ uses).
# Two parts are cached outside the repo, each keyed by what it holds: the
# Debian root file system (suite and package list) and the installed wheels
# (their names and sha256). The client and the checker are copied in on every
# build, so the image always has this checkout's.
#
# Usage: hack/images/python-consumer.sh <out.tar>
#        hack/images/python-consumer.sh --base   only the cached parts
#        hack/images/python-consumer.sh --check <out.tar>
#            run the image's python (podman run --rootfs on the archive's
#            layer: no image store, no registry) on real model files from
#            hack/testdata.sh: every check of model-check must pass
set -euo pipefail
source "$(dirname "$0")/../kind/lib.sh"

TAG=${PYTHON_CONSUMER_IMG:-packetfs.io/python-consumer:v0.1.0}
PKGS=(python3)
# The image's python is Debian bookworm's 3.11, so the wheels are the
# CPython 3.11 x86_64 manylinux ones (abi3 where the project ships those).
PY_VERSION=3.11
# name==version sha256-of-the-wheel, one a line: what pip download must
# return, byte for byte. onnxruntime's declared dependencies (coloredlogs,
# flatbuffers, protobuf, sympy, packaging) are left out on purpose: running a
# model with InferenceSession imports none of them (--check proves it), and
# sympy alone would add 70 MiB.
WHEELS=(
  "numpy==2.4.6 89cd468399cfd2504718f0ba50e410dca55a170b61a02ad92bb18c8a65186e93"
  "safetensors==0.8.0 fd6f3f93c9a0a7cc2788ee63fb763353d4bd2e89b0751bc78fcf7dda00bea774"
  "tokenizers==0.23.3 376851d22bcf9d650a5c3090bb83e6cf9e895fbf0595369fa4cd43c1f69b5f87"
  "onnxruntime==1.32.0 5a34fc4dfeb5a7b4a74c95dcba1e773d722abda720b474edf1b0c419dc6d163d"
)
here="$(cd "$(dirname "$0")" && pwd)"
SITE=usr/local/lib/python$PY_VERSION/dist-packages

key=$(printf '%s\n' "$DEBIAN_SUITE" "${PKGS[@]}" | sha256sum | cut -c1-12)
base="$PFS_CACHE/images/python-consumer-$DEBIAN_SUITE-$key.tar"
wkey=$(printf '%s\n' "$PY_VERSION" "${WHEELS[@]}" | sha256sum | cut -c1-12)
wheels="$PFS_CACHE/images/python-consumer-wheels-$wkey.tar"

# build_base: the Debian part (python3 and its standard library).
build_base() {
  [ -s "$base" ] && return 0
  ensure_pkgs debootstrap jq
  mkdir -p "$(dirname "$base")"
  exec 7>"$base.lock"; flock 7
  if [ ! -s "$base" ]; then
    local dir
    dir=$(mktemp -d "$PFS_CACHE/images/python-consumer.XXXXXX")
    log "debootstrap $DEBIAN_SUITE minbase + ${PKGS[*]} (cold: a few minutes)"
    debootstrap --variant=minbase --include="$(IFS=,; echo "${PKGS[*]}")" "$DEBIAN_SUITE" "$dir" \
      "$(debian_mirror)" >&2
    # A consumer needs python, not apt, docs or locales.
    rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/* "$dir"/usr/share/doc/* \
      "$dir"/usr/share/man/* "$dir"/usr/share/locale/* "$dir"/usr/share/info/*
    tar --numeric-owner -C "$dir" -cf "$base.tmp" .
    mv "$base.tmp" "$base"
    rm -rf "$dir"
  fi
  exec 7>&-
}

# build_wheels: the PyPI part, installed (not just downloaded) under $SITE,
# as a tar to lay over the base.
build_wheels() {
  [ -s "$wheels" ] && return 0
  mkdir -p "$(dirname "$wheels")"
  exec 7>"$wheels.lock"; flock 7
  if [ ! -s "$wheels" ]; then
    local dir w spec sum f
    dir=$(mktemp -d "$PFS_CACHE/images/python-consumer-wheels.XXXXXX")
    mkdir -p "$dir/dl" "$dir/root/$SITE"
    # Wheels for the image's python and platform, not the host's.
    local target=(--only-binary=:all: --implementation cp --python-version "$PY_VERSION"
      --abi "cp${PY_VERSION/./}" --abi abi3 --abi none
      --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
    for w in "${WHEELS[@]}"; do
      read -r spec sum <<<"$w"
      log "python-consumer: $spec from PyPI"
      rm -rf "$dir/one"
      python3 -m pip download --quiet --no-deps --disable-pip-version-check --no-input \
        "${target[@]}" -d "$dir/one" "$spec" >&2
      f=$(ls "$dir"/one/*.whl)
      echo "$sum  $f" | sha256sum -c --quiet - >&2 ||
        die "python-consumer: $(basename "$f") does not have the pinned sha256 $sum"
      mv "$f" "$dir/dl/"
    done
    python3 -m pip install --quiet --no-deps --no-index --disable-pip-version-check --no-compile \
      "${target[@]}" --target "$dir/root/$SITE" "$dir"/dl/*.whl >&2
    # Console scripts name the host's python; test suites are not needed
    # to load a model.
    rm -rf "$dir/root/$SITE/bin"
    find "$dir/root/$SITE" \( -name __pycache__ -o -name tests -o -name testing \) -type d -prune -exec rm -rf {} +
    tar --numeric-owner --owner=0 --group=0 -C "$dir/root" -cf "$wheels.tmp" .
    mv "$wheels.tmp" "$wheels"
    rm -rf "$dir"
  fi
  exec 7>&-
}

# check <out.tar>: the image's own python, from the archive, on real files;
# then the host checks what it printed against the files themselves.
check() {
  local img=$1 layer out minilm silero mpnet
  [ -s "$img" ] || die "no image archive $img: build it first ($0 $img)"
  ensure_pkgs podman jq
  # (global: the EXIT trap runs after this function has returned)
  checkroot=$(mktemp -d); trap 'rm -rf "$checkroot"' EXIT
  layer=$(tar -xOf "$img" manifest.json | jq -r '.[0].Layers[0]')
  tar -xOf "$img" "$layer" | tar -C "$checkroot" -xf -
  minilm=$("$REPO_ROOT/hack/testdata.sh" path minilm)
  silero=$("$REPO_ROOT/hack/testdata.sh" path silero6)
  mpnet=$("$REPO_ROOT/hack/testdata.sh" path mpnet)
  log "python-consumer: model-check in the image (podman run --rootfs, no network) on minilm, silero6 and mpnet"
  # The same user, read-only root and read-only data as the pods.
  out=$(podman run --rm --network none --read-only --user 65532:65532 \
    -v "$minilm:/data/minilm:ro" -v "$silero:/data/silero:ro" -v "$mpnet:/data/mpnet:ro" \
    --rootfs "$checkroot" /usr/local/bin/model-check \
    --safetensors /data/minilm/model.safetensors --tokenizer /data/minilm/tokenizer.json \
    --onnx /data/silero/silero_vad.onnx --safetensors /data/mpnet/model.safetensors \
    --mmap /data/mpnet/model.safetensors \
    --files /data/minilm --files /data/silero --files /data/mpnet | tail -1)
  # Every file's sha256 as the host's sha256sum says; every tensor of the
  # 418 MiB file the same through the library (a copy) and the mapping.
  jq -r '.files[] | .root as $r | .files | to_entries[] | "\(.value.sha256)  \($r)/\(.key)"' <<<"$out" |
    sed -e "s|  /data/minilm/|  $minilm/|" -e "s|  /data/silero/|  $silero/|" -e "s|  /data/mpnet/|  $mpnet/|" |
    sha256sum -c --quiet - || die "python-consumer: a file read in the image differs from the host's"
  jq -e '(.safetensors[1].tensors | map_values(.sha256)) == (.mmap[0].tensors | map_values(.sha256))
    and .safetensors[1].count == 200 and .safetensors[0].count > 0 and .tokenizer[0].vocab > 0
    and (.onnx[0].outputs | length) > 0' <<<"$out" >/dev/null ||
    die "python-consumer: model-check's readings disagree: $(head -c 600 <<<"$out")"
  jq -c '{python, tensors: [.safetensors[] | {path, count, seconds: (.done - .open)}],
    tokenizer: [.tokenizer[] | {path, vocab}], onnx: [.onnx[] | {path, outputs: (.outputs | map_values(.sha256[:12]))}],
    files: [.files[] | {root, n: (.files | length)}]}' <<<"$out"
  log "python-consumer: the image's safetensors, tokenizers, onnxruntime and numpy read the real files correctly"
}

case ${1:-} in
  --base) need_root; build_base; build_wheels; exit 0 ;;
  --check) check "${2:?usage: python-consumer.sh --check <out.tar>}"; exit 0 ;;
  '' | -*) die "usage: python-consumer.sh <out.tar> | --base | --check <out.tar>" ;;
esac
out=$1
need_root
build_base
build_wheels

root=$(mktemp -d); trap 'rm -rf "$root"' EXIT
tar -C "$root" -xf "$base"
tar -C "$root" -xf "$wheels"
site="$root/usr/lib/python3/dist-packages"
cp -r "$REPO_ROOT/dataplane/python/packetfs" "$site/packetfs"
find "$site/packetfs" -name __pycache__ -prune -exec rm -rf {} +
install -D -m 0755 "$here/model-check.py" "$root/usr/local/bin/model-check"
"$here/mkimage.sh" "$root" "$TAG" "$out" python3
log "image $TAG -> $out ($(du -h "$out" | cut -f1))"
