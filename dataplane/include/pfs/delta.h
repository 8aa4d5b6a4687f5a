/* SPDX-License-Identifier: Apache-2.0 */
/* Delta mode: send a new version of some data (the *target*) to a receiver
 * that already holds an older one (the *base*), as operations that rebuild
 * the target from the base (docs/design/delta.md, docs/design/wire-format.md "Delta grams").
 *
 *   COPY  target[dst, dst+len) = base[src, src+len)   same bytes, at the same
 *         offset or moved: the seeds' offset-only mode over the base
 *   XOR   target[dst, dst+len) = base[dst, dst+len) ^ residual, the residual
 *         zstd-compressed after a byte-plane split for 2- or 4-byte elements:
 *         near-identical bytes at the same place (a fine-tuned tensor)
 *   ZSTD  target[dst, dst+len) = zstd-decompressed payload (plane split too)
 *   ZREF  target[dst, dst+len) = zstd-decompressed payload whose matches may
 *         refer to base[src, src+wlen): bytes that moved a little (files in a
 *         tarball after one grew), found at byte granularity
 *   RAW   target[dst, dst+len) = payload, when compression does not help
 *
 * A delta gram is a 40-byte header (magic "PFSD", laid out like a gram's),
 * a table of operations (varints) and a payload slab holding the XOR, ZSTD
 * and RAW bytes in table order. Decoders never read outside the buffer, and
 * check every operation against the base and target sizes, in ascending,
 * non-overlapping target order; errors are those of pfs/gram.h. */
#ifndef PFS_DELTA_H
#define PFS_DELTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pfs/xfer.h"

#define PFS_DELTA_MAGIC 0x44534650u /* "PFSD" */
#define PFS_DELTA_VERSION 1
#define PFS_DELTA_HDR_LEN 40
#define PFS_DELTA_MAX_OPS 65536u
/* Target bytes one operation may produce, and one gram may reference: a
 * receiver decompresses into a scratch of this size at most. */
#define PFS_DELTA_OP_MAX (16u << 20)
#define PFS_DELTA_GRAM_MAX_TARGET (64u << 20)
#define PFS_DELTA_MAX_PAYLOAD (64u << 20)
#define PFS_DELTA_OP_ENC_MAX 41 /* kind byte, 3 varints of up to 10 bytes, 2 of 5 */
/* The most base bytes one ZREF operation's frame may refer to. */
#define PFS_DELTA_ZREF_WINDOW_MAX (8u << 20)

enum pfs_delta_kind {
	PFS_DELTA_COPY = 0,
	PFS_DELTA_XOR = 1,
	PFS_DELTA_ZSTD = 2,
	PFS_DELTA_RAW = 3,
	PFS_DELTA_ZREF = 4,
};
#define PFS_DELTA_KINDS 5

struct pfs_delta_op {
	uint64_t dst; /* target offset */
	uint64_t src; /* COPY: base offset; ZREF: start of its base window; else 0 */
	uint32_t len; /* target bytes produced, 1..PFS_DELTA_OP_MAX */
	uint32_t clen; /* payload bytes: XOR/ZSTD/ZREF compressed, RAW len, COPY 0 */
	uint32_t wlen; /* ZREF: base bytes of its window, 1..PFS_DELTA_ZREF_WINDOW_MAX */
	uint8_t kind; /* enum pfs_delta_kind */
	uint8_t elem; /* XOR/ZSTD: byte-plane element size 1, 2 or 4; else 1 */
};

struct pfs_delta_hdr {
	uint8_t version;
	uint64_t seq;
	uint32_t nops;
	uint32_t table_len;
	uint32_t payload_len;
	uint32_t table_crc;
};

const char *pfs_delta_kind_str(enum pfs_delta_kind k);

/* pfs_delta_gram_encode - header and table of @n operations into @out
 * (PFS_DELTA_HDR_LEN + n * PFS_DELTA_OP_ENC_MAX bytes are enough); the
 * caller appends the payload (sum of clen) after the returned length.
 * Operations must be in ascending, non-overlapping target order. Bytes
 * written, or -EINVAL (order, sizes, kind), -E2BIG, -ENOSPC. */
ssize_t pfs_delta_gram_encode(uint64_t seq, const struct pfs_delta_op *ops, uint32_t n, void *out,
			      size_t cap);

/* pfs_delta_decode_hdr - validate a delta gram header (>= 40 bytes). */
int pfs_delta_decode_hdr(const void *buf, size_t len, struct pfs_delta_hdr *h);

/* pfs_delta_decode_ops - the table of a validated header (@len ==
 * table_len) into @out. Every operation lies inside [0, target_size), COPY
 * and XOR sources inside [0, base_size), in ascending target order starting
 * at or after @min_dst; payload lengths add up to payload_len. ndesc or
 * -errno. */
int pfs_delta_decode_ops(const struct pfs_delta_hdr *h, const void *table, size_t len,
			 uint64_t base_size, uint64_t target_size, uint64_t min_dst,
			 struct pfs_delta_op *out, uint32_t max_out);

