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

# A veth pair between two fresh namespaces, addressed in one /24, loopback
# and both ends up.
netns_veth_pair() {	# ns_a ns_b veth_a veth_b ip_a ip_b
	local nsa=$1 nsb=$2 va=$3 vb=$4 ipa=$5 ipb=$6 n
	ip netns add "$nsa"; ip netns add "$nsb"
	ip link add "$va" type veth peer name "$vb"
	ip link set "$va" netns "$nsa"; ip link set "$vb" netns "$nsb"
	ip -n "$nsa" addr add "$ipa/24" dev "$va"; ip -n "$nsb" addr add "$ipb/24" dev "$vb"
	for n in "$nsa" "$nsb"; do ip -n "$n" link set lo up; done
	ip -n "$nsa" link set "$va" up; ip -n "$nsb" link set "$vb" up
}
