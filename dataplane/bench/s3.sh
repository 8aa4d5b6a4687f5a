#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A blob loaded from S3 (docs/design/remote-sources.md): how fast the origin
# reads the store next to the S3 clients people use, and how soon N nodes
# hold the blob next to the alternatives, all in one run against one real
# S3 server (SeaweedFS, hack/s3-server.sh) holding real model files
# (hack/testdata.sh) uploaded with boto3 (hack/s3/s3put.py). Not a test.
#
# The store is a network namespace of its own on a bridge, and so is every
# "node" (a blob directory each, BENCH_LAYOUT in bench/nodes.sh: a tmpfs and
# --layout files by default; veth, MTU 1500), as in fanout.sh:
# every byte read from S3 crosses a veth.
#   source read  node 0 reads each source from S3, ROUNDS times, the order
#                of the tools reversed every other round: the origin (`pfs
#                blob create --source-s3`, --source-threads 4, 8 MiB ranged
#                GETs, into the node's blob, sha256 of every file); s5cmd
#                cp with its defaults and with the origin's 4 parts of 8 MiB
#                per file; `aws s3 cp` (the AWS CLI, its defaults); the
#                origin again with s5cmd's default parts (5 readers of 50
#                MiB: its settings told from its engine); each
#                client into tmpfs, its output compared with the source.
#                The origin is timed by its own timestamps (load: read,
#                sha256, manifest; a blob every node can verify); the
#                clients by their process (no other clock exists for them),
#                and the origin's process time is shown beside them too.
#   time to N    ours: the origin reads S3 and serves what it has read while
#                it reads; node i relays from node i-1, all at once; from
#                the origin's load start to the last relay's verify end.
#                (a) download, then fan out: the origin loads the whole
#                source, then the same relay chain fetches from the loaded
#                blob (its load seconds plus the chain's window).
#                (b) every node downloads from S3 itself at once (what
#                per-node caches do): N `pfs blob create --source-s3` in
#                parallel, first load start to last load end.
#                one hop: a relay fetches a loaded blob from one peer (first
#                byte to verified), and source read alone: the origin's load
#                without relays, both from the same round; the target is
#                ours <= 1.15x max(source read, one hop).
# Every process shares this machine's cores with the S3 server: read the
# ratios, not the absolute rates.
# LINKS: the uplink rates the time to N runs at: "none" (the veth as it is,
# where the shared vCPUs bound every way) or a rate such as "2gbit" (netns_shape)
# on the egress of the store and of every node (a NIC each, as on a
# cluster, where the link and not this machine's two vCPUs is the bound).
# The source read is always measured unshaped: it compares engines.
#   NODES="2 3 4" ROUNDS=3 SOURCES="minilm sudachi mpnet" LINKS="none 1gbit 2gbit" bench/s3.sh
# KEEP=<dir>: the result JSONs of every run of ours kept in
# <dir>/<source>-<link>-<N>-<run>/.
# BENCH_QUICK=1: NODES=3 ROUNDS=1 SOURCES=minilm LINKS=none.
# OUT_MD: the page (default ../docs/bench/bench-s3.md; empty: none).
# BENCH_ROWS: every round as JSON lines (docs/design/bench-rows.md).
# Needs root (network namespaces, mounts; hugepages with BENCH_LAYOUT=flat).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source-path=SCRIPTDIR source=rows.sh
. bench/rows.sh
# shellcheck source-path=SCRIPTDIR source=netns.sh
. bench/netns.sh
# shellcheck source-path=SCRIPTDIR source=nodes.sh
. bench/nodes.sh
die() { echo "bench: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces, mounts)"
for t in bc jq /usr/bin/time nsenter go; do
	command -v "$t" >/dev/null || die "s3.sh needs $t"
done
PFS=$(realpath "${PFS:-build/pfs}")
[ -x "$PFS" ] || die "build pfs first: make -C dataplane"
if [ "${BENCH_QUICK:-0}" = 1 ]; then	# make bench's quick mode
	NODES=${NODES:-3} ROUNDS=${ROUNDS:-1} SOURCES=${SOURCES:-minilm} LINKS=${LINKS:-none}
fi
LINKS=${LINKS:-none 1gbit 2gbit}
NODES=${NODES:-2 3 4}
ROUNDS=${ROUNDS:-3}
SOURCES=${SOURCES:-minilm sudachi mpnet}
OUT_MD=${OUT_MD-$PWD/../docs/bench/bench-s3.md}
PORT=7471
NODE_NS=pfss3-
NET=10.124.0
STORE_IP=$NET.100
W=$(mktemp -d /tmp/pfs-s3.XXXXXX)
maxn=$(tr ' ' '\n' <<<"$NODES" | sort -n | tail -1)
[ "$maxn" -ge 2 ] || die "NODES: at least 2"
added=0 pids=() nss=(pfss3-sw pfss3-st)
for i in $(seq 0 $((maxn - 1))); do nss+=("pfss3-$i"); done

cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	[ ! -d "$W/srv" ] || ../hack/s3-server.sh stop "$W/srv" 2>/dev/null || true
	wait 2>/dev/null || true
	netns_remove "${nss[@]}"
	for m in "$W"/n* "$W/dst"; do umount "$m" 2>/dev/null || true; done
	[ "$added" -gt 0 ] && echo $(($(cat /proc/sys/vm/nr_hugepages) - added)) >/proc/sys/vm/nr_hugepages
	rm -rf "$W"
}
trap cleanup EXIT

