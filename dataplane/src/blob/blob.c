// SPDX-License-Identifier: Apache-2.0
/*
 * The blob: mapping, page-kind fallback, prefault, seed fill, fingerprint.
 *
 * A blob is created by one thread and then only read or written in place by
 * its users; struct pfs_blob itself is immutable after create/open, so any
 * number of threads may call the accessors. The mapping is MAP_SHARED over a
 * memfd or a named file (hugetlbfs or tmpfs) so other processes can map the
 * same pages; only anonymous THP blobs are private (fd -1), because THP on
 * shmem is often disabled (shmem_enabled=never) while anonymous THP is not.
 *
 * Fallback order: 1G -> 2M -> THP -> 4K. Each step that fails appends its
 * reason to blob->reason, which is logged and reported; nothing falls back
 * silently. After prefault the kernel's own account (/proc/self/smaps) says
 * how many bytes really sit on huge pages, and a THP request the kernel
 * served with 4 KiB pages is reported as 4K.
 *
 * The seed fill lives in blob_fill.c, the fingerprint in blob_fingerprint.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "blob/blob_int.h"
#include "pfs/blob.h"
#include "pfs/integrity.h"
#include "pfs/log.h"

#ifndef MFD_HUGETLB
#define MFD_HUGETLB 0x0004U
#endif
#ifndef MFD_HUGE_SHIFT
#define MFD_HUGE_SHIFT 26
#endif
#define PFS_MFD_HUGE_2MB (21U << MFD_HUGE_SHIFT)
#define PFS_MFD_HUGE_1GB (30U << MFD_HUGE_SHIFT)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#ifndef HUGETLBFS_MAGIC
#define HUGETLBFS_MAGIC 0x958458f6
#endif
#define PFS_MPOL_BIND 2
#define SZ_2M (2ULL << 20)
#define SZ_1G (1ULL << 30)
/* Prefault/fill step: one 2 MiB page, small enough to stay in cache. */
#define BLOB_SETUP_CHUNK SZ_2M
#define BLOB_SETUP_THREADS 4

/* Why the last create/open on this thread failed, for result files. */
static __thread char last_error[1024];

#define blob_fail(...)                                                 \
	do {                                                           \
		snprintf(last_error, sizeof(last_error), __VA_ARGS__); \
		pfs_err("blob: %s", last_error);                       \
	} while (0)

