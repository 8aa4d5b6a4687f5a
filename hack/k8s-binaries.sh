#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Build Kubernetes binaries from k8s.io/kubernetes through the Go module proxy
# and cache them outside the repo, keyed by version. No prebuilt download is
# possible here, so this is how envtest (kube-apiserver) and the offline kind
# node image (kubeadm, kubelet, control-plane images) get their binaries.
#
# Usage: hack/k8s-binaries.sh [component...]   (default: kube-apiserver)
# Prints the cache bin directory on stdout; progress goes to stderr.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.34.4}
CACHE=${PFS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/packetfs}
BIN="$CACHE/k8s/$K8S_VERSION/bin"
components=("$@")
[ ${#components[@]} -gt 0 ] || components=(kube-apiserver)

declare -A pkg=(
  [kube-apiserver]=k8s.io/kubernetes/cmd/kube-apiserver
  [kube-controller-manager]=k8s.io/kubernetes/cmd/kube-controller-manager
  [kube-scheduler]=k8s.io/kubernetes/cmd/kube-scheduler
  [kube-proxy]=k8s.io/kubernetes/cmd/kube-proxy
  [kubelet]=k8s.io/kubernetes/cmd/kubelet
  [kubeadm]=k8s.io/kubernetes/cmd/kubeadm
  [kubectl]=k8s.io/kubernetes/cmd/kubectl
)

missing=()
for c in "${components[@]}"; do
  [ -n "${pkg[$c]:-}" ] || { echo "k8s-binaries: unknown component '$c' (known: ${!pkg[*]})" >&2; exit 2; }
  [ -x "$BIN/$c" ] || missing+=("$c")
done
if [ ${#missing[@]} -eq 0 ]; then echo "$BIN"; exit 0; fi

# One build at a time per cache: two concurrent cold builds would only thrash 2 cores.
mkdir -p "$BIN"
exec 9>"$CACHE/k8s/$K8S_VERSION/.lock"
flock 9
missing=(); for c in "${components[@]}"; do [ -x "$BIN/$c" ] || missing+=("$c"); done
if [ ${#missing[@]} -eq 0 ]; then echo "$BIN"; exit 0; fi

minor=${K8S_VERSION#v1.}; staging="v0.$minor"
work="$CACHE/k8s/$K8S_VERSION/wrapper"
mkdir -p "$work"
if [ ! -f "$work/go.mod" ]; then
  echo "k8s-binaries: preparing wrapper module for $K8S_VERSION" >&2
  (cd "$work"
   GOFLAGS=-mod=mod go mod download k8s.io/kubernetes@"$K8S_VERSION" >&2
   modfile=$(GOFLAGS=-mod=mod go mod download -json k8s.io/kubernetes@"$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
   gover=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$modfile")
   {
     echo "module packetfs.io/k8s-binaries"
     echo "go $gover"
     echo "require k8s.io/kubernetes $K8S_VERSION"
     grep -E '^\s+k8s\.io/[^ ]+ => \./staging' "$modfile" | awk -v v="$staging" '{print "replace " $1 " => " $1 " " v}'
   } > go.mod
   printf 'package tools\n\nimport (\n' > tools.go
   for p in "${pkg[@]}"; do printf '\t_ "%s"\n' "$p" >> tools.go; done
   printf ')\n' >> tools.go
   sed -i '1i //go:build tools\n' tools.go
   GOFLAGS=-mod=mod go mod tidy >&2)
fi

ld="-s -w"
for v in gitVersion=$K8S_VERSION gitMajor=1 gitMinor=${minor%%.*} gitTreeState=clean buildDate=1970-01-01T00:00:00Z; do
  ld+=" -X k8s.io/component-base/version.$v -X k8s.io/client-go/pkg/version.$v"
done
for c in "${missing[@]}"; do
  echo "k8s-binaries: building $c $K8S_VERSION (cold: several minutes on 2 cores)" >&2
  (cd "$work" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "$ld" -o "$BIN/$c.tmp" "${pkg[$c]}")
  mv "$BIN/$c.tmp" "$BIN/$c"
done
echo "$BIN"
