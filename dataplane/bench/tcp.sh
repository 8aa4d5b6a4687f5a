#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# One benchmark run, side by side, on two paths:
#   loopback  127.0.0.1 inside a fresh network namespace
#   veth      a veth pair between two fresh network namespaces
# For each path: iperf3 (one TCP stream), scp -o Compression=no and rsync over
# ssh (--no-compress) between tmpfs
# files (throwaway sshd with throwaway keys), and pfs send/recv in the three
# modes. Plus `pfs bench`: single-core CRC32C, memset, blob prefault + fill.
# Prints a table (effective MB/s, MB/CPU-s; receiver-side CPU for every
# row), computes the target ratios from this same run, and writes
# docs/bench/bench-tcp.md. Everything it creates (namespaces, veth, sshd, keys,
# tmpfs files, hugepages it reserved) is removed on exit.
#
# Environment: PFS (binary), SIZE (blob, default 1G), BYTES (effective bytes
# per PFS run, default 8G), SCP_BYTES (default 1G), IPERF_SECS (default 5),
# REPS (iperf3 and pfs runs per row, the median by effective MB/s is
# reported with the range; default 3), NICE (niceness of every measured
# process, baselines included; default 0), OUT_MD (default ../docs/bench/bench-tcp.md;
# empty to skip), BENCH_ROWS (append every repetition as a JSON line,
# docs/design/bench-rows.md), BENCH_QUICK=1 (2G per transfer, 256M for scp/rsync,
# 2 s iperf3, 2 repetitions; the limits, `pfs bench`'s CRC32C and copy, are
# measured as in full mode), PFS_BEFORE (another pfs binary, e.g. the previous commit's:
# its payload runs alternate with PFS's and get their own "Before:" rows, so a
# change is measured against its predecessor in the same run; default none).
set -euo pipefail
cd "$(dirname "$0")/.."
PFS=${PFS:-$PWD/build/pfs}
SIZE=${SIZE:-1G}
# Quick mode shrinks the transfers and the peers' runs only: `pfs bench`
# below (the limits crc32c-1core and copy-1t) runs the same in both modes.
if [ "${BENCH_QUICK:-0}" = 1 ]; then	# make bench's quick mode: about a minute
	BYTES=${BYTES:-2G} SCP_BYTES=${SCP_BYTES:-256M} IPERF_SECS=${IPERF_SECS:-2} REPS=${REPS:-2}
fi
BYTES=${BYTES:-8G}
SCP_BYTES=${SCP_BYTES:-1G}
IPERF_SECS=${IPERF_SECS:-5}
REPS=${REPS:-3}
NICE=${NICE:-0}
OUT_MD=${OUT_MD-$PWD/../docs/bench/bench-tcp.md}
PFS_BEFORE=${PFS_BEFORE:-}