const char *pfs_blob_last_error(void)
{
	return last_error;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

const char *pfs_page_kind_str(enum pfs_page_kind kind)
{
	switch (kind) {
	case PFS_PAGE_4K:
		return "4K";
	case PFS_PAGE_THP:
		return "THP";
	case PFS_PAGE_2M:
		return "2M";
	case PFS_PAGE_1G:
		return "1G";
	}
	return "?";
}

int pfs_page_kind_parse(const char *s, enum pfs_page_kind *kind)
{
	static const char *const names[] = { "4k", "thp", "2m", "1g" };

	for (int i = 0; i < 4; i++) {
		if (!strcasecmp(s, names[i])) {
			*kind = (enum pfs_page_kind)i;
			return 0;
		}
	}
	return -EINVAL;
}

__attribute__((format(printf, 2, 3))) static void add_reason(struct pfs_blob *b, const char *fmt,
							     ...)
{
	size_t n = strlen(b->reason);
	va_list ap;

	if (n && n < sizeof(b->reason) - 2) {
		strcpy(b->reason + n, "; ");
		n += 2;
	}
	va_start(ap, fmt);
	vsnprintf(b->reason + n, sizeof(b->reason) - n, fmt, ap);
	va_end(ap);
}

static uint64_t page_bytes(enum pfs_page_kind k)
{
	return k == PFS_PAGE_1G ? SZ_1G : SZ_2M;
}

static long read_long_file(const char *path)
{
	char buf[64];
	long v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		v = strtol(buf, NULL, 10);
	fclose(f);
	return v;
}

/* "[never]" style selection of a sysfs THP knob; "" if unreadable. */
static void read_thp_knob(const char *path, char *out, size_t n)
{
	char buf[256], *a, *e;
	FILE *f = fopen(path, "r");

	out[0] = '\0';
	if (!f)
		return;
	if (fgets(buf, sizeof(buf), f) && (a = strchr(buf, '[')) && (e = strchr(a, ']'))) {
		*e = '\0';
		snprintf(out, n, "%s", a + 1);
	}
	fclose(f);
}

static void hugetlb_pool_reason(struct pfs_blob *b, enum pfs_page_kind k, uint64_t size, int err)
{
	const char *dir = k == PFS_PAGE_1G ? "hugepages-1048576kB" : "hugepages-2048kB";
	char p1[128], p2[128];
	long nr, fr;

	snprintf(p1, sizeof(p1), "/sys/kernel/mm/hugepages/%s/nr_hugepages", dir);
	snprintf(p2, sizeof(p2), "/sys/kernel/mm/hugepages/%s/free_hugepages", dir);
	nr = read_long_file(p1);
	fr = read_long_file(p2);
	add_reason(b,
		   "hugetlb %s: %s (need %" PRIu64 " pages, %ld free of %ld reserved; "
		   "reserve them with sysctl vm.nr_hugepages or %s, or request the pod's "
		   "hugepages-%s limit)",
		   pfs_page_kind_str(k), strerror(err), size / page_bytes(k), fr, nr, p1,
		   k == PFS_PAGE_1G ? "1Gi" : "2Mi");
}

bool blob_name_ok(const char *name)
{
	size_t n = strlen(name);

	return n && n < 200 && !strchr(name, '/') && strcmp(name, ".") && strcmp(name, "..");
}

/* 0: dir is hugetlbfs with pages of @pg bytes; else -errno and why in @why. */
static int check_hugetlbfs(const char *dir, uint64_t pg, char *why, size_t n)
{
	struct statfs sfs;

	if (statfs(dir, &sfs)) {
		snprintf(why, n, "%s: %s", dir, strerror(errno));
		return -errno;
	}
	if ((uint32_t)sfs.f_type != (uint32_t)HUGETLBFS_MAGIC) {
		snprintf(why, n, "%s is not a hugetlbfs mount", dir);
		return -ENODEV;
	}
	if ((uint64_t)sfs.f_bsize != pg) {
		snprintf(why, n, "%s is hugetlbfs with %ld KiB pages, not %" PRIu64 " KiB", dir,
			 (long)sfs.f_bsize / 1024, pg / 1024);
		return -ENODEV;
	}
	return 0;
}

static bool is_hugetlbfs(const char *dir)
{
	struct statfs sfs;

	return !statfs(dir, &sfs) && (uint32_t)sfs.f_type == (uint32_t)HUGETLBFS_MAGIC;
}

/* Sum of the kernel's huge-page accounting over the VMAs of [p, p+len). */
uint64_t blob_smaps_huge_bytes(const void *p, uint64_t len)
{
	static const char *const keys[] = { "AnonHugePages:", "ShmemPmdMapped:", "FilePmdMapped:",
					    "Shared_Hugetlb:", "Private_Hugetlb:" };
	uintptr_t lo = (uintptr_t)p, hi = lo + len;
	uint64_t kb = 0;
	bool in = false;
	char line[512];
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, e;

		if (sscanf(line, "%lx-%lx ", &a, &e) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = a < hi && e > lo;
			continue;
		}
		if (!in)
			continue;
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			size_t kl = strlen(keys[i]);

			if (!strncmp(line, keys[i], kl))
				kb += strtoull(line + kl, NULL, 10);
		}
	}
	fclose(f);
	return kb * 1024;
}

