// SPDX-License-Identifier: Apache-2.0
/*
 * The source scanner of `pfs blob create --source` (blob_source.h): resolve
 * PATH beneath its root, list it, refuse what must not be read, sort by
 * name, lay the files out (blob_manifest.h) and size the manifest; after
 * the reads, list it again and compare (src_recheck).
 *
 * Every open goes through openat2 relative to one O_PATH directory fd
 * (root_fd) with the source's RESOLVE_* flags, so a ".." or a symlink can
 * never lead a walk out of its root, whatever the tree holds or how it
 * changes meanwhile; entries are inspected with fstatat(AT_SYMLINK_NOFOLLOW)
 * relative to the directory fd they were listed from. Directories are
 * walked depth-first with one directory fd open per level at most (the
 * subdirectories of a level are collected, the level closed, then
 * descended). Single-threaded; the struct is owned by the caller and then
 * read by the reader threads of blob_source_read.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "source/blob_source_int.h"
#include "util/utf8.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

__attribute__((format(printf, 4, 5))) static int fail(char *why, size_t n, int err, const char *fmt,
						      ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, n, fmt, ap);
	va_end(ap);
	return -err;
}

double src_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

const char *pfs_size_str(uint64_t b, char *buf, size_t n)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB" };
	double v = (double)b;
	int u = -1;

	while (v >= 1024 && u < 3) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, n, "%llu bytes", (unsigned long long)b);
	else if (v == (double)(uint64_t)v)
		snprintf(buf, n, "%.0f %s", v, unit[u]);
	else
		snprintf(buf, n, "%.1f %s", v, unit[u]);
	return buf;
}

static const char *type_str(mode_t m)
{
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISSOCK(m))
		return "a socket";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	return "not a regular file or directory";
}

/* "@a/@b", or @b when @a is empty, into @out. */
static int join(char *out, const char *a, const char *b)
{
	int len = snprintf(out, PATH_MAX, "%s%s%s", a, *a ? "/" : "", b);

	return len < 0 || len >= PATH_MAX ? -ENAMETOOLONG : 0;
}

int src_open(const struct pfs_source *s, const char *rel, int flags, char *why, size_t n)
{
	struct open_how how = { .flags = (uint64_t)flags, .resolve = s->resolve };
	long fd = syscall(SYS_openat2, s->root_fd, *rel ? rel : ".", &how, sizeof(how));
	int e = errno;

	if (fd >= 0)
		return (int)fd;
	if (e == EXDEV)
		return fail(why, n, e,
			    "'%s' leads out of the source root %s (a '..' or a "
			    "symlink pointing outside it%s)",
			    rel, s->o.root ? s->o.root : s->path,
			    s->o.root ? "; --source is relative to --source-root" : "");
	if (e == ELOOP)
		return fail(why, n, e, "'%s': a symlink loop or a /proc magic link", rel);
	if (e == ENOSYS)
		return fail(why, n, e, "openat2 is missing: Linux 5.6 or later is needed");
	if (e == EINVAL && (flags & O_DIRECT))
		return -e; /* the caller falls back without O_DIRECT */
	return fail(why, n, e, "'%s': %s", rel, strerror(e));
}

/* Room for one more element of @elem bytes in the array *@arr of *@cap
 * elements, @n used: doubled when full. 0 or -ENOMEM. */
static int grow(void *arr, size_t *cap, size_t n, size_t elem)
{
	void **a = arr, *na;
	size_t ncap;

	if (n < *cap)
		return 0;
	ncap = *cap ? 2 * *cap : 16;
	na = realloc(*a, ncap * elem);
	if (!na)
		return -ENOMEM;
	*a = na;
	*cap = ncap;
	return 0;
}

int src_list_add(struct src_list *l, const char *name, const char *rel, const struct stat *st)
{
	struct src_file *f;

	if (grow(&l->f, &l->cap, l->n, sizeof(*l->f)))
		return -ENOMEM;
	f = &l->f[l->n];
	memset(f, 0, sizeof(*f));
	f->name = strdup(name);
	f->rel = strdup(rel);
	f->st = *st;
	f->fd = -1;
	if (!f->name || !f->rel) {
		free(f->name);
		free(f->rel);
		return -ENOMEM;
	}
	l->n++;
	return 0;
}

