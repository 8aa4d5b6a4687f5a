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
 * and RAW bytes in table order: its codec and the counts per operation kind
 * are pfs/delta_wire.h, which this header includes. */
#ifndef PFS_DELTA_H
#define PFS_DELTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pfs/delta_wire.h"

/* ---- encoder, applier (need libzstd) ---- */

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

/* ---- transfer: the engine's delta mode (pfs/xfer.h, PFS_MODE_DELTA:
 * struct pfs_xfer_delta_opts, over tcp) ---- */

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

/* The fingerprint both ends compare: pfs_fingerprint_mem over the base's
 * content (0 for no base). */
uint64_t pfs_delta_base_fp(const uint8_t *base, uint64_t size);

#endif /* PFS_DELTA_H */
