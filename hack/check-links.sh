#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# `make verify`: every link to a local file resolves, so moving a page
# cannot leave a dangling reference behind.
#
# 1. Markdown links: every `](path)`, `](path#anchor)` and `](#anchor)` in
#    README.md, docs/**/*.md and the READMEs under dataplane/ must name a file
#    or directory that exists, relative to the page (or to the repository root
#    when the path starts with /), and an anchor into a markdown page must be
#    one of its headings. Web links (scheme:) and links inside code spans or
#    fences are skipped.
# 2. Mentions of docs pages anywhere in the tracked text (code comments,
#    scripts, chart values, Makefiles): every `docs/...` path must exist
#    relative to the file's directory or one of its parents up to the
#    repository root (a script that runs from dataplane/ writes
#    ../docs/bench/...). A path with a glob (*) or a placeholder (<suite>)
#    must match at least one file.
# Untracked files count as well (git ls-files -co), as in the generated-files
# check. Exits 1 and lists every broken link as FILE:LINE: TARGET.
set -euo pipefail
export LC_ALL=C.UTF-8 # [:alnum:] takes letters of every script, as GitHub does
cd "$(dirname "$0")/.."

broken=()

# The text of a markdown page without fenced code blocks (replaced by blank
# lines, so line numbers stay), where a # is not a heading; strip_code blanks
# code spans as well, where a ]( is not a link.
strip_fences() {
	awk '/^[ \t]*(```|~~~)/ { fence = !fence; print ""; next }
		fence { print ""; next } { print }' "$1"
}
strip_code() { strip_fences "$1" | sed 's/`[^`]*`//g'; }

# The anchors of a page's headings, as GitHub makes them: lower case, every
# character but letters, digits, spaces, - and _ dropped, spaces to -, and
# -1, -2, ... after a repeated one.
anchors() {
	strip_fences "$1" | sed -n 's/^#\{1,6\} \{1,\}//p' | tr '[:upper:]' '[:lower:]' |
		sed 's/[^[:alnum:] _-]//g; s/ /-/g' |
		awk '{ n = seen[$0]++; print (n ? $0 "-" n : $0) }'
}

pages=$(git ls-files -co --exclude-standard -- README.md ':(glob)docs/**/*.md' ':(glob)dataplane/**/README.md' | sort -u)
for page in $pages; do
	[ -e "$page" ] || continue
	dir=$(dirname "$page")
	while IFS=: read -r line link; do
		target=${link#](}
		target=${target%)}
		target=${target%% *} # a title after the path
		case $target in
		'' | *:*) continue ;;
		esac
		path=${target%%#*}
		case $path in
		'') resolved=$page ;;
		/*) resolved=.$path ;;
		*) resolved=$dir/$path ;;
		esac
		if [ ! -e "$resolved" ]; then
			broken+=("$page:$line: $target")
		elif [[ $target == *'#'* && $resolved == *.md ]] &&
			! anchors "$resolved" | grep -qxF "${target#*#}"; then
			broken+=("$page:$line: $target (no such heading)")
		fi
	done < <(strip_code "$page" | grep -noE '\]\([^)[:space:]]+( "[^"]*")?\)' || true)
done

# Mentions of docs/ paths: not part of a longer path (a URL's /docs/), but
# ../docs/ counts, since scripts name the page from their own directory.
exists_from() { # DIR PATH: PATH exists from DIR or a parent of it
	local d=$1 p=$2
	# A path cut at a variable (docs/bench/bench-$s.md) is a prefix.
	case $p in *[-_]) p=$p'*' ;; esac
	while :; do
		if [[ $p == *[*\<]* ]]; then
			compgen -G "$d/$(printf '%s' "$p" | sed 's/<[^>]*>/*/g')" >/dev/null && return 0
		else
			[ -e "$d/$p" ] && return 0
		fi
		[ "$d" = . ] && return 1
		d=$(dirname "$d")
	done
}
while IFS=: read -r file line mention; do
	mention=${mention%.} # the end of a sentence
	exists_from "$(dirname "$file")" "$mention" || broken+=("$file:$line: $mention")
done < <(git ls-files -co --exclude-standard -z | xargs -0 grep -InoP \
	'(?:(?<![\w.-])(?:\.\./)+|(?<![\w/.$-])|(?<=_ROOT/)|(?<=_ROOT}/))docs/[\w./*<>-]*' -- 2>/dev/null || true)

if [ ${#broken[@]} -gt 0 ]; then
	echo "check-links: these links name no file (fix the link, or the page moved: point it at the new path):"
	printf '  %s\n' "${broken[@]}"
	exit 1
fi
echo "check-links: every local link in the docs and every docs/ path in the tree resolves"
