#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Smoke test of the throwaway cluster (TAP): a locally built image loaded
# with `kind load image-archive`, a pod on each node, cluster DNS, pod to pod
# across nodes, and a pod pair that owns both ends of each veth data link
# (Multus + host-device) and pings across it. Leaves nothing behind.
# Usage: hack/kind/smoke.sh   (after hack/cluster-up.sh)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

need_root
ensure_pkgs busybox-static jq
start=$(date +%s)
bin=$("$REPO_ROOT/hack/k8s-binaries.sh" kubectl)
kind=$(kind_bin)
export KUBECONFIG="$KUBECONFIG_PATH"
[ -f "$KUBECONFIG" ] || die "no cluster: run hack/cluster-up.sh first"
k() { "$bin/kubectl" "$@"; }
NS=pfs-smoke
IMG=localhost/packetfs/smoke:v1

n=0 failed=0
tap() { # tap <name> <command...>: one TAP line per check, output shown on failure
  local name=$1 out; shift; n=$((n + 1))
  if out=$("$@" 2>&1); then echo "ok $n $name"
  else failed=$((failed + 1)); echo "not ok $n $name"; sed 's/^/# /' <<<"$out"; fi
}
cleanup() { k delete namespace "$NS" --ignore-not-found --wait=false >/dev/null 2>&1 || true; }
trap cleanup EXIT

# The image: static busybox (sh, ping, nslookup, ip) FROM scratch.
work=$(mktemp -d); trap 'cleanup; rm -rf "$work"' EXIT
mkdir -p "$work/root/bin"
cp /bin/busybox "$work/root/bin/busybox"
for a in sh sleep ping nslookup ip cat ls wc; do ln -s busybox "$work/root/bin/$a"; done
"$REPO_ROOT/hack/images/mkimage.sh" "$work/root" "$IMG" "$work/smoke.tar" /bin/sh
tap "kind load image-archive" "$kind" load image-archive "$work/smoke.tar" --name "$CLUSTER_NAME"

