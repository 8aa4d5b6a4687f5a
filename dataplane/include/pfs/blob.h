/* SPDX-License-Identifier: Apache-2.0 */
/* The blob: one large, prefaulted, deterministically filled memory region that
 * grams point into. Both ends of an offset-only transfer hold byte-identical
 * blobs and prove it with a fingerprint.
 *
 * Size: every blob size is rounded up to PFS_BLOB_ALIGN (2 MiB) whatever page
 * kind is obtained, so a host that fell back to 4 KiB pages still holds a blob
 * of the same size (and fingerprint) as one on hugepages. 1 GiB pages are used
 * only when the rounded size is a multiple of 1 GiB.
 *
 * Seed fill (PFS_FILL_SEED), a pure function of (seed, byte index), identical
 * on every host and independent of how the work is split: the blob is the
 * sequence of little-endian 32-bit words w[i], i = 0, 1, ...
 *     k    = hi32(seed) ^ (hi32(i) * 0x27d4eb2f)
 *     x    = lo32(seed) + lo32(i) * 0x9e3779b9        (mod 2^32)
 *     w[i] = fmix32(x ^ k)   (murmur3 finaliser: h ^= h >> 16;
 *            h *= 0x85ebca6b; h ^= h >> 13; h *= 0xc2b2ae35; h ^= h >> 16)
 *
 * Fingerprint (64 bits): the blob is cut into 1 MiB chunks (the last one may
 * be shorter); c[j] = CRC32C(chunk j). The low 32 bits are the CRC32C of the
 * whole blob (c[] merged with crc32c_combine, so any CRC32C tool can check
 * it); the high 32 bits are CRC32C(le64(size) || le32(c[0]) || le32(c[1]) ||
 * ...). Chunks are hashed in parallel. */
#ifndef PFS_BLOB_H
#define PFS_BLOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PFS_BLOB_ALIGN (2ULL << 20)
#define PFS_BLOB_FP_CHUNK (1ULL << 20)

enum pfs_page_kind {
	PFS_PAGE_4K = 0, /* plain anonymous/tmpfs pages */
	PFS_PAGE_THP, /* anonymous memory with MADV_HUGEPAGE */
	PFS_PAGE_2M, /* hugetlb 2 MiB pages */
	PFS_PAGE_1G, /* hugetlb 1 GiB pages */
};

enum pfs_blob_fill {
	PFS_FILL_NONE = 0, /* leave as mapped (zero for fresh memory) */
	PFS_FILL_ZERO,
	PFS_FILL_SEED, /* deterministic pseudo-random bytes from seed */
};

/* Options for pfs_blob__create(); zero-initialise, set sz = sizeof(opts). */
struct pfs_blob_opts {
	size_t sz; /* sizeof(struct pfs_blob_opts), for growth */
	uint64_t size; /* bytes; rounded up to PFS_BLOB_ALIGN */
	enum pfs_page_kind page; /* wanted; may fall back (see page_kind) */
	bool no_fallback; /* fail instead of falling back */
	enum pfs_blob_fill fill;
	uint64_t seed;
	const char *name; /* persistent named blob, or NULL */
	const char *dir; /* hugetlbfs/tmpfs dir for named blobs */
	int numa_node; /* -1: no binding (0 binds to node 0) */
	bool mlock; /* lock in RAM (CAP_IPC_LOCK or memlock limit) */
	bool no_prefault; /* skip the prefault pass (fill still faults) */
	int setup_threads; /* prefault+fill threads (max 4); 0: one. More
					 * helps only on idle cores: a preempted thread
					 * delays the whole setup (measured here). */
};

/* Setup timings in seconds, reported but excluded from transfer metrics.
 * Prefault and fill run fused, 2 MiB at a time, on setup_threads threads
 * (blobs >= 128 MiB); their wall time is split between prefault_s and
 * fill_s in proportion to the time the threads spent in each. */
struct pfs_blob_timings {
	double map_s;
	double prefault_s;
	double fill_s;
	int setup_threads; /* threads that prefaulted and filled */
};

struct pfs_blob;

