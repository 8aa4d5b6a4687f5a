#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Blob replication on loopback: one hop (a holder's `pfs blob serve
# --replicate-listen` -> one relay) and a chain (holder -> relay1 -> relay2),
# a real file as the blob (libLLVM of Debian's llvm, or SRC=...), 4 KiB pages
# in /dev/shm. Prints each relay's fetch MB/s and its CPU seconds (user+sys,
# /usr/bin/time, i.e. getrusage of the process) per GiB; the relay's CPU
# includes its receive, its serving (relay1), the manifest verify (sha256)
# and the fingerprint. Needs no root. Not a test.
set -euo pipefail
PFS=${PFS:-build/pfs}
SRC=${SRC:-/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1}
ROUNDS=${ROUNDS:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; rm -f /dev/shm/pfs-bench-repl-*' EXIT
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/tok"
$PFS -q blob create --source "$SRC" --page 4k --dir /dev/shm --name pfs-bench-repl-h --replace >"$tmp/h.json"
size=$(sed 's/.*"size":\([0-9]*\).*/\1/' "$tmp/h.json")
$PFS -q blob serve --name pfs-bench-repl-h --dir /dev/shm --socket "$tmp/h.sock" --token-file "$tmp/tok" \
	--replicate-listen 127.0.0.1:17500 >/dev/null &
srv=$!
sleep 1
relay() { # NAME UPSTREAM [LISTEN]
	/usr/bin/time -f '%U %S' -o "$tmp/$1.cpu" $PFS -q blob create --size "$size" --page 4k --dir /dev/shm \
		--name "pfs-bench-repl-$1" --replace --token-file "$tmp/tok" --fetch-from "$2" \
		${3:+--replicate-listen $3 --replicate-linger 0.2s} >"$tmp/$1.json"
}
report() { # NAME
	local mbps cpu
	mbps=$(sed 's/.*"mbps":\([0-9.]*\).*/\1/' "$tmp/$1.json")
	cpu=$(awk '{print $1 + $2}' "$tmp/$1.cpu")
	printf '%s MB/s %s, CPU-s %s, CPU-s/GiB %.2f\n' "$1" "$mbps" "$cpu" \
		"$(echo "$cpu * 1073741824 / $size" | bc -l)"
}
echo "blob $size bytes ($SRC), $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
	echo "round $r: one hop"
	relay one 127.0.0.1:17500
	report one
	echo "round $r: chain"
	relay r1 127.0.0.1:17500 127.0.0.1:17501 &
	p1=$!
	relay r2 127.0.0.1:17501
	wait $p1
	report r1
	report r2
done
kill $srv
wait $srv || true