# shellcheck source-path=SCRIPTDIR source=netns.sh
. bench/netns.sh
# shellcheck source-path=SCRIPTDIR source=rows.sh
. bench/rows.sh
die() { echo "bench: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces, veth, sshd, hugepages)"
for t in ip iperf3 jq scp rsync ssh ssh-keygen /usr/sbin/sshd /usr/bin/time nsenter; do
	command -v "$t" >/dev/null || die "missing $t (run hack/install-deps.sh)"
done
[ -x "$PFS" ] || die "build pfs first: make -C dataplane"
[ -z "$PFS_BEFORE" ] || [ -x "$PFS_BEFORE" ] || die "PFS_BEFORE=$PFS_BEFORE is not an executable"

id=$$
nsa=pfsb-a-$id nsb=pfsb-b-$id va=pba$((id % 100000)) vb=pbb$((id % 100000))
ipa=10.214.$((id % 250)).1 ipb=10.214.$((id % 250)).2
work=$(mktemp -d /dev/shm/pfs-bench.XXXXXX)
pids=() hp_added=0 made_run_sshd=0

cleanup() {
	set +e
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	netns_remove "$nsa" "$nsb"
	rm -rf "$work"
	if [ "$hp_added" -gt 0 ]; then
		cur=$(cat /proc/sys/vm/nr_hugepages)
		echo $((cur - hp_added)) > /proc/sys/vm/nr_hugepages
	fi
	[ "$made_run_sshd" -eq 1 ] && rmdir /run/sshd 2>/dev/null
}
trap cleanup EXIT INT TERM

# Run in a namespace. Background jobs use `nsenter ... &` directly so that $!
# is the process itself (a backgrounded function would be a subshell).
inns() { local ns=$1; shift; nice -n "$NICE" nsenter --net=/run/netns/"$ns" "$@"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

# Hugepages: two 2 MiB-page blobs per transfer (sender, receiver) + bench.
size_bytes=$(numfmt --from=iec "${SIZE}")
need=$(( (size_bytes + 2097151) / 2097152 * 2 ))
free=$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages)
if [ "$free" -lt "$need" ]; then
	add=$((need - free)); cur=$(cat /proc/sys/vm/nr_hugepages)
	echo $((cur + add)) > /proc/sys/vm/nr_hugepages
	hp_added=$(( $(cat /proc/sys/vm/nr_hugepages) - cur ))
fi
echo "bench: hugepages free $(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages) (added $hp_added)" >&2

netns_veth_pair "$nsa" "$nsb" "$va" "$vb" "$ipa" "$ipb"

load_start=$(load)
rows=()	# tab-separated: path label purpose size_mb elapsed eff user sys mbcpu integrity notes
declare -A R	# R[path.key]=value for the targets
declare -A paired	# paired[path.peer file]: payload / that peer's wall, per repetition

# ---- local rates ----
echo "bench: pfs bench --size $SIZE --page 2m" >&2
nice -n "$NICE" "$PFS" -q bench --size "$SIZE" --page 2m > "$work/local.json"
L() { jq -r ".$1" "$work/local.json"; }
# A limit is its best pass (the median pass measures the other tenants too).
crc=$(L crc32c_best_mb_s); crc_cpu=$(L crc32c_mb_per_cpu_s)
bench_row suite=tcp path=local label="CRC32C one core ($(L crc32c_impl)), out of cache" purpose=Limit \
	size_mb="$(jq '.blob.size / 1e6' "$work/local.json")" effective_mb_s="$crc" mb_per_cpu_s="$crc_cpu" \
	integrity=NA pthreads=1 key=crc32c-1core \
	notes="pfs bench over the $SIZE blob, best of $(L crc32c_passes) passes (median pass $(L crc32c_mb_s) MB/s)"
# The limit of a same-host TCP path: every payload byte is copied at least
# once by one core (the sender out of its blob, out of cache, into socket
# buffers; the receiver out of them), so one core's copy of the blob into a
# 128 KiB buffer (one socket write) that stays in cache bounds the rows.
copy=$(L copy_1t_mb_s)
awk -v v="$copy" 'BEGIN { exit !(v > 0) }' || die "pfs bench measured no copy_1t_mb_s"
bench_row suite=tcp path=local label="Copy one core ($(L copy_1t_impl)), blob out of cache into a 128 KiB buffer in cache" \
	purpose=Limit size_mb="$(jq '.blob.size / 1e6' "$work/local.json")" effective_mb_s="$copy" \
	integrity=NA pthreads=1 key=copy-1t \
	notes="pfs bench, best of $(L copy_1t_passes) passes over the $SIZE blob per kernel: $(jq -r '[to_entries[] | select(.key | test("^copy_1t_.*_mb_s$")) | select(.key != "copy_1t_incache_mb_s") | "\(.key | ltrimstr("copy_1t_") | rtrimstr("_mb_s")) \(.value)"] | join(", ")' "$work/local.json") MB/s; the same copy from a source in cache: $(L copy_1t_incache_mb_s) MB/s"

# Median row by effective MB/s (column 6) of the rows on stdin; the range
# and the count go into the notes.
median_row() {
	sort -t$'\t' -k6,6g | awk -F'\t' -v OFS='\t' '{ r[NR] = $0; e[NR] = $6 }
		END { m = int((NR + 1) / 2); $0 = r[m]
		      $11 = $11 "; median of " NR " runs, " e[1] ".." e[NR] " MB/s"; print }'
}

# One measured repetition into BENCH_ROWS (bench/rows.sh, docs/design/bench-rows.md),
# from a table row; a MB/CPU-s of 0 means no CPU time was measured.
emit_row() {	# tsv_row wire_mb_s limit key peer (each of the last four may be empty)
	local f per
	IFS=$'\t' read -r -a f <<< "$1"
	per=${f[8]}
	awk -v v="$per" 'BEGIN { exit !(v > 0) }' || per=
	bench_row suite=tcp path="${f[0]}" label="${f[1]}" purpose="${f[2]}" size_mb="${f[3]}" \
		elapsed_s="${f[4]}" effective_mb_s="${f[5]}" user_s="${f[6]}" sys_s="${f[7]}" \
		mb_per_cpu_s="$per" integrity="${f[9]}" notes="${f[10]}" pthreads=1 \
		wire_mb_s="$2" limit="$3" key="$4" peer="${5:-}"
}

# ---- iperf3: the peers ----
# iperf3 is a peer (another tool doing the same job), not a limit: PFS may
# beat it. With -Z, iperf3 hands its one buffer (backed by a temporary file)
# to sendfile(): no copy on its sender. With -N it sets TCP_NODELAY, as PFS
# does: on veth that alone doubles its rate here. All three carry the peer
# key peer-tcp-<path> (the report takes the one with the best median) and
# resend that one buffer, which stays in cache. With "cold", iperf3 -N and
# -Z -N send $work/cold.bin once instead, a tmpfs file of as many bytes as a
# PFS run moves, every byte read from memory once as a PFS sender reads its
# blob. iperf3 -F read()s the file into its buffer, one read() per send,
# either way (-Z then sendfile()s the buffer, not the file), so its receiver
# copies pages still hot in cache. Every peer row also names the limit
# copy-1t: a peer above it would show the limit is wrong.
run_iperf() {	# path server_ns client_ns addr [-Z|-N] [cold]
	local path=$1 sns=$2 cns=$3 addr=$4 zc=${5:-} cold=${6:-} port=5201 label="iperf3 (1 TCP stream)"
	local len=(-t "$IPERF_SECS") opts=()
	[ -z "$zc" ] || opts=("$zc")
	case $zc in
	-Z) label="iperf3 -Z (1 TCP stream, sendfile)" ;;
	-N) label="iperf3 -N (1 TCP stream, TCP_NODELAY as PFS sets it)" ;;
	esac
	if [ -n "$cold" ]; then	# TCP_NODELAY as PFS, the source read from memory as PFS's
		label="Cold source: iperf3${zc:+ -Z} -N -F (1 TCP stream, TCP_NODELAY, a $cold_size tmpfs file read() into its buffer once per send${zc:+, the buffer sent by sendfile()})"
		len=(-F "$work/cold.bin")
		opts+=(-N)
	fi
	nice -n "$NICE" nsenter --net=/run/netns/"$sns" iperf3 -s -1 -B "$addr" -p $port >/dev/null 2>&1 & pids+=($!)
	sleep 0.5
	inns "$cns" iperf3 -c "$addr" -p $port "${len[@]}" ${opts[@]+"${opts[@]}"} -J > "$work/iperf.$path.json"
	wait "${pids[-1]}" 2>/dev/null || true
	local f=$work/iperf.$path.json
	local bytes secs ru rs
	bytes=$(jq '.end.sum_received.bytes' "$f"); secs=$(jq '.end.sum_received.seconds' "$f")
	ru=$(jq '.end.cpu_utilization_percent.remote_user' "$f")
	rs=$(jq '.end.cpu_utilization_percent.remote_system' "$f")
	awk -v b="$bytes" -v s="$secs" -v ru="$ru" -v rs="$rs" -v p="$path" -v l="$label" 'BEGIN {
		mb = b / 1e6; u = ru / 100 * s; y = rs / 100 * s
		# Computed as a statement: inside printf arguments awk reads ">" as
		# output redirection (it once wrote this row to a file named 0).
		cpu = u + y; per = cpu > 0 ? mb / cpu : 0
		printf "%s\t%s\tPeer\t%.2f\t%.3f\t%.1f\t%.3f\t%.3f\t%.1f\tNA\treceiver CPU from iperf3 -J\n",
			p, l, mb, s, mb / s, u, y, per }' > "$work/row"
	# TCP payload bytes per second: the nearest to wire bytes iperf3 reports.
	emit_row "$(cat "$work/row")" "$(awk -F'\t' '{ print $6 }' "$work/row")" copy-1t "peer-tcp-$path"
	cat "$work/row"
}

