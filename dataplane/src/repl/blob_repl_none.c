// SPDX-License-Identifier: Apache-2.0
/*
 * Replication in a build without libcrypto (the arm64 cross build,
 * -DPFS_NO_SOURCE; the Makefile leaves blob_repl_{io,server,client}.c out
 * there): the same API, failing with ENOTSUP and a message, so the CLI
 * links and says why. Empty in every other build. No state.
 */
#ifdef PFS_NO_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pfs/blob_repl.h"

static const char no_repl[] = "this pfs was built without replication: the arm64 cross build "
			      "has no libcrypto for HMAC-SHA256";

struct pfs_repl_server *pfs_repl_server__start(const struct pfs_repl_server_opts *opts, char *why,
					       size_t n)
{
	(void)opts;
	snprintf(why, n, "%s", no_repl);
	errno = ENOTSUP;
	return NULL;
}

int pfs_repl_listen(const char *addr, char *why, size_t n)
{
	(void)addr;
	snprintf(why, n, "%s", no_repl);
	return -ENOTSUP;
}

void pfs_repl_server__linger(struct pfs_repl_server *s, int linger_ms,
			     const volatile sig_atomic_t *stop)
{
	(void)s;
	(void)linger_ms;
	(void)stop;
}

void pfs_repl_server__drain(struct pfs_repl_server *s, int timeout_ms)
{
	(void)s;
	(void)timeout_ms;
}

void pfs_repl_server__stats(struct pfs_repl_server *s, struct pfs_repl_server_stats *st)
{
	(void)s;
	memset(st, 0, sizeof(*st));
}

const char *pfs_repl_server__addr(const struct pfs_repl_server *s)
{
	(void)s;
	return "";
}

void pfs_repl_server__stop(struct pfs_repl_server *s)
{
	(void)s;
}

int pfs_repl_fetch(const struct pfs_repl_fetch_opts *opts, struct pfs_repl_fetch_result *r)
{
	(void)opts;
	memset(r, 0, sizeof(*r));
	snprintf(r->error, sizeof(r->error), "%s", no_repl);
	return -ENOTSUP;
}

struct pfs_verify_stream *pfs_verify_stream__start(const uint8_t *blob,
						   const struct pfs_blob_layout *l,
						   struct pfs_progress *p, unsigned threads)
{
	(void)blob;
	(void)l;
	(void)p;
	(void)threads;
	errno = ENOTSUP;
	return NULL;
}

int pfs_verify_stream__finish(struct pfs_verify_stream *v, const struct pfs_manifest *m,
			      uint64_t size, struct pfs_verify_stream_stats *st, char *why,
			      size_t n)
{
	(void)v;
	(void)m;
	(void)size;
	(void)st;
	snprintf(why, n, "%s", no_repl);
	return -ENOTSUP;
}

uint32_t pfs_verify_stream__hashed(struct pfs_verify_stream *v)
{
	(void)v;
	return 0;
}

void pfs_verify_stream__free(struct pfs_verify_stream *v)
{
	(void)v;
}
#endif /* PFS_NO_SOURCE */
