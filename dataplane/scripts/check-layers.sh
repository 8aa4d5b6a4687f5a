#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check-layers.sh: the library's folders are layers, read bottom-up, and no
# file of the library (src/**, include/pfs/*.h) includes a header of a
# higher layer, nor one of another folder of its own layer (siblings stay
# independent). A folder sees its own headers and everything below it.
#
# The two tables below are the whole rule. A src/ folder with no rank, a
# public header with no folder, or an entry naming something that no longer
# exists is itself an error, so the tables cannot go stale.
#
# Usage: scripts/check-layers.sh (from dataplane/, or any directory: it
# finds its tree). Exit 0 when clean, 1 with one line per violation.
set -euo pipefail

cd "$(dirname "$0")/.."

# Layers, bottom first: "rank folder...". Folders of one rank are siblings.
LAYERS=(
	"1 util"                              # logging
	"2 integrity"                         # CRC32C, FNV-1a
	"3 ops blob"                          # byte-op kernels, CRC index; blob memory
	"4 wire"                              # codecs of every byte that crosses a process
	"5 manifest pcore link report delta remote" # over memory and codecs; delta: encoder, index,
	                                      # appliers; remote: HTTP, TLS, SigV4 to object stores
	"6 source transport share"            # files into a blob; moving grams (the engine, its delta mode too);
	                                      # sharing (a files-layout blob is opened by its manifest)
	"7 repl"                              # replication over transports and delta
)

# Public headers (include/pfs/) and the folder that implements each.
HEADERS=(
	"log.h util"
	"cgroup_cpu.h util"
	"integrity.h integrity"
	"ops.h ops" "crc_index.h ops"
	"blob.h blob" "blob_files.h blob"
	"wire.h wire" "gram.h wire" "frame.h wire" "udp_wire.h wire" "delta_wire.h wire"
	"share_wire.h wire" "repl_wire.h wire"
	"blob_manifest.h manifest"
	"blob_share.h share"
	"pcore.h pcore"
	"caps.h link" "netdev.h link" "xdp.h link" "xsk.h link"
	"result.h report"
	"blob_source.h source"
	"xfer.h transport" "schedule.h transport" "tcp.h transport" "udp.h transport"
	"afxdp.h transport" "dgram_auth.h transport"
	"delta.h delta"
	"blob_repl.h repl" "blob_chunks.h repl"
)

# Headers outside src/ and include/: the XDP program's ABI (bpf/) and its
# generated skeleton belong to the link layer that loads it.
OTHER=("pfs_xdp_abi.h link" "pfs_xdp.skel.h link")

declare -A rank_of folder_of
errors=()
err() { errors+=("$*"); }

for line in "${LAYERS[@]}"; do
	read -r r folders <<<"$line"
	for f in $folders; do
		rank_of[$f]=$r
		[ -d "src/$f" ] || err "check-layers: layer table names src/$f/, which does not exist"
	done
done
for d in src/*/; do
	d=${d#src/}
	d=${d%/}
	[ -n "${rank_of[$d]:-}" ] || err "check-layers: src/$d/ has no layer: add it to LAYERS in $0"
done

for line in "${HEADERS[@]}"; do
	read -r h f <<<"$line"
	folder_of[pfs/$h]=$f
done
for line in "${OTHER[@]}"; do
	read -r h f <<<"$line"
	folder_of[$h]=$f
done
for f in "${folder_of[@]}"; do
	[ -n "${rank_of[$f]:-}" ] || err "check-layers: a header table names folder $f, which has no layer"
done
for line in "${HEADERS[@]}"; do
	read -r h _ <<<"$line"
	[ -f "include/pfs/$h" ] || err "check-layers: header table names include/pfs/$h, which does not exist"
done
for p in include/pfs/*.h; do
	[ -n "${folder_of[pfs/${p##*/}]:-}" ] || err "check-layers: $p has no layer: add it to HEADERS in $0"
done

# folder_of_include FILE INCLUDE: the folder a quoted include of FILE
# resolves to (the file's own folder first, then src/, then include/), or
# nothing for a header this script does not know.
folder_of_include() {
	local file=$1 inc=$2 dir
	dir=$(dirname "$file")
	case $file in
	src/*)
		if [ -f "$dir/$inc" ]; then
			dir=${dir#src/}
			echo "${dir%%/*}"
			return
		fi
		;;
	esac
	if [ -f "src/$inc" ]; then
		echo "${inc%%/*}"
	elif [ -n "${folder_of[$inc]:-}" ]; then
		echo "${folder_of[$inc]}"
	fi
}

check_file() {
	local file=$1 own=$2 inc to
	while read -r inc; do
		to=$(folder_of_include "$file" "$inc")
		if [ -z "$to" ]; then
			err "check-layers: $file includes \"$inc\", a header of no known layer"
			continue
		fi
		[ "$to" = "$own" ] && continue
		if [ "${rank_of[$to]}" -ge "${rank_of[$own]}" ]; then
			local how="a higher layer"
			[ "${rank_of[$to]}" -eq "${rank_of[$own]}" ] && how="a sibling of the same layer"
			err "check-layers: $file (layer ${rank_of[$own]}, $own/) includes \"$inc\" (layer ${rank_of[$to]}, $to/): $how"
		fi
	done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file")
}

for file in $(find src -name '*.[ch]' | sort); do
	own=${file#src/}
	own=${own%%/*}
	# A folder with no rank was reported above.
	[ -n "${rank_of[$own]:-}" ] && check_file "$file" "$own"
done
for file in include/pfs/*.h; do
	own=${folder_of[pfs/${file##*/}]:-}
	[ -n "$own" ] && check_file "$file" "$own"
done

if [ ${#errors[@]} -gt 0 ]; then
	printf '%s\n' "${errors[@]}" >&2
	layers=$(printf '%s; ' "${LAYERS[@]}" | sed 's/  */ /g; s/; $//')
	echo "check-layers: ${#errors[@]} problem(s); the layers, bottom first: $layers" >&2
	exit 1
fi
echo "check-layers: $(find src -name '*.[ch]' | wc -l) src files and $(ls include/pfs/*.h | wc -l) public headers follow the layers"
