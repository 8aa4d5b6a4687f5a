// SPDX-License-Identifier: Apache-2.0
/*
 * Chunk digests of a blob (pfs/blob_chunks.h). The hash workers share one
 * atomic index: each takes the next chunk, waits until the watermark has
 * passed its end, hashes it and publishes the digest, so chunks verify on
 * every worker whatever the files are. The list is written by one thread
 * (the fetch receiving DIGESTS frames, or the origin once it hashed all)
 * and read by server connections once complete; its state is under lock
 * and waited on with a condition.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <blake3.h>

#include "pfs/blob_chunks.h"
#include "pfs/blob_repl.h"
#include "pfs/integrity.h"
#include "util/deadline.h"
#include "wire/wire_le.h"

#define WAIT_MS 200 /* how long a worker sleeps before it looks for a stop */
#define FILE_MAGIC "PFSCHNK1"
#define FILE_HDR 32 /* magic, le64 size, le32 chunk size, le32 count, le32 crc, 4 zero */

/* Not in blake3.h, exported by the library: the lanes its dispatch uses. */
size_t blake3_simd_degree(void);

enum list_state { LIST_PARTIAL, LIST_DONE, LIST_NONE };

struct pfs_chunks {
	uint64_t size;
	uint32_t count;
	uint8_t (*hash)[PFS_CHUNK_DIGEST];
	uint8_t (*list)[PFS_CHUNK_DIGEST];
	/* hashing */
	const uint8_t *blob;
	struct pfs_progress *prog;
	_Atomic uint32_t next; /* the next chunk a worker takes */
	_Atomic uint32_t hashed;
	_Atomic uint32_t verified, failed;
	_Atomic uint64_t busy_ns;
	_Atomic bool stop;
	_Atomic int err; /* the fill failed: -ECANCELED */
	char msg[PFS_REPL_MSG_MAX + 1]; /* its message, under lock */
	pthread_t *tid;
	unsigned nthreads, started;
	/* the list */
	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC */
	enum list_state state; /* under lock */
	uint32_t got; /* digests of the list received, under lock */
};

const char *pfs_blake3_impl(void)
{
	switch (blake3_simd_degree()) {
	case 16:
		return "avx512";
	case 8:
		return "avx2";
	case 4:
		return "sse41";
	default:
		return "portable";
	}
}

uint64_t pfs_chunks__off(uint32_t i)
{
	return (uint64_t)i * PFS_CHUNK_SIZE;
}

uint64_t pfs_chunks__len(const struct pfs_chunks *c, uint32_t i)
{
	uint64_t off = pfs_chunks__off(i);

	return c->size - off < PFS_CHUNK_SIZE ? c->size - off : PFS_CHUNK_SIZE;
}

uint32_t pfs_chunks__count(const struct pfs_chunks *c)
{
	return c->count;
}

uint64_t pfs_chunks__size(const struct pfs_chunks *c)
{
	return c->size;
}

struct pfs_chunks *pfs_chunks__new(uint64_t size)
{
	uint64_t count = (size + PFS_CHUNK_SIZE - 1) / PFS_CHUNK_SIZE;
	struct pfs_chunks *c;

