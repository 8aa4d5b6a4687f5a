# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034  # sourced: the variables are used by the scripts
#
# Shared settings and helpers of the throwaway kind cluster scripts (sourced,
# never run). Everything heavy is cached outside the repo under $PFS_CACHE,
# keyed by version, so a second `make cluster-up` only starts containers.

K8S_VERSION=${K8S_VERSION:-v1.34.4}
KIND_VERSION=${KIND_VERSION:-v0.30.0}
ETCD_VERSION=${ETCD_VERSION:-v3.6.8}
# CoreDNS and pause follow what kubeadm asks for; node-image.sh checks them
# against `kubeadm config images list` and fails if they drift.
COREDNS_VERSION=${COREDNS_VERSION:-v1.12.1}
MULTUS_VERSION=${MULTUS_VERSION:-v4.2.2}
WHEREABOUTS_VERSION=${WHEREABOUTS_VERSION:-v0.9.2}
NFD_VERSION=${NFD_VERSION:-v0.18.3}
DEBIAN_SUITE=${DEBIAN_SUITE:-bookworm}

PFS_CACHE=${PFS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/packetfs}
export PFS_CACHE
TOOLS_DIR="$PFS_CACHE/tools"
IMAGES_DIR="$PFS_CACHE/images/$K8S_VERSION"
NODE_DIR="$PFS_CACHE/kind-node"
CLUSTER_NAME=${CLUSTER_NAME:-pfs}
# State of the running cluster: kubeconfig, what cluster-up changed on the
# host (so cluster-down restores exactly that), and nothing else.
STATE_DIR="$PFS_CACHE/cluster/$CLUSTER_NAME"
KUBECONFIG_PATH="$STATE_DIR/kubeconfig"
# kubectl's discovery cache would otherwise land in ~/.kube/cache.
export KUBECACHEDIR="$STATE_DIR/kubectl-cache"

HACK_KIND="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$HACK_KIND/../.." && pwd)"

# kind drives podman; the containers.conf works around what root lacks here
# (CAP_SYS_RESOURCE for a 1M nofile limit) and crun's refusal of the hybrid
# cgroup layout.
export KIND_EXPERIMENTAL_PROVIDER=podman
export CONTAINERS_CONF="$HACK_KIND/containers.conf"

log() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# go_mod_dir MODULE VERSION SUM: MODULE@VERSION downloaded through the Go
# module proxy, its go.sum hash checked against SUM (so a changed proxy
# answer cannot slip in); prints its directory in the (read-only) module
# cache. Run it outside any module (a temporary directory).
go_mod_dir() {
  local json sum
  json=$(go mod download -json "$1@$2") ||
    die "go mod download $1@$2 failed (is the Go module proxy reachable? GOPROXY=$(go env GOPROXY))"
  sum=$(sed -n 's/^[[:space:]]*"Sum": "\(.*\)",$/\1/p' <<<"$json")
  [ "$sum" = "$3" ] || die "$1@$2 has hash '$sum', pinned $3"
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' <<<"$json"
}

# go_mod_build BIN MODULE VERSION SUM PKG [GO-BUILD-FLAGS...]: BIN, a tool
# cached outside the repo, built once from the tree of MODULE@VERSION
# (go_mod_dir checks it) with `go build PKG`, and its path printed. Not `go
# install MODULE/PKG@VERSION`: that refuses a module whose go.mod has
# replace directives, and asks the proxy for the module's version list,
# which it does not serve for every module. Two runs at once build it once
# (a lock beside BIN); BIN appears by a rename on one file system, whole or
# not at all. A failed build leaves its log in BIN.build.log.
go_mod_build() {
  local bin=$1 mod=$2 ver=$3 sum=$4 pkg=$5 dir tmp src start
  shift 5
  if [ ! -x "$bin" ]; then
    dir=$(dirname "$bin")
    mkdir -p "$dir"
    exec 9>"$bin.lock"
    flock 9
    if [ ! -x "$bin" ]; then
      start=$(date +%s)
      tmp=$(mktemp -d "$dir/build.XXXXXX")
      # shellcheck disable=SC2064  # expand tmp now: it is local
      trap "rm -rf '$tmp'" EXIT
      log "building $mod@$ver from the Go module proxy"
      src=$(cd "$tmp" && go_mod_dir "$mod" "$ver" "$sum")
      # The module cache is read-only: build a writable copy.
      cp -r "$src" "$tmp/src"
      chmod -R u+w "$tmp/src"
      if ! (cd "$tmp/src" && CGO_ENABLED=0 go build -trimpath "$@" -o "$tmp/bin" "$pkg") >"$tmp/build.log" 2>&1; then
        mv "$tmp/build.log" "$bin.build.log"
        tail -n 30 "$bin.build.log" >&2
        die "building $mod@$ver failed; the whole log is $bin.build.log"
      fi
      mv "$tmp/bin" "$bin"
      rm -rf "$tmp"
      trap - EXIT
      log "built $bin in $(($(date +%s) - start)) s"
    fi
    exec 9>&-
  fi
  echo "$bin"
}