static void list_free(struct src_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->f[i].name);
		free(l->f[i].rel);
		free(l->f[i].url);
	}
	free(l->f);
	memset(l, 0, sizeof(*l));
}

int src_by_name(const void *a, const void *b)
{
	return strcmp(((const struct src_file *)a)->name, ((const struct src_file *)b)->name);
}

/* A symlink met in a walk: follow it beneath the root; a regular file's
 * stat into @st, anything else refused naming the link and its target. */
static int follow(const struct pfs_source *s, int dfd, const char *ent, const char *name,
		  const char *rel, struct stat *st, char *why, size_t n)
{
	char to[PATH_MAX], sub[256];
	ssize_t len = readlinkat(dfd, ent, to, sizeof(to) - 1);
	int fd = src_open(s, rel, O_PATH | O_CLOEXEC, sub, sizeof(sub)), err = 0;

	to[len < 0 ? 0 : len] = '\0';
	if (fd == -EXDEV)
		return fail(why, n, EXDEV,
			    "symlink '%s' -> '%s' points outside the source root %s%s", name, to,
			    s->o.root ? s->o.root : s->path,
			    to[0] == '/' ? " (an absolute symlink always does: only relative "
					   "symlinks inside the root are followed)" :
					   "");
	if (fd == -ENOENT)
		return fail(why, n, ENOENT, "symlink '%s' -> '%s' is dangling", name, to);
	if (fd < 0)
		return fail(why, n, -fd, "symlink '%s' -> '%s': %s", name, to, sub);
	if (fstat(fd, st))
		err = fail(why, n, errno, "symlink '%s': %s", name, strerror(errno));
	else if (S_ISDIR(st->st_mode))
		err = fail(why, n, EPERM,
			   "symlink '%s' -> '%s' is a directory: directory symlinks "
			   "are not followed",
			   name, to);
	else if (!S_ISREG(st->st_mode))
		err = fail(why, n, EPERM,
			   "symlink '%s' -> '%s' is %s: only regular files and "
			   "directories are read",
			   name, to, type_str(st->st_mode));
	close(fd);
	return err;
}

struct subdirs {
	char **name;
	size_t n, cap;
};

static int subdirs_push(struct subdirs *d, const char *name)
{
	if (grow(&d->name, &d->cap, d->n, sizeof(*d->name)))
		return -ENOMEM;
	d->name[d->n] = strdup(name);
	return d->name[d->n++] ? 0 : -ENOMEM;
}

/* One entry of a listed directory; its subdirectories go to @sd. */
static int entry(const struct pfs_source *s, struct src_list *l, struct subdirs *sd, int dfd,
		 const char *ent, const char *sub, char *why, size_t n)
{
	char name[PATH_MAX], rel[PATH_MAX], shown[PATH_MAX];
	struct stat st;

	if (join(name, sub, ent) || join(rel, s->prefix, name))
		return fail(why, n, ENAMETOOLONG, "a path under '%s/%s' is too long", s->path, sub);
	/* Messages show the entry as the user can find it. */
	if (strcmp(s->path, "."))
		snprintf(shown, sizeof(shown), "%.2000s/%.2000s", s->path, name);
	else
		snprintf(shown, sizeof(shown), "%s", name);
	if (!utf8_valid(ent, strlen(ent)))
		return fail(why, n, EILSEQ, "the name '%s' is not valid UTF-8", shown);
	if (fstatat(dfd, ent, &st, AT_SYMLINK_NOFOLLOW))
		return fail(why, n, errno, "'%s': %s", shown, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return subdirs_push(sd, name) ? fail(why, n, ENOMEM, "no memory") : 0;
	if (S_ISLNK(st.st_mode)) {
		int err = follow(s, dfd, ent, shown, rel, &st, why, n);

		if (err)
			return err;
	} else if (!S_ISREG(st.st_mode)) {
		return fail(why, n, EPERM,
			    "'%s' is %s: only regular files and directories are read", shown,
			    type_str(st.st_mode));
	}
	return src_list_add(l, name, rel, &st) ? fail(why, n, ENOMEM, "no memory") : 0;
}

/* List directory @sub (relative to the source) and everything below it. */
static int walk(const struct pfs_source *s, struct src_list *l, const char *sub, char *why,
		size_t n)
{
	struct subdirs sd = { 0 };
	char rel[PATH_MAX];
	struct dirent *de;
	int dfd, err = 0;
	DIR *d;

	if (join(rel, s->prefix, sub))
		return fail(why, n, ENAMETOOLONG, "a path under '%s/%s' is too long", s->path, sub);
	/* A subdirectory that became a symlink since it was listed is not
	 * followed (O_NOFOLLOW); the source's own path may be one. */
	dfd = src_open(s, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (*sub ? O_NOFOLLOW : 0), why,
		       n);
	if (dfd < 0)
		return dfd;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return fail(why, n, errno, "'%s': %s", rel, strerror(errno));
	}
	while (!err && (errno = 0, de = readdir(d))) {
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			err = entry(s, l, &sd, dfd, de->d_name, sub, why, n);
	}
	if (!err && errno)
		err = fail(why, n, errno, "listing '%s': %s", rel, strerror(errno));
	closedir(d);
	for (size_t i = 0; i < sd.n; i++) {
		if (!err)
			err = walk(s, l, sd.name[i], why, n);
		free(sd.name[i]);
	}
	free(sd.name);
	return err;
}

