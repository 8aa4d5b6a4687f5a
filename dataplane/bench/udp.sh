#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# UDP benchmark, one run, side by side over a veth pair between two fresh
# network namespaces:
#   iperf3 UDP (-u -b 0 -l <same datagram size as pfs>), goodput counted at
#   the iperf3 receiver; iperf3 TCP (one stream); PFS-With-Payload-UDP;
#   Native PFS Offset-only Mode - UDP; Native PFS Arithmetic Mode - UDP;
#   PFS-With-Payload-UDP without GSO/GRO
#   (for reference); then PFS-With-Payload-UDP with 1% loss
#   on the veth (tc netem on the sender's side when the kernel has it, else
#   an iptables `statistic` DROP rule on the receiver's side; either drops a
#   GSO burst as a unit).
# Prints a table (effective MB/s, MB per receiver CPU-second) and the two
# targets computed from this same run, and writes them to
# docs/bench/bench-udp.md (the whole page). Everything it creates (namespaces,
# veth, rules, hugepages it reserved) is removed on exit.
#
# Environment: PFS (binary), SIZE (blob, default 1G), BYTES (effective bytes
# per PFS run, default 4G), IPERF_SECS (default 5), REPS (runs per row, the
# median by effective MB/s is reported with the range; default 3), MTU
# (default 1500: 1472-byte UDP payload), OUT_MD (default ../docs/bench/bench-udp.md;
# empty to skip), LOOPBACK (1: also iperf3 UDP and the three lossless PFS
# rows on 127.0.0.1 inside the sender's fresh namespace, after the veth rows;
# default 1 when BENCH_ROWS is set, else 0, so the page keeps its veth-only
# table), BENCH_ROWS (a file: every repetition of every row is appended to it
# as one JSON line, docs/design/bench-rows.md), BENCH_QUICK (1: a check that the
# script works, not a measurement: SIZE=256M BYTES=512M IPERF_SECS=2 REPS=3
# and OUT_MD empty unless given; under a minute here).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source-path=SCRIPTDIR source=rows.sh
. bench/rows.sh
# shellcheck source-path=SCRIPTDIR source=netns.sh
. bench/netns.sh
if [ "${BENCH_QUICK:-}" = 1 ]; then
	: "${SIZE:=256M}" "${BYTES:=512M}" "${IPERF_SECS:=2}" "${REPS:=3}" "${OUT_MD=}"
fi
PFS=${PFS:-$PWD/build/pfs}
SIZE=${SIZE:-1G}
BYTES=${BYTES:-4G}
IPERF_SECS=${IPERF_SECS:-5}
REPS=${REPS:-3}
MTU=${MTU:-1500}
OUT_MD=${OUT_MD-$PWD/../docs/bench/bench-udp.md}
LOOPBACK=${LOOPBACK:-$([ -n "${BENCH_ROWS:-}" ] && echo 1 || echo 0)}
DGRAM=$((MTU - 28))

