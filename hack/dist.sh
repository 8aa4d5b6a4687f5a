#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Release artifacts of one version (the VERSION file: chart version V,
# appVersion and image tags vV, the Python package V):
#
#   hack/dist.sh build OUT       the chart package, an OCI archive of the
#                                operator and data-plane images (already
#                                built and tagged vV by make docker-build),
#                                the packetfs wheel and sdist (the standard
#                                `build` frontend), SHA256SUMS
#   hack/dist.sh check OUT       what a user of OUT would do first: sums,
#                                helm lint of the package, the wheel installed
#                                into a fresh venv and imported, the sdist's
#                                version, each image archive loaded by podman
#   hack/dist.sh publish OUT REGISTRY [--ca-file F] [--plain-http]
#                                the images to REGISTRY/packetfs/<name>:vV
#                                (oras from the OCI layouts) and the chart to
#                                oci://REGISTRY/packetfs/charts (helm push)
#   hack/dist.sh version         check the version is written the same in
#                                every file that carries it; print it
#   hack/dist.sh set-version V   write V into all of them
#
# HELM names the helm binary; CONTAINER_TOOL buildah or podman.
set -euo pipefail
source "$(dirname "$0")/kind/lib.sh"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CHART=$ROOT/charts/packetfs-operator
PY=$ROOT/dataplane/python
HELM=${HELM:-helm}
IMAGES=(operator dataplane) # packetfs.io/<name>:vV, the images the chart runs

# version: VERSION, after checking every copy of it agrees (one place to
# change: these files are the places a release's tooling reads it from).
version() {
  local v chart app py init
  v=$(tr -d ' \n' <"$ROOT/VERSION")
  [[ $v =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?$ ]] || die "dist: VERSION '$v' is not a semantic version"
  chart=$(sed -n 's/^version: *//p' "$CHART/Chart.yaml")
  app=$(sed -n 's/^appVersion: *//p' "$CHART/Chart.yaml")
  py=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$PY/pyproject.toml")
  init=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$PY/packetfs/__init__.py")
  [ "$chart" = "$v" ] && [ "$app" = "v$v" ] && [ "$py" = "$v" ] && [ "$init" = "$v" ] ||
    die "dist: VERSION is $v but Chart.yaml has version $chart appVersion $app, pyproject.toml $py, packetfs/__init__.py $init: make them agree"
  echo "$v"
}

tool() {
  local t=${CONTAINER_TOOL:-}
  [ -n "$t" ] || { command -v buildah >/dev/null && t=buildah; } || t=podman
  echo "$t"
}

