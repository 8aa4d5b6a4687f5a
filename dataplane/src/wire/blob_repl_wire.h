/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: the control frames of the replication stream (pfs/blob_repl.h,
 * docs/design/wire-format.md "Replication stream"). Data travels as payload grams
 * (gram.h); these frames carry the handshake and the end. One 32-byte
 * header, little-endian, then a body of body_len bytes:
 *
 *   0  4 magic    "PFSF"
 *   4  1 version  1
 *   5  1 type     1 HELLO, 2 AUTH, 3 ACCEPT, 4 REFUSE, 5 END, 6 ERROR,
 *                 7 KEEPALIVE, 8 LAYOUT, 9 DIGESTS, 10 STEP
 *   6  2 body_len HELLO: 32; AUTH: 32, or 48 with the DELTA flag; ACCEPT,
 *                 END, KEEPALIVE: 0; REFUSE, ERROR, STEP: 1..480; LAYOUT:
 *                 0..65535; DIGESTS: 32 * n, n 1..2047 (below)
 *   8  8 size     the server's blob size (every type; AUTH: the client's;
 *                 LAYOUT: the layout's entry count)
 *  16  8 offset   AUTH, ACCEPT: the start offset; END: the end (= size);
 *                 KEEPALIVE: the server's watermark; REFUSE: why (a code);
 *                 LAYOUT: the index of the frame's first entry; DIGESTS:
 *                 the index of the frame's first chunk
 *  24  4 xport    AUTH: how the client receives the data: byte 24 the
 *                 transport (0 TCP: grams on this connection; 1 UDP, 2
 *                 AF_XDP: datagrams to the client's port at bytes 26..27,
 *                 le16, this connection carrying the repair plane's
 *                 control records, docs/design/wire-format.md "Datagram
 *                 replication"), byte 25 flags: bit 0 DELTA (TCP only:
 *                 send delta grams against the base the body names,
 *                 "Delta replication"), bit 1 LAYOUT (send the blob's
 *                 file layout first, LAYOUT frames), bit 2 CHUNKS (send
 *                 the blob's chunk digests, DIGESTS frames, after the
 *                 last gram or datagram and before END, when the server
 *                 has them), bit 3 RANGE (TCP, alone: send [offset, end)
 *                 only, then END at end; the body then carries end),
 *                 bit 4 STEPPED (the client is a relay that stepped
 *                 aside, docs/design/fanout.md "A slow relay": never
 *                 send it STEP), the other bits zero. Every other type: 0
 *  28  4 crc      CRC32C of bytes 0..27 and the body
 *  32    body     HELLO: nonce; AUTH: HMAC-SHA256, with DELTA then the
 *                 client's base size (le64) and fingerprint (le64), with
 *                 RANGE then the end (le64, in the MAC too);
 *                 REFUSE/ERROR/STEP: text
 *                 (printable ASCII and UTF-8, no control bytes, no NUL)
 *
 * LAYOUT frames (a server asked for them sends them after ACCEPT, before
 * any gram) carry the blob's file layout (docs/design/blob-layout.md)); their body, little-endian:
 *
 *   0  2 n        entries in this frame
 *   2    n times  le64 offset, le64 length, le16 name_len, name (UTF-8,
 *                 relative, no "", "." or ".." part, 1..4095 bytes)
 *        tail     le64: the blob's tail (manifest) offset, in the frame
 *                 that completes the list (first + n = count) only
 *
 * A server whose blob has no layout (flat) sends one LAYOUT frame with
 * count 0, first 0 and an empty body. Entries come in name order with
 * ascending, non-overlapping, 4096-aligned extents below the tail, which
 * is 4096-aligned and below the blob's size.
 *
 * The decoder takes bytes from any peer: it checks the header before it
 * trusts body_len, never reads outside the buffer, and returns 0 or -errno
 * like the gram decoders (gram.h): -EMSGSIZE truncated or a length that
 * disagrees, -EBADMSG bad magic or body, -EILSEQ CRC, -EPROTONOSUPPORT
 * version, -EPROTO type, reserved or a length the type cannot have. */
#ifndef PFS_BLOB_REPL_WIRE_H
#define PFS_BLOB_REPL_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pfs/repl_wire.h"

