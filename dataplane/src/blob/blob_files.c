// SPDX-License-Identifier: Apache-2.0
/*
 * The files layout of a blob (pfs/blob_files.h): create D/N.d with one file
 * per layout entry and a tail, or map an existing one beneath a directory
 * fd, into one contiguous region.
 *
 * Memory: the region is an anonymous PROT_NONE reservation of the blob's
 * size (aligned to 2 MiB, so a file that starts at a multiple of 2 MiB can
 * be mapped with PMDs), over which every file is mapped MAP_SHARED|
 * MAP_FIXED at its offset. The reservation itself never gets a page: every
 * byte of [0, size) belongs to a file mapping, because the layout is packed
 * (checked first). Unmapping the region (pfs_blob__close) drops them all;
 * the files stay, so other mappings of them keep their pages.
 *
 * Files are opened beneath the N.d fd with openat2 RESOLVE_BENEATH|
 * RESOLVE_NO_SYMLINKS: a symlink planted anywhere below N.d is refused, and
 * so is a file whose length is not the layout's (a reader of the file and
 * the region must see the same bytes). Single-threaded; the blob object is
 * immutable after creation except for the progress fd, which only the
 * holder's filling thread writes.
 */
#include <dirent.h>
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

#include "blob/blob_int.h"
#include "pfs/log.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#define PG 4096ULL
#define SZ_2M (2ULL << 20)
#define NAME_MAX_BYTES 4095

static uint64_t pg_up(uint64_t v)
{
	return (v + PG - 1) & ~(PG - 1);
}

int pfs_blob_files_dir(const char *dir, const char *name, char *buf, size_t n)
{
	int len = snprintf(buf, n, "%s/%s%s", dir, name, PFS_BLOB_FILES_SUFFIX);

	return len < 0 || (size_t)len >= n ? -ENAMETOOLONG : 0;
}

bool pfs_blob_files_exists(const char *dir, const char *name)
{
	char path[4096];
	struct stat st;

	return name && blob_name_ok(name) && !pfs_blob_files_dir(dir, name, path, sizeof(path)) &&
	       !lstat(path, &st) && S_ISDIR(st.st_mode);
}

/* A PROT_NONE reservation of @size bytes starting at a multiple of 2 MiB. */
static uint8_t *reserve(uint64_t size)
{
	uint8_t *raw = mmap(NULL, size + SZ_2M, PROT_NONE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uintptr_t a;

	if (raw == MAP_FAILED)
		return NULL;
	a = ((uintptr_t)raw + SZ_2M - 1) & ~(uintptr_t)(SZ_2M - 1);
	if (a > (uintptr_t)raw)
		munmap(raw, a - (uintptr_t)raw);
	if ((uintptr_t)raw + SZ_2M > a)
		munmap((void *)(a + size), (uintptr_t)raw + SZ_2M - a);
	return (uint8_t *)a;
}

static int map_at(uint8_t *at, uint64_t len, bool ro, int fd)
{
	void *p = mmap(at, pg_up(len), ro ? PROT_READ : PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_FIXED, fd, 0);

	return p == MAP_FAILED ? -errno : 0;
}

static int open_beneath(int dirfd, const char *path, int flags)
{
	struct open_how how = { .flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					   RESOLVE_NO_MAGICLINKS };
	long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));

	return fd < 0 ? -errno : (int)fd;
}

static struct pfs_blob *blob_new(uint8_t *base, const struct pfs_blob_layout *l, int dirfd)
{
	struct pfs_blob *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	if (pfs_blob_layout_dup(l, &b->layout)) {
		free(b);
		return NULL;
	}
	b->data = base;
	b->size = l->size;
	b->kind = PFS_PAGE_4K;
	b->fd = -1;
	b->dir_fd = dirfd;
	b->progress_fd = -1;
	return b;
}

void blob_files_release(struct pfs_blob *b)
{
	pfs_blob_layout_free(b->layout);
	b->layout = NULL;
	if (b->dir_fd >= 0)
		close(b->dir_fd);
	if (b->progress_fd >= 0)
		close(b->progress_fd);
}

/* Open, check and map one file beneath @dirfd: @rel of exactly @len bytes
 * at @at. The fd is closed again: the mapping keeps the file. */
