/* SPDX-License-Identifier: Apache-2.0 */
/* Gram codec: the transport-independent wire format (docs/design/wire-format.md).
 *
 * A gram is a 40-byte header, a descriptor table and, in payload mode, a
 * payload slab holding the referenced bytes in descriptor order. Control
 * records (hello/accept/refuse/end/result) are 40-byte records with their own
 * magic. Everything is little-endian. The codec works on byte buffers only:
 * TCP streams them, UDP will fragment an encoded gram into datagrams and
 * reassemble it before decoding, AF_XDP will decode straight from frames.
 *
 * Decoders never read outside [buf, buf+len), never trust a count before
 * checking it against the bytes present and the limits below, and check
 * every descriptor against the blob size without integer overflow.
 * Error codes (negative errno values) returned by every decoder:
 *   -EMSGSIZE        truncated, or lengths that disagree with the header
 *   -EBADMSG         bad magic, malformed table (varint, trailing bytes,
 *                    payload length != sum of descriptor lengths)
 *   -EILSEQ          header or descriptor-table CRC32C mismatch
 *   -EPROTONOSUPPORT unknown version
 *   -EPROTO          unknown mode, type, flags or non-zero reserved field
 *   -E2BIG           a count above PFS_GRAM_MAX_DESC / PFS_GRAM_MAX_PAYLOAD, or
 *                    descriptors referencing over PFS_GRAM_MAX_EFFECTIVE bytes
 *   -ERANGE          a descriptor outside the blob, or offset/length overflow
 *   -ENOSPC          (caller error) output array smaller than ndesc
 */
#ifndef PFS_GRAM_H
#define PFS_GRAM_H

#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#define PFS_GRAM_MAGIC 0x47534650u /* "PFSG" */
#define PFS_CTL_MAGIC 0x43534650u /* "PFSC" */
#define PFS_GRAM_VERSION 1
#define PFS_GRAM_HDR_LEN 40
#define PFS_CTL_LEN 40
#define PFS_GRAM_MAX_DESC 65536u
#define PFS_GRAM_MAX_PAYLOAD (1u << 30)
/* Effective bytes one offset/arith gram may reference: 65536 descriptors of
 * 64 MiB (786 KB on the wire) would otherwise make a receiver hash 4 TiB.
 * One descriptor (< 4 GiB) always fits; senders cut their grams to it. */
#define PFS_GRAM_MAX_EFFECTIVE (1ULL << 32)
#define PFS_GRAM_OFFSET_DESC_LEN 12 /* le64 offset, le32 length */
#define PFS_GRAM_ARITH_DESC_MAX 15 /* 10-byte varint + 5-byte varint */

enum pfs_gram_mode {
	PFS_MODE_PAYLOAD = 0, /* descriptors + referenced bytes */
	PFS_MODE_OFFSET = 1, /* fixed 12-byte descriptors, no payload */
	PFS_MODE_ARITH = 2, /* zig-zag varint deltas, no payload */
	PFS_MODE_DELTA = 3, /* a new version as operations over a base both ends
			     * hold: delta grams (pfs/delta.h), their own codec;
			     * the gram codec here refuses this mode */
};

struct pfs_desc {
	uint64_t off;
	uint32_t len;
	uint32_t rsvd;
};

struct pfs_gram_hdr {
	uint8_t version;
	uint8_t mode;
	uint8_t flags;
	uint64_t seq;
	uint32_t ndesc;
	uint32_t desc_len;
	uint32_t payload_len;
	uint32_t desc_crc;
};

enum pfs_ctl_type {
	PFS_CTL_HELLO = 1, /* sender -> receiver, first record */
	PFS_CTL_ACCEPT = 2, /* receiver -> sender */
	PFS_CTL_REFUSE = 3, /* receiver -> sender, then close */
	PFS_CTL_END = 4, /* sender -> receiver, after the last gram */
	PFS_CTL_RESULT = 5, /* receiver -> sender, its verdict */
	PFS_CTL_DIGEST = 6, /* either way, right before END or RESULT when the
				 * checksum is wider than END's 32-bit word */
	PFS_CTL_WAIT = 7, /* sender -> receiver (udp, afxdp): still there, waiting
			   * for its source (a blob still being filled) */
	PFS_CTL_ABORT = 8, /* sender -> receiver (udp, afxdp): its source failed;
			    * word: the errno, count: the length of the reason
			    * (text) that follows the record; the transfer ends */
	/* A receiver started with a token (pfs recv --token-file) speaks first
	 * on every connection: CHALLENGE with a fresh nonce; the sender answers
	 * HELLO, then AUTH with the MAC of the nonce and the HELLO's bytes
	 * (pfs_ctl_auth_mac). A connection whose AUTH does not verify is
	 * dropped, counted and logged, and the receiver keeps waiting. */
	PFS_CTL_CHALLENGE = 9, /* receiver -> sender: size, value = 16-byte nonce */
	PFS_CTL_AUTH = 10, /* sender -> receiver: size, value, count = 24-byte MAC */
};
#define PFS_CTL_NONCE_LEN 16
#define PFS_CTL_MAC_LEN 24
#define PFS_CTL_ABORT_TEXT_MAX 480
/* DIGEST.word for a SHA-256 (delta mode): count is 32 and the 32 bytes of
 * the digest follow the record. Not an enum pfs_integrity value. */
#define PFS_DIGEST_SHA256 3u