	if (!size || count > PFS_CHUNK_MAX) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->size = size;
	c->count = (uint32_t)count;
	c->hash = calloc(count, PFS_CHUNK_DIGEST);
	c->list = calloc(count, PFS_CHUNK_DIGEST);
	if (!c->hash || !c->list) {
		free(c->hash);
		free(c->list);
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	pfs_cond_init_monotonic(&c->cond);
	return c;
}

static void join(struct pfs_chunks *c)
{
	for (unsigned t = 0; t < c->nthreads; t++)
		pthread_join(c->tid[t], NULL);
	c->nthreads = 0;
}

void pfs_chunks__free(struct pfs_chunks *c)
{
	if (!c)
		return;
	atomic_store(&c->stop, true);
	join(c);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	free(c->tid);
	free(c->hash);
	free(c->list);
	free(c);
}

/* The calling thread's CPU time: hashing is counted as the CPU it took,
 * not the wall time a preempted hasher spent (on a busy node the two
 * differ, and the relay's CPU per GiB is split by it). */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void hash_one(struct pfs_chunks *c, uint32_t i)
{
	blake3_hasher h;
	uint64_t t0 = thread_cpu_ns();

	blake3_hasher_init(&h);
	blake3_hasher_update(&h, c->blob + pfs_chunks__off(i), pfs_chunks__len(c, i));
	blake3_hasher_finalize(&h, c->hash[i], PFS_CHUNK_DIGEST);
	atomic_fetch_add(&c->busy_ns, thread_cpu_ns() - t0);
}

/* Wait until bytes [0, @end) are final: true, or false after a stop or a
 * failed fill (recorded in c->err and c->msg). */
static bool wait_until(struct pfs_chunks *c, uint64_t end)
{
	char msg[PFS_REPL_MSG_MAX + 1];
	uint64_t mark;

	if (!c->prog)
		return true;
	mark = pfs_progress__mark(c->prog);
	while (mark < end && !atomic_load(&c->stop)) {
		int err = pfs_progress__wait(c->prog, mark, WAIT_MS, &mark, msg, sizeof(msg));

		if (err == -ECANCELED) {
			int zero = 0;

			pthread_mutex_lock(&c->lock);
			if (atomic_compare_exchange_strong(&c->err, &zero, -ECANCELED))
				snprintf(c->msg, sizeof(c->msg), "%s", msg);
			pthread_mutex_unlock(&c->lock);
			atomic_store(&c->stop, true);
			return false;
		}
	}
	return mark >= end && !atomic_load(&c->stop);
}

static void *worker(void *arg)
{
	struct pfs_chunks *c = arg;

	for (;;) {
		uint32_t i = atomic_fetch_add(&c->next, 1);

		if (i >= c->count || !wait_until(c, pfs_chunks__off(i) + pfs_chunks__len(c, i)))
			break;
		hash_one(c, i);
		atomic_fetch_add_explicit(&c->hashed, 1, memory_order_release);
	}
	return NULL;
}

int pfs_chunks__hash_start(struct pfs_chunks *c, const uint8_t *blob, struct pfs_progress *p,
			   unsigned threads)
{
	if (c->started)
		return -EALREADY;
	if (!threads)
		threads = 1;
	if (threads > c->count)
		threads = c->count;
	c->tid = calloc(threads, sizeof(*c->tid));
	if (!c->tid)
		return -ENOMEM;
	c->blob = blob;
	c->prog = p;
	c->started = threads;
	for (unsigned t = 0; t < threads; t++) {
		if (pthread_create(&c->tid[t], NULL, worker, c))
			break;
		c->nthreads++;
	}
	if (!c->nthreads) {
		c->started = 0;
		return -ENOMEM;
	}
	return 0;
}

int pfs_chunks__hash_wait(struct pfs_chunks *c, char *why, size_t n)
{
	int err;

	join(c);
	err = atomic_load(&c->err);
	if (err) {
		pthread_mutex_lock(&c->lock);
		snprintf(why, n, "%s", c->msg);
		pthread_mutex_unlock(&c->lock);
		return err;
	}
	if (atomic_load(&c->hashed) != c->count) {
		snprintf(why, n, "stopped before every chunk was hashed");
		return -ECANCELED;
	}
	return 0;
}

void pfs_chunks__rehash(struct pfs_chunks *c, uint32_t from, uint32_t to)
{
	for (uint32_t i = from; i < to && i < c->count; i++)
		hash_one(c, i);
}

void pfs_chunks__stats(const struct pfs_chunks *c, struct pfs_chunks_stats *st)
{
	struct pfs_chunks *m = (struct pfs_chunks *)c;

	*st = (struct pfs_chunks_stats){ .count = c->count,
					 .hashed = atomic_load(&m->hashed),
					 .verified = atomic_load(&m->verified),
					 .failed = atomic_load(&m->failed),
					 .busy_s = (double)atomic_load(&m->busy_ns) / 1e9,
					 .threads = c->started,
					 .impl = pfs_blake3_impl() };
}

/* Under lock: the list's state changed, wake the waiters. */
static void set_state(struct pfs_chunks *c, enum list_state s)
{
	c->state = s;
	pthread_cond_broadcast(&c->cond);
}

int pfs_chunks__list_put(struct pfs_chunks *c, uint32_t first, const uint8_t *d, uint32_t n)
{
	int err = 0;

	pthread_mutex_lock(&c->lock);
	if (c->state != LIST_PARTIAL || first != c->got || n > c->count - c->got) {
		err = -EPROTO;
	} else {
		memcpy(c->list[first], d, (size_t)n * PFS_CHUNK_DIGEST);
		c->got += n;
		if (c->got == c->count)
			set_state(c, LIST_DONE);
	}
	pthread_mutex_unlock(&c->lock);
	return err;
}

void pfs_chunks__list_reset(struct pfs_chunks *c)
{
	pthread_mutex_lock(&c->lock);
	if (c->state == LIST_PARTIAL)
		c->got = 0;
	pthread_mutex_unlock(&c->lock);
}

void pfs_chunks__list_from_hashes(struct pfs_chunks *c)
{
	pthread_mutex_lock(&c->lock);
	memcpy(c->list, c->hash, (size_t)c->count * PFS_CHUNK_DIGEST);
	c->got = c->count;
	set_state(c, LIST_DONE);
	pthread_mutex_unlock(&c->lock);
}

void pfs_chunks__list_none(struct pfs_chunks *c)
{
	pthread_mutex_lock(&c->lock);
	if (c->state == LIST_PARTIAL)
		set_state(c, LIST_NONE);
	pthread_mutex_unlock(&c->lock);
}

bool pfs_chunks__list_done(const struct pfs_chunks *c)
{
	struct pfs_chunks *m = (struct pfs_chunks *)c;
	bool done;

	pthread_mutex_lock(&m->lock);
	done = m->state == LIST_DONE;
	pthread_mutex_unlock(&m->lock);
	return done;
}

int pfs_chunks__list_wait(struct pfs_chunks *c, int timeout_ms)
{
	struct timespec ts;
	int err = 0;

	pfs_deadline_ms(&ts, timeout_ms);
	pthread_mutex_lock(&c->lock);
	while (c->state == LIST_PARTIAL && err != ETIMEDOUT)
		err = pthread_cond_timedwait(&c->cond, &c->lock, &ts);
	err = c->state == LIST_DONE ? 0 : c->state == LIST_NONE ? -ENOENT : -ETIMEDOUT;
	pthread_mutex_unlock(&c->lock);
	return err;
}

const uint8_t *pfs_chunks__list(const struct pfs_chunks *c)
{
	return pfs_chunks__list_done(c) ? c->list[0] : NULL;
}

void pfs_chunks__root(const struct pfs_chunks *c, uint8_t out[PFS_CHUNK_DIGEST])
{
	blake3_hasher h;
	uint8_t le[8];

	put64(le, c->size);
	blake3_hasher_init(&h);
	blake3_hasher_update(&h, le, sizeof(le));
	blake3_hasher_update(&h, c->list, (size_t)c->count * PFS_CHUNK_DIGEST);
	blake3_hasher_finalize(&h, out, PFS_CHUNK_DIGEST);
}

uint32_t pfs_chunks__compare(struct pfs_chunks *c, uint32_t from, uint32_t *bad, uint32_t max)
{
	uint32_t nbad = 0, first = c->count;

	for (uint32_t i = from; i < c->count; i++) {
		if (!memcmp(c->hash[i], c->list[i], PFS_CHUNK_DIGEST))
			continue;
		atomic_fetch_add(&c->failed, 1);
		if (!nbad)
			first = i;
		if (nbad < max)
			bad[nbad] = i;
		nbad++;
	}
	/* Verified: every chunk before the first that failed (those before
	 * @from were by an earlier call). */
	atomic_store(&c->verified, first);
	return nbad;
}

/* What @name in @dirfd is: 1 a list (a regular file of this user's that
 * starts with the magic, or is empty: a save that died before its header),
 * 0 something else, -errno (-ENOENT: nothing). A blob may be named like a
 * list, and nothing but a list is ever replaced or removed as one. */
static int is_list(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), ret = 0;
	char magic[8];
	struct stat st;
	ssize_t n;