die() { echo "bench-udp: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces, veth, tc/iptables, hugepages)"
for t in ip iperf3 jq nsenter; do
	command -v "$t" >/dev/null || die "missing $t (run hack/install-deps.sh)"
done
[ -x "$PFS" ] || die "build pfs first: make -C dataplane"

id=$$
nsa=pfsbu-a-$id nsb=pfsbu-b-$id va=pua$((id % 100000)) vb=pub$((id % 100000))
ipa=10.216.$((id % 250)).1 ipb=10.216.$((id % 250)).2
work=$(mktemp -d /dev/shm/pfs-bench-udp.XXXXXX)
pids=() hp_added=0

cleanup() {
	set +e
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	netns_remove "$nsa" "$nsb"
	rm -rf "$work"
	if [ "$hp_added" -gt 0 ]; then
		cur=$(cat /proc/sys/vm/nr_hugepages)
		echo $((cur - hp_added)) > /proc/sys/vm/nr_hugepages
	fi
}
trap cleanup EXIT INT TERM

inns() { local ns=$1; shift; nsenter --net=/run/netns/"$ns" "$@"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

# Hugepages for two blobs (sender, receiver in offset mode).
size_bytes=$(numfmt --from=iec "$SIZE")
need=$(( (size_bytes + 2097151) / 2097152 * 2 ))
free=$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages)
if [ "$free" -lt "$need" ]; then
	cur=$(cat /proc/sys/vm/nr_hugepages)
	echo $((cur + need - free)) > /proc/sys/vm/nr_hugepages
	hp_added=$(( $(cat /proc/sys/vm/nr_hugepages) - cur ))
fi

netns_veth_pair "$nsa" "$nsb" "$va" "$vb" "$ipa" "$ipb"

# 1% loss: netem if this kernel has sch_netem, else netfilter.
if tc -n "$nsa" qdisc add dev "$va" root netem delay 0ms 2>/dev/null; then
	tc -n "$nsa" qdisc del dev "$va" root
	loss_how="tc netem loss 1% on $va"
	loss_on() { tc -n "$nsa" qdisc add dev "$va" root netem loss 1%; }
	loss_off() { tc -n "$nsa" qdisc del dev "$va" root; }
elif command -v iptables >/dev/null; then
	# On the receiving end of the veth: a drop in the sender's own OUTPUT chain
	# fails its send with EPERM, which real path loss never does.
	loss_how="iptables statistic DROP p=0.01 on $vb input (this kernel has no sch_netem)"
	loss_on() { ip netns exec "$nsb" iptables -A INPUT -i "$vb" -m statistic --mode random --probability 0.01 -j DROP; }
	loss_off() { ip netns exec "$nsb" iptables -F INPUT; }
else
	die "neither sch_netem nor iptables: cannot impose 1% loss"
fi

load_start=$(load)
rows=()

median_row() {
	sort -t$'\t' -k6,6g | awk -F'\t' -v OFS='\t' '{ r[NR] = $0; e[NR] = $6 }
		END { m = int((NR + 1) / 2); $0 = r[m]
		      $11 = $11 "; median of " NR " runs, " e[1] ".." e[NR] " MB/s"; print }'
}

# Where the rows run, set before each group: path (the table's word), the
# receiver's and the sender's namespaces, the receiver's address, and the loss
# injected on the link in % (the rows' path word and loss_pct in BENCH_ROWS).
path=veth rns=$nsb sns=$nsa addr=$ipb loss=0
rowpath() { if [ "$loss" = 0 ]; then echo "$path"; else echo "$path $loss% loss"; fi; }

run_iperf() {	# udp|tcp
	local kind=$1 port=5201 args=() label key lossp=null
	if [ "$kind" = udp ]; then
		args=(-u -b 0 -l "$DGRAM"); label="iperf3 UDP (-b 0 -l $DGRAM)"
		key=iperf3-udp-$path lossp=$loss
	else
		label="iperf3 TCP (1 stream)" key=iperf3-tcp-$path
	fi
	nsenter --net=/run/netns/"$rns" iperf3 -s -1 -B "$addr" -p $port >/dev/null 2>&1 & pids+=($!)
	sleep 0.5
	inns "$sns" iperf3 -c "$addr" -p $port -t "$IPERF_SECS" "${args[@]}" -J > "$work/iperf.json" 2>/dev/null || true
	wait "${pids[-1]}" 2>/dev/null || true
	# The report's limits for this path (docs/design/bench-rows.md); the offered
	# rate beside the goodput, as -b 0 offers more than the receiver takes.
	local mb secs u y notes
	if IFS=$'\t' read -r mb secs u y notes < <(jq -r '.end as $e | ($e.sum_received.seconds) as $s |
		def ms: . * 1000 | round / 1000;
		[$e.sum_received.bytes / 1e6, $s, ($e.cpu_utilization_percent.remote_user / 100 * $s | ms),
		 ($e.cpu_utilization_percent.remote_system / 100 * $s | ms),
		 "goodput at the iperf3 receiver; receiver CPU from iperf3 -J" +
		 (if $e.sum.lost_percent then "; offered \($e.sum_sent.bytes / 1e6 / $e.sum_sent.seconds | round) MB/s by the sender, \($e.sum.lost_percent | . * 10 | round / 10)% datagrams lost" else "" end)] | @tsv' \
		"$work/iperf.json"); then
		bench_row suite=udp path="$(rowpath)" label="$label" purpose=Limit size_mb="$mb" \
			elapsed_s="$secs" user_s="$u" sys_s="$y" integrity=NA pthreads=1 notes="$notes" \
			key="$key" loss_pct="$lossp"
	fi
	jq -r --arg l "$label" --arg p "$path" '.end as $e |
		($e.sum_received.bytes) as $b | ($e.sum_received.seconds) as $s |
		($e.cpu_utilization_percent.remote_user / 100 * $s) as $u |
		($e.cpu_utilization_percent.remote_system / 100 * $s) as $y |
		[$p, $l, "Peer", ($b / 1e6 * 100 | round / 100), ($s * 1000 | round / 1000),
		 ($b / 1e6 / $s * 10 | round / 10), ($u * 1000 | round / 1000), ($y * 1000 | round / 1000),
		 (if ($u + $y) > 0 then ($b / 1e6 / ($u + $y) * 10 | round / 10) else 0 end), "NA",
		 "goodput at the iperf3 receiver; receiver CPU from iperf3 -J" +
		 (if $e.sum.lost_percent then "; \($e.sum.lost_percent | . * 10 | round / 10)% datagrams lost" else "" end)] | @tsv' \
		"$work/iperf.json"
}

run_pfs() {	# mode tag
	local mode=$1 tag=$2 port=7800
	nsenter --net=/run/netns/"$rns" "$PFS" -q recv --transport udp --listen "$addr:$port" \
		--mode "$mode" --size "$SIZE" --page 2m --mtu "$MTU" --notes "$tag" \
		> "$work/recv.json" 2>"$work/recv.err" & pids+=($!)
	inns "$sns" "$PFS" -q send --transport udp --connect "$addr:$port" --mode "$mode" \
		--size "$SIZE" --page 2m --bytes "$BYTES" --mtu "$MTU" --notes "$tag" \
		> "$work/send.json" 2>"$work/send.err" || true
	wait "${pids[-1]}" || true
	jq -r --arg p "$path" --arg t "$tag" --slurpfile s "$work/send.json" '[$p, .label, .purpose, .size_mb,
		.elapsed_s, .effective_mb_s, .user_s, .sys_s, .mb_per_cpu_s, .integrity,
		"\($t); receiver CPU; sender CPU \($s[0].user_s)u+\($s[0].sys_s)s; sent \($s[0].datagrams.sent // 0) re-sent \($s[0].datagrams.retransmitted // 0) NAKs \(.datagrams.naks // 0) dup \(.datagrams.duplicates // 0) sock-drops \(.datagrams.socket_drops // 0); \($s[0].path // "")" +
		(if .error then "; error: \(.error)" else "" end)] | @tsv' "$work/recv.json" | tee "$work/row"
	# The same row for the report (docs/design/bench-rows.md). Its limit: with GSO/GRO
	# a payload row moves 64 KiB per kernel message, which iperf3 UDP (one
	# datagram per message) cannot: PFS beats it 4-7x, so that would be a weak
	# limit; the path's one-stream TCP rate (same offloads) is the strong one.
	# Without GSO/GRO, iperf3 UDP does the same work per datagram. Not
	# offset-only, whose effective bytes never cross the link. The report
	# groups rows by label, so the row without offloads gets its own.
	local l pu size el u y integ notes lp='' lim=iperf3-tcp-$path
	[ "${PFS_UDP_OFFLOAD:-}" = off ] && lp="No GSO/GRO: " lim=iperf3-udp-$path
	[ "$mode" = payload ] || lim=
	IFS=$'\t' read -r _ l pu size el _ u y _ integ notes < "$work/row" || return 0
	bench_row suite=udp path="$(rowpath)" label="$lp$l" purpose="$pu" size_mb="$size" \
		elapsed_s="$el" user_s="$u" sys_s="$y" integrity="$integ" pthreads=1 notes="$notes" \
		limit="$lim" loss_pct="$loss"
}

echo "bench-udp: iperf3 UDP x$REPS" >&2
rows+=("$(for i in $(seq "$REPS"); do run_iperf udp; done | median_row)")
echo "bench-udp: iperf3 TCP x$REPS" >&2
rows+=("$(for i in $(seq "$REPS"); do run_iperf tcp; done | median_row)")
echo "bench-udp: pfs payload x$REPS" >&2
rows+=("$(for i in $(seq "$REPS"); do run_pfs payload "0% loss"; done | median_row)")
echo "bench-udp: pfs offset x$REPS" >&2
rows+=("$(for i in $(seq "$REPS"); do run_pfs offset "0% loss"; done | median_row)")
echo "bench-udp: pfs arith x$REPS" >&2
rows+=("$(for i in $(seq "$REPS"); do run_pfs arith "0% loss"; done | median_row)")
echo "bench-udp: pfs payload without GSO/GRO x$REPS" >&2
rows+=("$(for i in $(seq "$REPS"); do PFS_UDP_OFFLOAD=off run_pfs payload "no GSO/GRO (PFS_UDP_OFFLOAD=off), 0% loss"; done | median_row)")
echo "bench-udp: pfs payload, 1% loss x$REPS" >&2
loss_on; loss=1
rows+=("$(for i in $(seq "$REPS"); do run_pfs payload "1% loss"; done | median_row)")
loss_off; loss=0
if [ "$LOOPBACK" = 1 ]; then
	# The same lossless rows with no link at all: 127.0.0.1 inside one
	# fresh namespace, both ends in it.
	path=loopback rns=$nsa sns=$nsa addr=127.0.0.1
	echo "bench-udp: loopback: iperf3 UDP and TCP, pfs payload, offset, payload without GSO/GRO x$REPS" >&2
	rows+=("$(for i in $(seq "$REPS"); do run_iperf udp; done | median_row)")
	rows+=("$(for i in $(seq "$REPS"); do run_iperf tcp; done | median_row)")
	rows+=("$(for i in $(seq "$REPS"); do run_pfs payload "0% loss"; done | median_row)")
	rows+=("$(for i in $(seq "$REPS"); do run_pfs offset "0% loss"; done | median_row)")
	rows+=("$(for i in $(seq "$REPS"); do run_pfs arith "0% loss"; done | median_row)")
	rows+=("$(for i in $(seq "$REPS"); do PFS_UDP_OFFLOAD=off run_pfs payload "no GSO/GRO (PFS_UDP_OFFLOAD=off), 0% loss"; done | median_row)")
fi
load_end=$(load)

get() { printf '%s\n' "${rows[@]}" | awk -F'\t' -v l="$1" -v n="$2" 'index($2, l) == 1 && index($11, n) == 1 { print $'"$3"'; exit }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
verdict() { awk -v a="$1" -v b="$2" 'BEGIN { print (a >= b) ? "PASS" : "MISS" }'; }

ip3=$(get "iperf3 UDP" "" 6)
pay=$(get "PFS-With-Payload-UDP" "0% loss" 6)
payl=$(get "PFS-With-Payload-UDP" "1% loss" 6)
payl_i=$(get "PFS-With-Payload-UDP" "1% loss" 10)
payn=$(get "PFS-With-Payload-UDP" "no GSO" 6)
r1=$(ratio "$pay" "$ip3"); r2=$(ratio "$payl" "$pay")
v2=$(verdict "$r2" 0.5); [ "$payl_i" = OK ] || v2="MISS (integrity $payl_i)"

table="| Path | Label | Purpose | Size (MB) | Elapsed (s) | Effective (MB/s) | user_s | sys_s | MB/CPU-s | Integrity | Notes |
|---|---|---|---:|---:|---:|---:|---:|---:|---|---|"
for r in "${rows[@]}"; do r=${r//|/\\|}; table+=$'\n'"| ${r//$'\t'/ | } |"; done
targets="| Target | Measured | Needed | Result |
|---|---|---|---|
| PFS-With-Payload-UDP >= 0.8x iperf3 UDP receiver goodput (0% loss) | ${r1}x ($pay / $ip3 MB/s) | 0.80x | $(verdict "$r1" 0.8) |
| PFS-With-Payload-UDP at 1% loss >= 0.5x its 0% figure, integrity OK | ${r2}x ($payl / $pay MB/s, integrity $payl_i) | 0.50x | $v2 |
| (reference, not a target) PFS-With-Payload-UDP without GSO/GRO vs iperf3 UDP, both one datagram per kernel message | $(ratio "$payn" "$ip3")x ($payn / $ip3 MB/s) | (0.80x) | $(verdict "$(ratio "$payn" "$ip3")" 0.8) |"

report="Command: \`make -C dataplane bench-udp\` (SIZE=$SIZE BYTES=$BYTES IPERF_SECS=$IPERF_SECS REPS=$REPS MTU=$MTU${BENCH_QUICK:+ BENCH_QUICK=$BENCH_QUICK}$([ "$LOOPBACK" = 0 ] || echo " LOOPBACK=$LOOPBACK"): ${DGRAM}-byte UDP payloads)
Date: $(date -u '+%Y-%m-%d %H:%M UTC'); kernel $(uname -r); $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))
Load average (1/5/15 min) at start: $load_start; at end: $load_end (other jobs share this machine).
Loss: $loss_how.

$table

$targets"
echo
echo "$report"
if [ -n "$OUT_MD" ]; then
	section="## UDP transport

Written by \`dataplane/bench/udp.sh\` (\`make -C dataplane bench-udp\`); one run, every
number measured in that run, over a veth pair between two fresh namespaces. MB are
decimal. Effective MB/s is the receiver's (PFS: effective bytes over its transfer time,
setup excluded; iperf3: bytes that reached the iperf3 receiver). MB/CPU-s uses the
receiver's CPU time. iperf3 UDP sends one ${DGRAM}-byte datagram per system call;
pfs sends the same datagram size but hands the kernel up to 44 at a time (UDP GSO,
received with UDP GRO) when the kernel offers it; the pfs rows' notes give the path
it used and its repair counters. \`iperf3 -u -b 0\` offers more than its receiver
can take, so its goodput is what survived the receiver's socket (the loss is in
its notes); pfs paces itself and repairs, so its rows are complete transfers with
integrity checked. The row without GSO/GRO is the like-for-like comparison with
iperf3's one datagram per kernel call; it is reported, not a target. Wall-clock
rows depend on how much CPU other jobs leave (sender and receiver each need a
core); compare the load averages.$([ "$LOOPBACK" = 0 ] || echo "
Rows on path loopback ran on 127.0.0.1 inside one fresh namespace, both ends in it
(no link, no loss).")

$report"
	# The whole page is this run's; the cost of datagram authentication,
	# measured by hand, is in docs/design/dgram-auth-cost.md.
	{
		echo "<!-- SPDX-License-Identifier: Apache-2.0 -->"
		echo "# UDP transport benchmark"
		echo
		echo "$section"
	} > "$OUT_MD"
	echo "bench-udp: wrote $OUT_MD" >&2
fi
