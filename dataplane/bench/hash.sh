#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Which digest a relay should verify chunks with (docs/design/fanout.md,
# "Chunk digests"): SHA-256 (OpenSSL, with the CPU's SHA extensions and with
# them masked off, to show which path ran), BLAKE3 (the BLAKE3 team's C
# library, hack/blake3.sh, its own dispatch) and CRC32C (the data plane's,
# not cryptographic: the floor), over a real model file (hack/testdata.sh),
# one digest per chunk, on 1 thread and on every CPU. Not a test.
#   ROUNDS=3 CHUNKS="1048576 4194304 16777216" SECONDS_EACH=1 bench/hash.sh
# BENCH_QUICK=1: ROUNDS=1 CHUNKS=4194304 SECONDS_EACH=0.5.
# OUT_MD: the page (default ../docs/bench/bench-hash.md; empty: none).
# BENCH_ROWS: every round as JSON lines (docs/design/bench-rows.md).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source-path=SCRIPTDIR source=rows.sh
. bench/rows.sh
if [ "${BENCH_QUICK:-0}" = 1 ]; then
	ROUNDS=${ROUNDS:-1} CHUNKS=${CHUNKS:-4194304} SECONDS_EACH=${SECONDS_EACH:-0.5}
fi
ROUNDS=${ROUNDS:-3}
CHUNKS=${CHUNKS:-1048576 4194304 16777216}
SECONDS_EACH=${SECONDS_EACH:-1}
OUT_MD=${OUT_MD-../docs/bench/bench-hash.md}
NCPU=$(nproc)
# The relay's CPU budget of issue 31 (verification included), for scale.
BUDGET=0.4

B3=$(../hack/blake3.sh)
make -s build/libpfs.a >&2
BIN=$(mktemp -d)/hash
trap 'rm -rf "$(dirname "$BIN")"' EXIT
"${CC:-clang}" -O2 -Wall -Wextra -Iinclude -I"$B3" bench/hash.c build/libpfs.a "$B3/libblake3.a" \
	-lcrypto -lpthread -o "$BIN"
src=$(../hack/testdata.sh path sudachi)/system.dic
[ -r "$src" ] || { echo "hash.sh: no $src (hack/testdata.sh)" >&2; exit 1; }
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
flags=$(grep -m1 '^flags' /proc/cpuinfo)
has() { grep -qw "$1" <<<"$flags" && echo yes || echo no; }

# label|algo|env: SHA-256 twice, the second with OpenSSL's SHA-extension bit
# (CPUID leaf 7 EBX bit 29) masked, which tells the path the first took.
ways=("SHA-256 (OpenSSL)|sha256|" "SHA-256, SHA extensions masked|sha256|OPENSSL_ia32cap=:~0x20000000"
	"BLAKE3 (C library)|blake3|" "CRC32C (not cryptographic)|crc32c|")
res=$(mktemp)
for c in $CHUNKS; do
	for t in 1 "$NCPU"; do
		for w in "${ways[@]}"; do
			IFS='|' read -r label algo envs <<<"$w"
			m="" u="" path="" rounds=$ROUNDS secs=$SECONDS_EACH
			# The limit is measured as strongly in quick mode as in full
			# mode (docs/design/bench-rows.md): 3 rounds of 1 s at least.
			if [ "$algo" = crc32c ]; then
				[ "$rounds" -ge 3 ] || rounds=3
				[ "$(echo "$secs >= 1" | bc)" = 1 ] || secs=1
			fi
			for r in $(seq "$rounds"); do
				# shellcheck disable=SC2086
				read -r _ _ _ mbps cpu path mb wall < <(env $envs "$BIN" "$src" "$algo" "$c" "$t" "$secs")
				m="$m $mbps" u="$u $cpu"
				# BLAKE3 against the SHA-256 rows (its peers) and CRC32C
				# (what checking every byte costs at least: its limit).
				key="hash-$((c >> 20))m-${t}t" role=()
				case $algo in
				sha256) role=(purpose=Peer key="peer-$key") ;;
				blake3) role=(purpose=pCPU peer="peer-$key" limit="crc32c-$key") ;;
				crc32c) role=(purpose=Limit key="crc32c-$key") ;;
				esac
				bench_row suite=hash path=local label="$label, $((c >> 20)) MiB chunks" pthreads="$t" \
					"${role[@]}" size_mb="$mb" elapsed_s="$wall" integrity=NA \
					user_s="$(echo "scale=4; $cpu * $mb * 1000000 / 1073741824" | bc -l)" sys_s=0 \
					notes="round $r; $path; CPU-s/GiB $cpu (user+sys)"
			done
			printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$c" "$t" "$(median <<<"$m")" "$(median <<<"$u")" "$path" >>"$res"
		done
	done
