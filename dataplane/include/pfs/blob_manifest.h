/* SPDX-License-Identifier: Apache-2.0 */
/* The manifest of a blob loaded from files (`pfs blob create --source`),
 * layout version 1 (docs/design/blob-layout.md is the contract; Python and C
 * clients read it):
 *
 *   [file 0][0-pad to 4096][file 1][0-pad]...[manifest JSON][zeros][footer]
 *
 * - Files in the order of their names sorted bytewise (strcmp), each
 *   starting at a multiple of 4096 (PFS_MANIFEST_ALIGN); gaps are zero.
 * - The manifest at the next multiple of 4096 after the last file (0 when
 *   there are no bytes), UTF-8 JSON, keys in this order, no whitespace:
 *   {"version":1,"kind":"file"|"dir","sha256":"<hex>","bytes":N,
 *    "files":[{"name":"a/b.bin","offset":O,"length":L,"sha256":"<hex>"},...]}
 *   kind "file": one entry, its base name; top-level sha256 = the file's.
 *   kind "dir": names relative to the directory; top-level sha256 = the
 *   sha256 of the "files" array text as written (from '[' to ']').
 *   bytes = the sum of the lengths.
 * - The last 64 bytes of the blob, the footer, little-endian:
 *     0  8  "PFSMANIF"
 *     8  4  version (1)
 *    12  4  flags (0)
 *    16  8  manifest_offset
 *    24  8  manifest_length
 *    32  4  crc32c(manifest bytes)
 *    36 24  zero
 *    60  4  crc32c(footer bytes 0..59)
 *   A blob without a valid footer has no manifest (seeded or zero blobs).
 *
 * The decoder below takes untrusted bytes (a blob any holder or consumer
 * with a writable fd may have changed): it copies the footer and the JSON
 * out of the blob before checking them, so a concurrent writer cannot
 * change what was checked; it is fuzzed (fuzz/fuzz_manifest.c). It does no
 * hashing: pfs_manifest_verify (blob_source.h) re-hashes the files. */
#ifndef PFS_BLOB_MANIFEST_H
#define PFS_BLOB_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pfs/blob.h"
#include "pfs/blob_files.h"

#define PFS_MANIFEST_VERSION 1
#define PFS_MANIFEST_ALIGN 4096ULL
#define PFS_MANIFEST_FOOTER 64
#define PFS_MANIFEST_MAGIC "PFSMANIF"
/* The decoder refuses a manifest larger than this (about 2 million files). */
#define PFS_MANIFEST_MAX (256ULL << 20)
/* A name's limit in bytes, like PATH_MAX. */
#define PFS_MANIFEST_NAME_MAX 4095

enum pfs_manifest_kind {
	PFS_MANIFEST_FILE = 0, /* one file, named by its base name */
	PFS_MANIFEST_DIR = 1, /* a directory tree, names relative to it */
};

struct pfs_manifest_file {
	const char *name; /* UTF-8, relative, no "", "." or ".." component */
	uint64_t offset; /* in the blob, a multiple of PFS_MANIFEST_ALIGN */
	uint64_t length;
	uint8_t sha256[32];
};

/* A decoded manifest; everything it points to is owned by it and freed by
 * pfs_manifest_free. Files are in name order (strictly ascending). */
struct pfs_manifest {
	uint32_t version;
	enum pfs_manifest_kind kind;
	uint8_t sha256[32];
	uint64_t bytes; /* the sum of the files' lengths */
	uint64_t offset, length; /* where the JSON lies in the blob */
	uint32_t crc32c; /* of the JSON, as the footer has it */
	uint64_t files_off, files_len; /* the "files" array text, inside json */
	size_t nfiles;
	struct pfs_manifest_file *files;
	char *json; /* a private copy of the JSON text, NUL-terminated */
	char *names; /* the decoded names the entries point into */
};

/* pfs_manifest_parse - find, check and decode the manifest of the blob
 * bytes [@blob, @blob + @size): footer magic, CRCs, version, bounds, the
 * JSON's shape (whitespace between tokens is accepted, keys must come in
 * the order above), names (valid UTF-8, no NUL, not absolute, no empty,
 * "." or ".." component, strictly ascending), sha256 as 64 lowercase hex
 * digits, offsets aligned, ascending, non-overlapping and before the
 * manifest, bytes = the sum of the lengths, kind "file" = one entry whose
 * sha256 is the top-level one. On success *@out is a new manifest.
 * Returns 0 or -errno, with the reason in @why (size @n, may be NULL):
 *   ENOENT       no footer (too small, or no PFSMANIF magic): no manifest;
 *   EBADMSG      a footer or manifest that fails a check above;
 *   EPROTONOSUPPORT  a footer of another version;
 *   ENOMEM       no memory for the copy or the table. */