build() {
  local out=${1:?usage: $0 build OUT} v venv stage name img
  v=$(version)
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  rm -f "$out"/*
  "$HELM" package "$CHART" --version "$v" --app-version "v$v" -d "$out" >&2
  for name in "${IMAGES[@]}"; do
    img=packetfs.io/$name:v$v
    case $(tool) in
      buildah) buildah push -q "$img" "oci-archive:$out/packetfs-$name-v$v.oci.tar:$img" >/dev/null ;;
      podman) podman save -q --format oci-archive -o "$out/packetfs-$name-v$v.oci.tar" "$img" ;;
      *) die "dist: CONTAINER_TOOL must be buildah or podman" ;;
    esac
  done
  venv=$("$ROOT/hack/python-venv.sh" "$ROOT/hack/dist-requirements.txt")
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' RETURN
  cp -r "$PY/pyproject.toml" "$PY/README.md" "$PY/packetfs" "$stage/"
  find "$stage" -name __pycache__ -prune -exec rm -rf {} +
  "$venv/bin/python" -m build --no-isolation --sdist --wheel --outdir "$out" "$stage" >&2
  (cd "$out" && sha256sum -- * >SHA256SUMS)
  ls -l "$out" >&2
}

check() {
  local out=${1:?usage: $0 check OUT} v work name ref loaded
  v=$(version)
  out=$(cd "$out" && pwd)
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  (cd "$out" && sha256sum --quiet -c SHA256SUMS) || die "dist: SHA256SUMS does not match $out"
  "$HELM" lint --strict "$out/packetfs-operator-$v.tgz" >&2
  "$HELM" show chart "$out/packetfs-operator-$v.tgz" >"$work/chart"
  grep -qx "version: $v" "$work/chart" && grep -qx "appVersion: v$v" "$work/chart" ||
    die "dist: the chart package says $(tr '\n' ' ' <"$work/chart")"
  python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install --quiet --no-index --disable-pip-version-check "$out/packetfs-$v-py3-none-any.whl"
  [ "$("$work/venv/bin/python" -c 'import packetfs; print(packetfs.__version__)')" = "$v" ] ||
    die "dist: the wheel installs a packetfs whose __version__ is not $v"
  tar -xzOf "$out/packetfs-$v.tar.gz" "packetfs-$v/PKG-INFO" | grep -qx "Version: $v" ||
    die "dist: the sdist's PKG-INFO does not say Version: $v"
  for name in "${IMAGES[@]}"; do
    ref=packetfs.io/$name:v$v
    loaded=$(podman load -i "$out/packetfs-$name-v$v.oci.tar" 2>&1) || die "dist: podman load $name: $loaded"
    podman image exists "$ref" || die "dist: loading packetfs-$name-v$v.oci.tar gave no $ref ($loaded)"
  done
  echo "dist: $out holds release $v: sums, chart, wheel, sdist and images check out" >&2
}

publish() {
  local out=${1:?usage: $0 publish OUT REGISTRY [--ca-file F] [--plain-http]} reg=${2:?} v ca='' plain=0 work name digest
  shift 2
  while [ $# -gt 0 ]; do
    case $1 in
      --ca-file) ca=${2:?}; shift 2 ;;
      --plain-http) plain=1; shift ;;
      *) die "dist: publish: unknown option '$1'" ;;
    esac
  done
  v=$(version)
  out=$(cd "$out" && pwd)
  local oras_tls=() helm_tls=()
  [ -n "$ca" ] && oras_tls=(--to-ca-file "$ca") && helm_tls=(--ca-file "$ca")
  [ "$plain" = 1 ] && oras_tls=(--to-plain-http) && helm_tls=(--plain-http)
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  for name in "${IMAGES[@]}"; do
    mkdir -p "$work/$name"
    tar -xf "$out/packetfs-$name-v$v.oci.tar" -C "$work/$name"
    # The layout's one manifest, by digest: its ref name has a ':' of its own.
    digest=$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["manifests"][0]["digest"])' "$work/$name/index.json")
    "$("$ROOT/hack/oci-registry.sh" oras)" cp "${oras_tls[@]}" --from-oci-layout \
      "$work/$name@$digest" "$reg/packetfs/$name:v$v" >&2
  done
  "$HELM" push "${helm_tls[@]}" "$out/packetfs-operator-$v.tgz" "oci://$reg/packetfs/charts" >&2
  echo "dist: published $v to $reg: packetfs/operator, packetfs/dataplane, packetfs/charts/packetfs-operator" >&2
}

set_version() {
  local v=${1:?usage: $0 set-version V}
  [[ $v =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?$ ]] || die "dist: '$v' is not a semantic version"
  echo "$v" >"$ROOT/VERSION"
  sed -i "s/^version: .*/version: $v/; s/^appVersion: .*/appVersion: v$v/" "$CHART/Chart.yaml"
  sed -i "s/^version = \".*\"$/version = \"$v\"/" "$PY/pyproject.toml"
  sed -i "s/^__version__ = \".*\"$/__version__ = \"$v\"/" "$PY/packetfs/__init__.py"
  version
}

case ${1:-} in
  build | check | publish) cmd=$1; shift; "$cmd" "$@" ;;
  version) version ;;
  set-version) shift; set_version "$@" ;;
  *) die "usage: $0 build OUT | check OUT | publish OUT REGISTRY [--ca-file F] [--plain-http] | version | set-version V" ;;
esac
