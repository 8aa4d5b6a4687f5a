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

# netns_shape <ns> <dev> <rate|none>: <dev>'s egress (a node's uplink) at
# <rate>, as a NIC of that speed under Linux's default qdisc would send.
# HTB at the rate, pure ACKs first, the rest in a FIFO of the device's
# txqueuelen (about 6 ms at 2 Gbit/s). Why not one tbf FIFO: a node that
# sends while it receives (every relay) would queue the ACKs of what it
# receives behind up to its whole 100 ms of data, which no node does:
# fq_codel, the default, serves such sparse flows first. This kernel has no
# fq_codel, so the ACK class stands in for it.
netns_shape() {
	local ns=$1 dev=$2 rate=$3
	tc -n "$ns" qdisc del dev "$dev" root 2>/dev/null || true
	[ "$rate" = none ] && return 0
	local k ack
	case $rate in
	*gbit) k=$((${rate%gbit} * 1000000)) ;;
	*mbit) k=$((${rate%mbit} * 1000)) ;;
	*kbit) k=${rate%kbit} ;;
	*) echo "netns_shape: $rate: want N{k,m,g}bit or none" >&2; return 2 ;;
	esac
	# A class under its own rate sends without its parent's tokens, so the
	# two rates add up to the link's: the ACKs get 2% of it for sure and
	# borrow up to all of it, the rest gets 98% and borrows the same way.
	ack=$((k / 50))
	tc -n "$ns" qdisc add dev "$dev" root handle 1: htb default 20
	tc -n "$ns" class add dev "$dev" parent 1: classid 1:1 htb rate "${k}kbit" burst 256kb quantum 60000
	tc -n "$ns" class add dev "$dev" parent 1:1 classid 1:10 htb rate "${ack}kbit" \
		ceil "${k}kbit" burst 256kb prio 0 quantum 60000
	tc -n "$ns" class add dev "$dev" parent 1:1 classid 1:20 htb rate "$((k - ack))kbit" \
		ceil "${k}kbit" burst 256kb prio 1 quantum 60000
	# IPv4 TCP with an IP length under 128: no payload (an ACK, with
	# timestamps and up to 4 SACK blocks, or a SYN or FIN).
	tc -n "$ns" filter add dev "$dev" parent 1: protocol ip prio 1 u32 \
		match ip protocol 6 0xff match u16 0x0000 0xff80 at 2 flowid 1:10
}
