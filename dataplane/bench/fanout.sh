#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Time for a blob loaded from real files to reach N nodes, PacketFS fan-out
# next to the alternatives, all in one run (docs/design/fanout.md). Not a test.
#
# Each "node" is a network namespace with its own blob directory (a tmpfs
# and --layout files as under the CSI plugin; BENCH_LAYOUT=flat: hugetlbfs,
# bench/nodes.sh), all on one bridge (veth, MTU 1500 like a pod network). For every source
# (real files from pinned PyPI wheels, hack/testdata.sh) and N in NODES:
#   pipelined  ours: the origin loads the source and serves what it has
#              read; node i relays from node i-1 (cut-through), all at once;
#              timed from the origin's load start to the last relay's
#              verify end (data-plane timestamps)
#   store-fwd  (a) the origin loads, then node 1 copies it whole, then node
#              2 from node 1, ... (a naive chain, `kubectl cp` one by one)
#   from-origin (b) the origin loads, then every node fetches from it at
#              once (per-node download caches)
#   one-hop    (c) one node fetches a loaded blob from one peer: the limit
# The alternatives are timed the same way: the origin's load seconds plus
# the relays' windows (first byte received to verify end), so no process
# start-up is counted anywhere. Reported: seconds, bytes
# read from the source, and CPU seconds per GiB per hop (user+sys of every
# relay process over the bytes each received). Every node shares this
# machine's cores, so the hops compete for CPU: read the ratios.
# LINKS lists node uplink rates to run the whole table at: "none" (the
# veths as they are: every hop is bound by this machine's shared CPU) and
# e.g. "2gbit" (netns_shape in netns.sh, on every node's egress: a node's NIC, so the hops are
# bound by the network as on a real cluster, and one origin serving every
# node shares its uplink).
# TRANSPORTS: the pipelined chain of the largest source again with the
# relays fetching over each of these (--fetch-transport), a second table.
#   NODES="2 3 4" ROUNDS=3 SOURCES="minilm sudachi" LINKS="none 2gbit" \
#   TRANSPORTS="tcp udp afxdp" bench/fanout.sh
# SLOW: "<node>:<rate>" (default 1:500mbit; empty: none), a node whose
# uplink is slower than the others' (docs/design/fanout.md "A slow relay"):
# at each shaped link of LINKS, the pipelined chain of the largest source
# at the largest N with that node's uplink at <rate>, with the step-aside
# rule (every relay but the last gets --fetch-tail: the last node) and
# without it (--relay-lag-max 0), a third table.
# SWARM=1 (default; 0: none): the same nodes through a BitTorrent swarm
# (bench/swarm.sh: aria2c, opentracker; Debian packages it installs when
# missing), a table beside ours and a line on the chart.
# KEEP=<dir>: the result JSONs of every pipelined run kept there.
# BENCH_QUICK=1: NODES=3 ROUNDS=1 SOURCES=minilm LINKS=none TRANSPORTS=tcp.
# OUT_MD: the page of this run's tables and model (default
# ../docs/bench/bench-fanout.md; empty: none); they also go to stdout.
# BENCH_ROWS: every round as JSON lines (docs/design/bench-rows.md): the blob's MB
# over the seconds until every node holds it, the one-hop rate as the limit.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source-path=SCRIPTDIR source=rows.sh
. bench/rows.sh
# shellcheck source-path=SCRIPTDIR source=nodes.sh
. bench/nodes.sh
# shellcheck source-path=SCRIPTDIR source=netns.sh
. bench/netns.sh
for t in bc /usr/bin/time nsenter jq; do
	command -v "$t" >/dev/null || { echo "fanout.sh needs $t (Debian: bc, time, util-linux, jq)" >&2; exit 1; }
done
PFS=$(realpath "${PFS:-build/pfs}")
ZCTX=$(realpath "${ZCTX:-build/bench/zctx}")
[ -x "$ZCTX" ] || { echo "fanout.sh needs $ZCTX (make -C dataplane build/bench/zctx)" >&2; exit 1; }
if [ "${BENCH_QUICK:-0}" = 1 ]; then	# make bench's quick mode
	NODES=${NODES:-3} ROUNDS=${ROUNDS:-1} SOURCES=${SOURCES:-minilm} LINKS=${LINKS:-none}
	TRANSPORTS=${TRANSPORTS:-tcp}