	if (fd < 0)
		return errno == ELOOP ? 0 : -errno;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_uid == geteuid()) {
		n = read(fd, magic, sizeof(magic));
		ret = n == 0 || (n == (ssize_t)sizeof(magic) && !memcmp(magic, FILE_MAGIC, 8));
	}
	close(fd);
	return ret;
}

int pfs_chunks__unlink(int dirfd, const char *name)
{
	int r = is_list(dirfd, name);

	if (r < 0)
		return r;
	if (!r)
		return -EEXIST;
	return unlinkat(dirfd, name, 0) ? -errno : 0;
}

int pfs_chunks__save(const struct pfs_chunks *c, int dirfd, const char *name)
{
	size_t body = (size_t)c->count * PFS_CHUNK_DIGEST;
	uint8_t hdr[FILE_HDR] = { 0 };
	char tmp[256];
	int fd, err = 0;

	if (!pfs_chunks__list_done(c))
		return -EINVAL;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", name) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	/* Never over something that is not a list (a blob of that name). */
	err = is_list(dirfd, name);
	if (!err)
		return -EEXIST;
	if (err < 0 && err != -ENOENT)
		return err;
	err = pfs_chunks__unlink(dirfd, tmp); /* a save that died */
	if (err && err != -ENOENT)
		return err;
	err = 0;
	memcpy(hdr, FILE_MAGIC, 8);
	put64(hdr + 8, c->size);
	put32(hdr + 16, PFS_CHUNK_SIZE);
	put32(hdr + 20, c->count);
	put32(hdr + 24, pfs_crc32c(pfs_crc32c(0, hdr, 24), c->list, body));
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
	if (fd < 0)
		return -errno;
	if (write(fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr) ||
	    write(fd, c->list, body) != (ssize_t)body)
		err = errno ? -errno : -EIO;
	if (close(fd) && !err)
		err = -errno;
	if (!err && renameat(dirfd, tmp, dirfd, name))
		err = -errno;
	if (err)
		unlinkat(dirfd, tmp, 0);
	return err;
}

