#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Print a directory holding kube-apiserver, etcd and kubectl for envtest
# (KUBEBUILDER_ASSETS). setup-envtest cannot download here, so:
#   - a user-set KUBEBUILDER_ASSETS is checked and printed; nothing is built;
#   - otherwise kube-apiserver and kubectl are built from source once by
#     hack/k8s-binaries.sh (cached outside the repo, keyed by version) and etcd
#     comes from the OS package (installed by hack/install-deps.sh if missing).
# Progress and errors go to stderr; stdout is only the directory.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
need=(kube-apiserver etcd kubectl)

check() { # dir -> 0 when every binary is there and executable
  local d=$1 ok=0
  for b in "${need[@]}"; do
    if [ ! -x "$d/$b" ]; then echo "envtest-assets: $d/$b is missing or not executable" >&2; ok=1; fi
  done
  return $ok
}

K8S_VERSION=${K8S_VERSION:-v1.34.4}

if [ -n "${KUBEBUILDER_ASSETS:-}" ]; then
  check "$KUBEBUILDER_ASSETS" || { echo "envtest-assets: KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS must hold ${need[*]}" >&2; exit 1; }
  # The CRDs use CEL libraries (quantity, isQuantity) that older apiservers
  # lack; say which version was tested rather than fail in a puzzling way.
  have=$("$KUBEBUILDER_ASSETS/kube-apiserver" --version 2>/dev/null | awk '{print $2}')
  if [ "${have%.*}" != "${K8S_VERSION%.*}" ]; then
    echo "envtest-assets: warning: $KUBEBUILDER_ASSETS has kube-apiserver ${have:-of unknown version}; the CRDs are tested with $K8S_VERSION" >&2
  fi
  echo "$KUBEBUILDER_ASSETS"
  exit 0
fi
CACHE=${PFS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/packetfs}
assets="$CACHE/envtest/$K8S_VERSION"

etcd_bin=$(command -v etcd || true)
if [ -z "$etcd_bin" ]; then
  "$here/install-deps.sh" >&2
  etcd_bin=$(command -v etcd || true)
  [ -n "$etcd_bin" ] || { echo "envtest-assets: etcd not found after installing etcd-server" >&2; exit 1; }
fi

bin=$("$here/k8s-binaries.sh" kube-apiserver kubectl)

mkdir -p "$assets"
for b in kube-apiserver kubectl; do ln -sfn "$bin/$b" "$assets/$b"; done
ln -sfn "$etcd_bin" "$assets/etcd"
check "$assets"
echo "$assets"