/* Map one attempt at page kind @k. 0 on success, else -errno (reason added). */
static int try_map(struct pfs_blob *b, enum pfs_page_kind k, const struct pfs_blob_opts *o,
		   uint64_t size)
{
	bool huge = k == PFS_PAGE_2M || k == PFS_PAGE_1G;
	char why[256], path[512];
	const char *dir = NULL;
	int fd = -1, err;
	void *p;

	if (k == PFS_PAGE_1G && size % SZ_1G) {
		add_reason(b, "hugetlb 1G: size %" PRIu64 " is not a multiple of 1 GiB", size);
		return -EINVAL;
	}
	if (k == PFS_PAGE_THP) {
		char knob[32];

		read_thp_knob(o->name ? "/sys/kernel/mm/transparent_hugepage/shmem_enabled" :
					"/sys/kernel/mm/transparent_hugepage/enabled",
			      knob, sizeof(knob));
		if (!strcmp(knob, "never") || !strcmp(knob, "deny") || !knob[0]) {
			add_reason(b, "THP: transparent_hugepage/%s is '%s'",
				   o->name ? "shmem_enabled" : "enabled",
				   knob[0] ? knob : "absent");
			return -EOPNOTSUPP;
		}
	}

	if (o->name) {
		if (huge) {
			dir = o->dir	       ? o->dir :
			      k == PFS_PAGE_1G ? "/dev/hugepages1G" :
						 "/dev/hugepages";
			err = check_hugetlbfs(dir, page_bytes(k), why, sizeof(why));
			if (err) {
				add_reason(b, "hugetlb %s: %s", pfs_page_kind_str(k), why);
				return err;
			}
		} else {
			dir = o->dir && !is_hugetlbfs(o->dir) ? o->dir : "/dev/shm";
		}
		snprintf(path, sizeof(path), "%s/%s", dir, o->name);
		/* 0644: whoever may reach the directory may read the bytes (the
		 * CSI plugin binds a fill's directory read-only into consumer
		 * pods that run as any user); only the holder writes. */
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0) {
			err = -errno;
			add_reason(b, "%s: %s", path, strerror(errno));
			return err;
		}
	} else if (k != PFS_PAGE_THP) {
		unsigned int fl = MFD_CLOEXEC;

		if (huge)
			fl |= MFD_HUGETLB |
			      (k == PFS_PAGE_1G ? PFS_MFD_HUGE_1GB : PFS_MFD_HUGE_2MB);
		fd = memfd_create("pfs-blob", fl);
		if (fd < 0) {
			err = -errno;
			add_reason(b, "memfd_create(%s): %s", pfs_page_kind_str(k),
				   strerror(errno));
			return err;
		}
	}

	if (fd >= 0) {
		if (ftruncate(fd, size)) {
			err = -errno;
			add_reason(b, "ftruncate %" PRIu64 ": %s", size, strerror(errno));
			goto out_close;
		}
		/* hugetlb reserves the whole pool here: ENOMEM now, not SIGBUS later. */
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED) {
			err = -errno;
			if (huge)
				hugetlb_pool_reason(b, k, size, errno);
			else
				add_reason(b, "mmap %" PRIu64 " bytes: %s", size, strerror(errno));
			goto out_close;
		}
	} else {
		/* Anonymous THP: align the start to 2 MiB so every PMD can be huge. */
		uint8_t *raw = mmap(NULL, size + SZ_2M, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		uintptr_t a;

		if (raw == MAP_FAILED) {
			err = -errno;
			add_reason(b, "mmap %" PRIu64 " bytes: %s", size, strerror(errno));
			return err;
		}
		a = ((uintptr_t)raw + SZ_2M - 1) & ~(uintptr_t)(SZ_2M - 1);
		if (a > (uintptr_t)raw)
			munmap(raw, a - (uintptr_t)raw);
		if ((uintptr_t)raw + SZ_2M > a)
			munmap((void *)(a + size), (uintptr_t)raw + SZ_2M - a);
		p = (void *)a;
	}
	if (k == PFS_PAGE_THP && madvise(p, size, MADV_HUGEPAGE)) {
		err = -errno;
		add_reason(b, "THP: madvise(MADV_HUGEPAGE): %s", strerror(errno));
		munmap(p, size);
		goto out_close;
	}
	b->data = p;
	b->fd = fd;
	b->kind = k;
	if (o->name && !(b->path = strdup(path))) {
		munmap(p, size);
		err = -ENOMEM;
		goto out_close;
	}
	return 0;

out_close:
	if (fd >= 0) {
		close(fd);
		if (o->name)
			unlink(path);
	}
	return err;
}

static int prefault(struct pfs_blob *b, uint64_t off, uint64_t len)
{
	long pg = sysconf(_SC_PAGESIZE);

	if (!madvise(b->data + off, len, MADV_POPULATE_WRITE))
		return 0;
	if (errno != EINVAL) {
		blob_fail("prefault (MADV_POPULATE_WRITE) of %" PRIu64 " bytes at %" PRIu64 ": %s",
			  len, off, strerror(errno));
		return -errno;
	}
	/* Kernel < 5.14: touch one byte per page (memory is fresh, so zero). */
	for (uint64_t o = off; o < off + len; o += pg)
		((volatile uint8_t *)b->data)[o] = 0;
	return 0;
}

