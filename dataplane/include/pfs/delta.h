/* SPDX-License-Identifier: Apache-2.0 */
/* Delta mode: send a new version of some data (the *target*) to a receiver
 * that already holds an older one (the *base*), as operations that rebuild
 * the target from the base (docs/delta.md, docs/wire-format.md "Delta grams").
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
#include "pfs/xfer.h"

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