#define REPL_MAGIC 0x46534650u /* "PFSF" */
#define REPL_VERSION 1
#define REPL_HDR 32
#define REPL_NONCE 32
#define REPL_MAC 32
#define REPL_AUTH_DELTA_BODY (REPL_MAC + 16)
#define REPL_AUTH_RANGE_BODY (REPL_MAC + 8)
#define REPL_FLAG_DELTA 0x01u
#define REPL_FLAG_LAYOUT 0x02u
#define REPL_FLAG_CHUNKS 0x04u
#define REPL_FLAG_RANGE 0x08u
#define REPL_FLAG_STEPPED 0x10u
#define REPL_FLAGS                                                                 \
	(REPL_FLAG_DELTA | REPL_FLAG_LAYOUT | REPL_FLAG_CHUNKS | REPL_FLAG_RANGE | \
	 REPL_FLAG_STEPPED)
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
	REPL_LAYOUT = 8, /* server, asked: the blob's file layout */
	REPL_DIGESTS = 9, /* server, asked: the blob's chunk digests */
	REPL_STEP = 10, /* server, a relay too slow to relay: fetch from your next upstream */
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
	uint64_t end; /* AUTH with REPL_FLAG_RANGE: the end of the bytes asked for */
	uint16_t body_len;
	uint64_t size, offset;
	uint8_t body[PFS_REPL_MSG_MAX + 1]; /* text frames: NUL-terminated */
};

/* repl_frame_encode - @f into @out (REPL_FRAME_MAX bytes); the bytes
 * written, or -EINVAL (a body the type cannot have). */
int repl_frame_encode(const struct repl_frame *f, uint8_t *out);

/* repl_frame_body_len - from a 32-byte header: the body length it
 * announces (checked against its type), or -errno as below. LAYOUT frames
 * are not struct repl_frame's (their body is larger): -EPROTO here, see
 * repl_layout_body_len. */
int repl_frame_body_len(const uint8_t *hdr, size_t len);

/* repl_frame_decode - a whole frame, exactly @len bytes. 0 or -errno. */
int repl_frame_decode(const uint8_t *buf, size_t len, struct repl_frame *f);

const char *repl_type_str(uint8_t type);

/* ---- LAYOUT frames ---- */

#define REPL_LAYOUT_BODY_MAX 65535u
#define REPL_LAYOUT_FRAME_MAX (REPL_HDR + REPL_LAYOUT_BODY_MAX)
#define REPL_LAYOUT_ENT_HDR 18 /* le64 offset, le64 length, le16 name_len */
#define REPL_LAYOUT_NAME_MAX 4095 /* as the manifest's (PFS_MANIFEST_NAME_MAX) */
/* Entries in a layout at most: what a manifest of its 256 MiB bound
 * (PFS_MANIFEST_MAX) can list, about 2 million. */
#define REPL_LAYOUT_ENT_MAX (1u << 21)
/* Name bytes in a layout at most: they all fit in such a manifest. */
#define REPL_LAYOUT_NAMES_MAX (256ull << 20)
#define REPL_LAYOUT_ALIGN 4096u

/* One entry of a layout (the encoder's input, the list's output). */
struct repl_layout_ent {
	const char *name; /* NUL-terminated */
	uint64_t offset, length;
};

/* A whole layout: the encoder's input. */
struct repl_layout {
	uint32_t n;
	const struct repl_layout_ent *ent;
	uint64_t tail_off;
};

/* A decoded LAYOUT frame. Its entries stay in the caller's buffer: walk
 * them with repl_layout_next. */
struct repl_layout_frame {
	uint32_t count; /* entries in the whole layout */
	uint32_t first; /* index of this frame's first entry */
	uint16_t n; /* entries in this frame */
	bool none; /* the server's blob has no layout (count 0, empty body) */
	bool last; /* first + n == count: tail_off is set */
	uint64_t tail_off;
	const uint8_t *ents; /* the first entry, inside the decoded buffer */
	const uint8_t *ents_end; /* after the last entry */
	const char *why; /* a refusal: the field it is about (static text) */
};

/* One entry as it lies in a frame: the name is not NUL-terminated. */
struct repl_layout_wire_ent {
	uint64_t offset, length;
	const char *name;
	uint16_t name_len;
};

/* repl_layout_encode - the LAYOUT frame that carries entries of @l from
 * index @first on, as many as fit, into @out (REPL_LAYOUT_FRAME_MAX
 * bytes); @l NULL: the frame that says "no layout". *@next gets the index
 * after the frame's last entry (= l->n: the frame completed the list).
 * Returns the bytes written or -EINVAL (a name of 0 or more than
 * REPL_LAYOUT_NAME_MAX bytes, more than REPL_LAYOUT_ENT_MAX entries,
 * @first past the end). The encoder checks lengths only; the peer's
 * decoder checks the rest. */
int repl_layout_encode(const struct repl_layout *l, uint32_t first, uint8_t *out, uint32_t *next);

/* repl_layout_body_len - repl_frame_body_len for a LAYOUT header (any
 * other type: -EPROTO), its count and first index checked too (-ERANGE). */
