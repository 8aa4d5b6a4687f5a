#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Reserve 2 MiB hugepages on the host for the cluster (the kubelets read the
# pool when they start and advertise hugepages-2Mi), and give back exactly
# what was added. The pool is host-wide and shared by both nodes: each node
# advertises all of it. The pages are added on top of whatever the pool
# holds, since other users of this host may give theirs back at any time.
# Usage: hugepages.sh settle | reserve <pages> <state-file> | release <state-file>
#
# settle: on a kernel booted with deferred_init=lazy (this VM's), struct
# pages are initialised only when an allocation first needs them, so each
# NUMA node's MemTotal grows as memory is first used: by 1.4 GiB during one
# cluster bring-up here. The kubelet's Static memory manager records MemTotal
# in its checkpoint at its first start, and on any later start refuses to
# run ("the expected machine state is different from the real one") when it
# changed: kubeadm restarts the kubelet, so the node stayed NotReady for good.
# Asking for as many pages as memory holds, then giving them back, makes the
# kernel initialise all of it first. It may evict page cache. Elsewhere it
# does nothing.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

pool=/proc/sys/vm/nr_hugepages
free=/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages

node_memtotal() { awk '/MemTotal/ { s += $4 } END { print s }' /sys/devices/system/node/node*/meminfo; }

case ${1:-} in
  settle)
    grep -qw 'deferred_init=lazy' /proc/cmdline || exit 0
    before=$(node_memtotal) total=$(cat "$pool")
    awk '/MemTotal/ { print int($2 / 2048) }' /proc/meminfo > "$pool" || true
    echo "$total" > "$pool"
    [ "$(cat "$pool")" -eq "$total" ] || die "hugepages: could not give the pool back to $total pages"
    log "hugepages: memory settled (deferred_init=lazy): node MemTotal $before -> $(node_memtotal) kB"
    ;;
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
  *) die "usage: hugepages.sh settle | reserve <pages> <state-file> | release <state-file>" ;;
esac