fi
NODES=${NODES:-2 3 4}
ROUNDS=${ROUNDS:-3}
SOURCES=${SOURCES:-minilm sudachi}
LINKS=${LINKS:-none 2gbit}
TRANSPORTS=${TRANSPORTS:-tcp udp afxdp}
SLOW=${SLOW-1:500mbit}
FETCH=()
TAIL=0 # run_pipelined: relays but the last get --fetch-tail (the last node)
EXCLUDE=-1 # run_pipelined: the node left out of "every node" (the slow one) # --fetch-transport for the relays of the transport table
PORT=7470
NODE_NS=pfsfan
OUT_MD=${OUT_MD-../docs/bench/bench-fanout.md}
W=$(mktemp -d /tmp/pfs-fanout.XXXXXX)
maxn=$(tr ' ' '\n' <<<"$NODES" | sort -n | tail -1)
added=0 pids=()

cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	for i in $(seq 0 "$maxn"); do
		umount "$W/n$i" 2>/dev/null || true
		ip netns del "pfsfan$i" 2>/dev/null || true
	done
	ip netns del pfsfan-sw 2>/dev/null || true
	[ "$added" -gt 0 ] && echo $(($(cat /proc/sys/vm/nr_hugepages) - added)) >/proc/sys/vm/nr_hugepages
	rm -rf "$W"
}
trap cleanup EXIT

ip_of() { echo "10.123.0.$(($1 + 1))"; }

# The switch and the nodes.
ip netns add pfsfan-sw
ip -n pfsfan-sw link add br0 type bridge
ip -n pfsfan-sw link set br0 up
for i in $(seq 0 $((maxn - 1))); do
	ip netns add "pfsfan$i"
	ip link add "fan$i" netns "pfsfan$i" type veth peer name "port$i" netns pfsfan-sw
	ip -n pfsfan-sw link set "port$i" master br0 up
	ip -n "pfsfan$i" addr add "$(ip_of "$i")/24" dev "fan$i"
	ip -n "pfsfan$i" link set "fan$i" up
	ip -n "pfsfan$i" link set lo up
	mount_node "$W/n$i"
done
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$W/token"

data=$(../hack/testdata.sh stage 2>/dev/null || true)
[ -n "$data" ] || data=$(dirname "$(../hack/testdata.sh path minilm)")
src_path() { case $1 in minilm | sudachi) echo "$data/$1" ;; *) echo "$1" ;; esac; }

# 2 MiB pages: every node holds the largest source once.
srcs=()
for s in $SOURCES; do srcs+=("$(src_path "$s")"); done
reserve_hugepages "$maxn" "${srcs[@]}"

cpu() { awk '{print $1 + $2}' "$1.cpu"; }

# load_origin <src> <size> <listen?>: node 0 reads the source.
load_origin() {
	# shellcheck disable=SC2046
	timed 0 "$W/r0" $(create 0 "$2" --source "$1") ${3:+--replicate-listen "$(ip_of 0):$PORT" --replicate-linger 1s}
}
relay() { # relay <node> <size> <from-list> <listen|-> [pfs options...]
	local i=$1 size=$2 up=$3 l=$4
	shift 4
	# shellcheck disable=SC2046
	timed "$i" "$W/r$i" $(create "$i" "$size" --fetch-from "$up") \
		$([ "$l" = listen ] && echo --replicate-listen "$(ip_of "$i"):$PORT" --replicate-linger 1s) \
		"${FETCH[@]}" "$@"
}
check() { # every relay verified, one digest
	local i want
	want=$(sect manifest "$W/r0" | field sha256)
	for i in $(seq 1 $(($1 - 1))); do
		[ "$(field ok <"$W/r$i")" = true ] || { echo "node $i failed: $(cat "$W/r$i")" >&2; exit 1; }
		[ "$(sect fetch "$W/r$i" | field verified)" = true ] || { echo "node $i not verified" >&2; exit 1; }
		[ "$(sect manifest "$W/r$i" | field sha256)" = "$want" ] || { echo "node $i: other sha256" >&2; exit 1; }
	done
	[ -n "$want" ]
}
# parts <n>: over the relays of the last run, tab-separated: CPU seconds
# (user+sys), hashing CPU seconds (the chunk hashers' own), bytes received,
# datagrams handled (received, and sent on to the next relay; 0 over TCP).
parts() {
	local i c=0 h=0 b=0 d=0 r=()
	for i in $(seq 1 $(($1 - 1))); do
		c=$(echo "$c + $(cpu "$W/r$i")" | bc -l)
		h=$(echo "$h + $(sect chunks "$W/r$i" | field hash_busy_s)" | bc -l)
		b=$((b + $(sect fetch "$W/r$i" | field bytes)))
		r[i]=$(sed -n 's/.*"dgrams":{"received":\([0-9]*\).*/\1/p' "$W/r$i")
		d=$((d + ${r[i]:-0}))
		[ "$i" -gt 1 ] && d=$((d + ${r[i]:-0})) # relay i-1 sent them
	done
	printf '%s\t%s\t%s\t%s\n' "$c" "$h" "$b" "$d"
}
# floor <tcp-writev|udp-gso> <file>: CPU seconds per GiB of one send and one
# receive of <file> from node 0 to node 1 without pfs (bench/zctx: TCP in
# 1 MiB writev grams as pfs sends them, UDP in GSO sends): what a hop's
# transport costs on this host, the least a relay can spend besides hashing.
floor() {
	local out rcv
	in_ns 1 "$ZCTX" recv 7711 "${1%%-*}" >"$W/zr" &
	sleep 0.3
	out=$(in_ns 0 "$ZCTX" send "$(ip_of 1)" 7711 "$2" "$1")
	wait $!
	rcv=$(cat "$W/zr")
	awk -v s="$out" -v r="$rcv" 'BEGIN { split(s, a, " "); split(r, b, " ");
		printf "%.3f", (a[3] / (a[1] / 1073741824)) + (b[1] > 0 ? b[3] / (b[1] / 1073741824) : 0) }'
}
# cpu_per_gib <n>: relay CPU seconds per GiB received, summed over relays.
cpu_per_gib() {
	local i c=0 b=0
	for i in $(seq 1 $(($1 - 1))); do
		c=$(echo "$c + $(cpu "$W/r$i")" | bc -l)
		b=$(echo "$b + $(sect fetch "$W/r$i" | field bytes)" | bc)
	done
	echo "scale=3; $c * 1073741824 / $b" | bc -l
}

