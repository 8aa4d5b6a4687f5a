// SPDX-License-Identifier: Apache-2.0
/*
 * Ethernet/IP/UDP framing for the AF_XDP link layer (see pfs/frame.h). Pure
 * code: the caller owns every buffer; nothing here allocates, locks or
 * logs, so the per-queue worker threads call it on their own frames.
 *
 * Checksums: the pseudo-header part of the UDP checksum (addresses and
 * protocol) is summed once per flow into the template; per frame only the
 * length, the UDP header and the payload are added. The sum runs over
 * 64-bit loads with end-around carry (RFC 1071 section 2).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "pfs/frame.h"

#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_IPV6 0x86dd
#define ETHERTYPE_VLAN 0x8100
#define ETHERTYPE_QINQ 0x88a8
#define IPV4_DF 0x4000
#define IPV4_MF 0x2000
#define IPV4_OFFMASK 0x1fff

static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

uint32_t pfs_inet_sum(const void *data, size_t len, uint32_t sum)
{
	const uint8_t *p = data;
	uint64_t acc = sum;
	uint64_t w;

	/* 64-bit words: a carry out of bit 63 is added back (end-around). */
	while (len >= 8) {
		memcpy(&w, p, 8);
		acc += w;
		acc += acc < w;
		p += 8;
		len -= 8;
	}
	/* Fold to 32 bits in host order, then account the tail. On little
	 * endian the sum of byte-swapped 16-bit words is the byte swap of the
	 * sum, so the result is swapped back to network order below. */
	acc = (acc & 0xffffffff) + (acc >> 32);
	acc = (acc & 0xffffffff) + (acc >> 32);
	while (len >= 2) {
		uint16_t h;

		memcpy(&h, p, 2);
		acc += h;
		p += 2;
		len -= 2;
	}
	if (len) {
		uint16_t h = 0;

		memcpy(&h, p, 1); /* pad the odd byte with a zero byte */
		acc += h;
	}
	acc = (acc & 0xffff) + (acc >> 16);
	acc = (acc & 0xffff) + (acc >> 16);
	acc = (acc & 0xffff) + (acc >> 16);
	return (uint32_t)acc; /* 16 significant bits, in memory order */
}