/* Everything the source holds, sorted by name, into @l. */
static int list_source(const struct pfs_source *s, struct src_list *l, char *why, size_t n)
{
	int err;

	if (s->kind == PFS_MANIFEST_DIR) {
		err = walk(s, l, "", why, n);
	} else {
		const char *base = strrchr(s->prefix, '/');
		struct stat st;
		int fd = src_open(s, s->prefix, O_PATH | O_CLOEXEC, why, n);

		if (fd < 0)
			return fd;
		err = fstat(fd, &st) ? fail(why, n, errno, "%s: %s", s->path, strerror(errno)) : 0;
		close(fd);
		if (!err && !S_ISREG(st.st_mode))
			err = fail(why, n, EPERM, "'%s' is no longer a regular file", s->path);
		if (!err && src_list_add(l, base ? base + 1 : s->prefix, s->prefix, &st))
			err = fail(why, n, ENOMEM, "no memory");
	}
	/* An empty directory leaves l->f NULL, which qsort may not be given. */
	if (!err && l->n > 1)
		qsort(l->f, l->n, sizeof(*l->f), src_by_name);
	return err;
}

/* Without a root: @path as given. A directory is the root of its own walk;
 * a file is opened beneath its parent, following its symlinks anywhere
 * (the path was given as it is). */
static int open_plain(struct pfs_source *s, char *why, size_t n)
{
	const char *p = s->path, *slash = strrchr(p, '/');
	struct stat st;
	int fd = open(p, O_PATH | O_CLOEXEC);

	if (fd < 0)
		return fail(why, n, errno, "%s: %s", p, strerror(errno));
	if (!fstat(fd, &st) && S_ISDIR(st.st_mode)) {
		s->resolve |= RESOLVE_BENEATH;
		s->root_fd = fd;
		s->prefix = strdup("");
	} else {
		char dir[PATH_MAX];

		close(fd);
		snprintf(dir, sizeof(dir), "%.*s",
			 !slash	    ? 1 :
			 slash == p ? 1 :
				      (int)(slash - p),
			 !slash ? "." : p);
		s->root_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (s->root_fd < 0)
			return fail(why, n, errno, "%s: %s", dir, strerror(errno));
		s->prefix = strdup(slash ? slash + 1 : p);
	}
	return s->prefix ? 0 : fail(why, n, ENOMEM, "no memory");
}

