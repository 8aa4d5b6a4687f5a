#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A long libFuzzer campaign: every harness for FUZZ_RUNS executions (default
# 10 million) from its seed corpus, one after another, under ASan/UBSan.
# Prints a Markdown table (harness, executions, seconds, execs/s, coverage,
# features, corpus) for docs/design/security.md; exits non-zero on the first crash,
# leaving its log and reproducer under $out. `make -C dataplane fuzz-campaign`.
set -u
build=${BUILD:-build}
runs=${FUZZ_RUNS:-10000000}
seed=${FUZZ_SEED:-1}
out=${FUZZ_OUT:-$build/fuzz-campaign}
build=$(cd "$build" && pwd)
mkdir -p "$out" && out=$(cd "$out" && pwd)
harnesses=(${FUZZ_HARNESSES:-gram frame manifest repl share delta json})
mkdir -p "$out"
echo "| harness | executions | seconds | execs/s | coverage (edges) | features | corpus | result |"
echo "|---|---:|---:|---:|---:|---:|---:|---|"
rc=0
for h in "${harnesses[@]}"; do
	corpus="$out/corpus_$h"
	rm -rf "$corpus" && mkdir -p "$corpus"
	"$build/fuzz/corpus_$h" "$corpus" || { echo "corpus_$h failed" >&2; exit 1; }
	log="$out/$h.log"
	t0=$(date +%s.%N)
	(cd "$out" && "$build/fuzz/fuzz_$h" -runs="$runs" -seed="$seed" -print_final_stats=1 \
		-artifact_prefix="$out/$h-" "$corpus") >"$log" 2>&1
	st=$?
	t1=$(date +%s.%N)
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
	ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
	n=$(find "$corpus" -type f | wc -l)
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')
	rate=$(awk -v e="${execs:-0}" -v s="$secs" 'BEGIN{printf "%.0f", (s > 0 ? e / s : 0)}')
	res=clean
	[ "$st" -eq 0 ] || { res="CRASH (exit $st, $log)"; rc=1; }
	echo "| $h | ${execs:-?} | $secs | $rate | ${cov:-?} | ${ft:-?} | $n | $res |"
	[ "$rc" -eq 0 ] || break
done
exit $rc
