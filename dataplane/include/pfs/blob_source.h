/* SPDX-License-Identifier: Apache-2.0 */
/* A blob loaded from real files: `pfs blob create --source PATH`.
 *
 * Two steps, so the caller can size the blob before it maps it:
 *   pfs_source__scan   resolves PATH (beneath a root, openat2), lists it,
 *                      refuses what it must not read, and computes the
 *                      layout (blob_manifest.h) and the bytes it needs;
 *   pfs_source__load   reads every file into the blob once with parallel
 *                      large preads (O_DIRECT when the file system takes
 *                      it) while one thread computes sha256 (OpenSSL
 *                      libcrypto) and CRC32C in order over what was read,
 *                      checks that nothing changed, and writes the
 *                      manifest and footer.
 *
 * Resolution: with a root (opts.root), PATH is relative to it and is
 * resolved, as is every file and directory of a walk, with openat2
 * RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS: a ".." or a symlink that leads
 * out of the root is refused, naming it. Without a root, PATH is opened as
 * given; a directory is then its own root for its walk. Inside a walk,
 * symlinks to regular files inside the root are followed (the entry is
 * named by the link, its bytes are the target's); symlinks to directories
 * are refused (no loops, no file listed twice by accident). Devices, FIFOs
 * and sockets are refused. Names must be valid UTF-8 (JSON carries them
 * as they are). An empty file gives one entry of length 0; an empty
 * directory a manifest with no files; both make the smallest blob.
 *
 * Changes: each file's size, mtime, ctime, inode and device are compared
 * between the listing, the open and the end of its reads; the listing is
 * walked again after the last read and compared. Any difference fails the
 * load with "source changed while it was read: ...". A change that keeps
 * size, inode and both timestamps (a rewrite within one timestamp tick) is
 * not seen: the sha256 is of the bytes that were read. */
#ifndef PFS_BLOB_SOURCE_H
#define PFS_BLOB_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pfs/blob_manifest.h"

#define PFS_SOURCE_THREADS 4 /* default readers */
#define PFS_SOURCE_THREADS_MAX 16
#define PFS_SOURCE_CHUNK (8ULL << 20) /* default bytes per pread */
#define PFS_SOURCE_CHUNK_MIN (64ULL << 10)
#define PFS_SOURCE_CHUNK_MAX (256ULL << 20)

/* Options; zero-initialise, set sz = sizeof(opts). */
struct pfs_source_opts {
	size_t sz; /* sizeof(struct pfs_source_opts), for growth */
	const char *root; /* resolve PATH and the walk beneath it, or NULL */
	int threads; /* reader threads, 1..16; 0: PFS_SOURCE_THREADS */
	uint64_t chunk; /* bytes per pread, a multiple of 4096 in
				 * [64 KiB, 256 MiB]; 0: PFS_SOURCE_CHUNK */
	bool no_direct; /* never try O_DIRECT */
	/* Called with the watermark of the load: bytes [0, mark) of the blob
	 * are final (a file's zero padding counts as done once the file is;
	 * the manifest and footer region, up to the blob size, only after the
	 * load succeeded). From the loader's hashing thread, in increasing
	 * order, right after the bytes were written (and ordered by its lock;
	 * a remote source's lowest unit in flight also every few ms as its
	 * bytes land, ordered by release and acquire on its count); it must
	 * not block. Why: a replication server serves the blob while
	 * it loads (blob_repl.h, pfs_progress_hook). NULL: none. */
	void (*progress)(void *ctx, uint64_t mark);
	void *progress_ctx;
};

