// SPDX-License-Identifier: Apache-2.0
/*
 * Gram codec (layout in docs/design/wire-format.md). Pure functions over caller
 * buffers: no allocation, no global state, safe from any thread. Decoding
 * reads through a cursor that checks the remaining length before every
 * load, so a hostile gram can make it fail but never read past its end.
 */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "pfs/gram.h"
#include "pfs/integrity.h"
#include "wire_le.h"

const char *pfs_mode_str(enum pfs_gram_mode mode)
{
	switch (mode) {
	case PFS_MODE_PAYLOAD:
		return "payload";
	case PFS_MODE_OFFSET:
		return "offset";
	case PFS_MODE_ARITH:
		return "arith";
	case PFS_MODE_DELTA:
		return "delta";
	}
	return "?";
}

int pfs_mode_parse(const char *s, enum pfs_gram_mode *mode)
{
	if (!strcasecmp(s, "payload"))
		*mode = PFS_MODE_PAYLOAD;
	else if (!strcasecmp(s, "offset") || !strcasecmp(s, "offset-only"))
		*mode = PFS_MODE_OFFSET;
	else if (!strcasecmp(s, "arith") || !strcasecmp(s, "arithmetic"))
		*mode = PFS_MODE_ARITH;
	else if (!strcasecmp(s, "delta"))
		*mode = PFS_MODE_DELTA;
	else
		return -EINVAL;
	return 0;
}

size_t pfs_gram_desc_len_max(enum pfs_gram_mode mode, uint32_t n)
{
	return (size_t)n *
	       (mode == PFS_MODE_ARITH ? PFS_GRAM_ARITH_DESC_MAX : PFS_GRAM_OFFSET_DESC_LEN);
}

ssize_t pfs_gram_encode(enum pfs_gram_mode mode, uint64_t seq, const struct pfs_desc *d, uint32_t n,
			void *out, size_t cap)
{
	uint8_t *o = out, *p = o + PFS_GRAM_HDR_LEN;
	uint64_t payload = 0;
	uint32_t desc_len;

	if (mode > PFS_MODE_ARITH)
		return -EINVAL;
	if (n > PFS_GRAM_MAX_DESC)
		return -E2BIG;
	if (cap < PFS_GRAM_HDR_LEN + pfs_gram_desc_len_max(mode, n))
		return -ENOSPC;
	if (mode == PFS_MODE_ARITH) {
		uint64_t prev_end = 0;
		uint32_t prev_len = 0;

		for (uint32_t i = 0; i < n; i++) {
			/* Deltas are signed 64-bit: keep every offset below 2^63. */
			if (d[i].off >> 63 || (d[i].off + d[i].len) >> 63)
				return -EINVAL;
			if (i == 0) {
				p = put_uvarint(p, d[0].off);
				p = put_uvarint(p, d[0].len);
			} else {
				/* Offsets relative to where the previous one ended, so a
				 * contiguous schedule costs one byte per offset. */
				p = put_uvarint(p, zigzag((int64_t)(d[i].off - prev_end)));
				p = put_uvarint(p, zigzag((int64_t)d[i].len - (int64_t)prev_len));
			}
			prev_end = d[i].off + d[i].len;
			prev_len = d[i].len;
		}
	} else {
		for (uint32_t i = 0; i < n; i++) {
			put64(p, d[i].off);
			put32(p + 8, d[i].len);
			p += PFS_GRAM_OFFSET_DESC_LEN;
			payload += d[i].len;
		}
		if (mode == PFS_MODE_OFFSET)
			payload = 0;
		else if (payload > PFS_GRAM_MAX_PAYLOAD)
			return -E2BIG;
	}
	desc_len = (uint32_t)(p - (o + PFS_GRAM_HDR_LEN));
	put32(o, PFS_GRAM_MAGIC);
	o[4] = PFS_GRAM_VERSION;
	o[5] = (uint8_t)mode;
	o[6] = PFS_GRAM_HDR_LEN;
	o[7] = 0;
	put64(o + 8, seq);
	put32(o + 16, n);
	put32(o + 20, desc_len);
	put32(o + 24, (uint32_t)payload);
	put32(o + 28, pfs_crc32c(0, o + PFS_GRAM_HDR_LEN, desc_len));
	put32(o + 32, 0);
	put32(o + 36, pfs_crc32c(0, o, 36));
	return PFS_GRAM_HDR_LEN + desc_len;
}

