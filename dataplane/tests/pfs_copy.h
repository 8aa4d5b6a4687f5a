/* SPDX-License-Identifier: Apache-2.0 */
/* The pfs binary as other users can run it. Several tests exec pfs as an
 * unprivileged user (65534, or a free uid through setpriv). A checkout in a
 * private directory (root's home, a `mktemp -d`: mode 0700) is not
 * searchable by that user, so exec fails with EACCES before pfs runs. The
 * tests therefore run a copy placed in a directory of their own under /tmp
 * that every user can search; root's runs use the same copy, so both kinds
 * of run test the same bytes. */
#ifndef PFS_TESTS_PFS_COPY_H
#define PFS_TESTS_PFS_COPY_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

/* pfs_copy - copy @src to @dir/pfs, with @dir made searchable by everyone
 * (0711 at least; its other modes are kept). Writes the copy's path into
 * @out (size @n) and returns it, or returns NULL and writes the reason in
 * words into @out. */
__attribute__((unused)) static const char *pfs_copy(const char *src, const char *dir, char *out,
						    size_t n)
{
	int in = -1, fd = -1, err = 0;
	char path[160];
	struct stat st;
	off_t off = 0;

	if (stat(dir, &st) || chmod(dir, (st.st_mode & 07777) | 0711)) {
		err = errno;
		snprintf(out, n, "cannot make %.100s searchable for the unprivileged runs: %s", dir,
			 strerror(err));
		return NULL;
	}
	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0 || fstat(in, &st)) {
		err = errno;
		snprintf(out, n, "cannot read the pfs binary %.120s: %s", src, strerror(err));
		goto out_close;
	}
	snprintf(path, sizeof(path), "%s/pfs", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	while (fd >= 0 && off < st.st_size)
		if (sendfile(fd, in, &off, (size_t)(st.st_size - off)) <= 0)
			break;
	if (fd < 0 || off != st.st_size || fchmod(fd, 0755)) {
		err = errno ? errno : EIO;
		snprintf(out, n, "cannot copy %.60s to %.60s (for the unprivileged runs): %s", src,
			 path, strerror(err));
		goto out_close;
	}
	snprintf(out, n, "%s", path);
out_close:
	if (fd >= 0)
		close(fd);
	if (in >= 0)
		close(in);
	return err ? NULL : out;
}

#endif /* PFS_TESTS_PFS_COPY_H */
