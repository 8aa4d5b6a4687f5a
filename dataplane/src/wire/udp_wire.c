// SPDX-License-Identifier: Apache-2.0
/*
 * UDP wire codec: the fragment header in front of every data datagram and
 * the repair-plane records (PARAMS, ACK, NAK) of the control connection.
 * and the KEY record of the handshake. Pure functions over byte buffers; no
 * state, no allocation. Decoders never read outside [buf, buf+len) and check
 * every length before trusting it (fuzzed by fuzz/fuzz_gram.c together with
 * the gram codec). The fragment's tag is computed and checked by
 * src/transport/dgram_auth.c, which owns the key.
 */
#include <errno.h>
#include <string.h>

#include "pfs/integrity.h"
#include "pfs/udp_wire.h"
#include "wire_le.h"

void pfs_udp_frag_encode(const struct pfs_udp_frag *f, void *out)
{
	uint8_t *b = out;

	put32(b, PFS_UDP_FRAG_MAGIC);
	b[4] = PFS_UDP_FRAG_VERSION;
	b[5] = f->flags;
	put16(b + 6, f->frag_len);
	put64(b + 8, f->seq);
	put32(b + 16, f->gram_len);
	put32(b + 20, f->frag_off);
	put32(b + 24, f->tsval);
	put64(b + 28, f->pn);
	memset(b + PFS_UDP_TAG_OFF, 0, PFS_UDP_TAG_LEN);
}

int pfs_udp_frag_decode(const void *buf, size_t len, struct pfs_udp_frag *f)
{
	const uint8_t *b = buf;

	if (len < PFS_UDP_FRAG_LEN)
		return -EMSGSIZE;
	if (get32(b) != PFS_UDP_FRAG_MAGIC)
		return -EBADMSG;
	/* No CRC: the tag covers the header, and forging a CRC is free. */
	if (b[4] != PFS_UDP_FRAG_VERSION)
		return -EPROTONOSUPPORT;
	if (b[5] & ~PFS_UDP_F_REPAIR)
		return -EPROTO;
	f->flags = b[5];
	f->frag_len = get16(b + 6);
	f->seq = get64(b + 8);
	f->gram_len = get32(b + 16);
	f->frag_off = get32(b + 20);
	f->tsval = get32(b + 24);
	f->pn = get64(b + 28);
	if (f->frag_len != len - PFS_UDP_FRAG_LEN)
		return -EMSGSIZE;
	if (!f->frag_len || f->frag_off >= f->gram_len || f->frag_len > f->gram_len - f->frag_off)
		return -ERANGE;
	return 0;
}

int pfs_udp_rec_encode(const struct pfs_udp_rec *r, const struct pfs_udp_range *rg, void *out)
{
	uint8_t *b = out;

	if (r->n > PFS_UDP_MAX_RANGES)
		return -E2BIG;
	put32(b, PFS_UDP_REC_MAGIC);
	b[4] = r->type;
	b[5] = r->flags;
	put16(b + 6, r->n);
	put64(b + 8, r->a);
	put64(b + 16, r->b);
	put64(b + 24, r->c);
	put32(b + 32, r->d);
	put32(b + 36, r->e);
	for (uint16_t i = 0; i < r->n; i++) {
		put32(b + PFS_UDP_REC_LEN + 8 * i, rg[i].first);
		put32(b + PFS_UDP_REC_LEN + 8 * i + 4, rg[i].count);
	}
	put32(b + 40, r->n ? pfs_crc32c(0, b + PFS_UDP_REC_LEN, 8 * r->n) : 0);
	put32(b + 44, pfs_crc32c(0, b, 44));
	return PFS_UDP_REC_LEN + 8 * r->n;
}