/* Why a receiver refused (pfs_ctl.word of PFS_CTL_REFUSE). */
enum pfs_refuse_code {
	PFS_REFUSE_VERSION = 1,
	PFS_REFUSE_MODE = 2,
	PFS_REFUSE_FINGERPRINT = 3,
	PFS_REFUSE_SIZE = 4,
	PFS_REFUSE_PARAMS = 5, /* transport parameters (udp: fragment size, window) */
	PFS_REFUSE_INTEGRITY = 6, /* the two ends run different checksums */
	PFS_REFUSE_LIMIT = 7, /* the sender's blob is over the receiver's size
			       * limit (payload mode); REFUSE.size carries it */
	PFS_REFUSE_WORK = 8, /* the HELLO's planned bytes are over the receiver's
			      * bound on work (--max-work); REFUSE.count carries it */
};

#define PFS_CTL_F_OK 0x01 /* RESULT: receiver's checksum matched */
/* HELLO/ACCEPT: bits 1-2 carry the checksum kind (enum pfs_integrity). */
#define PFS_CTL_F_INTEGRITY_SHIFT 1
#define PFS_CTL_F_INTEGRITY_MASK 0x06
#define PFS_CTL_F_INTEGRITY(k) \
	((uint8_t)(((k) << PFS_CTL_F_INTEGRITY_SHIFT) & PFS_CTL_F_INTEGRITY_MASK))
/* Unsigned, like enum pfs_integrity (all its values are >= 0), so the two
 * compare without a sign conversion; a uint8_t alone would promote to int. */
#define PFS_CTL_INTEGRITY(flags) \
	(((unsigned int)(flags)&PFS_CTL_F_INTEGRITY_MASK) >> PFS_CTL_F_INTEGRITY_SHIFT)

/* One control record. Field meaning per type:
 *            size            value          count            word
 *   HELLO    blob size       fingerprint    planned bytes    descs per gram
 *   ACCEPT   blob size       fingerprint    0                0
 *   REFUSE   blob size       fingerprint    0                refuse code
 *   END      effective bytes descriptors    grams            sender CRC32C
 *   RESULT   effective bytes descriptors    decode errors    receiver CRC32C
 *   DIGEST   0               64-bit digest  0                checksum kind
 * END/RESULT carry the low 32 bits of a 64-bit checksum (FNV-1a 64); the
 * whole value travels in a DIGEST record sent just before them. */
struct pfs_ctl {
	uint8_t type;
	uint8_t mode;
	uint8_t flags;
	uint64_t size;
	uint64_t value;
	uint64_t count;
	uint32_t word;
};

/* Decode-error counters, one set per worker; summed by the control thread. */
struct pfs_gram_stats {
	uint64_t ok;
	uint64_t errors; /* sum of the classes below */
	uint64_t truncated; /* -EMSGSIZE */
	uint64_t malformed; /* -EBADMSG, -EPROTO */
	uint64_t bad_crc; /* -EILSEQ */
	uint64_t bad_version; /* -EPROTONOSUPPORT */
	uint64_t over_limit; /* -E2BIG, -ENOSPC */
	uint64_t out_of_bounds; /* -ERANGE */
};

const char *pfs_mode_str(enum pfs_gram_mode mode);
/* "payload", "offset" ("offset-only"), "arith" ("arithmetic"), "delta": 0/-EINVAL. */
int pfs_mode_parse(const char *s, enum pfs_gram_mode *mode);

/* Upper bound of the descriptor table size for n descriptors. */
size_t pfs_gram_desc_len_max(enum pfs_gram_mode mode, uint32_t n);

/* pfs_gram_encode - write header + descriptor table for @n descriptors into
 * @out. The payload slab (payload mode) is not copied: the transport sends
 * the referenced bytes after the returned length (writev from the blob).
 * Returns the bytes written, or -EINVAL (bad mode; arith offsets >= 2^63), -E2BIG (n or the payload
 * over the limits), -ENOSPC (@cap too small). */
ssize_t pfs_gram_encode(enum pfs_gram_mode mode, uint64_t seq, const struct pfs_desc *d, uint32_t n,
			void *out, size_t cap);

/* pfs_gram_decode_hdr - validate a header from @len bytes (>= 40 needed).
 * Checks magic, version, mode, flags, reserved, header CRC, limits and that
 * desc_len/payload_len are possible for the mode. 0 or -errno (see top). */
int pfs_gram_decode_hdr(const void *buf, size_t len, struct pfs_gram_hdr *h);

/* pfs_gram_decode_desc - decode and bounds-check the descriptor table of a
 * validated header into @out (@max_out entries). @len must equal desc_len.
 * Every descriptor satisfies off + len <= blob_size. Returns ndesc or -errno. */
int pfs_gram_decode_desc(const struct pfs_gram_hdr *h, const void *desc, size_t len,
			 uint64_t blob_size, struct pfs_desc *out, uint32_t max_out);

/* pfs_gram_decode - a whole gram in one buffer (UDP after reassembly, AF_XDP,
 * fuzzing). @len must be exactly header + table + payload. On success
 * *payload points at the slab inside @buf (NULL when there is none).
 * Returns ndesc or -errno. */
int pfs_gram_decode(const void *buf, size_t len, uint64_t blob_size, struct pfs_gram_hdr *h,
		    struct pfs_desc *out, uint32_t max_out, const uint8_t **payload);

/* Control records: 40 bytes. encode returns PFS_CTL_LEN or -EINVAL;
 * decode returns 0 or -errno (see top). */
int pfs_ctl_encode(const struct pfs_ctl *c, void *out);
int pfs_ctl_decode(const void *buf, size_t len, struct pfs_ctl *c);

/* The magic of a 4+ byte record (gram or control), 0 if @len < 4. */
uint32_t pfs_wire_magic(const void *buf, size_t len);

/* Count @err (a decode result) into @s: ok when >= 0. */
void pfs_gram_stats_count(struct pfs_gram_stats *s, int err);

#endif /* PFS_GRAM_H */