static void numa_bind(struct pfs_blob *b, int node)
{
	unsigned long mask[16] = { 0 };

	/* On a single-node machine binding changes nothing: skip the syscall. */
	if (node >= 0 && node < 1 && access("/sys/devices/system/node/node1", F_OK))
		return;
	if (node < 0 || node >= (int)(sizeof(mask) * 8)) {
		if (node >= 0)
			pfs_warn("blob: numa node %d out of range, not binding", node);
		return;
	}
	mask[node / 64] = 1UL << (node % 64);
	if (syscall(SYS_mbind, b->data, b->size, PFS_MPOL_BIND, mask, sizeof(mask) * 8, 0))
		pfs_warn("blob: mbind to numa node %d: %s (memory stays unbound)", node,
			 strerror(errno));
}

/*
 * Prefault and fill, fused: each worker owns a contiguous range and walks it
 * in 2 MiB steps; the kernel zeroes a step as it faults it in and the fill
 * overwrites it while it is still in cache, so memory is written back once
 * instead of twice. Workers only write their own range and their own timing
 * slots; the creating thread joins them before reading anything.
 */
struct setup_work {
	struct pfs_blob *b;
	const struct pfs_blob_opts *o;
	uint64_t lo, hi;
	double prefault_s, fill_s;
	int err;
};

static void *setup_worker(void *arg)
{
	struct setup_work *w = arg;

	for (uint64_t off = w->lo; off < w->hi; off += BLOB_SETUP_CHUNK) {
		uint64_t n = w->hi - off < BLOB_SETUP_CHUNK ? w->hi - off : BLOB_SETUP_CHUNK;
		double t0 = now_s(), t1;

		if (!w->o->no_prefault) {
			w->err = prefault(w->b, off, n);
			if (w->err)
				return NULL;
		}
		t1 = now_s();
		w->prefault_s += t1 - t0;
		if (w->o->fill == PFS_FILL_SEED)
			pfs_blob_fill_seed(w->b->data + off, off, n, w->o->seed);
		else if (w->o->fill == PFS_FILL_ZERO && w->o->no_prefault)
			memset(w->b->data + off, 0, n); /* else fresh pages are zero already */
		w->fill_s += now_s() - t1;
	}
	return NULL;
}

static int setup_pages(struct pfs_blob *b, const struct pfs_blob_opts *o)
{
	struct setup_work w[BLOB_SETUP_THREADS];
	pthread_t th[BLOB_SETUP_THREADS];
	bool started[BLOB_SETUP_THREADS] = { false };
	uint64_t chunks = (b->size + BLOB_SETUP_CHUNK - 1) / BLOB_SETUP_CHUNK;
	int nw = o->setup_threads > 0 ? o->setup_threads : 1;
	double t0 = now_s(), wall, pf = 0, fl = 0;
	int err = 0;

	if (nw > BLOB_SETUP_THREADS)
		nw = BLOB_SETUP_THREADS;
	if (b->size < 64 * SZ_2M || (uint64_t)nw > chunks)
		nw = 1;
	for (int t = 0; t < nw; t++) {
		w[t] = (struct setup_work){
			.b = b,
			.o = o,
			.lo = chunks * t / nw * BLOB_SETUP_CHUNK,
			.hi = t == nw - 1 ? b->size : chunks * (t + 1) / nw * BLOB_SETUP_CHUNK
		};
		if (t > 0 && !pthread_create(&th[t], NULL, setup_worker, &w[t]))
			started[t] = true;
	}
	setup_worker(&w[0]);
	for (int t = 1; t < nw; t++) {
		if (started[t])
			pthread_join(th[t], NULL);
		else
			setup_worker(&w[t]);
	}
	wall = now_s() - t0;
	for (int t = 0; t < nw; t++) {
		pf += w[t].prefault_s;
		fl += w[t].fill_s;
		if (w[t].err && !err)
			err = w[t].err;
	}
	/* Wall time split between the phases in proportion to thread time. */
	b->t.prefault_s += pf + fl > 0 ? wall * pf / (pf + fl) : 0;
	b->t.fill_s = pf + fl > 0 ? wall * fl / (pf + fl) : 0;
	b->t.setup_threads = nw;
	return err;
}

struct pfs_blob *pfs_blob__create(const struct pfs_blob_opts *o)
{
	struct pfs_blob_opts opts = { 0 };
	struct pfs_blob *b;
	enum pfs_page_kind k;
	uint64_t size;
	double t0, t1;
	int err = 0;

