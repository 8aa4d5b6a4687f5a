// SPDX-License-Identifier: Apache-2.0
/*
 * Delta gram codec (pfs/delta_wire.h, docs/design/wire-format.md "Delta grams").
 *
 * Header, 40 bytes little-endian, laid out like a gram's so the same
 * framing code reads both:
 *   0 magic "PFSD"  4 version  5 0 (reserved)  6 header length (40)  7 flags (0)
 *   8 seq (le64)  16 nops  20 table_len  24 payload_len  28 table CRC32C
 *   32 reserved (0)  36 header CRC32C (bytes 0..35)
 * Table, one entry per operation:
 *   kind byte: bits 0-3 the kind, bits 4-5 log2 of the element size
 *   (XOR, ZSTD), bits 6-7 zero;
 *   uvarint gap: dst - end of the previous operation (the first: dst);
 *   uvarint len;
 *   COPY: uvarint zigzag(src - dst); XOR, ZSTD: uvarint clen;
 *   ZREF: uvarint zigzag(src - dst), uvarint wlen, uvarint clen.
 * RAW's payload length is its len. The gaps make the order ascending and
 * the operations non-overlapping by construction.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "pfs/delta_wire.h"
#include "pfs/integrity.h"
#include "wire_le.h"

#define KIND_MASK 0x0f
#define ELEM_SHIFT 4
#define ELEM_MASK 0x30

/* A compressed payload larger than this for @len target bytes is refused
 * (zstd's own worst case is len + len/256 + a few hundred bytes). */
static inline uint64_t clen_max(uint32_t len)
{
	return (uint64_t)len + len / 128 + 1024;
}

const char *pfs_delta_kind_str(enum pfs_delta_kind k)
{
	static const char *const names[] = { "copy", "xor", "zstd", "raw", "zref" };

	return (unsigned int)k < PFS_DELTA_KINDS ? names[k] : "?";
}

static int elem_log2(uint8_t elem)
{
	return elem == 1 ? 0 : elem == 2 ? 1 : elem == 4 ? 2 : -1;
}

ssize_t pfs_delta_gram_encode(uint64_t seq, const struct pfs_delta_op *ops, uint32_t n, void *out,
			      size_t cap)
{
	uint8_t *o = out, *p = o + PFS_DELTA_HDR_LEN;
	uint64_t end = 0, payload = 0, target = 0;

	if (n > PFS_DELTA_MAX_OPS)
		return -E2BIG;
	if (cap < PFS_DELTA_HDR_LEN + (size_t)n * PFS_DELTA_OP_ENC_MAX)
		return -ENOSPC;
	for (uint32_t i = 0; i < n; i++) {
		const struct pfs_delta_op *d = &ops[i];
		int el = elem_log2(d->elem);
		bool split = d->kind == PFS_DELTA_XOR || d->kind == PFS_DELTA_ZSTD;
		bool coded = split || d->kind == PFS_DELTA_ZREF;
		bool ref = d->kind == PFS_DELTA_COPY || d->kind == PFS_DELTA_ZREF;

		if (d->kind >= PFS_DELTA_KINDS || el < 0 || (!split && el) || !d->len ||
		    d->len > PFS_DELTA_OP_MAX || d->dst < end || (d->dst + d->len) >> 63 ||
		    (coded && (!d->clen || d->clen > clen_max(d->len))) ||
		    (d->kind == PFS_DELTA_RAW && d->clen != d->len) ||
		    (d->kind == PFS_DELTA_COPY && d->clen) || (ref && d->src >> 63) ||
		    (d->kind == PFS_DELTA_ZREF &&
		     (!d->wlen || d->wlen > PFS_DELTA_ZREF_WINDOW_MAX)))
			return -EINVAL;
		*p++ = (uint8_t)(d->kind | el << ELEM_SHIFT);
		p = put_uvarint(p, d->dst - end);
		p = put_uvarint(p, d->len);
		if (ref)
			p = put_uvarint(p, zigzag((int64_t)(d->src - d->dst)));
		if (d->kind == PFS_DELTA_ZREF)
			p = put_uvarint(p, d->wlen);
		if (coded)
			p = put_uvarint(p, d->clen);
		end = d->dst + d->len;
		payload += d->clen;
		target += d->len;
	}
	if (payload > PFS_DELTA_MAX_PAYLOAD || target > PFS_DELTA_GRAM_MAX_TARGET)
		return -E2BIG;
	put32(o, PFS_DELTA_MAGIC);
	o[4] = PFS_DELTA_VERSION;
	o[5] = 0;
	o[6] = PFS_DELTA_HDR_LEN;
	o[7] = 0;
	put64(o + 8, seq);
	put32(o + 16, n);
	put32(o + 20, (uint32_t)(p - (o + PFS_DELTA_HDR_LEN)));
	put32(o + 24, (uint32_t)payload);
	put32(o + 28, pfs_crc32c(0, o + PFS_DELTA_HDR_LEN, (size_t)(p - (o + PFS_DELTA_HDR_LEN))));
	put32(o + 32, 0);
	put32(o + 36, pfs_crc32c(0, o, 36));
	return p - o;
}

