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
 * No variable-offset packet pointer arithmetic: without CAP_PERFMON (we ask
 * only for CAP_BPF + CAP_NET_ADMIN) the verifier's Spectre v1 hardening
 * refuses `pkt + scalar` ("pointer arithmetic with it prohibited for
 * !root"). Offsets are constants on every pointer path; the UDP header
 * behind IPv4 options (IHL > 5, rare) is read with bpf_xdp_load_bytes.
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
		*c += 1; /* per-CPU slot: no other writer */
	return verdict;
}

/* p + k with k an immediate, hidden from the optimiser: clang would
 * otherwise merge the IPv4 and IPv6 paths into `p += reg`, which the
 * verifier refuses without CAP_PERFMON (see the top of the file). */
#define PKT_ADD(ptr_, k_)                                                           \
	({                                                                          \
		void *__p = (void *)(ptr_);                                         \
		asm volatile("%[reg] += %[imm]" : [reg] "+r"(__p) : [imm] "i"(k_)); \
		__p;                                                                \
	})

/* The UDP destination port behind a packet pointer, or -1 if truncated. */
static __always_inline int udp_dport(struct udphdr *udp, void *end)
{
	if ((void *)(udp + 1) > end)
		return -1;
	return udp->dest;
}

SEC("xdp")
int pfs_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u32 l3off = sizeof(*eth);
	void *l3;
	__u16 proto;
	int dport;

	if ((void *)(eth + 1) > end)
		return count(PFS_XDP_MALFORMED, XDP_PASS);
	proto = eth->h_proto;
	l3 = PKT_ADD(data, sizeof(*eth));
	if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD)) {
		/* one tag: TCI (2 bytes) then the inner EtherType */
		__be16 *tag = l3;

		if ((void *)(tag + 2) > end)
			return count(PFS_XDP_MALFORMED, XDP_PASS);
		proto = tag[1];
		l3 = PKT_ADD(data, sizeof(*eth) + 4);
		l3off += 4;
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
		if (ihl == sizeof(*ip)) {
			dport = udp_dport(PKT_ADD(ip, sizeof(*ip)), end);
		} else {
			/* options: a scalar offset, no pointer arithmetic */
			struct udphdr uh;

			if (bpf_xdp_load_bytes(ctx, l3off + ihl, &uh, sizeof(uh)))
				dport = -1;
			else
				dport = uh.dest;
		}
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = l3;

		if ((void *)(ip6 + 1) > end)
			return count(PFS_XDP_MALFORMED, XDP_PASS);
		if (ip6->version != 6)
			return count(PFS_XDP_MALFORMED, XDP_PASS);
		if (ip6->nexthdr != IPPROTO_UDP) /* ND, ICMPv6, ext headers */
			return count(PFS_XDP_PASSED, XDP_PASS);
		dport = udp_dport(PKT_ADD(ip6, sizeof(*ip6)), end);
	} else {
		return count(PFS_XDP_PASSED, XDP_PASS); /* ARP, LLDP, ... */
	}

	if (dport < 0)
		return count(PFS_XDP_MALFORMED, XDP_PASS);
	if (dport != pfs_port)
		return count(PFS_XDP_PASSED, XDP_PASS);
	if (bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS) == XDP_REDIRECT)
		return count(PFS_XDP_REDIRECTED, XDP_REDIRECT);
	return count(PFS_XDP_NO_XSK, XDP_PASS);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
