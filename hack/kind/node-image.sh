#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Build the kind node image offline (`kind build node-image` needs a registry
# and a newer containerd): a debootstrapped Debian root filesystem, kind's
# node contract (entrypoint, /kind, systemd units, containerd config), the
# kubeadm/kubelet/kubectl binaries, Multus, and the control-plane images
# already in the node's containerd store, so kubeadm never pulls.
#
# The image is tagged with a hash of every input and cached twice: in podman's
# storage, and as a rootfs tarball under $PFS_CACHE/kind-node so that a lost
# podman store costs one `podman import`, not a rebuild.
# Prints the image tag on stdout.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

need_root
ensure_pkgs "${HOST_PKGS[@]}"
bin=$("$REPO_ROOT/hack/k8s-binaries.sh" kubeadm kubelet kubectl kube-apiserver \
  kube-controller-manager kube-scheduler kube-proxy)
"$HACK_KIND/go-tools.sh" kind multus etcd coredns
rootfs_tar=$("$HACK_KIND/node-rootfs.sh")
images=$("$REPO_ROOT/hack/images/build.sh" "$bin")
multus="$TOOLS_DIR/multus-$MULTUS_VERSION/multus"
pause_image=$(grep '/pause:' "$images/images.list")

# The tag hashes the recipe's content and the large inputs' size and mtime
# (hashing ~700 MB of binaries on every cluster-up would cost seconds).
hash=$( { echo "$rootfs_tar"
  sha256sum "$HACK_KIND"/node/* "$HACK_KIND/node-image.sh" | cut -d' ' -f1
  stat -c '%n %s %Y' "$bin"/kubeadm "$bin"/kubelet "$bin"/kubectl "$multus" "$images"/*.tar
  } | sha256sum | cut -c1-12)
tag="localhost/packetfs/kind-node:$K8S_VERSION-$hash"
archive="$NODE_DIR/node-$K8S_VERSION-$hash.tar"

if podman image exists "$tag"; then echo "$tag"; exit 0; fi
exec 5>"$NODE_DIR/.node.lock"; flock 5

if [ ! -s "$archive" ]; then
  log "assembling node rootfs $tag"
  dir=$(mktemp -d "$NODE_DIR/build.XXXXXX")
  ctrd=$(mktemp -d /tmp/pfs-node-ctrd.XXXXXX)
  cleanup() {
    [ -f "$ctrd/pid" ] && kill "$(cat "$ctrd/pid")" 2>/dev/null && sleep 1
    rm -rf "$dir" "$ctrd"
  }
  trap cleanup EXIT
  tar --numeric-owner --xattrs -xpf "$rootfs_tar" -C "$dir"

  n="$HACK_KIND/node"
  install -D -m 0755 "$n/entrypoint" "$dir/usr/local/bin/entrypoint"
  install -d "$dir/etc/containerd" "$dir/etc/systemd/system.conf.d" "$dir/etc/systemd/journald.conf.d" \
    "$dir/etc/kubernetes/manifests" "$dir/etc/cni/net.d" "$dir/opt/cni/bin" "$dir/kind/manifests"
  sed "s|@PAUSE_IMAGE@|$pause_image|" "$n/containerd.toml" > "$dir/etc/containerd/config.toml"
  install -m 0644 "$n/containerd.service" "$n/kubelet.service" "$dir/etc/systemd/system/"
  install -m 0644 "$n/system.conf" "$dir/etc/systemd/system.conf.d/10-pfs-limits.conf"
  install -m 0644 "$n/journald.conf" "$dir/etc/systemd/journald.conf.d/10-pfs.conf"
  install -m 0644 "$n/sysctl.conf" "$dir/etc/sysctl.d/10-pfs.conf"
  install -m 0644 "$n/default-storage.yaml" "$dir/kind/manifests/default-storage.yaml"
  install -m 0755 "$bin/kubeadm" "$bin/kubelet" "$bin/kubectl" "$dir/usr/bin/"
  # containerd looks for CNI plugins in /opt/cni/bin; Debian ships them in
  # /usr/lib/cni. Multus (thin plugin) sits next to them.
  for p in "$dir"/usr/lib/cni/*; do ln -sf "/usr/lib/cni/${p##*/}" "$dir/opt/cni/bin/${p##*/}"; done
  install -m 0755 "$multus" "$dir/opt/cni/bin/multus"
  echo -n "$K8S_VERSION" > "$dir/kind/version"
  : > "$dir/etc/machine-id"

  # systemd: start only what a node needs. Units Debian enabled (getty,
  # timers, its own containerd unit) are dropped; ours are enabled by link.
  rm -f "$dir"/etc/systemd/system/*.wants/* "$dir"/lib/systemd/system/multi-user.target.wants/* \
    "$dir"/lib/systemd/system/local-fs.target.wants/* "$dir"/lib/systemd/system/basic.target.wants/* \
    "$dir"/lib/systemd/system/sockets.target.wants/*udev* "$dir"/lib/systemd/system/sockets.target.wants/*initctl* \
    "$dir"/lib/systemd/system/sysinit.target.wants/systemd-tmpfiles-setup.service
  mkdir -p "$dir/etc/systemd/system/multi-user.target.wants"
  for u in containerd kubelet; do
    ln -sf "/etc/systemd/system/$u.service" "$dir/etc/systemd/system/multi-user.target.wants/$u.service"
  done
  for u in systemd-binfmt.service getty.target console-getty.service systemd-udevd.service \
    systemd-modules-load.service systemd-timesyncd.service; do
    ln -sf /dev/null "$dir/etc/systemd/system/$u"
  done

  # Fill the node's image store with a throwaway containerd of the same
  # version rooted in the image. Content only (--no-unpack): the node's
  # containerd unpacks a layer the first time a container needs it.
  cat > "$ctrd/config.toml" <<TOML
version = 2
root = "$dir/var/lib/containerd"
state = "$ctrd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$ctrd/sock"
TOML
  containerd --config "$ctrd/config.toml" > "$ctrd/log" 2>&1 &
  echo $! > "$ctrd/pid"
  for _ in $(seq 50); do [ -S "$ctrd/sock" ] && break; sleep 0.2; done
  [ -S "$ctrd/sock" ] || { cat "$ctrd/log" >&2; die "build containerd did not start"; }
  while read -r img; do
    name=${img##*/}; name=${name%%:*}
    ctr --address "$ctrd/sock" -n k8s.io images import --no-unpack "$images/$name.tar" >&2
    # Pinned images are never garbage-collected by the kubelet.
    ctr --address "$ctrd/sock" -n k8s.io images label "$img" io.cri-containerd.pinned=pinned >/dev/null
  done < "$images/images.list"
  kill "$(cat "$ctrd/pid")"; wait "$(cat "$ctrd/pid")" 2>/dev/null || true; rm -f "$ctrd/pid"

  tar --numeric-owner --xattrs -C "$dir" -cf "$archive.tmp" .
  mv "$archive.tmp" "$archive"
fi

log "importing $archive as $tag"
podman import \
  --change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' \
  --change 'ENV container=docker' \
  --change 'STOPSIGNAL SIGRTMIN+3' \
  "$archive" "$tag" >&2
# Older node images are superseded: drop their archives, and their podman
# images unless a cluster still runs on them.
for old in "$NODE_DIR"/node-*.tar; do [ "$old" = "$archive" ] || rm -f "$old"; done
podman images --format '{{.Repository}}:{{.Tag}}' | grep '^localhost/packetfs/kind-node:' |
  { grep -vx "$tag" || true; } | while read -r old; do podman rmi "$old" >/dev/null 2>&1 || true; done
echo "$tag"