static int map_one(int dirfd, const char *rel, uint64_t len, uint8_t *at, bool ro, char *why,
		   size_t n)
{
	struct stat st;
	int fd, err;

	fd = open_beneath(dirfd, rel, ro ? O_RDONLY : O_RDWR);
	if (fd < 0) {
		if (fd == -ELOOP || fd == -EXDEV)
			return pfs_why(why, n, ELOOP,
				       "%.300s: a symlink on the way (refused: a blob's files are "
				       "opened beneath N.d with no symlinks)",
				       rel);
		return pfs_why(why, n, -fd, "%.300s: %s", rel, strerror(-fd));
	}
	if (fstat(fd, &st)) {
		err = pfs_why(why, n, errno, "%.300s: fstat: %s", rel, strerror(errno));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		err = pfs_why(why, n, EBADMSG, "%.300s is not a regular file", rel);
		goto out_close;
	}
	if ((uint64_t)st.st_size != len) {
		err = pfs_why(why, n, EBADMSG,
			      "%.300s is %" PRIu64 " bytes, the manifest says %" PRIu64
			      " (a changed or truncated file: recreate the blob)",
			      rel, (uint64_t)st.st_size, len);
		goto out_close;
	}
	err = len ? map_at(at, len, ro, fd) : 0;
	if (err)
		pfs_why(why, n, -err, "mmap %.300s (%" PRIu64 " bytes): %s", rel, len,
			strerror(-err));
out_close:
	close(fd);
	return err;
}

int pfs_blob__map_files_at(int dirfd, const struct pfs_blob_layout *l, bool read_only,
			   struct pfs_blob **out, char *why, size_t n)
{
	char rel[NAME_MAX_BYTES + 16];
	struct pfs_blob *b;
	uint8_t *base;
	int err, dfd;

	*out = NULL;
	err = pfs_blob_layout_check(l, why, n);
	if (err)
		return err;
	dfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	if (dfd < 0)
		return pfs_why(why, n, errno, "dup of the blob directory fd: %s", strerror(errno));
	base = reserve(l->size);
	if (!base) {
		err = pfs_why(why, n, ENOMEM, "cannot reserve %" PRIu64 " bytes of address space",
			      l->size);
		goto out_close;
	}
	for (uint32_t i = 0; i < l->n; i++) {
		snprintf(rel, sizeof(rel), "%s/%s", PFS_BLOB_FILES_DIR, l->ent[i].name);
		err = map_one(dfd, rel, l->ent[i].length, base + l->ent[i].offset, read_only, why,
			      n);
		if (err)
			goto out_unmap;
	}
	err = map_one(dfd, PFS_BLOB_FILES_TAIL, l->size - l->tail_off, base + l->tail_off,
		      read_only, why, n);
	if (err)
		goto out_unmap;
	b = blob_new(base, l, dfd);
	if (!b) {
		err = pfs_why(why, n, ENOMEM, "no memory");
		goto out_unmap;
	}
	b->huge_bytes = blob_smaps_huge_bytes(base, l->size);
	if (b->huge_bytes)
		b->kind = PFS_PAGE_THP;
	*out = b;
	return 0;

out_unmap:
	munmap(base, l->size);
out_close:
	close(dfd);
	return err;
}

/* Remove everything beneath @dfd's directory entry @name (a file or a
 * tree), making directories writable first: a 0555 directory cannot lose
 * entries without CAP_DAC_OVERRIDE. */
static int remove_tree(int dfd, const char *name)
{
	struct stat st;
	int sub, err = 0;
	DIR *d;
	struct dirent *de;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dfd, name, 0) ? -errno : 0;
	fchmodat(dfd, name, 0755, 0);
	sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub < 0)
		return -errno;
	d = fdopendir(sub);
	if (!d) {
		close(sub);
		return -errno;
	}
	while ((de = readdir(d))) {
		int e;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		e = remove_tree(sub, de->d_name);
		if (e && !err)
			err = e;
	}
	closedir(d);
	if (unlinkat(dfd, name, AT_REMOVEDIR) && !err)
		err = -errno;
	return err;
}

int pfs_blob_files_remove(const char *dir, const char *name)
{
	char path[4096];
	int err;

	if (!name || !blob_name_ok(name))
		return -EINVAL;
	err = pfs_blob_files_dir(dir, name, path, sizeof(path));
	return err ? err : remove_tree(AT_FDCWD, path);
}

