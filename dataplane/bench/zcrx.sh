#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# TCP_ZEROCOPY_RECEIVE on this host's same-host paths (issue 19's candidate
# for the payload receiver): how much of the stream the kernel maps, and the
# receiver's CPU, against plain recv(). Paths: loopback inside a fresh
# namespace, and a fresh veth pair at MTU 1500 and at 4148 (an MSS of exactly
# 4096 with timestamps, the size zero-copy receive is built for). Senders: 256
# KiB write()s from a 1 GiB buffer of 2 MiB pages (as pfs send), and
# sendfile() of a 1 GiB tmpfs file (whole page-cache pages). REPS runs of
# each; every run is printed. Not part of `make bench`: it measures a
# candidate, not PFS. Everything created is removed on exit.
#
# Environment: BYTES (per run, default 4000000000), REPS (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source-path=SCRIPTDIR source=netns.sh
. bench/netns.sh
BYTES=${BYTES:-4000000000}
REPS=${REPS:-2}
bin=build/bench/zcrx
[ "$(id -u)" = 0 ] || { echo "zcrx: needs root (namespaces, hugepages)" >&2; exit 1; }
[ -x "$bin" ] || { echo "zcrx: build it first: make -C dataplane bench-zcrx" >&2; exit 1; }
nsa=zcrx-a.$$ nsb=zcrx-b.$$ va=zcrx-a$$ vb=zcrx-b$$ file=$(mktemp /dev/shm/zcrx.XXXXXX) hp_added=0
cleanup() {
	netns_remove "$nsa" "$nsb"
	rm -f "$file" "$file.out"
	[ "$hp_added" -eq 0 ] || echo $(( $(cat /proc/sys/vm/nr_hugepages) - hp_added )) > /proc/sys/vm/nr_hugepages
}
trap cleanup EXIT INT TERM

free=$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages)
if [ "$free" -lt 512 ]; then
	cur=$(cat /proc/sys/vm/nr_hugepages)
	echo $((cur + 512 - free)) > /proc/sys/vm/nr_hugepages
	hp_added=$(( $(cat /proc/sys/vm/nr_hugepages) - cur ))
fi
head -c 1G /dev/urandom > "$file"
netns_veth_pair "$nsa" "$nsb" "$va" "$vb" 10.79.0.1 10.79.0.2

printf 'path\tsender\treceiver\tbytes\tMB/s\tmapped %%\tCPU-s\tMB/CPU-s\n'
run() {	# path recv_ns addr sender(write|sendfile) receiver(copy|zc)
	local path=$1 rns=$2 addr=$3 snd=$4 rcv=$5 src=()
	[ "$snd" = sendfile ] && src=("$file")
	nsenter --net=/run/netns/"$rns" "$bin" recv 7700 "$rcv" "$BYTES" > "$file.out" &
	local rp=$!
	sleep 0.3
	nsenter --net=/run/netns/"$nsa" "$bin" send "$addr" 7700 "$BYTES" "${src[@]}"
	wait "$rp"
	printf '%s\t%s\t%s\n' "$path" "$snd" "$(cat "$file.out")"
}
for path in loopback veth-1500 veth-4148; do
	case $path in
	loopback) rns=$nsa addr=127.0.0.1 ;;
	*) rns=$nsb addr=10.79.0.2
	   ip -n "$nsa" link set "$va" mtu "${path#veth-}"; ip -n "$nsb" link set "$vb" mtu "${path#veth-}" ;;
	esac
	for _ in $(seq "$REPS"); do
		for snd in write sendfile; do
			for rcv in copy zc; do run "$path" "$rns" "$addr" $snd $rcv; done
		done
	done
done