int pfs_gram_decode_hdr(const void *buf, size_t len, struct pfs_gram_hdr *h)
{
	const uint8_t *b = buf;
	uint32_t n, dl;

	if (len < PFS_GRAM_HDR_LEN)
		return -EMSGSIZE;
	if (get32(b) != PFS_GRAM_MAGIC)
		return -EBADMSG;
	if (get32(b + 36) != pfs_crc32c(0, b, 36))
		return -EILSEQ;
	if (b[4] != PFS_GRAM_VERSION)
		return -EPROTONOSUPPORT;
	if (b[5] > PFS_MODE_ARITH || b[6] != PFS_GRAM_HDR_LEN || b[7] || get32(b + 32))
		return -EPROTO;
	n = get32(b + 16);
	dl = get32(b + 20);
	if (n > PFS_GRAM_MAX_DESC || get32(b + 24) > PFS_GRAM_MAX_PAYLOAD)
		return -E2BIG;
	/* A table size the mode cannot produce is malformed before we read it. */
	if (b[5] == PFS_MODE_ARITH ? (dl < 2ULL * n || dl > (uint64_t)n * PFS_GRAM_ARITH_DESC_MAX) :
				     dl != (uint64_t)n * PFS_GRAM_OFFSET_DESC_LEN)
		return -EBADMSG;
	if (b[5] != PFS_MODE_PAYLOAD && get32(b + 24))
		return -EBADMSG;
	h->version = b[4];
	h->mode = b[5];
	h->flags = b[7];
	h->seq = get64(b + 8);
	h->ndesc = n;
	h->desc_len = dl;
	h->payload_len = get32(b + 24);
	h->desc_crc = get32(b + 28);
	return 0;
}

static inline int in_blob(uint64_t off, uint64_t len, uint64_t blob_size)
{
	return off <= blob_size && len <= blob_size - off;
}

int pfs_gram_decode_desc(const struct pfs_gram_hdr *h, const void *desc, size_t len,
			 uint64_t blob_size, struct pfs_desc *out, uint32_t max_out)
{
	const uint8_t *p = desc, *end = p + len;
	uint64_t sum = 0;
	uint32_t n = h->ndesc;

	if (len != h->desc_len)
		return -EMSGSIZE;
	if (n > max_out)
		return -ENOSPC;
	if (pfs_crc32c(0, desc, len) != h->desc_crc)
		return -EILSEQ;
	if (h->mode == PFS_MODE_ARITH) {
		uint64_t prev_end = 0, v;
		uint32_t prev_len = 0;
		int err;

		for (uint32_t i = 0; i < n; i++) {
			uint64_t off, l;

			if ((err = get_uvarint(&p, end, &v)))
				return err;
			if (i == 0) {
				off = v;
				if ((err = get_uvarint(&p, end, &l)))
					return err;
			} else {
				int64_t d = unzigzag(v), dl;

				if (d < 0 ? (uint64_t) - (d + 1) + 1 > prev_end :
					    (uint64_t)d > UINT64_MAX - prev_end)
					return -ERANGE;
				off = prev_end + (uint64_t)d;
				if ((err = get_uvarint(&p, end, &v)))
					return err;
				dl = unzigzag(v);
				if (dl < -(int64_t)prev_len || dl > (int64_t)UINT32_MAX - prev_len)
					return -ERANGE;
				l = (uint64_t)((int64_t)prev_len + dl);
			}
			if (l > UINT32_MAX || !in_blob(off, l, blob_size))
				return -ERANGE;
			out[i].off = off;
			out[i].len = (uint32_t)l;
			out[i].rsvd = 0;
			prev_end = off + l;
			prev_len = (uint32_t)l;
			sum += l;
		}
		if (p != end)
			return -EBADMSG;
		return sum > PFS_GRAM_MAX_EFFECTIVE ? -E2BIG : (int)n;
	}
	/* desc_len == 12 * n was checked with the header. */
	for (uint32_t i = 0; i < n; i++, p += PFS_GRAM_OFFSET_DESC_LEN) {
		uint64_t off = get64(p);
		uint32_t l = get32(p + 8);

		if (!in_blob(off, l, blob_size))
			return -ERANGE;
		out[i].off = off;
		out[i].len = l;
		out[i].rsvd = 0;
		sum += l;
	}
	if (h->mode == PFS_MODE_PAYLOAD && sum != h->payload_len)
		return -EBADMSG;
	return sum > PFS_GRAM_MAX_EFFECTIVE ? -E2BIG : (int)n;
}