# ---- scp through a throwaway sshd ----
ssh-keygen -q -t ed25519 -N '' -f "$work/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$work/client_key"
cp "$work/client_key.pub" "$work/authorized_keys"
[ -d /run/sshd ] || { mkdir -p /run/sshd; made_run_sshd=1; }
head -c "$(numfmt --from=iec "$SCP_BYTES")" /dev/urandom > "$work/scp.src"
# The cold-source iperf3 rows' file, as many bytes as a PFS run moves:
# copies of $SIZE random bytes, written (tmpfs holes would read as one
# shared zero page, which stays in cache), every page its own.
head -c "$(numfmt --from=iec "$SIZE")" /dev/urandom > "$work/cold.1"
for _ in $(seq $(( $(numfmt --from=iec "$BYTES") / $(numfmt --from=iec "$SIZE") ))); do cat "$work/cold.1"; done > "$work/cold.bin"
rm -f "$work/cold.1"
cold_size=$(stat -c %s "$work/cold.bin" | numfmt --to=iec)
start_sshd() {	# path server_ns addr port; its pid is pushed on pids
	local path=$1 sns=$2 addr=$3 port=$4
	cat > "$work/sshd_config" <<CFG
ListenAddress $addr:$port
HostKey $work/host_key
AuthorizedKeysFile $work/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile $work/sshd.$path.pid
Subsystem sftp internal-sftp
CFG
	nice -n "$NICE" nsenter --net=/run/netns/"$sns" /usr/sbin/sshd -D -e -f "$work/sshd_config" \
		>"$work/sshd.$path.log" 2>&1 & pids+=($!)
	sleep 0.7
}

