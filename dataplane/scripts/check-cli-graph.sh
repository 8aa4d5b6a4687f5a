#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The call graph of the pfs CLI's files, read from their objects: file A
# calls file B when a symbol A leaves undefined is defined in B (nm). Fails,
# naming what broke it, when
#   - the graph has a cycle (printed as a -> b -> a), or
#   - a subcommand file (one that defines a pfs_cmd_* entry point) is called
#     by any file but main.c: subcommands are leaves over shared services,
#     reached only through main.c's command table.
#   scripts/check-cli-graph.sh [-e] [OBJ.o ...]     (run from dataplane/)
# -e prints the edges (caller -> callee: symbols) before checking.
# The objects default to build/tools/pfs/*.o; `make check-cli` passes the
# ones of the current sources (a stale object of a removed file is no edge).
set -euo pipefail
edges=0
if [ "${1:-}" = -e ]; then edges=1; shift; fi
shopt -s nullglob
if [ $# -gt 0 ]; then objs=("$@"); else objs=(build/tools/pfs/*.o); fi
if [ ${#objs[@]} -eq 0 ]; then
	echo "check-cli-graph: no objects (build pfs first: make build/pfs)" >&2
	exit 2
fi
# One line per symbol: "D file sym" (defined, global) or "U file sym".
for o in "${objs[@]}"; do
	f=$(basename "$o" .o).c
	nm -g --defined-only "$o" | awk -v f="$f" 'NF == 3 { print "D", f, $3 }'
	nm -u "$o" | awk -v f="$f" '{ print "U", f, $NF }'
done | awk -v edges="$edges" '
!($2 in files) { files[$2] = 1; fs[++nf] = $2 }
$1 == "D" { def[$3] = $2; if ($3 ~ /^pfs_cmd_/) leaf[$2] = 1; next }
{ use[++nu] = $2 " " $3 }
END {
	for (i = 1; i <= nu; i++) {
		split(use[i], u, " ")
		to = def[u[2]]
		if (to == "" || to == u[1])
			continue
		key = u[1] " " to
		if (!(key in syms)) {
			syms[key] = u[2]
			out[u[1]] = out[u[1]] " " to
		} else {
			syms[key] = syms[key] " " u[2]
		}
	}
	if (edges) {
		for (k in syms) {
			split(k, e, " ")
			printf "%s -> %s:%s\n", e[1], e[2], " " syms[k] | "sort"
		}
		close("sort")
	}
	bad = 0
	ne = 0
	for (k in syms) {
		ne++
		split(k, e, " ")
		if ((e[2] in leaf) && e[1] != "main.c") {
			printf "check-cli-graph: subcommand file %s is called by %s (%s); only main.c may call it\n", e[2], e[1], syms[k] | "sort"
			bad = 1
		}
	}
	close("sort")
	# Depth-first search; a grey node met again closes a cycle.
	for (i = 1; i <= nf && !cyc; i++)
		if (!color[fs[i]])
			dfs(fs[i], 0)
	if (cyc) {
		printf "check-cli-graph: cycle: %s\n", cyc
		bad = 1
	}
	if (!bad)
		printf "check-cli-graph: %d files, %d edges, no cycle, subcommands called only by main.c\n", nf, ne
	exit bad
}
function dfs(f, depth,    n, t, i, j, s) {
	color[f] = 1
	stack[depth] = f
	n = split(out[f], t, " ")
	for (i = 1; i <= n && !cyc; i++) {
		if (color[t[i]] == 1) {
			for (j = 0; j <= depth; j++)
				if (stack[j] == t[i])
					break
			s = ""
			for (; j <= depth; j++)
				s = s stack[j] " -> "
			cyc = s t[i]
		} else if (!color[t[i]]) {
			dfs(t[i], depth + 1)
		}
	}
	color[f] = 2
}
'