calc() { echo "scale=6; $*" | bc -l; }
max() { if [ "$(echo "$1 > $2" | bc -l)" = 1 ]; then echo "$1"; else echo "$2"; fi; }
ip_of() { echo "$NET.$(($1 + 1))"; }

# ---- the network: a switch, the store and the nodes ----
ip netns add pfss3-sw
ip -n pfss3-sw link add br0 type bridge
ip -n pfss3-sw link set br0 up
attach() {	# attach NS IFACE IP: NS on the switch at IP
	ip netns add "$1"
	ip link add "$2" netns "$1" type veth peer name "p$2" netns pfss3-sw
	ip -n pfss3-sw link set "p$2" master br0 up
	ip -n "$1" addr add "$3/24" dev "$2"
	ip -n "$1" link set "$2" up
	ip -n "$1" link set lo up
}
attach pfss3-st s3st "$STORE_IP"
# shape <rate|none>: the store's and every node's uplink (its veth's egress).
shape() {
	local ns dev i
	for i in st $(seq 0 $((maxn - 1))); do
		ns=pfss3-$i dev=s3n$i
		[ "$i" = st ] && dev=s3st
		netns_shape "$ns" "$dev" "$1"
	done
}
for i in $(seq 0 $((maxn - 1))); do
	attach "pfss3-$i" "s3n$i" "$(ip_of "$i")"
	mount_node "$W/n$i"
done
mkdir -p "$W/dst"
mount -t tmpfs -o mode=0700 none "$W/dst"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$W/token"

# ---- the tools: the store, the uploader, the clients ----
S5CMD=$(../hack/s3/s5cmd.sh)
AWS=$(../hack/python-venv.sh bench/s3-requirements.txt)/bin/aws
BOTO=$(../hack/python-venv.sh ../hack/s3/requirements.txt)/bin/python
WEED=$(../hack/s3-server.sh bin)
# The store lives in its namespace: every GET crosses its veth.
env=$(nsenter --net=/run/netns/pfss3-st ../hack/s3-server.sh start "$W/srv" --bind "$STORE_IP")
eval "export $env"
mkdir -m 0700 "$W/creds"
printf '%s' "$S3_ACCESS_KEY" >"$W/creds/AWS_ACCESS_KEY_ID"
printf '%s' "$S3_SECRET_KEY" >"$W/creds/AWS_SECRET_ACCESS_KEY"
# The clients take their keys from the environment, and no one's config.
export AWS_ACCESS_KEY_ID=$S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$S3_SECRET_KEY \
	AWS_REGION=$S3_REGION AWS_DEFAULT_REGION=$S3_REGION \
	AWS_CONFIG_FILE=$W/none AWS_SHARED_CREDENTIALS_FILE=$W/none