run_pipelined() { # -> seconds; also leaves the origin's bytes served in $W/served
	local n=$1 s=$2 size=$3 i t0 t1 last=0 rp=()
	load_origin "$s" "$size" listen &
	rp+=($!)
	for i in $(seq 1 $((n - 1))); do
		# The last relay serves too when others may move to it (TAIL).
		local tail=()
		[ "$TAIL" = 1 ] && [ "$i" -lt $((n - 1)) ] && tail=(--fetch-tail "$(ip_of $((n - 1))):$PORT")
		relay "$i" "$size" "$(from "$i")" \
			"$([ "$i" -lt $((n - 1)) ] || [ "$TAIL" = 1 ] && echo listen || echo -)" "${tail[@]}" &
		rp+=($!)
	done
	for i in "${rp[@]}"; do wait "$i"; done
	check "$n"
	t0=$(sect source "$W/r0" | field t0_unix)
	for i in $(seq 1 $((n - 1))); do
		# A relay is done once it verified what it received.
		t1=$(done_at "$i")
		[ "$i" = "$EXCLUDE" ] && { echo "$t1 - $t0" | bc -l >"$W/excluded"; continue; }
		[ "$(echo "$t1 > $last" | bc)" = 1 ] && last=$t1
	done
	sect repl "$W/r0" | field bytes_served >"$W/served"
	# The hashing time of relay 1, for the model's verify rate: what its
	# hashers spent on the chunk digests (BLAKE3, while receiving), else on
	# files (sha256) while receiving, else its pass after the last byte.
	if [ "$(sect fetch "$W/r1" | field verified_by)" = chunks ]; then
		sect chunks "$W/r1" | field hash_busy_s
	elif [ "$(sect fetch "$W/r1" | field verify_streamed)" = true ]; then
		sect fetch "$W/r1" | field verify_busy_seconds
	else
		sect fetch "$W/r1" | field verify_seconds
	fi >"$W/verify"
	keep_results pipelined
	echo "$last - $t0" | bc -l
}
# The alternatives are timed by the data plane too (no process start-up or
# hand-over sleeps counted): the origin's load, then the relays' windows.
load_s() { sect source "$W/r0" | field seconds; }
run_store_fwd() {
	local n=$1 s=$2 size=$3 i t
	load_origin "$s" "$size"
	t=$(load_s)
	for i in $(seq 1 $((n - 1))); do
		serve_bg $((i - 1))
		relay "$i" "$size" "$(ip_of $((i - 1))):$PORT" -
		stop_bg
		t=$(echo "$t + $(done_at "$i") - $(sect fetch "$W/r$i" | field t0_unix)" | bc -l)
	done
	check "$n"
	echo "$t"
}
run_from_origin() {
	local n=$1 s=$2 size=$3 i t0="" t1=0 rp=()
	load_origin "$s" "$size"
	serve_bg 0
	for i in $(seq 1 $((n - 1))); do
		relay "$i" "$size" "$(ip_of 0):$PORT" - &
		rp+=($!)
	done
	for i in "${rp[@]}"; do wait "$i"; done
	stop_bg
	check "$n"
	for i in $(seq 1 $((n - 1))); do
		a=$(sect fetch "$W/r$i" | field t0_unix) e=$(done_at "$i")
		[ -z "$t0" ] || [ "$(echo "$a < $t0" | bc)" = 1 ] && t0=$a
		[ "$(echo "$e > $t1" | bc)" = 1 ] && t1=$e
	done
	echo "$(load_s) + $t1 - $t0" | bc -l
}
run_one_hop() { # the origin loaded and serving; node 1 fetches: hop seconds
	local s=$1 size=$2 fetch=("${FETCH[@]}")
	load_origin "$s" "$size"
	serve_bg 0
	# The limit is the receive alone: a files relay hashes after its last
	# byte here, so no hashing thread shares its cores while it receives.
	[ "$BENCH_LAYOUT" = files ] && FETCH+=(--verify-threads 0)
	relay 1 "$size" "$(ip_of 0):$PORT" -
	FETCH=("${fetch[@]}")
	stop_bg
	check 2
	sect fetch "$W/r1" | field seconds
}