struct pfs_chunks *pfs_chunks__load(int dirfd, const char *name, uint64_t size)
{
	uint8_t hdr[FILE_HDR];
	struct pfs_chunks *c = NULL;
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), err = EBADMSG;
	struct stat st;
	size_t body;

	if (fd < 0)
		return NULL;
	/* Only a file of this user's: in a shared directory (/dev/shm) another
	 * user could leave one of the name. */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		err = EPERM;
		goto out;
	}
	if (read(fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr) || memcmp(hdr, FILE_MAGIC, 8) ||
	    get64(hdr + 8) != size || get32(hdr + 16) != PFS_CHUNK_SIZE)
		goto out;
	c = pfs_chunks__new(size);
	if (!c) {
		err = errno;
		goto out;
	}
	body = (size_t)c->count * PFS_CHUNK_DIGEST;
	if (get32(hdr + 20) != c->count || read(fd, c->list, body) != (ssize_t)body ||
	    get32(hdr + 24) != pfs_crc32c(pfs_crc32c(0, hdr, 24), c->list, body)) {
		pfs_chunks__free(c);
		c = NULL;
		goto out;
	}
	c->got = c->count;
	c->state = LIST_DONE;
	err = 0;
out:
	close(fd);
	if (err)
		errno = err;
	return c;
}