# Each source: a directory (minilm) or one big file (sudachi's system.dic,
# mpnet's model.safetensors), uploaded under its name.
src_path() {
	case $1 in
	minilm) ../hack/testdata.sh path minilm ;;
	sudachi) echo "$(../hack/testdata.sh path sudachi)/system.dic" ;;
	mpnet) echo "$(../hack/testdata.sh path mpnet)/model.safetensors" ;;
	*) die "unknown source $1 (minilm, sudachi, mpnet)" ;;
	esac
}
declare -A SRC KEY
for s in $SOURCES; do
	SRC[$s]=$(src_path "$s")
	if [ -d "${SRC[$s]}" ]; then KEY[$s]=$s/; else KEY[$s]=$s/$(basename "${SRC[$s]}"); fi
	in_ns 0 "$BOTO" ../hack/s3/s3put.py "${SRC[$s]}" bench "$s" >"$W/put-$s.json"
done

# 2 MiB pages: every node holds the largest source once.
reserve_hugepages "$maxn" "${SRC[@]}"

# ---- pfs on the nodes ----
ORIGIN=()	# the origin's reader settings: its defaults unless set
s3src() {	# the origin's options for the current source
	echo --source-s3 "bench/${KEY[$s]}" --source-s3-endpoint "$S3_ENDPOINT" \
		--source-s3-region "$S3_REGION" --source-credentials "$W/creds" "${ORIGIN[@]}"
}
load() {	# load <node> [listen]: the node reads the current source from S3
	# shellcheck disable=SC2046
	timed "$1" "$W/r$1" $(create "$1" "$size" $(s3src)) ${2:+--replicate-listen "$(ip_of "$1"):$PORT" --replicate-linger 1s}
}
relay() {	# relay <node> <from-list> [listen]
	# shellcheck disable=SC2046
	timed "$1" "$W/r$1" $(create "$1" "$size" --fetch-from "$2") ${3:+--replicate-listen "$(ip_of "$1"):$PORT" --replicate-linger 1s}
}
check() {	# check <first> <last>: nodes first..last hold the blob, verified, one digest
	local i want
	want=$(sect manifest "$W/r0" | field sha256)
	[ -n "$want" ] || die "node 0: no manifest: $(cat "$W/r0")"
	for i in $(seq "$1" "$2"); do
		[ "$(field ok <"$W/r$i")" = true ] || die "node $i failed: $(cat "$W/r$i")"
		[ "$(sect manifest "$W/r$i" | field sha256)" = "$want" ] || die "node $i: another sha256"
		[ "$i" = 0 ] || [ "$(sect fetch "$W/r$i" | field verified)" = true ] ||
			[ -n "$(sect source "$W/r$i" | field t1_unix)" ] || die "node $i not verified"
	done
}
load_s() { sect source "$W/r$1" | field seconds; }
fetch_t0() { sect fetch "$W/r$1" | field t0_unix; }
# window <first> <last>: first fetch start to last verify end of those relays.
window() {
	local i t0="" t1=0 a
	for i in $(seq "$1" "$2"); do
		a=$(fetch_t0 "$i")
		[ -z "$t0" ] || [ "$(echo "$a < $t0" | bc)" = 1 ] && t0=$a
		t1=$(max "$(done_at "$i")" "$t1")
	done
	calc "$t1 - $t0"
}
chain() {	# chain <n>: relays 1..n-1 at once, node i from node i-1
	local n=$1 i rp=() l
	for i in $(seq 1 $((n - 1))); do
		l=
		[ "$i" -lt $((n - 1)) ] && l=listen # the last one serves nobody
		relay "$i" "$(from "$i")" "$l" &
		rp+=($!)
	done
	for i in "${rp[@]}"; do wait "$i"; done
}