mapfile -t nodes < <(k get nodes -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
# Without the chart there is no device plugin to advertise the data links:
# the smoke test advertises them itself on the two nodes that hold them
# (node status, as if a plugin had), unless something already does.
for node in "${nodes[@]:0:2}"; do
  for link in pfsdata0 pfsdata1; do
    [ -n "$(k get node "$node" -o jsonpath="{.status.capacity.packetfs\.io/$link}")" ] ||
      k patch node "$node" --subresource=status --type=json \
        -p "[{\"op\":\"add\",\"path\":\"/status/capacity/packetfs.io~1$link\",\"value\":\"1\"}]" >/dev/null
  done
done
# A namespace left by an interrupted run is still terminating: wait it out.
k delete namespace "$NS" --ignore-not-found --wait=true --timeout=120s >/dev/null
k create namespace "$NS" >/dev/null

# pod <name> <node> [networks-annotation]: a pod that sleeps until deleted.
pod() {
  local name=$1 node=$2 nets=${3:-} res='' ann='{}'
  if [ -n "$nets" ]; then
    res='"resources": {"limits": {"packetfs.io/pfsdata0": "1", "packetfs.io/pfsdata1": "1"}},'
    ann=$(jq -cn --arg v "$nets" '{"k8s.v1.cni.cncf.io/networks": $v}')
  fi
  k -n "$NS" apply -f - >/dev/null <<POD
{"apiVersion": "v1", "kind": "Pod",
 "metadata": {"name": "$name", "annotations": $ann},
 "spec": {"nodeName": "$node", "terminationGracePeriodSeconds": 1,
  "containers": [{"name": "c", "image": "$IMG", "imagePullPolicy": "Never", $res
    "command": ["/bin/sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]}]}}
POD
}
ready() { k -n "$NS" wait --for=condition=Ready "pod/$1" --timeout=90s; }
x() { local p=$1; shift; k -n "$NS" exec "$p" -- "$@"; }

pod p0 "${nodes[0]}"; pod p1 "${nodes[1]}"
tap "pod runs on ${nodes[0]}" ready p0
tap "pod runs on ${nodes[1]}" ready p1
tap "CoreDNS resolves the kubernetes Service" sh -c \
  "$bin/kubectl -n $NS exec p0 -- nslookup kubernetes.default.svc.cluster.local | grep -qE '^Address:[[:space:]]*10\\.96\\.0\\.1\$'"
ip1=$(k -n "$NS" get pod p1 -o jsonpath='{.status.podIP}')
tap "pod to pod across nodes ($ip1)" x p0 ping -c 2 -W 2 "$ip1"

# Native XDP on the data links, in the node namespaces before a pod takes
# them: proves the MTU and queue counts allow driver mode on veth.
xdp_native() { # xdp_native <node> <link>
  local pid
  pid=$(podman inspect -f '{{.State.Pid}}' "$1")
  nsenter -t "$pid" -n ip link set dev "$2" xdpdrv obj "$work/xdp_pass.o" sec xdp &&
    nsenter -t "$pid" -n ip link show dev "$2" | grep -q 'prog/xdp' &&
    nsenter -t "$pid" -n ip link set dev "$2" xdpdrv off
}
if command -v clang >/dev/null &&
   clang -O2 -target bpf -I/usr/include/x86_64-linux-gnu -c "$HACK_KIND/xdp_pass.c" -o "$work/xdp_pass.o"; then
  for node in "${nodes[@]}"; do
    for link in pfsdata0 pfsdata1; do tap "native XDP attaches to $link on $node" xdp_native "$node" "$link"; done
  done
else
  n=$((n + 1)); echo "ok $n # SKIP native XDP on the data links: no clang to build the BPF program"
fi

data='[{"name":"pfsdata0","namespace":"default","ips":["192.168.77.@/24"]},{"name":"pfsdata1","namespace":"default","ips":["192.168.78.@/24"]}]'
pod d0 "${nodes[0]}" "${data//@/1}"; pod d1 "${nodes[1]}" "${data//@/2}"
tap "data pod on ${nodes[0]} gets both veth links" ready d0
tap "data pod on ${nodes[1]} gets both veth links" ready d1
tap "Multus writes the network-status annotation" sh -c \
  "$bin/kubectl -n $NS get pod d0 -o jsonpath='{.metadata.annotations.k8s\.v1\.cni\.cncf\.io/network-status}' | grep -q pfsdata1"
tap "ping over pfsdata0 (1 queue)" x d0 ping -c 2 -W 2 192.168.77.2
tap "ping over pfsdata1 (4 queues)" x d1 ping -c 2 -W 2 192.168.78.1
tap "pfsdata1 has 4 RX queues and MTU 3500 in the pod" sh -c \
  "[ \"\$($bin/kubectl -n $NS exec d0 -- sh -c 'ls -d /sys/class/net/net2/queues/rx-* | wc -l; cat /sys/class/net/net2/mtu' | tr '\n' ' ')\" = '4 3500 ' ]"
tap "the scheduler counts packetfs.io/pfsdata0 (capacity 1, 1 in use)" sh -c \
  "$bin/kubectl describe node ${nodes[0]} | grep -A12 'Allocated resources' | grep -q 'packetfs.io/pfsdata0 *1 *1'"

# Hugepages: reserved on the host before the kubelets started.
for node in "${nodes[@]}"; do
  tap "$node advertises hugepages-2Mi" sh -c \
    "[ \"\$($bin/kubectl get node $node -o jsonpath='{.status.allocatable.hugepages-2Mi}')\" != 0 ]"
done
k -n "$NS" apply -f - >/dev/null <<POD
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "hp"},
 "spec": {"nodeName": "${nodes[1]}", "terminationGracePeriodSeconds": 1,
  "volumes": [{"name": "hp", "emptyDir": {"medium": "HugePages-2Mi"}}],
  "containers": [{"name": "c", "image": "$IMG", "imagePullPolicy": "Never",
    "resources": {"limits": {"hugepages-2Mi": "4Mi", "memory": "32Mi", "cpu": "100m"}},
    "volumeMounts": [{"name": "hp", "mountPath": "/hp"}],
    "command": ["/bin/sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]}]}}
POD
tap "a pod gets a hugepages-2Mi emptyDir" sh -c \
  "$bin/kubectl -n $NS wait --for=condition=Ready pod/hp --timeout=90s && $bin/kubectl -n $NS exec hp -- cat /proc/mounts | grep -q ' /hp hugetlbfs '"

echo "$((n - failed)) passed, $failed failed"
log "smoke took $(( $(date +%s) - start ))s"
[ "$failed" -eq 0 ]