# shape <rate|none>: every node's uplink (its veth's egress).
shape() {
	local i
	for i in $(seq 0 $((maxn - 1))); do
		ip -n "pfsfan$i" link set "fan$i" mtu 1500
		netns_shape "pfsfan$i" "fan$i" "$1"
	done
}

# One round of one way into BENCH_ROWS; its rate is the blob's MB over the
# seconds until the last node has verified it.
emit() {	# link source bytes n label secs [cpu_s_per_gib]
	local purpose=Transfer key='' limit=fanout-one-hop-$1-$2 per='' note=''
	case $5 in
	one\ hop*) purpose=Limit key=$limit limit='' ;;
	PacketFS*) ;;
	*) purpose=Peer ;; esac
	if [ -n "${7:-}" ]; then
		per=$(awk -v c="$7" 'BEGIN { if (c > 0) print 1073.741824 / c }')
		note="relay CPU $7 s per GiB per hop; "
	fi
	bench_row suite=fanout path="link $1, $2, N=$4" label="$5" purpose=$purpose \
		size_mb="$(awk -v b="$3" 'BEGIN { printf "%.6f", b / 1e6 }')" elapsed_s="$6" \
		mb_per_cpu_s="$per" integrity=OK pthreads=1 notes="${note}every relay verified its blob" \
		limit="$limit" key="$key"
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
# The tables and the model go to stdout and, at the end, into OUT_MD.
exec 3>&1 >"$W/tables.md"
echo "Layout ($BENCH_LAYOUT): $(layout_words)."
echo
echo "| link | source | bytes | N | pipelined s | store-fwd s | from-origin s | one hop s | source bytes read | origin bytes sent | relay CPU-s/GiB/hop |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for link in $LINKS; do
shape "$link"
for s in $SOURCES; do
	src=$(src_path "$s")
	j=$("$PFS" -q blob create --source "$src" --dry-run)
	size=$(field needed <<<"$j")
	bytes=$(field bytes <<<"$j")
	hop=""
	for _ in $(seq "$ROUNDS"); do
		t=$(run_one_hop "$src" "$size"); hop="$hop $t"
		emit "$link" "$s" "$bytes" 2 "one hop (a loaded blob to one peer)" "$t"
	done
	for n in $NODES; do
		p="" a="" b="" c="" v=""
		for _ in $(seq "$ROUNDS"); do
			t=$(run_pipelined "$n" "$src" "$size"); p="$p $t"
			cg=$(cpu_per_gib "$n"); c="$c $cg"
			emit "$link" "$s" "$bytes" "$n" "PacketFS fan-out (pipelined relays)" "$t" "$cg"
			read_b=$(sect source "$W/r0" | field bytes)
			served=$(cat "$W/served")
			v="$v $(cat "$W/verify")"
			t=$(run_store_fwd "$n" "$src" "$size"); a="$a $t"
			emit "$link" "$s" "$bytes" "$n" "store-and-forward chain (naive, one node after another)" "$t"
			t=$(run_from_origin "$n" "$src" "$size"); b="$b $t"
			emit "$link" "$s" "$bytes" "$n" "every node from the origin at once" "$t"
		done
		printf '| %s | %s | %s | %s | %.3f | %.3f | %.3f | %.3f | %s | %s | %.3f |\n' "$link" "$s" "$bytes" "$n" \
			"$(median <<<"$p")" "$(median <<<"$a")" "$(median <<<"$b")" "$(median <<<"$hop")" \
			"$read_b" "$served" "$(median <<<"$c")"
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$link" "$size" "$n" "$(median <<<"$p")" "$(median <<<"$hop")" \
			"$(median <<<"$c")" "$(median <<<"$v")" >>"$W/results.tsv"
		printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$link" "$s" "$n" "$(median <<<"$p")" "$(median <<<"$c")" "$served" >>"$W/ours.tsv"
	done
