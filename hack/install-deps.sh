#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Install the Debian packages the build and the tests need, only when missing,
# so a warm machine pays nothing and a fresh one gets everything.
set -euo pipefail

pkgs=(
  build-essential pkg-config clang llvm lld libbpf-dev libxdp-dev libelf-dev zlib1g-dev
  libzstd-dev bpftool iproute2 iptables ethtool iperf3 etcd-server openssh-client openssh-server
  jq libclang-rt-14-dev util-linux time
  # sha256 of `pfs blob create --source`: OpenSSL libcrypto, linked statically.
  libssl-dev
  # `make -C dataplane lint`: the C sources against dataplane/.clang-format.
  clang-format
  # arm64 data plane paths (ARMv8 CRC32C, NEON kernels): cross-built static
  # test programs run under user-mode qemu by `make -C dataplane test-arm64`.
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static
  # make images (make demo, make test-e2e) when no docker daemon answers.
  # netavark and aardvark-dns come in the same transaction as buildah: the
  # first buildah/podman command that opens containers storage records the
  # network backend it found (/var/lib/containers/storage/defaultNetworkBackend)
  # and keeps it forever; without netavark that is CNI, whose networks have no
  # DNS, and the kind worker then cannot resolve the control plane.
  buildah netavark aardvark-dns
  # make -C dataplane bench-delta: the tools delta mode is compared with.
  rsync xdelta3 zstd
  # make bench: sysbench memory, the cross-check of the memory limits.
  sysbench
  # hack/s3-server.sh and hack/s3/smoke.sh: the throwaway CA, the keys, and
  # requests signed with SigV4 (curl --aws-sigv4).
  openssl curl
  # The data-plane image's CA bundle for https sources (dataplane/Dockerfile).
  ca-certificates
  # promtool: the holders' /metrics pages and the chart's alert rules are
  # checked by it (test_metrics_cli, make test-chart); prometheus itself
  # scrapes a fan-out in hack/prometheus/smoke.sh.
  prometheus
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}" >&2
  sudo=; [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