# ---- the ways to N nodes; each prints seconds ----
run_ours() {	# -> "seconds origin-load-seconds tail-seconds last-verify-seconds"
	local n=$1 i last=0 lv=0 op
	load 0 listen &
	op=$!
	chain "$n"
	wait "$op"
	check 0 $((n - 1))
	keep_results "$s-$link-$n"
	for i in $(seq 1 $((n - 1))); do
		[ "$(echo "$(done_at "$i") > $last" | bc)" = 1 ] || continue
		last=$(done_at "$i") lv=$(sect fetch "$W/r$i" | field verify_seconds)
	done
	# Where the time beyond the source read goes: the origin's own load
	# (slower than alone when relays share the cores), and the tail after
	# it: the last relay's verify after its last byte (what its hashers had
	# left with the files layout, a whole sha256 pass with flat).
	echo "$(calc "$last - $(sect source "$W/r0" | field t0_unix)") $(load_s 0)" \
		"$(calc "$last - $(sect source "$W/r0" | field t1_unix)") $lv"
}
run_then_fan() {	# (a)
	local n=$1 t
	load 0
	t=$(load_s 0)
	serve_bg 0
	chain "$n"
	stop_bg
	check 0 $((n - 1))
	calc "$t + $(window 1 $((n - 1)))"
}
run_each() {	# (b)
	local n=$1 i rp=() t0="" t1=0 a
	for i in $(seq 0 $((n - 1))); do
		load "$i" &
		rp+=($!)
	done
	for i in "${rp[@]}"; do wait "$i"; done
	check 0 $((n - 1))
	for i in $(seq 0 $((n - 1))); do
		a=$(sect source "$W/r$i" | field t0_unix)
		[ -z "$t0" ] || [ "$(echo "$a < $t0" | bc)" = 1 ] && t0=$a
		t1=$(max "$(sect source "$W/r$i" | field t1_unix)" "$t1")
	done
	calc "$t1 - $t0"
}
run_one_hop() {	# -> "source-read-seconds one-hop-seconds"
	local t
	load 0
	t=$(load_s 0)
	serve_bg 0
	relay 1 "$(ip_of 0):$PORT"
	stop_bg
	check 0 1
	echo "$t $(window 1 1)"
}

# ---- the source read: the origin and the clients, node 0 into memory ----
# Each prints "wall user sys" seconds of its process.
clear_dst() { find "$W/dst" -mindepth 1 -delete; }
same_as_src() {	# the client's copy is the source, byte for byte
	if [ -d "${SRC[$s]}" ]; then diff -r "${SRC[$s]}" "$W/dst" >/dev/null
	else cmp -s "${SRC[$s]}" "$W/dst/$(basename "${SRC[$s]}")"; fi ||
		die "$1: its copy of $s differs from the source"
}
now() { date +%s.%N; }	# /usr/bin/time's wall clock has only 10 ms
client() {	# client <name> <command...>
	local name=$1 t0 t1; shift
	clear_dst
	t0=$(now)
	in_ns 0 /usr/bin/time -f "%U %S" -o "$W/client.cpu" "$@" >"$W/client.log" 2>&1 ||
		die "$name failed: $(tail -5 "$W/client.log")"
	t1=$(now)
	same_as_src "$name"
	echo "$(calc "$t1 - $t0") $(cat "$W/client.cpu")"
}
s3url() { if [ -d "${SRC[$s]}" ]; then echo "s3://bench/$s/*"; else echo "s3://bench/${KEY[$s]}"; fi; }
read_s5cmd() { client s5cmd "$S5CMD" --endpoint-url "$S3_ENDPOINT" cp "$(s3url)" "$W/dst/"; }
read_s5cmd_4() {
	client s5cmd "$S5CMD" --endpoint-url "$S3_ENDPOINT" cp --concurrency 4 --part-size 8 "$(s3url)" "$W/dst/"
}
read_aws() {
	if [ -d "${SRC[$s]}" ]; then
		client "aws s3 cp" "$AWS" --endpoint-url "$S3_ENDPOINT" s3 cp --recursive --only-show-errors \
			"s3://bench/$s/" "$W/dst/"
	else
		client "aws s3 cp" "$AWS" --endpoint-url "$S3_ENDPOINT" s3 cp --only-show-errors \
			"s3://bench/${KEY[$s]}" "$W/dst/"
	fi
}
read_pfs() {	# "load-seconds read-seconds wall user sys"
	local t0 t1
	t0=$(now)
	load 0
	t1=$(now)
	check 0 0
	echo "$(load_s 0) $(sect source "$W/r0" | field read_seconds) $(calc "$t1 - $t0") $(cat "$W/r0.cpu")"
}
read_pfs_5() {	# the origin with s5cmd's default parts: are the settings the gap?
	ORIGIN=(--source-threads 5 --source-chunk 50M)
	read_pfs
	ORIGIN=()
}