int pfs_delta_decode_hdr(const void *buf, size_t len, struct pfs_delta_hdr *h)
{
	const uint8_t *b = buf;
	uint32_t n, tl;

	if (len < PFS_DELTA_HDR_LEN)
		return -EMSGSIZE;
	if (get32(b) != PFS_DELTA_MAGIC)
		return -EBADMSG;
	if (get32(b + 36) != pfs_crc32c(0, b, 36))
		return -EILSEQ;
	if (b[4] != PFS_DELTA_VERSION)
		return -EPROTONOSUPPORT;
	if (b[5] || b[6] != PFS_DELTA_HDR_LEN || b[7] || get32(b + 32))
		return -EPROTO;
	n = get32(b + 16);
	tl = get32(b + 20);
	if (n > PFS_DELTA_MAX_OPS || get32(b + 24) > PFS_DELTA_MAX_PAYLOAD)
		return -E2BIG;
	/* Each entry takes 3..31 bytes: a table of another size is malformed. */
	if (tl < 3ULL * n || tl > (uint64_t)n * PFS_DELTA_OP_ENC_MAX)
		return -EBADMSG;
	h->version = b[4];
	h->seq = get64(b + 8);
	h->nops = n;
	h->table_len = tl;
	h->payload_len = get32(b + 24);
	h->table_crc = get32(b + 28);
	return 0;
}