/* A source in an object store or on a web server, read with ranged GETs
 * (src/remote/). pfs_source__scan_remote lists it (S3 ListObjectsV2 and
 * HEAD, or HEAD of each URL): names, sizes, ETags and the checksums the
 * store publishes; pfs_source__load then reads it like files: units of
 * opts.chunk bytes, one HTTP connection per reader thread, each unit one
 * ranged GET pinned to the listed ETag (If-Match), straight into the
 * blob. A transient failure (a reset, a timeout, a 5xx or 429, a body cut
 * short) is retried with backoff from the first byte the unit still
 * misses, never from the start of the object; what is not transient (401,
 * 403, 404, a 412 or an ETag that moved: the object changed, a server
 * that ignores Range where it promised it) fails the load naming it.
 * After the read, each file's sha256 is compared with the store's
 * x-amz-checksum-sha256 where it published one.
 *
 * OCI: a manifest (or an index, then its linux/amd64 manifest) from a
 * registry (distribution spec v1.1), its sha256 checked against the
 * reference's digest (or the index entry's), with token or Basic
 * authentication as the registry asks; every layer with an
 * org.opencontainers.image.title annotation is a file of that name, its
 * bytes read from /v2/REPO/blobs/DIGEST (or where the registry redirects
 * that: storage, which gets no credentials) and its sha256 compared with
 * the layer's digest after the read. Layers without a title (an image's
 * tar layers) are refused, naming their media type. */
enum pfs_remote_kind {
	PFS_REMOTE_S3 = 1,
	PFS_REMOTE_HTTP,
	PFS_REMOTE_OCI,
};

struct pfs_remote {
	enum pfs_remote_kind kind;
	/* S3 (path-style requests: ENDPOINT/BUCKET/KEY): */
	const char *endpoint; /* "https://host[:port]" */
	const char *bucket;
	const char *key; /* one object, or, ending in '/', a prefix: every
			  * object beneath it, named relative to it (a dir) */
	const char *region; /* NULL: us-east-1 */
	const char *access_key, *secret_key, *session_token; /* NULL: anonymous */
	/* HTTP: one URL (a file named after its last path segment), or a base
	 * URL and file names relative to it (a directory). */
	const char *url;
	const char *const *files;
	size_t nfiles;
	const char *const *headers; /* "Name: value" sent with every request */
	size_t nheaders;
	/* OCI: REGISTRY/REPO[:TAG|@sha256:DIGEST]; the content of a pull
	 * secret's .dockerconfigjson (NULL: anonymous); plain http to the
	 * registry (a test registry) instead of https. */
	const char *oci_ref;
	const char *oci_auth;
	bool oci_plain_http;
	/* OCI image layers (tar, tar+gzip): only the members beneath this
	 * directory ("models/"), named relative to it; NULL: every member. */
	const char *oci_path;
	const char *ca_file; /* PEM bundle for https; NULL: the system's */
	int timeout_ms; /* per request; 0: PFS_REMOTE_TIMEOUT_MS */
	int retries; /* transient failures per unit; 0: PFS_REMOTE_RETRIES */
};

#define PFS_REMOTE_TIMEOUT_MS 30000
#define PFS_REMOTE_RETRIES 10

/* pfs_source__scan_remote - list @r and lay it out (as pfs_source__scan
 * does for files). NULL and errno with why: EACCES (401/403, a TLS
 * certificate not trusted), ENOENT (404, an empty prefix), EILSEQ (a key
 * that cannot be a file name), EPROTO (not a store's answer), EHOSTUNREACH,
 * ECONNREFUSED, ETIMEDOUT, EINVAL (options). */
struct pfs_source *pfs_source__scan_remote(const struct pfs_remote *r,
					   const struct pfs_source_opts *opts, char *why, size_t n);

/* What a load did, for the result. */
struct pfs_source_stats {
	enum pfs_manifest_kind kind;
	uint64_t files, bytes;
	char sha256[65]; /* hex: the manifest's top-level sha256 */
	uint32_t crc32c; /* of the files' bytes, concatenated in manifest order */
	uint64_t manifest_offset, manifest_length;
	double scan_s; /* listing and layout (pfs_source__scan) */
	double read_s; /* first open to last byte read (wall) */
	double sha256_s; /* time the hashing thread spent in sha256 */
	double load_s; /* the whole pfs_source__load, checks included */
	int threads;
	uint64_t chunk;
	bool o_direct; /* every byte was read with O_DIRECT */
	/* Remote sources: GETs sent, transient failures retried, bytes a retry
	 * did not fetch again (its range started past the unit's start), and
	 * files whose sha256 was compared with the store's checksum. */
	uint64_t requests, retries, resumed_bytes, checksums;
	/* OCI: the digest of the manifest read (after an index, the chosen
	 * manifest's), "" for other sources. */
	char oci_manifest_digest[72];
	char o_direct_why[160]; /* why not, when o_direct is false */
};

