// SPDX-License-Identifier: Apache-2.0
/*
 * The replication stream's control frames (blob_repl_wire.h): encode and a
 * decoder for bytes from any peer, LAYOUT frames' too. Pure functions over
 * buffers, no state, fuzzed (fuzz/fuzz_repl.c). The list LAYOUT frames
 * build is blob_repl_layout.c's.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "wire/blob_repl_wire.h"
#include "pfs/integrity.h"
#include "util/utf8.h"
#include "wire/wire_le.h"

/* A frame's CRC32C: header bytes 0..27, then the @body bytes after it. */
static uint32_t frame_crc(const uint8_t *b, size_t body)
{
	return pfs_crc32c(pfs_crc32c(0, b, 28), b + REPL_HDR, body);
}

/* The body lengths a type may have: [lo, hi]. */
static int body_range(uint8_t type, uint16_t *lo, uint16_t *hi)
{
	switch (type) {
	case REPL_HELLO:
		*lo = *hi = REPL_NONCE;
		return 0;
	case REPL_AUTH:
		*lo = REPL_MAC;
		*hi = REPL_AUTH_DELTA_BODY;
		return 0;
	case REPL_ACCEPT:
	case REPL_END:
	case REPL_KEEPALIVE:
		*lo = *hi = 0;
		return 0;
	case REPL_REFUSE:
	case REPL_ERROR:
	case REPL_STEP:
		*lo = 1;
		*hi = PFS_REPL_MSG_MAX;
		return 0;
	case REPL_LAYOUT:
		*lo = 0;
		*hi = REPL_LAYOUT_BODY_MAX;
		return 0;
	case REPL_DIGESTS:
		*lo = PFS_CHUNK_DIGEST;
		*hi = REPL_DIGESTS_MAX * PFS_CHUNK_DIGEST;
		return 0;
	}
	return -EPROTO;
}

/* Frames whose body is larger than struct repl_frame's: their own
 * decoders. */
static bool big_type(uint8_t type)
{
	return type == REPL_LAYOUT || type == REPL_DIGESTS;
}

/* AUTH's xport: TCP has no port, a datagram transport needs one; DELTA
 * is over TCP only and brings the base in a longer body; LAYOUT goes with
 * any transport (the frames come on this connection before the data). */
static int xport_check(uint8_t xport, uint8_t flags, uint16_t port, uint16_t body_len)
{
	bool delta = flags & REPL_FLAG_DELTA, range = flags & REPL_FLAG_RANGE;

	/* RANGE asks for a few bytes again (a chunk that failed its digest):
	 * whole bytes over TCP, nothing else. */
	if ((flags & ~REPL_FLAGS) || xport > REPL_XPORT_AFXDP ||
	    (xport == REPL_XPORT_TCP) != (port == 0) || (delta && xport != REPL_XPORT_TCP) ||
	    (range &&
	     ((flags & ~REPL_FLAG_STEPPED) != REPL_FLAG_RANGE || xport != REPL_XPORT_TCP)) ||
	    body_len != (delta ? REPL_AUTH_DELTA_BODY :
			 range ? REPL_AUTH_RANGE_BODY :
				 REPL_MAC))
		return -EPROTO;
	return 0;
}

static bool text_frame(uint8_t type)
{
	return type == REPL_REFUSE || type == REPL_ERROR || type == REPL_STEP;
}

/* Text bodies: no NUL, no control bytes but tab (UTF-8 passes as bytes). */
static int check_text(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] < 0x20 && b[i] != '\t')
			return -EBADMSG;
	return 0;
}

int repl_frame_encode(const struct repl_frame *f, uint8_t *out)
{
	uint16_t lo, hi;
	uint32_t crc;

	if (big_type(f->type) || body_range(f->type, &lo, &hi) || f->body_len < lo ||
	    f->body_len > hi)
		return -EINVAL;
	if (f->type == REPL_AUTH && xport_check(f->xport, f->flags, f->data_port, f->body_len))
		return -EINVAL;
	if (text_frame(f->type) && check_text(f->body, f->body_len))
		return -EINVAL;
	memset(out, 0, REPL_HDR);
	put32(out, REPL_MAGIC);
	out[4] = REPL_VERSION;
	out[5] = f->type;
	put16(out + 6, f->body_len);
	put64(out + 8, f->size);
	put64(out + 16, f->offset);
	memcpy(out + REPL_HDR, f->body, f->body_len);
	if (f->type == REPL_AUTH) {
		out[24] = f->xport;
		out[25] = f->flags;
		put16(out + 26, f->data_port);
		if (f->flags & REPL_FLAG_DELTA) {
			put64(out + REPL_HDR + REPL_MAC, f->base_size);
			put64(out + REPL_HDR + REPL_MAC + 8, f->base_fp);
		}
		if (f->flags & REPL_FLAG_RANGE)
			put64(out + REPL_HDR + REPL_MAC, f->end);
	}
	crc = frame_crc(out, f->body_len);
	put32(out + 28, crc);
	return REPL_HDR + f->body_len;
}

