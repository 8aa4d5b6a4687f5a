#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The N longest C functions under the given paths (default: src tools), as a
# markdown table: lines (the `{` and `}` lines included), file, function.
# Kernel style is assumed: a function body opens with `{` and closes with `}`
# in column 0; its name is the last identifier before `(` on the lines since
# the previous column-0 `}` or `;`.
#   scripts/funclen.sh [-n N] [PATH...]      (run from dataplane/)
set -euo pipefail
n=15
if [ "${1:-}" = -n ]; then n=$2; shift 2; fi
[ $# -gt 0 ] || set -- src tools
find "$@" -name '*.c' -print0 | sort -z | xargs -0 awk '
FNR == 1 { head = ""; start = 0 }
/^\{/ && !start {
	name = head
	gsub(/__attribute__\(\(.*\)\)/, "", name)
	fn = "?"
	if (match(name, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/)) {
		fn = substr(name, RSTART, RLENGTH)
		sub(/[ \t]*\($/, "", fn)
	}
	start = FNR
	next
}
/^\}/ && start {
	printf "%d\t%s\t%s\n", FNR - start + 1, FILENAME, fn
	start = 0
	head = ""
	next
}
!start {
	if ($0 ~ /^[ \t]*$/ || $0 ~ /;[ \t]*$/ || $0 ~ /^#/ || $0 ~ /^\}/ || $0 ~ /\*\/[ \t]*$/)
		head = ""
	else
		head = head " " $0
}
' | sort -t"$(printf '\t')" -k1,1nr -k2,2 | head -n "$n" |
	awk -F'\t' 'BEGIN { print "| lines | file | function |"; print "|---:|---|---|" }
		{ printf "| %d | %s | %s |\n", $1, $2, $3 }'