/* root_fd, prefix, resolve and kind for the path (and opts.root). */
static int resolve_source(struct pfs_source *s, char *why, size_t n)
{
	struct stat st;
	int fd, err = 0;

	s->resolve = RESOLVE_NO_MAGICLINKS;
	if (s->o.root) {
		if (s->path[0] == '/')
			return fail(why, n, EXDEV,
				    "'%s' is absolute: --source is a path relative to "
				    "--source-root %s",
				    s->path, s->o.root);
		s->resolve |= RESOLVE_BENEATH;
		s->root_fd = open(s->o.root, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (s->root_fd < 0)
			return fail(why, n, errno, "--source-root %s: %s", s->o.root,
				    strerror(errno));
		s->prefix = strdup(s->path);
		if (!s->prefix)
			return fail(why, n, ENOMEM, "no memory");
	} else {
		err = open_plain(s, why, n);
		if (err)
			return err;
	}
	fd = src_open(s, s->prefix, O_PATH | O_CLOEXEC, why, n);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st))
		err = fail(why, n, errno, "%s: %s", s->path, strerror(errno));
	else if (S_ISDIR(st.st_mode))
		s->kind = PFS_MANIFEST_DIR;
	else if (S_ISREG(st.st_mode))
		s->kind = PFS_MANIFEST_FILE;
	else
		err = fail(why, n, EPERM, "'%s' is %s: only regular files and directories are read",
			   s->path, type_str(st.st_mode));
	close(fd);
	return err;
}

int src_layout(struct pfs_source *s, char *why, size_t n)
{
	struct pfs_manifest m = { .version = PFS_MANIFEST_VERSION, .kind = s->kind };
	uint64_t at = 0;
	ssize_t len;

	if (s->l.n)
		qsort(s->l.f, s->l.n, sizeof(*s->l.f), src_by_name);

	m.files = calloc(s->l.n ? s->l.n : 1, sizeof(*m.files));
	if (!m.files)
		return fail(why, n, ENOMEM, "no memory");
	for (size_t i = 0; i < s->l.n; i++) {
		struct src_file *f = &s->l.f[i];
		uint64_t len = (uint64_t)f->st.st_size;

		f->offset = at;
		at = (at + len + PFS_MANIFEST_ALIGN - 1) & ~(PFS_MANIFEST_ALIGN - 1);
		s->bytes += len;
		m.files[i] = (struct pfs_manifest_file){ .name = f->name,
							 .offset = f->offset,
							 .length = len };
	}
	m.nfiles = s->l.n;
	m.bytes = s->bytes;
	len = pfs_manifest_json(&m, NULL, 0);
	free(m.files);
	if (len < 0)
		return fail(why, n, (int)-len, "the manifest cannot be written: %s",
			    strerror((int)-len));
	s->mani_off = at;
	s->mani_len = (uint64_t)len;
	s->needed = at + (uint64_t)len + PFS_MANIFEST_FOOTER;
	return 0;
}

struct pfs_source *src_new(const struct pfs_source_opts *opts, char *why, size_t n)
{
	struct pfs_source *s = calloc(1, sizeof(*s));

	if (!s) {
		errno = -fail(why, n, ENOMEM, "no memory");
		return NULL;
	}
	s->root_fd = -1;
	if (opts && opts->sz)
		memcpy(&s->o, opts, opts->sz < sizeof(s->o) ? opts->sz : sizeof(s->o));
	s->o.threads = s->o.threads ? s->o.threads : PFS_SOURCE_THREADS;
	s->o.chunk = s->o.chunk ? s->o.chunk : PFS_SOURCE_CHUNK;
	if (!opts || !opts->sz || s->o.threads < 1 || s->o.threads > PFS_SOURCE_THREADS_MAX ||
	    s->o.chunk % PFS_MANIFEST_ALIGN || s->o.chunk < PFS_SOURCE_CHUNK_MIN ||
	    s->o.chunk > PFS_SOURCE_CHUNK_MAX) {
		errno = -fail(why, n, EINVAL,
			      "bad source options (threads 1..%d, chunk a multiple of 4 KiB in "
			      "64 KiB..256 MiB)",
			      PFS_SOURCE_THREADS_MAX);
		free(s);
		return NULL;
	}
	return s;
}

struct pfs_source *pfs_source__scan(const char *path, const struct pfs_source_opts *opts, char *why,
				    size_t n)
{
	double t0 = src_now();
	struct pfs_source *s;
	int err;

	if (!path || !*path) {
		errno = -fail(why, n, EINVAL, "no source path");
		return NULL;
	}
	s = src_new(opts, why, n);
	if (!s)
		return NULL;
	s->path = strdup(path);
	err = s->path ? resolve_source(s, why, n) : fail(why, n, ENOMEM, "no memory");
	if (!err)
		err = list_source(s, &s->l, why, n);
	if (!err)
		err = src_layout(s, why, n);
	if (err)
		goto out_free;
	s->scan_s = src_now() - t0;
	return s;
out_free:
	pfs_source__free(s);
	errno = -err;
	return NULL;
}

