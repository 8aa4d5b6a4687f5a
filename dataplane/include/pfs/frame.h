/* SPDX-License-Identifier: Apache-2.0 */
/* Ethernet / IPv4-or-IPv6 / UDP frames around grams, for the AF_XDP link
 * layer: build (from a per-flow header template) and parse (validate
 * everything that came off the wire). Pure functions: no I/O, no state,
 * no allocation; safe on any thread.
 *
 * Frames built here: Ethernet II, optionally one 802.1Q tag, IPv4 (IHL 5,
 * DF set, TTL/hop limit 64) or IPv6 (no extension headers), UDP. The IPv4
 * header checksum is always set; the UDP checksum is always set for IPv6
 * (mandatory) and for IPv4 unless the template was made with
 * PFS_FRAME_NO_UDP_CSUM4 (then 0, "no checksum", as RFC 768 allows). */
#ifndef PFS_FRAME_H
#define PFS_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PFS_ETH_HLEN 14
#define PFS_VLAN_HLEN 4
/* Longest header built or accepted without IP options: eth+vlan+ipv6+udp. */
#define PFS_FRAME_MAX_HDR (PFS_ETH_HLEN + PFS_VLAN_HLEN + 40 + 8)

/* Template flags. */
#define PFS_FRAME_NO_UDP_CSUM4 0x1 /* IPv4: leave the UDP checksum 0 */

/* Addresses of one flow, as the sender writes them. IP addresses are in
 * network byte order: 4 bytes used for AF_INET, 16 for AF_INET6. */
struct pfs_frame_addr {
	uint8_t src_mac[6], dst_mac[6];
	uint16_t vlan; /* 0: untagged, else the VID (1..4094) */
	int family; /* AF_INET or AF_INET6 */
	uint8_t src_ip[16], dst_ip[16];
	uint16_t src_port, dst_port; /* host byte order */
};

/* A prepared header: built once per flow, then stamped on every frame with
 * only the lengths and checksums patched. */
struct pfs_frame_tmpl {
	uint8_t hdr[PFS_FRAME_MAX_HDR];
	uint16_t hlen; /* bytes of hdr used */
	uint16_t l3; /* offset of the IP header */
	uint16_t l4; /* offset of the UDP header */
	int family;
	uint32_t flags;
	uint32_t pseudo_sum; /* folded-later sum of the pseudo-header addresses + proto */
	uint16_t ip_id; /* not incremented: DF is set, ID is meaningless (RFC 6864) */
};

/* pfs_frame_tmpl_init - prepare @t for @a. 0, or -EINVAL (family not
 * AF_INET/AF_INET6, vlan > 4094). */
int pfs_frame_tmpl_init(struct pfs_frame_tmpl *t, const struct pfs_frame_addr *a, uint32_t flags);

/* pfs_frame_build - write one frame: the header of @t then @len payload
 * bytes from @payload (NULL: the payload is already at buf + t->hlen) into
 * @buf of @cap bytes. Returns the frame length, or -EMSGSIZE when it does not
 * fit @cap or the 16-bit IP/UDP length fields. */
int pfs_frame_build(const struct pfs_frame_tmpl *t, uint8_t *buf, size_t cap, const void *payload,
		    size_t len);

/* What a parsed frame holds. */
struct pfs_frame_info {
	uint16_t payload_off; /* UDP payload = frame + payload_off */
	uint16_t payload_len;
	uint16_t vlan; /* VID, 0 when untagged */
	int family;
	uint8_t src_mac[6], dst_mac[6];
	uint8_t src_ip[16], dst_ip[16];
	uint16_t src_port, dst_port; /* host byte order */
};

/* Parse flags. */
#define PFS_FRAME_VERIFY_CSUM 0x1 /* check IPv4 header and (non-zero) UDP checksums */

/* pfs_frame_parse - validate an Ethernet frame carrying UDP. @port: the
 * destination port wanted (host order), 0 for any. Returns 0 and fills @fi,
 * or:
 *   -EINVAL      truncated or inconsistent (short frame, bad version/IHL,
 *                IP or UDP length beyond the frame or below the header)
 *   -EPROTONOSUPPORT  not IPv4/IPv6 + UDP: other EtherType, other protocol,
 *                IPv4 fragment, IPv6 extension header, two VLAN tags
 *   -EBADMSG     a checksum is wrong (only with PFS_FRAME_VERIFY_CSUM; an
 *                IPv6 UDP checksum of 0 is also -EBADMSG)
 *   -ENOENT      UDP, but to another port
 * Trailing bytes after the IP datagram (Ethernet padding) are ignored. */
int pfs_frame_parse(const uint8_t *frame, size_t len, uint16_t port, uint32_t flags,
		    struct pfs_frame_info *fi);

/* pfs_inet_csum - the Internet checksum (RFC 1071) of @len bytes folded
 * with @sum (a previous partial sum, 0 to start); not complemented. */
uint32_t pfs_inet_sum(const void *data, size_t len, uint32_t sum);
uint16_t pfs_inet_fold(uint32_t sum); /* ~fold(sum), ready to store */

/* "aa:bb:cc:dd:ee:ff" -> 6 bytes; 0 or -EINVAL. */
int pfs_mac_parse(const char *s, uint8_t mac[6]);

#endif /* PFS_FRAME_H */
