/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to src/delta: the content-defined chunker the index and the
 * encoder share, and the byte-plane transforms the encoder and the applier
 * share. Not a public API. */
#ifndef PFS_DELTA_INT_H
#define PFS_DELTA_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pfs/delta.h"

/* Chunk sizes: a boundary is never before MIN, rarely after AVG, always at
 * MAX. 8 KiB on average: fine enough that an unchanged tensor or file in a
 * tarball is found whole, coarse enough that the index of a 1 GiB base is
 * ~130 k entries. */
#define CDC_MIN (2u << 10)
#define CDC_AVG (8u << 10)
#define CDC_MAX (64u << 10)

/* The length of the chunk that starts at @p (@n bytes available): a gear
 * rolling hash with normalised chunking (a stricter mask before AVG, a
 * looser one after), so boundaries depend on content, not position, and
 * resynchronise after an insertion. */
size_t pfs_cdc_cut(const uint8_t *p, size_t n);

/* The base offset of a chunk of the base with this CRC32C and length, or
 * UINT64_MAX; the caller verifies the bytes. */
uint64_t pfs_delta_index__find(const struct pfs_delta_index *x, uint32_t crc, uint32_t len);

/* Byte-plane split of @n bytes into @out for elements of @e bytes: all
 * bytes 0 of the elements, then all bytes 1, ...; the n % e tail last, as
 * is. With @x (not NULL) the input is in[i] ^ x[i]. unsplit is the inverse,
 * XORing @x into the output when given. */
void pfs_plane_split(const uint8_t *in, const uint8_t *x, size_t n, unsigned int e, uint8_t *out);
void pfs_plane_unsplit(const uint8_t *in, const uint8_t *x, size_t n, unsigned int e, uint8_t *out);

/* The receiver's appliers (delta_apply_pool.c): decoded grams applied by
 * several threads, each its own applier, in any order. */
#define PFS_DELTA_APPLY_THREADS_MAX 64

/* One gram on its way to an applier: the reader fills buf (cap bytes),
 * decodes n operations into ops (ops_cap entries), points payload into
 * buf. Both buffers are the job's, kept for the next gram. */
struct pfs_delta_apply_job {
	uint8_t *buf;
	size_t cap;
	struct pfs_delta_op *ops;
	uint32_t ops_cap, n;
	const uint8_t *payload;
	uint64_t seq;
};

struct pfs_delta_apply_pool;

/* @threads workers applying over @base into @target; NULL on no memory or
 * no thread. */
struct pfs_delta_apply_pool *pfs_delta_apply_pool__new(int threads, const uint8_t *base,
						       uint8_t *target);
int pfs_delta_apply_pool__threads(const struct pfs_delta_apply_pool *p);
/* A free job, waiting (counted in *wait_s) while all are in flight; NULL
 * once a gram failed to apply: *err (-EBADMSG, -ENOMEM) and its *err_seq. */
struct pfs_delta_apply_job *pfs_delta_apply_pool__take(struct pfs_delta_apply_pool *p,
						       double *wait_s, int *err, uint64_t *err_seq);
/* A taken job not submitted (its gram did not decode). */
void pfs_delta_apply_pool__give_back(struct pfs_delta_apply_pool *p, struct pfs_delta_apply_job *j);
void pfs_delta_apply_pool__submit(struct pfs_delta_apply_pool *p, struct pfs_delta_apply_job *j);
/* Wait until every submitted gram is applied: 0 or the first error. */
int pfs_delta_apply_pool__drain(struct pfs_delta_apply_pool *p, double *wait_s, uint64_t *err_seq);
/* Stop, join, free; the workers' summed apply time and their number. */
void pfs_delta_apply_pool__free(struct pfs_delta_apply_pool *p, double *busy_s, int *threads);

#endif /* PFS_DELTA_INT_H */
