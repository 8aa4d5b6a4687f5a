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
# The module zip leaves out the vendor directory that its go.mod's Go
# version would make the build use: -mod=mod builds from the module cache,
# checked against its go.sum.
go_mod_build "$TOOLS_DIR/s5cmd-$S5CMD_VERSION/s5cmd" "$S5CMD_MOD" "$S5CMD_VERSION" "$S5CMD_SUM" . \
  -mod=mod -ldflags "-s -w -X $S5CMD_MOD/version.Version=${S5CMD_VERSION#v}"
