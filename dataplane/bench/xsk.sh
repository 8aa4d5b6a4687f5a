#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The AF_XDP link layer alone (`pfs xsk blast` -> `pfs xsk sink`) over a fresh
# single-queue veth pair between two fresh network namespaces: 64 B and 1472 B
# UDP payloads, the receiver's XDP program native and generic, copy mode (veth
# has no zero-copy). The blaster sends as fast as it can, unpaced; AF_XDP has
# no flow control, so the table shows both what was sent and what the sink
# received (the receive rate is the link's rate; the rest was dropped at the
# receiver, counted by the kernel as fill-ring-empty / rx-dropped).
# REPS runs per row (default 3); every run is printed, then the median, and
# the page docs/bench/bench-xsk.md is written (command, date, load, all runs).
# Everything created (namespaces, veth) is removed on exit.
#
# Environment: PFS (binary), COUNT (frames per run, default 1000000), REPS,
# OUT_MD (default ../docs/bench/bench-xsk.md; empty to skip), BENCH_ROWS (a file:
# every run is appended to it as one JSON line, docs/design/bench-rows.md: the
# Limit xsk-raw-veth-<size>, xsk-raw-veth-generic-<size> for generic XDP),
# BENCH_QUICK (1: a check that the script works, not a measurement:
# COUNT=500000 REPS=3 and OUT_MD empty unless given; about 30 s here).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source-path=SCRIPTDIR source=rows.sh
. bench/rows.sh
# shellcheck source-path=SCRIPTDIR source=netns.sh
. bench/netns.sh
if [ "${BENCH_QUICK:-}" = 1 ]; then
	: "${COUNT:=500000}" "${REPS:=3}" "${OUT_MD=}"
fi
PFS=${PFS:-$PWD/build/pfs}
COUNT=${COUNT:-1000000}
REPS=${REPS:-3}
OUT_MD=${OUT_MD-$PWD/../docs/bench/bench-xsk.md}

