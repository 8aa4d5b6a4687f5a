#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# A real S3-compatible server for the tests and benchmarks: SeaweedFS
# (Apache-2.0), built here from the Go module proxy, since no container
# registry or release download is reachable, and cached outside the repo in
# $PFS_CACHE/tools/seaweedfs-<version>/weed.
#
# Usage:
#   hack/s3-server.sh bin                     build the weed binary once, print its path
#   hack/s3-server.sh start DIR [--port P] [--tls] [--bind ADDR]
#   hack/s3-server.sh stop DIR
#
# start runs one `weed server` process (master, volume, filer and the S3
# gateway; lighter than `weed mini`, which adds WebDAV, an admin UI and
# more) with its data, configuration and log in DIR, waits until a signed
# request answers, and prints one line of shell assignments (also written
# to DIR/env, 0600):
#   S3_ENDPOINT=http://127.0.0.1:P S3_ACCESS_KEY=... S3_SECRET_KEY=...
#   S3_REGION=us-east-1 [S3_CA_FILE=DIR/tls/ca.crt]
# e.g. eval "export $(hack/s3-server.sh start DIR)". With --tls the
# endpoint is https and S3_CA_FILE names the throwaway CA that signed the
# server's certificate. S3 authentication is on: one static identity whose
# keys are drawn at the first start into DIR/credentials (0600), the ports
# into DIR/ports, the CA and certificate into DIR/tls; a later start on the
# same DIR reuses all of them, so a test can stop the server mid-read,
# start it again and find the same objects at the same endpoint with the
# same keys. start also recovers from an unclean stop (a stale pid file,
# kill -9). Everything listens on 127.0.0.1, or with --bind on ADDR (kept in
# DIR/bind for restarts): the kind cluster's pods reach the host on the
# podman bridge's address, so the e2e binds there. --port picks the S3 port
# (default: one drawn free at the first start, like the ports of the
# master, volume and filer, and their gRPC ports).
set -euo pipefail
source "$(dirname "$0")/kind/lib.sh"

# The snapshot the module proxy serves, and its go.sum hash (checked, so a
# changed proxy answer cannot slip in).
SEAWEEDFS_VERSION=v0.0.0-20261109003541-7506e5f91cd6
SEAWEEDFS_SUM=h1:LOYZFToHq9F7pSR6lkPGfkM8RmHlVFrzndKdhmNZjrU=
SEAWEEDFS_MOD=github.com/seaweedfs/seaweedfs
WEED_DIR="$TOOLS_DIR/seaweedfs-$SEAWEEDFS_VERSION"

# weed_bin: the cached binary, built first when missing (cold: module
# downloads and a compile of several minutes on 2 cores).
weed_bin() {
  go_mod_build "$WEED_DIR/weed" "$SEAWEEDFS_MOD" "$SEAWEEDFS_VERSION" "$SEAWEEDFS_SUM" ./weed -ldflags "-s -w"
}

# running DIR: print the pid of the server of DIR and succeed, when there
# is one. The command line must name DIR, so a pid reused by another
# process after an unclean stop does not count, nor does a zombie (its
# command line is empty) when nobody reaps the exited server.
running() {
  local pid
  pid=$(cat "$1/weed.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && [[ $(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") == *" -dir=$1/data "* ]] || return 1
  echo "$pid"
}

# taken ADDR PORT: something listens on ADDR:PORT.
taken() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

