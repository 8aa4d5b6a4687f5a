# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
#
# Sourced by the benchmark scripts: bench_row appends one measured repetition
# to $BENCH_ROWS as one JSON line (docs/design/bench-rows.md is the contract), and
# does nothing when BENCH_ROWS is unset, so a script calls it unconditionally.
#
#   bench_row suite=udp path=veth label='...' purpose=Transfer size_mb=4294.97 \
#             elapsed_s=2.1 user_s=0.4 sys_s=1.2 integrity=OK pthreads=1 notes='...'
#
# Numbers go through --argjson, so a value that is not a JSON number stops
# the script instead of reaching the report as text; empty or absent is null.
# effective_mb_s and mb_per_cpu_s are derived here when not given, so every
# row computes them the same way; elapsed_s is derived from a rate when only
# the rate is known (a tool that reports MB/s, not its time).

bench_row() {
	[ -n "${BENCH_ROWS:-}" ] || return 0
	local a k args=()
	local -A r=()
	for a; do r[${a%%=*}]=${a#*=}; done
	for k in suite path label purpose integrity notes limit peer key; do
		args+=(--arg "$k" "${r[$k]-}")
	done
	for k in size_mb elapsed_s effective_mb_s wire_mb_s user_s sys_s mb_per_cpu_s pthreads loss_pct; do
		args+=(--argjson "$k" "${r[$k]:-null}")
	done
	# Through $ARGS.named: $label is a jq keyword and cannot name a variable.
	jq -nc "${args[@]}" '
		def str: if . == "" then null else . end;
		def r1: . * 10 | round / 10;
		$ARGS.named as $a |
		($a.elapsed_s // (if $a.size_mb and $a.effective_mb_s and $a.effective_mb_s > 0
			then $a.size_mb / $a.effective_mb_s | . * 1e6 | round / 1e6 else null end)) as $el |
		{suite: $a.suite, path: $a.path, label: $a.label, purpose: $a.purpose,
		 size_mb: $a.size_mb, elapsed_s: $el,
		 effective_mb_s: ($a.effective_mb_s // (if $a.size_mb and $el and $el > 0
			then $a.size_mb / $el | r1 else null end)),
		 wire_mb_s: $a.wire_mb_s, user_s: $a.user_s, sys_s: $a.sys_s,
		 mb_per_cpu_s: ($a.mb_per_cpu_s // (if $a.size_mb and $a.user_s and $a.sys_s
				and $a.user_s + $a.sys_s > 0
			then $a.size_mb / ($a.user_s + $a.sys_s) | r1 else null end)),
		 integrity: ($a.integrity | str // "NA"), pthreads: $a.pthreads, notes: $a.notes,
		 limit: ($a.limit | str), peer: ($a.peer | str), key: ($a.key | str),
		 loss_pct: $a.loss_pct}' >> "$BENCH_ROWS" ||
		{ echo "bench_row: not a row: $*" >&2; return 1; }
}

# page_top SCRIPT TARGET TITLE: the first lines of a suite's own page, and
# the start of its "Written by" sentence (the command, the date, the commit,
# the vCPUs), which the caller's next echo ends with its machine details.
page_top() {
	local cmd="make -C dataplane $2"
	[ "${BENCH_QUICK:-0}" = 1 ] && cmd="BENCH_QUICK=1 $cmd"
	echo "<!-- SPDX-License-Identifier: Apache-2.0 -->"
	echo "<!-- Written by dataplane/bench/$1; do not edit by hand. -->"
	echo "# $3"
	echo
	printf '%s' "Written by \`$cmd\` (dataplane/bench/$1) on $(date -u '+%Y-%m-%d %H:%M UTC'), git" \
		" $(git rev-parse --short HEAD 2>/dev/null || echo unknown): $(nproc) vCPUs"
}
# cpu_model: the CPU's model name, as /proc/cpuinfo gives it.
cpu_model() { grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'; }
