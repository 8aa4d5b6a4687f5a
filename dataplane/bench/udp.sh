#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# UDP benchmark, one run, over a veth pair between two fresh network
# namespaces (and on 127.0.0.1 inside one of them, see LOOPBACK):
#   Limit: the UDP link alone, `pfs udp blast` -> `pfs udp sink` (no protocol
#     work, unpaced, sequence-checked), in each variant: sendmmsg/recvmmsg
#     batches of 64 datagrams, and the same with UDP GSO/GRO (44 datagrams
#     per kernel message, as pfs). All variants carry the key
#     udp-blast-<path>; the report takes the best repetition of any as the
#     limit, and so does this page. Measured the same way in BENCH_QUICK.
#   Limit: one core's CRC32C (`pfs bench`, key crc32c-1core), the limit of
#     the Offset-only and Arithmetic rows, whose effective bytes never cross
#     the link.
#   Peer: iperf3 UDP (-u -b 0 -l <same datagram size>), goodput at the
#     iperf3 receiver (key peer-udp-<path>): another tool doing the same job,
#     one datagram per system call; never a limit. (iperf3 TCP is the tcp
#     suite's.)
#   Transfer: PFS-With-Payload-UDP, Native PFS Offset-only Mode - UDP,
#   Native PFS Arithmetic Mode - UDP, PFS-With-Payload-UDP without GSO/GRO,
#   then PFS-With-Payload-UDP with 1% loss on the veth (tc netem on the
#   sender's side when the kernel has it, else an iptables `statistic` DROP
#   rule on the receiver's side; either drops a GSO burst as a unit). Every
#   payload row has limit udp-blast-<path> and peer peer-udp-<path>.
# Prints a table (effective MB/s, MB per receiver CPU-second) and the
# targets computed from this same run (against the strongest limit and the
# strongest peer measured in it), and writes them to docs/bench/bench-udp.md
# (the whole page). Everything it creates (namespaces, veth, rules,
# hugepages it reserved) is removed on exit.
#
# Environment: PFS (binary), SIZE (blob, default 1G), BYTES (effective bytes
# per PFS run, default 4G), IPERF_SECS (default 5), REPS (runs per PFS and
# peer row, the median by effective MB/s is reported with the range; default
# 3), LIMIT_SECS (seconds per blaster run, default 3), LIMIT_REPS (runs per
# blaster variant, the best is the limit; default 3), CRC_SIZE (the blob
# `pfs bench` measures CRC32C over, default 1G), MTU (default 1500:
# 1472-byte UDP payload), OUT_MD (default ../docs/bench/bench-udp.md; empty
# to skip), LOOPBACK (1: also the limits, iperf3 UDP and the lossless PFS
# rows on 127.0.0.1 inside the sender's fresh namespace, after the veth
# rows; default 1 when BENCH_ROWS is set, else 0, so the page keeps its
# veth-only table), BENCH_ROWS (a file: every repetition of every row is
# appended to it as one JSON line, docs/design/bench-rows.md), BENCH_QUICK
# (1: a check that the script works, not a measurement: SIZE=256M BYTES=512M
# IPERF_SECS=2 REPS=3 and OUT_MD empty unless given; the limits keep their
# full LIMIT_SECS, LIMIT_REPS and CRC_SIZE; a few minutes here).
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
LIMIT_SECS=${LIMIT_SECS:-3}
LIMIT_REPS=${LIMIT_REPS:-3}
CRC_SIZE=${CRC_SIZE:-1G}
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

# Hugepages for two blobs (sender, receiver in offset mode), or for the
# blob of `pfs bench` when that is bigger.
size_bytes=$(numfmt --from=iec "$SIZE")
crc_bytes=$(numfmt --from=iec "$CRC_SIZE")
need=$(( 2 * ((size_bytes + 2097151) / 2097152) ))
crc_need=$(( (crc_bytes + 2097151) / 2097152 ))
[ "$crc_need" -le "$need" ] || need=$crc_need
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
rows=()	# tab-separated: path label purpose size_mb elapsed eff user sys mbcpu integrity notes

