# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
#
# Sourced by the benchmarks whose "nodes" are network namespaces on one
# bridge, each with a blob directory of its own (fanout.sh, s3.sh): pfs run
# on a node, timed, and its result JSON read back. The caller sets NODE_NS
# (node i is the namespace $NODE_NS$i), W (its work directory: node i's
# blobs in $W/n$i, its result in $W/r$i, the token in $W/token), PFS, PORT
# and pids=() (the servers started in the background), and defines
# ip_of <node>.

# BENCH_LAYOUT: how each node keeps its blob.
#   files (default): as the holder pods do under the CSI plugin, the chart's
#     default: a tmpfs mounted huge=within_size, the blob as a directory of
#     its files (--layout files); a relay hashes each file while it arrives.
#   flat: as with the chart's csi.enabled=false (hostPath): one blob on a
#     hugetlbfs of 2 MiB pages; a relay learns the files from the manifest
#     at the end and hashes them after the last byte.
BENCH_LAYOUT=${BENCH_LAYOUT:-files}
case $BENCH_LAYOUT in
files | flat) ;;
*) echo "BENCH_LAYOUT=$BENCH_LAYOUT: want files or flat" >&2; exit 2 ;;
esac

# layout_words: how the nodes kept their blobs, for the pages.
layout_words() {
	if [ "$BENCH_LAYOUT" = flat ]; then
		echo "flat: each node's blob one file on hugetlbfs, 2 MiB pages (as with the chart's csi.enabled=false); a relay verifies every 4 MiB chunk (BLAKE3) against the origin's list as the chunks land"
	else
		echo "files: each node's blob a directory of its files on a tmpfs mounted huge=within_size (--layout files, as holder pods keep it under the CSI plugin, the chart's default); a relay verifies every 4 MiB chunk (BLAKE3) against the origin's list as the chunks land"
	fi
}

# mount_node <dir>: a node's blob directory, for BENCH_LAYOUT.
mount_node() {
	mkdir -p "$1"
	if [ "$BENCH_LAYOUT" = flat ]; then
		mount -t hugetlbfs -o pagesize=2M none "$1"
	else
		mount -t tmpfs -o huge=within_size,mode=0700 none "$1"
	fi
}

field() { sed -n "s/.*\"$1\":\"\{0,1\}\([^\",}]*\).*/\1/p" | head -1; }
# sect NAME FILE: the members of the result's NAME object (source, fetch, repl).
sect() { sed -n "s/.*\"$1\":{\([^}]*\)}.*/\1/p" "$2"; }
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
in_ns() { local i=$1; shift; nsenter --net="/run/netns/$NODE_NS$i" "$@"; }

# timed <node> <result-file> <pfs args...>: run pfs in the node's namespace
# under /usr/bin/time (user+sys seconds to <result-file>.cpu).
timed() {
	local i=$1 out=$2; shift 2
	in_ns "$i" /usr/bin/time -f "%U %S" -o "$out.cpu" "$PFS" -q "$@" --result-file "$out" >/dev/null
}
create() { # create <node> <size> <extra...>: the options of a blob on the node
	local i=$1 size=$2; shift 2
	local how="--page 2m --no-fallback"
	[ "$BENCH_LAYOUT" = files ] && how="--layout files"
	echo blob create --dir "$W/n$i" --name b $how --replace --size "$size" \
		--token-file "$W/token" "$@"
}
serve_bg() { # serve_bg <node>: the loaded blob of <node>, served to peers
	# A plain command, not a function, so $! is pfs itself (nsenter execs it).
	nsenter --net="/run/netns/$NODE_NS$1" "$PFS" -q blob serve --dir "$W/n$1" --name b --socket "$W/n$1.sock" \
		--token-file "$W/token" --read-only --replicate-listen "$(ip_of "$1"):$PORT" \
		>/dev/null 2>&1 &
	pids+=($!)
	sleep 0.3
}
stop_bg() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	pids=()
}
from() { # the comma list of upstreams for node i in a chain: i-1 ... 0
	local i=$1 l="" j
	for ((j = i - 1; j >= 0; j--)); do l+="${l:+,}$(ip_of "$j"):$PORT"; done
	echo "$l"
}
# done_at <node>: when the relay had verified what it received.
done_at() { echo "$(sect fetch "$W/r$1" | field t1_unix) + $(sect fetch "$W/r$1" | field verify_seconds)" | bc -l; }

# reserve_hugepages <nodes> <path>...: with BENCH_LAYOUT=flat, enough free
# 2 MiB pages for every node to hold the largest path once. What it adds to the pool is counted
# in $added, which the caller's cleanup gives back.
reserve_hugepages() {
	local n=$1 need=0 b p free
	shift
	[ "$BENCH_LAYOUT" = flat ] || return 0
	for p; do
		b=$(du -sb --apparent-size "$p" | cut -f1)
		[ $((n * (b / 2097152 + 8))) -gt "$need" ] && need=$((n * (b / 2097152 + 8)))
	done
	free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
	if [ "$free" -lt "$need" ]; then
		added=$((need - free))
		echo $(($(cat /proc/sys/vm/nr_hugepages) + added)) >/proc/sys/vm/nr_hugepages
	fi
}

# keep_results [label]: with KEEP=<dir>, this run's result JSONs ($W/r<N>)
# copied into <dir>/[label-]<k>/ for a closer look (the watermark's and the
# step-aside's timelines are in them). Numbered by what is there, because
# each run is a subshell.
keep_results() {
	local d
	[ -n "${KEEP:-}" ] || return 0
	mkdir -p "$KEEP"
	d=$KEEP/${1:+$1-}$(($(find "$KEEP" -mindepth 1 -maxdepth 1 | wc -l) + 1))
	mkdir "$d"
	cp "$W"/r[0-9]* "$d/"
}
