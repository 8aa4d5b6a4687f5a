// SPDX-License-Identifier: Apache-2.0
/*
 * The files layout of a blob (pfs/blob_files.h, `pfs blob create --layout
 * files`): on real tmpfs mounts made in a private mount namespace, one with
 * huge=within_size (transparent huge pages where the kernel gives them) and
 * one with huge=never (4 KiB pages), loaded from real files (libcrypto.a of
 * libssl-dev, a few MiB, and a subtree of the kernel's UAPI headers plus an
 * empty file):
 *   - names, exact sizes, modes 0444/0555, owner root, nothing extra;
 *   - the same bytes, manifest and fingerprint as --layout flat;
 *   - the page kind each mount gave, as the result reports it;
 *   - a second process that maps a file gets the region's physical pages
 *     (pagemap PFNs) and no anonymous memory (smaps), and sees a write
 *     through the region of a scratch blob;
 *   - pfs blob serve + a socket consumer through the directory fd
 *     (PFS_SHARE_F_DIR), ping, attach, manifest;
 *   - refusals with their messages: a gapped or overlapping layout, a
 *     symlink planted in files/, a file of the wrong length, --layout files
 *     without a source.
 * Runs as root (mounts); SKIP with the reason otherwise. The pfs binary is
 * $PFS (default build/pfs).
 */
#include <fcntl.h>
#include <ftw.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>

#include "pfs/blob_files.h"
#include "pfs/blob_share.h"
#include "pfs/log.h"
#include "source_util.h"
#include "tap.h"

#define TOKEN "0123456789abcdef0123456789abcdef"
#define BIG "libcrypto.a"

static char tmp[64] = "/tmp/pfs-files-XXXXXX";
static char src[128], thp[128], k4[128], tokfile[128];
static const char *pfs_bin;
static bool ready;
static char thp_result[4096];