start() {
  local dir=${1:?usage: $0 start DIR [--port P] [--tls] [--bind ADDR]} port='' tls=0 weed pid i addr=
  shift
  while [ $# -gt 0 ]; do
    case $1 in
      --port) port=${2:?--port needs a value}; shift 2 ;;
      --tls) tls=1; shift ;;
      --bind) addr=${2:?--bind needs an address}; shift 2 ;;
      *) die "s3-server: unknown option '$1' (start DIR [--port P] [--tls] [--bind ADDR])" ;;
    esac
  done
  weed=$(weed_bin)
  mkdir -p "$dir/data"
  dir=$(cd "$dir" && pwd)
  # weed reads its directory flags as comma-separated lists.
  [[ $dir != *,* ]] || die "s3-server: weed cannot use a directory whose path has a ',': $dir"
  exec 8>"$dir/.lock"
  flock 8 # start and stop of one DIR take turns
  # A server killed a moment ago may still be exiting: give it 2 s.
  for ((i = 0; i < 20; i++)); do running "$dir" >/dev/null || break; sleep 0.1; done
  if pid=$(running "$dir"); then
    die "s3-server: already running in $dir (pid $pid); stop it first"
  fi
  rm -f "$dir/weed.pid" # a leftover of an unclean stop

  # Drawn once, then kept: a restart serves the same endpoint with the same keys.
  if [ ! -s "$dir/credentials" ]; then
    (umask 077
     printf 'S3_ACCESS_KEY=%s\nS3_SECRET_KEY=%s\n' \
       "$(openssl rand -hex 10 | tr a-f A-F)" "$(openssl rand -hex 20)" >"$dir/credentials.tmp")
    mv "$dir/credentials.tmp" "$dir/credentials"
  fi
  local S3_ACCESS_KEY S3_SECRET_KEY
  # shellcheck source=/dev/null  # written above
  source "$dir/credentials"
  local s3 s3g m mg v vg f fg p
  # The address, like the ports, is the first start's.
  [ -s "$dir/bind" ] || echo "${addr:-127.0.0.1}" >"$dir/bind"
  read -r addr <"$dir/bind"
  [ -s "$dir/ports" ] || free_ports "$addr" 8 >"$dir/ports"
  read -r s3 s3g m mg v vg f fg <"$dir/ports"
  [ -z "$port" ] || s3=$port
  # weed would notice a taken port only after its other parts started, and
  # take long to exit: ask first, giving a server killed a moment ago (kill
  # -9 returns before the kernel closes its sockets) 5 s to let go.
  for p in "$s3" "$s3g" "$m" "$mg" "$v" "$vg" "$f" "$fg"; do
    for ((i = 0; i < 50; i++)); do taken "$addr" "$p" || continue 2; sleep 0.1; done
    die "s3-server: port $p on $addr is taken (the ports of $dir are in $dir/ports)"
  done
  # One identity with every action; no anonymous one, so unsigned requests
  # and wrong keys are refused.
  (umask 077
   printf '{"identities": [{"name": "pfs", "credentials": [{"accessKey": "%s", "secretKey": "%s"}],
  "actions": ["Admin", "Read", "List", "Tagging", "Write"]}]}\n' "$S3_ACCESS_KEY" "$S3_SECRET_KEY" >"$dir/s3.json")

  local scheme=http curl_tls=() args
  # Everything on loopback. A single master (peers=none) resumes its raft
  # state as the leader at once; as one of a cluster it would wait 10-20 s
  # for an election after each restart. Telemetry off (no internet, and
  # none of its business). Volumes of 1 GiB, created as objects arrive: a
  # bucket is a collection that grows 7 of them at its first write, and
  # the default cap (free disk / 1 GiB) would stop new buckets after a few;
  # the volume server still turns read-only when the disk is nearly full.
  # No stop grace period: tests stop and start the server often. The
  # Iceberg and Lance catalogs are not needed.
  args=(-logtostderr server -dir="$dir/data" -ip="$addr" -ip.bind="$addr"
    -master.port="$m" -master.port.grpc="$mg" -master.peers=none -master.telemetry=false -master.volumeSizeLimitMB=1024
    -volume.port="$v" -volume.port.grpc="$vg" -volume.max=1000 -volume.preStopSeconds=0
    -filer -filer.port="$f" -filer.port.grpc="$fg"
    -s3 -s3.port="$s3" -s3.port.grpc="$s3g" -s3.port.iceberg=0 -s3.port.lance=0 -s3.config="$dir/s3.json")
  if [ "$tls" = 1 ]; then
    throwaway_tls "$dir" "packetfs throwaway S3 CA" "$addr"
    scheme=https curl_tls=(--cacert "$dir/tls/ca.crt")
    args+=(-s3.cert.file="$dir/tls/server.crt" -s3.key.file="$dir/tls/server.key")
  fi
  log "s3-server: starting SeaweedFS in $dir (S3 on $scheme://$addr:$s3, log $dir/weed.log)"
  # A session of its own: the server outlives this script and the shell
  # that ran it, until `stop`. Without the lock's fd, or `stop` would wait
  # for the server it stops. The filer's store and the master's state go
  # to -dir; the working directory is DIR so nothing lands elsewhere. A soft
  # memory limit for Go's collector: without one an idle server holds on to
  # the ~600 MiB that an 87 MiB upload and a few GETs grew it to; with it,
  # ~250 MiB.
  (cd "$dir" && export GOMEMLIMIT=${GOMEMLIMIT:-256MiB} && exec 8>&- && spawn_session "$dir/weed.pid" "$dir/weed.log" "$weed" "${args[@]}")

  # Ready when a signed ListBuckets answers 200 (the gateway is up, its
  # filer behind it) and the master lists the volume server: until then it
  # does not know where the chunks of the objects are, and a GET right
  # after a restart fails with 500.
  local endpoint=$scheme://$addr:$s3 code=000 topo
  for ((i = 0; i < 240; i++)); do
    running "$dir" >/dev/null || { tail -n 20 "$dir/weed.log" >&2; die "s3-server: weed exited during start (log $dir/weed.log)"; }
    code=$(curl -s -o /dev/null -w '%{http_code}' "${curl_tls[@]}" --aws-sigv4 aws:amz:us-east-1:s3 \
      --user "$S3_ACCESS_KEY:$S3_SECRET_KEY" "$endpoint/" || true)
    topo=$(curl -s "http://$addr:$m/dir/status" || true)
    [ "$code" = 200 ] && [[ $topo == *"\"Url\":\"$addr:$v\""* ]] && break
    sleep 0.25
  done
  ((i < 240)) || { tail -n 20 "$dir/weed.log" >&2; die "s3-server: S3 on $endpoint not ready in 60 s (last HTTP code $code, the master knows no volume server yet?)"; }
  local env="S3_ENDPOINT=$endpoint S3_ACCESS_KEY=$S3_ACCESS_KEY S3_SECRET_KEY=$S3_SECRET_KEY S3_REGION=us-east-1"
  [ "$tls" = 0 ] || env+=" S3_CA_FILE=$dir/tls/ca.crt"
  (umask 077; echo "$env" >"$dir/env")
  echo "$env"
}

