/* SPDX-License-Identifier: Apache-2.0 */
/* Chunk digests in the CLI (repl_chunks.c over pfs/blob_chunks.h): the
 * origin hashes its blob's chunks while it loads and serves the list; a
 * relay (delta grams too) asks its upstreams for the list, hashes its
 * chunks on several threads while they arrive and verifies them against
 * it, fetching a failed chunk again from another upstream; the holder that
 * serves the blob later (`pfs blob serve`) loads the list kept for it. The
 * "chunks" member of a result. */
#ifndef PFS_TOOL_REPL_CHUNKS_H
#define PFS_TOOL_REPL_CHUNKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pfs/blob.h"
#include "pfs/blob_chunks.h"
#include "pfs/result.h"

struct pfs_cli_repl;

/* Fetch rounds at most for a chunk that keeps failing its digest. */
#define PFS_CLI_CHUNK_ROUNDS 3

struct pfs_cli_chunks {
	bool want; /* set by the caller before pfs_cli_repl_start: origin or relay */
	struct pfs_chunks *c; /* NULL: no chunk digests for this blob */
	bool hashing; /* the hash workers run over this node's bytes */
	bool origin; /* the list is ours (computed), not received */
	bool loaded; /* the list was kept beside the blob (blob serve) */
	bool by_chunks; /* the relay verified its copy by the list */
	bool saved; /* the list is kept beside the blob */
	uint32_t rounds; /* fetches again for failed chunks */
	uint64_t refetched; /* bytes received again in those */
	uint32_t first_bad; /* the first chunk that failed, when one did */
	double wait_s; /* from the last byte to every chunk hashed */
	uint8_t root[PFS_CHUNK_DIGEST];
	bool have_root;
};

/* pfs_cli_chunks_start - the tables of a blob of @size bytes and, once
 * @blob is there (not NULL), the hash workers over the repl's watermark,
 * when ch->want: an origin, or a relay (delta grams too). Called again
 * with the bytes when the tables had to exist first (a files relay asks
 * for the list before its blob is created from the layout). No-op without
 * ch->want; a failure is logged and the blob goes without. */
void pfs_cli_chunks_start(struct pfs_cli_repl *r, const uint8_t *blob, uint64_t size);
/* pfs_cli_chunks_origin_done - the origin's fill is complete: wait for the
 * last hashes, make them the list servers send, keep it beside @blob.
 * 0 or -errno with @why. */
int pfs_cli_chunks_origin_done(struct pfs_cli_repl *r, struct pfs_blob *blob, char *why, size_t n);
/* pfs_cli_chunks_verify - a relay's every byte arrived: verify every chunk
 * against the list received, fetching failed ones again (at most
 * PFS_CLI_CHUNK_ROUNDS rounds) with @base's upstreams, token and timeouts,
 * then keep the list beside @blob. 0 verified; -ENOENT no list came
 * (verify another way); -EBADMSG a chunk still failed, or another error,
 * with @why. */
struct pfs_repl_fetch_opts;
int pfs_cli_chunks_verify(struct pfs_cli_repl *r, struct pfs_blob *blob,
			  const struct pfs_repl_fetch_opts *base, char *why, size_t n);
/* pfs_cli_chunks_forget - a fill starts: remove the list an earlier blob
 * of this name kept (a flat blob's DIR/NAME.chunks outlives --replace), so
 * a holder never serves a list of other bytes. */
void pfs_cli_chunks_forget(const struct pfs_cli_repl *r, const struct pfs_blob *blob);
/* pfs_cli_chunks_remove - `blob rm`: the list kept for the flat blob whose
 * file is (or was) @path: BASE.chunks beside it, or in @chunks_dir. */
void pfs_cli_chunks_remove(const char *chunks_dir, const char *path);
/* pfs_cli_chunks_load - `blob serve`: the list kept beside @blob, if any. */
void pfs_cli_chunks_load(struct pfs_cli_repl *r, const struct pfs_blob *blob);
/* "chunks": {...} when there are chunk digests. */
void pfs_cli_chunks_json(struct pfs_json *j, const struct pfs_cli_chunks *ch);
void pfs_cli_chunks_free(struct pfs_cli_chunks *ch);

#endif /* PFS_TOOL_REPL_CHUNKS_H */
