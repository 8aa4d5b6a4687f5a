#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# TAP wrapper: a short, fixed-count, fixed-seed libFuzzer run of every wire
# parser (gram decoder, Ethernet/IP/UDP frame parser) and of the blob
# manifest decoder, the replication control frames (LAYOUT runs too) and the
# registry JSON (OCI manifests, tokens, docker configs) and OCI image layers
# (tar, tar+gzip) under ASan/UBSan
# (part of `make test`; `make fuzz` runs longer).
set -u
build=${BUILD:-build}
runs=${FUZZ_RUNS:-20000}
harnesses=(gram frame manifest repl share delta json layer)
echo "1..${#harnesses[@]}"
pass=0 fail=0 skip=0 i=0
for h in "${harnesses[@]}"; do
	i=$((i + 1))
	if [ ! -x "$build/fuzz/fuzz_$h" ]; then
		echo "ok $i libFuzzer $h parser # SKIP clang/libFuzzer not available (install clang, libclang-rt-14-dev)"
		skip=$((skip + 1)); continue
	fi
	corpus=$(mktemp -d)
	"$build/fuzz/corpus_$h" "$corpus"
	if "$build/fuzz/fuzz_$h" -runs="$runs" -seed=1 "$corpus" >"$corpus/log" 2>&1; then
		echo "ok $i libFuzzer $h parser, $runs runs, seed 1 # $(grep -o 'cov: [0-9]*' "$corpus/log" | tail -1)"
		pass=$((pass + 1))
	else
		sed 's/^/# /' "$corpus/log" | tail -30
		echo "not ok $i libFuzzer $h parser"
		fail=$((fail + 1))
	fi
	rm -rf "$corpus"
done
echo "# $skip skipped"; echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
