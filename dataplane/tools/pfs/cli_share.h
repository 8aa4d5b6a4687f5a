/* SPDX-License-Identifier: Apache-2.0 */
/* CLI side of blob sharing: `pfs blob serve|ping` and the consumer options
 * `--blob-socket PATH --blob-token-file PATH` that any subcommand taking a
 * blob (send, recv, pcore run) accepts instead of making its own blob. */
#ifndef PFS_CLI_SHARE_H
#define PFS_CLI_SHARE_H

#include <stdbool.h>

#include "pfs/blob.h"

/* `pfs blob serve|ping|attach ...`; argv[0] is the verb. Exit
 * codes as enum pfs_exit (pfs/cli.h). */
int pfs_cmd_blob_serve(int argc, char **argv);
int pfs_cmd_blob_ping(int argc, char **argv);
int pfs_cmd_blob_attach(int argc, char **argv);

/* Consumer options; zero-initialise. */
struct pfs_cli_share {
	const char *socket; /* --blob-socket: take the blob from this holder */
	const char *token_file; /* --blob-token-file */
};

/* Handle one option by its long name (without dashes): 1 handled, 0 not a
 * share option, -1 bad value (message printed). Fits the getopt loops of
 * pfs/cli.h (PFS_OPT_LONG) and any loop that knows the option's name. */
int pfs_cli_share_opt(struct pfs_cli_share *s, const char *name, const char *val);

/* Either share option given: the blob must come from a holder. */
static inline bool pfs_cli_share_set(const struct pfs_cli_share *s)
{
	return s->socket || s->token_file;
}

/* The blob from the holder (fetched, mapped, size and fingerprint checked);
 * NULL with errno, the reason logged and copied into @why (may be NULL).
 * EINVAL: one of the two options missing. */
struct pfs_blob *pfs_cli_share_get(const struct pfs_cli_share *s, char *why, size_t n);

#define PFS_CLI_SHARE_HELP                                                        \
	"Blob from a holder (`pfs blob serve`) instead of a blob of one's own:\n" \
	"  --blob-socket PATH      the holder's Unix socket\n"                    \
	"  --blob-token-file PATH  file holding the token (the blob's Secret)\n"

/* Two getopt table entries; not a braced initialiser to reflow. */
/* clang-format off */
#define PFS_CLI_SHARE_LONGOPTS(code) \
	{ "blob-socket", 1, 0, (code) }, { "blob-token-file", 1, 0, (code) }
/* clang-format on */

#endif /* PFS_CLI_SHARE_H */