# Conventional: scp or rsync over ssh, no compression, tmpfs at both ends,
# a fresh destination each time (rsync has no basis file to delta against).
run_conv() {	# path server_ns client_ns addr scp|rsync
	local path=$1 sns=$2 cns=$3 addr=$4 tool=$5 port=2222 label
	local ssh_opts=(-o Compression=no -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null
		-o BatchMode=yes -i "$work/client_key")
	start_sshd "$path" "$sns" "$addr" $port
	rm -f "$work/scp.dst"
	if [ "$tool" = scp ]; then
		label="Conventional (scp, no-compress)"
		inns "$cns" /usr/bin/time -f '%e %U %S' -o "$work/conv.time" \
			scp -q "${ssh_opts[@]}" -P $port "$work/scp.src" "root@$addr:$work/scp.dst"
	else
		label="Conventional (rsync over ssh, no-compress)"
		inns "$cns" /usr/bin/time -f '%e %U %S' -o "$work/conv.time" \
			rsync --no-compress -e "ssh ${ssh_opts[*]} -p $port" "$work/scp.src" "root@$addr:$work/scp.dst"
	fi || { echo "bench: $tool failed; sshd said:" >&2; cat "$work/sshd.$path.log" >&2; }
	kill "${pids[-1]}" 2>/dev/null; wait "${pids[-1]}" 2>/dev/null || true
	local integ=MISMATCH
	cmp -s "$work/scp.src" "$work/scp.dst" && integ=OK
	read -r e u s < "$work/conv.time"
	awk -v b="$(stat -c %s "$work/scp.src")" -v e="$e" -v u="$u" -v s="$s" -v p="$path" -v i="$integ" \
		-v l="$label" -v t="$tool" 'BEGIN {
		mb = b / 1e6; cpu = u + s; per = cpu > 0 ? mb / cpu : 0
		printf "%s\t%s\tTransfer\t%.2f\t%.3f\t%.1f\t%.3f\t%.3f\t%.1f\t%s\ttmpfs endpoints; client CPU (%s+ssh); cmp after copy\n",
			p, l, mb, e, mb / e, u, s, per, i, t }' > "$work/row"
	emit_row "$(cat "$work/row")" "" copy-1t "" "peer-tcp-$path"
	cat "$work/row"
}

