/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: what the source scanner (blob_source.c: resolve, list, lay out,
 * re-check) and the reader (blob_source_read.c: parallel preads, sha256,
 * CRC32C, manifest) share. */
#ifndef PFS_BLOB_SOURCE_INT_H
#define PFS_BLOB_SOURCE_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "pfs/blob_source.h"

/* One file of the source. */
struct src_file {
	char *name; /* the manifest's name */
	char *rel; /* its path beneath the source's root_fd */
	struct stat st; /* at listing time (a symlink's: its target's) */
	uint64_t offset; /* in the blob */
	uint8_t sha256[32];
	/* While it is read: the fd (opened under the pipeline lock by the
	 * reader that takes its first unit, closed by the one that finishes
	 * its last), O_DIRECT or not, and the units still being read. */
	int fd;
	bool direct;
	atomic_uint pending;
};

struct src_list {
	struct src_file *f;
	size_t n, cap;
};

struct pfs_source {
	struct pfs_source_opts o;
	char *path; /* as given, for messages */
	char *prefix; /* the source beneath root_fd ("" = root_fd itself) */
	int root_fd; /* O_PATH directory every open is relative to */
	uint64_t resolve; /* openat2 RESOLVE_* flags of every open */
	enum pfs_manifest_kind kind;
	struct src_list l; /* sorted by name */
	uint64_t bytes, mani_off, mani_len, needed;
	double scan_s;
	bool loaded;
};

/* src_open - openat2(root_fd, @rel, @flags, s->resolve); the fd, or
 * -errno with the reason in @why, naming @rel (and a symlink's target). */
int src_open(const struct pfs_source *s, const char *rel, int flags, char *why, size_t n);

/* src_same - @now is @f as listed: 0, or -ESTALE with what differs in
 * @why ("source changed while it was read: 'NAME' ... (@when)"). */
int src_same(const struct src_file *f, const struct stat *now, const char *when, char *why,
	     size_t n);

/* src_recheck - list the source again and compare: 0 or -ESTALE/-errno. */
int src_recheck(const struct pfs_source *s, char *why, size_t n);

/* src_read - the reading pipeline: every file into @blob at its offset,
 * sha256 per file into f->sha256, the CRC32C of all bytes into st. */
int src_read(struct pfs_source *s, uint8_t *blob, struct pfs_source_stats *st, char *why, size_t n);

double src_now(void);

#endif /* PFS_BLOB_SOURCE_INT_H */
