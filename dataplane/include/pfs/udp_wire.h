/* SPDX-License-Identifier: Apache-2.0 */
/* The codec of the UDP transport's records (src/wire/udp_wire.c): the
 * fragment header of every data datagram and the repair-plane records of
 * the control connection. The transport itself is pfs/udp.h.
 *
 * Wire records (all little-endian):
 *
 * Fragment header, in front of every data datagram (PFS_UDP_FRAG_LEN bytes):
 *    0 4 magic "PFSD"   4 1 version 2   5 1 flags (bit 0: repair)
 *    6 2 frag_len (bytes after the header)
 *    8 8 gram seq      16 4 gram_len (encoded gram: header + table + slab)
 *   20 4 frag_off (offset of these bytes in the gram, a multiple of the
 *        fragment size)
 *   24 4 tsval (sender clock, microseconds, low 32 bits; echoed in ACKs)
 *   28 8 pn (datagram number: 0, 1, 2, ... per transfer, repairs included;
 *        the counter of the tag's nonce, so no nonce repeats under a key)
 *   36 16 tag (AES-128-GMAC under the transfer's datagram key over bytes
 *        0..35 and the fragment bytes: pfs/dgram_auth.h)
 *
 * Repair-plane record, on the TCP control connection (PFS_UDP_REC_LEN
 * bytes, then the body: NAK, n ranges of le32 first, le32 count; KEY, below):
 *    0 4 magic "PFSR"   4 1 type   5 1 flags   6 2 n
 *    8 8 a   16 8 b   24 8 c   32 4 d   36 4 e
 *   40 4 body_crc (CRC32C of the body: NAK ranges, KEY body; 0 when none)
 *   44 4 hdr_crc (CRC32C of bytes 0..43)
 *            a               b                c               d            e
 *   PARAMS   max gram len    sender UDP port  auth suite      frag bytes   window grams
 *   ACK      grams executed  datagrams recvd  socket drops    echo tsval   held us
 *   NAK      gram seq        0                0               0            0
 *   KEY      auth suite      0                0               0            0
 * NAK ranges name missing fragment indexes; count PFS_UDP_WHOLE_GRAM asks
 * for the whole gram (the receiver never saw a fragment of it). KEY (both
 * ways, right after PARAMS / ACCEPT) has a body of PFS_UDP_KEY_BODY bytes:
 * the side's X25519 public key (32) and, from the receiver, the 16-byte key
 * confirmation (zero from the sender). */
#ifndef PFS_UDP_WIRE_H
#define PFS_UDP_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define PFS_UDP_FRAG_MAGIC 0x44534650u /* "PFSD" */
#define PFS_UDP_REC_MAGIC 0x52534650u /* "PFSR" */
#define PFS_UDP_FRAG_VERSION 2 /* 1: no tag (before datagram authentication) */
#define PFS_UDP_FRAG_LEN 52
#define PFS_UDP_TAG_OFF 36 /* the tag covers the header bytes before it */
#define PFS_UDP_TAG_LEN 16
#define PFS_UDP_REC_LEN 48
#define PFS_UDP_KEY_PUB 32 /* X25519 public key */
#define PFS_UDP_KEY_CONFIRM 16
#define PFS_UDP_KEY_BODY (PFS_UDP_KEY_PUB + PFS_UDP_KEY_CONFIRM)
/* PARAMS c / KEY a: how datagrams are authenticated. 1: X25519 on both
 * ends, HKDF-SHA256, AES-128-GMAC tag per datagram (pfs/dgram_auth.h). */
#define PFS_UDP_SUITE_X25519_GMAC 1
#define PFS_UDP_MAX_RANGES 256 /* per NAK record */
#define PFS_UDP_WHOLE_GRAM 0xffffffffu
#define PFS_UDP_F_REPAIR 0x01 /* fragment flag: a retransmission */
#define PFS_UDP_F_ECHO 0x01 /* ACK flag: d/e hold a tsval echo */
#define PFS_UDP_DEFAULT_MTU 1500 /* -> 1472-byte UDP payload over IPv4 */

