// SPDX-License-Identifier: Apache-2.0
/*
 * Chunk digests in a build without replication (the arm64 cross build,
 * -DPFS_NO_SOURCE; the Makefile leaves blob_chunks.c and the BLAKE3
 * library out there): no tables can be made, so the CLI links and never
 * reaches the rest. Empty in every other build.
 */
#ifdef PFS_NO_SOURCE
#include <errno.h>
#include <string.h>

#include "pfs/blob_chunks.h"

struct pfs_chunks *pfs_chunks__new(uint64_t size)
{
	(void)size;
	errno = ENOTSUP;
	return NULL;
}

struct pfs_chunks *pfs_chunks__load(int dirfd, const char *name, uint64_t size)
{
	(void)dirfd;
	(void)name;
	(void)size;
	errno = ENOENT;
	return NULL;
}

void pfs_chunks__free(struct pfs_chunks *c)
{
	(void)c;
}

/* Never called: no struct pfs_chunks exists in this build. */
uint32_t pfs_chunks__count(const struct pfs_chunks *c)
{
	(void)c;
	return 0;
}

uint64_t pfs_chunks__off(uint32_t i)
{
	return (uint64_t)i * PFS_CHUNK_SIZE;
}

uint64_t pfs_chunks__len(const struct pfs_chunks *c, uint32_t i)
{
	(void)c;
	(void)i;
	return 0;
}

int pfs_chunks__hash_start(struct pfs_chunks *c, const uint8_t *blob, struct pfs_progress *p,
			   unsigned threads)
{
	(void)c;
	(void)blob;
	(void)p;
	(void)threads;
	return -ENOTSUP;
}

int pfs_chunks__hash_wait(struct pfs_chunks *c, char *why, size_t n)
{
	(void)c;
	(void)why;
	(void)n;
	return -ENOTSUP;
}

void pfs_chunks__rehash(struct pfs_chunks *c, uint32_t from, uint32_t to)
{
	(void)c;
	(void)from;
	(void)to;
}

void pfs_chunks__stats(const struct pfs_chunks *c, struct pfs_chunks_stats *st)
{
	(void)c;
	memset(st, 0, sizeof(*st));
}

void pfs_chunks__list_from_hashes(struct pfs_chunks *c)
{
	(void)c;
}

void pfs_chunks__list_none(struct pfs_chunks *c)
{
	(void)c;
}

bool pfs_chunks__list_done(const struct pfs_chunks *c)
{
	(void)c;
	return false;
}

void pfs_chunks__root(const struct pfs_chunks *c, uint8_t out[PFS_CHUNK_DIGEST])
{
	(void)c;
	memset(out, 0, PFS_CHUNK_DIGEST);
}

uint32_t pfs_chunks__compare(struct pfs_chunks *c, uint32_t from, uint32_t *bad, uint32_t max)
{
	(void)c;
	(void)from;
	(void)bad;
	(void)max;
	return 0;
}

int pfs_chunks__unlink(int dirfd, const char *name)
{
	(void)dirfd;
	(void)name;
	return -ENOENT;
}

int pfs_chunks__save(const struct pfs_chunks *c, int dirfd, const char *name)
{
	(void)c;
	(void)dirfd;
	(void)name;
	return -ENOTSUP;
}

const char *pfs_blake3_impl(void)
{
	return "none";
}
#endif /* PFS_NO_SOURCE */