die() { echo "bench: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces, veth, XDP)"
for t in ip jq nsenter; do command -v "$t" >/dev/null || die "missing $t"; done
[ -x "$PFS" ] || die "build pfs first: make -C dataplane"

id=$$
nsa=pfsxb-a-$id nsb=pfsxb-b-$id va=pxa$((id % 100000)) vb=pxb$((id % 100000))
tmp=$(mktemp -d)
cleanup() { ip netns del "$nsa" 2>/dev/null || true; ip netns del "$nsb" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
netns_veth_pair "$nsa" "$nsb" "$va" "$vb" 10.231.0.1 10.231.0.2
A="nsenter --net=/run/netns/$nsa"; B="nsenter --net=/run/netns/$nsb"

load() { cut -d' ' -f1-3 /proc/loadavg; }
load0=$(load)
md=()	# markdown rows
printf '%-8s %-7s %-4s %12s %12s %12s %10s %s\n' attach size rep sent_pps recv_pps recv_gbit recv_frac mode
for attach in native generic; do
	for size in 64 1472; do
		rows=()
		for rep in $(seq "$REPS"); do
			rm -f "$tmp/ready"
			$B "$PFS" -q xsk sink --ifname "$vb" --attach "$attach" --idle 1 --timeout 60 \
				--ready-file "$tmp/ready" >"$tmp/sink.json" &
			spid=$!
			for _ in $(seq 100); do [ -e "$tmp/ready" ] && break; sleep 0.05; done
			$A "$PFS" -q xsk blast --ifname "$va" --dst 10.231.0.2 --count "$COUNT" \
				--size "$size" >"$tmp/blast.json"
			wait "$spid" || true
			sent=$(jq -r .pps "$tmp/blast.json"); recv=$(jq -r .pps "$tmp/sink.json")
			frames=$(jq -r .frames "$tmp/sink.json")
			gbit=$(jq -r .payload_gbit_s "$tmp/sink.json")
			mode="$(jq -r .xdp_mode "$tmp/sink.json")/$(jq -r .bind "$tmp/sink.json")"
			frac=$(awk -v f="$frames" -v c="$COUNT" 'BEGIN { printf "%.3f", f / c }')
			printf '%-8s %-7s %-4s %12s %12s %12s %10s %s\n' "$attach" "$size" "$rep" \
				"$sent" "$recv" "$gbit" "$frac" "$mode"
			md+=("| $attach | $size B | $rep | $sent | $recv | $gbit | $frac | $mode |")
			# The link's limit for the report (docs/design/bench-rows.md). Wire
			# bytes: every frame is the payload plus Ethernet, IPv4 and UDP
			# headers (42 B), none re-sent.
			read -r mb el wire integ < <(jq -r '[.payload_bytes / 1e6, .elapsed_s,
				(if .elapsed_s > 0 then .frames * (.payload_size + 42) / 1e6 / .elapsed_s
				 | . * 10 | round / 10 else null end),
				(if .bad == 0 then "OK" else "MISMATCH" end)] | @tsv' "$tmp/sink.json")
			bench_row suite=xsk path=veth label="pfs xsk blast -> sink ($attach XDP, $size B)" \
				purpose=Limit size_mb="$mb" elapsed_s="$el" wire_mb_s="$wire" integrity="$integ" \
				pthreads=1 key="xsk-raw-veth$([ "$attach" = native ] || echo "-$attach")-$size" \
				notes="$mode; blaster sent $sent frames/s unpaced, the sink received $frac of the $COUNT frames; rate first to last frame; CPU not measured"
			rows+=("$recv $sent $gbit $frac")
		done
		med=$(printf '%s\n' "${rows[@]}" | sort -n | awk -v n="$REPS" 'NR == int((n + 1) / 2)')
		lo=$(printf '%s\n' "${rows[@]}" | sort -n | head -1 | cut -d' ' -f1)
		hi=$(printf '%s\n' "${rows[@]}" | sort -n | tail -1 | cut -d' ' -f1)
		set -- $med
		printf '%-8s %-7s %-4s %12s %12s %12s %10s (median by recv_pps)\n' "$attach" "$size" med \
			"$2" "$1" "$3" "$4"
		md+=("| **$attach** | **$size B** | **median** | **$2** | **$1** ($lo - $hi) | **$3** | **$4** | |")
	done
done
load1=$(load)
if [ -n "$OUT_MD" ]; then
	{
		echo '<!-- SPDX-License-Identifier: Apache-2.0 -->'
		echo '# AF_XDP link benchmark'
		echo
		echo 'Written by `dataplane/bench/xsk.sh` (`make -C dataplane bench-xsk`); one run, every'
		echo 'number below measured in that run. `pfs xsk blast` sends COUNT frames of a test'
		echo 'pattern unpaced from namespace A; `pfs xsk sink` in namespace B (our XDP program,'
		echo 'one AF_XDP socket) receives and validates them, over a fresh single-queue veth pair.'
		echo 'veth has no AF_XDP zero-copy: copy mode. sent_pps is the blaster'"'"'s rate; recv_pps'
		echo 'the sink'"'"'s (first to last frame); AF_XDP has no flow control, so recv_frac (received'
		echo '/ COUNT) shows what the receiver dropped (kernel fill-ring-empty). Medians by'
		echo 'recv_pps, with the range of recv_pps. Gbit/s are UDP payload bits received.'
		echo
		echo "Command: \`make -C dataplane bench-xsk\` (COUNT=$COUNT REPS=$REPS)"
		echo "Date: $(date -u '+%Y-%m-%d %H:%M UTC'); kernel $(uname -r); $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"
		echo "Commit: $(git -C "$PWD" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$PWD" diff --quiet 2>/dev/null || echo ' (with local changes)')"
		echo "Load average (1/5/15 min) at start: $load0; at end: $load1 (other jobs share this machine)."
		echo
		echo '| XDP | UDP payload | run | sent pps | received pps | payload Gbit/s | received share | mode |'
		echo '|---|---|---|---:|---:|---:|---:|---|'
		printf '%s\n' "${md[@]}"
	} > "$OUT_MD"
	echo "bench: wrote $OUT_MD" >&2
fi