int pfs_udp_rec_decode_hdr(const void *buf, size_t len, struct pfs_udp_rec *r)
{
	const uint8_t *b = buf;

	if (len < PFS_UDP_REC_LEN)
		return -EMSGSIZE;
	if (get32(b) != PFS_UDP_REC_MAGIC)
		return -EBADMSG;
	if (get32(b + 44) != pfs_crc32c(0, b, 44))
		return -EILSEQ;
	if (b[4] < PFS_UDP_PARAMS || b[4] > PFS_UDP_KEY)
		return -EPROTO;
	r->type = b[4];
	r->flags = b[5];
	r->n = get16(b + 6);
	r->a = get64(b + 8);
	r->b = get64(b + 16);
	r->c = get64(b + 24);
	r->d = get32(b + 32);
	r->e = get32(b + 36);
	if (r->n > PFS_UDP_MAX_RANGES)
		return -E2BIG;
	if (r->type != PFS_UDP_NAK && r->n)
		return -EPROTO;
	return 0;
}

int pfs_udp_rec_decode_ranges(const void *buf, size_t len, const struct pfs_udp_rec *r,
			      struct pfs_udp_range *rg)
{
	const uint8_t *b = buf;
	size_t need = PFS_UDP_REC_LEN + 8 * (size_t)r->n;

	if (len < need)
		return -EMSGSIZE;
	if (get32(b + 40) != (r->n ? pfs_crc32c(0, b + PFS_UDP_REC_LEN, 8 * r->n) : 0))
		return -EILSEQ;
	for (uint16_t i = 0; i < r->n; i++) {
		rg[i].first = get32(b + PFS_UDP_REC_LEN + 8 * i);
		rg[i].count = get32(b + PFS_UDP_REC_LEN + 8 * i + 4);
	}
	return 0;
}

size_t pfs_udp_rec_body_len(const struct pfs_udp_rec *r)
{
	return r->type == PFS_UDP_NAK ? 8 * (size_t)r->n :
	       r->type == PFS_UDP_KEY ? PFS_UDP_KEY_BODY :
					0;
}

int pfs_udp_key_encode(const uint8_t *pub, const uint8_t *confirm, void *out)
{
	struct pfs_udp_rec r = { .type = PFS_UDP_KEY, .a = PFS_UDP_SUITE_X25519_GMAC };
	uint8_t *b = out, *body = b + PFS_UDP_REC_LEN;

	memcpy(body, pub, PFS_UDP_KEY_PUB);
	if (confirm)
		memcpy(body + PFS_UDP_KEY_PUB, confirm, PFS_UDP_KEY_CONFIRM);
	else
		memset(body + PFS_UDP_KEY_PUB, 0, PFS_UDP_KEY_CONFIRM);
	pfs_udp_rec_encode(&r, NULL, b);
	/* The body CRC, then the header CRC over it. */
	put32(b + 40, pfs_crc32c(0, body, PFS_UDP_KEY_BODY));
	put32(b + 44, pfs_crc32c(0, b, 44));
	return PFS_UDP_REC_LEN + PFS_UDP_KEY_BODY;
}

int pfs_udp_key_decode(const void *buf, size_t len, uint8_t *pub, uint8_t *confirm)
{
	const uint8_t *b = buf, *body = b + PFS_UDP_REC_LEN;
	struct pfs_udp_rec r;
	int err = pfs_udp_rec_decode_hdr(buf, len, &r);

	if (err)
		return err;
	if (r.type != PFS_UDP_KEY || r.flags || r.b || r.c || r.d || r.e)
		return -EPROTO;
	if (len < PFS_UDP_REC_LEN + PFS_UDP_KEY_BODY)
		return -EMSGSIZE;
	if (get32(b + 40) != pfs_crc32c(0, body, PFS_UDP_KEY_BODY))
		return -EILSEQ;
	if (r.a != PFS_UDP_SUITE_X25519_GMAC)
		return -EPROTONOSUPPORT;
	memcpy(pub, body, PFS_UDP_KEY_PUB);
	memcpy(confirm, body + PFS_UDP_KEY_PUB, PFS_UDP_KEY_CONFIRM);
	return 0;
}
