/* SPDX-License-Identifier: Apache-2.0 */
/* Acquiring a blob (acquire.c): the blob options every command that takes
 * a blob accepts, a blob of its own (--size, --page, ...) or a named one
 * (--blob-name), and the consumer options that take it from a holder
 * instead (--blob-socket); the function that turns them into a blob; the
 * "blob" member of a result. */
#ifndef PFS_TOOL_ACQUIRE_H
#define PFS_TOOL_ACQUIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opt.h"
#include "pfs/blob.h"
#include "pfs/blob_files.h"
#include "pfs/blob_share.h"
#include "pfs/result.h"

/* How `pfs blob create --layout` holds a blob (pfs/blob_files.h). */
enum pfs_cli_layout {
	PFS_CLI_LAYOUT_FLAT = 0, /* one file or memfd: pfs_blob__create */
	PFS_CLI_LAYOUT_FILES = 1, /* DIR/NAME.d: one file per manifest entry */
};

/* Blob options shared by blob, send, recv, bench and pcore. */
struct pfs_cli_blob {
	struct pfs_blob_opts opts; /* anonymous or named create */
	const char *open_name; /* --blob-name: open an existing blob */
	const char *open_dir;
	int layout; /* enum pfs_cli_layout; only blob create sets it */
};

/* The table over struct pfs_cli_blob: --size (alias --blob-size), --seed,
 * --page, --no-fallback, --fill, --numa, --mlock, --setup-threads,
 * --blob-name, --blob-dir. */
extern const struct pfs_opt pfs_cli_blob_opts[];

/* The defaults: 1 GiB on 2 MiB pages, seed fill with seed 1, no NUMA. */
void pfs_cli_blob_init(struct pfs_cli_blob *b);
/* Create or open; NULL with the reason logged and copied into @why. */
struct pfs_blob *pfs_cli_blob_get(const struct pfs_cli_blob *b, char *why, size_t n);
/* The directory of a files-layout blob: --dir, default /dev/shm. */
const char *pfs_cli_files_dir(const struct pfs_cli_blob *b);

/* Create the files-layout blob opts.name in pfs_cli_files_dir with the
 * layout @l (origin: from its source listing; relay: from its upstream's
 * LAYOUT frames), before any byte arrives. A hugetlbfs --dir is refused
 * (it rounds every file's size up to its page size). NULL with the reason
 * logged and in @why, errno set. */
struct pfs_blob *pfs_cli_blob_create_files(const struct pfs_cli_blob *b,
					   const struct pfs_blob_layout *l, char *why, size_t n);

/* Open the named blob @name in @dir (NULL: the default dirs): its files
 * layout when @dir/@name.d exists (@dir NULL: /dev/shm), read-only, else
 * the flat file read-write (pfs_blob__open). NULL with the reason in @why
 * (not logged), errno set. */
struct pfs_blob *pfs_cli_blob_open_named(const char *dir, const char *name, char *why, size_t n);

/* Measure the page kind of a files-layout blob's files (the blob's
 * pfs_blob__page_kind and huge bytes are set from it) into @pg. */
void pfs_cli_files_measure(struct pfs_blob *blob, struct pfs_blob_files_pages *pg);

/* The "blob" member of a result. */
void pfs_cli_blob_json(struct pfs_json *j, const struct pfs_blob *blob, uint64_t fp);

/* The blob from a holder (`pfs blob serve`) instead of one's own;
 * zero-initialise. */
struct pfs_cli_share {
	const char *socket; /* --blob-socket: take the blob from this holder */
	const char *token_file; /* --blob-token-file */
};

/* The table over struct pfs_cli_share: --blob-socket, --blob-token-file. */
extern const struct pfs_opt pfs_cli_share_opts[];

/* Either share option given: the blob must come from a holder. */
static inline bool pfs_cli_share_set(const struct pfs_cli_share *s)
{
	return s->socket || s->token_file;
}

/* The blob from the holder (fetched, mapped, size and fingerprint checked);
 * NULL with errno, the reason logged and copied into @why (may be NULL).
 * EINVAL: one of the two options missing. */
struct pfs_blob *pfs_cli_share_get(const struct pfs_cli_share *s, char *why, size_t n);

/* One line for a result into @buf: why pfs_blob__from_socket(@path)
 * failed with errno @e, the holder's own message in @m first. */
void pfs_cli_share_reason(const char *path, const struct pfs_share_meta *m, int e, char *buf,
			  size_t n);

/* The blob of a command that takes both option tables: from the holder
 * when a share option is given, else its own (pfs_cli_blob_get). NULL with
 * the reason in @why. */
struct pfs_blob *pfs_cli_blob_acquire(const struct pfs_cli_blob *b, const struct pfs_cli_share *s,
				      char *why, size_t n);

#endif /* PFS_TOOL_ACQUIRE_H */
