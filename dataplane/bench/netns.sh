# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Sourced by the benchmark scripts that build their own network namespaces.

# Stop whatever still runs inside the namespaces (the caller started all of
# it), then delete them; quiet, for cleanup traps.
netns_remove() {	# ns...
	local n p
	for n in "$@"; do
		for p in $(ip netns pids "$n" 2>/dev/null); do kill "$p" 2>/dev/null; done
	done
	sleep 0.2
	for n in "$@"; do ip netns del "$n" 2>/dev/null; done
	return 0
}