	last_error[0] = '\0';
	/* Callers built against an older, shorter struct get zero defaults. */
	if (!o || o->sz < offsetof(struct pfs_blob_opts, mlock)) {
		errno = EINVAL;
		return NULL;
	}
	memcpy(&opts, o, o->sz < sizeof(opts) ? o->sz : sizeof(opts));
	if (!opts.size || opts.size > (1ULL << 46) || opts.page > PFS_PAGE_1G ||
	    opts.fill > PFS_FILL_SEED || (opts.name && !blob_name_ok(opts.name))) {
		blob_fail("invalid options (size %" PRIu64 ", page %d, name %s)", opts.size,
			  (int)opts.page, opts.name ? opts.name : "-");
		errno = EINVAL;
		return NULL;
	}
	size = (opts.size + PFS_BLOB_ALIGN - 1) & ~(PFS_BLOB_ALIGN - 1);
	b = calloc(1, sizeof(*b));
	if (!b) {
		errno = ENOMEM;
		return NULL;
	}
	b->fd = -1;
	b->size = size;

	t0 = now_s();
	for (k = opts.page;; k--) {
		err = try_map(b, k, &opts, size);
		if (!err)
			break;
		/* A name clash or a permission problem is the caller's, not the pool's. */
		if (err == -EEXIST || err == -EACCES || err == -EPERM || opts.no_fallback ||
		    k == PFS_PAGE_4K)
			goto out_fail;
	}
	t1 = now_s();
	b->t.map_s = t1 - t0;
	if (b->reason[0])
		pfs_warn("blob: wanted %s, using %s: %s", pfs_page_kind_str(opts.page),
			 pfs_page_kind_str(k), b->reason);

	numa_bind(b, opts.numa_node);
	/* mlock faults the whole range in: its time counts as prefault. */
	t1 = now_s();
	if (opts.mlock && mlock(b->data, size)) {
		struct rlimit rl = { 0 };

		err = -errno;
		getrlimit(RLIMIT_MEMLOCK, &rl);
		blob_fail("mlock of %" PRIu64 " bytes: %s (RLIMIT_MEMLOCK is %llu bytes; "
			  "grant CAP_IPC_LOCK or raise the limit)",
			  size, strerror(-err), (unsigned long long)rl.rlim_cur);
		goto out_unmap;
	}
	b->t.prefault_s = now_s() - t1;
	err = setup_pages(b, &opts);
	if (err)
		goto out_unmap;

	b->huge_bytes = blob_smaps_huge_bytes(b->data, size);
	if (b->kind == PFS_PAGE_THP && !opts.no_prefault && b->huge_bytes == 0) {
		add_reason(b, "THP: the kernel backed the range with 4 KiB pages "
			      "(AnonHugePages 0 kB after prefault)");
		pfs_warn("blob: wanted %s, got 4K: THP was not granted",
			 pfs_page_kind_str(opts.page));
		b->kind = PFS_PAGE_4K;
	}
	pfs_debug("blob: %" PRIu64 " bytes on %s (huge %" PRIu64 "), map %.3fs prefault %.3fs "
		  "fill %.3fs",
		  size, pfs_page_kind_str(b->kind), b->huge_bytes, b->t.map_s, b->t.prefault_s,
		  b->t.fill_s);
	return b;

out_unmap:
	munmap(b->data, size);
	if (b->fd >= 0)
		close(b->fd);
	if (b->path)
		unlink(b->path);
	free(b->path);
	free(b);
	errno = -err;
	return NULL;
out_fail:
	blob_fail("cannot map %" PRIu64 " bytes on %s%s: %s", size, pfs_page_kind_str(opts.page),
		  opts.no_fallback ? " (no fallback)" : "", b->reason);
	free(b);
	errno = err == -EOPNOTSUPP || err == -ENODEV ? ENOMEM : -err;
	return NULL;
}

static struct pfs_blob *blob_map_fd(int fd, const char *path)
{
	struct pfs_blob *b;
	struct statfs sfs;
	struct stat st;
	void *p;
	int fl;

