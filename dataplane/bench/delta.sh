#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Delta mode against the tools people use for the same job, on real data
# only, every pair in the same run, between two network namespaces joined
# by a veth pair (tmpfs endpoints):
#   (a) consecutive checkpoints of a real training run: a 3-layer
#       perceptron trained here with Adam on scikit-learn's digits data set
#       (bench/delta_train.py), saved as safetensors in float32 and
#       bfloat16 at steps 200, 300 and 500 (pairs 100 and 300 steps apart);
#   (b) two releases of a real model shipped on PyPI: silero-vad's
#       silero_vad.onnx in 5.1.2 and 6.2.3 (same size, retrained weights:
#       the negative control, where little of the old version helps);
#   (c) two releases of a real source tree, tarred: golang.org/x/net
#       v0.46.0 and v0.47.0 from the Go module proxy.
# Rows per pair: PFS Delta (pfs send/recv --mode delta), rsync (its delta
# algorithm, over ssh), zstd --patch-from at -1 and at -19 --long, xdelta3
# -9, plain zstd -3 and a full copy (cat over ssh). The ssh rows run
# through one throwaway sshd (aes128-gcm, no compression); their times
# include ssh's connection setup and encryption, which PFS does not do (it
# runs on the cluster's data network; docs/design/security.md). Columns: wire
# bytes, encode s, end-to-end s, CPU-s (both ends), effective MB/s (new
# bytes / end-to-end), integrity (cmp of the output with the new file).
# Median of REPS runs by end-to-end time. Writes docs/bench/bench-delta.md.
#
# Environment: PFS (binary), REPS (default 3), OUT_MD (default
# ../docs/bench/bench-delta.md; empty to skip), PFS_CACHE (data cache), ONLY (a
# regular expression: only the pairs whose name matches), BENCH_ROWS (every
# repetition as a JSON line, docs/design/bench-rows.md), BENCH_QUICK=1 (REPS=1,
# ONLY the fp32 checkpoints 100 steps apart).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source-path=SCRIPTDIR source=rows.sh
. bench/rows.sh
# shellcheck source-path=SCRIPTDIR source=netns.sh
. bench/netns.sh
PFS=${PFS:-$PWD/build/pfs}
# make bench's quick mode: one repetition of one checkpoint pair.
[ "${BENCH_QUICK:-0}" = 1 ] && REPS=${REPS:-1} ONLY=${ONLY:-"ckpt fp32, 100"}
REPS=${REPS:-3}
OUT_MD=${OUT_MD-$PWD/../docs/bench/bench-delta.md}
CACHE=${PFS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/packetfs}/delta-data-v1
export PATH=$PATH:/usr/local/go/bin