# ---- one core's CRC32C: the limit of the Offset-only and Arithmetic rows ----
echo "bench-udp: pfs bench --size $CRC_SIZE --page 2m (crc32c-1core)" >&2
"$PFS" -q bench --size "$CRC_SIZE" --page 2m > "$work/local.json"
L() { jq -r ".$1" "$work/local.json"; }
crc=$(L crc32c_mb_s)
crc_label="CRC32C one core ($(L crc32c_impl)), out of cache"
bench_row suite=udp path=local label="$crc_label" purpose=Limit \
	size_mb="$(jq '.blob.size / 1e6' "$work/local.json")" effective_mb_s="$crc" \
	mb_per_cpu_s="$(L crc32c_mb_per_cpu_s)" integrity=NA pthreads=1 \
	notes="pfs bench over a $CRC_SIZE blob on 2 MiB pages" key=crc32c-1core
rows+=("$(printf 'local\t%s\tLimit\t%s\t\t%s\t\t\t%s\tNA\tpfs bench over a %s blob; key crc32c-1core' \
	"$crc_label" "$(jq '.blob.size / 1e6' "$work/local.json")" "$crc" "$(L crc32c_mb_per_cpu_s)" "$CRC_SIZE")")

median_row() {
	sort -t$'\t' -k6,6g | awk -F'\t' -v OFS='\t' '{ r[NR] = $0; e[NR] = $6 }
		END { m = int((NR + 1) / 2); $0 = r[m]
		      $11 = $11 "; median of " NR " runs, " e[1] ".." e[NR] " MB/s"; print }'
}
# A limit's row is its best repetition (the report takes the max too).
best_row() {
	sort -t$'\t' -k6,6g | awk -F'\t' -v OFS='\t' '{ r[NR] = $0; e[NR] = $6 }
		END { $0 = r[NR]; $11 = $11 "; best of " NR " runs, " e[1] ".." e[NR] " MB/s"; print }'
}

# Where the rows run, set before each group: path (the table's word), the
# receiver's and the sender's namespaces, the receiver's address, and the loss
# injected on the link in % (the rows' path word and loss_pct in BENCH_ROWS).
path=veth rns=$nsb sns=$nsa addr=$ipb loss=0
rowpath() { if [ "$loss" = 0 ]; then echo "$path"; else echo "$path $loss% loss"; fi; }

# The UDP link alone: pfs udp blast -> pfs udp sink, unpaced, for
# LIMIT_SECS; goodput and CPU at the sink (first to last datagram).
run_blast() {	# plain|gso
	local variant=$1 port=7900 sargs=() bargs=() label
	if [ "$variant" = gso ]; then
		sargs=(--gro) bargs=(--gso)
		label="UDP link: pfs udp blast -> sink (sendmmsg x64 + GSO, recvmmsg x64 + GRO)"
	else
		label="UDP link: pfs udp blast -> sink (sendmmsg x64, recvmmsg x64)"
	fi
	rm -f "$work/sink.ready"
	nsenter --net=/run/netns/"$rns" "$PFS" -q udp sink --listen "$addr:$port" "${sargs[@]}" \
		--ready-file "$work/sink.ready" > "$work/sink.json" 2>"$work/sink.err" & pids+=($!)
	for _ in $(seq 200); do [ -e "$work/sink.ready" ] && break; sleep 0.02; done
	inns "$sns" "$PFS" -q udp blast --connect "$addr:$port" --size "$DGRAM" --time "$LIMIT_SECS" \
		"${bargs[@]}" > "$work/blast.json" 2>"$work/blast.err" || true
	wait "${pids[-1]}" || true
	jq -r --arg p "$path" --arg l "$label" --slurpfile b "$work/blast.json" '
		[$p, $l, "Limit", (.bytes / 1e6), .elapsed_s, .mb_s, .user_s, .sys_s,
		 (if (.user_s + .sys_s) > 0 then (.bytes / 1e6 / (.user_s + .sys_s) * 10 | round / 10) else 0 end),
		 "NA",
		 "sink CPU; blaster CPU \($b[0].user_s)u+\($b[0].sys_s)s; \(.datagrams) datagrams of \($b[0].size) B, lost \(.lost), sock-drops \(.sock_drops), reordered \(.reordered); \($b[0].variant) (\($b[0].segs) per message, \($b[0].batch) messages per call) -> \(.variant), ended by \(.ended); key udp-blast-\($p)" +
		 (if .error then "; error: \(.error)" else "" end)] | @tsv' "$work/sink.json" | tee "$work/row"
	local size el u y notes
	IFS=$'\t' read -r _ _ _ size el _ u y _ _ notes < "$work/row" || return 0
	bench_row suite=udp path="$path" label="$label" purpose=Limit size_mb="$size" \
		elapsed_s="$el" user_s="$u" sys_s="$y" integrity=NA pthreads=1 notes="$notes" \
		key="udp-blast-$path" loss_pct=0
}

