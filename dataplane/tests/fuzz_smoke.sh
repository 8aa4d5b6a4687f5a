#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# TAP wrapper: a short, fixed-count, fixed-seed libFuzzer run of the gram
# decoder under ASan/UBSan (part of `make test`; `make fuzz` runs longer).
set -u
build=${BUILD:-build}
runs=${FUZZ_RUNS:-20000}
echo "1..1"
if [ ! -x "$build/fuzz/fuzz_gram" ]; then
	echo "ok 1 libFuzzer gram decoder # SKIP clang/libFuzzer not available (install clang, libclang-rt-14-dev)"
	echo "# 1 skipped"; echo "0 passed, 0 failed"; exit 0
fi
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
"$build/fuzz/corpus_gram" "$corpus"
if "$build/fuzz/fuzz_gram" -runs="$runs" -seed=1 "$corpus" >"$corpus/log" 2>&1; then
	echo "ok 1 libFuzzer gram decoder, $runs runs, seed 1 # $(grep -o 'cov: [0-9]*' "$corpus/log" | tail -1)"
	echo "# 0 skipped"; echo "1 passed, 0 failed"
else
	sed 's/^/# /' "$corpus/log" | tail -30
	echo "not ok 1 libFuzzer gram decoder"
	echo "# 0 skipped"; echo "0 passed, 1 failed"; exit 1
fi
