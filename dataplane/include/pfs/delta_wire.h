/* SPDX-License-Identifier: Apache-2.0 */
/* The delta gram codec (src/wire/delta_wire.c): the operations of delta
 * mode (pfs/delta.h) as a 40-byte header (magic "PFSD", laid out like a
 * gram's), a table of operations (varints) and a payload slab, and the
 * counts per operation kind. Decoders never read outside the buffer, and
 * check every operation against the base and target sizes, in ascending,
 * non-overlapping target order; errors are those of pfs/gram.h. */
#ifndef PFS_DELTA_WIRE_H
#define PFS_DELTA_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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

#endif /* PFS_DELTA_WIRE_H */