/* pfs_blob__create - map, prefault and fill a blob. Returns NULL and sets
 * errno: EINVAL bad options, ENOMEM no memory (hugepages exhausted and
 * no_fallback set), EEXIST name exists, EACCES/EPERM permission (also mlock
 * without CAP_IPC_LOCK over RLIMIT_MEMLOCK). Every fallback and every error
 * is logged with its reason.
 *
 * Defaults for named blobs: dir = /dev/hugepages for 2M, /dev/hugepages1G
 * for 1G, /dev/shm for THP/4K. A hugetlb request whose dir is not a
 * hugetlbfs mount of that page size falls back to a file of the same name
 * in /dev/shm (or in dir, when dir was given and is not hugetlbfs). */
struct pfs_blob *pfs_blob__create(const struct pfs_blob_opts *opts);

/* pfs_blob__open - map an existing named blob read-write (or an fd received
 * from a blob holder with pfs_blob__from_fd, which dups it). With dir NULL
 * the default dirs are searched in the order /dev/hugepages,
 * /dev/hugepages1G, /dev/shm. NULL + errno (ENOENT, EINVAL, EACCES, ENOMEM).*/
struct pfs_blob *pfs_blob__open(const char *dir, const char *name);
struct pfs_blob *pfs_blob__from_fd(int fd);
/* pfs_blob__view - a blob object over @size bytes at @data that the caller
 * mapped and keeps (pfs_blob__close frees the object only): how a mapping
 * another layer owns is handed to a transport. No fd, no path, page kind
 * 4K. NULL and errno ENOMEM. */
struct pfs_blob *pfs_blob__view(uint8_t *data, uint64_t size);

/* pfs_blob_remove - unlink a named blob (dir NULL: search as _open). 0 or
 * -errno. Mappings that exist stay valid until closed. */
int pfs_blob_remove(const char *dir, const char *name);
/* pfs_blob_find - the path of a named blob's file into @path (@n bytes):
 * DIR/NAME, or with @dir NULL the first default directory that has it.
 * 0, -ENOENT (none found), -EINVAL (a bad name). */
int pfs_blob_find(const char *dir, const char *name, char *path, size_t n);

void pfs_blob__close(struct pfs_blob *blob);

uint8_t *pfs_blob__data(const struct pfs_blob *blob);
uint64_t pfs_blob__size(const struct pfs_blob *blob);
enum pfs_page_kind pfs_blob__page_kind(const struct pfs_blob *blob);
/* Why the blob is not on the page kind asked for; NULL when it is. */
const char *pfs_blob__fallback_reason(const struct pfs_blob *blob);
const struct pfs_blob_timings *pfs_blob__timings(const struct pfs_blob *blob);
/* The backing fd (memfd or file), or -1 for an anonymous THP mapping and
 * for a files-layout blob (its directory: pfs_blob__dir_fd, blob_files.h). */
int pfs_blob__fd(const struct pfs_blob *blob);
/* Path of a named blob (DIR/NAME.d for a files-layout blob made by
 * pfs_blob__create_files), NULL for an anonymous one. */
const char *pfs_blob__path(const struct pfs_blob *blob);
/* Bytes the kernel reports as backed by huge pages (smaps), measured after
 * prefault; for hugetlb this is the whole mapping. */
uint64_t pfs_blob__huge_bytes(const struct pfs_blob *blob);

/* pfs_blob__fingerprint - content fingerprint (see top of file); equal blobs
 * give equal fingerprints on any host. Reads the whole blob every call (the
 * content may have changed); uses up to 4 threads. */
uint64_t pfs_blob__fingerprint(const struct pfs_blob *blob);

/* pfs_blob_fill_seed - write the seed pattern for bytes [off, off+len) of a
 * blob into dst (dst holds those bytes). off must be a multiple of 4. */
void pfs_blob_fill_seed(uint8_t *dst, uint64_t off, uint64_t len, uint64_t seed);

/* pfs_fingerprint_mem - the fingerprint of an arbitrary buffer. */
uint64_t pfs_fingerprint_mem(const uint8_t *data, uint64_t size);

/* Why the last failed pfs_blob__create/open on this thread failed (may be
 * empty when the failure was a plain errno from the kernel). */
const char *pfs_blob_last_error(void);

const char *pfs_page_kind_str(enum pfs_page_kind kind);
/* Parse "4k", "thp", "2m", "1g" (case-insensitive). 0 or -EINVAL. */
int pfs_page_kind_parse(const char *s, enum pfs_page_kind *kind);

#endif /* PFS_BLOB_H */
