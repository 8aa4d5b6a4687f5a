#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Build the e2e cluster's parts in the background while `make test` runs
# the lint, unit, envtest and data-plane tests, so the cold cluster-up of
# test-e2e only starts containers. Every part is the one cluster-up builds,
# by the same script and into the same cache ($PFS_CACHE, keyed by
# version), under the same locks: a foreground build that reaches a part
# the background is making waits for it instead of making it twice.
#
# Order: first the Debian packages; then, side by side, what waits on the
# network (the two debootstraps, the PyPI test data, the tests' Python
# venvs) and the Go builds
# (module downloads, then compiling) one at a time at nice 19, so they take
# only the CPU the tests leave idle. kube-apiserver and kubectl come first: envtest
# needs them soonest, and each k8s binary is built by its own call, so a
# foreground build waits at most for the one in progress. The e2e's test
# servers (S3, OCI registry) come last and are not waited for.
#
# Usage:
#   hack/kind/prebuild.sh start   start it in the background (root only; a
#                                 no-op for others or when one runs); returns at once
#   hack/kind/prebuild.sh wait    wait for a background run, print its log's
#                                 timed lines; its failures are not fatal here
#                                 (cluster-up rebuilds what is missing, in the open)
#   hack/kind/prebuild.sh run     the work itself, in the foreground
set -euo pipefail
source "$(dirname "$0")/lib.sh"

DIR="$PFS_CACHE/prebuild"
PIDFILE="$DIR/pid"
LOG="$DIR/log"

# step NAME CMD...: run one part, logging its start, end and seconds.
step() {
  local name=$1 t0=$SECONDS rc=0; shift
  log "prebuild: $name: start"
  "$@" >/dev/null 2>>"$LOG.$name" || rc=$?
  log "prebuild: $name: done in $((SECONDS - t0))s (rc $rc$([ $rc -eq 0 ] || echo ", see $LOG.$name"))"
}

run() {
  cd "$REPO_ROOT"
  mkdir -p "$DIR"
  echo $$ > "$PIDFILE"
  rm -f "$LOG".*
  local t0=$SECONDS
  # apt first and alone: two apt-get runs at once fail on dpkg's lock.
  step packages ensure_pkgs "${HOST_PKGS[@]}" gcc libc6-dev
  step node-rootfs "$HACK_KIND/node-rootfs.sh" &
  step consumer-rootfs "$REPO_ROOT/hack/images/python-consumer.sh" --base &
  step venvs bash -c 'for r in dataplane/python/requirements-test.txt hack/bench/requirements-test.txt hack/s3/requirements.txt; do
    hack/python-venv.sh "$r"; done' &
  step testdata bash -c 'for n in minilm sudachi silero5 silero6 mpnet; do "$0" path "$n"; done' "$REPO_ROOT/hack/testdata.sh" &
  local c
  for c in kube-apiserver kubectl kubeadm kubelet kube-controller-manager kube-scheduler kube-proxy; do
    step "$c" nice -n 19 "$REPO_ROOT/hack/k8s-binaries.sh" "$c"
  done
  step go-tools nice -n 19 "$HACK_KIND/go-tools.sh"
  wait
  step control-plane-images nice -n 19 "$REPO_ROOT/hack/images/build.sh" "$PFS_CACHE/k8s/$K8S_VERSION/bin"
  step node-image nice -n 19 "$HACK_KIND/node-image.sh"
  log "prebuild: all parts in $((SECONDS - t0))s"
  # The e2e's test servers, once the cluster's parts are done, and not
  # waited for by `wait`: the S3 server (SeaweedFS, minutes cold), the OCI
  # registry and oras. The e2e reaches them after its first steps, and a
  # build still running then is waited for under its own lock.
  (step seaweedfs nice -n 19 "$REPO_ROOT/hack/s3-server.sh" bin
   step oci-registry nice -n 19 "$REPO_ROOT/hack/oci-registry.sh" bin) &
  rm -f "$PIDFILE"
}

case ${1:-} in
  start)
    [ "$(id -u)" -eq 0 ] || { log "prebuild: not root: the cluster's parts are built by test-e2e"; exit 0; }
    mkdir -p "$DIR"
    if [ -s "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
      log "prebuild: already running (pid $(cat "$PIDFILE"))"; exit 0
    fi
    # Its own session, its output in the log only: make does not wait for it.
    rm -f "$PIDFILE"
    setsid "$0" run > "$LOG" 2>&1 < /dev/null &
    log "prebuild: building the cluster's parts in the background (log $LOG)"
    ;;
  wait)
    if [ -s "$PIDFILE" ] && pid=$(cat "$PIDFILE") && kill -0 "$pid" 2>/dev/null; then
      log "prebuild: waiting for the background build (pid $pid)"
      while kill -0 "$pid" 2>/dev/null; do sleep 2; done
    fi
    # Its timed lines once, then the log is kept as last.log.
    if [ -f "$LOG" ]; then grep 'prebuild:' "$LOG" >&2 || true; mv "$LOG" "$DIR/last.log"; fi
    ;;
  run) run ;;
  *) die "usage: $0 start | wait | run" ;;
esac
