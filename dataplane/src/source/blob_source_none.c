// SPDX-License-Identifier: Apache-2.0
/*
 * The source loader in a build without libcrypto (the arm64 cross build,
 * -DPFS_NO_SOURCE; the Makefile leaves blob_source*.c out there): the same
 * API, every entry point failing with ENOTSUP and a message that says why,
 * so `pfs blob create --source` gives a clear error instead of a link
 * failure. Empty in every other build. No state.
 */
#ifdef PFS_NO_SOURCE
#include <errno.h>
#include <stdio.h>

#include "pfs/blob_source.h"

static const char no_source[] = "this pfs was built without --source: the arm64 cross build "
				"has no libcrypto for sha256";

struct pfs_source *pfs_source__scan(const char *path, const struct pfs_source_opts *opts, char *why,
				    size_t n)
{
	(void)path;
	(void)opts;
	snprintf(why, n, "%s", no_source);
	errno = ENOTSUP;
	return NULL;
}

struct pfs_source *pfs_source__scan_remote(const struct pfs_remote *r,
					   const struct pfs_source_opts *opts, char *why, size_t n)
{
	(void)r;
	(void)opts;
	snprintf(why, n, "%s", no_source);
	errno = ENOTSUP;
	return NULL;
}

int pfs_source__layout(const struct pfs_source *src, uint64_t size, struct pfs_blob_layout **out)
{
	(void)src;
	(void)size;
	*out = NULL;
	return -ENOTSUP;
}

uint64_t pfs_source__needed(const struct pfs_source *src)
{
	(void)src;
	return 0;
}

enum pfs_manifest_kind pfs_source__kind(const struct pfs_source *src)
{
	(void)src;
	return PFS_MANIFEST_FILE;
}

uint64_t pfs_source__files(const struct pfs_source *src)
{
	(void)src;
	return 0;
}

uint64_t pfs_source__bytes(const struct pfs_source *src)
{
	(void)src;
	return 0;
}

int pfs_source__load(struct pfs_source *src, void *blob, uint64_t size, struct pfs_source_stats *st,
		     char *why, size_t n)
{
	(void)src;
	(void)blob;
	(void)size;
	(void)st;
	snprintf(why, n, "%s", no_source);
	return -ENOTSUP;
}

void pfs_source__free(struct pfs_source *src)
{
	(void)src;
}

int pfs_manifest_verify(const struct pfs_manifest *m, const void *blob, uint64_t size, char *why,
			size_t n)
{
	(void)m;
	(void)blob;
	(void)size;
	snprintf(why, n, "%s", no_source);
	return -ENOTSUP;
}

int pfs_manifest_check_digests(const struct pfs_manifest *m, uint64_t size,
			       const uint8_t (*sha)[32], char *why, size_t n)
{
	(void)m;
	(void)size;
	(void)sha;
	snprintf(why, n, "%s", no_source);
	return -ENOTSUP;
}

const char *pfs_size_str(uint64_t bytes, char *buf, size_t n)
{
	snprintf(buf, n, "%llu bytes", (unsigned long long)bytes);
	return buf;
}
#endif /* PFS_NO_SOURCE */