/* The header checks every frame gets; a big type (LAYOUT, DIGESTS) only
 * when it is @big (0: none). */
static int hdr_body_len(const uint8_t *hdr, size_t len, uint8_t big)
{
	uint16_t lo, hi, bl;

	if (len < REPL_HDR)
		return -EMSGSIZE;
	if (get32(hdr) != REPL_MAGIC)
		return -EBADMSG;
	if (hdr[4] != REPL_VERSION)
		return -EPROTONOSUPPORT;
	bl = get16(hdr + 6);
	if ((big ? hdr[5] != big : big_type(hdr[5])) || body_range(hdr[5], &lo, &hi) || bl < lo ||
	    bl > hi)
		return -EPROTO;
	if (hdr[5] == REPL_AUTH ? xport_check(hdr[24], hdr[25], get16(hdr + 26), bl) :
				  get32(hdr + 24) != 0)
		return -EPROTO;
	return bl;
}

int repl_frame_body_len(const uint8_t *hdr, size_t len)
{
	return hdr_body_len(hdr, len, 0);
}

int repl_frame_decode(const uint8_t *buf, size_t len, struct repl_frame *f)
{
	int bl = repl_frame_body_len(buf, len);
	uint32_t crc;

	if (bl < 0)
		return bl;
	if (len != REPL_HDR + (size_t)bl)
		return -EMSGSIZE;
	crc = frame_crc(buf, (size_t)bl);
	if (crc != get32(buf + 28))
		return -EILSEQ;
	if (text_frame(buf[5]) && check_text(buf + REPL_HDR, (size_t)bl))
		return -EBADMSG;
	memset(f, 0, sizeof(*f));
	f->type = buf[5];
	f->body_len = (uint16_t)bl;
	f->size = get64(buf + 8);
	f->offset = get64(buf + 16);
	memcpy(f->body, buf + REPL_HDR, (size_t)bl);
	if (f->type == REPL_AUTH) {
		f->xport = buf[24];
		f->flags = buf[25];
		f->data_port = get16(buf + 26);
		if (f->flags & REPL_FLAG_DELTA) {
			f->base_size = get64(buf + REPL_HDR + REPL_MAC);
			f->base_fp = get64(buf + REPL_HDR + REPL_MAC + 8);
		}
		if (f->flags & REPL_FLAG_RANGE)
			f->end = get64(buf + REPL_HDR + REPL_MAC);
	}
	return 0;
}

const char *repl_type_str(uint8_t type)
{
	static const char *const names[] = { "?",      "HELLO",	  "AUTH",  "ACCEPT",
					     "REFUSE", "END",	  "ERROR", "KEEPALIVE",
					     "LAYOUT", "DIGESTS", "STEP" };

	return type < sizeof(names) / sizeof(names[0]) ? names[type] : "?";
}

/* ---- LAYOUT ---- */

int repl_layout_body_len(const uint8_t *hdr, size_t len)
{
	int bl = hdr_body_len(hdr, len, REPL_LAYOUT);
	uint64_t count, first;

	if (bl < 0)
		return bl;
	count = get64(hdr + 8);
	first = get64(hdr + 16);
	if (count > REPL_LAYOUT_ENT_MAX || first > count)
		return -ERANGE;
	return bl;
}

/* A name as the manifest has them: UTF-8 (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF), no NUL or control byte, relative,
 * no "", "." or ".." component. */
