/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers of the tests of blobs loaded from files (test_blob_source.c,
 * test_blob_manifest.c): the real inputs they read (files of installed
 * Debian packages, never made-up data), running commands and the pfs
 * binary, the independent sha256 (coreutils' sha256sum), loading a source
 * into a blob through the library, and reading fields of a JSON result. */
#ifndef PFS_TESTS_SOURCE_UTIL_H
#define PFS_TESTS_SOURCE_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pfs/blob.h"
#include "pfs/blob_manifest.h"
#include "pfs/blob_source.h"
#include "json_util.h"
#include "sh.h"

/* libcrypto.a of libssl-dev (a few MiB) and the kernel's UAPI headers of
 * linux-libc-dev (hundreds of files, nested): both are build dependencies
 * of this tree (hack/install-deps.sh), so they are on every machine that
 * builds it. */
static const char *const real_files[] = {
	"/usr/lib/x86_64-linux-gnu/libcrypto.a",
	"/usr/lib/aarch64-linux-gnu/libcrypto.a",
};
#define REAL_TREE "/usr/include/linux"

/* The first real file that exists, or NULL. */
__attribute__((unused)) static const char *real_file(void)
{
	for (size_t i = 0; i < sizeof(real_files) / sizeof(real_files[0]); i++)
		if (!access(real_files[i], R_OK))
			return real_files[i];
	return NULL;
}

/* Run a shell command; its stdout (malloc'd, NUL-terminated) and exit code
 * (-1: did not exit). stderr goes to @err_path when set. */
__attribute__((format(printf, 3, 4), unused)) static char *run(int *rc, const char *err_path,
							       const char *fmt, ...)
{
	char cmd[8192];
	size_t cap = 1 << 16, len = 0, r;
	char *out = malloc(cap);
	va_list ap;
	FILE *p;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd) - 200, fmt, ap);
	va_end(ap);
	if (err_path)
		snprintf(cmd + strlen(cmd), 200, " 2>'%s'", err_path);
	p = popen(cmd, "r");
	if (!p || !out) {
		free(out);
		*rc = -1;
		return NULL;
	}
	while ((r = fread(out + len, 1, cap - len - 1, p)) > 0) {
		len += r;
		if (len + 1 == cap) {
			char *n = realloc(out, cap *= 2);

			if (!n)
				break;
			out = n;
		}
	}
	out[len] = '\0';
	st = pclose(p);
	*rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return out;
}

/* The whole file (malloc'd), its length in *@len; NULL on error. */
__attribute__((unused)) static uint8_t *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	uint8_t *b = NULL;
	size_t got = 0;

	if (fd < 0 || fstat(fd, &st))
		goto out_close;
	b = malloc((size_t)st.st_size + 1);
	while (b && got < (size_t)st.st_size) {
		ssize_t r = read(fd, b + got, (size_t)st.st_size - got);

		if (r <= 0)
			break;
		got += (size_t)r;
	}
	if (b && got != (size_t)st.st_size) {
		free(b);
		b = NULL;
	}
	*len = got;
out_close:
	if (fd >= 0)
		close(fd);
	return b;
}

/* What coreutils' sha256sum prints for @path (64 hex digits into @hex). */
__attribute__((unused)) static int sha256sum(const char *path, char hex[65])
{
	int rc;
	char *out = run(&rc, NULL, "sha256sum -- '%s'", path);
	int ok = out && !rc && strlen(out) >= 64;

	if (ok)
		snprintf(hex, 65, "%.64s", out);
	free(out);
	return ok ? 0 : -1;
}

/* A source loaded into a blob through the library. */
struct loaded {
	struct pfs_blob *blob;
	struct pfs_manifest *m;
	struct pfs_source_stats st;
	uint64_t needed;
	char why[512];
	int err; /* of scan (errno as -errno), load or parse */
};

/* Scan @path with @o, create a blob of @page for it, load, decode the
 * manifest. 0 or L->err with L->why. */
__attribute__((unused)) static int load(const char *path, const struct pfs_source_opts *o,
					enum pfs_page_kind page, struct loaded *L)
{
	struct pfs_source_opts def = { .sz = sizeof(def) };
	struct pfs_blob_opts bo = { .sz = sizeof(bo), .page = page, .numa_node = -1 };
	struct pfs_source *src = pfs_source__scan(path, o ? o : &def, L->why, sizeof(L->why));

	memset(&L->st, 0, sizeof(L->st));
	L->blob = NULL;
	L->m = NULL;
	if (!src)
		return L->err = -errno;
	L->needed = bo.size = pfs_source__needed(src);
	bo.no_fallback = page == PFS_PAGE_2M;
	L->blob = pfs_blob__create(&bo);
	if (!L->blob) {
		L->err = -errno;
		snprintf(L->why, sizeof(L->why), "blob: %s", pfs_blob_last_error());
		pfs_source__free(src);
		return L->err;
	}
	L->err = pfs_source__load(src, pfs_blob__data(L->blob), pfs_blob__size(L->blob), &L->st,
				  L->why, sizeof(L->why));
	pfs_source__free(src);
	if (!L->err)
		L->err = pfs_blob__manifest(L->blob, &L->m, L->why, sizeof(L->why));
	return L->err;
}

__attribute__((unused)) static void unload(struct loaded *L)
{
	pfs_manifest_free(L->m);
	pfs_blob__close(L->blob);
	L->m = NULL;
	L->blob = NULL;
}

#endif /* PFS_TESTS_SOURCE_UTIL_H */