int src_same(const struct src_file *f, const struct stat *now, const char *when, char *why,
	     size_t n)
{
	const struct stat *a = &f->st;
	char what[96];

	if (a->st_dev != now->st_dev || a->st_ino != now->st_ino)
		snprintf(what, sizeof(what), "was replaced (another inode)");
	else if (a->st_size != now->st_size)
		snprintf(what, sizeof(what), "size %lld -> %lld", (long long)a->st_size,
			 (long long)now->st_size);
	else if (a->st_mtim.tv_sec != now->st_mtim.tv_sec ||
		 a->st_mtim.tv_nsec != now->st_mtim.tv_nsec)
		snprintf(what, sizeof(what), "mtime changed");
	else if (a->st_ctim.tv_sec != now->st_ctim.tv_sec ||
		 a->st_ctim.tv_nsec != now->st_ctim.tv_nsec)
		snprintf(what, sizeof(what), "ctime changed");
	else
		return 0;
	return fail(why, n, ESTALE, "source changed while it was read: '%s' %s (%s)", f->name, what,
		    when);
}

int src_recheck(const struct pfs_source *s, char *why, size_t n)
{
	struct src_list now = { 0 };
	size_t i = 0, j = 0;
	int err = list_source(s, &now, why, n);

	if (err) {
		char sub[512];

		snprintf(sub, sizeof(sub), "%s", why);
		err = fail(why, n, ESTALE, "source changed while it was read: listing it again: %s",
			   sub);
	}
	while (!err && (i < s->l.n || j < now.n)) {
		int c = i == s->l.n ? 1 : j == now.n ? -1 : strcmp(s->l.f[i].name, now.f[j].name);

		if (c < 0)
			err = fail(why, n, ESTALE,
				   "source changed while it was read: '%s' disappeared",
				   s->l.f[i].name);
		else if (c > 0)
			err = fail(why, n, ESTALE,
				   "source changed while it was read: '%s' appeared",
				   now.f[j].name);
		else
			err = src_same(&s->l.f[i++], &now.f[j++].st, "listed again after the read",
				       why, n);
	}
	list_free(&now);
	return err;
}

uint64_t pfs_source__needed(const struct pfs_source *s)
{
	return s->needed;
}

enum pfs_manifest_kind pfs_source__kind(const struct pfs_source *s)
{
	return s->kind;
}

uint64_t pfs_source__files(const struct pfs_source *s)
{
	return s->l.n;
}

uint64_t pfs_source__bytes(const struct pfs_source *s)
{
	return s->bytes;
}

void pfs_source__free(struct pfs_source *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->l.n; i++)
		if (s->l.f[i].fd >= 0)
			close(s->l.f[i].fd);
	list_free(&s->l);
	src_remote_free(s->rem);
	if (s->root_fd >= 0)
		close(s->root_fd);
	free(s->prefix);
	free(s->path);
	free(s);
}

int pfs_source__layout(const struct pfs_source *s, uint64_t size, struct pfs_blob_layout **out)
{
	struct pfs_blob_layout *l;

	*out = NULL;
	if (size < s->needed || size % PFS_MANIFEST_ALIGN)
		return -ENOSPC;
	/* One block: the struct and the table; names stay in @s. */
	l = malloc(sizeof(*l) + (s->l.n ? s->l.n : 1) * sizeof(*l->ent));
	if (!l)
		return -ENOMEM;
	l->n = (uint32_t)s->l.n;
	l->ent = (struct pfs_blob_layout_ent *)(l + 1);
	l->tail_off = s->mani_off;
	l->size = size;
	for (size_t i = 0; i < s->l.n; i++)
		l->ent[i] =
			(struct pfs_blob_layout_ent){ .name = s->l.f[i].name,
						      .offset = s->l.f[i].offset,
						      .length = (uint64_t)s->l.f[i].st.st_size };
	*out = l;
	return 0;
}