static bool name_ok(const uint8_t *p, size_t n)
{
	size_t comp = 0; /* start of the component being read */

	for (size_t i = 0; i < n;) {
		uint8_t c = p[i];
		size_t k;

		if (c < 0x80) {
			if (c < 0x20 || c == 0x7f)
				return false;
			if (c == '/') {
				size_t cl = i - comp;

				if (!cl || (cl == 1 && p[comp] == '.') ||
				    (cl == 2 && p[comp] == '.' && p[comp + 1] == '.'))
					return false;
				comp = i + 1;
			}
			i++;
			continue;
		}
		k = utf8_seq(p + i, n - i);
		if (!k)
			return false;
		i += k;
	}
	/* the last component */
	n -= comp;
	return n && !(n == 1 && p[comp] == '.') &&
	       !(n == 2 && p[comp] == '.' && p[comp + 1] == '.');
}

/* Bytewise order of two names (strcmp's, over lengths). */
static int name_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);

	return c ? c : (an > bn) - (an < bn);
}

int repl_layout_encode(const struct repl_layout *l, uint32_t first, uint8_t *out, uint32_t *next)
{
	uint32_t count = l ? l->n : 0, i = first;
	size_t at = REPL_HDR + 2;
	uint32_t crc;

	if (l ? count > REPL_LAYOUT_ENT_MAX || first > count || (first == count && count) : first)
		return -EINVAL;
	memset(out, 0, REPL_HDR);
	if (!l) {
		at = REPL_HDR; /* no layout: the empty body */
	} else {
		for (; i < count; i++) {
			size_t nl = strlen(l->ent[i].name);

			if (!nl || nl > REPL_LAYOUT_NAME_MAX)
				return -EINVAL;
			/* room for this entry and, should it be the last, the tail */
			if (at + REPL_LAYOUT_ENT_HDR + nl + (i + 1 == count ? 8 : 0) >
			    REPL_LAYOUT_FRAME_MAX)
				break;
			put64(out + at, l->ent[i].offset);
			put64(out + at + 8, l->ent[i].length);
			put16(out + at + 16, (uint16_t)nl);
			memcpy(out + at + REPL_LAYOUT_ENT_HDR, l->ent[i].name, nl);
			at += REPL_LAYOUT_ENT_HDR + nl;
		}
		put16(out + REPL_HDR, (uint16_t)(i - first));
		if (i == count) {
			put64(out + at, l->tail_off);
			at += 8;
		}
	}
	put32(out, REPL_MAGIC);
	out[4] = REPL_VERSION;
	out[5] = REPL_LAYOUT;
	put16(out + 6, (uint16_t)(at - REPL_HDR));
	put64(out + 8, count);
	put64(out + 16, first);
	crc = frame_crc(out, at - REPL_HDR);
	put32(out + 28, crc);
	*next = i;
	return (int)at;
}

/* A refusal of repl_layout_decode: @err, with the field it was about. */
static int bad(struct repl_layout_frame *f, int err, const char *why)
{
	f->why = why;
	return err;
}

int repl_layout_decode(const uint8_t *buf, size_t len, uint64_t size, struct repl_layout_frame *f)
{
	int bl = repl_layout_body_len(buf, len);
	const uint8_t *p, *end, *prev = NULL;
	uint64_t at = 0; /* the previous extent's end */
	size_t prev_len = 0;
	uint32_t crc;

	memset(f, 0, sizeof(*f));
	if (bl < 0)
		return bad(f, bl, bl == -ERANGE ? "count or first index" : "header");
	if (len != REPL_HDR + (size_t)bl)
		return bad(f, -EMSGSIZE, "frame length");
	crc = frame_crc(buf, (size_t)bl);
	if (crc != get32(buf + 28))
		return bad(f, -EILSEQ, "CRC32C");
	f->count = (uint32_t)get64(buf + 8);
	f->first = (uint32_t)get64(buf + 16);
	p = buf + REPL_HDR;
	end = p + bl;
	f->ents_end = end;
	if (!bl) {
		if (f->count || f->first)
			return bad(f, -EMSGSIZE, "an empty body with a count");
		f->none = true;
		return 0;
	}
	if (bl < 2)
		return bad(f, -EMSGSIZE, "entry count");
	f->n = get16(p);
	p += 2;
	f->ents = p;
	if ((uint64_t)f->first + f->n > f->count || (!f->n && f->count))
		return bad(f, -ERANGE, "entry count");
	for (uint16_t i = 0; i < f->n; i++) {
		uint64_t off, length;
		uint16_t nl;

		if ((size_t)(end - p) < REPL_LAYOUT_ENT_HDR)
			return bad(f, -EMSGSIZE, "entry past the body");
		off = get64(p);
		length = get64(p + 8);
		nl = get16(p + 16);
		p += REPL_LAYOUT_ENT_HDR;
		if (!nl || nl > REPL_LAYOUT_NAME_MAX)
			return bad(f, -ERANGE, "name length");
		if ((size_t)(end - p) < nl)
			return bad(f, -EMSGSIZE, "name past the body");
		if (!name_ok(p, nl))
			return bad(f, -EBADMSG, "name");
		if (prev && name_cmp(prev, prev_len, p, nl) >= 0)
			return bad(f, -EBADMSG, "name order");
		if (off % REPL_LAYOUT_ALIGN)
			return bad(f, -ERANGE, "offset alignment");
		if (off < at)
			return bad(f, -ERANGE, "offset (overlaps the entry before)");
		if (length > size || off > size - length)
			return bad(f, -ERANGE, "offset + length (past the blob)");
		at = off + length;
		prev = p;
		prev_len = nl;
		p += nl;
	}
	f->last = f->first + f->n == f->count;
	if (f->last) {
		if ((size_t)(end - p) < 8)
			return bad(f, -EMSGSIZE, "tail offset missing");
		f->tail_off = get64(p);
		f->ents_end = p;
		p += 8;
		if (f->tail_off % REPL_LAYOUT_ALIGN || f->tail_off < at || f->tail_off >= size)
			return bad(f, -ERANGE, "tail offset");
	}
	return p == end ? 0 : bad(f, -EMSGSIZE, "bytes after the last field");
}