# iperf3 UDP: a peer (another tool doing the job), never a limit.
run_iperf() {
	local port=5201 label="iperf3 UDP (-b 0 -l $DGRAM)"
	nsenter --net=/run/netns/"$rns" iperf3 -s -1 -B "$addr" -p $port >/dev/null 2>&1 & pids+=($!)
	sleep 0.5
	inns "$sns" iperf3 -c "$addr" -p $port -t "$IPERF_SECS" -u -b 0 -l "$DGRAM" -J > "$work/iperf.json" 2>/dev/null || true
	wait "${pids[-1]}" 2>/dev/null || true
	jq -r --arg l "$label" --arg p "$path" '.end as $e |
		($e.sum_received.bytes) as $b | ($e.sum_received.seconds) as $s |
		($e.cpu_utilization_percent.remote_user / 100 * $s) as $u |
		($e.cpu_utilization_percent.remote_system / 100 * $s) as $y |
		[$p, $l, "Peer", ($b / 1e6 * 100 | round / 100), ($s * 1000 | round / 1000),
		 ($b / 1e6 / $s * 10 | round / 10), ($u * 1000 | round / 1000), ($y * 1000 | round / 1000),
		 (if ($u + $y) > 0 then ($b / 1e6 / ($u + $y) * 10 | round / 10) else 0 end), "NA",
		 "goodput at the iperf3 receiver; receiver CPU from iperf3 -J" +
		 (if $e.sum.lost_percent then "; offered \($e.sum_sent.bytes / 1e6 / $e.sum_sent.seconds | round) MB/s by the sender, \($e.sum.lost_percent | . * 10 | round / 10)% datagrams lost" else "" end) +
		 "; key peer-udp-\($p)"] | @tsv' "$work/iperf.json" | tee "$work/row"
	local mb secs u y notes
	IFS=$'\t' read -r _ _ _ mb secs _ u y _ _ notes < "$work/row" || return 0
	bench_row suite=udp path="$path" label="$label" purpose=Peer size_mb="$mb" \
		elapsed_s="$secs" user_s="$u" sys_s="$y" integrity=NA pthreads=1 notes="$notes" \
		key="peer-udp-$path" limit="udp-blast-$path" loss_pct="$loss"
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
	jq -r --arg p "$(rowpath)" --arg t "$tag" --slurpfile s "$work/send.json" '[$p, .label, .purpose, .size_mb,
		.elapsed_s, .effective_mb_s, .user_s, .sys_s, .mb_per_cpu_s, .integrity,
		"\($t); receiver CPU; sender CPU \($s[0].user_s)u+\($s[0].sys_s)s; sent \($s[0].datagrams.sent // 0) re-sent \($s[0].datagrams.retransmitted // 0) NAKs \(.datagrams.naks // 0) dup \(.datagrams.duplicates // 0) sock-drops \(.datagrams.socket_drops // 0); \($s[0].path // "")" +
		(if .error then "; error: \(.error)" else "" end)] | @tsv' "$work/recv.json" | tee "$work/row"
	# The same row for the report (docs/design/bench-rows.md). A payload row
	# (with or without GSO/GRO, lossy or not) is held to the UDP link alone
	# (udp-blast-<path>, the best of its variants) and compared with the
	# peer iperf3 UDP; Offset-only and Arithmetic move no effective bytes
	# over the link: one core's CRC32C bounds them. The report groups rows
	# by label, so the row without offloads gets its own.
	local l pu size el u y integ notes lp='' lim=crc32c-1core peer=
	[ "${PFS_UDP_OFFLOAD:-}" = off ] && lp="No GSO/GRO: "
	[ "$mode" = payload ] && lim=udp-blast-$path peer=peer-udp-$path
	IFS=$'\t' read -r _ l pu size el _ u y _ integ notes < "$work/row" || return 0
	bench_row suite=udp path="$(rowpath)" label="$lp$l" purpose="$pu" size_mb="$size" \
		elapsed_s="$el" user_s="$u" sys_s="$y" integrity="$integ" pthreads=1 notes="$notes" \
		limit="$lim" peer="$peer" loss_pct="$loss"
}