enum pfs_udp_rec_type {
	PFS_UDP_PARAMS = 1, /* sender -> receiver, right after HELLO */
	PFS_UDP_ACK = 2, /* receiver -> sender, every tick */
	PFS_UDP_NAK = 3, /* receiver -> sender, missing fragments of one gram */
	PFS_UDP_KEY = 4, /* both ways in the handshake: public key (+ confirmation) */
};

struct pfs_udp_frag {
	uint8_t flags;
	uint16_t frag_len;
	uint64_t seq;
	uint32_t gram_len;
	uint32_t frag_off;
	uint32_t tsval;
	uint64_t pn;
};

struct pfs_udp_range {
	uint32_t first;
	uint32_t count;
};

struct pfs_udp_rec {
	uint8_t type;
	uint8_t flags;
	uint16_t n; /* ranges (NAK) */
	uint64_t a, b, c;
	uint32_t d, e;
};

/* pfs_udp_frag_encode - write the PFS_UDP_FRAG_LEN-byte header of @f into
 * @out, the tag zero (pfs_dgram_auth__seal fills it). */
void pfs_udp_frag_encode(const struct pfs_udp_frag *f, void *out);
/* pfs_udp_frag_decode - check the layout of a datagram of @len bytes and
 * fill @f; the tag is checked by pfs_dgram_auth__verify, not here.
 * -EMSGSIZE shorter than the header or frag_len != len - PFS_UDP_FRAG_LEN,
 * -EBADMSG magic, -EPROTONOSUPPORT version, -EPROTO unknown flags, -ERANGE
 * the fragment lies outside gram_len. Never reads past @len. */
int pfs_udp_frag_decode(const void *buf, size_t len, struct pfs_udp_frag *f);

/* pfs_udp_rec_encode - header + @rec->n ranges into @out (PFS_UDP_REC_LEN +
 * 8 * n bytes; n <= PFS_UDP_MAX_RANGES). Returns the length or -E2BIG. */
int pfs_udp_rec_encode(const struct pfs_udp_rec *rec, const struct pfs_udp_range *rg, void *out);
/* pfs_udp_rec_decode_hdr - validate the 48-byte header. 0 or -EMSGSIZE,
 * -EBADMSG (magic), -EILSEQ (CRC), -EPROTO (type, or n on a type without
 * ranges), -E2BIG (n too big). */
int pfs_udp_rec_decode_hdr(const void *buf, size_t len, struct pfs_udp_rec *rec);
/* pfs_udp_rec_body_len - bytes that follow a validated header: 8 * n for a
 * NAK, PFS_UDP_KEY_BODY for a KEY, 0 otherwise. */
size_t pfs_udp_rec_body_len(const struct pfs_udp_rec *rec);
/* pfs_udp_rec_decode_ranges - the @rec->n ranges after a validated header
 * (@buf points at the header; @len bytes available). 0, -EMSGSIZE, -EILSEQ. */
int pfs_udp_rec_decode_ranges(const void *buf, size_t len, const struct pfs_udp_rec *rec,
			      struct pfs_udp_range *rg);

/* pfs_udp_key_encode - a KEY record (PFS_UDP_REC_LEN + PFS_UDP_KEY_BODY
 * bytes) into @out: suite PFS_UDP_SUITE_X25519_GMAC, @pub, @confirm (NULL:
 * zero, the sender's). Returns its length. */
int pfs_udp_key_encode(const uint8_t *pub, const uint8_t *confirm, void *out);
/* pfs_udp_key_decode - a whole KEY record of @len bytes: its public key and
 * confirmation into @pub and @confirm. 0, or the header's errors, -EPROTO
 * another type or a reserved field set, -EMSGSIZE short body, -EILSEQ body
 * CRC, -EPROTONOSUPPORT an unknown suite. */
int pfs_udp_key_decode(const void *buf, size_t len, uint8_t *pub, uint8_t *confirm);

#endif /* PFS_UDP_WIRE_H */
