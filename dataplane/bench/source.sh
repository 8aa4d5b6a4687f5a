#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# How fast `pfs blob create --source` loads real data: for each SOURCE (a
# file or a directory; default libcrypto.a of libssl-dev and the UAPI
# headers of linux-libc-dev), ROUNDS runs per setting of page kind (4k on
# tmpfs pages, 2m hugepages), O_DIRECT (default) or --source-no-direct, and
# reader threads; prints the medians of read MB/s, sha256 MB/s and seconds
# as one markdown table, next to `sha256sum` over the same bytes. O_DIRECT
# reads come from the device (or its host cache), buffered ones from the
# page cache once warm. Needs root for 2m (vm.nr_hugepages). Not a test.
#   SOURCES="/usr/include /path/to/model.safetensors" ROUNDS=3 bench/source.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PFS=${PFS:-build/pfs}
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-1 4}
SOURCES=${SOURCES:-/usr/lib/$(gcc -print-multiarch)/libcrypto.a /usr/include/linux}
added=0
cleanup() {
	if [ "$added" -gt 0 ]; then
		echo $(( $(cat /proc/sys/vm/nr_hugepages) - added )) > /proc/sys/vm/nr_hugepages
	fi
}
trap cleanup EXIT

field() { sed -n "s/.*\"$1\":\"\{0,1\}\([^\",}]*\).*/\1/p" | head -1; }
median() { tr ' ' '\n' | sed '/^$/d' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# 2 MiB pages for the largest source, kept for the whole run.
need=0
for s in $SOURCES; do
	b=$(du -sb --apparent-size "$s" | cut -f1)
	[ $(( b / 2097152 + 8 )) -gt "$need" ] && need=$(( b / 2097152 + 8 ))
done
free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
if [ "$free" -lt "$need" ] && [ -w /proc/sys/vm/nr_hugepages ]; then
	added=$(( need - free ))
	echo $(( $(cat /proc/sys/vm/nr_hugepages) + added )) > /proc/sys/vm/nr_hugepages
fi

echo "| source | files | bytes | page | O_DIRECT | threads | read MB/s | sha256 MB/s | seconds | sha256sum s |"
echo "|---|---:|---:|---|---|---:|---:|---:|---:|---:|"
for s in $SOURCES; do
	if [ -d "$s" ]; then
		t0=$(date +%s.%N); (cd "$s" && find . -type f -print0 | sort -z | xargs -0 cat | sha256sum >/dev/null)
	else
		t0=$(date +%s.%N); sha256sum "$s" >/dev/null
	fi
	ref=$(echo "$(date +%s.%N) - $t0" | bc)
	for page in 4k 2m; do
		for direct in yes no; do
			for th in $THREADS; do
				r="" h="" sec="" files="" bytes="" got=""
				for _ in $(seq "$ROUNDS"); do
					j=$("$PFS" -q blob create --source "$s" --page "$page" --no-fallback \
						--source-threads "$th" $( [ "$direct" = no ] && echo --source-no-direct))
					r="$r $(field read_mbps <<<"$j")"; h="$h $(field sha256_mbps <<<"$j")"
					sec="$sec $(field seconds <<<"$j")"
					files=$(field files <<<"$j"); bytes=$(field bytes <<<"$j")
					got=$(field o_direct <<<"$j")
				done
				printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %.3f |\n' "$s" "$files" \
					"$bytes" "$page" "$got" "$th" "$(median <<<"$r")" "$(median <<<"$h")" \
					"$(median <<<"$sec")" "$ref"
			done
		done
	done
done