int pfs_gram_decode(const void *buf, size_t len, uint64_t blob_size, struct pfs_gram_hdr *h,
		    struct pfs_desc *out, uint32_t max_out, const uint8_t **payload)
{
	const uint8_t *b = buf;
	int err = pfs_gram_decode_hdr(buf, len, h);

	if (err)
		return err;
	if (len - PFS_GRAM_HDR_LEN != (uint64_t)h->desc_len + h->payload_len)
		return -EMSGSIZE;
	err = pfs_gram_decode_desc(h, b + PFS_GRAM_HDR_LEN, h->desc_len, blob_size, out, max_out);
	if (err < 0)
		return err;
	*payload = h->payload_len ? b + PFS_GRAM_HDR_LEN + h->desc_len : NULL;
	return err;
}

int pfs_ctl_encode(const struct pfs_ctl *c, void *out)
{
	uint8_t *o = out;

	if (c->type < PFS_CTL_HELLO || c->type > PFS_CTL_AUTH || c->mode > PFS_MODE_DELTA)
		return -EINVAL;
	put32(o, PFS_CTL_MAGIC);
	o[4] = PFS_GRAM_VERSION;
	o[5] = c->type;
	o[6] = c->mode;
	o[7] = c->flags;
	put64(o + 8, c->size);
	put64(o + 16, c->value);
	put64(o + 24, c->count);
	put32(o + 32, c->word);
	put32(o + 36, pfs_crc32c(0, o, 36));
	return PFS_CTL_LEN;
}

int pfs_ctl_decode(const void *buf, size_t len, struct pfs_ctl *c)
{
	const uint8_t *b = buf;

	if (len < PFS_CTL_LEN)
		return -EMSGSIZE;
	if (get32(b) != PFS_CTL_MAGIC)
		return -EBADMSG;
	if (get32(b + 36) != pfs_crc32c(0, b, 36))
		return -EILSEQ;
	/* The version is checked by the handshake so it can say which one. */
	if (b[5] < PFS_CTL_HELLO || b[5] > PFS_CTL_AUTH || b[6] > PFS_MODE_DELTA ||
	    (b[7] & ~(PFS_CTL_F_OK | PFS_CTL_F_INTEGRITY_MASK)))
		return -EPROTO;
	c->type = b[5];
	c->mode = b[6];
	c->flags = b[7];
	c->size = get64(b + 8);
	c->value = get64(b + 16);
	c->count = get64(b + 24);
	c->word = get32(b + 32);
	if (b[4] != PFS_GRAM_VERSION)
		return -EPROTONOSUPPORT;
	return 0;
}

uint32_t pfs_wire_magic(const void *buf, size_t len)
{
	return len < 4 ? 0 : get32(buf);
}

void pfs_gram_stats_count(struct pfs_gram_stats *s, int err)
{
	if (err >= 0) {
		s->ok++;
		return;
	}
	s->errors++;
	switch (-err) {
	case EMSGSIZE:
		s->truncated++;
		break;
	case EILSEQ:
		s->bad_crc++;
		break;
	case EPROTONOSUPPORT:
		s->bad_version++;
		break;
	case E2BIG:
	case ENOSPC:
		s->over_limit++;
		break;
	case ERANGE:
		s->out_of_bounds++;
		break;
	default:
		s->malformed++;
		break;
	}
}