done
done

# The pipelined chain again, the relays fetching over each transport (the
# largest source: the longest transfer, the steadiest rate).
big=""
for s in $SOURCES; do
	sz=$("$PFS" -q blob create --source "$(src_path "$s")" --dry-run | field needed)
	[ -n "$big" ] && [ "$sz" -le "$(cut -d' ' -f2 <<<"$big")" ] || big="$s $sz"
done
read -r s size <<<"$big"
src=$(src_path "$s")
echo
echo "Pipelined chain by relay transport ($s, $size bytes; median of $ROUNDS; relay CPU-s per GiB per hop in brackets):"
echo
printf '| link | N |'; for x in $TRANSPORTS; do printf ' %s s |' "$x"; done; echo
printf '|---|---:|'; for _ in $TRANSPORTS; do printf -- '---:|'; done; echo
for link in $LINKS; do
	shape "$link"
	for n in $NODES; do
		printf '| %s | %s |' "$link" "$n"
		for x in $TRANSPORTS; do
			FETCH=(--fetch-transport "$x")
			p="" c=""
			for _ in $(seq "$ROUNDS"); do
				p="$p $(run_pipelined "$n" "$src" "$size")"
				c="$c $(cpu_per_gib "$n")"
				[ "$(sect fetch "$W/r1" | field transport)" = "$x" ] || { echo "relay 1 did not fetch over $x" >&2; exit 1; }
				[ "$n" = "$maxn" ] && printf '%s\t%s\t%s\n' "$link" "$x" "$(parts "$n")" >>"$W/parts.tsv"
			done
			printf ' %.3f (%.2f) |' "$(median <<<"$p")" "$(median <<<"$c")"
		done
		echo
	done
done
FETCH=()

# The relays' CPU by part at the largest N, beside the floor of a hop's
# transport measured now over the same bridge (issue 31's targets: a TCP
# relay <= 0.4 CPU-s/GiB/hop with its verification, UDP and AF_XDP at most
# 1.5x that), and the datagram transports' cost per datagram.
file=$(find "$src" -type f -printf '%s %p\n' | sort -n | tail -1 | cut -d' ' -f2-)
echo
echo "Relay CPU by part ($s, N = $maxn, median of $ROUNDS rounds; per GiB each relay received, summed over the relays): hashing is the"
echo "chunk hashers' own CPU (BLAKE3), the rest is receiving, forwarding and the blob; a datagram relay's rest over the datagrams it"
echo "received and sent on. Floor: one send and one receive of the source's largest file ($(stat -c %s "$file") bytes) from node 0 to node 1"
echo "over the same bridge without pfs (bench/zctx, in this run), the least a hop's transport costs here; a relay both receives and sends."
echo
echo "| link | transport | relay CPU-s/GiB/hop | hashing | rest | µs per datagram | floor: transport | floor + hashing | target | verdict |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"
for link in $LINKS; do
	shape "$link"
	ft=$(floor tcp-writev "$file") fu=$(floor udp-gso "$file")
	tcp_total=""
	for x in $TRANSPORTS; do
		awk -F'\t' -v l="$link" -v x="$x" '$1 == l && $2 == x' "$W/parts.tsv" >"$W/px"
		[ -s "$W/px" ] || continue
		read -r tot hsh rest per <<<"$(awk -F'\t' '{ g = $5 / 1073741824; t[NR] = $3 / g; h[NR] = $4 / g;
			r[NR] = ($3 - $4) / g; d[NR] = ($6 > 0 ? 1e6 * ($3 - $4) / $6 : -1) }
			function med(a, n,   i, j, k) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { k = a[i]; a[i] = a[j]; a[j] = k }
				return a[int((n + 1) / 2)] }
			END { printf "%.3f %.3f %.3f %.2f", med(t, NR), med(h, NR), med(r, NR), med(d, NR) }' "$W/px")"
		fl=$ft
		[ "$x" = tcp ] || fl=$fu
		fh=$(echo "$fl + $hsh" | bc -l)
		if [ "$x" = tcp ]; then
			tcp_total=$tot target=0.4
		else
			target=$(echo "1.5 * ${tcp_total:-0}" | bc -l)
		fi
		verdict=missed
		[ "$(echo "$tot <= $target" | bc -l)" = 1 ] && verdict=met
		[ "$verdict" = missed ] && [ "$(echo "$fh > $target" | bc -l)" = 1 ] && verdict="missed (the target is below this host's floor + hashing)"
		[ "$x" = tcp ] || target="1.5x tcp = $(printf '%.3f' "$target")"
		printf '| %s | %s | %s | %s | %s | %s | %.3f | %.3f | %s | %s |\n' "$link" "$x" "$tot" "$hsh" "$rest" \
			"$([ "$per" = -1.00 ] && echo - || echo "$per")" "$fl" "$fh" "$target" "$verdict"
	done