/* pfs_delta_decode - a whole delta gram in one buffer (fuzzing, tests). */
int pfs_delta_decode(const void *buf, size_t len, uint64_t base_size, uint64_t target_size,
		     struct pfs_delta_hdr *h, struct pfs_delta_op *out, uint32_t max_out,
		     const uint8_t **payload);

/* ---- encoder, applier (need libzstd) ---- */

/* Counts per operation kind: how many, target bytes, payload bytes. */
struct pfs_delta_stats {
	uint64_t n[PFS_DELTA_KINDS];
	uint64_t bytes[PFS_DELTA_KINDS];
	uint64_t wire[PFS_DELTA_KINDS];
	uint64_t moved_n, moved_bytes; /* COPY from another offset (subset of COPY) */
};

void pfs_delta_stats_add(struct pfs_delta_stats *to, const struct pfs_delta_stats *from);
/* Count @n decoded operations into @st. */
void pfs_delta_stats_ops(struct pfs_delta_stats *st, const struct pfs_delta_op *ops, uint32_t n);

/* Index of a base: the content-defined chunks of the base by hash, so the
 * encoder finds bytes that moved. Built once per base (threads: up to 8). */
struct pfs_delta_index;
struct pfs_delta_index *pfs_delta_index__build(const uint8_t *base, uint64_t size, int threads);
void pfs_delta_index__free(struct pfs_delta_index *x);
uint64_t pfs_delta_index__chunks(const struct pfs_delta_index *x);

/* One encoder per thread. @idx may be NULL (no moved matches), @base_size 0
 * (no base: ZSTD/RAW only). */
struct pfs_delta_enc;
struct pfs_delta_enc *pfs_delta_enc__new(const struct pfs_delta_index *idx, const uint8_t *base,
					 uint64_t base_size, int level);
void pfs_delta_enc__free(struct pfs_delta_enc *e);

/* pfs_delta_enc__gram - encode target[off, off+len) (len <=
 * PFS_DELTA_GRAM_MAX_TARGET) as one delta gram with sequence @seq. *out
 * points at the gram (header, table, payload) inside the encoder, valid
 * until the next call. Adds to @st. Gram length or -errno. */
ssize_t pfs_delta_enc__gram(struct pfs_delta_enc *e, uint64_t seq, const uint8_t *target,
			    uint64_t off, uint32_t len, const uint8_t **out,
			    struct pfs_delta_stats *st);

/* One applier per thread: rebuilds target bytes from decoded operations. */
struct pfs_delta_apply;
struct pfs_delta_apply *pfs_delta_apply__new(void);
void pfs_delta_apply__free(struct pfs_delta_apply *a);
/* Execute @n decoded operations with their @payload over @base into
 * @target. 0, or -EBADMSG (a zstd frame that is invalid or does not
 * decompress to exactly its length), -ENOMEM. */
int pfs_delta_apply__ops(struct pfs_delta_apply *a, const struct pfs_delta_op *ops, uint32_t n,
			 const uint8_t *payload, const uint8_t *base, uint8_t *target);

/* ---- transfer (TCP) ---- */

struct pfs_delta_opts {
	size_t sz; /* sizeof(struct pfs_delta_opts) */
	const char *host;
	uint16_t port;
	const uint8_t *base; /* NULL with base_size 0: none (receiver: --no-base) */
	uint64_t base_size;
	int threads; /* encode/apply threads, 0: the CPUs this process may use */
	int io_timeout_ms;
	/* sender */
	const uint8_t *target;
	uint64_t target_size;
	int level; /* zstd level, 0: 3 */
	int connect_timeout_ms;
	const struct pfs_delta_index *index; /* NULL: built at setup */
	/* receiver */
	int accept_timeout_ms;
	const char *ready_file;
	uint64_t max_size; /* the largest target accepted, 0: PFS_XFER_MAX_SIZE_DEFAULT */
	/* receiver: where the target is rebuilt. out_map(ctx, size) returns
	 * writable memory of @size bytes (NULL + errno: refused), called once
	 * the sender's size is known; NULL: malloc'd and freed. */
	uint8_t *(*out_map)(void *ctx, uint64_t size);
	void *out_ctx;
};

/* What a delta transfer measured, beside pfs_xfer_result. */
struct pfs_delta_result {
	uint64_t base_size, target_size;
	bool full_copy; /* the receiver had no base */
	struct pfs_delta_stats st;
	uint8_t sha256[32]; /* of the target: the sender's; the receiver's own */
	bool sha_valid;
	double index_s, encode_s, send_s, apply_s, verify_s, recv_wait_s;
	int threads;
	char bound[16]; /* the stage that bounded: encode, wire, apply, verify */
};

int pfs_delta_send(const struct pfs_delta_opts *o, struct pfs_xfer_result *r,
		   struct pfs_delta_result *d);
int pfs_delta_recv(const struct pfs_delta_opts *o, struct pfs_xfer_result *r,
		   struct pfs_delta_result *d);

/* The fingerprint both ends compare: pfs_fingerprint_mem over the base's
 * content (0 for no base). */
uint64_t pfs_delta_base_fp(const uint8_t *base, uint64_t size);

#endif /* PFS_DELTA_H */
