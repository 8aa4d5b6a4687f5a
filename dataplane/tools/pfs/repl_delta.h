/* SPDX-License-Identifier: Apache-2.0 */
/* Delta replication's base (repl_delta.c), between repl.c and repl_delta.c:
 * the state a replication session keeps of it and what repl.c does with it.
 * The leaves reach it through repl.h only (its option table and check). */
#ifndef PFS_TOOL_REPL_DELTA_H
#define PFS_TOOL_REPL_DELTA_H

#include <stdbool.h>
#include <stdint.h>

#include "cli.h"
#include "pfs/blob.h"
#include "pfs/blob_repl.h"
#include "pfs/result.h"

/* Delta replication's base (repl_delta.c): --delta-base FILE or the blob
 * of --delta-base-socket; zero-initialise. */
struct pfs_cli_repl_delta {
	const char *file; /* --delta-base */
	const char *socket; /* --delta-base-socket */
	const char *token_file; /* --delta-base-token-file */
	uint64_t level; /* --delta-zstd-level; 0: 3 */
	/* opened by pfs_cli_repl_delta_open */
	bool tried;
	struct pfs_blob *blob;
	struct pfs_cli_mapped map; /* --delta-base mapped */
	const uint8_t *p;
	uint64_t size, fp;
	double fp_s;
	char error[320]; /* why there is no base after all */
};

/* Any of the four options given. */
bool pfs_cli_repl_delta_set(const struct pfs_cli_repl_delta *d);
/* Map the base once (later calls return at once). A base that cannot be
 * had is not an error: it is logged, kept in d->error, and the blob is
 * served and fetched whole. */
void pfs_cli_repl_delta_open(struct pfs_cli_repl_delta *d);
void pfs_cli_repl_delta_close(struct pfs_cli_repl_delta *d);
/* The "delta" member of "fetch" (@f) or of "repl" (@st), when a base was
 * asked for. */
void pfs_cli_repl_delta_fetch_json(struct pfs_json *j, const struct pfs_cli_repl_delta *d,
				   const struct pfs_repl_fetch_result *f);
void pfs_cli_repl_delta_serve_json(struct pfs_json *j, const struct pfs_cli_repl_delta *d,
				   const struct pfs_repl_server_stats *st);

#endif /* PFS_TOOL_REPL_DELTA_H */
