#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Forwarding a blob's bytes without copying them into the kernel (issue 31,
# item 2), per transport, on this host's veth: what each way costs the sender
# and the receiver in CPU seconds per GiB (bench/zctx.c). The bytes are a
# real model file (Sudachi's system.dic from a pinned PyPI wheel,
# hack/testdata.sh) repeated to 1 GiB on a tmpfs mounted huge=within_size, as
# a files-layout blob is kept. The baseline is what pfs does today: TCP
# writev() of the header and the payload (the kernel copies), and UDP sends
# of 64 KiB cut by GSO. Not part of `make bench`: it measures candidates;
# docs/design/fanout.md says what was chosen from its page.
#
# Environment: REPS (runs of each, default 3; the median is shown), OUT_MD
# (the page, default ../docs/bench/bench-zctx.md; empty: none).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source-path=SCRIPTDIR source=netns.sh
. bench/netns.sh
# shellcheck source-path=SCRIPTDIR source=rows.sh
. bench/rows.sh
REPS=${REPS:-3}
OUT_MD=${OUT_MD-../docs/bench/bench-zctx.md}
bin=build/bench/zctx
[ "$(id -u)" = 0 ] || { echo "zctx: needs root (namespaces, mounts)" >&2; exit 1; }
[ -x "$bin" ] || { echo "zctx: build it first: make -C dataplane build/bench/zctx" >&2; exit 1; }
src=$(../hack/testdata.sh path sudachi)/system.dic
[ -r "$src" ] || { echo "zctx: no $src (hack/testdata.sh)" >&2; exit 1; }
nsa=zctx-a.$$ nsb=zctx-b.$$ va=zctx-a$$ vb=zctx-b$$ dir=$(mktemp -d /tmp/pfs-zctx.XXXXXX)
cleanup() {
	netns_remove "$nsa" "$nsb"
	umount "$dir/t" 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM

mkdir "$dir/t"
mount -t tmpfs -o huge=within_size,mode=0700 none "$dir/t"
file=$dir/t/blob
while [ "$(stat -c %s "$file" 2>/dev/null || echo 0)" -lt 1073741824 ]; do cat "$src" >> "$file"; done
truncate -s 1G "$file"
netns_veth_pair "$nsa" "$nsb" "$va" "$vb" 10.80.0.1 10.80.0.2
load0=$(cut -d' ' -f1-3 /proc/loadavg)

# run METHOD: one transfer; prints "send_bytes send_s send_cpu copied recv_bytes recv_s recv_cpu".
run() {
	local how=$1 proto=tcp out
	[ "${how#udp}" != "$how" ] && proto=udp
	nsenter --net=/run/netns/"$nsb" "$bin" recv 7710 "$proto" > "$dir/recv" &
	local rp=$!
	sleep 0.3
	out=$(nsenter --net=/run/netns/"$nsa" "$bin" send 10.80.0.2 7710 "$file" "$how")
	wait "$rp"
	echo "$out $(cat "$dir/recv")"
}

methods="tcp-writev tcp-sendfile tcp-splice tcp-zerocopy udp-gso udp-zerocopy"
: > "$dir/all"
for rep in $(seq "$REPS"); do
	for how in $methods; do	# interleaved, so a noisy minute hits every method
		res=$(run "$how")
		echo "$how $rep $res" | tee -a "$dir/all" >&2
	done
done

# The median of REPS for each method: sender and receiver CPU-s per GiB sent
# (received, for the receiver), MB/s at the receiver, share received.
table() {
	awk -v reps="$REPS" '
	function med(a, n,   i, j, t) {
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	{ m = $1; k = ++cnt[m]; order[m] = order[m] ? order[m] : ++nm; name[order[m]] = m
	  gib = $3 / 1073741824; rgib = $7 / 1073741824
	  s[m, k] = $5 / gib; r[m, k] = (rgib > 0 ? $9 / rgib : 0); t[m, k] = s[m, k] + r[m, k]
	  mbs[m, k] = ($8 > 0 ? $7 / $8 / 1e6 : 0); got[m, k] = 100 * $7 / $3; cp[m, k] = $6 }
	END {
		for (i = 1; i <= nm; i++) {
			m = name[i]; n = cnt[m]
			for (k = 1; k <= n; k++) { a1[k] = s[m, k]; a2[k] = r[m, k]; a3[k] = t[m, k]; a4[k] = mbs[m, k]; a5[k] = got[m, k]; a6[k] = cp[m, k] }
			lo = hi = a3[1]
			for (k = 2; k <= n; k++) { if (a3[k] < lo) lo = a3[k]; if (a3[k] > hi) hi = a3[k] }
			printf "%s\t%.3f\t%.3f\t%.3f\t%.0f\t%.1f\t%d\t%.3f\t%.3f\n", m, med(a1, n), med(a2, n), med(a3, n), med(a4, n), med(a5, n), med(a6, n), lo, hi
		}
	}' "$dir/all"
}
table > "$dir/med"
printf 'method\tsender CPU-s/GiB\treceiver CPU-s/GiB\tboth\tMB/s\treceived %%\tcopied sends\tboth min\tboth max\n'
cat "$dir/med"
[ -n "$OUT_MD" ] || exit 0

# best PROTO: the method of PROTO costing the least CPU on both ends.
best() { awk -v p="$1" 'index($1, p "-") == 1 { print $4, $1 }' "$dir/med" | sort -n | head -1 | cut -d' ' -f2; }
both() { awk -v m="$1" '$1 == m { print $4 }' "$dir/med"; }
# spread M: "min..max" of both ends over the runs of method M.
spread() { awk -v m="$1" '$1 == m { print $8 ".." $9 }' "$dir/med"; }
# verdict PROTO BASE: the cheapest method of PROTO against BASE, what pfs uses.
verdict() {
	local b
	b=$(best "$1")
	if [ "$b" = "$2" ]; then
		echo "**$2** itself, the way pfs sends ($(both "$2") CPU-s/GiB, $(spread "$2") over the runs)"
		return
	fi
	echo "**$b** ($(both "$b") CPU-s/GiB, $(spread "$b") over the runs) against $(both "$2") ($(spread "$2")) for $2, the way pfs"
	echo "sends; every run of $b below every run of $2: $(apart "$b" "$2")"
}
# apart A B: "yes" when every run of A cost less than every run of B.
apart() { awk -v a="$1" -v b="$2" '$1 == a { ah = $9 } $1 == b { bl = $8 } END { print (ah < bl ? "yes" : "no") }' "$dir/med"; }
{
	page_top zctx.sh bench-zctx "Forwarding without a copy: each way's CPU on this host's veth"
	echo " ($(cpu_model)), kernel $(uname -r), load average $load0 before and $(cut -d' ' -f1-3 /proc/loadavg) after. Runs: $REPS of each, interleaved; the median shown."
	echo
	echo "One sender sends 1 GiB of a real model file (Sudachi's \`system.dic\`, a pinned PyPI wheel,"
	echo "repeated) from a tmpfs mounted huge=within_size, as a files-layout blob is kept, to a receiver in"
	echo "another network namespace over a veth pair at MTU 1500; TCP in 1 MiB grams behind a 32-byte header"
	echo "as pfs sends them, UDP in 64 KiB sends cut into 1472-byte datagrams (GSO), received with GRO."
	echo "Each end's CPU is its own user + sys time: on veth the receiver's softirq work runs in the"
	echo "sender's context, so read the two ends together (\"both\")."
	echo
	echo "| method | sender CPU-s/GiB | receiver CPU-s/GiB | both | both, fewest..most over the runs | MB/s | received % | sends the kernel copied anyway |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|"
	awk -F'\t' '{ printf "| %s | %s | %s | %s | %s..%s | %s | %s | %s |\n", $1, $2, $3, $4, $8, $9, $5, $6, $7 }' "$dir/med"
	echo
	echo "Cheapest on both ends by the median, this run: TCP $(verdict tcp tcp-writev); UDP $(verdict udp udp-gso)."
	echo "MSG_ZEROCOPY to a receiver on the same host is copied by the kernel after all (the last column"
	echo "counts the sends it reported as copied), so on veth it can only add the completion handling."
} > "$OUT_MD"
echo "zctx: wrote $OUT_MD" >&2
