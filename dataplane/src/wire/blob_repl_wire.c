// SPDX-License-Identifier: Apache-2.0
/*
 * The replication stream's control frames (blob_repl_wire.h): encode and a
 * decoder for bytes from any peer. Pure functions over buffers, no state,
 * fuzzed (fuzz/fuzz_repl.c).
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "wire/blob_repl_wire.h"
#include "pfs/integrity.h"
#include "wire/wire_le.h"

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
		*lo = 1;
		*hi = PFS_REPL_MSG_MAX;
		return 0;
	}
	return -EPROTO;
}

/* AUTH's xport: TCP has no port, a datagram transport needs one; DELTA
 * is the only flag, over TCP only, and brings the base in a longer body. */
static int xport_check(uint8_t xport, uint8_t flags, uint16_t port, uint16_t body_len)
{
	bool delta = flags & REPL_FLAG_DELTA;

	if ((flags & ~REPL_FLAG_DELTA) || xport > REPL_XPORT_AFXDP ||
	    (xport == REPL_XPORT_TCP) != (port == 0) || (delta && xport != REPL_XPORT_TCP) ||
	    body_len != (delta ? REPL_AUTH_DELTA_BODY : REPL_MAC))
		return -EPROTO;
	return 0;
}

static bool text_frame(uint8_t type)
{
	return type == REPL_REFUSE || type == REPL_ERROR;
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

	if (body_range(f->type, &lo, &hi) || f->body_len < lo || f->body_len > hi)
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
	}
	crc = pfs_crc32c(0, out, 28);
	crc = pfs_crc32c(crc, out + REPL_HDR, f->body_len);
	put32(out + 28, crc);
	return REPL_HDR + f->body_len;
}

int repl_frame_body_len(const uint8_t *hdr, size_t len)
{
	uint16_t lo, hi, bl;

	if (len < REPL_HDR)
		return -EMSGSIZE;
	if (get32(hdr) != REPL_MAGIC)
		return -EBADMSG;
	if (hdr[4] != REPL_VERSION)
		return -EPROTONOSUPPORT;
	bl = get16(hdr + 6);
	if (body_range(hdr[5], &lo, &hi) || bl < lo || bl > hi)
		return -EPROTO;
	if (hdr[5] == REPL_AUTH ? xport_check(hdr[24], hdr[25], get16(hdr + 26), bl) :
				  get32(hdr + 24) != 0)
		return -EPROTO;
	return bl;
}

int repl_frame_decode(const uint8_t *buf, size_t len, struct repl_frame *f)
{
	int bl = repl_frame_body_len(buf, len);
	uint32_t crc;

	if (bl < 0)
		return bl;
	if (len != REPL_HDR + (size_t)bl)
		return -EMSGSIZE;
	crc = pfs_crc32c(0, buf, 28);
	crc = pfs_crc32c(crc, buf + REPL_HDR, (size_t)bl);
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
	}
	return 0;
}

const char *repl_type_str(uint8_t type)
{
	static const char *const names[] = { "?",      "HELLO", "AUTH",	 "ACCEPT",
					     "REFUSE", "END",	"ERROR", "KEEPALIVE" };

	return type < sizeof(names) / sizeof(names[0]) ? names[type] : "?";
}