# ensure_pkgs installs Debian packages only when missing, so `make test`
# never pulls the cluster's packages unless a cluster is asked for.
ensure_pkgs() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]}"
  local sudo=; [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# Host packages the cluster needs: podman and its network stack, the tools
# that build the node image, and containerd's ctr to fill its image store.
HOST_PKGS=(podman netavark aardvark-dns conmon runc iptables uidmap debootstrap
  containerd containernetworking-plugins iproute2 jq)

# check_network_backend stops with an explanation when podman would run the
# cluster on another network backend than the netavark pinned in
# containers.conf, and drops a leftover `kind` network that has no DNS (made
# by an earlier run on the CNI backend) while no container uses it: kind
# recreates it, with DNS, on the next create.
check_network_backend() {
  local backend chosen=/var/lib/containers/storage/defaultNetworkBackend
  [ -x /usr/lib/podman/netavark ] || command -v netavark >/dev/null ||
    die "netavark is not installed, and the project pins podman's network backend to it ($CONTAINERS_CONF):" \
      "apt-get install netavark aardvark-dns (make deps does), then run again"
  backend=$(podman info --format '{{.Host.NetworkBackend}}' 2>/dev/null) ||
    die "podman info failed; run it by hand with CONTAINERS_CONF=$CONTAINERS_CONF to see why"
  if [ "$backend" != netavark ]; then
    die "podman uses the '$backend' network backend, the cluster needs netavark (pinned in $CONTAINERS_CONF):" \
      "its networks have no DNS and the kind worker cannot resolve the control plane." \
      "Install netavark and aardvark-dns (apt-get install netavark aardvark-dns) and run again."
  fi
  if [ "$(cat "$chosen" 2>/dev/null)" = cni ]; then
    log "note: $chosen says cni (podman or buildah first ran on this host before netavark was installed);" \
      "the project's containers.conf overrides it with netavark, so CNI networks made earlier are not used"
  fi
  if podman network exists kind 2>/dev/null &&
     [ "$(podman network inspect kind --format '{{.DNSEnabled}}' 2>/dev/null)" != true ]; then
    if [ -n "$(podman ps -aq --filter network=kind)" ]; then
      die "podman network 'kind' has DNS disabled (made on another backend) and containers still use it:" \
        "run 'make cluster-down' (or remove them and 'podman network rm kind') and try again"
    fi
    log "removing podman network 'kind': it has DNS disabled (made on another backend); kind recreates it"
    podman network rm kind >/dev/null
  fi
}

kind_bin() { echo "$TOOLS_DIR/kind-$KIND_VERSION/kind"; }

# go_install builds one main package at an exact version into a cache dir
# of its own, so builds never touch the repo's go.mod.
go_install() {
  local pkg=$1 ver=$2 dest=$3
  [ -x "$dest/$(basename "${pkg%%@*}")" ] && return 0
  mkdir -p "$dest"
  log "building $pkg@$ver (cold: a few minutes on 2 cores)"
  CGO_ENABLED=0 GOBIN="$dest" GOFLAGS=-trimpath go install -ldflags "-s -w" "$pkg@$ver" >&2
}

# free_ports ADDR N: N TCP ports free on ADDR right now, from the kernel
# (the test servers: hack/s3-server.sh, hack/oci-registry.sh).
free_ports() {
  python3 -c 'import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[2]))]
for s in socks: s.bind((sys.argv[1], 0))
print(*(s.getsockname()[1] for s in socks))' "$1" "$2"
}

# spawn_session PIDFILE LOG CMD...: run CMD in a session of its own (it
# outlives the script that started it, until stopped), its output appended
# to LOG, and wait until PIDFILE holds its pid. setsid forks when its caller
# leads a process group (a shell with job control), so $! may not be CMD:
# the process that becomes CMD writes its own pid. Callers close their lock
# fds first, or a stop would wait for the server it stops.
spawn_session() {
  local pidfile=$1 log=$2 i
  shift 2
  rm -f "$pidfile"
  setsid bash -c 'echo $$ >"$0.tmp" && mv "$0.tmp" "$0" && exec "$@"' "$pidfile" "$@" >>"$log" 2>&1 </dev/null &
  for ((i = 0; i < 50; i++)); do [ -s "$pidfile" ] && return 0; sleep 0.1; done
  die "$1 did not start (no pid in $pidfile after 5 s; log $log)"
}

# throwaway_tls DIR CA-NAME [ADDR]: a throwaway CA and a server certificate
# for 127.0.0.1, localhost (and ADDR) that it signed, in DIR/tls (EC P-256, ten years:
# the pair lives as long as DIR; kept when there). The server certificate
# is made by `x509 -req` with its extensions spelled out, since `req -x509`
# would mark it CA:TRUE, which strict verifiers refuse in a server
# certificate.
throwaway_tls() {
  local t=$1/tls san=IP:127.0.0.1,DNS:localhost
  [ -z "${3:-}" ] || san+=",IP:$3"
  [ -s "$t/server.crt" ] && return 0
  mkdir -p "$t"
  (umask 077
   cd "$t"
   openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
     -subj "/CN=$2" -keyout ca.key -out ca.crt
   openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
     -subj "/CN=localhost" -keyout server.key -out server.csr
   printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
     "extendedKeyUsage=serverAuth" "subjectAltName=$san" >server.ext
   openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
     -extfile server.ext -out server.crt.tmp
   chmod 644 ca.crt # clients under other uids read it
   rm server.csr server.ext ca.srl
   mv server.crt.tmp server.crt) >/dev/null 2>"$t/openssl.log" ||
    { cat "$t/openssl.log" >&2; die "openssl failed to make the throwaway CA in $t"; }
  rm -f "$t/openssl.log"
}

# need_root stops early with a clear message: the cluster changes host state
# (hugepages, veths in container namespaces, /lib/modules).
need_root() { [ "$(id -u)" -eq 0 ] || die "run as root (the cluster reserves hugepages and wires veths)"; }

# debian_mirror: the Debian mirror apt already uses (debootstrap of the node
# image and the consumer image), deb.debian.org when none is configured.
debian_mirror() {
  local m
  m=$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list 2>/dev/null |
    grep -m1 -E 'debian/?( |$)' | awk '{print $2}' || true)
  echo "${m:-http://deb.debian.org/debian}"
}

# sa_kubeconfig <kubectl-fn> <secret> <user>: a kubeconfig (on stdout) for a
# CNI plugin that runs on the nodes outside any pod (Multus, whereabouts):
# the API server on the control-plane node, the cluster CA, and the
# long-lived token of the ServiceAccount Secret kube-system/<secret>,
# waited for (the token controller fills it).
sa_kubeconfig() {
  local k=$1 secret=$2 user=$3 token='' ca server cp
  for _ in $(seq 30); do
    token=$("$k" -n kube-system get secret "$secret" -o jsonpath='{.data.token}' 2>/dev/null | base64 -d)
    [ -n "$token" ] && break; sleep 1
  done
  [ -n "$token" ] || die "the token of kube-system/$secret was not issued"
  ca=$("$k" config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
  cp=$("$k" get nodes -l node-role.kubernetes.io/control-plane -o jsonpath='{.items[0].metadata.name}')
  server=https://$("$k" get node "$cp" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}'):6443
  cat <<KC
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: $server
    certificate-authority-data: $ca
users:
- name: $user
  user:
    token: $token
contexts:
- name: $user
  context: {cluster: local, user: $user}
current-context: $user
KC
}