# ---- pfs ----
prefix() {	# mode binary: the label's prefix for a row that is not the plain one
	[ "$2" = "$PFS" ] || { echo "Before: "; return; }
	case $1 in into-blob) echo "Into blob: " ;; in-cache) echo "Source in cache: " ;; esac
}
run_pfs() {	# path recv_ns send_ns addr mode|into-blob|in-cache [binary, default $PFS]
	local path=$1 rns=$2 sns=$3 addr=$4 mode=$5 bin=${6:-$PFS} port=7600 wire=$5 into=() size=$SIZE
	# into-blob: payload received straight into the receiver's own blob (the
	# fan-out's case), not hashed out of a bounce buffer. in-cache: payload
	# from a 2 MiB blob, which stays in the sender's cache as iperf3's one
	# buffer does; it tells the cost of reading a cold blob from the rest.
	[ "$mode" = into-blob ] && wire=payload into=(--into-blob --fill zero)
	[ "$mode" = in-cache ] && wire=payload size=2M
	nice -n "$NICE" nsenter --net=/run/netns/"$rns" "$bin" -q recv --listen "$addr:$port" --mode "$wire" \
		"${into[@]}" --size "$size" --page 2m --notes "$path" > "$work/pfs.$path.$mode.recv.json" \
		2>"$work/pfs.$path.$mode.recv.err" & pids+=($!)
	inns "$sns" "$bin" -q send --connect "$addr:$port" --mode "$wire" --size "$size" --page 2m \
		--bytes "$BYTES" --notes "$path" > "$work/pfs.$path.$mode.send.json" || true
	wait "${pids[-1]}" || true
	jq -r --arg p "$path" --arg pre "$(prefix "$mode" "$bin")" '[$p, $pre + .label, .purpose, .size_mb, .elapsed_s, .effective_mb_s, .user_s, .sys_s, .mb_per_cpu_s, .integrity, "receiver; blob \(.blob.page // "none"); sender CPU \(.user_s)+\(.sys_s)"] | @tsv' \
		"$work/pfs.$path.$mode.recv.json" > "$work/row"
	# Sender CPU into the notes, from the sender's own result.
	local su ss
	su=$(jq -r .user_s "$work/pfs.$path.$mode.send.json"); ss=$(jq -r .sys_s "$work/pfs.$path.$mode.send.json")
	sed -i "s/sender CPU .*/sender CPU ${su}u+${ss}s/" "$work/row"
	# Payload rows are bound by one core's copy and compared with iperf3;
	# offset and arithmetic rows by the receiver's one hashing core.
	local limit=copy-1t peer="peer-tcp-$path" wire
	case $mode in offset|arith) limit=crc32c-1core peer= ;; esac
	wire=$(jq '.wire_bytes / .elapsed_s / 1e6' "$work/pfs.$path.$mode.recv.json")
	[ "$bin" = "$PFS" ] && emit_row "$(cat "$work/row")" "$wire" "$limit" "" "$peer"
	cat "$work/row"
}

# Each repetition runs iperf3 and then every PFS row once, so a drift in the
# machine's load (other jobs share it) falls on the baseline and the PFS rows
# alike; each row reports the median of its repetitions and their range.
pfs_modes=(payload into-blob offset arith in-cache)
for path in loopback veth; do
	if [ $path = loopback ]; then rns=$nsa sns=$nsa addr=127.0.0.1; else rns=$nsb sns=$nsa addr=$ipb; fi
	for tool in scp rsync; do
		echo "bench: $path: $tool" >&2; rows+=("$(run_conv $path "$rns" "$sns" "$addr" $tool)")
	done
	: > "$work/iperf.rows"; : > "$work/iperfz.rows"; : > "$work/iperfn.rows"; : > "$work/before.rows"
	: > "$work/iperfc.rows"; : > "$work/iperfcz.rows"
	for mode in "${pfs_modes[@]}"; do : > "$work/$mode.rows"; done
	for i in $(seq "$REPS"); do
		echo "bench: $path: repetition $i of $REPS: iperf3, iperf3 -Z, iperf3 -N, iperf3 -N -F (cold), iperf3 -Z -N -F (cold), pfs ${pfs_modes[*]}${PFS_BEFORE:+, before}" >&2
		run_iperf $path "$rns" "$sns" "$addr" >> "$work/iperf.rows"
		run_iperf $path "$rns" "$sns" "$addr" -Z >> "$work/iperfz.rows"
		run_iperf $path "$rns" "$sns" "$addr" -N >> "$work/iperfn.rows"
		run_iperf $path "$rns" "$sns" "$addr" "" cold >> "$work/iperfc.rows"
		run_iperf $path "$rns" "$sns" "$addr" -Z cold >> "$work/iperfcz.rows"
		for mode in "${pfs_modes[@]}"; do
			run_pfs $path "$rns" "$sns" "$addr" $mode >> "$work/$mode.rows"
		done
		[ -z "$PFS_BEFORE" ] ||
			run_pfs $path "$rns" "$sns" "$addr" payload "$PFS_BEFORE" >> "$work/before.rows"
	done
	rows+=("$(median_row < "$work/iperf.rows")" "$(median_row < "$work/iperfz.rows")" "$(median_row < "$work/iperfn.rows")")
	rows+=("$(median_row < "$work/iperfc.rows")" "$(median_row < "$work/iperfcz.rows")")
	for mode in "${pfs_modes[@]}"; do
		rows+=("$(median_row < "$work/$mode.rows")")
	done
	[ -z "$PFS_BEFORE" ] || rows+=("$(median_row < "$work/before.rows")")
	# The payload row over each peer's run of the same repetition, one by one.
	for t in iperf iperfz iperfn iperfc iperfcz; do
		paired[$path.$t]=$(paste "$work/$t.rows" "$work/payload.rows" |
			awk -F'\t' '{ sep = NR == 1 ? "" : ", "; printf "%s%.2f", sep, $17 / $6 }')
	done
