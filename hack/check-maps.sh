#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# `make verify`: the maps name every source file, so they cannot drift.
#
#   dataplane/README.md         names every file under dataplane/src/,
#                               dataplane/tools/pfs/ and dataplane/include/pfs/
#   docs/design/architecture.md names every Go package directory under
#                               controllers/, internal/, cmd/ and api/
#
# A data-plane file counts as named when the map holds its path from
# dataplane/ (`src/blob/blob.c`), or its file name in the map's row or section
# for its folder: the row "| `blob/` |" of the src/ table for src/blob/*, the
# row "| `include/pfs/` |" for include/pfs/*, the section "### `tools/pfs/`"
# for tools/pfs/*. So two files of one name in two folders (src/blob/blob.c,
# tools/pfs/blob.c) are each named where they live. A Go package counts as
# named when its directory appears as a word (`internal/placement`).
# Untracked files count as well (git ls-files -co), as in the generated-files
# check. Exits 1 and lists every missing name under the map that lacks it.
set -euo pipefail
cd "$(dirname "$0")/.."

DP_MAP=dataplane/README.md
GO_MAP=docs/design/architecture.md

# A name as a word of its own: not part of a longer file or identifier.
has_word() { # TEXT NAME
	local re
	re=$(printf '%s' "$2" | sed 's/[.[\*^$+?(){}|]/\\&/g')
	# A here-string, not a pipe: grep -q stops at the first match, and under
	# pipefail the writer's SIGPIPE would turn a match into a miss.
	grep -qE "(^|[^A-Za-z0-9_.-])${re}([^A-Za-z0-9_-]|$)" <<<"$1"
}

dp_text=$(cat "$DP_MAP")
# The section of the map under a heading, up to the next heading.
section() { awk -v h="$1" 'index($0, h) == 1 { f = 1; next } f && /^#/ { exit } f' "$DP_MAP"; }
# The row of a table whose first cell is `KEY`.
row() { grep -F "| \`$1\` |" "$DP_MAP" || true; }
tools_text=$(section '### `tools/pfs/`')

dp_missing=()
while read -r f; do
	rel=${f#dataplane/}
	name=${rel##*/}
	[ -e "$f" ] || continue
	if has_word "$dp_text" "$rel"; then continue; fi
	case $rel in
	src/*)
		folder=${rel#src/}
		folder=${folder%/*}
		has_word "$(row "$folder/")" "$name" && continue
		;;
	include/pfs/*) has_word "$(row include/pfs/)" "$name" && continue ;;
	tools/pfs/*) has_word "$tools_text" "$name" && continue ;;
	esac
	dp_missing+=("$rel")
done < <(git ls-files -co --exclude-standard -- dataplane/src dataplane/tools/pfs dataplane/include/pfs | sort -u)

go_text=$(cat "$GO_MAP")
go_missing=()
while read -r d; do
	has_word "$go_text" "$d" || has_word "$go_text" "$d/" || go_missing+=("$d")
done < <(git ls-files -co --exclude-standard -- 'controllers/*.go' 'internal/*.go' 'cmd/*.go' 'api/*.go' |
	while read -r f; do [ ! -e "$f" ] || dirname "$f"; done | sort -u)

rc=0
if [ ${#dp_missing[@]} -gt 0 ]; then
	echo "check-maps: $DP_MAP does not name these files (add each to its folder's row or section, or name its path from dataplane/):"
	printf '  %s\n' "${dp_missing[@]}"
	rc=1
fi
if [ ${#go_missing[@]} -gt 0 ]; then
	echo "check-maps: $GO_MAP does not name these Go package directories (add each to its Go packages table):"
	printf '  %s\n' "${go_missing[@]}"
	rc=1
fi
[ $rc -ne 0 ] || echo "check-maps: $DP_MAP and $GO_MAP name every source file and Go package"
exit $rc
