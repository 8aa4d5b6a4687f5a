#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# s5cmd, the fast Go S3 client the S3 benchmark (dataplane/bench/s3.sh)
# compares the origin's read with: built once from the Go module proxy at a
# pinned version, its go.sum hash checked, and cached outside the repo in
# $PFS_CACHE/tools/s5cmd-<version>/s5cmd, as hack/s3-server.sh caches weed.
# Prints the binary's path (progress on stderr).
#   hack/s3/s5cmd.sh
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../kind/lib.sh
source "$(dirname "$0")/../kind/lib.sh"

# The proxy lists no versions of this module, but serves this exact one.
S5CMD_VERSION=v2.3.0
S5CMD_SUM=h1:g8KSD2o4pcyzUsAaWsn7TGb+j4w+/mI1B5NmfDR0Bbs=
S5CMD_MOD=github.com/peak/s5cmd/v2
dir="$TOOLS_DIR/s5cmd-$S5CMD_VERSION"
bin=$dir/s5cmd

build() {
  local tmp src start
  start=$(date +%s)
  # Next to the cache entry: the final mv is a rename, a reader sees no
  # binary or a whole one.
  tmp=$(mktemp -d "$dir/build.XXXXXX")
  # shellcheck disable=SC2064  # expand tmp now
  trap "rm -rf '$tmp'" EXIT
  log "s5cmd: building $S5CMD_MOD@$S5CMD_VERSION from the Go module proxy"
  src=$(cd "$tmp" && go_mod_dir "$S5CMD_MOD" "$S5CMD_VERSION" "$S5CMD_SUM")
  # `go install mod@version` asks the proxy for the version list (to look
  # for a deprecation), which it refuses here: build a writable copy of the
  # module's tree instead, checked against its own go.sum (-mod=mod: the
  # module zip leaves out the vendor directory that go.mod's Go version
  # would otherwise make the build use).
  cp -r "$src" "$tmp/src"
  chmod -R u+w "$tmp/src"
  (cd "$tmp/src" && CGO_ENABLED=0 go build -mod=mod -trimpath \
    -ldflags "-s -w -X $S5CMD_MOD/version.Version=${S5CMD_VERSION#v}" -o "$tmp/s5cmd" .) >"$tmp/build.log" 2>&1 ||
    { tail -n 30 "$tmp/build.log" >&2; die "s5cmd: go build failed"; }
  mv "$tmp/s5cmd" "$bin"
  rm -rf "$tmp"
  trap - EXIT
  log "s5cmd: built $bin in $(($(date +%s) - start)) s"
}

if [ ! -x "$bin" ]; then
  mkdir -p "$dir"
  exec 9>"$dir.lock"
  flock 9 # two runs at once build it once
  [ -x "$bin" ] || build
  exec 9>&-
fi
echo "$bin"
