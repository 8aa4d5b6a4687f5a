#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Time for real files to reach N nodes through a BitTorrent swarm (aria2c,
# opentracker), what clusters use to spread a big file to many nodes, on
# fanout.sh's kind of nodes, so its rows stand beside PacketFS's pipelined
# chain (docs/design/fanout.md). Not a test.
#
# Node i: a network namespace pfsswm$i, veth swm$i (MTU 1500) to a bridge
# in pfsswm-sw (10.124.0.0/24, apart from fanout.sh's so both can run one
# after the other), its files on a tmpfs mounted huge=within_size. The
# tracker listens on the bridge itself: no node's uplink carries it. Node 0
# seeds the source's files (copied in before the clock, as the origin of
# fanout.sh's alternatives holds a loaded blob); nodes 1..N-1 start at once.
#
# "seconds": from the first data byte the seeder sent (its uplink's counter,
# polled) to the last leecher's download-complete event (stamped by aria2's
# --on-bt-download-complete hook): the window fanout.sh times for its
# alternatives. "Complete" is the swarm's own verification: every piece
# matched its SHA-1 in the torrent, as a PacketFS relay verifies each chunk
# as it lands. After the clock every node's files are compared with the
# source and a difference stops the script. aria2 spends ~1.8 s between its
# start and the first data byte whatever its options: it opens peer
# connections on its event loop's 1 s tick, and an outgoing connection's
# handshake (MSE, always tried first) waits for the next tick. That start-up
# is reported apart: seconds_from_start from the earliest leecher's
# --on-download-start event, seconds_from_launch from starting the leechers.
# CPU: user+sys of each leecher's whole life over the GiB it received, the
# mean over leechers (a leecher also uploads to the others, as a relay
# forwards); the seeder's CPU seconds and the bytes its uplink sent too.
#
# The swarm gets its best chance here:
#   - leechers keep seeding until every node is done (--seed-ratio=0.0, then
#     stopped), as a cluster's nodes do: with --seed-time=0 a node done early
#     would stop serving the rest.
#   - peers meet at once: a fresh tracker every round has the seeder before
#     any leecher starts; each leecher announces on start and connects to the
#     ones before it; PEX on; DHT and local discovery off (one tracker).
#   - no limits: --bt-max-peers=0, no rate caps (aria2's default),
#     --file-allocation=none (tmpfs), --bt-seed-unverified on the seeder.
#   - 4 MiB pieces (mktorrent -l 22; PIECE=<log2>), PacketFS's chunk, so both
#     verify at one grain: 256 KiB (mktorrent's default) and 1 MiB measured
#     the same within the noise (202 MB at 2gbit, N=2 and 4, 4 rounds each),
#     as did --disk-cache=0 or 64M and --enable-mmap (ARIA2_OPTS adds options).
#
#   NODES="2 3 4" ROUNDS=3 SOURCES="minilm sudachi" LINKS="none 2gbit" \
#   SLOW="1:500mbit" bench/swarm.sh
# LINKS: node uplink rates as fanout.sh's shape(), netns_shape on every node's
# egress ("none": unshaped); SLOW=<node>:<rate>: that node's uplink slower.
# BENCH_QUICK=1: NODES=3 ROUNDS=1 SOURCES=minilm LINKS=none. A JSON line per
# round to stdout (or appended to OUT_ROWS), a line for people to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source-path=SCRIPTDIR source=netns.sh
. bench/netns.sh

# The tools, from Debian, installed when missing and we are root with apt.
declare -A PKG=([opentracker]=opentracker [aria2c]=aria2 [mktorrent]=mktorrent [curl]=curl
	[jq]=jq [nsenter]=util-linux [/usr/bin/time]=time [python3]=python3)
missing=()
for t in "${!PKG[@]}"; do command -v "$t" >/dev/null || missing+=("${PKG[$t]}"); done
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
		echo "swarm.sh needs: apt-get install ${missing[*]}" >&2
		exit 1
	fi
	echo "swarm.sh: installing ${missing[*]}" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
	# Debian's package starts a tracker service on :6969; we run our own.
	if [[ " ${missing[*]} " == *" opentracker "* ]] && command -v systemctl >/dev/null; then
		systemctl disable --now opentracker >/dev/null 2>&1 || true
	fi
