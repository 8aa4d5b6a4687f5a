/* SPDX-License-Identifier: Apache-2.0 */
/* Chunk digests of a blob (docs/design/fanout.md, "Chunk digests"): the
 * blob cut into PFS_CHUNK_SIZE pieces (the last one shorter), one BLAKE3
 * digest each (the BLAKE3 team's C library, hack/blake3.sh: its dispatch
 * picks AVX-512, AVX2, SSE4.1 or portable code at run time).
 *
 * Two tables per blob:
 *   hashes  what this node computed over its own bytes: workers take the
 *           next chunk (any core, any order) once a watermark (pfs_progress)
 *           has passed its end, so a blob of one big file verifies on
 *           several cores while it arrives;
 *   list    what the origin computed: on the origin its own hashes
 *           (pfs_chunks__list_from_hashes), on a relay received from its
 *           upstream (DIGESTS frames, pfs_chunks__list_put) and sent on
 *           downstream as it was received.
 * A relay's copy is verified when every hash equals the list's entry, and
 * the list is the origin's when its root (pfs_chunks__root: BLAKE3 of the
 * blob size and every digest) equals the origin's: the operator compares
 * the roots the nodes report, as it compares their sha256.
 *
 * Waiters (a server connection waiting for the list) sleep on a condition;
 * the hash workers follow the watermark. */
#ifndef PFS_BLOB_CHUNKS_H
#define PFS_BLOB_CHUNKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pfs/repl_wire.h"

/* PFS_CHUNK_SIZE and PFS_CHUNK_DIGEST: pfs/repl_wire.h (the codec's too). */
/* Chunks of a blob at most: a blob of the data plane's 2^46-byte bound. */
#define PFS_CHUNK_MAX (1u << 24)

struct pfs_progress;
struct pfs_chunks;

struct pfs_chunks_stats {
	uint32_t count; /* chunks of the blob */
	uint32_t hashed; /* digests computed so far */
	uint32_t verified; /* chunks before the first that failed its digest: all once verified */
	uint32_t failed; /* comparisons that differed (a chunk fetched again counts again) */
	double busy_s; /* CPU seconds spent hashing, every worker */
	unsigned threads; /* hash workers started */
	const char *impl; /* the BLAKE3 code path the library chose ("avx512", ...) */
};

/* pfs_chunks__new - the tables of a blob of @size bytes (> 0). NULL with
 * errno: EINVAL (0 or more than PFS_CHUNK_MAX chunks), ENOMEM. */
struct pfs_chunks *pfs_chunks__new(uint64_t size);
/* pfs_chunks__free - stops and joins the workers first. NULL: no-op. */
void pfs_chunks__free(struct pfs_chunks *c);
uint32_t pfs_chunks__count(const struct pfs_chunks *c);
uint64_t pfs_chunks__size(const struct pfs_chunks *c);
/* The extent of chunk @i. */
uint64_t pfs_chunks__off(uint32_t i);
uint64_t pfs_chunks__len(const struct pfs_chunks *c, uint32_t i);

/* ---- hashes ---- */

/* pfs_chunks__hash_start - @threads workers (at least 1) hash every chunk
 * of @blob as @p's watermark passes its end (@p NULL: the blob is
 * complete). Once. 0 or -errno (ENOMEM, EALREADY). @blob and @p must
 * outlive the workers (pfs_chunks__hash_wait or __free). */
int pfs_chunks__hash_start(struct pfs_chunks *c, const uint8_t *blob, struct pfs_progress *p,
			   unsigned threads);
/* pfs_chunks__hash_wait - wait until every chunk is hashed: 0, or
 * -ECANCELED when the fill failed (its message in @why). Joins the
 * workers. */
int pfs_chunks__hash_wait(struct pfs_chunks *c, char *why, size_t n);
/* pfs_chunks__rehash - hash chunks [@from, @to) again now, on the calling
 * thread (their bytes were fetched again). */
void pfs_chunks__rehash(struct pfs_chunks *c, uint32_t from, uint32_t to);
void pfs_chunks__stats(const struct pfs_chunks *c, struct pfs_chunks_stats *st);

/* ---- the list ---- */

/* pfs_chunks__list_put - @n digests from index @first, the next ones of
 * the list (DIGESTS frames come in order). 0; -EPROTO out of order or past
 * the count. The list is complete (waiters wake) with its last digest. */
int pfs_chunks__list_put(struct pfs_chunks *c, uint32_t first, const uint8_t *d, uint32_t n);
/* pfs_chunks__list_reset - forget a partial list (a new upstream sends
 * it whole). No-op on a complete one. */
void pfs_chunks__list_reset(struct pfs_chunks *c);
/* pfs_chunks__list_from_hashes - the origin: its hashes are the list. */
void pfs_chunks__list_from_hashes(struct pfs_chunks *c);
/* pfs_chunks__list_none - there will be no list (the upstream sent none,
 * or the fill failed): waiters get -ENOENT. */
void pfs_chunks__list_none(struct pfs_chunks *c);
bool pfs_chunks__list_done(const struct pfs_chunks *c);
/* pfs_chunks__list_wait - 0 once the list is complete, -ENOENT when there
 * will be none, -ETIMEDOUT after @timeout_ms. */
int pfs_chunks__list_wait(struct pfs_chunks *c, int timeout_ms);
/* The complete list: count * PFS_CHUNK_DIGEST bytes (NULL before). */
const uint8_t *pfs_chunks__list(const struct pfs_chunks *c);

/* pfs_chunks__root - BLAKE3(le64 size || every digest of the list) into
 * @out: what a node reports, and the operator compares. The list must be
 * complete. */
void pfs_chunks__root(const struct pfs_chunks *c, uint8_t out[PFS_CHUNK_DIGEST]);

/* pfs_chunks__compare - hashes [@from, count) against the list (complete,
 * hashes waited for; the chunks before @from verified by an earlier call):
 * the number of chunks that differ, their indices in @bad (at most @max of
 * them). Counts the failed ones, and sets verified. */
uint32_t pfs_chunks__compare(struct pfs_chunks *c, uint32_t from, uint32_t *bad, uint32_t max);

/* ---- kept beside a blob, for the holder that serves it later ---- */

/* pfs_chunks__save - the complete list into the file @name of the
 * directory @dirfd (written whole, then renamed). 0 or -errno; -EEXIST:
 * @name is something else than a list (a blob of that name), left alone. */
int pfs_chunks__save(const struct pfs_chunks *c, int dirfd, const char *name);
/* pfs_chunks__load - a list saved by pfs_chunks__save for a blob of @size
 * bytes: a new pfs_chunks with that list complete, or NULL with errno
 * (ENOENT none, EBADMSG damaged or of another size, ELOOP a symlink, EPERM
 * not a regular file of this user's). */
struct pfs_chunks *pfs_chunks__load(int dirfd, const char *name, uint64_t size);
/* pfs_chunks__unlink - remove the list @name of @dirfd: only a list (a
 * regular file of this user's with the list's magic, or empty). 0,
 * -ENOENT none, -EEXIST something else (left alone), or -errno. */
int pfs_chunks__unlink(int dirfd, const char *name);

/* pfs_blake3_impl - which code path the BLAKE3 library dispatches to on
 * this CPU: "avx512", "avx2", "sse41", "sse2" or "portable". */
const char *pfs_blake3_impl(void);

#endif /* PFS_BLOB_CHUNKS_H */