	if (fstat(fd, &st) || fstatfs(fd, &sfs))
		return NULL;
	if (!S_ISREG(st.st_mode) || st.st_size <= 0) {
		blob_fail("%s is not a blob (empty or not a regular file)", path ? path : "fd");
		errno = EINVAL;
		return NULL;
	}
	/* A blob holder may share read-only: map what the fd allows. */
	fl = fcntl(fd, F_GETFL);
	p = mmap(NULL, st.st_size,
		 fl >= 0 && (fl & O_ACCMODE) == O_RDONLY ? PROT_READ : PROT_READ | PROT_WRITE,
		 MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return NULL;
	b = calloc(1, sizeof(*b));
	if (!b || (path && !(b->path = strdup(path)))) {
		munmap(p, st.st_size);
		free(b);
		errno = ENOMEM;
		return NULL;
	}
	b->data = p;
	b->size = st.st_size;
	b->fd = fd;
	b->kind = PFS_PAGE_4K;
	if ((uint32_t)sfs.f_type == (uint32_t)HUGETLBFS_MAGIC)
		b->kind = (uint64_t)sfs.f_bsize >= SZ_1G ? PFS_PAGE_1G : PFS_PAGE_2M;
	b->huge_bytes = blob_smaps_huge_bytes(p, b->size);
	if (b->kind == PFS_PAGE_4K && b->huge_bytes)
		b->kind = PFS_PAGE_THP;
	return b;
}

struct pfs_blob *pfs_blob__from_fd(int fd)
{
	struct pfs_blob *b;
	int d;

	last_error[0] = '\0';
	d = fcntl(fd, F_DUPFD_CLOEXEC, 3);

	if (d < 0)
		return NULL;
	b = blob_map_fd(d, NULL);
	if (!b) {
		int e = errno;

		close(d);
		errno = e;
	}
	return b;
}

struct pfs_blob *pfs_blob__view(uint8_t *data, uint64_t size)
{
	struct pfs_blob *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->data = data;
	b->size = size;
	b->kind = PFS_PAGE_4K;
	b->fd = -1;
	b->view = true;
	return b;
}

static const char *const default_dirs[] = { "/dev/hugepages", "/dev/hugepages1G", "/dev/shm" };

static int find_named(const char *dir, const char *name, char *path, size_t n)
{
	if (!name || !blob_name_ok(name))
		return -EINVAL;
	if (dir) {
		snprintf(path, n, "%s/%s", dir, name);
		return 0;
	}
	for (size_t i = 0; i < sizeof(default_dirs) / sizeof(default_dirs[0]); i++) {
		snprintf(path, n, "%s/%s", default_dirs[i], name);
		if (!access(path, F_OK))
			return 0;
	}
	return -ENOENT;
}

struct pfs_blob *pfs_blob__open(const char *dir, const char *name)
{
	char path[512];
	struct pfs_blob *b;
	int fd, err;

	last_error[0] = '\0';
	err = find_named(dir, name, path, sizeof(path));
	if (err) {
		errno = -err;
		return NULL;
	}
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	b = blob_map_fd(fd, path);
	if (!b) {
		err = errno;
		close(fd);
		errno = err;
	}
	return b;
}

int pfs_blob_find(const char *dir, const char *name, char *path, size_t n)
{
	return find_named(dir, name, path, n);
}

int pfs_blob_remove(const char *dir, const char *name)
{
	char path[512];
	int err = find_named(dir, name, path, sizeof(path));

	if (err)
		return err;
	return unlink(path) ? -errno : 0;
}

void pfs_blob__close(struct pfs_blob *b)
{
	if (!b)
		return;
	if (!b->view)
		munmap(b->data, b->size);
	if (b->layout)
		blob_files_release(b);
	if (b->fd >= 0)
		close(b->fd);
	free(b->path);
	free(b);
}

uint8_t *pfs_blob__data(const struct pfs_blob *b)
{
	return b->data;
}
uint64_t pfs_blob__size(const struct pfs_blob *b)
{
	return b->size;
}
enum pfs_page_kind pfs_blob__page_kind(const struct pfs_blob *b)
{
	return b->kind;
}
const struct pfs_blob_timings *pfs_blob__timings(const struct pfs_blob *b)
{
	return &b->t;
}
int pfs_blob__fd(const struct pfs_blob *b)
{
	return b->fd;
}
const char *pfs_blob__path(const struct pfs_blob *b)
{
	return b->path;
}
uint64_t pfs_blob__huge_bytes(const struct pfs_blob *b)
{
	return b->huge_bytes;
}

const char *pfs_blob__fallback_reason(const struct pfs_blob *b)
{
	return b->reason[0] ? b->reason : NULL;
}

uint64_t pfs_blob__fingerprint(const struct pfs_blob *b)
{
	return pfs_fingerprint_mem(b->data, b->size);
}
