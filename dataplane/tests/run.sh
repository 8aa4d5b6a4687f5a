#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs each TAP test program given as an argument, shows its output, and
# prints one summary over all of them: `N passed, N failed`. A program that
# crashes or never prints its own summary line counts as one failure.
# `--via RUNNER` runs every later program as `RUNNER PROG` (tests/arm64.sh
# runs the cross-built aarch64 programs under qemu). Every skip must match
# a line of tests/expected-skips (why that check cannot run in that build);
# any other skip is a failure.
set -u
pass=0 fail=0 skip=0 via=
expected=$(dirname "$0")/expected-skips
patterns=$(grep -vE '^[[:space:]]*(#|$)' "$expected")
while [ $# -gt 0 ]; do
	t=$1; shift
	if [ "$t" = --via ]; then
		via=$1; shift; continue
	fi
	echo "# --- $t${via:+ (via $via)}"
	out=$(${via:+"$via"} "$t" 2>&1); rc=$?
	printf '%s\n' "$out"
	sum=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -1)
	if [ -z "$sum" ]; then
		echo "# $t exited $rc without a summary line"
		fail=$((fail + 1)); continue
	fi
	p=${sum%% passed*}; f=${sum#*, }; f=${f%% failed}
	pass=$((pass + p)); fail=$((fail + f))
	while IFS= read -r line; do
		[ -n "$line" ] || continue
		skip=$((skip + 1))
		what="$t: $(printf '%s' "$line" | sed -E 's/^ok [0-9]+ //')"
		if ! printf '%s\n' "$what" | grep -qE -f <(printf '%s\n' "$patterns"); then
			echo "# unexpected skip (not in tests/expected-skips): $what"
			fail=$((fail + 1))
		fi
	done < <(printf '%s\n' "$out" | grep -E '^ok [0-9]+ .*# SKIP')
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "# $t exited $rc"; fail=$((fail + 1))
	fi
done
echo "# $skip skipped (not counted as passed; every skip must be in tests/expected-skips)"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