die() { echo "bench: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces, veth, sshd)"
../hack/install-deps.sh
for t in ip jq ssh ssh-keygen /usr/sbin/sshd /usr/bin/time nsenter zstd xdelta3 rsync go; do
	command -v "$t" >/dev/null || die "missing $t"
done
[ -x "$PFS" ] || die "build pfs first: make -C dataplane"

# ---- real data, fetched or made once into the cache ----
data() {
	mkdir -p "$CACHE"
	exec 8>"$CACHE.lock"; flock 8
	if [ ! -e "$CACHE/.complete" ]; then
		local venv
		venv=$(../hack/python-venv.sh bench/delta-requirements.txt)
		echo "bench: training the checkpoint run (about a minute)" >&2
		mkdir -p "$CACHE/train"
		"$venv/bin/python" bench/delta_train.py "$CACHE/train" 2048 200 300 500 \
			| tee "$CACHE/train/log.txt" >&2
		mkdir -p "$CACHE/silero"
		local v sum
		for v in 5.1.2:93b41953d7774b165407fda6b533c119c5803864e367d5034dc626c82cfdf661 \
			6.2.3:7b7f5436cfcb02fae583a05b512ea96467fd449fe54cb49a5e4f06c51a1e43b8; do
			sum=${v#*:} v=${v%%:*}
			python3 -m pip download -q --no-deps --disable-pip-version-check --no-input \
				-d "$CACHE/silero/whl-$v" "silero-vad==$v" >&2
			echo "$sum  $(ls "$CACHE"/silero/whl-"$v"/*.whl)" | sha256sum -c --quiet - >&2 ||
				die "silero-vad $v: not the pinned sha256"
			python3 -c 'import sys, zipfile; open(sys.argv[2], "wb").write(zipfile.ZipFile(sys.argv[1]).read("silero_vad/data/silero_vad.onnx"))' \
				"$(ls "$CACHE"/silero/whl-"$v"/*.whl)" "$CACHE/silero/silero_vad-$v.onnx"
		done
		mkdir -p "$CACHE/src"
		for v in v0.46.0 v0.47.0; do
			local dir
			dir=$(go mod download -json "golang.org/x/net@$v" | jq -r .Dir)
			tar -C "$(dirname "$dir")" --sort=name --mtime=@0 --owner=0 --group=0 \
				--numeric-owner --mode=u+rw -cf "$CACHE/src/x-net-$v.tar" "$(basename "$dir")"
		done
		touch "$CACHE/.complete"
	fi
	exec 8>&-
}
data

# name|kind|base|new
pairs=(
	"ckpt bf16, 100 steps|a|train/ckpt-200-bf16.safetensors|train/ckpt-300-bf16.safetensors"
	"ckpt bf16, 300 steps|a|train/ckpt-200-bf16.safetensors|train/ckpt-500-bf16.safetensors"
	"ckpt fp32, 100 steps|a|train/ckpt-200-f32.safetensors|train/ckpt-300-f32.safetensors"
	"ckpt fp32, 300 steps|a|train/ckpt-200-f32.safetensors|train/ckpt-500-f32.safetensors"
	"silero_vad.onnx 5.1.2 -> 6.2.3|b|silero/silero_vad-5.1.2.onnx|silero/silero_vad-6.2.3.onnx"
	"golang.org/x/net v0.46.0 -> v0.47.0 (tar)|c|src/x-net-v0.46.0.tar|src/x-net-v0.47.0.tar"
)

# ---- two namespaces, a veth pair, an sshd in B ----
id=$$
nsa=pfsd-a-$id nsb=pfsd-b-$id va=pda$((id % 100000)) vb=pdb$((id % 100000))
ipa=10.215.$((id % 250)).1 ipb=10.215.$((id % 250)).2
work=$(mktemp -d /dev/shm/pfs-bench-delta.XXXXXX)
sshd_pid= made_run_sshd=0
cleanup() {
	set +e
	[ -n "$sshd_pid" ] && kill "$sshd_pid" 2>/dev/null
	for n in "$nsa" "$nsb"; do
		for p in $(ip netns pids "$n" 2>/dev/null); do kill "$p" 2>/dev/null; done
	done
	sleep 0.2
	ip netns del "$nsa" 2>/dev/null; ip netns del "$nsb" 2>/dev/null
	rm -rf "$work"
	[ "$made_run_sshd" -eq 1 ] && rmdir /run/sshd 2>/dev/null
}
trap cleanup EXIT INT TERM
netns_veth_pair "$nsa" "$nsb" "$va" "$vb" "$ipa" "$ipb"
inns() { local ns=$1; shift; nsenter --net=/run/netns/"$ns" "$@"; }

ssh-keygen -q -t ed25519 -N '' -f "$work/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$work/client_key"
cp "$work/client_key.pub" "$work/authorized_keys"
[ -d /run/sshd ] || { mkdir -p /run/sshd; made_run_sshd=1; }
cat > "$work/sshd_config" <<CFG
ListenAddress $ipb:2222
HostKey $work/host_key
AuthorizedKeysFile $work/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile $work/sshd.pid
CFG
nsenter --net=/run/netns/"$nsb" /usr/sbin/sshd -D -e -f "$work/sshd_config" >"$work/sshd.log" 2>&1 &
sshd_pid=$!
sleep 0.7
SSH="ssh -q -p 2222 -i $work/client_key -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o Compression=no -c aes128-gcm@openssh.com"
mkdir -p "$work/a" "$work/b"

tm() { /usr/bin/time -f '%e %U %S' -o "$1" "${@:2}"; }	# FILE cmd...: wall user sys
cpu_of() { awk '{ s += $2 + $3 } END { printf "%.3f", s }' "$@"; }
wall_of() { awk '{ print $1 }' "$1"; }
integrity() { cmp -s "$1" "$2" && echo OK || echo MISMATCH; }

# One row: label wire encode_s e2e_s cpu_s integrity notes (tab-separated).
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@"; }

run_pfs() {	# base new out
	local base=$1 new=$2 out=$3 port=$((7700 + RANDOM % 200))
	rm -f "$out"
	tm "$work/pr.time" nsenter --net=/run/netns/"$nsb" "$PFS" recv --mode delta \
		--listen "$ipb:$port" --base "$base" --out "$out" --result-file "$work/pr.json" \
		>/dev/null 2>"$work/pr.err" &
	local rp=$!
	sleep 0.2
	tm "$work/ps.time" nsenter --net=/run/netns/"$nsa" "$PFS" send --mode delta --connect "$ipb:$port" \
		--base "$base" --src "$new" --result-file "$work/ps.json" >/dev/null 2>"$work/ps.err" ||
		{ cat "$work/ps.err" "$work/pr.err" >&2; }
	wait "$rp" || true
	local enc bound wire
	enc=$(jq -r '.delta.stages.index_s + .delta.stages.encode_s | . * 1000 | round / 1000' "$work/ps.json")
	wire=$(jq '.wire_bytes' "$work/pr.json")
	bound=$(jq -rs '.[0].delta as $s | .[1].delta as $r | "sender \($s.bound) (index \($s.stages.index_s) s, encode \($s.stages.encode_s) s on \($s.threads) threads), receiver \($r.bound) (apply \($r.stages.apply_s) s, verify \($r.stages.verify_s) s)"' "$work/ps.json" "$work/pr.json")
	local regions
	regions=$(jq -r '.delta.regions | "same \(.same.bytes), moved \(.moved.bytes), xor \(.xor.bytes)->\(.xor.wire), zstd \(.zstd.bytes)->\(.zstd.wire), zstd with the base as reference \(.zstd_ref.bytes)->\(.zstd_ref.wire), raw \(.raw.bytes)"' "$work/pr.json")
	row "PFS Delta" "$wire" "$enc" "$(wall_of "$work/ps.time")" \
		"$(cpu_of "$work/ps.time" "$work/pr.time")" \
		"$(jq -r .integrity "$work/pr.json")/$(integrity "$new" "$out")" \
		"bytes: $regions; bound: $bound"
}

run_rsync() {	# base new out
	local base=$1 new=$2 out=$3
	cp "$base" "$out"	# the receiver's old version, rsync's basis
	# --ignore-times: the old copy has the new one's size, and both were
	# written within the same second, so rsync's quick check would skip the
	# file (a run that did reported MISMATCH).
	tm "$work/rs.time" nsenter --net=/run/netns/"$nsa" rsync --no-whole-file --ignore-times --stats -e "$SSH" \
		--rsync-path="/usr/bin/time -f '%e %U %S' -o $work/rs-remote.time rsync" \
		"$new" "root@$ipb:$out" >"$work/rs.out"
	local sent recv
	sent=$(awk -F': ' '/^Total bytes sent/ { gsub(/,/, "", $2); print $2 }' "$work/rs.out")
	recv=$(awk -F': ' '/^Total bytes received/ { gsub(/,/, "", $2); print $2 }' "$work/rs.out")
	row "rsync (delta, over ssh)" "$((sent + recv))" "-" "$(wall_of "$work/rs.time")" \
		"$(cpu_of "$work/rs.time" "$work/rs-remote.time")" "$(integrity "$new" "$out")" \
		"client CPU includes ssh; wire = rsync's bytes sent + received"
}

# A coder as a pipeline over ssh: enc | ssh dec. label encode_cmd decode_cmd
run_pipe() {	# label base new out enc dec
	local label=$1 base=$2 new=$3 out=$4 enc=$5 dec=$6
	rm -f "$out"
	# Alone, for its size and its encode time.
	tm "$work/enc.time" sh -c "$enc > $work/coded"
	local wire
	wire=$(stat -c %s "$work/coded")
	tm "$work/pipe.time" nsenter --net=/run/netns/"$nsa" sh -c \
		"/usr/bin/time -f '%e %U %S' -o $work/penc.time sh -c '$enc' | $SSH root@$ipb \"/usr/bin/time -f '%e %U %S' -o $work/pdec.time sh -c '$dec > $out'\""
	row "$label" "$wire" "$(wall_of "$work/enc.time")" "$(wall_of "$work/pipe.time")" \
		"$(cpu_of "$work/penc.time" "$work/pdec.time")" "$(integrity "$new" "$out")" \
		"CPU: coder and decoder (ssh excluded)"
}

# One repetition into BENCH_ROWS (docs/design/bench-rows.md). Effective MB/s is the
# new version's bytes over the end-to-end time, as in the table; CPU is both
# ends' together, so only MB/CPU-s is given.
emit() {	# pair new_bytes row
	local f mb purpose=Peer integ=OK
	IFS=$'\t' read -r -a f <<< "$3"
	mb=$(awk -v b="$2" 'BEGIN { printf "%.6f", b / 1e6 }')
	[ "${f[0]}" = "PFS Delta" ] && purpose=Transfer
	[[ ${f[5]} == *MISMATCH* ]] && integ=MISMATCH
	bench_row suite=delta path="$1" label="${f[0]}" purpose=$purpose size_mb="$mb" elapsed_s="${f[3]}" \
		wire_mb_s="$(awk -v w="${f[1]}" -v e="${f[3]}" 'BEGIN { print w / 1e6 / e }')" \
		mb_per_cpu_s="$(awk -v m="$mb" -v c="${f[4]}" 'BEGIN { if (c > 0) print m / c }')" \
		integrity=$integ pthreads=1 \
		notes="wire ${f[1]} bytes; encode ${f[2]} s; CPU-s of both ends ${f[4]}; ${f[6]}"
}

median() {	# rows on stdin: the one with the median end-to-end time, the range noted
	sort -t$'\t' -k4,4g | awk -F'\t' -v OFS='\t' '{ r[NR] = $0; e[NR] = $4 }
		END { m = int((NR + 1) / 2); $0 = r[m]; $7 = $7 "; e2e " e[1] ".." e[NR] " s over " NR " runs"; print }'
}

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
results=()
for p in "${pairs[@]}"; do
	IFS='|' read -r name kind b n <<<"$p"
	[[ "$name" =~ ${ONLY:-.} ]] || continue
	base=$work/b/base new=$work/a/new out=$work/b/new
	cp "$CACHE/$b" "$work/a/base"; cp "$CACHE/$b" "$base"; cp "$CACHE/$n" "$new"
	size=$(stat -c %s "$new")
	echo "bench: $name ($size bytes)" >&2
	declare -A rr=()
	for r in $(seq "$REPS"); do
		rr[pfs]+="$(run_pfs "$work/a/base" "$new" "$out")"$'\n'
		# PFS's receiver rebuilt from its own copy of the base: both ends hold one.
		rr[rsync]+="$(run_rsync "$base" "$new" "$out")"$'\n'
		rr[zp1]+="$(run_pipe "zstd -1 --patch-from" "$base" "$new" "$out" \
			"zstd -q -c -1 --patch-from=$work/a/base $new" "zstd -q -d -c --patch-from=$base")"$'\n'
		rr[zp19]+="$(run_pipe "zstd -19 --long --patch-from" "$base" "$new" "$out" \
			"zstd -q -c -19 --long=27 --patch-from=$work/a/base $new" \
			"zstd -q -d -c --long=27 --patch-from=$base")"$'\n'
		rr[xd]+="$(run_pipe "xdelta3 -9" "$base" "$new" "$out" \
			"xdelta3 -e -9 -c -s $work/a/base $new" "xdelta3 -d -c -s $base")"$'\n'
		rr[zstd]+="$(run_pipe "zstd -3 (no base)" "$base" "$new" "$out" \
			"zstd -q -c -3 $new" "zstd -q -d -c")"$'\n'
		rr[full]+="$(run_pipe "full copy (cat over ssh)" "$base" "$new" "$out" \
			"cat $new" "cat")"$'\n'
	done
	for k in pfs rsync zp1 zp19 xd zstd full; do
		while IFS= read -r line; do
			[ -z "$line" ] || emit "$name" "$size" "$line"
		done <<< "${rr[$k]}"
		results+=("$name	$kind	$size	$(printf '%s' "${rr[$k]}" | sed '/^$/d' | median)")
	done
	unset rr
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- the table and the targets, from this run ----
table() {
	printf '%s\n' "${results[@]}" | awk -F'\t' '
	BEGIN { print "| pair | method | wire bytes | vs new | encode s | end-to-end s | CPU-s | effective MB/s | integrity |"
		print "|---|---|---:|---:|---:|---:|---:|---:|---|" }
	{ eff = $7 > 0 ? $3 / 1e6 / $7 : 0
	  printf "| %s | %s | %d | %.1f%% | %s | %.3f | %.3f | %.1f | %s |\n", $1, $4, $5, 100 * $5 / $3, $6, $7, $8, eff, $9 }'
}
targets() {
	printf '%s\n' "${results[@]}" | awk -F'\t' '
	{ w[$1, $4] = $5; t[$1, $4] = $7; k[$1] = $2; if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
	END {
	  for (i = 1; i <= n; i++) {
	    p = order[i]; pfs = w[p, "PFS Delta"]
	    if (k[p] == "a") {
	      best = w[p, "zstd -1 --patch-from"]
	      if (w[p, "zstd -19 --long --patch-from"] < best) best = w[p, "zstd -19 --long --patch-from"]
	      if (w[p, "xdelta3 -9"] < best) best = w[p, "xdelta3 -9"]
	      v = pfs <= best ? "met" : "MISSED"
	      printf "- %s: PFS wire %d vs the best of zstd --patch-from and xdelta3 %d (%.2fx): %s\n", p, pfs, best, pfs / best, v
	    }
	    if (k[p] == "b") {
	      z = w[p, "zstd -3 (no base)"]
	      v = pfs <= 1.05 * z ? "met" : "MISSED"
	      printf "- %s: PFS wire %d vs plain zstd %d (%+.1f%%; target within 5%%): %s\n", p, pfs, z, 100 * (pfs - z) / z, v
	    }
	    r = t[p, "rsync (delta, over ssh)"]; e = t[p, "PFS Delta"]
	    # As statements: inside printf arguments awk reads ">" as a redirection.
	    x = r > 0 ? e / r : 0; v = e < r ? "met" : "MISSED"
	    printf "- %s: PFS end-to-end %.3f s vs rsync %.3f s (%.2fx): %s\n", p, e, r, x, v
	  } }'
}
notes() {
	printf '%s\n' "${results[@]}" | awk -F'\t' '$4 == "PFS Delta" { printf "- %s: %s\n", $1, $10 }'
}
table
targets
if [ -n "$OUT_MD" ]; then
	{
		echo "# Delta mode against rsync, zstd --patch-from, xdelta3"
		echo
		echo "Generated by \`make -C dataplane bench-delta\` (\`dataplane/bench/delta.sh\`) on $(date -u +%F),"
		echo "$(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), kernel $(uname -r);"
		echo "load average $load_start before, $load_end after. Median of $REPS runs per row by end-to-end time;"
		echo "the range is in the notes below. Every pair is real data and runs in the same run:"
		echo
		echo "- (a) checkpoints of a real training run made by \`bench/delta_train.py\`: a 64-2048-2048-10"
		echo "  perceptron trained with Adam (lr 1e-3, batch 128) on scikit-learn 1.5.2's bundled digits"
		echo "  data set; held-out accuracy per checkpoint: $(tr '\n' ';' < "$CACHE/train/log.txt" | sed 's/;$//')."
		echo "- (b) \`silero_vad.onnx\` from the PyPI wheels of silero-vad 5.1.2 and 6.2.3 (same size,"
		echo "  retrained weights): the negative control."
		echo "- (c) golang.org/x/net v0.46.0 and v0.47.0 from the Go module proxy, each tarred with sorted"
		echo "  names and zeroed times."
		echo
		echo "Both ends are network namespaces joined by a veth pair, files on tmpfs. PFS Delta is"
		echo "\`pfs send/recv --mode delta --base OLD --src NEW --out FILE\` (receiver verifies SHA-256 before it"
		echo "renames the file into place); its encode time is the base index plus the encoder's busy time per"
		echo "thread. The other rows run over one throwaway sshd (aes128-gcm, no compression): rsync with its"
		echo "delta algorithm against the receiver's old copy, and each coder as \`coder | ssh host decoder\`; their"
		echo "end-to-end times include ssh's connection setup and encryption, which PFS does not do (it runs"
		echo "unencrypted on the cluster's data network). \"vs new\" is wire bytes over the new version's size."
		echo
		table
		echo
		echo "## Targets (from this run)"
		echo
		targets
		echo
		echo "## What PFS sent, and what bounded it"
		echo
		notes
	} > "$OUT_MD"
	echo "bench: wrote $OUT_MD" >&2
fi
