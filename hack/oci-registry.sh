#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# A real OCI registry for the tests: CNCF distribution (Apache-2.0) v3,
# built from the Go module proxy and cached outside the repo in
# $PFS_CACHE/tools/registry-<version>/registry, and the oras CLI that pushes
# to it, cached the same way in $PFS_CACHE/tools/oras-<version>/oras.
#
# Usage:
#   hack/oci-registry.sh bin                build both once, print the registry's path
#   hack/oci-registry.sh oras               build both once, print oras' path
#   hack/oci-registry.sh start DIR [--port P] [--auth] [--bind ADDR]
#   hack/oci-registry.sh stop DIR
#   hack/oci-registry.sh status DIR
#
# start runs one registry with its storage (the filesystem driver), its
# configuration, TLS pair and log in DIR, always over TLS with a throwaway
# CA (a certificate with SANs for 127.0.0.1, localhost and ADDR), waits until
# /v2/ answers, and prints one line of shell assignments (also written to
# DIR/env, 0600):
#   OCI_REGISTRY=ADDR:P OCI_CA_FILE=DIR/tls/ca.crt [OCI_AUTH_FILE=DIR/dockerconfig.json
#   OCI_USER=... OCI_PASSWORD=...]
# With --auth the registry asks for Basic credentials (htpasswd, bcrypt):
# one user whose password is drawn at the first start; DIR/dockerconfig.json
# (0600) holds them as a pull secret's .dockerconfigjson would. A later
# start on the same DIR reuses the port, CA, credentials and data.
# It listens on 127.0.0.1, or with --bind on ADDR (kept in DIR/bind for
# restarts): the kind cluster's pods reach the host on the podman bridge's
# address, so the e2e binds there.
set -euo pipefail
source "$(dirname "$0")/kind/lib.sh"

REGISTRY_VERSION=v3.0.0
REGISTRY_PKG=github.com/distribution/distribution/v3/cmd/registry
ORAS_VERSION=v1.3.6
ORAS_PKG=oras.land/oras/cmd/oras

# go_tool NAME PKG VERSION: the cached binary of PKG@VERSION, built once
# (go_install, the checksum database checking its go.sum) into
# $TOOLS_DIR/NAME-VERSION/; two runs at once build it once.
go_tool() {
  local name=$1 pkg=$2 ver=$3 dir="$TOOLS_DIR/$1-$3" start
  if [ ! -x "$dir/$name" ]; then
    mkdir -p "$dir"
    exec 9>"$dir.lock"
    flock 9
    start=$(date +%s)
    go_install "$pkg" "$ver" "$dir" 2>"$dir/build.log" ||
      { tail -n 30 "$dir/build.log" >&2; die "oci-registry: go install $pkg@$ver failed; the log is $dir/build.log"; }
    [ -x "$dir/$name" ] && log "oci-registry: $dir/$name ready in $(($(date +%s) - start)) s"
    exec 9>&-
  fi
  echo "$dir/$name"
}

registry_bin() { go_tool registry "$REGISTRY_PKG" "$REGISTRY_VERSION"; }
oras_bin() { go_tool oras "$ORAS_PKG" "$ORAS_VERSION"; }

# running DIR: the pid of DIR's registry, when it runs (its command line
# names DIR's config, so a reused pid does not count).
running() {
  local pid
  pid=$(cat "$1/registry.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && [[ $(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") == *" $1/config.yml "* ]] || return 1
  echo "$pid"
}

# make_auth DIR: one htpasswd user (bcrypt, as distribution requires) and
# the docker config of a pull secret holding it.
make_auth() {
  local d=$1 user=pfs pass
  [ -s "$d/htpasswd" ] && return 0
  pass=$(openssl rand -hex 16)
  (umask 077
   # libxcrypt (Debian's crypt(3)) does bcrypt; Python's crypt module calls it.
   printf '%s:%s\n' "$user" "$(python3 -W ignore -c 'import crypt, sys
print(crypt.crypt(sys.stdin.read().strip(), crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1024)))' <<<"$pass")" >"$d/htpasswd.tmp"
   printf '%s\n%s\n' "$user" "$pass" >"$d/credentials")
  grep -q ':\$2' "$d/htpasswd.tmp" || die "oci-registry: crypt(3) made no bcrypt hash (distribution takes only bcrypt)"
  mv "$d/htpasswd.tmp" "$d/htpasswd"
}