uint16_t pfs_inet_fold(uint32_t sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* Sums are kept in memory byte order (what memcpy of a 16-bit word gives),
 * so a folded result is stored with memcpy, not put16. Host-order values
 * (lengths) are converted with htons before they are added. */
static inline uint32_t add16(uint32_t sum, uint16_t host_val)
{
	return sum + htons(host_val);
}

int pfs_frame_tmpl_init(struct pfs_frame_tmpl *t, const struct pfs_frame_addr *a, uint32_t flags)
{
	uint8_t *h = t->hdr;
	size_t off = 0;
	uint32_t ps = 0;

	if ((a->family != AF_INET && a->family != AF_INET6) || a->vlan > 4094)
		return -EINVAL;
	memset(t, 0, sizeof(*t));
	t->family = a->family;
	t->flags = flags;
	memcpy(h, a->dst_mac, 6);
	memcpy(h + 6, a->src_mac, 6);
	off = 12;
	if (a->vlan) {
		put16(h + off, ETHERTYPE_VLAN);
		put16(h + off + 2, a->vlan); /* PCP 0, DEI 0 */
		off += 4;
	}
	put16(h + off, a->family == AF_INET ? ETHERTYPE_IPV4 : ETHERTYPE_IPV6);
	off += 2;
	t->l3 = (uint16_t)off;
	if (a->family == AF_INET) {
		h[off] = 0x45; /* version 4, IHL 5 */
		h[off + 1] = 0; /* DSCP/ECN */
		put16(h + off + 6, IPV4_DF);
		h[off + 8] = 64; /* TTL */
		h[off + 9] = IPPROTO_UDP;
		memcpy(h + off + 12, a->src_ip, 4);
		memcpy(h + off + 16, a->dst_ip, 4);
		ps = pfs_inet_sum(a->src_ip, 4, 0);
		ps = pfs_inet_sum(a->dst_ip, 4, ps);
		off += 20;
	} else {
		h[off] = 0x60; /* version 6, class 0, flow 0 */
		h[off + 6] = IPPROTO_UDP; /* next header */
		h[off + 7] = 64; /* hop limit */
		memcpy(h + off + 8, a->src_ip, 16);
		memcpy(h + off + 24, a->dst_ip, 16);
		ps = pfs_inet_sum(a->src_ip, 16, 0);
		ps = pfs_inet_sum(a->dst_ip, 16, ps);
		off += 40;
	}
	ps = add16(ps, IPPROTO_UDP);
	t->pseudo_sum = ps;
	t->l4 = (uint16_t)off;
	put16(h + off, a->src_port);
	put16(h + off + 2, a->dst_port);
	off += 8;
	t->hlen = (uint16_t)off;
	return 0;
}

int pfs_frame_build(const struct pfs_frame_tmpl *t, uint8_t *buf, size_t cap, const void *payload,
		    size_t len)
{
	size_t ulen = 8 + len, total = t->hlen + len;
	uint8_t *ip = buf + t->l3, *udp = buf + t->l4;
	uint16_t c;

	if (total > cap || ulen > 0xffff || (t->family == AF_INET && ulen + 20 > 0xffff))
		return -EMSGSIZE;
	if (payload)
		memmove(buf + t->hlen, payload, len);
	memcpy(buf, t->hdr, t->hlen);
	if (t->family == AF_INET) {
		put16(ip + 2, (uint16_t)(20 + ulen));
		c = pfs_inet_fold(pfs_inet_sum(ip, 20, 0)); /* checksum field is 0 in hdr */
		memcpy(ip + 10, &c, 2);
	} else {
		put16(ip + 4, (uint16_t)ulen);
	}
	put16(udp + 4, (uint16_t)ulen);
	if (t->family == AF_INET6 || !(t->flags & PFS_FRAME_NO_UDP_CSUM4)) {
		uint32_t s = add16(t->pseudo_sum, (uint16_t)ulen);

		s = pfs_inet_sum(udp, ulen, s); /* UDP checksum field is 0 here */
		c = pfs_inet_fold(s);
		if (!c)
			c = 0xffff; /* 0 means "none": send all ones (RFC 768) */
		memcpy(udp + 6, &c, 2);
	}
	return (int)total;
}

int pfs_frame_parse(const uint8_t *f, size_t len, uint16_t port, uint32_t flags,
		    struct pfs_frame_info *fi)
{
	size_t off = 12, l4, ulen, iplen;
	uint16_t type;
	uint32_t ps;

	memset(fi, 0, sizeof(*fi));
	if (len < PFS_ETH_HLEN)
		return -EINVAL;
	memcpy(fi->dst_mac, f, 6);
	memcpy(fi->src_mac, f + 6, 6);
	type = get16(f + off);
	off += 2;
	if (type == ETHERTYPE_VLAN || type == ETHERTYPE_QINQ) {
		if (len < off + 4)
			return -EINVAL;
		fi->vlan = get16(f + off) & 0x0fff;
		type = get16(f + off + 2);
		off += 4;
		if (type == ETHERTYPE_VLAN || type == ETHERTYPE_QINQ)
			return -EPROTONOSUPPORT;
	}
	if (type == ETHERTYPE_IPV4) {
		const uint8_t *ip = f + off;
		size_t ihl;

		if (len < off + 20)
			return -EINVAL;
		ihl = (size_t)(ip[0] & 0x0f) * 4;
		iplen = get16(ip + 2);
		if (ip[0] >> 4 != 4 || ihl < 20 || len < off + ihl || iplen < ihl ||
		    len < off + iplen)
			return -EINVAL;
		if (ip[9] != IPPROTO_UDP || (get16(ip + 6) & (IPV4_MF | IPV4_OFFMASK)))
			return -EPROTONOSUPPORT;
		if ((flags & PFS_FRAME_VERIFY_CSUM) && pfs_inet_fold(pfs_inet_sum(ip, ihl, 0)))
			return -EBADMSG;
		fi->family = AF_INET;
		memcpy(fi->src_ip, ip + 12, 4);
		memcpy(fi->dst_ip, ip + 16, 4);
		ps = pfs_inet_sum(ip + 12, 8, 0);
		l4 = off + ihl;
		iplen -= ihl; /* bytes of UDP the IP header vouches for */
	} else if (type == ETHERTYPE_IPV6) {
		const uint8_t *ip = f + off;

		if (len < off + 40)
			return -EINVAL;
		iplen = get16(ip + 4);
		if (ip[0] >> 4 != 6 || len < off + 40 + iplen)
			return -EINVAL;
		if (ip[6] != IPPROTO_UDP)
			return -EPROTONOSUPPORT;
		fi->family = AF_INET6;
		memcpy(fi->src_ip, ip + 8, 16);
		memcpy(fi->dst_ip, ip + 24, 16);
		ps = pfs_inet_sum(ip + 8, 32, 0);
		l4 = off + 40;
	} else {
		return -EPROTONOSUPPORT;
	}
	if (iplen < 8)
		return -EINVAL;
	ulen = get16(f + l4 + 4);
	if (ulen < 8 || ulen > iplen)
		return -EINVAL;
	fi->src_port = get16(f + l4);
	fi->dst_port = get16(f + l4 + 2);
	if (port && fi->dst_port != port)
		return -ENOENT; /* not ours: not worth a checksum */
	if (flags & PFS_FRAME_VERIFY_CSUM) {
		uint16_t stored = get16(f + l4 + 6);

		if (stored || fi->family == AF_INET6) {
			ps = add16(ps, IPPROTO_UDP);
			ps = add16(ps, (uint16_t)ulen);
			if (pfs_inet_fold(pfs_inet_sum(f + l4, ulen, ps)))
				return -EBADMSG;
		}
	}
	fi->payload_off = (uint16_t)(l4 + 8);
	fi->payload_len = (uint16_t)(ulen - 8);
	return 0;
}

int pfs_mac_parse(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	char tail;

	if (!s || sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
			 &tail) != 6)
		return -EINVAL;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return 0;
}
