// SPDX-License-Identifier: Apache-2.0
/*
 * Opening a files-layout blob that exists (pfs/blob_files.h): its layout is
 * not stored anywhere but in the manifest at the head of its tail, so the
 * tail is opened beneath the N.d fd (openat2, no symlinks), mapped alone
 * read-only, decoded with pfs_manifest_parse_tail (which copies what it
 * checks), turned into a layout, and handed to pfs_blob__map_files_at,
 * which checks it is packed and maps every file and the tail into the
 * region. The temporary tail mapping is dropped before returning.
 * Single-threaded; nothing here is kept but the blob.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pfs/blob_files.h"
#include "pfs/blob_manifest.h"
#include "pfs/log.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

int pfs_blob__open_files_at(int dirfd, bool read_only, struct pfs_blob **out, char *why, size_t n)
{
	struct open_how how = { .flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					   RESOLVE_NO_MAGICLINKS };
	struct pfs_manifest *m = NULL;
	struct pfs_blob_layout *l = NULL;
	struct stat st;
	void *tail = MAP_FAILED;
	uint64_t len = 0;
	long fd;
	int err;

	*out = NULL;
	fd = syscall(SYS_openat2, dirfd, PFS_BLOB_FILES_TAIL, &how, sizeof(how));
	if (fd < 0)
		return pfs_why(why, n, errno == EXDEV ? ELOOP : errno, "%s: %s%s",
			       PFS_BLOB_FILES_TAIL, strerror(errno),
			       errno == ELOOP || errno == EXDEV ? " (a symlink: refused)" :
			       errno == ENOENT ? " (not a files-layout blob directory, or one "
						 "that is still being created)" :
						 "");
	if (fstat((int)fd, &st)) {
		err = pfs_why(why, n, errno, "tail: fstat: %s", strerror(errno));
		goto out_close;
	}
	len = (uint64_t)st.st_size;
	if (!S_ISREG(st.st_mode) || len < PFS_MANIFEST_FOOTER || len % PFS_BLOB_FILES_ALIGN) {
		err = pfs_why(why, n, EBADMSG,
			      "tail is %s of %" PRIu64 " bytes: it must be a regular file of a "
			      "positive multiple of 4096 bytes",
			      S_ISREG(st.st_mode) ? "a file" : "not a regular file", len);
		goto out_close;
	}
	tail = mmap(NULL, len, PROT_READ, MAP_SHARED, (int)fd, 0);
	if (tail == MAP_FAILED) {
		err = pfs_why(why, n, errno, "mmap tail (%" PRIu64 " bytes): %s", len,
			      strerror(errno));
		goto out_close;
	}
	err = pfs_manifest_parse_tail(tail, len, &m, why, n);
	if (err)
		goto out_unmap;
	if (m->offset > (1ULL << 46)) {
		err = pfs_why(why, n, EBADMSG, "manifest offset %" PRIu64 " is too large",
			      m->offset);
		goto out_free;
	}
	err = pfs_manifest_layout(m, m->offset + len, &l);
	if (err) {
		pfs_why(why, n, ENOMEM, "no memory");
		goto out_free;
	}
	err = pfs_blob__map_files_at(dirfd, l, read_only, out, why, n);
out_free:
	free(l);
	pfs_manifest_free(m);
out_unmap:
	munmap(tail, len);
out_close:
	close((int)fd);
	return err;
}

int pfs_blob__open_files(const char *dir, const char *name, bool read_only, struct pfs_blob **out,
			 char *why, size_t n)
{
	char path[4096];
	int dfd, err;

	*out = NULL;
	if (pfs_blob_files_dir(dir, name, path, sizeof(path)))
		return pfs_why(why, n, ENAMETOOLONG, "%.200s/%.200s.d: path too long", dir, name);
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return pfs_why(why, n, errno, "%s: %s", path, strerror(errno));
	err = pfs_blob__open_files_at(dfd, read_only, out, why, n);
	close(dfd);
	return err;
}
