#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Reserve 2 MiB hugepages on the host for the cluster (the kubelets read the
# pool when they start and advertise hugepages-2Mi), and give back exactly
# what was added. The pool is host-wide and shared by both nodes: each node
# advertises all of it. The pages are added on top of whatever the pool
# holds, since other users of this host may give theirs back at any time.
# Usage: hugepages.sh reserve <pages> <state-file> | release <state-file>
set -euo pipefail
source "$(dirname "$0")/lib.sh"

pool=/proc/sys/vm/nr_hugepages
free=/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages

case ${1:-} in
  reserve)
    want=$2 state=$3
    [ -f "$free" ] || die "no 2 MiB hugepage support in this kernel"
    if [ -f "$state" ]; then log "hugepages: already reserved ($(cat "$state") added)"; exit 0; fi
    total=$(cat "$pool")
    echo $((total + want)) > "$pool"
    add=$(( $(cat "$pool") - total ))
    [ "$add" -eq "$want" ] || log "hugepages: WARNING asked for $want more pages, the kernel gave $add"
    echo "$add" > "$state"
    log "hugepages: $(cat "$free") free 2 MiB pages ($add added)"
    ;;
  release)
    state=$2
    [ -f "$state" ] || exit 0
    add=$(cat "$state") total=$(cat "$pool")
    # Subtract only what we added: someone else may have changed the pool.
    new=$(( total > add ? total - add : 0 ))
    echo "$new" > "$pool"
    rm -f "$state"
    log "hugepages: pool back to $(cat "$pool") pages"
    ;;
  *) die "usage: hugepages.sh reserve <pages> <state-file> | release <state-file>" ;;
esac
