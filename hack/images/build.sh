#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Build the control-plane images kubeadm expects, without a registry: static
# binaries in single-layer FROM-scratch images (kube-proxy also gets the
# iptables binaries it execs), written as docker archives into
# $PFS_CACHE/images/<k8s version>/. The tags are the ones
# `kubeadm config images list` prints, so kubeadm finds them in the node's
# containerd and never pulls.
#
# Usage: hack/images/build.sh <k8s-bin-dir>   Prints the images dir on stdout.
set -euo pipefail
source "$(dirname "$0")/../kind/lib.sh"

bin=${1:?usage: build.sh <k8s-bin-dir>}
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$IMAGES_DIR"
exec 6>"$IMAGES_DIR/.lock"; flock 6

# jq writes the image configs; a static C toolchain builds pause.
ensure_pkgs jq gcc libc6-dev
mapfile -t wanted < <("$bin/kubeadm" config images list --kubernetes-version "$K8S_VERSION")
[ ${#wanted[@]} -ge 7 ] || die "kubeadm listed ${#wanted[@]} images, expected 7"

# build_image <tag> <name> <entrypoint...>; the rootfs is filled by the caller
# in $root.
build_image() {
  local tag=$1 name=$2; shift 2
  local out="$IMAGES_DIR/$name.tar"
  log "image $tag"
  "$here/mkimage.sh" "$root" "$tag" "$out" "$@"
  echo "$tag" > "$out.tag"
}

# copy_with_libs <rootfs> <file...>: a dynamically linked binary plus every
# shared library it loads, at the paths the loader reports (the host runs the
# same Debian release as the node).
copy_with_libs() {
  local dst=$1; shift
  local f
  for f in "$@" $(ldd "$@" 2>/dev/null | grep -oE '/[^ :]+\.so[^ :]*' | sort -u); do
    mkdir -p "$dst$(dirname "$f")"
    cp -L "$f" "$dst$f"
  done
}

# kube-proxy execs iptables-save/-restore. The nft backend matches the
# node's default (Debian's alternatives), so both see the same rules.
proxy_layer() {
  ensure_pkgs iptables
  local dst=$1 x=/usr/lib/x86_64-linux-gnu/xtables
  mkdir -p "$dst/usr/sbin" "$dst/usr/local/bin" "$dst/tmp" "$dst/run" "$dst/etc"
  copy_with_libs "$dst" /usr/sbin/xtables-nft-multi "$x"/*.so
  local t
  for t in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
    ln -sf xtables-nft-multi "$dst/usr/sbin/$t"
  done
  # iptables looks up protocol and service names; the loader's cache finds
  # the libraries in the multiarch directories.
  cp /etc/protocols /etc/services /etc/ld.so.cache "$dst/etc/"
  cp "$bin/kube-proxy" "$dst/usr/local/bin/"
}

root=$(mktemp -d); trap 'rm -rf "$root"' EXIT
fresh() { rm -rf "$root"; mkdir -p "$root/usr/local/bin" "$root/tmp"; chmod 1777 "$root/tmp"; }
for tag in "${wanted[@]}"; do
  name=${tag##*/}; name=${name%%:*}
  # Built earlier for this very tag: nothing to do.
  [ -s "$IMAGES_DIR/$name.tar" ] && [ "$(cat "$IMAGES_DIR/$name.tar.tag" 2>/dev/null)" = "$tag" ] && continue
  fresh
  case $name in
    kube-apiserver|kube-controller-manager|kube-scheduler)
      cp "$bin/$name" "$root/usr/local/bin/"
      build_image "$tag" "$name" "/usr/local/bin/$name" ;;
    kube-proxy)
      proxy_layer "$root"
      build_image "$tag" "$name" /usr/local/bin/kube-proxy ;;
    etcd)
      "$REPO_ROOT/hack/kind/go-tools.sh" etcd
      cp "$TOOLS_DIR/etcd-$ETCD_VERSION/etcd" "$root/usr/local/bin/"
      mkdir -p "$root/var/lib/etcd"
      build_image "$tag" etcd /usr/local/bin/etcd ;;
    coredns)
      want=${tag##*:}
      [ "$want" = "$COREDNS_VERSION" ] || die "kubeadm wants coredns $want, hack/kind/lib.sh pins $COREDNS_VERSION"
      "$REPO_ROOT/hack/kind/go-tools.sh" coredns
      cp "$TOOLS_DIR/coredns-$COREDNS_VERSION/coredns" "$root/coredns"
      build_image "$tag" coredns /coredns ;;
    pause)
      cc -O2 -static -Wall -Wextra -Werror -o "$root/pause" "$here/pause/pause.c"
      build_image "$tag" pause /pause ;;
    *) die "no recipe for image $tag" ;;
  esac
done
printf '%s\n' "${wanted[@]}" > "$IMAGES_DIR/images.list"
echo "$IMAGES_DIR"