static char *pfs(int *rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *pfs(int *rc, const char *fmt, ...)
{
	char args[2048], err[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(err, sizeof(err), "%s/pfs.err", tmp);
	return run(rc, err, "%s %s", pfs_bin, args);
}

/* stderr of the last pfs() holds @s (printed when not). */
static bool err_has(const char *s)
{
	char p[160];
	size_t len;
	uint8_t *e;
	bool has;

	snprintf(p, sizeof(p), "%s/pfs.err", tmp);
	e = slurp(p, &len);
	if (!e)
		return false;
	e[len] = '\0';
	has = strstr((char *)e, s) != NULL;
	if (!has)
		tap_diag("stderr: %.600s", (char *)e);
	free(e);
	return has;
}

static int t_setup(void)
{
	pfs_log_set_level(PFS_LOG_ERROR);
	pfs_bin = getenv("PFS") ? getenv("PFS") : "build/pfs";
	if (geteuid())
		return tap_skip("not root: the tests mount tmpfs in a private mount namespace");
	if (!real_file() || access(REAL_TREE, R_OK))
		return tap_skip("no libcrypto.a or %s (hack/install-deps.sh installs them)",
				REAL_TREE);
	if (access(pfs_bin, X_OK))
		return tap_skip("no pfs binary at %s (set PFS)", pfs_bin);
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return tap_skip("no private mount namespace: %s", strerror(errno));
	CHECK(mkdtemp(tmp), "mkdtemp: %s", strerror(errno));
	snprintf(src, sizeof(src), "%s/src", tmp);
	snprintf(thp, sizeof(thp), "%s/thp", tmp);
	snprintf(k4, sizeof(k4), "%s/4k", tmp);
	snprintf(tokfile, sizeof(tokfile), "%s/token", tmp);
	CHECK(!sh("mkdir -p %s/sub %s %s && cp %s %s/%s && cp -r %s/netfilter %s/sub/ && "
		  ": > %s/empty && printf %s > %s",
		  src, thp, k4, real_file(), src, BIG, REAL_TREE, src, src, TOKEN, tokfile),
	      "source tree");
	CHECK(!mount("none", thp, "tmpfs", 0, "size=64m,huge=within_size,mode=0755"),
	      "mount tmpfs huge=within_size: %s", strerror(errno));
	CHECK(!mount("none", k4, "tmpfs", 0, "size=64m,huge=never,mode=0755"),
	      "mount tmpfs huge=never: %s", strerror(errno));
	ready = true;
	return TAP_PASS;
}

#define NEED_SETUP()                                      \
	do {                                              \
		if (!ready)                               \
			return tap_skip("setup skipped"); \
	} while (0)

/* The same source as --layout files (huge=within_size and huge=never) and
 * --layout flat: same fingerprint, manifest, bytes; the page kinds. */
static int t_create_same_as_flat(void)
{
	char fp_files[32], fp_4k[32], fp_flat[32], page[8], page4k[8], why[256];
	struct pfs_blob *a, *b;
	char *out;
	int rc, err;

	NEED_SETUP();
	out = pfs(&rc, "blob create --name m --dir %s --layout files --source %s", thp, src);
	CHECK(out && !rc, "create --layout files: rc %d: %s", rc, out ? out : "");
	snprintf(thp_result, sizeof(thp_result), "%s", out);
	CHECK(strstr(out, "\"layout\":\"files\""), "no layout in %s", out);
	jstr(out, "fingerprint", fp_files, sizeof(fp_files));
	jstr(jsect(out, "\"files\":{"), "page", page, sizeof(page));
	free(out);

	out = pfs(&rc, "blob create --name m --dir %s --layout files --source %s", k4, src);
	CHECK(out && !rc, "create on huge=never: rc %d", rc);
	jstr(out, "fingerprint", fp_4k, sizeof(fp_4k));
	jstr(jsect(out, "\"files\":{"), "page", page4k, sizeof(page4k));
	free(out);

	out = pfs(&rc, "blob create --name flat --dir %s --page 4k --source %s", k4, src);
	CHECK(out && !rc, "create --layout flat: rc %d", rc);
	jstr(out, "fingerprint", fp_flat, sizeof(fp_flat));
	CHECK(!strstr(out, "\"layout\""), "a flat blob reports a layout: %s", out);
	free(out);
	CHECK(fp_files[0] && !strcmp(fp_files, fp_flat) && !strcmp(fp_4k, fp_flat),
	      "fingerprints files %s, files 4k %s, flat %s", fp_files, fp_4k, fp_flat);

	/* Region bytes: the whole blob, manifest and footer included. */
	err = pfs_blob__open_files(thp, "m", true, &a, why, sizeof(why));
	CHECK(!err, "open_files: %s", why);
	b = pfs_blob__open(k4, "flat");
	CHECK(b, "open flat: %s", strerror(errno));
	CHECK(pfs_blob__size(a) == pfs_blob__size(b) &&
		      !memcmp(pfs_blob__data(a), pfs_blob__data(b), pfs_blob__size(a)),
	      "region differs from the flat load (sizes %llu, %llu)",
	      (unsigned long long)pfs_blob__size(a), (unsigned long long)pfs_blob__size(b));
	CHECK(pfs_blob__layout(a) && !pfs_blob__layout(b), "layout of files/flat blob");
	pfs_blob__close(a);
	pfs_blob__close(b);

	/* The kernel's THP support decides what huge=within_size gives. */
	tap_diag("page kind of the files: huge=within_size -> %s, huge=never -> %s", page, page4k);
	CHECK(!strcmp(page4k, "4K"), "huge=never gave %s", page4k);
	if (!access("/sys/kernel/mm/transparent_hugepage/shmem_enabled", R_OK))
		CHECK(!strcmp(page, "THP"), "huge=within_size on a THP kernel gave %s", page);
	return TAP_PASS;
}

/* What nftw saw under files/. */
static int n_seen, n_bad;
static char first_bad[512];
static int seen(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	bool ok;

	(void)f;
	if (flag == FTW_D || flag == FTW_DP)
		ok = (st->st_mode & 07777) == 0555;
	else
		ok = flag == FTW_F && S_ISREG(st->st_mode) && (st->st_mode & 07777) == 0444;
	ok = ok && st->st_uid == 0 && st->st_gid == 0;
	if (!ok && !n_bad++)
		snprintf(first_bad, sizeof(first_bad), "%s mode %o uid %u", p,
			 (unsigned)st->st_mode, (unsigned)st->st_uid);
	n_seen++;
	return 0;
}

/* Every manifest entry with its name and exact length, the same bytes as
 * its source, modes, nothing else; the tail's length; the progress file. */
static int t_names_sizes_modes(void)
{
	char dir[256], path[512], line[256], why[256];
	struct pfs_manifest *m;
	struct pfs_blob *b;
	int ndirs = 0, err;
	struct stat st;
	size_t len = 0;
	uint8_t *p = NULL;

	NEED_SETUP();
	err = pfs_blob__open_files(thp, "m", true, &b, why, sizeof(why));
	CHECK(!err, "open_files: %s", why);
	err = pfs_blob__manifest(b, &m, why, sizeof(why));
	CHECK(!err, "manifest: %s", why);
	for (size_t i = 0; i < m->nfiles; i++) {
		snprintf(path, sizeof(path), "%s/m.d/files/%s", thp, m->files[i].name);
		CHECK(!lstat(path, &st) && S_ISREG(st.st_mode), "%s: missing", path);
		CHECK((uint64_t)st.st_size == m->files[i].length, "%s is %lld bytes, not %llu",
		      path, (long long)st.st_size, (unsigned long long)m->files[i].length);
		p = slurp(path, &len);
		CHECK(p && len == m->files[i].length &&
			      !memcmp(pfs_blob__data(b) + m->files[i].offset, p, len),
		      "%s: file bytes differ from the region", path);
		free(p);
		snprintf(path, sizeof(path), "%s/%s", src, m->files[i].name);
		CHECK(!sh("cmp -s '%s' '%s/m.d/files/%s'", path, thp, m->files[i].name),
		      "%s differs from its source", m->files[i].name);
	}
	/* Directories of the tree: sub, sub/netfilter, sub/netfilter/ipset... */
	p = (uint8_t *)run(&err, NULL, "find %s/m.d/files -mindepth 1 -type d | wc -l", thp);
	ndirs = p ? atoi((char *)p) : 0;
	free(p);
	snprintf(dir, sizeof(dir), "%s/m.d/files", thp);
	n_seen = n_bad = 0;
	CHECK(!nftw(dir, seen, 16, FTW_PHYS), "nftw");
	CHECK(!n_bad, "%d entries with a wrong mode/owner, first %s", n_bad, first_bad);
	CHECK(n_seen == (int)m->nfiles + ndirs + 1,
	      "files/ holds %d entries, want %zu files + %d dirs + itself", n_seen, m->nfiles,
	      ndirs);
	CHECK(ndirs >= 2, "the sub tree made only %d directories", ndirs);
	snprintf(path, sizeof(path), "%s/m.d/tail", thp);
	CHECK(!stat(path, &st) && (uint64_t)st.st_size == pfs_blob__size(b) - m->offset &&
		      (st.st_mode & 07777) == 0444,
	      "tail: %lld bytes mode %o, want %llu 0444", (long long)st.st_size,
	      (unsigned)st.st_mode, (unsigned long long)(pfs_blob__size(b) - m->offset));
	snprintf(path, sizeof(path), "%s/m.d/progress", thp);
	p = slurp(path, &len);
	CHECK(p, "no progress file");
	snprintf(line, sizeof(line), "{\"bytes\":%llu,\"size\":%llu,\"state\":\"verified\"}\n",
		 (unsigned long long)pfs_blob__size(b), (unsigned long long)pfs_blob__size(b));
	CHECK(len == strlen(line) && !memcmp(p, line, len), "progress: %.*s", (int)len, p);
	free(p);
	pfs_manifest_free(m);
	pfs_blob__close(b);
	return TAP_PASS;
}

/* The PFN of the page at @p of this process (0: not present or hidden). */
static uint64_t pfn_of(const void *p)
{
	uint64_t e = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (pread(fd, &e, 8, (off_t)((uintptr_t)p / 4096 * 8)) != 8)
		e = 0;
	close(fd);
	return e >> 63 ? e & ((1ULL << 55) - 1) : 0;
}

/* Anonymous and Rss kB of the VMA starting at @p in /proc/self/smaps. */
static void smaps_of(const void *p, long *anon, long *rss)
{
	char line[256];
	FILE *f = fopen("/proc/self/smaps", "r");
	bool in = false;

	*anon = *rss = -1;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long a, e;

		if (sscanf(line, "%lx-%lx ", &a, &e) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = a == (uintptr_t)p;
			continue;
		}
		if (in && !strncmp(line, "Anonymous:", 10))
			*anon = atol(line + 10);
		if (in && !strncmp(line, "Rss:", 4))
			*rss = atol(line + 4);
	}
	if (f)
		fclose(f);
}

/* A second process maps files/libcrypto.a: the same physical pages as the
 * region (PFN of page 0, of one in the middle and of the last), no
 * anonymous memory for that mapping. */
static int t_second_process_same_pages(void)
{
	const struct pfs_blob_layout *l;
	uint64_t want[3], off[3], len = 0, at = 0;
	struct pfs_blob *b;
	char why[256];
	int pipefd[2], err;
	pid_t pid;

	NEED_SETUP();
	err = pfs_blob__open_files(thp, "m", true, &b, why, sizeof(why));
	CHECK(!err, "open_files: %s", why);
	l = pfs_blob__layout(b);
	for (uint32_t i = 0; i < l->n; i++)
		if (!strcmp(l->ent[i].name, BIG)) {
			len = l->ent[i].length;
			at = l->ent[i].offset;
		}
	CHECK(len > 3 * 4096, "no %s in the layout", BIG);
	off[0] = 0;
	off[1] = len / 2 / 4096 * 4096;
	off[2] = (len - 1) / 4096 * 4096;
	for (int k = 0; k < 3; k++) {
		(void)*(volatile uint8_t *)(pfs_blob__data(b) + at + off[k]);
		want[k] = pfn_of(pfs_blob__data(b) + at + off[k]);
	}
	CHECK(!pipe(pipefd), "pipe");
	pid = fork();
	if (pid == 0) {
		char path[256];
		uint64_t got[3] = { 0 };
		long anon, rss;
		uint64_t sum = 0;
		uint8_t *p;
		int fd;

		snprintf(path, sizeof(path), "%s/m.d/files/%s", thp, BIG);
		fd = open(path, O_RDONLY);
		p = fd < 0 ? MAP_FAILED : mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			_exit(2);
		for (uint64_t o = 0; o < len; o += 4096)
			sum += p[o];
		for (int k = 0; k < 3; k++)
			got[k] = pfn_of(p + off[k]);
		smaps_of(p, &anon, &rss);
		if (write(pipefd[1], got, sizeof(got)) != sizeof(got) ||
		    write(pipefd[1], &anon, sizeof(anon)) != sizeof(anon) ||
		    write(pipefd[1], &rss, sizeof(rss)) != sizeof(rss))
			_exit(3);
		_exit(sum == 0xffffffffffffULL ? 4 : 0);
	}
	close(pipefd[1]);
	{
		uint64_t got[3];
		long anon = -1, rss = -1;
		int st;

		CHECK(read(pipefd[0], got, sizeof(got)) == sizeof(got) &&
			      read(pipefd[0], &anon, sizeof(anon)) == sizeof(anon) &&
			      read(pipefd[0], &rss, sizeof(rss)) == sizeof(rss),
		      "child reported nothing");
		close(pipefd[0]);
		waitpid(pid, &st, 0);
		CHECK(WIFEXITED(st) && !WEXITSTATUS(st), "child exit %d", st);
		CHECK(want[0], "pagemap shows no PFN to root (CAP_SYS_ADMIN missing?)");
		for (int k = 0; k < 3; k++)
			CHECK(got[k] == want[k],
			      "page at +%llu: PFN %#llx in the file mapping, %#llx in the region",
			      (unsigned long long)off[k], (unsigned long long)got[k],
			      (unsigned long long)want[k]);
		CHECK(anon == 0 && rss > 0, "the file mapping has Anonymous %ld kB, Rss %ld kB",
		      anon, rss);
		tap_diag("same PFNs (e.g. %#llx); the reader's mapping: Rss %ld kB, Anonymous 0 kB",
			 (unsigned long long)want[0], rss);
	}
	pfs_blob__close(b);
	return TAP_PASS;
}

/* A scratch blob made by the library: a write through the region is what
 * another process reads from the file (and from its own mapping of it). */
static int t_write_through_region(void)
{
	struct pfs_blob_layout_ent ent[] = { { "a.bin", 0, 5000 }, { "d/b.bin", 8192, 3 } };
	struct pfs_blob_layout l = { .n = 2, .ent = ent, .tail_off = 12288, .size = 16384 };
	char path[256], why[256];
	struct pfs_blob *b;
	size_t len;
	uint8_t *p;
	int err;

	NEED_SETUP();
	err = pfs_blob__create_files(k4, "scratch", &l, PFS_BLOB_FILES_PREFAULT, &b, why,
				     sizeof(why));
	CHECK(!err, "create_files: %s", why);
	memcpy(pfs_blob__data(b) + 4990, "0123456789", 10);
	memcpy(pfs_blob__data(b) + 8192, "xyz", 3);
	snprintf(path, sizeof(path), "%s/scratch.d/files/a.bin", k4);
	p = slurp(path, &len);
	CHECK(p && len == 5000 && !memcmp(p + 4990, "0123456789", 10), "a.bin: %zu bytes", len);
	free(p);
	CHECK(!sh("test \"$(cat %s/scratch.d/files/d/b.bin)\" = xyz", k4), "d/b.bin");
	/* The bytes past a file's end in its last page are not the file's. */
	CHECK(!sh("test $(stat -c %%s %s/scratch.d/files/a.bin) = 5000", k4), "a.bin size");
	pfs_blob__close(b);
	CHECK(!pfs_blob_files_remove(k4, "scratch"), "remove");
	CHECK(!pfs_blob_files_exists(k4, "scratch"), "still there");
	return TAP_PASS;
}

/* A holder of the files-layout blob, until it answers a ping. */
static pid_t start_serve(const char *sock)
{
	char log[160];
	pid_t pid;

	snprintf(log, sizeof(log), "%s/serve.err", tmp);
	pid = fork();
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd >= 0) {
			dup2(fd, 1); /* its result JSON is not TAP */
			dup2(fd, 2);
		}
		execl(pfs_bin, pfs_bin, "blob", "serve", "--dir", thp, "--name", "m", "--socket",
		      sock, "--token-file", tokfile, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500; i++) {
		struct pfs_share_meta m;

		if (!pfs_share_ping(sock, NULL, 200, &m))
			return pid;
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return -1;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

/* serve detects m.d and hands out its directory; the C consumer builds the
 * region from it; ping, attach and manifest through the socket work. */
static int t_serve_and_consume(void)
{
	struct pfs_share_meta meta = { 0 };
	struct pfs_share_client_opts o = { .sz = sizeof(o), .meta = &meta };
	char sock[160], fp[32], want_fp[32];
	struct pfs_blob *b, *flat;
	char *out;
	pid_t h;
	int rc, st;

	NEED_SETUP();
	snprintf(sock, sizeof(sock), "%s/m.sock", tmp);
	h = start_serve(sock);
	CHECK(h > 0, "holder did not start: see %s/serve.err", tmp);
	b = pfs_blob__from_socket(sock, TOKEN, &o);
	CHECK(b, "from_socket: %s", strerror(errno));
	CHECK(meta.flags & PFS_SHARE_F_DIR, "reply flags %#x lack PFS_SHARE_F_DIR", meta.flags);
	CHECK(pfs_blob__layout(b), "the consumer's blob has no layout");
	flat = pfs_blob__open(k4, "flat");
	CHECK(flat && pfs_blob__size(flat) == pfs_blob__size(b) &&
		      !memcmp(pfs_blob__data(flat), pfs_blob__data(b), pfs_blob__size(b)),
	      "the consumer's region differs from the flat load");
	CHECK(pfs_blob__fingerprint(b) == meta.fingerprint, "fingerprint");
	pfs_blob__close(flat);
	pfs_blob__close(b);

	out = pfs(&rc, "blob ping --socket %s --token-file %s", sock, tokfile);
	CHECK(out && !rc, "ping rc %d: %s", rc, out ? out : "");
	free(out);
	out = pfs(&rc, "blob attach --socket %s --token-file %s", sock, tokfile);
	CHECK(out && !rc, "attach rc %d: %s", rc, out ? out : "");
	jstr(out, "fingerprint", fp, sizeof(fp));
	jstr(thp_result, "fingerprint", want_fp, sizeof(want_fp));
	CHECK(fp[0] && !strcmp(fp, want_fp), "attach fingerprint %s, create said %s", fp, want_fp);
	free(out);
	out = pfs(&rc, "blob manifest --blob-socket %s --blob-token-file %s", sock, tokfile);
	CHECK(out && !rc && strstr(out, "\"name\":\"" BIG "\""), "manifest rc %d: %.300s", rc,
	      out ? out : "");
	free(out);
	kill(h, SIGTERM);
	waitpid(h, &st, 0);
	CHECK(WIFEXITED(st) && !WEXITSTATUS(st), "holder exit %d", st);
	return TAP_PASS;
}

/* Layouts with a gap or an overlap are refused, naming the entry. */
static int t_refuse_gapped(void)
{
	struct pfs_blob_layout_ent gap[] = { { "a", 0, 100 }, { "b", 8192, 10 } };
	struct pfs_blob_layout_ent over[] = { { "a", 0, 5000 }, { "b", 4096, 10 } };
	struct pfs_blob_layout_ent dup[] = { { "a", 0, 10 }, { "a", 4096, 10 } };
	struct pfs_blob_layout l = { .n = 2, .ent = gap, .tail_off = 12288, .size = 16384 };
	struct pfs_blob *b = NULL;
	char why[256];
	int err;

	NEED_SETUP();
	err = pfs_blob__create_files(k4, "gapped", &l, 0, &b, why, sizeof(why));
	CHECK(err == -EINVAL && strstr(why, "'b' starts at 8192") && strstr(why, "a gap"),
	      "gap: %d %s", err, why);
	CHECK(!b && !pfs_blob_files_exists(k4, "gapped"), "a refused layout left files");
	l.ent = over;
	err = pfs_blob__create_files(k4, "gapped", &l, 0, &b, why, sizeof(why));
	CHECK(err == -EINVAL && strstr(why, "an overlap"), "overlap: %d %s", err, why);
	l.ent = dup;
	l.tail_off = 8192;
	err = pfs_blob__create_files(k4, "gapped", &l, 0, &b, why, sizeof(why));
	CHECK(err == -EINVAL && strstr(why, "name order"), "duplicate: %d %s", err, why);
	l.ent = gap;
	l.n = 1;
	l.tail_off = 8192;
	err = pfs_blob__create_files(k4, "gapped", &l, 0, &b, why, sizeof(why));
	CHECK(err == -EINVAL && strstr(why, "tail at 8192") && strstr(why, "a gap"),
	      "tail gap: %d %s", err, why);
	return TAP_PASS;
}

/* A copy of m.d to tamper with: a symlink planted in files/, a file of the
 * wrong length. Both are refused on open, naming the file. */
static int t_refuse_tampered(void)
{
	char why[512];
	struct pfs_blob *b = NULL;
	int err;

	NEED_SETUP();
	CHECK(!sh("cp -a %s/m.d %s/t1.d && cp -a %s/m.d %s/t2.d", thp, thp, thp, thp), "copy");
	/* Root bypasses the 0555 of files/ here (CAP_DAC_OVERRIDE). */
	CHECK(!sh("cd %s/t1.d/files && mv empty empty.orig && ln -s /etc/passwd empty && "
		  "rm empty.orig",
		  thp),
	      "plant a symlink");
	err = pfs_blob__open_files(thp, "t1", true, &b, why, sizeof(why));
	CHECK(err == -ELOOP && strstr(why, "files/empty") && strstr(why, "symlink"),
	      "symlink: %d %s", err, why);
	CHECK(!sh("chmod u+w %s/t2.d/files/%s && truncate -s -1 %s/t2.d/files/%s", thp, BIG, thp,
		  BIG),
	      "truncate");
	err = pfs_blob__open_files(thp, "t2", true, &b, why, sizeof(why));
	CHECK(err == -EBADMSG && strstr(why, "files/" BIG) && strstr(why, "the manifest says"),
	      "length: %d %s", err, why);
	CHECK(!b, "a blob came back");
	/* A symlinked directory in the path is refused as well. */
	CHECK(!sh("cd %s/t1.d/files && rm empty && cp -a sub sub2 && rm -rf sub && "
		  "ln -s sub2 sub && : > empty && chmod 0444 empty",
		  thp),
	      "plant a dir symlink");
	err = pfs_blob__open_files(thp, "t1", true, &b, why, sizeof(why));
	CHECK(err == -ELOOP && strstr(why, "files/sub/"), "dir symlink: %d %s", err, why);
	CHECK(!pfs_blob_files_remove(thp, "t1") && !pfs_blob_files_remove(thp, "t2"), "rm");
	return TAP_PASS;
}

/* The CLI's refusals: --layout files without a source or a name; an
 * unknown layout; and rm of a files-layout blob. */
static int t_cli_refusals(void)
{
	char *out;
	int rc;

	NEED_SETUP();
	out = pfs(&rc, "blob create --name z --dir %s --layout files --size 4M", k4);
	free(out);
	CHECK(rc == 2 && err_has("--layout files needs --source PATH or --fetch-from"),
	      "no source: rc %d", rc);
	out = pfs(&rc, "blob create --dir %s --layout files --source %s", k4, src);
	free(out);
	CHECK(rc == 2 && err_has("--layout files needs --name"), "no name: rc %d", rc);
	out = pfs(&rc, "blob create --name z --layout tree --source %s", src);
	free(out);
	CHECK(rc == 2, "--layout tree: rc %d", rc);
	out = pfs(&rc, "blob create --name m --dir %s --layout files --source %s", thp, src);
	free(out);
	CHECK(rc == 1 && err_has("m.d: File exists"), "existing: rc %d", rc);
	/* Its files are read-only: a payload receiver refuses it up front
	 * instead of faulting on its first write. */
	out = pfs(&rc,
		  "recv --mode payload --into-blob --blob-name m --blob-dir %s "
		  "--listen 127.0.0.1:1",
		  thp);
	free(out);
	CHECK(rc == 1 && err_has("--into-blob: the blob is held as files"), "into-blob: rc %d", rc);
	out = pfs(&rc, "blob rm --name m --dir %s", k4);
	free(out);
	CHECK(!rc && !pfs_blob_files_exists(k4, "m"), "rm: rc %d", rc);
	return TAP_PASS;
}

/* A tmpfs too small for the files: the create fails up front with ENOSPC
 * naming a file (fallocate), not with a SIGBUS in the loader, and leaves
 * nothing behind. */
static int t_tmpfs_too_small(void)
{
	char small[160];
	char *out;
	int rc;

	NEED_SETUP();
	snprintf(small, sizeof(small), "%s/small", tmp);
	CHECK(!sh("mkdir -p %s", small), "mkdir");
	CHECK(!mount("none", small, "tmpfs", 0, "size=2m,mode=0755"), "mount: %s", strerror(errno));
	out = pfs(&rc, "blob create --name m --dir %s --layout files --source %s", small, src);
	CHECK(rc == 1 && out && strstr(out, "\"ok\":false") && err_has("No space left") &&
		      err_has("too small for the blob"),
	      "rc %d: %s", rc, out ? out : "");
	free(out);
	CHECK(!pfs_blob_files_exists(small, "m"), "a failed create left %s/m.d", small);
	umount2(small, MNT_DETACH);
	return TAP_PASS;
}

static int t_cleanup(void)
{
	NEED_SETUP();
	umount2(thp, MNT_DETACH);
	umount2(k4, MNT_DETACH);
	CHECK(!sh("rm -rf %s", tmp), "rm");
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "setup: private tmpfs mounts (huge=within_size, huge=never), source", t_setup,
	  .setup = true },
	{ "create --layout files = --layout flat (fingerprint, bytes); page kinds",
	  t_create_same_as_flat },
	{ "files/: names, exact sizes, modes 0444/0555, nothing extra; tail; progress",
	  t_names_sizes_modes },
	{ "a second process mapping a file: the region's PFNs, no anonymous memory",
	  t_second_process_same_pages },
	{ "a write through the region is in the file (scratch blob)", t_write_through_region },
	{ "serve + socket consumer through the dir fd; ping, attach, manifest",
	  t_serve_and_consume },
	{ "gapped, overlapping, duplicate layouts refused", t_refuse_gapped },
	{ "a planted symlink, a file of the wrong length refused", t_refuse_tampered },
	{ "CLI: --layout files needs a source and a name; recv --into-blob refused; rm",
	  t_cli_refusals },
	{ "a tmpfs too small: ENOSPC naming the file, nothing left", t_tmpfs_too_small },
	{ "cleanup", t_cleanup, .setup = true },
};

TAP_MAIN(tests)