TOOLS=(pfs pfs_5 s5cmd s5cmd_4 aws)
declare -A LABEL=(
	[pfs]="PacketFS origin (pfs blob create --source-s3, 4 readers, 8 MiB GETs)"
	[pfs_5]="PacketFS origin, s5cmd's parts (--source-threads 5 --source-chunk 50M)"
	[s5cmd]="s5cmd cp (its defaults)"
	[s5cmd_4]="s5cmd cp --concurrency 4 --part-size 8 (the origin's)"
	[aws]="AWS CLI aws s3 cp (its defaults)"
)
mb() { awk -v b="$1" 'BEGIN { printf "%.6f", b / 1e6 }'; }
rate() { awk -v b="$1" -v t="$2" 'BEGIN { printf "%.1f", b / 1e6 / t }'; }

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$W/read.tsv"
: >"$W/nodes.tsv"
for s in $SOURCES; do
	# shellcheck disable=SC2046
	j=$(in_ns 0 "$PFS" -q blob create $(s3src) --dry-run)
	size=$(field needed <<<"$j")
	bytes=$(field bytes <<<"$j")
	files=$(field files <<<"$j")
	declare -A SEC=() CPU=()
	for r in $(seq "$ROUNDS"); do
		order=("${TOOLS[@]}")
		# Every other round in reverse: no tool always goes first.
		[ $((r % 2)) = 1 ] || order=(aws s5cmd_4 s5cmd pfs_5 pfs)
		for t in "${order[@]}"; do
			read -r a b c d e <<<"$("read_$t")"
			peer=peer-s3-read-$s key=$peer purpose=Peer note="$files files; its process, into tmpfs; output compared with the source"
			if [ "$t" = pfs ] || [ "$t" = pfs_5 ]; then
				SEC[${t}_load]+=" $a" SEC[${t}_read]+=" $b" SEC[${t}_wall]+=" $c"
				CPU[$t]+=" $(calc "$d + $e")"
				bench_row suite=s3 path="S3 read, $s" label="${LABEL[$t]}" purpose=Transfer \
					size_mb="$(mb "$bytes")" elapsed_s="$a" user_s="$d" sys_s="$e" integrity=OK \
					pthreads="$([ "$t" = pfs ] && echo 4 || echo 5)" \
					notes="$files files; load seconds (read, sha256, manifest) by its own clock; read alone $(rate "$bytes" "$b") MB/s, its process $(rate "$bytes" "$c") MB/s" \
					peer="$peer"
			else
				SEC[$t]+=" $a" CPU[$t]+=" $(calc "$b + $c")"
				bench_row suite=s3 path="S3 read, $s" label="${LABEL[$t]}" purpose=$purpose \
					size_mb="$(mb "$bytes")" elapsed_s="$a" user_s="$b" sys_s="$c" integrity=OK pthreads=1 \
					notes="$note" key="$key"
			fi
		done
	done
	printf '%s\t%s\t%s' "$s" "$files" "$bytes" >>"$W/read.tsv"
	for k in pfs_load pfs_read pfs_wall s5cmd s5cmd_4 aws; do printf '\t%s' "$(median <<<"${SEC[$k]}")" >>"$W/read.tsv"; done
	for k in pfs s5cmd s5cmd_4 aws; do printf '\t%s' "$(median <<<"${CPU[$k]}")" >>"$W/read.tsv"; done
	printf '\t%s\t%s' "$(median <<<"${SEC[pfs_5_load]}")" "$(median <<<"${CPU[pfs_5]}")" >>"$W/read.tsv"
	echo >>"$W/read.tsv"

	for link in $LINKS; do
		shape "$link"
		SEC=()
		for r in $(seq "$ROUNDS"); do
			read -r sr hop <<<"$(run_one_hop)"
			SEC[read]+=" $sr" SEC[hop]+=" $hop"
			lim=$(max "$sr" "$hop")
			bench_row suite=s3 path="S3 to nodes, link $link, $s, the limit" label="max(source read alone, one hop)" \
				purpose=Limit size_mb="$(mb "$bytes")" elapsed_s="$lim" integrity=OK pthreads=1 \
				notes="$(printf 'source read alone %.4f s (the origin load), one hop %.4f s (first byte to verified), same round' "$sr" "$hop")" \
				key="s3-limit-$link-$s"
			for n in $NODES; do
				ways=(ours then_fan each)
				[ $((r % 2)) = 1 ] || ways=(each then_fan ours)
				for w in "${ways[@]}"; do
					read -r t ol tail lv <<<"$("run_$w" "$n")"
					SEC[$w-$n]+=" $t"
					[ "$w" != ours ] || SEC[ol-$n]+=" $ol" SEC[tail-$n]+=" $tail" SEC[lv-$n]+=" $lv"
					case $w in
					ours) bench_row suite=s3 path="S3 to N nodes, link $link, $s, N=$n" label="PacketFS: origin reads S3, relays cut through" \
						purpose=Transfer size_mb="$(mb "$bytes")" elapsed_s="$t" integrity=OK pthreads=1 \
						notes="$(printf "origin load start to the last relay's verify end (data-plane clocks); the origin's load %.3f s, then %.3f s to the end, the last relay's verify %.3f s" "$ol" "$tail" "$lv")" \
						peer="peer-s3-$link-$s-$n" limit="s3-limit-$link-$s" ;;
					then_fan) bench_row suite=s3 path="S3 to N nodes, link $link, $s, N=$n" label="(a) download, then fan out (the same relay chain)" \
						purpose=Peer size_mb="$(mb "$bytes")" elapsed_s="$t" integrity=OK pthreads=1 \
						notes="the origin's load seconds plus the chain's first byte to last verify" key="peer-s3-$link-$s-$n" ;;
					each) bench_row suite=s3 path="S3 to N nodes, link $link, $s, N=$n" label="(b) every node downloads from S3 (N pfs loads at once)" \
						purpose=Peer size_mb="$(mb "$bytes")" elapsed_s="$t" integrity=OK pthreads=1 \
						notes="first load start to last load end (data-plane clocks)" key="peer-s3-$link-$s-$n" ;;
					esac
				done
			done
		done
		for n in $NODES; do
			printf '%s\t%s\t%s' "$s" "$bytes" "$n" >>"$W/nodes.tsv"
			for k in "ours-$n" "then_fan-$n" "each-$n" read hop "ol-$n" "tail-$n" "lv-$n"; do
				printf '\t%s' "$(median <<<"${SEC[$k]}")" >>"$W/nodes.tsv"
			done
			printf '\t%s\n' "$link" >>"$W/nodes.tsv"
		done
	done
	shape none
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- the tables (stdout) and the page ----
tables() {
	echo "### Source read: node 0 from the S3 server into memory (median of $ROUNDS)"
	echo
	echo "| source | files | bytes | origin load MB/s | origin read MB/s | origin process MB/s | origin 5x50 MiB load MB/s | s5cmd MB/s | s5cmd 4x8 MiB MB/s | AWS CLI MB/s | origin / strongest client | strongest client | CPU-s origin / origin 5x50 / s5cmd / s5cmd 4x8 / AWS CLI |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
	awk -F'\t' '{
		b = $3; n["s5cmd"] = $7; n["s5cmd 4x8 MiB"] = $8; n["AWS CLI"] = $9
		best = ""; for (k in n) if (best == "" || n[k] < n[best]) best = k
		printf "| %s | %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.2fx | %s | %.2f / %.2f / %.2f / %.2f / %.2f |\n",
			$1, $2, b, b/1e6/$4, b/1e6/$5, b/1e6/$6, b/1e6/$14, b/1e6/$7, b/1e6/$8, b/1e6/$9, n[best]/$4, best, $10, $15, $11, $12, $13
	}' "$W/read.tsv"
	echo
	echo "### Time to N nodes from S3 (seconds, median of $ROUNDS)"
	echo
	echo "| link | source | bytes | N | ours | (a) download, then fan out | (b) every node from S3 | source read alone | one hop | ours / max(read, hop) | target <= 1.15x | (a) / ours | (b) / ours | in ours: origin load / after it / last verify |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|"
	awk -F'\t' '{
		lim = ($7 > $8) ? $7 : $8; q = $4 / lim
		printf "| %s | %s | %s | %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.2fx | %s | %.2fx | %.2fx | %.3f / %.3f / %.3f |\n",
			$12, $1, $2, $3, $4, $5, $6, $7, $8, q, (q <= 1.15) ? "met" : "missed", $5 / $4, $6 / $4, $9, $10, $11
	}' "$W/nodes.tsv"
}
verdicts() {
	awk -F'\t' '{
		n["s5cmd (defaults)"] = $7; n["s5cmd (4 parts of 8 MiB)"] = $8; n["the AWS CLI"] = $9
		best = ""; for (k in n) if (best == "" || n[k] < n[best]) best = k
		q = n[best] / $4
		printf "- %s: the origin read the store at %.2fx the rate of the strongest client measured, %s (%.2fx s5cmd with its defaults); target >= 1.0x (of the strongest): %s. By the same process clock as the clients: %.2fx; with s5cmd\047s parts (5 readers of 50 MiB), the origin load at %.2fx the strongest client.\n",
			$1, q, best, $7 / $4, (q >= 1.0) ? "met" : "missed", n[best] / $6, n[best] / $14
	}' "$W/read.tsv"
	awk -F'\t' '{
		lim = ($7 > $8) ? $7 : $8; q = $4 / lim
		printf "- link %s, %s, %s nodes: ours took %.2fx max(source read, one hop) (target <= 1.15x: %s); (a) took %.2fx and (b) %.2fx of ours. In ours the origin load took %.2fx the load alone, and the last relay\047s verify after its last byte was %.0f%% of the time.\n",
			$12, $1, $3, q, (q <= 1.15) ? "met" : "missed", $5 / $4, $6 / $4, $9 / $7, 100 * $11 / $4
	}' "$W/nodes.tsv"
}
tables
echo
verdicts