int pfs_manifest_parse(const void *blob, size_t size, struct pfs_manifest **out, char *why,
		       size_t n);

/* pfs_manifest_parse_tail - pfs_manifest_parse over the tail of a
 * files-layout blob (pfs/blob_files.h): the @len bytes that start at the
 * manifest (its offset is the footer's manifest_offset) and end with the
 * footer. The same checks, errors and result; the blob's size is
 * m->offset + @len. */
int pfs_manifest_parse_tail(const void *tail, size_t len, struct pfs_manifest **out, char *why,
			    size_t n);

void pfs_manifest_free(struct pfs_manifest *m);

/* pfs_manifest_find - the entry named @name, or NULL (binary search). */
const struct pfs_manifest_file *pfs_manifest_find(const struct pfs_manifest *m, const char *name);

/* pfs_blob__manifest - pfs_manifest_parse over a mapped blob. */
static inline int pfs_blob__manifest(const struct pfs_blob *blob, struct pfs_manifest **out,
				     char *why, size_t n)
{
	return pfs_manifest_parse(pfs_blob__data(blob), pfs_blob__size(blob), out, why, n);
}

const char *pfs_manifest_kind_str(enum pfs_manifest_kind kind);

/* pfs_manifest_json - write the manifest JSON of @m (version, kind,
 * sha256, bytes, files; the other fields are ignored) into @buf, which
 * holds @n bytes (@buf may be NULL to measure). Sets m->files_off and
 * m->files_len. Returns the length of the text (not NUL-terminated), or
 * -EILSEQ when a name is not valid UTF-8 or holds a NUL, or -ENOSPC when
 * @buf is too small. */
ssize_t pfs_manifest_json(struct pfs_manifest *m, char *buf, size_t n);

/* pfs_manifest_footer - the 64-byte footer of a manifest of @len bytes at
 * @off whose CRC32C is @crc. */
void pfs_manifest_footer(uint8_t out[PFS_MANIFEST_FOOTER], uint64_t off, uint64_t len,
			 uint32_t crc);

/* ---- the files layout (pfs/blob_files.h) read back from its tail ---- */

/* pfs_manifest_layout - the files layout of @m for a blob of @size bytes:
 * its entries (names point into @m, which must outlive the result),
 * tail_off = m->offset. On 0, *@out is freed with free() (one block).
 * 0 or -ENOMEM. */
int pfs_manifest_layout(const struct pfs_manifest *m, uint64_t size, struct pfs_blob_layout **out);

/* pfs_blob__open_files_at - open the files-layout blob whose N.d directory
 * is @dirfd (a socket consumer's received fd, or an opened directory):
 * tail opened beneath @dirfd (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS),
 * its footer and manifest decoded (pfs_manifest_parse, over the tail
 * mapped at the manifest offset of a reserved region), the layout taken
 * from the manifest and checked (pfs_blob_layout_check: packed, no gap or
 * overlap), then every files/<name> opened and mapped by
 * pfs_blob__map_files_at, PROT_READ when @read_only. The blob's
 * pfs_blob__layout is the manifest's. 0 or -errno with the reason in @why
 * (size @n): ENOENT (no tail, or a missing file), EBADMSG (a tail that is
 * not a whole number of 4 KiB pages, a bad footer or manifest, a file of
 * the wrong length or type), EINVAL (a layout with a gap or overlap),
 * ELOOP (a symlink on the way), EACCES, ENOMEM. */
int pfs_blob__open_files_at(int dirfd, bool read_only, struct pfs_blob **out, char *why, size_t n);

/* pfs_blob__open_files - pfs_blob__open_files_at on @dir/@name.d. Also
 * ENOTDIR/ENOENT when there is no such directory. */
int pfs_blob__open_files(const char *dir, const char *name, bool read_only, struct pfs_blob **out,
			 char *why, size_t n);

/* pfs_sha256_hex - 64 lowercase hex digits and a NUL into @out. */
void pfs_sha256_hex(const uint8_t sha[32], char out[65]);

#endif /* PFS_BLOB_MANIFEST_H */