# Limits first on each path, then the peer, then pfs.
lossless_rows() {
	echo "bench-udp: $path: pfs udp blast -> sink, plain and GSO/GRO, x$LIMIT_REPS ${LIMIT_SECS}s" >&2
	rows+=("$(for _ in $(seq "$LIMIT_REPS"); do run_blast plain; done | best_row)")
	rows+=("$(for _ in $(seq "$LIMIT_REPS"); do run_blast gso; done | best_row)")
	echo "bench-udp: $path: iperf3 UDP x$REPS" >&2
	rows+=("$(for _ in $(seq "$REPS"); do run_iperf; done | median_row)")
	echo "bench-udp: $path: pfs payload, offset, arith, payload without GSO/GRO x$REPS" >&2
	rows+=("$(for _ in $(seq "$REPS"); do run_pfs payload "0% loss"; done | median_row)")
	rows+=("$(for _ in $(seq "$REPS"); do run_pfs offset "0% loss"; done | median_row)")
	rows+=("$(for _ in $(seq "$REPS"); do run_pfs arith "0% loss"; done | median_row)")
	rows+=("$(for _ in $(seq "$REPS"); do PFS_UDP_OFFLOAD=off run_pfs payload "no GSO/GRO (PFS_UDP_OFFLOAD=off), 0% loss"; done | median_row)")
}

lossless_rows
echo "bench-udp: veth: pfs payload, 1% loss x$REPS" >&2
loss_on; loss=1
rows+=("$(for _ in $(seq "$REPS"); do run_pfs payload "1% loss"; done | median_row)")
loss_off; loss=0
if [ "$LOOPBACK" = 1 ]; then
	# The same lossless rows with no link at all: 127.0.0.1 inside one
	# fresh namespace, both ends in it.
	path=loopback rns=$nsa sns=$nsa addr=127.0.0.1
	lossless_rows
fi
load_end=$(load)