int pfs_blob_files_remove_path(const char *path)
{
	return path ? remove_tree(AT_FDCWD, path) : -EINVAL;
}

/* The directories a layout needs, parents before children, each once. */
struct dirs {
	char **d;
	size_t n, cap;
};

static int dirs_add(struct dirs *ds, const char *name, size_t len)
{
	char **nd;

	/* Entries are sorted, so a directory seen before is among the last
	 * few added; a linear scan back stays short for real trees. */
	for (size_t i = ds->n; i-- > 0;)
		if (strlen(ds->d[i]) == len && !memcmp(ds->d[i], name, len))
			return 0;
	if (ds->n == ds->cap) {
		size_t cap = ds->cap ? ds->cap * 2 : 16;

		nd = realloc(ds->d, cap * sizeof(*nd));
		if (!nd)
			return -ENOMEM;
		ds->d = nd;
		ds->cap = cap;
	}
	ds->d[ds->n] = strndup(name, len);
	if (!ds->d[ds->n])
		return -ENOMEM;
	ds->n++;
	return 1;
}

static void dirs_free(struct dirs *ds)
{
	for (size_t i = 0; i < ds->n; i++)
		free(ds->d[i]);
	free(ds->d);
}

/* Create the parents of @name beneath @ffd (mode 0755 while filling). */
static int make_parents(int ffd, const char *name, struct dirs *ds, char *why, size_t n)
{
	for (const char *s = strchr(name, '/'); s; s = strchr(s + 1, '/')) {
		int added = dirs_add(ds, name, (size_t)(s - name));

		if (added < 0)
			return pfs_why(why, n, ENOMEM, "no memory");
		if (!added)
			continue;
		if (mkdirat(ffd, ds->d[ds->n - 1], 0755) && errno != EEXIST)
			return pfs_why(why, n, errno, "files/%.300s: mkdir: %s", ds->d[ds->n - 1],
				       strerror(errno));
	}
	return 0;
}

/* Create one file of exactly @len bytes, allocate its pages (fallocate:
 * a full tmpfs says ENOSPC here, not SIGBUS in the loader), map it at @at. */