start() {
  local dir=${1:?usage: $0 start DIR [--port P] [--auth] [--bind ADDR]} port='' auth=0 reg pid i env addr=
  shift
  while [ $# -gt 0 ]; do
    case $1 in
      --port) port=${2:?--port needs a value}; shift 2 ;;
      --auth) auth=1; shift ;;
      --bind) addr=${2:?--bind needs an address}; shift 2 ;;
      *) die "oci-registry: unknown option '$1' (start DIR [--port P] [--auth] [--bind ADDR])" ;;
    esac
  done
  reg=$(registry_bin)
  mkdir -p "$dir/data"
  dir=$(cd "$dir" && pwd)
  exec 8>"$dir/.lock"
  flock 8
  if pid=$(running "$dir"); then
    cat "$dir/env"
    return 0
  fi
  # The address, like the port, is the first start's.
  [ -s "$dir/bind" ] || echo "${addr:-127.0.0.1}" >"$dir/bind"
  read -r addr <"$dir/bind"
  [ -n "$port" ] || port=$(cat "$dir/port" 2>/dev/null || free_ports "$addr" 1)
  echo "$port" >"$dir/port"
  throwaway_tls "$dir" "packetfs throwaway registry CA" "$addr"
  {
    echo "version: 0.1"
    echo "log: {level: warn, accesslog: {disabled: true}}"
    echo "storage: {filesystem: {rootdirectory: $dir/data}, delete: {enabled: true}}"
    echo "http:"
    echo "  addr: $addr:$port"
    echo "  secret: $(openssl rand -hex 16)"
    echo "  tls: {certificate: $dir/tls/server.crt, key: $dir/tls/server.key}"
    if [ "$auth" = 1 ]; then
      make_auth "$dir"
      echo "auth: {htpasswd: {realm: pfs-test, path: $dir/htpasswd}}"
    fi
  } >"$dir/config.yml"
  # The registry reads no environment of ours; OTEL off keeps it quiet.
  (export OTEL_TRACES_EXPORTER=none && exec 8>&- && spawn_session "$dir/registry.pid" "$dir/registry.log" "$reg" serve "$dir/config.yml")
  for ((i = 0; i < 100; i++)); do
    curl -s -o /dev/null --cacert "$dir/tls/ca.crt" "https://$addr:$port/v2/" && break
    running "$dir" >/dev/null || { tail -n 20 "$dir/registry.log" >&2; die "oci-registry: the registry exited"; }
    sleep 0.1
  done
  ((i < 100)) || die "oci-registry: no answer on $addr:$port within 10 s"
  env="OCI_REGISTRY=$addr:$port OCI_CA_FILE=$dir/tls/ca.crt"
  if [ "$auth" = 1 ]; then
    local user pass
    { read -r user; read -r pass; } <"$dir/credentials"
    (umask 077
     printf '{"auths":{"%s:%s":{"auth":"%s"}}}\n' "$addr" "$port" \
       "$(printf '%s:%s' "$user" "$pass" | base64 -w0)" >"$dir/dockerconfig.json")
    env="$env OCI_AUTH_FILE=$dir/dockerconfig.json OCI_USER=$user OCI_PASSWORD=$pass"
  fi
  (umask 077; echo "$env" >"$dir/env")
  echo "$env"
}

stop() {
  local dir=${1:?usage: $0 stop DIR} pid i
  dir=$(cd "$dir" && pwd)
  pid=$(running "$dir") || { rm -f "$dir/registry.pid"; return 0; }
  kill "$pid"
  for ((i = 0; i < 50; i++)); do running "$dir" >/dev/null || break; sleep 0.1; done
  running "$dir" >/dev/null && kill -9 "$pid"
  rm -f "$dir/registry.pid"
}

status() {
  local dir=${1:?usage: $0 status DIR} pid
  dir=$(cd "$dir" && pwd)
  if pid=$(running "$dir"); then
    echo "running (pid $pid): $(cat "$dir/env" | sed 's/OCI_PASSWORD=[^ ]*/OCI_PASSWORD=.../')"
  else
    echo "stopped"
    return 1
  fi
}

case ${1:-} in
  bin) registry_bin; oras_bin >/dev/null ;;
  oras) registry_bin >/dev/null; oras_bin ;;
  start) shift; start "$@" ;;
  stop) shift; stop "$@" ;;
  status) shift; status "$@" ;;
  *) die "usage: $0 bin|oras|start DIR [--port P] [--auth]|stop DIR|status DIR" ;;
esac
