#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# `make bench`: every data-plane benchmark in one go on this machine, one
# report. Each suite's script appends its measured repetitions to one rows
# file (docs/design/bench-rows.md); hack/bench/report.py turns that file into
# docs/bench/benchmarks.md, docs/bench/benchmarks.csv and the charts in docs/bench/img/.
#
# BENCH_QUICK=1: each script's quick settings (a few minutes in all), and
# the suites' own pages are left as they are. Full mode (the default) also
# rewrites each suite's page (docs/bench/bench-<suite>.md), which the report links.
# BENCH_SUITES: which suites, in order (default: tcp udp afxdp xsk pcore
# fanout s3 delta hash). A suite that fails is named in the report and makes this
# script exit non-zero once the report is written: the others still count.
# So does a limit beaten (report.py exits 2 after writing: a row above the
# limit it names is a measurement bug, docs/design/bench-rows.md).
# Needs root (network namespaces, veth, hugepages), like each script.
set -euo pipefail
cd "$(dirname "$0")/../.."

die() { echo "bench: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces, veth pairs, hugepages)"
quick=${BENCH_QUICK:-0}
suites=(${BENCH_SUITES:-tcp udp afxdp xsk pcore fanout s3 delta hash})
mode=full
[ "$quick" = 1 ] && mode=quick

hack/install-deps.sh >&2
make -C dataplane -j"$(nproc)" >&2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rows=$work/rows.jsonl
: > "$rows"
load() { cut -d' ' -f1-3 /proc/loadavg; }
load_before=$(load)
failed=() pages=()
for s in "${suites[@]}"; do
	[ -f "dataplane/bench/$s.sh" ] || die "no suite $s (dataplane/bench/$s.sh)"
	echo "bench: === $s ($mode) ===" >&2
	# pcore.sh writes under build/ (its rows reach only this report); the
	# others write this page in full mode.
	page=docs/bench/bench-$s.md
	case $s in pcore) page= ;; esac
	# Quick runs leave the pages alone; OUT_MD= tells a script not to write.
	out_md=()
	[ "$quick" = 1 ] && out_md=(OUT_MD=)
	start=$(wc -l < "$rows")
	if env BENCH_ROWS="$rows" BENCH_QUICK="$quick" "${out_md[@]}" \
		bash "dataplane/bench/$s.sh" >"$work/$s.log" 2>&1; then
		[ "$quick" = 1 ] || [ -z "$page" ] || pages+=("$s=$page")
	else
		echo "bench: $s FAILED; the end of its log:" >&2
		tail -20 "$work/$s.log" >&2
		failed+=("$s")
	fi
	echo "bench: $s: $(( $(wc -l < "$rows") - start )) rows" >&2
done
load_after=$(load)

cmd="make bench"
[ "$quick" = 1 ] && cmd="BENCH_QUICK=1 make bench"
[ -n "${BENCH_SUITES:-}" ] && cmd="BENCH_SUITES=\"${BENCH_SUITES}\" $cmd"
jq -n --arg command "$cmd" --arg date "$(date -u '+%Y-%m-%d %H:%M UTC')" --arg mode "$mode" \
	--arg git "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
	--arg cpu "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" \
	--argjson nproc "$(nproc)" \
	--argjson mem "$(awk '/MemTotal/ { printf "%.1f", $2 / 1048576 }' /proc/meminfo)" \
	--arg kernel "$(uname -r)" --arg lb "$load_before" --arg la "$load_after" \
	--arg pages "$(printf '%s\n' "${pages[@]}")" --arg failed "${failed[*]}" '
	{command: $command, date: $date, mode: $mode, git: $git,
	 machine: {cpu: $cpu, nproc: $nproc, mem_gib: $mem}, kernel: $kernel,
	 load_before: $lb, load_after: $la,
	 pages: [$pages | split("\n")[] | select(length > 0) | split("=") | {suite: .[0], page: .[1]}],
	 failed: [$failed | split(" ")[] | select(length > 0)]}' > "$work/meta.json"

venv=$(hack/python-venv.sh hack/bench/requirements.txt)
mkdir -p docs/bench/img
report_rc=0
"$venv/bin/python" hack/bench/report.py --rows "$rows" --meta "$work/meta.json" \
	--out-md docs/bench/benchmarks.md --out-csv docs/bench/benchmarks.csv \
	--img-dir docs/bench/img || report_rc=$?
# 2: written, but a limit was beaten; anything else: the rows broke the contract.
[ "$report_rc" -eq 0 ] || [ "$report_rc" -eq 2 ] || die "report.py failed ($report_rc); no report written"
# Keep the raw rows and the run's facts beside the CSV: the report can be
# redrawn (hack/bench/report.py --rows ... --meta ...) without a rerun.
cp "$rows" docs/bench/benchmarks.rows.jsonl
cp "$work/meta.json" docs/bench/benchmarks.meta.json
echo "bench: wrote docs/bench/benchmarks.md, docs/bench/benchmarks.csv, docs/bench/img/bench-*.png ($mode)" >&2
[ ${#failed[@]} -eq 0 ] || echo "bench: suites that failed: ${failed[*]} (the report names them)" >&2
[ "$report_rc" -eq 0 ] || echo "bench: limits beaten: a measurement bug (report.py named the rows above; so does the report)" >&2
[ ${#failed[@]} -eq 0 ] && [ "$report_rc" -eq 0 ] || exit 1