static int create_one(int dfd, const char *rel, uint64_t len, uint8_t *at, char *why, size_t n)
{
	int fd, err = 0;

	fd = openat(dfd, rel, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return pfs_why(why, n, errno, "%.300s: create: %s", rel, strerror(errno));
	if (ftruncate(fd, (off_t)len)) {
		err = pfs_why(why, n, errno, "%.300s: ftruncate %" PRIu64 ": %s", rel, len,
			      strerror(errno));
		goto out_close;
	}
	if (len && fallocate(fd, 0, 0, (off_t)len) && errno != EOPNOTSUPP) {
		err = pfs_why(why, n, errno,
			      "%.300s: allocating %" PRIu64 " bytes: %s (the file system of the "
			      "blob directory is too small for the blob%s)",
			      rel, len, strerror(errno),
			      errno == ENOSPC ? ": mount it with a larger size=" : "");
		goto out_close;
	}
	if (fchmod(fd, 0444)) {
		err = pfs_why(why, n, errno, "%.300s: chmod 0444: %s", rel, strerror(errno));
		goto out_close;
	}
	if (len && (err = map_at(at, len, false, fd)))
		pfs_why(why, n, -err, "mmap %.300s: %s", rel, strerror(-err));
out_close:
	close(fd);
	return err;
}

int pfs_blob__create_files(const char *dir, const char *name, const struct pfs_blob_layout *l,
			   unsigned int flags, struct pfs_blob **out, char *why, size_t n)
{
	char path[4096], rel[NAME_MAX_BYTES + 16];
	struct dirs ds = { 0 };
	struct pfs_blob *b;
	uint8_t *base = NULL;
	int dfd = -1, ffd = -1, err;

	*out = NULL;
	if (!dir || !name || !blob_name_ok(name))
		return pfs_why(why, n, EINVAL,
			       "blob name '%.200s' must be 1-199 bytes without '/', not . or ..",
			       name ? name : "");
	err = pfs_blob_layout_check(l, why, n);
	if (err)
		return err;
	if (pfs_blob_files_dir(dir, name, path, sizeof(path)))
		return pfs_why(why, n, ENAMETOOLONG, "%.200s/%.200s.d: path too long", dir, name);
	if (mkdir(path, 0755))
		return pfs_why(why, n, errno, "%s: %s%s", path, strerror(errno),
			       errno == EEXIST ? " (a blob of that name is held there: remove it "
						 "first or choose another name)" :
						 "");
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		err = pfs_why(why, n, errno, "%s: %s", path, strerror(errno));
		goto out_remove;
	}
	if (mkdirat(dfd, PFS_BLOB_FILES_DIR, 0755) ||
	    (ffd = openat(dfd, PFS_BLOB_FILES_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		err = pfs_why(why, n, errno, "%s/files: %s", path, strerror(errno));
		goto out_remove;
	}
	base = reserve(l->size);
	if (!base) {
		err = pfs_why(why, n, ENOMEM, "cannot reserve %" PRIu64 " bytes of address space",
			      l->size);
		goto out_remove;
	}
	for (uint32_t i = 0; i < l->n; i++) {
		err = make_parents(ffd, l->ent[i].name, &ds, why, n);
		if (err)
			goto out_remove;
		snprintf(rel, sizeof(rel), "%s/%s", PFS_BLOB_FILES_DIR, l->ent[i].name);
		err = create_one(dfd, rel, l->ent[i].length, base + l->ent[i].offset, why, n);
		if (err)
			goto out_remove;
	}
	err = create_one(dfd, PFS_BLOB_FILES_TAIL, l->size - l->tail_off, base + l->tail_off, why,
			 n);
	if (err)
		goto out_remove;
	/* Directories read-only last, children first (reverse creation order). */
	for (size_t i = ds.n; i-- > 0;)
		if (fchmodat(ffd, ds.d[i], 0555, 0)) {
			err = pfs_why(why, n, errno, "files/%.300s: chmod 0555: %s", ds.d[i],
				      strerror(errno));
			goto out_remove;
		}
	if (fchmod(ffd, 0555)) {
		err = pfs_why(why, n, errno, "%s/files: chmod 0555: %s", path, strerror(errno));
		goto out_remove;
	}
	if ((flags & PFS_BLOB_FILES_PREFAULT) && madvise(base, l->size, MADV_POPULATE_WRITE) &&
	    errno != EINVAL) {
		err = pfs_why(why, n, errno, "prefault of %" PRIu64 " bytes: %s", l->size,
			      strerror(errno));
		goto out_remove;
	}
	b = blob_new(base, l, dfd);
	if (!b) {
		err = pfs_why(why, n, ENOMEM, "no memory");
		goto out_remove;
	}
	b->path = strdup(path);
	if (!b->path) {
		pfs_blob__close(b); /* unmaps base, closes dfd */
		base = NULL;
		dfd = -1;
		err = pfs_why(why, n, ENOMEM, "no memory");
		goto out_remove;
	}
	close(ffd);
	dirs_free(&ds);
	*out = b;
	return 0;

out_remove:
	if (base)
		munmap(base, l->size);
	if (ffd >= 0)
		close(ffd);
	if (dfd >= 0)
		close(dfd);
	dirs_free(&ds);
	remove_tree(AT_FDCWD, path);
	return err;
}

const struct pfs_blob_layout *pfs_blob__layout(const struct pfs_blob *b)
{
	return b->layout;
}

int pfs_blob__dir_fd(const struct pfs_blob *b)
{
	return b->layout ? b->dir_fd : -1;
}

int pfs_blob_files_progress(struct pfs_blob *b, uint64_t bytes, const char *state)
{
	char line[160];
	int len;

	if (!b->layout)
		return 0;
	if (b->progress_fd < 0) {
		b->progress_fd = openat(b->dir_fd, PFS_BLOB_FILES_PROGRESS,
					O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (b->progress_fd < 0)
			return -errno;
	}
	len = snprintf(line, sizeof(line),
		       "{\"bytes\":%" PRIu64 ",\"size\":%" PRIu64 ",\"state\":\"%s\"}\n", bytes,
		       b->size, state);
	if (pwrite(b->progress_fd, line, (size_t)len, 0) != len || ftruncate(b->progress_fd, len))
		return -errno;
	return 0;
}