bool repl_layout_next(const struct repl_layout_frame *f, const uint8_t **pos,
		      struct repl_layout_wire_ent *e)
{
	const uint8_t *p = *pos;

	/* The decoder checked every entry; the bounds keep a misuse inside. */
	if (!p || p < f->ents || p >= f->ents_end ||
	    (size_t)(f->ents_end - p) < REPL_LAYOUT_ENT_HDR)
		return false;
	e->offset = get64(p);
	e->length = get64(p + 8);
	e->name_len = get16(p + 16);
	e->name = (const char *)p + REPL_LAYOUT_ENT_HDR;
	if ((size_t)(f->ents_end - p) < REPL_LAYOUT_ENT_HDR + (size_t)e->name_len)
		return false;
	*pos = p + REPL_LAYOUT_ENT_HDR + e->name_len;
	return true;
}

/* ---- DIGESTS ---- */

int repl_digests_body_len(const uint8_t *hdr, size_t len)
{
	int bl = hdr_body_len(hdr, len, REPL_DIGESTS);

	if (bl < 0)
		return bl;
	return bl % PFS_CHUNK_DIGEST ? -EPROTO : bl;
}

int repl_digests_encode(uint64_t size, uint32_t first, const uint8_t *d, uint32_t n, uint8_t *out)
{
	uint32_t body = n * PFS_CHUNK_DIGEST, crc;

	if (!n || n > REPL_DIGESTS_MAX)
		return -EINVAL;
	memset(out, 0, REPL_HDR);
	put32(out, REPL_MAGIC);
	out[4] = REPL_VERSION;
	out[5] = REPL_DIGESTS;
	put16(out + 6, (uint16_t)body);
	put64(out + 8, size);
	put64(out + 16, first);
	memcpy(out + REPL_HDR, d, body);
	crc = frame_crc(out, body);
	put32(out + 28, crc);
	return (int)(REPL_HDR + body);
}

int repl_digests_decode(const uint8_t *buf, size_t len, uint64_t size, struct repl_digests *f)
{
	int bl = repl_digests_body_len(buf, len);
	uint64_t count = (size + PFS_CHUNK_SIZE - 1) / PFS_CHUNK_SIZE, first;
	uint32_t crc;

	if (bl < 0)
		return bl;
	if (len != REPL_HDR + (size_t)bl)
		return -EMSGSIZE;
	crc = frame_crc(buf, (size_t)bl);
	if (crc != get32(buf + 28))
		return -EILSEQ;
	first = get64(buf + 16);
	f->n = (uint32_t)bl / PFS_CHUNK_DIGEST;
	if (get64(buf + 8) != size || first >= count || f->n > count - first)
		return -ERANGE;
	f->first = (uint32_t)first;
	f->d = buf + REPL_HDR;
	return 0;
}