# stop DIR: SIGTERM, and SIGKILL after 15 s if weed has not exited by then.
stop() {
  local dir=${1:?usage: $0 stop DIR} pid i p
  [ -d "$dir" ] || die "s3-server: no directory $dir"
  dir=$(cd "$dir" && pwd)
  exec 8>"$dir/.lock"
  flock 8
  if pid=$(running "$dir"); then
    kill -TERM "$pid" 2>/dev/null || true # it may just have exited
    for ((i = 0; i < 150; i++)); do running "$dir" >/dev/null || break; sleep 0.1; done
    if running "$dir" >/dev/null; then
      log "s3-server: weed (pid $pid) did not exit 15 s after SIGTERM; killing it"
      kill -KILL "$pid" 2>/dev/null || true
      while running "$dir" >/dev/null; do sleep 0.1; done
    fi
  fi
  rm -f "$dir/weed.pid"
  # weed's unix sockets are /tmp/seaweedfs-*-PORT.sock, and a killed weed
  # leaves them there; one whose port nothing listens on is stale.
  local ports=()
  [ ! -s "$dir/ports" ] || read -ra ports <"$dir/ports"
  for p in "${ports[@]}"; do
    taken "$p" || rm -f /tmp/seaweedfs-*-"$p".sock
  done
}

case ${1:-} in
  bin) weed_bin ;;
  start) shift; start "$@" ;;
  stop) stop "${2:-}" ;;
  *) die "usage: $0 bin | start DIR [--port P] [--tls] | stop DIR" ;;
esac