int repl_layout_body_len(const uint8_t *hdr, size_t len);

/* repl_layout_decode - a whole LAYOUT frame of exactly @len bytes, for a
 * blob of @size bytes: the header as repl_frame_body_len checks it, the
 * CRC, then the body length-first (the count before the entries, each
 * entry's fixed part before its name, every length against what is left)
 * and every field against its range: first <= count <= REPL_LAYOUT_ENT_MAX,
 * first + n <= count, n > 0 unless count is 0, names (1..4095 bytes of
 * UTF-8, no NUL or control byte, relative, no "", "." or ".." part, each
 * after the one before), extents (4096-aligned offset, inside the blob,
 * not before the previous entry's end), the tail (4096-aligned, not
 * before the last extent's end, below @size), no trailing bytes.
 * 0 or -errno as the frame decoder's; -ERANGE a field out of its range,
 * -EBADMSG a name or an order; f->why then names the field. */
int repl_layout_decode(const uint8_t *buf, size_t len, uint64_t size, struct repl_layout_frame *f);

/* The layout being received (blob_repl_layout.c): LAYOUT frames, in order,
 * into one list. Zero-initialise; repl_layout_list_fini frees. */
struct repl_layout_list {
	uint32_t count; /* entries announced by the first frame */
	uint32_t got; /* entries received */
	uint32_t cap; /* entries allocated: grows with what arrived, never
		       * with what a frame announces */
	bool started, none, done;
	uint64_t tail_off; /* when done */
	uint64_t end; /* the end of the last entry's extent */
	uint64_t name_bytes; /* of the entries received */
	struct repl_layout_ent *ent; /* names owned (strndup) */
};

/* repl_layout_list_add - append a frame repl_layout_decode accepted. 0
 * more to come, 1 the list is complete (or none), -EPROTO a frame out of
 * order or with another count, -EBADMSG a name not after the previous
 * frame's last, -ERANGE an extent before its end, -E2BIG names of more
 * than REPL_LAYOUT_NAMES_MAX bytes in all, -ENOMEM. */
int repl_layout_list_add(struct repl_layout_list *l, const struct repl_layout_frame *f);
/* The complete list as a layout (valid while @l lives). */
struct repl_layout repl_layout_list_get(const struct repl_layout_list *l);
void repl_layout_list_fini(struct repl_layout_list *l);

/* repl_layout_equal - same entries (names, offsets, lengths) and tail. */
bool repl_layout_equal(const struct repl_layout *a, const struct repl_layout *b);

/* repl_layout_next - the entry at *@pos (start at f->ents) of a frame
 * repl_layout_decode accepted; advances *@pos. false after the last. */
bool repl_layout_next(const struct repl_layout_frame *f, const uint8_t **pos,
		      struct repl_layout_wire_ent *e);

/* ---- DIGESTS frames ----
 *
 * A server asked for them (AUTH flag CHUNKS) that holds the blob's chunk
 * digests (pfs/blob_chunks.h: BLAKE3 of every PFS_CHUNK_SIZE piece, the
 * origin's list) sends them after the last gram, before END: frames of up
 * to REPL_DIGESTS_MAX digests of 32 bytes, in order, the header's size the
 * blob's and its offset the index of the frame's first chunk. A server
 * without them sends END alone, and the client verifies without them. */

#define REPL_DIGESTS_MAX 2047u /* digests a frame carries at most */
#define REPL_DIGESTS_FRAME_MAX (REPL_HDR + REPL_DIGESTS_MAX * 32u)

struct repl_digests {
	uint32_t first, n;
	const uint8_t *d; /* n * 32 bytes, inside the decoded buffer */
};

/* repl_digests_body_len - repl_frame_body_len for a DIGESTS header (any
 * other type: -EPROTO; a body not a multiple of 32 bytes: -EPROTO). */
int repl_digests_body_len(const uint8_t *hdr, size_t len);
/* repl_digests_encode - @n (1..REPL_DIGESTS_MAX) digests from index
 * @first of a blob of @size bytes into @out (REPL_DIGESTS_FRAME_MAX
 * bytes): the bytes written, or -EINVAL. */
int repl_digests_encode(uint64_t size, uint32_t first, const uint8_t *d, uint32_t n, uint8_t *out);
/* repl_digests_decode - a whole DIGESTS frame of exactly @len bytes for a
 * blob of @size bytes: the header, the CRC, the size, and first + n within
 * the blob's chunk count. 0 or -errno as repl_frame_decode's; -ERANGE a
 * size or index out of range. */
int repl_digests_decode(const uint8_t *buf, size_t len, uint64_t size, struct repl_digests *f);

#endif /* PFS_BLOB_REPL_WIRE_H */