[ -n "$OUT_MD" ] || exit 0
{
	page_top s3.sh bench-s3 "Loading a blob from S3: the origin's read and the time to N nodes"
	echo " ($(cpu_model)), kernel $(uname -r)," \
		"load average $load_before before and $load_after after. Rounds: $ROUNDS; sources: $SOURCES; nodes: $NODES."
	echo "How the data plane reads a store: [remote-sources.md](../design/remote-sources.md); the fan-out:"
	echo "[fanout.md](../design/fanout.md)."
	echo
	echo "The store is a real S3 server, SeaweedFS ($("$WEED" version 2>/dev/null | head -1 | sed 's/^version //'))," \
		"with SigV4 authentication on, in a network namespace of its own on one bridge with the nodes" \
		"(veth, MTU 1500); the objects are real model files from pinned PyPI wheels" \
		"(hack/testdata.sh), uploaded with boto3. Clients: s5cmd $("$S5CMD" version), built from the Go" \
		"module proxy, and the AWS CLI $("$AWS" --version 2>&1 | cut -d' ' -f1 | cut -d/ -f2) from PyPI."
	echo "Everything (the store, the origin, the relays, the clients) shares the same $(nproc) vCPUs:"
	echo "read the ratios, not the absolute rates."
	echo
	echo "**Source read.** Node 0 reads each source from the store, the tools taking turns (the order"
	echo "reversed every other round). The origin (\`pfs blob create --source-s3\`: 4 reader threads, 8 MiB"
	echo "ranged GETs, into the node's blob, the sha256 of every file) is timed by its own clock:"
	echo "*load* is read, sha256 and manifest, a blob every node can verify (the verdict uses it);"
	echo "*read* the reads alone; *process* the whole \`pfs\` process, listing and blob set-up included,"
	echo "the same clock as the clients'. The origin runs a second time with s5cmd's default parts (5"
	echo "readers of 50 MiB GETs), to tell its settings from its engine; the verdict uses its defaults."
	echo "s5cmd runs twice: with its defaults (up to 5 parts of 50 MiB"
	echo "per file, 256 workers across files) and with the origin's 4 parts of 8 MiB; the AWS CLI with its"
	echo "defaults (10 requests of 8 MiB). Each client writes into tmpfs, and its copy is compared with"
	echo "the source afterwards. CPU-s: user + system of the tool's process (the store's are not counted)."
	echo
	echo "**Time to N nodes.** *Ours*: the origin reads S3 and serves what it has read while it reads;"
	echo "node i relays from node i-1, all at once; from the origin's load start to the last relay's"
	echo "verify end, by the data plane's clocks (no process start-up). *(a)*: the origin loads the whole"
	echo "source, then the same relay chain fetches from the loaded blob (load seconds plus the chain's"
	echo "first byte to last verify). *(b)*: every node reads the store itself at once, N"
	echo "\`pfs blob create --source-s3\` in parallel (the strongest per-node reader measured above),"
	echo "first load start to last load end. *Source read alone* is the origin's load without relays,"
	echo "*one hop* a relay fetching a loaded blob from one peer (first byte to verified), both measured"
	echo "in every round; the target is ours <= 1.15x the larger of the two. The last column splits ours:"
	echo "the origin's own load during it, the time after that load until the last relay had verified,"
	echo "and of that the last relay's verify after its last byte."
	echo
	echo "**Links** ($LINKS): the time to N nodes runs at each. *none* is the veth as it is: no link"
	echo "binds, so the shared vCPUs do, and every process added (a relay, a second reader) slows the"
	echo "store and the others. A rate shapes the egress of the store's veth and of every node's"
	echo "(\`netns_shape\` in bench/netns.sh: HTB at the rate, pure ACKs first as fq_codel would serve"
	echo "them): a NIC each, as on a cluster, where a store read or a hop is bound by its link. The"
	echo "store's uplink is shared by every node reading from it, as in (b). The source read above"
	echo "is always unshaped: it compares readers, not links."
	echo
	echo "**Layout** ($BENCH_LAYOUT): $(layout_words)."
	echo
	tables
	echo
	echo "## Verdicts"
	echo
	verdicts
	echo
	echo "Limits of this machine: the S3 server, the origin, every relay and every client run on the"
	echo "same vCPUs, so N nodes (or N downloads at once in (b)) compete with the store for CPU instead"
	echo "of each having its own; on a cluster each node brings its own cores and NIC. Each BENCH_ROWS"
	echo "row (docs/design/bench-rows.md) is one round; \`make bench\` puts them in the one report."
} >"$OUT_MD"
echo "bench: wrote $OUT_MD" >&2