done

table() {
	echo "| digest | chunk | threads | MB/s | CPU-s/GiB | share of a ${BUDGET} CPU-s/GiB relay | path the library took |"
	echo "|---|---:|---:|---:|---:|---:|---|"
	awk -F'\t' -v b="$BUDGET" '{printf "| %s | %d MiB | %s | %.0f | %.3f | %.0f%% | %s |\n", $1, $2 / 1048576, $3, $4, $5, 100 * $5 / b, $6}' "$res"
}
verdict() {
	# Per chunk size, one thread: CPU per GiB of each, BLAKE3 against the
	# strongest SHA-256 measured (the lower CPU-s/GiB of its two paths).
	awk -F'\t' -v b="$BUDGET" '$3 == 1 {
		if ($1 ~ /^SHA-256/) { if (!($2 in sha) || $5 < sha[$2]) { sha[$2] = $5; shal[$2] = $1 } }
		if ($1 ~ /^BLAKE3/) b3[$2] = $5
		if ($1 ~ /^CRC32C/) crc[$2] = $5
		chunks[$2] = 1 }
	END { for (c in chunks)
		printf "- %d MiB chunks, one thread: BLAKE3 %.3f CPU-s/GiB against %.3f for the strongest SHA-256 measured (%s): %.2fx less CPU; it alone is %.0f%% of a %.1f CPU-s/GiB relay, CRC32C %.0f%%.\n",
			c / 1048576, b3[c], sha[c], shal[c], sha[c] / b3[c], 100 * b3[c] / b, b, 100 * crc[c] / b }' "$res" | sort -n -k2
}
echo "CPU: $(cpu_model), $NCPU vCPUs; sha_ni $(has sha_ni), avx2 $(has avx2), avx512f $(has avx512f), avx512vl $(has avx512vl)"
table
verdict

[ -n "$OUT_MD" ] || exit 0
{
	page_top hash.sh bench-hash "Chunk digests: SHA-256 against BLAKE3 on this machine"
	echo " ($(cpu_model); sha_ni $(has sha_ni)," \
		"avx2 $(has avx2), avx512f $(has avx512f), avx512vl $(has avx512vl)), kernel $(uname -r). Rounds: $ROUNDS" \
		"of $SECONDS_EACH s each, the median shown."
	echo
	echo "Each way hashes the bytes of a real file, Sudachi's \`system.dic\` ($(stat -c %s "$src") bytes, from"
	echo "a pinned PyPI wheel, repeated to 256 MiB), one digest per chunk, the chunks shared round-robin"
	echo "by the threads; MB/s is bytes hashed over wall time, CPU-s/GiB user + system time per GiB"
	echo "hashed (getrusage). SHA-256 is OpenSSL's EVP (\`libssl-dev\`, Debian), once as it runs and once with"
	echo "its SHA-extension bit masked (\`OPENSSL_ia32cap=:~0x20000000\`): the gap says the first run took"
	echo "the SHA extensions. BLAKE3 is the BLAKE3 team's C library ($(basename "$B3"), from the blake3 crate"
	echo "on crates.io, built by \`hack/blake3.sh\`); its path is the SIMD degree its dispatch chose (16:"
	echo "AVX-512, 8: AVX2, 4: SSE4.1). CRC32C is the data plane's own (\`pfs_crc32c\`), which is not a"
	echo "cryptographic digest: it is the floor, what any check of every byte costs at least. The share"
	echo "column sets each against issue 31's relay budget of $BUDGET CPU-s per GiB per hop, receive and"
	echo "verification together. On $NCPU vCPUs the $NCPU-thread rows share cores with everything else"
	echo "running: read the 1-thread rows for cost."
	echo
	table
	echo
	echo "## Verdict"
	echo
	verdict
	echo
	echo "How chunk digests use it: [fanout.md](../design/fanout.md#verification-while-receiving-and-chunk-digests)."
} >"$OUT_MD"
echo "bench: wrote $OUT_MD" >&2