struct pfs_source;

/* pfs_source__scan - resolve and list @path (see above) and lay it out.
 * NULL and errno, the reason in @why (size @n): ENOENT (missing), EXDEV (a
 * ".." or symlink leaves the root), ELOOP (a magic link or a symlink
 * loop), EPERM (a device, FIFO, socket or directory symlink), EILSEQ (a
 * name that is not UTF-8), ENAMETOOLONG, EINVAL (bad options), ENOMEM,
 * and what opening or listing returned (EACCES, ...). */
struct pfs_source *pfs_source__scan(const char *path, const struct pfs_source_opts *opts, char *why,
				    size_t n);

/* pfs_source__needed - the bytes the layout, manifest and footer take:
 * the smallest blob that holds the source. */
uint64_t pfs_source__needed(const struct pfs_source *src);
enum pfs_manifest_kind pfs_source__kind(const struct pfs_source *src);
uint64_t pfs_source__files(const struct pfs_source *src);
uint64_t pfs_source__bytes(const struct pfs_source *src);

/* pfs_source__layout - the files layout (pfs/blob_files.h) of the scanned
 * source for a blob of @size bytes (at least pfs_source__needed): what
 * `--layout files` creates before it reads. Names point into @src, which
 * must outlive the result; *@out is freed with free(). 0, -ENOSPC (@size
 * too small) or -ENOMEM. */
int pfs_source__layout(const struct pfs_source *src, uint64_t size, struct pfs_blob_layout **out);

/* pfs_source__load - read the source into @blob (@size bytes, fresh: zero;
 * every byte not written stays as it is) and write its manifest and
 * footer; @st receives what happened (also on failure, as far as it got).
 * Once per source. 0 or -errno, the reason in @why: ENOSPC (@size below
 * pfs_source__needed, both numbers in the message), ESTALE (the source
 * changed while it was read), EIO and what open/pread returned, ENOMEM,
 * EALREADY (loaded before). On failure the blob holds no valid footer. */
int pfs_source__load(struct pfs_source *src, void *blob, uint64_t size, struct pfs_source_stats *st,
		     char *why, size_t n);

void pfs_source__free(struct pfs_source *src);

/* pfs_manifest_verify - re-hash every file of @m in the blob bytes
 * [@blob, @blob + @size) and the "files" text of a "dir" manifest; 0, or
 * -EBADMSG naming the first file whose sha256 differs (in @why), -ENOMEM. */
int pfs_manifest_verify(const struct pfs_manifest *m, const void *blob, uint64_t size, char *why,
			size_t n);

/* pfs_manifest_check_digests - the same checks with the files' sha256
 * already computed (@sha[i] for file i of @m, e.g. by pfs_verify_stream
 * while the bytes arrived): bounds, each digest, a "dir" manifest's own.
 * @sha NULL: the files' bytes were verified otherwise (chunk digests
 * covering the whole blob, the manifest too): bounds and the manifest's
 * own digest only. */
int pfs_manifest_check_digests(const struct pfs_manifest *m, uint64_t size,
			       const uint8_t (*sha)[32], char *why, size_t n);

/* pfs_size_str - "1 GiB", "1.2 GiB", "512 MiB", "4 KiB", "17 bytes" into
 * @buf (at least 24 bytes); returns @buf. */
const char *pfs_size_str(uint64_t bytes, char *buf, size_t n);

#endif /* PFS_BLOB_SOURCE_H */
