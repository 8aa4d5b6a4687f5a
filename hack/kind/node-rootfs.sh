#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Build the Debian root filesystem of the kind node image with debootstrap,
# from the mirror apt already uses (no container registry needed), and cache
# it as a tarball keyed by suite and package list.
# Prints the tarball path on stdout.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

# What kind's base image contract needs from the OS: systemd as PID 1, a CRI
# runtime (containerd + runc), the CNI plugins, the tools kubeadm and the
# kubelet exec (iptables, conntrack, mount, ...), jq for the OCI hook.
NODE_PKGS=(systemd systemd-sysv containerd runc containernetworking-plugins
  iptables nftables conntrack iproute2 ethtool iputils-ping util-linux mount
  kmod libseccomp2 procps ca-certificates jq bash)

key=$(printf '%s\n' "$DEBIAN_SUITE" "${NODE_PKGS[@]}" | sha256sum | cut -c1-12)
out="$NODE_DIR/rootfs-$DEBIAN_SUITE-$key.tar"
if [ -s "$out" ]; then echo "$out"; exit 0; fi

need_root
ensure_pkgs debootstrap
mkdir -p "$NODE_DIR"
exec 7>"$NODE_DIR/.rootfs.lock"; flock 7
if [ -s "$out" ]; then echo "$out"; exit 0; fi

dir=$(mktemp -d "$NODE_DIR/rootfs.XXXXXX")
trap 'rm -rf "$dir"' EXIT
m=$(debian_mirror)
log "debootstrap $DEBIAN_SUITE minbase from $m (cold: a few minutes)"
pkgs=$(IFS=,; echo "${NODE_PKGS[*]}")
debootstrap --variant=minbase --include="$pkgs" "$DEBIAN_SUITE" "$dir" "$m" >&2
# Keep the image small: no apt lists, caches or docs.
rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/*.bin "$dir"/var/cache/apt/archives/*.deb \
  "$dir"/usr/share/doc/* "$dir"/usr/share/man/* "$dir"/usr/share/locale/*
tar --numeric-owner --xattrs -C "$dir" -cf "$out.tmp" .
mv "$out.tmp" "$out"
echo "$out"
