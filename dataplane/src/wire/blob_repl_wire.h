/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: the control frames of the replication stream (pfs/blob_repl.h,
 * docs/design/wire-format.md "Replication stream"). Data travels as payload grams
 * (gram.h); these frames carry the handshake and the end. One 32-byte
 * header, little-endian, then a body of body_len bytes:
 *
 *   0  4 magic    "PFSF"
 *   4  1 version  1
 *   5  1 type     1 HELLO, 2 AUTH, 3 ACCEPT, 4 REFUSE, 5 END, 6 ERROR,
 *                 7 KEEPALIVE
 *   6  2 body_len HELLO: 32; AUTH: 32, or 48 with the DELTA flag; ACCEPT,
 *                 END, KEEPALIVE: 0; REFUSE, ERROR: 1..480
 *   8  8 size     the server's blob size (every type; AUTH: the client's)
 *  16  8 offset   AUTH, ACCEPT: the start offset; END: the end (= size);
 *                 KEEPALIVE: the server's watermark; REFUSE: why (a code)
 *  24  4 xport    AUTH: how the client receives the data: byte 24 the
 *                 transport (0 TCP: grams on this connection; 1 UDP, 2
 *                 AF_XDP: datagrams to the client's port at bytes 26..27,
 *                 le16, this connection carrying the repair plane's
 *                 control records, docs/design/wire-format.md "Datagram
 *                 replication"), byte 25 flags: bit 0 DELTA (TCP only:
 *                 send delta grams against the base the body names,
 *                 "Delta replication"), the other bits zero. Every other
 *                 type: 0
 *  28  4 crc      CRC32C of bytes 0..27 and the body
 *  32    body     HELLO: nonce; AUTH: HMAC-SHA256, with DELTA then the
 *                 client's base size (le64) and fingerprint (le64);
 *                 REFUSE/ERROR: text
 *                 (printable ASCII and UTF-8, no control bytes, no NUL)
 *
 * The decoder takes bytes from any peer: it checks the header before it
 * trusts body_len, never reads outside the buffer, and returns 0 or -errno
 * like the gram decoders (gram.h): -EMSGSIZE truncated or a length that
 * disagrees, -EBADMSG bad magic or body, -EILSEQ CRC, -EPROTONOSUPPORT
 * version, -EPROTO type, reserved or a length the type cannot have. */
#ifndef PFS_BLOB_REPL_WIRE_H
#define PFS_BLOB_REPL_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "pfs/repl_wire.h"

#define REPL_MAGIC 0x46534650u /* "PFSF" */
#define REPL_VERSION 1
#define REPL_HDR 32
#define REPL_NONCE 32
#define REPL_MAC 32
#define REPL_AUTH_DELTA_BODY (REPL_MAC + 16)
#define REPL_FLAG_DELTA 0x01u
#define REPL_FRAME_MAX (REPL_HDR + PFS_REPL_MSG_MAX)
#define REPL_LABEL "pfs-repl-v1"

enum repl_type {
	REPL_HELLO = 1,
	REPL_AUTH = 2,
	REPL_ACCEPT = 3,
	REPL_REFUSE = 4,
	REPL_END = 5,
	REPL_ERROR = 6,
	REPL_KEEPALIVE = 7, /* server: nothing new yet, still there */
};

/* How a client receives (AUTH's xport). */
enum repl_xport {
	REPL_XPORT_TCP = 0,
	REPL_XPORT_UDP = 1,
	REPL_XPORT_AFXDP = 2,
};

struct repl_frame {
	uint8_t type;
	uint8_t xport; /* AUTH: enum repl_xport */
	uint16_t data_port; /* AUTH with a datagram xport: the client's UDP port */
	uint8_t flags; /* AUTH: REPL_FLAG_* */
	uint64_t base_size, base_fp; /* AUTH with REPL_FLAG_DELTA: the client's base */
	uint16_t body_len;
	uint64_t size, offset;
	uint8_t body[PFS_REPL_MSG_MAX + 1]; /* text frames: NUL-terminated */
};

/* repl_frame_encode - @f into @out (REPL_FRAME_MAX bytes); the bytes
 * written, or -EINVAL (a body the type cannot have). */
int repl_frame_encode(const struct repl_frame *f, uint8_t *out);

/* repl_frame_body_len - from a 32-byte header: the body length it
 * announces (checked against its type), or -errno as below. */
int repl_frame_body_len(const uint8_t *hdr, size_t len);

/* repl_frame_decode - a whole frame, exactly @len bytes. 0 or -errno. */
int repl_frame_decode(const uint8_t *buf, size_t len, struct repl_frame *f);

const char *repl_type_str(uint8_t type);

#endif /* PFS_BLOB_REPL_WIRE_H */