done
load_end=$(load)

# ---- table and targets ----
get() { printf '%s\n' "${rows[@]}" | awk -F'\t' -v p="$1" -v l="$2" '$1 == p && index($2, l) == 1 { print $'"$3"' }'; }
verdict() { awk -v a="$1" -v b="$2" 'BEGIN { print (a >= b) ? "PASS" : "MISS" }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
per_gb() { awk -v c="$1" 'BEGIN { printf "%.3f", (c > 0 ? 1000 / c : 0) }'; }	# CPU-s per GB from MB/CPU-s

table="| Path | Label | Purpose | Size (MB) | Elapsed (s) | Effective (MB/s) | user_s | sys_s | MB/CPU-s | Integrity | Notes |
|---|---|---|---:|---:|---:|---:|---:|---:|---|---|"
for r in "${rows[@]}"; do r=${r//|/\\|}; table+=$'\n'"| ${r//$'\t'/ | } |"; done

# The peers of a path, "file:label prefix": iperf3, -Z and -N, and the cold
# source -N -F and -Z -N -F (the same job as PFS's, so peers too; the report
# takes the strongest of all five under peer-tcp-<path>, and so does this page).
peer_rows=(iperf:"iperf3 (1" iperfz:"iperf3 -Z (1" iperfn:"iperf3 -N (1"
	iperfc:"Cold source: iperf3 -N -F" iperfcz:"Cold source: iperf3 -Z -N -F")
# The strongest peer of a path: the best effective MB/s (column 6) or the
# best receiver MB/CPU-s (column 9) of the peers' median rows; prints
# "value<TAB>label<TAB>file" (file: its per-repetition rows).
strongest() {	# path column
	local t l v best="" out=""
	for t in "${peer_rows[@]}"; do
		l=${t#*:} v=$(get "$1" "$l" "$2")
		if [ -z "$best" ] || awk -v a="$v" -v b="$best" 'BEGIN { exit !(a > b) }'; then
			best=$v out="$v"$'\t'"$(get "$1" "$l" 2)"$'\t'"${t%%:*}"
		fi
	done
	printf '%s\n' "$out"
}

targets="| Target | Path | Measured | Needed | Result |
|---|---|---|---|---|"
for path in loopback veth; do
	# Every payload verdict is against the strongest peer measured in this run, named.
	IFS=$'\t' read -r pw pwl pwt < <(strongest $path 6)
	IFS=$'\t' read -r pc pcl _ < <(strongest $path 9)
	pay=$(get $path PFS-With-Payload 6); payc=$(get $path PFS-With-Payload 9)
	off=$(get $path "Native PFS Offset" 6); offc=$(get $path "Native PFS Offset" 9)
	ar=$(get $path "Native PFS Arith" 6)
	peers=$(for t in "${peer_rows[@]}"; do l=${t#*:}; printf '%s %s MB/s, %s MB/CPU-s; ' "${l% (1}" "$(get $path "$l" 6)" "$(get $path "$l" 9)"; done)
	targets+=$'\n'"| (Peers measured: iperf3, one TCP stream, medians; the verdicts below use the strongest, wall: $pwl; receiver CPU: $pcl) | $path | ${peers%; } | - | - |"
	targets+=$'\n'"| PFS-With-Payload-TCP >= 0.9x the strongest peer (wall: $pwl) | $path | $(ratio "$pay" "$pw")x ($pay / $pw MB/s, medians; per repetition ${paired[$path.$pwt]}) | 0.90x | $(verdict "$(ratio "$pay" "$pw")" 0.9) |"
	targets+=$'\n'"| Offset-only effective >= 0.7x single-core CRC32C | $path | $(ratio "$off" "$crc")x ($off / $crc MB/s) | 0.70x | $(verdict "$(ratio "$off" "$crc")" 0.7) |"
	# Was ">= 5x 1,075" (the seed's offset-only MB/CPU-s, measured on other
	# hardware): now a ratio to this run's one-core CRC32C per CPU-second,
	# the receiver's one hashing core, with the wall target's share.
	targets+=$'\n'"| Offset-only MB/CPU-s >= 0.7x single-core CRC32C MB/CPU-s of this run (the seed asked 5x its 1,075 MB/CPU-s, measured on other hardware: context only) | $path | $(ratio "$offc" "$crc_cpu")x ($offc / $crc_cpu MB/CPU-s) | 0.70x | $(verdict "$(ratio "$offc" "$crc_cpu")" 0.7) |"
	targets+=$'\n'"| (Arithmetic effective vs CRC32C, for reference) | $path | $(ratio "$ar" "$crc")x | - | - |"
	# Load-independent view: CPU cost per byte, receiver vs the most frugal peer.
	targets+=$'\n'"| (CPU-normalised) payload receiver MB/CPU-s vs the strongest peer's receiver ($pcl) | $path | $(ratio "$payc" "$pc")x ($payc / $pc) | (0.80x) | $(verdict "$(ratio "$payc" "$pc")" 0.8) |"
	ib=$(get $path "Into blob: PFS-With-Payload" 6); ibc=$(get $path "Into blob: PFS-With-Payload" 9)
	targets+=$'\n'"| (Into the receiver's blob, the fan-out's case) PFS-With-Payload-TCP vs the strongest peer, wall ($pwl) / receiver MB/CPU-s ($pcl) | $path | $(ratio "$ib" "$pw")x / $(ratio "$ibc" "$pc")x ($ib MB/s, $ibc MB/CPU-s: $(per_gb "$ibc") receiver CPU-s per GB) | (0.90x / 0.80x) | $(verdict "$(ratio "$ib" "$pw")" 0.9) / $(verdict "$(ratio "$ibc" "$pc")" 0.8) |"
	hc=$(get $path "Source in cache: PFS-With-Payload" 6); hcc=$(get $path "Source in cache: PFS-With-Payload" 9)
	for z in "" " -Z"; do
		cf=$(get $path "Cold source: iperf3$z -N -F" 6); cfc=$(get $path "Cold source: iperf3$z -N -F" 9)
		targets+=$'\n'"| (Cold source: iperf3$z -N -F sends a $cold_size tmpfs file once, read() into its buffer per send, as PFS reads its blob) PFS-With-Payload-TCP vs it, wall / receiver MB/CPU-s | $path | $(ratio "$pay" "$cf")x / $(ratio "$payc" "$cfc")x ($cf MB/s, $cfc MB/CPU-s) | - | - |"
	done
	targets+=$'\n'"| (Source in cache: a 2 MiB blob, as iperf3 resends one buffer) PFS-With-Payload-TCP vs the strongest peer, wall / receiver MB/CPU-s | $path | $(ratio "$hc" "$pw")x / $(ratio "$hcc" "$pc")x | - | - |"
	if [ -n "$PFS_BEFORE" ]; then
		bp=$(get $path "Before: PFS-With-Payload" 6); bpc=$(get $path "Before: PFS-With-Payload" 9)
		targets+=$'\n'"| (Before) PFS-With-Payload-TCP vs the strongest peer, wall / receiver MB/CPU-s | $path | $(ratio "$bp" "$pw")x / $(ratio "$bpc" "$pc")x | - | - |"
	fi
	targets+=$'\n'"| (Copy limit: payload effective vs one core's copy, copy-1t) | $path | $(ratio "$pay" "$copy")x ($pay / $copy MB/s) | - | - |"
done
sw=$(L setup_over_memset); sf=$(L first_over_cold_memset); sn=$(L setup_over_fresh_memset)
# The target's baseline: memset of a fresh mapping of the same page kind,
# whose page faults (the kernel zeroes each page) setup pays too.
targets+=$'\n'"| Blob prefault+fill (2M pages, pool touched before) <= 2x memset of a fresh 2M mapping (faults included) | local | ${sn}x ($(L prefault_fill_s) s / $(L memset_fresh_s) s) | 2.00x | $(awk -v r="$sn" 'BEGIN{print r <= 2 ? "PASS" : "MISS"}') |"
targets+=$'\n'"| (Blob prefault+fill vs memset over already-faulted pages, for reference) | local | ${sw}x ($(L prefault_fill_s) s / $(L memset_warm_s) s) | - | - |"
targets+=$'\n'"| Blob prefault+fill (2M pages, first touch) <= 2x memset (fresh 4K pages) | local | ${sf}x ($(L first_prefault_fill_s) s / $(L memset_cold_4k_s) s) | 2.00x | $(awk -v r="$sf" 'BEGIN{print r <= 2 ? "PASS" : "MISS"}') |"

localt="| Local rate (one core) | MB/s |
|---|---:|
| CRC32C $(L crc32c_impl), over the $SIZE blob (out of cache), best of $(L crc32c_passes) passes: the limit crc32c-1core | $(L crc32c_best_mb_s) |
| same, median pass | $(L crc32c_mb_s) |
| same, per CPU-second of the hashing thread | $(L crc32c_mb_per_cpu_s) |
| CRC32C $(L crc32c_impl), 64 KiB in cache | $(L crc32c_incache_mb_s) |
| CRC32C portable (slicing-by-8) | $(L crc32c_portable_mb_s) |
| Copy ($(L copy_1t_impl), best of the CPU's kernels), the blob out of cache into a 128 KiB buffer in cache: the limit copy-1t | $(L copy_1t_mb_s) |
| same copy, source in cache | $(L copy_1t_incache_mb_s) |
| FNV-1a 64 | $(L fnv1a64_mb_s) |
| memset, same 2M pages (warm) | $(L memset_warm_mb_s) |
| memset of a fresh 2M mapping, page faults included | $(L memset_fresh_s) s |
| blob page kind obtained: $(L blob.page) (first creation: $(L first_page)) | - |"

report="Command: \`make -C dataplane bench-tcp\` (SIZE=$SIZE BYTES=$BYTES SCP_BYTES=$SCP_BYTES IPERF_SECS=$IPERF_SECS REPS=$REPS NICE=$NICE${PFS_BEFORE:+ PFS_BEFORE=$PFS_BEFORE})
Date: $(date -u '+%Y-%m-%d %H:%M UTC'); kernel $(uname -r); $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))
Load average (1/5/15 min) at start: $load_start; at end: $load_end (other jobs share this machine).

$localt

$table

$targets"
echo
echo "$report"
# The page is this run's output only; the analysis of earlier runs is in
# docs/design/tcp-analysis.md, written by hand.
if [ -n "$OUT_MD" ]; then
	{
		echo "<!-- SPDX-License-Identifier: Apache-2.0 -->"
		echo "# TCP transport benchmark"
		echo
		echo "Written by \`dataplane/bench/tcp.sh\` (\`make -C dataplane bench-tcp\`); one run,"
		echo "every number below measured in that run. MB are decimal (10^6 bytes). MB/CPU-s"
		echo "uses the receiver's own CPU time (getrusage) for pfs and iperf3, and the client's"
		echo "(scp and its ssh) for scp. PFS rows move BYTES effective bytes over a SIZE blob on"
		echo "2 MiB pages; setup (map, prefault, fill, fingerprint) is excluded from their elapsed time."
		echo "The loopback path is 127.0.0.1 inside a fresh network namespace; veth is a veth pair"
		echo "between two fresh namespaces. Wall-clock targets depend on how much CPU the"
		echo "machine leaves to the benchmark (payload mode needs a core per side; in offset and"
		echo "arithmetic modes the sender takes its CRC32C from its blob's CRC index and needs"
		echo "little); the CPU-normalised rows compare CPU cost per byte and do not."
		echo "The first-touch blob row measures the first creation after the hugepage pool was"
		echo "(re)reserved: on this VM the host may not have backed those pages yet, which costs"
		echo "seconds per GiB in the kernel's page faults and swings that row from 0.2x to 4x"
		echo "between runs; the warm-pool row above it is the steady state of a node."
		echo "The payload targets compare with the strongest peer measured in this run, the"
		echo "best median of iperf3, iperf3 -Z, iperf3 -N (TCP_NODELAY, as PFS sets it) and"
		echo "the cold-source iperf3 -N -F and -Z -N -F, named in each row, for wall time and"
		echo "for receiver CPU alike (the report's peer-tcp-<path>). iperf3 is a peer,"
		echo "not a limit: the limit of these paths is one core's copy (copy-1t above)."
		echo
		echo "$report"
	} > "$OUT_MD"
	echo "bench: wrote $OUT_MD" >&2
fi
