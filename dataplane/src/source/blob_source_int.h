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
	/* A remote source's file (blob_source_remote.c): where its bytes are
	 * (S3: the request target "/bucket/key", encoded; HTTP: the URL), the
	 * ETag every GET is pinned to, the store's base64 sha256 ("": none),
	 * and whether the server takes no ranges (then one unit, one GET). */
	char *url;
	char etag[136];
	char sum256[64];
	char digest[72]; /* OCI: the layer's "sha256:..." its bytes must have */
	bool whole;
	/* OCI: a member of an image layer, written into the blob by
	 * src_unpack before the readers start: they only hash it. */
	bool unpacked;
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
	struct src_remote *rem; /* a remote source; NULL: files */
};

/* A scanned source with its options checked and defaulted (threads,
 * chunk), nothing listed; NULL and errno with why. */
struct pfs_source *src_new(const struct pfs_source_opts *opts, char *why, size_t n);

/* src_list_add - one file named @name (@rel beneath the root: files
 * only) of @st's size and kind. 0 or -ENOMEM. */
int src_list_add(struct src_list *l, const char *name, const char *rel, const struct stat *st);

/* src_layout - sort the list by name, then offsets, the manifest's place
 * and length, the bytes needed. 0 or -errno with why. */
int src_layout(struct pfs_source *s, char *why, size_t n);

/* src_by_name - qsort/bsearch order of struct src_file: by name. */
int src_by_name(const void *a, const void *b);

/* Remote sources (blob_source_remote.c lists and checks, blob_source_get.c
 * reads). A reader thread's connection: */
struct src_rconn;
struct src_rconn *src_rconn_new(void);
void src_rconn_free(struct src_rconn *c);

/* src_remote_read - [@off, @off + @len) of @f into @dst over @c: ranged
 * GETs pinned to the ETag, transient failures retried with backoff from
 * the first missing byte. *@landed (NULL: none) counts the bytes from @dst
 * in place so far, stored with release as they land: a retry keeps them,
 * so they are final (a file read without ranges, whose retry starts over,
 * does not count). 0 or -errno with why. */
int src_remote_read(struct pfs_source *s, struct src_file *f, uint64_t off, uint64_t len,
		    uint8_t *dst, struct src_rconn *c, _Atomic uint64_t *landed, char *why,
		    size_t n);

/* src_remote_check - after the read: every file's sha256 against the
 * store's checksum, where it published one. 0 or -EBADMSG with why. */
int src_remote_check(struct pfs_source *s, char *why, size_t n);

/* src_unpack - the members of an OCI image's layers into @blob at their
 * files' offsets (blob_source_oci_layer.c); 0 at once for any other
 * source. 0 or -errno with why (ESTALE: a layer changed since the
 * listing; EBADMSG: its bytes are not its digest, or malformed). */
int src_unpack(struct pfs_source *s, uint8_t *blob, char *why, size_t n);

/* The remote counters into @st. */
void src_remote_stats(const struct pfs_source *s, struct pfs_source_stats *st);
void src_remote_free(struct src_remote *r);

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