# A row's column $3 by path ($1), label prefix ($2), notes prefix ($3).
get() { printf '%s\n' "${rows[@]}" | awk -F'\t' -v p="$1" -v l="$2" -v n="$3" '$1 == p && index($2, l) == 1 && index($11, n) == 1 { print $'"$4"'; exit }'; }
# The strongest limit of a path: "MB/s<TAB>label" of its best Limit row.
strongest() { printf '%s\n' "${rows[@]}" | awk -F'\t' -v p="$1" -v OFS='\t' '$1 == p && $3 == "Limit" && $6 > m { m = $6; l = $2 } END { print m + 0, l }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
verdict() { awk -v a="$1" -v b="$2" 'BEGIN { print (a >= b) ? "PASS" : "MISS" }'; }
# Against a limit: at or under it, or the limit was measured too weakly.
within() { awk -v r="$1" 'BEGIN { print (r <= 1.0) ? "within the limit" : "ABOVE LIMIT: the limit was measured too weakly" }'; }

targets="| Target | Measured | Needed | Result |
|---|---|---|---|"
paths=(veth); [ "$LOOPBACK" = 1 ] && paths+=(loopback)
for p in "${paths[@]}"; do
	IFS=$'\t' read -r lim lim_label < <(strongest "$p")
	peer=$(get "$p" "iperf3 UDP" "" 6)
	pay=$(get "$p" "PFS-With-Payload-UDP" "0% loss" 6)
	payn=$(get "$p" "PFS-With-Payload-UDP" "no GSO" 6)
	ra=$(ratio "$pay" "$peer")
	targets+="
| $p: PFS-With-Payload-UDP >= 0.8x the strongest peer, iperf3 UDP (median goodput, 0% loss) | ${ra}x ($pay / $peer MB/s) | 0.80x | $(verdict "$ra" 0.8) |
| $p: PFS-With-Payload-UDP vs the strongest limit, $lim_label (best run) | $(ratio "$pay" "$lim")x ($pay / $lim MB/s) | <= 1.00x | $(within "$(ratio "$pay" "$lim")") |
| $p: PFS-With-Payload-UDP without GSO/GRO vs the same limit (reference, not a target) | $(ratio "$payn" "$lim")x ($payn / $lim MB/s) | <= 1.00x | $(within "$(ratio "$payn" "$lim")") |
| $p: (reference) PFS-With-Payload-UDP without GSO/GRO vs the peer iperf3 UDP | $(ratio "$payn" "$peer")x ($payn / $peer MB/s) | - | - |"
done
payl=$(get "veth 1% loss" "PFS-With-Payload-UDP" "1% loss" 6)
payl_i=$(get "veth 1% loss" "PFS-With-Payload-UDP" "1% loss" 10)
pay=$(get veth "PFS-With-Payload-UDP" "0% loss" 6)
IFS=$'\t' read -r lim lim_label < <(strongest veth)
r2=$(ratio "$payl" "$pay")
v2=$(verdict "$r2" 0.5); [ "$payl_i" = OK ] || v2="MISS (integrity $payl_i)"
targets+="
| veth: PFS-With-Payload-UDP at 1% loss >= 0.5x its 0% figure, integrity OK | ${r2}x ($payl / $pay MB/s, integrity $payl_i) | 0.50x | $v2 |
| veth: PFS-With-Payload-UDP at 1% loss vs the strongest limit (lossless link) | $(ratio "$payl" "$lim")x ($payl / $lim MB/s) | <= 1.00x | $(within "$(ratio "$payl" "$lim")") |"
for m in "Native PFS Offset-only Mode - UDP" "Native PFS Arithmetic Mode - UDP"; do
	for p in "${paths[@]}"; do
		v=$(get "$p" "$m" "0% loss" 6)
		targets+="
| $p: $m vs one core's CRC32C ($crc MB/s; no effective bytes cross the link) | $(ratio "$v" "$crc")x ($v / $crc MB/s) | <= 1.00x | $(within "$(ratio "$v" "$crc")") |"
	done
done

table="| Path | Label | Purpose | Size (MB) | Elapsed (s) | Effective (MB/s) | user_s | sys_s | MB/CPU-s | Integrity | Notes |
|---|---|---|---:|---:|---:|---:|---:|---:|---|---|"
for r in "${rows[@]}"; do r=${r//|/\\|}; table+=$'\n'"| ${r//$'\t'/ | } |"; done

report="Command: \`make -C dataplane bench-udp\` (SIZE=$SIZE BYTES=$BYTES IPERF_SECS=$IPERF_SECS REPS=$REPS LIMIT_SECS=$LIMIT_SECS LIMIT_REPS=$LIMIT_REPS CRC_SIZE=$CRC_SIZE MTU=$MTU${BENCH_QUICK:+ BENCH_QUICK=$BENCH_QUICK}$([ "$LOOPBACK" = 0 ] || echo " LOOPBACK=$LOOPBACK"): ${DGRAM}-byte UDP payloads)
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
setup excluded; the others: bytes that reached their receiver over the time from the
first to the last). MB/CPU-s uses the receiver's CPU time.

Purposes: a **Limit** is what the machine can do; its row is its best run, as in the
report. The UDP link's limit is \`pfs udp blast\` -> \`pfs udp sink\`: unpaced
${DGRAM}-byte datagrams with no protocol work, in sendmmsg/recvmmsg batches of 64, and
the same with UDP GSO/GRO (44 datagrams per kernel message, as pfs), with pfs's socket
buffer sizes; the best of its variants is the limit of every PFS-With-Payload-UDP row,
with GSO/GRO or without, since a limit is the strongest thing the link can do, not the
like-for-like one. One core's CRC32C (\`pfs bench\`) bounds Offset-only and
Arithmetic, whose effective bytes never cross the link. A **Peer** is another tool
doing the same job: iperf3 UDP, one datagram per system call, \`-b 0\` (it offers more
than its receiver takes; its goodput is what survived the receiver's socket, the loss
is in its notes). pfs paces itself and repairs, so its rows are complete transfers
with integrity checked; their notes give the path pfs used and its repair counters.
A PFS row above its limit would mean the limit was measured too weakly: the targets
say so. Wall-clock rows depend on how much CPU other jobs leave (sender and receiver
each need a core); compare the load averages.$([ "$LOOPBACK" = 0 ] || echo "
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