static inline bool inside(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

/* src = dst + @delta (zig-zag decoded), checked without overflow either
 * way, and [src, src + len) inside the base. 0 or -ERANGE. */
static int ref_src(uint64_t dst, uint64_t v, uint64_t len, uint64_t base_size, uint64_t *src)
{
	int64_t delta = unzigzag(v);

	if (delta < 0 ? (uint64_t) - (delta + 1) >= dst : (uint64_t)delta > base_size)
		return -ERANGE;
	*src = dst + (uint64_t)delta;
	return inside(*src, len, base_size) ? 0 : -ERANGE;
}

/* One entry at *pp; its target range starts at or after @end. */
static int decode_op(const uint8_t **pp, const uint8_t *e, uint64_t end, uint64_t base_size,
		     uint64_t target_size, struct pfs_delta_op *d)
{
	uint64_t gap, len, v = 0, w = 0, c = 0;
	uint8_t k;
	int el, err;

	if (*pp == e)
		return -EBADMSG;
	k = *(*pp)++;
	el = (k & ELEM_MASK) >> ELEM_SHIFT;
	if ((k & ~(KIND_MASK | ELEM_MASK)) || (k & KIND_MASK) >= PFS_DELTA_KINDS || el == 3)
		return -EPROTO;
	memset(d, 0, sizeof(*d));
	d->kind = k & KIND_MASK;
	d->elem = (uint8_t)(1u << el);
	if (el && d->kind != PFS_DELTA_XOR && d->kind != PFS_DELTA_ZSTD)
		return -EPROTO;
	if ((err = get_uvarint(pp, e, &gap)) || (err = get_uvarint(pp, e, &len)))
		return err;
	if ((d->kind == PFS_DELTA_COPY || d->kind == PFS_DELTA_ZREF) &&
	    (err = get_uvarint(pp, e, &v)))
		return err;
	if (d->kind == PFS_DELTA_ZREF && (err = get_uvarint(pp, e, &w)))
		return err;
	if (d->kind != PFS_DELTA_COPY && d->kind != PFS_DELTA_RAW && (err = get_uvarint(pp, e, &c)))
		return err;
	if (!len || len > PFS_DELTA_OP_MAX)
		return -E2BIG;
	if (gap > target_size || !inside(end + gap, len, target_size))
		return -ERANGE;
	d->dst = end + gap;
	d->len = (uint32_t)len;
	switch (d->kind) {
	case PFS_DELTA_COPY:
		return ref_src(d->dst, v, len, base_size, &d->src);
	case PFS_DELTA_RAW:
		d->clen = d->len;
		return 0;
	case PFS_DELTA_XOR:
		if (!inside(d->dst, len, base_size))
			return -ERANGE;
		break;
	case PFS_DELTA_ZREF:
		if (!w || w > PFS_DELTA_ZREF_WINDOW_MAX)
			return -E2BIG;
		if ((err = ref_src(d->dst, v, w, base_size, &d->src)))
			return err;
		d->wlen = (uint32_t)w;
		break;
	}
	if (!c || c > clen_max(d->len))
		return -EBADMSG;
	d->clen = (uint32_t)c;
	return 0;
}

int pfs_delta_decode_ops(const struct pfs_delta_hdr *h, const void *table, size_t len,
			 uint64_t base_size, uint64_t target_size, uint64_t min_dst,
			 struct pfs_delta_op *out, uint32_t max_out)
{
	const uint8_t *p = table, *e = p + len;
	uint64_t end = min_dst, payload = 0, target = 0;

	if (len != h->table_len)
		return -EMSGSIZE;
	if (pfs_crc32c(0, table, len) != h->table_crc)
		return -EILSEQ;
	if (h->nops > max_out)
		return -ENOSPC;
	for (uint32_t i = 0; i < h->nops; i++) {
		/* The first gap is from 0 on the wire; from min_dst it must start. */
		uint64_t from = i ? end : 0;
		int err = decode_op(&p, e, from, base_size, target_size, &out[i]);

		if (err)
			return err;
		if (out[i].dst < end)
			return -ERANGE;
		end = out[i].dst + out[i].len;
		payload += out[i].clen;
		target += out[i].len;
	}
	if (p != e || payload != h->payload_len)
		return -EBADMSG;
	if (target > PFS_DELTA_GRAM_MAX_TARGET)
		return -E2BIG;
	return (int)h->nops;
}

int pfs_delta_decode(const void *buf, size_t len, uint64_t base_size, uint64_t target_size,
		     struct pfs_delta_hdr *h, struct pfs_delta_op *out, uint32_t max_out,
		     const uint8_t **payload)
{
	const uint8_t *b = buf;
	int n = pfs_delta_decode_hdr(buf, len, h);

	if (n)
		return n;
	if (len - PFS_DELTA_HDR_LEN != (uint64_t)h->table_len + h->payload_len)
		return -EMSGSIZE;
	n = pfs_delta_decode_ops(h, b + PFS_DELTA_HDR_LEN, h->table_len, base_size, target_size, 0,
				 out, max_out);
	if (n >= 0)
		*payload = h->payload_len ? b + PFS_DELTA_HDR_LEN + h->table_len : NULL;
	return n;
}

void pfs_delta_stats_add(struct pfs_delta_stats *to, const struct pfs_delta_stats *from)
{
	for (int k = 0; k < PFS_DELTA_KINDS; k++) {
		to->n[k] += from->n[k];
		to->bytes[k] += from->bytes[k];
		to->wire[k] += from->wire[k];
	}
	to->moved_n += from->moved_n;
	to->moved_bytes += from->moved_bytes;
}

void pfs_delta_stats_ops(struct pfs_delta_stats *st, const struct pfs_delta_op *ops, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		st->n[ops[i].kind]++;
		st->bytes[ops[i].kind] += ops[i].len;
		st->wire[ops[i].kind] += ops[i].clen;
		if (ops[i].kind == PFS_DELTA_COPY && ops[i].src != ops[i].dst) {
			st->moved_n++;
			st->moved_bytes += ops[i].len;
		}
	}
}