fi

if [ "${BENCH_QUICK:-0}" = 1 ]; then
	NODES=${NODES:-3} ROUNDS=${ROUNDS:-1} SOURCES=${SOURCES:-minilm} LINKS=${LINKS:-none}
fi
NODES=${NODES:-2 3 4} ROUNDS=${ROUNDS:-3} SOURCES=${SOURCES:-minilm sudachi}
LINKS=${LINKS:-none 2gbit} SLOW=${SLOW:-} PIECE=${PIECE:-22}
TIMEOUT=${TIMEOUT:-300} # seconds until a round counts as stuck
read -ra EXTRA <<<"${ARIA2_OPTS:-}"
TRACKER=10.124.0.254:6969
W=$(mktemp -d /tmp/pfs-swarm.XXXXXX)
maxn=$(tr ' ' '\n' <<<"$NODES" | sort -n | tail -1)
slow_node=${SLOW%%:*} slow_rate=${SLOW#*:}

cleanup() {
	local p i
	for p in "$W"/*.pid; do [ ! -e "$p" ] || kill "$(cat "$p")" 2>/dev/null || true; done
	wait 2>/dev/null || true
	for i in $(seq 0 $((maxn - 1))); do
		umount "$W/n$i" 2>/dev/null || true
		ip netns del "pfsswm$i" 2>/dev/null || true
	done
	ip netns del pfsswm-sw 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT

in_ns() { local i=$1; shift; nsenter --net="/run/netns/pfsswm$i" "$@"; }

# The switch (with the tracker's address) and the nodes.
ip netns add pfsswm-sw
ip -n pfsswm-sw link add br0 type bridge
ip -n pfsswm-sw addr add "${TRACKER%:*}/24" dev br0
ip -n pfsswm-sw link set br0 up
for i in $(seq 0 $((maxn - 1))); do
	ip netns add "pfsswm$i"
	ip link add "swm$i" netns "pfsswm$i" type veth peer name "port$i" netns pfsswm-sw
	ip -n pfsswm-sw link set "port$i" mtu 1500 master br0 up
	ip -n "pfsswm$i" addr add "10.124.0.$((i + 1))/24" dev "swm$i"
	ip -n "pfsswm$i" link set "swm$i" mtu 1500 up
	ip -n "pfsswm$i" link set lo up
	mkdir -p "$W/n$i"
	mount -t tmpfs -o huge=within_size,mode=0700 none "$W/n$i"
	# aria2's hooks: the time its download started (t0) and completed (t1),
	# written whole and then renamed, so a file seen is a time complete.
	for t in t0 t1; do
		printf '#!/bin/sh\ndate +%%s.%%N >%s.tmp && mv %s.tmp %s\n' "$W/$t.$i" "$W/$t.$i" "$W/$t.$i" >"$W/hook.$t.$i"
		chmod +x "$W/hook.$t.$i"
	done
done
mkdir -m 0755 "$W/tracker"

# shape <rate|none>: every node's uplink, as fanout.sh; SLOW's node slower.
shape() {
	local i r
	for i in $(seq 0 $((maxn - 1))); do
		r=$1
		[ "$i" != "$slow_node" ] || r=$slow_rate
		netns_shape "pfsswm$i" "swm$i" "$r"
	done
}

# aria2 <node> <name> <options...>: aria2c on the node under /usr/bin/time
# (user+sys to $W/<name>.cpu), its pid in $W/<name>.pid (for SIGTERM).
aria2() {
	local i=$1 what=$2
	shift 2
	# shellcheck disable=SC2016 # $$ and $@ are the inner shell's
	in_ns "$i" /usr/bin/time -f "%U %S" -o "$W/$what.cpu" sh -c 'echo $$ >"$0"; exec "$@"' "$W/$what.pid" \
		aria2c --dir="$W/n$i" --listen-port=6881 --enable-dht=false --enable-dht6=false \
		--bt-enable-lpd=false --enable-peer-exchange=true --bt-max-peers=0 --seed-ratio=0.0 \
		--file-allocation=none --disable-ipv6=true --summary-interval=0 --show-console-readout=false \
		--console-log-level=warn --log="$W/$what.log" --log-level=warn "${EXTRA[@]}" "$@" >"$W/$what.out" 2>&1
}
stop() { # stop <name>...: SIGTERM, then wait (its /usr/bin/time writes the rusage)
	local w
	for w; do kill "$(cat "$W/$w.pid")" 2>/dev/null || true; done
	for w; do wait "$(cat "$W/$w.bg")" || true; rm -f "$W/$w.pid" "$W/$w.bg"; done
}
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", a - b }'; }
cpu() { tail -1 "$W/$1.cpu" | awk '{print $1 + $2}'; } # after "Command exited with ..."
tx_bytes() { ip -n pfsswm0 -s -j link show swm0 | jq '.[0].stats64.tx.bytes'; }
scrape() { in_ns 0 curl -sf "http://$TRACKER/scrape?info_hash=$(sed 's/../%&/g' "$W/hash")"; }
seeded() { scrape | grep -aq completei1e; } # the tracker has the seeder
until_ok() { # until_ok <seconds> <what> <command...>
	local end=$(($(date +%s) + $1)) what=$2
	shift 2
	until "$@"; do
		[ "$(date +%s)" -lt "$end" ] || { echo "swarm.sh: timed out waiting for $what" >&2; exit 1; }
		sleep 0.02
	done
}
# The first data byte: the seeder's uplink has sent one 16 KiB block more
# than before the leechers started (handshakes, bitfields and PEX are a few
# hundred bytes). Read from /proc/net/dev in node 0's namespace every
# millisecond until then only, so it takes no CPU from the transfer.
FIRST_BYTE='
import os, sys, time
dev, base, out = sys.argv[1] + ":", int(sys.argv[2]), sys.argv[3]
tx = lambda: next(int(l.split()[9]) for l in open("/proc/net/dev") if l.split()[0] == dev)
open(out + ".ready", "w").close()
while tx() < base + 16384:
    time.sleep(0.001)
open(out + ".tmp", "w").write("%.6f\n" % time.time())
os.rename(out + ".tmp", out)
'

# round <src> <torrent> <n>: one swarm; sets R_S (seconds), R_START, R_L
# (from start, from launch), R_CPU (a leecher's CPU-s, mean), R_SEED, R_TX.
round() {
	local src=$1 tor=$2 n=$3 i name end tl tx0 tf t0 t1 leechers=()
	name=$(basename "$src")
	for i in $(seq 0 $((n - 1))); do find "$W/n$i" -mindepth 1 -delete; done
	rm -f "$W"/t[01].* "$W"/tf* "$W"/*.log "$W"/*.out "$W"/*.cpu
	cp -r "$src" "$W/n0/$name"
	# Debian builds opentracker with a whitelist: the torrent's info hash.
	aria2c -S "$tor" | sed -n 's/^Info Hash: //p' | tee "$W/hash" >"$W/tracker/whitelist"
	# nsenter, not in_ns: $! is then opentracker itself (nsenter execs it).
	nsenter --net=/run/netns/pfsswm-sw opentracker -i "${TRACKER%:*}" -p "${TRACKER#*:}" \
		-P "${TRACKER#*:}" -d "$W/tracker" -w whitelist >"$W/tracker.out" 2>&1 &
	echo $! | tee "$W/tracker.pid" >"$W/tracker.bg"
	until_ok 10 "the tracker" scrape >/dev/null
	aria2 0 seeder -T "$tor" --bt-seed-unverified=true &
	echo $! >"$W/seeder.bg"
	until_ok 30 "the seeder's announce" seeded
	tx0=$(tx_bytes)
	nsenter --net=/run/netns/pfsswm0 python3 -c "$FIRST_BYTE" swm0 "$tx0" "$W/tf" &
	echo $! | tee "$W/poll.pid" >"$W/poll.bg"
	until_ok 10 "the poller" test -e "$W/tf.ready"
	tl=$(date +%s.%N)
	for i in $(seq 1 $((n - 1))); do
		aria2 "$i" "l$i" -T "$tor" --on-download-start="$W/hook.t0.$i" --on-bt-download-complete="$W/hook.t1.$i" &
		echo $! >"$W/l$i.bg"
		leechers+=("l$i")
	done
	end=$(($(date +%s) + TIMEOUT))
	for i in $(seq 1 $((n - 1))); do
		until [ -e "$W/t1.$i" ]; do
			if [ "$(date +%s)" -ge "$end" ] || { [ -e "$W/l$i.pid" ] && ! kill -0 "$(cat "$W/l$i.pid")" 2>/dev/null; }; then
				echo "swarm.sh: node $i did not complete:" >&2
				tail -n 5 "$W/l$i.log" "$W/l$i.out" >&2 || true
				exit 1
			fi
			sleep 0.02
		done
	done
	R_TX=$(($(tx_bytes) - tx0))
	stop "${leechers[@]}" seeder
	stop tracker poll
	tf=$(cat "$W/tf") || { echo "swarm.sh: no first data byte seen" >&2; exit 1; }
	t0=$(cat "$W"/t0.* | sort -g | head -1)
	t1=$(cat "$W"/t1.* | sort -g | tail -1)
	for i in $(seq 1 $((n - 1))); do
		diff -rq "$src" "$W/n$i/$name" >&2 || { echo "swarm.sh: node $i's files differ from the source" >&2; exit 1; }
	done
	R_S=$(sub "$t1" "$tf") R_START=$(sub "$t1" "$t0") R_L=$(sub "$t1" "$tl")
	R_CPU=$(for i in "${leechers[@]}"; do cpu "$i"; done | awk '{ c += $1 } END { printf "%.6f", c / NR }')
	R_SEED=$(cpu seeder)
}

data_path() { case $1 in minilm | sudachi) ../hack/testdata.sh path "$1" ;; *) echo "$1" ;; esac; }
row() { if [ -n "${OUT_ROWS:-}" ]; then cat >>"$OUT_ROWS"; else cat; fi; }

for link in $LINKS; do
	shape "$link"
	for s in $SOURCES; do
		src=$(data_path "$s")
		bytes=$(find "$src" -type f -printf '%s\n' | awk '{b += $1} END {print b}')
		rm -f "$W/$s.torrent"
		mktorrent -d -l "$PIECE" -a "http://$TRACKER/announce" -o "$W/$s.torrent" "$src" >/dev/null
		for n in $NODES; do
			slow=null
			[ -z "$SLOW" ] || [ "$slow_node" -ge "$n" ] || slow="\"$SLOW\""
			for r in $(seq "$ROUNDS"); do
				round "$src" "$W/$s.torrent" "$n"
				per=$(awk -v c="$R_CPU" -v b="$bytes" 'BEGIN { printf "%.6f", c * 1073741824 / b }')
				jq -nc --arg source "$s" --arg link "$link" --argjson slow "$slow" \
					--argjson v "[$bytes, $n, $r, $((1 << PIECE)), $R_S, $R_START, $R_L, $per, $R_SEED, $R_TX]" \
					'def ms: . * 1000 | round / 1000;
					{method: "bittorrent-aria2", source: $source, bytes: $v[0], n: $v[1], link: $link,
					 slow: $slow, round: $v[2], piece_bytes: $v[3], verified: "sha1-pieces",
					 seconds: ($v[4] | ms), seconds_from_start: ($v[5] | ms), seconds_from_launch: ($v[6] | ms),
					 cpu_s_per_gib_node: ($v[7] | ms), seeder_cpu_s: $v[8], seeder_sent_bytes: $v[9]}' | row
				printf 'swarm: %s, link %s%s, N=%s, round %s: %.3f s (%.3f s from start, %.3f s from launch), %.2f CPU-s/GiB per leecher, seeder %.2f CPU-s and %s bytes sent\n' \
					"$s" "$link" "${SLOW:+, slow $SLOW}" "$n" "$r" "$R_S" "$R_START" "$R_L" "$per" "$R_SEED" "$R_TX" >&2
			done
		done
	done
done
