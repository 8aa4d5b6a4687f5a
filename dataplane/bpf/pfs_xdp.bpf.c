// SPDX-License-Identifier: (Apache-2.0 OR GPL-2.0-only)
/*
 * pfs_xdp: the XDP program of the AF_XDP gram transport. It redirects only
 * our gram traffic -- UDP to destination port `pfs_port` over IPv4 or IPv6,
 * optionally behind one 802.1Q/802.1ad tag -- to the AF_XDP socket bound to
 * the queue the frame arrived on (XSKMAP keyed by rx_queue_index). Everything
 * else (ARP, IPv6 neighbour discovery, ICMP, TCP, other UDP ports, IPv4
 * fragments, IPv6 with extension headers) is XDP_PASS to the kernel: the
 * program must never steal a node's other traffic. A queue without a socket
 * passes its frames too (bpf_redirect_map's XDP_PASS fallback).
 *
 * Limits, on purpose: IPv6 extension headers are not walked (a UDP header
 * behind a Hop-by-Hop or Fragment header is passed, not redirected), and
 * IPv4 fragments are passed (grams are sized to fit the MTU; the sender
 * never fragments). IPv4 options (IHL > 5) are handled.
 *
 * `pfs_port` lives in .rodata: user space sets it through the skeleton
 * before load, so the verifier sees a constant. Counters are per CPU; user
 * space sums them.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "pfs_xdp_abi.h"

#ifndef ETH_P_8021AD
#define ETH_P_8021AD 0x88A8
#endif
#define IP_MF 0x2000
#define IP_OFFSET 0x1fff

/* UDP destination port, network byte order; set before load. */
const volatile __u16 pfs_port = 0;

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, PFS_XDP_MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PFS_XDP_NCOUNTERS);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline int count(__u32 slot, int verdict)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &slot);

	if (c)
		*c += 1;	/* per-CPU slot: no other writer */
	return verdict;
}

SEC("xdp")
int pfs_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct udphdr *udp;
	void *l3;
	__u16 proto;

	if ((void *)(eth + 1) > end)
		return count(PFS_XDP_MALFORMED, XDP_PASS);
	proto = eth->h_proto;
	l3 = eth + 1;
	if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD)) {
		/* one tag: TCI (2 bytes) then the inner EtherType */
		__be16 *tag = l3;

		if ((void *)(tag + 2) > end)
			return count(PFS_XDP_MALFORMED, XDP_PASS);
		proto = tag[1];
		l3 = tag + 2;
	}

	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = l3;
		__u32 ihl;

		if ((void *)(ip + 1) > end)
			return count(PFS_XDP_MALFORMED, XDP_PASS);
		ihl = ip->ihl * 4;
		if (ip->version != 4 || ihl < sizeof(*ip))
			return count(PFS_XDP_MALFORMED, XDP_PASS);
		if (ip->protocol != IPPROTO_UDP)
			return count(PFS_XDP_PASSED, XDP_PASS);
		if (ip->frag_off & bpf_htons(IP_MF | IP_OFFSET))
			return count(PFS_XDP_PASSED, XDP_PASS);
		udp = (void *)ip + ihl;	/* ihl <= 60: bounded for the verifier */
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = l3;

		if ((void *)(ip6 + 1) > end)
			return count(PFS_XDP_MALFORMED, XDP_PASS);
		if (ip6->version != 6)
			return count(PFS_XDP_MALFORMED, XDP_PASS);
		if (ip6->nexthdr != IPPROTO_UDP)	/* ND, ICMPv6, ext headers */
			return count(PFS_XDP_PASSED, XDP_PASS);
		udp = (void *)(ip6 + 1);
	} else {
		return count(PFS_XDP_PASSED, XDP_PASS);	/* ARP, LLDP, ... */
	}

	if ((void *)(udp + 1) > end)
		return count(PFS_XDP_MALFORMED, XDP_PASS);
	if (udp->dest != pfs_port)
		return count(PFS_XDP_PASSED, XDP_PASS);
	if (bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS) == XDP_REDIRECT)
		return count(PFS_XDP_REDIRECTED, XDP_REDIRECT);
	return count(PFS_XDP_NO_XSK, XDP_PASS);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
