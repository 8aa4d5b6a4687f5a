#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Build the Go tools the offline cluster needs, each at a pinned version from
# the Go module proxy, into $PFS_CACHE/tools/<name>-<version>/:
#   kind     - runs the cluster on podman
#   etcd     - control-plane image (wrapper module: its modules must agree)
#   coredns  - cluster DNS image
#   multus   - thin CNI plugin for NetworkAttachmentDefinitions
#   whereabouts - cluster-wide IPAM plugin for NetworkAttachmentDefinitions
#   nfd-topology-updater - publishes each node's NodeResourceTopology
#            (node-feature-discovery, built against the cluster's Kubernetes)
# Usage: hack/kind/go-tools.sh [kind|etcd|coredns|multus|whereabouts|nfd-topology-updater]...
#        (default: all)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

build_etcd() {
  local dest="$TOOLS_DIR/etcd-$ETCD_VERSION"
  [ -x "$dest/etcd" ] && return 0
  local work="$dest/wrapper"
  mkdir -p "$work"
  log "building etcd $ETCD_VERSION (wrapper module)"
  # etcd's server module requires its sibling modules at pseudo-versions;
  # pinning all of them to the release keeps the build reproducible.
  cat > "$work/go.mod" <<MOD
module packetfs.io/etcd-build

go 1.24

require go.etcd.io/etcd/server/v3 $ETCD_VERSION

replace (
	go.etcd.io/etcd/api/v3 => go.etcd.io/etcd/api/v3 $ETCD_VERSION
	go.etcd.io/etcd/client/pkg/v3 => go.etcd.io/etcd/client/pkg/v3 $ETCD_VERSION
	go.etcd.io/etcd/client/v3 => go.etcd.io/etcd/client/v3 $ETCD_VERSION
	go.etcd.io/etcd/pkg/v3 => go.etcd.io/etcd/pkg/v3 $ETCD_VERSION
)
MOD
  printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' > "$work/tools.go"
  (cd "$work" && GOFLAGS=-mod=mod go mod tidy >&2 &&
    CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$dest/etcd.tmp" go.etcd.io/etcd/server/v3 >&2)
  mv "$dest/etcd.tmp" "$dest/etcd"
}

# build_nfd: nfd-topology-updater from node-feature-discovery, in a wrapper
# module that pins k8s.io/kubernetes and every staging module it replaces to
# the cluster's version (as hack/k8s-binaries.sh does), and NFD's own api/nfd
# module (a directory replace in its go.mod) to the release.
build_nfd() {
  local dest="$TOOLS_DIR/nfd-topology-updater-$NFD_VERSION" k8s=${K8S_VERSION:-v1.34.4}
  [ -x "$dest/nfd-topology-updater" ] && return 0
  local work="$dest/wrapper" staging="v0.${k8s#v1.}" modfile
  mkdir -p "$work"
  log "building nfd-topology-updater $NFD_VERSION against Kubernetes $k8s (wrapper module; cold: minutes)"
  modfile=$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$k8s" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
  {
    printf 'module packetfs.io/nfd-build\n\ngo 1.25.0\n\nrequire sigs.k8s.io/node-feature-discovery %s\n\n' "$NFD_VERSION"
    printf 'replace sigs.k8s.io/node-feature-discovery/api/nfd => sigs.k8s.io/node-feature-discovery/api/nfd %s\n' "$NFD_VERSION"
    printf 'replace k8s.io/kubernetes => k8s.io/kubernetes %s\n' "$k8s"
    grep -E '^\s+k8s\.io/[^ ]+ => \./staging' "$modfile" | awk -v v="$staging" '{print "replace " $1 " => " $1 " " v}'
  } > "$work/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "sigs.k8s.io/node-feature-discovery/cmd/nfd-topology-updater"\n' > "$work/tools.go"
  (cd "$work" && GOFLAGS=-mod=mod go mod tidy >&2 &&
    CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$dest/nfd-topology-updater.tmp" \
      sigs.k8s.io/node-feature-discovery/cmd/nfd-topology-updater >&2)
  mv "$dest/nfd-topology-updater.tmp" "$dest/nfd-topology-updater"
}

# build_wrapped <module> <version> <package> <dest-dir> [name]: build a main package
# from a wrapper module that requires the exact version. `go install pkg@v`
# also asks the proxy for the module's version list, which some modules
# (multus) do not expose here.
build_wrapped() {
  local mod=$1 ver=$2 pkg=$3 dest=$4 name=${5:-${3##*/}}
  [ -x "$dest/$name" ] && return 0
  local work="$dest/wrapper"
  mkdir -p "$work"
  log "building $pkg $ver (wrapper module)"
  printf 'module packetfs.io/%s-build\n\ngo 1.24\n\nrequire %s %s\n' "$name" "$mod" "$ver" > "$work/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$pkg" > "$work/tools.go"
  (cd "$work" && GOFLAGS=-mod=mod go mod tidy >&2 &&
    CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$dest/$name.tmp" "$pkg" >&2)
  mv "$dest/$name.tmp" "$dest/$name"
}

build_one() {
  case $1 in
    kind) go_install sigs.k8s.io/kind "$KIND_VERSION" "$TOOLS_DIR/kind-$KIND_VERSION" ;;
    coredns) go_install github.com/coredns/coredns "$COREDNS_VERSION" "$TOOLS_DIR/coredns-$COREDNS_VERSION" ;;
    multus) build_wrapped gopkg.in/k8snetworkplumbingwg/multus-cni.v4 "$MULTUS_VERSION" \
      gopkg.in/k8snetworkplumbingwg/multus-cni.v4/cmd/multus "$TOOLS_DIR/multus-$MULTUS_VERSION" ;;
    whereabouts) build_wrapped github.com/k8snetworkplumbingwg/whereabouts "$WHEREABOUTS_VERSION" \
      github.com/k8snetworkplumbingwg/whereabouts/cmd "$TOOLS_DIR/whereabouts-$WHEREABOUTS_VERSION" whereabouts ;;
    nfd-topology-updater) build_nfd ;;
    etcd) build_etcd ;;
    *) die "unknown tool '$1' (known: kind etcd coredns multus whereabouts nfd-topology-updater)" ;;
  esac
}

command -v go >/dev/null || die "go is not installed"
tools=("$@"); [ ${#tools[@]} -gt 0 ] || tools=(kind etcd coredns multus whereabouts nfd-topology-updater)
mkdir -p "$TOOLS_DIR"
# One tool build at a time: parallel cold builds only thrash 2 cores.
exec 8>"$TOOLS_DIR/.lock"; flock 8
for t in "${tools[@]}"; do build_one "$t"; done