done

# A slow node (SLOW): the chain with one relay's uplink below the others',
# with the step-aside rule and without it, at every shaped link.
# order <n>: each relay's last upstream ("2<0": node 2 ended fetching from 0).
order() {
	local i ip o=""
	for i in $(seq 1 $(($1 - 1))); do
		ip=$(sect fetch "$W/r$i" | field from)
		ip=${ip%:*}
		o+="${o:+ }$i<$((${ip##*.} - 1))"
	done
	echo "$o"
}
slow_k=${SLOW%%:*} slow_rate=${SLOW#*:}
if [ -n "$SLOW" ] && [ "$slow_k" -ge 1 ] && [ "$slow_k" -lt $((maxn - 1)) ] && [ "$LINKS" != none ]; then
	echo
	echo "A slow node ($s, $size bytes, N = $maxn; median of $ROUNDS): node $slow_k's uplink at $slow_rate, the others' at the link rate. With the rule a relay"
	echo "whose downstream falls 4 MiB further behind its own fill (over 0.05 s, at under half its rate) steps aside: the downstream fetches from its next upstream, the relay from the last node"
	echo "([fanout.md](../design/fanout.md#a-slow-relay)). Time until every other node verified, against one hop at the link rate (measured here, node 0 to node 1 before the shaping);"
	echo "the order is each relay's last upstream (\`2<0\`: node 2 ended fetching from node 0)."
	echo
	echo "| link | slow node | rule | every other node s | / one hop | slow node s | one hop s | order (last round) | stepped aside |"
	echo "|---|---|---|---:|---:|---:|---:|---|---:|"
	for link in $LINKS; do
		[ "$link" = none ] && continue
		shape "$link"
		hop=""
		for _ in $(seq "$ROUNDS"); do hop="$hop $(run_one_hop "$src" "$size")"; done
		netns_shape "pfsfan$slow_k" "fan$slow_k" "$slow_rate"
		EXCLUDE=$slow_k
		for rule in on off; do
			if [ $rule = on ]; then TAIL=1 FETCH=(); else TAIL=0 FETCH=(--relay-lag-max 0); fi
			p="" q="" st=0
			for _ in $(seq "$ROUNDS"); do
				p="$p $(run_pipelined "$maxn" "$src" "$size")"
				q="$q $(cat "$W/excluded")"
			done
			for i in $(seq 1 $((maxn - 1))); do grep -q '"stepped_aside"' "$W/r$i" && st=$((st + 1)); done
			printf '| %s | %s at %s | %s | %.3f | %.2f | %.3f | %.3f | %s | %s |\n' "$link" "$slow_k" "$slow_rate" "$rule" \
				"$(median <<<"$p")" "$(echo "$(median <<<"$p") / $(median <<<"$hop")" | bc -l)" \
				"$(median <<<"$q")" "$(median <<<"$hop")" "$(order "$maxn")" "$st"
		done
		EXCLUDE=-1 TAIL=0 FETCH=()
	done
fi

# Beside a BitTorrent swarm (SWARM=0: none): bench/swarm.sh, aria2c and
# opentracker from Debian on nodes like these (its own namespaces, the same
# shaping), the same sources, nodes, links and rounds; then the slow node.
if [ "${SWARM:-1}" = 1 ]; then
	NODES="$NODES" ROUNDS="$ROUNDS" SOURCES="$SOURCES" LINKS="$LINKS" SLOW="" OUT_ROWS="$W/swarm.jsonl" bench/swarm.sh
	shaped=$(tr ' ' '\n' <<<"$LINKS" | grep -vx none | head -1 || true)
	if [ -n "$SLOW" ] && [ -n "$shaped" ]; then
		NODES=$maxn ROUNDS="$ROUNDS" SOURCES="$s" LINKS="$shaped" SLOW="$SLOW" OUT_ROWS="$W/swarm-slow.jsonl" bench/swarm.sh
	fi
	echo
	echo "Beside a BitTorrent swarm (median of $ROUNDS; bench/swarm.sh: aria2c and opentracker from Debian, 4 MiB pieces each checked against"
	echo "its SHA-1 as it lands, leechers seeding until all are done, no rate caps): PacketFS's pipelined chain from the first table, and the"
	echo "swarm from its seeder's first data byte to the last leecher's completion (its seeder holds the files: no load, and aria2's"
	echo "start-up of about 2 s, before any byte moves, in the next column). CPU: PacketFS per relay and hop, the swarm per leecher over its"
	echo "life (it uploads to the others too). Copies sent: by the origin, by the seeder."
	echo
	echo "| link | source | N | PacketFS pipelined s | swarm s | swarm from its start s | PacketFS relay CPU-s/GiB/hop | swarm CPU-s/GiB per node | copies sent: origin | copies sent: seeder |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
	python3 - "$W/ours.tsv" "$W/swarm.jsonl" <<'PY'
import json, statistics, sys
ours = {}
for l in open(sys.argv[1]).read().split("\n"):
    if l:
        link, src, n, p, c, served = l.split("\t")
        ours[(link, src, int(n))] = (float(p), float(c), int(served))
rows = {}
for l in open(sys.argv[2]):
    r = json.loads(l)
    rows.setdefault((r["link"], r["source"], r["n"]), []).append(r)
for key in sorted(rows, key=lambda k: (k[0], k[1], k[2])):
    rs, med = rows[key], lambda f: statistics.median(r[f] for r in rows[key])
    p, c, served = ours.get(key, (float("nan"), float("nan"), 0))
    size = rs[0]["bytes"]
    print("| %s | %s | %d | %.3f | %.3f | %.3f | %.3f | %.3f | %.2f | %.2f |" % (key + (p, med("seconds"),
          med("seconds_from_start"), c, med("cpu_s_per_gib_node"), served / size, med("seeder_sent_bytes") / size)))
PY
	if [ -s "$W/swarm-slow.jsonl" ]; then
		echo
		python3 - "$W/swarm-slow.jsonl" <<'PY'
import json, statistics, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
med = lambda f: statistics.median(r[f] for r in rs)
print("The swarm with the slow node of the table above (%s, link %s, N = %d): every node, the slow one included, in %.3f s"
      " (%.3f s from its start; median of %d)." % (rs[0]["slow"], rs[0]["link"], rs[0]["n"], med("seconds"),
                                                 med("seconds_from_start"), len(rs)))
PY
	fi
	# Its rounds into BENCH_ROWS: a line on the chart of time to every node.
	while read -r link src bytes n t; do
		emit "$link" "$src" "$bytes" "$n" "BitTorrent swarm (aria2c, opentracker)" "$t"
	done < <(jq -r '[.link, .source, .bytes, .n, .seconds] | @tsv' "$W/swarm.jsonl")
fi

# The model, fed only by the numbers above (docs/design/fanout.md explains it).
python3 - "$W/results.tsv" "$BENCH_LAYOUT" <<'PY'
import math, sys
sys.path.insert(0, "../hack/bench")
import fanout_model as fm
streamed = True  # relays hash every chunk (BLAKE3) while it lands, either layout
allrows = [l.split("\t") for l in open(sys.argv[1]).read().split("\n") if l]
fits = {}  # link: (its fit, its relays' CPU-s/GiB), for the scale targets below
for link in dict.fromkeys(r[0] for r in allrows):
    rows = [(int(b), int(c), float(d), float(e), float(f), float(g)) for a, b, c, d, e, f, g in allrows if a == link]
    big = max(r[0] for r in rows)
    hop = [r for r in rows if r[0] == big]
    fit = fm.fit(big, min(r[3] for r in hop), {r[1]: r[2] for r in hop})
    cpu = sorted(r[4] for r in hop)[len(hop) // 2]
    fits[link] = (fit, cpu)
    print()
    print("Model, link %s (inputs measured above, largest source): one hop %.0f MB/s; each added node "
          "+%.3f s; 2-node time beyond one hop %.3f s; relay %.2f CPU-s/GiB; gram latency %.4f s"
          % (link, fit.rate / 1e6, fit.delta, fit.base, cpu, fit.gram_s))
    print()
    print("| nodes | GB | chain (measured s/node) | chain (gram latency/node) | binary tree | store-and-forward or all from one origin | relay cores at this rate |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n in (16, 64, 1000):
        for gb in (10, 70, 140):
            S = gb * 1e9
            row = (fm.chain(fit, S, n), fm.chain(fit, S, n, fit.gram_s), fm.tree(fit, S, n),
                   fm.one_after_another(fit, S, n), cpu * fit.rate / (1 << 30))
            print("| %d | %d | %.0f | %.0f | %.0f | %.0f | %.2f |" % ((n, gb) + row))

# Issue 31's scale targets through the same model (not a measurement): 140 GB
# to 1,000 nodes at 100 GbE. Each node past two adds one 1 MiB gram at line
# rate (a relay forwards each gram as it arrives, given the cores), the
# 2-node time beyond one hop is the one measured on the fastest link here,
# and a relay needs this run's CPU per GiB at line rate.
fast = max(fits, key=lambda k: fits[k][0].rate)
f, cpu = fits[fast]
S, N, LINE = 140e9, 1000, 100e9 / 8
at_line = fm.Fit(LINE, (1 << 20) / LINE, f.base)
t = fm.chain(at_line, S, N)
cores = cpu * 1.25e9 / (1 << 30)  # per 10 Gb/s relayed
print()
print("Model (not a measurement): %.0f GB to %d nodes at 100 GbE: one link %.1f s; the chain %.1f s, %.2fx one link "
      "(target <= 1.3x: %s), each node adding one 1 MiB gram (%.0f us) and this run's 2-node time beyond one hop "
      "on link %s (%.3f s). A relay at this run's %.2f CPU-s/GiB needs %.2f cores per 10 Gb/s relayed "
      "(target <= 1: %s), %.1f at 100 GbE."
      % (S / 1e9, N, S / LINE, t, t / (S / LINE), "met" if t <= 1.3 * S / LINE else "missed",
         1e6 * (1 << 20) / LINE, fast, f.base, cpu, cores, "met" if cores <= 1 else "missed", 10 * cores))

# Published settings of other systems (other hardware: see docs/design/fanout.md
# for the sources), through the same model: their per-host rate as the hop
# rate, one 1 MiB gram of latency per hop, and the verification at the rate
# the relays measured here: chunks hashed while the bytes arrive, so only
# what the hashers have not caught up with is left after the last byte.
rows = [(int(b), int(c), float(d), float(e), float(f), float(g)) for a, b, c, d, e, f, g in allrows]
big = max(r[0] for r in rows)
sha = big / sorted(r[5] for r in rows if r[0] == big and r[5] > 0)[len([r for r in rows if r[0] == big and r[5] > 0]) // 2]
print()
print("Published settings through this model (verification at %.0f MB/s, measured here, %s):"
      % (sha / 1e6, "BLAKE3 chunks hashed while the bytes arrive" if streamed else "one pass after the last byte"))
print()
print("| setting | bytes | nodes | per-host rate | chain | binary tree |")
print("|---|---:|---:|---:|---:|---:|")
for name, S, n, B in (("Kraken README benchmark", 3e9, 2600, 300e6),
                      ("Dragonfly README comparison", 200e6, 1000, 200e6 / 8)):
    gram = (1 << 20) / B
    tail = max(0.0, S / sha - S / B) if streamed else S / sha
    chain = S / B + (n - 2) * gram + tail
    tree = 2 * S / B + math.ceil(math.log2(n)) * gram + (max(0.0, S / sha - 2 * S / B) if streamed else S / sha)
    print("| %s | %.0f MB | %d | %.0f MB/s | %.1f s | %.1f s |" % (name, S / 1e6, n, B / 1e6, chain, tree))
PY
exec >&3
cat "$W/tables.md"
[ -n "$OUT_MD" ] || exit 0
{
	page_top fanout.sh bench-fanout "Fan-out of a blob of real files to N nodes"
	echo " ($(cpu_model)), kernel $(uname -r)," \
		"load average $load_before before and $(cut -d' ' -f1-3 /proc/loadavg) after. Rounds: $ROUNDS;" \
		"sources: $SOURCES; nodes: $NODES; links: $LINKS; relay transports: $TRANSPORTS."
	echo "The method, the timing and the model: [fanout.md](../design/fanout.md); every round's rows are"
	echo "in \`make bench\`'s report with the chart of time to every node against N."
	echo
	cat "$W/tables.md"
} >"$OUT_MD"
echo "bench: wrote $OUT_MD" >&2
