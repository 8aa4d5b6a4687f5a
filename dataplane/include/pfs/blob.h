/* SPDX-License-Identifier: Apache-2.0 */
/* The blob: one large, prefaulted, deterministically filled memory region that
 * grams point into. Both ends of an offset-only transfer hold byte-identical
 * blobs and prove it with a fingerprint. */
#ifndef PFS_BLOB_H
#define PFS_BLOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum pfs_page_kind {
	PFS_PAGE_4K = 0,	/* plain anonymous/tmpfs pages */
	PFS_PAGE_THP,		/* anonymous memory with MADV_HUGEPAGE */
	PFS_PAGE_2M,		/* hugetlb 2 MiB pages */
	PFS_PAGE_1G,		/* hugetlb 1 GiB pages */
};

enum pfs_blob_fill {
	PFS_FILL_NONE = 0,	/* leave as mapped (zero for fresh memory) */
	PFS_FILL_ZERO,
	PFS_FILL_SEED,		/* deterministic pseudo-random bytes from seed */
};

/* Options for pfs_blob__create(); zero-initialise, set sz = sizeof(opts). */
struct pfs_blob_opts {
	size_t sz;			/* sizeof(struct pfs_blob_opts), for growth */
	uint64_t size;			/* bytes; rounded up to the page size */
	enum pfs_page_kind page;	/* wanted; may fall back (see page_kind) */
	bool no_fallback;		/* fail instead of falling back */
	enum pfs_blob_fill fill;
	uint64_t seed;
	const char *name;		/* persistent named blob, or NULL */
	const char *dir;		/* hugetlbfs/tmpfs dir for named blobs */
	int numa_node;			/* -1: no binding */
};

/* Setup timings in seconds, reported but excluded from transfer metrics. */
struct pfs_blob_timings {
	double map_s;
	double prefault_s;
	double fill_s;
};

struct pfs_blob;

/* pfs_blob__create - map, prefault and fill a blob. Returns NULL and sets
 * errno: EINVAL bad options, ENOMEM no memory (hugepages exhausted and
 * no_fallback set), EEXIST name exists, EACCES/EPERM permission. */
struct pfs_blob *pfs_blob__create(const struct pfs_blob_opts *opts);

/* pfs_blob__open - map an existing named blob read-write (or an fd received
 * from a blob holder with pfs_blob__from_fd). NULL + errno on error. */
struct pfs_blob *pfs_blob__open(const char *dir, const char *name);
struct pfs_blob *pfs_blob__from_fd(int fd);

void pfs_blob__close(struct pfs_blob *blob);

uint8_t *pfs_blob__data(const struct pfs_blob *blob);
uint64_t pfs_blob__size(const struct pfs_blob *blob);
enum pfs_page_kind pfs_blob__page_kind(const struct pfs_blob *blob);
/* Why the blob is not on the page kind asked for; NULL when it is. */
const char *pfs_blob__fallback_reason(const struct pfs_blob *blob);
const struct pfs_blob_timings *pfs_blob__timings(const struct pfs_blob *blob);
int pfs_blob__fd(const struct pfs_blob *blob);

/* pfs_blob__fingerprint - content fingerprint; equal blobs give equal
 * fingerprints on any host. */
uint64_t pfs_blob__fingerprint(const struct pfs_blob *blob);

const char *pfs_page_kind_str(enum pfs_page_kind kind);

#endif /* PFS_BLOB_H */
