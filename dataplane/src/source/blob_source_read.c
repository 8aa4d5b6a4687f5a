// SPDX-License-Identifier: Apache-2.0
/*
 * The reading pipeline of `pfs blob create --source` (blob_source.h).
 *
 * Work is cut into units: each file in name order, in chunks of opts.chunk
 * bytes, smaller towards the end of the source (unit_len); an empty file is
 * one unit of 0 bytes. N reader threads take units
 * in order from one cursor under the pipeline lock; the reader that takes a
 * file's first unit opens it there (O_DIRECT when the file system accepts
 * it), so the fd exists before any other unit of the file is handed out.
 * Readers pread straight into the blob at the file's offset (no bounce
 * buffer; O_DIRECT DMA lands in the blob's pages), compute the unit's
 * CRC32C while it is hot, and mark it done under the lock (which orders
 * the bytes before the flag for the hashing thread). The reader that
 * finishes a file's last unit (an atomic count) fstat()s it against the
 * listing and closes it.
 *
 * The calling thread hashes: it waits for unit i, extends the file's
 * sha256 (OpenSSL EVP) and the total CRC32C (pfs_crc32c_combine of the
 * readers' unit CRCs), then unit i + 1: sha256 in order, overlapping the
 * reads, never a second pass. The first error stops every thread; nothing
 * is written after the files until all checks passed: then the manifest,
 * then the footer, then the manifest is decoded again as a reader would.
 */
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "source/blob_source_int.h"
#include "pfs/integrity.h"
#include "util/deadline.h"

struct unit {
	size_t file;
	uint64_t off, len; /* within the file */
	bool last; /* the file's last unit */
};

/* Shared by the readers and the hashing thread; the fields below the lock
 * are read and written under it. */
struct pipe {
	struct pfs_source *s;
	uint8_t *blob;
	struct unit *u;
	uint32_t *crc; /* per unit, written by its reader before done[i] */
	_Atomic uint64_t *landed; /* per unit of a remote source: bytes in place so far */
	size_t nu;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	size_t next; /* the next unit to hand out */
	uint8_t *done;
	int err; /* the first error, -errno */
	char why[512];
	double t_read_end; /* when the last unit finished reading */
	uint64_t buffered; /* files read without O_DIRECT */
	char direct_why[160]; /* the first reason */
};

static void set_err(struct pipe *p, int err, const char *why)
{
	pthread_mutex_lock(&p->lock);
	if (!p->err) {
		p->err = err;
		snprintf(p->why, sizeof(p->why), "%s", why);
	}
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

static const char *fs_name(int fd)
{
	struct statfs sf;

	if (fstatfs(fd, &sf))
		return "the file system";
	switch ((unsigned long)sf.f_type) {
	case 0x01021994:
		return "tmpfs";
	case 0xef53:
		return "ext4";
	case 0x58465342:
		return "xfs";
	case 0x9123683e:
		return "btrfs";
	case 0x794c7630:
		return "overlayfs";
	case 0x6969:
		return "nfs";
	case 0x65735546:
		return "fuse";
	}
	return "the file system";
}

/* Why a file is read without O_DIRECT; the first reason is kept. Under
 * the lock. */
static void no_direct(struct pipe *p, const struct src_file *f, const char *what)
{
	if (!p->buffered++)
		snprintf(p->direct_why, sizeof(p->direct_why), "'%.60s': %s", f->name, what);
}

/* Open file @f for reading and check it is the file listed. Under the
 * lock (the first unit of @f). */
static int open_file(struct pipe *p, struct src_file *f, char *why, size_t n)
{
	const int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
	struct stat st;
	int fd = -EINVAL;

	if (!p->s->o.no_direct)
		fd = src_open(p->s, f->rel, flags | O_DIRECT, why, n);
	if (fd == -EINVAL) {
		fd = src_open(p->s, f->rel, flags, why, n);
		if (fd >= 0 && !p->s->o.no_direct) {
			char what[96];

			snprintf(what, sizeof(what), "%s refused O_DIRECT (EINVAL)", fs_name(fd));
			no_direct(p, f, what);
		}
	} else if (fd >= 0) {
		f->direct = true;
	}
	if (fd < 0)
		return fd;
	if (fstat(fd, &st)) {
		close(fd);
		snprintf(why, n, "'%s': %s", f->name, strerror(errno));
		return -errno;
	}
	f->fd = fd;
	return src_same(f, &st, "between the listing and its open", why, n);
}

/* A private buffered fd of @f for a unit whose O_DIRECT read was refused;
 * still the file listed. The fd or -errno. */
static int reopen_buffered(struct pipe *p, struct src_file *f, char *why, size_t n)
{
	int fd = src_open(p->s, f->rel, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, why, n);
	struct stat st;
	int err;

	if (fd < 0)
		return fd;
	err = fstat(fd, &st) ? -errno : src_same(f, &st, "opened again without O_DIRECT", why, n);
	if (err) {
		close(fd);
		return err;
	}
	pthread_mutex_lock(&p->lock);
	no_direct(p, f, "O_DIRECT reads failed (EINVAL)");
	pthread_mutex_unlock(&p->lock);
	return fd;
}

/* pread [off, off + len) of @f into the blob; O_DIRECT reads are rounded up
 * to 4096 (the room up to the next file is the file's own) and what lies
 * past the end of the file is zeroed again. */
static int read_unit(struct pipe *p, struct src_file *f, const struct unit *u, char *why, size_t n)
{
	uint8_t *dst = p->blob + f->offset + u->off;
	uint64_t want = u->len, room = want, got = 0;
	int fd = f->fd, err = 0;

	if (f->direct)
		room = (want + PFS_MANIFEST_ALIGN - 1) & ~(PFS_MANIFEST_ALIGN - 1);
	while (got < want) {
		ssize_t r = pread(fd, dst + got, room - got, (off_t)(u->off + got));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EINVAL && fd == f->fd && f->direct) {
			fd = reopen_buffered(p, f, why, n);
			if (fd < 0)
				return fd;
			room = want;
			continue;
		}
		if (r < 0) {
			err = -errno;
			snprintf(why, n, "'%s': read at %llu: %s", f->name,
				 (unsigned long long)(u->off + got), strerror(errno));
			goto out_close;
		}
		if (!r)
			break;
		got += (uint64_t)r;
	}
	if (got < want) {
		err = -ESTALE;
		snprintf(why, n,
			 "source changed while it was read: '%s' ended at %llu of %llu bytes",
			 f->name, (unsigned long long)(u->off + got),
			 (unsigned long long)f->st.st_size);
	} else if (room > want) {
		memset(dst + want, 0, room - want);
	}
out_close:
	if (fd != f->fd)
		close(fd);
	return err;
}

/* After a file's last unit: it must still be the file listed. */
static int close_file(struct src_file *f, char *why, size_t n)
{
	struct stat st;
	int err = 0;

	if (fstat(f->fd, &st)) {
		err = -errno;
		snprintf(why, n, "'%s': %s", f->name, strerror(errno));
	} else {
		err = src_same(f, &st, "at the end of its read", why, n);
	}
	close(f->fd);
	f->fd = -1;
	return err;
}

/* Under the lock: the next unit, its file opened if it is the first; NULL
 * when there is none left or an error stopped the pipeline. */
static struct unit *take(struct pipe *p, size_t *i)
{
	struct unit *u = NULL;

	pthread_mutex_lock(&p->lock);
	if (!p->err && p->next < p->nu) {
		*i = p->next++;
		u = &p->u[*i];
		if (!u->off && !p->s->rem) {
			int err = open_file(p, &p->s->l.f[u->file], p->why, sizeof(p->why));

			if (err) {
				p->err = err;
				pthread_cond_broadcast(&p->cond);
				u = NULL;
			}
		}
	}
	pthread_mutex_unlock(&p->lock);
	return u;
}

static void *reader(void *arg)
{
	struct pipe *p = arg;
	struct src_rconn *rc = NULL;
	char why[512], why2[512];
	struct unit *u;
	size_t i;

	/* A remote source: this reader's own kept-alive connection. */
	if (p->s->rem && !(rc = src_rconn_new())) {
		set_err(p, -ENOMEM, "no memory for a connection");
		return NULL;
	}
	while ((u = take(p, &i))) {
		struct src_file *f = &p->s->l.f[u->file];
		/* An image layer's member is in place already (src_unpack). */
		int err =
			f->unpacked ? 0 :
			rc ? src_remote_read(p->s, f, u->off, u->len, p->blob + f->offset + u->off,
					     rc, &p->landed[i], why, sizeof(why)) :
			     read_unit(p, f, u, why, sizeof(why));

		if (!err)
			p->crc[i] = pfs_crc32c(0, p->blob + f->offset + u->off, u->len);
		if (atomic_fetch_sub(&f->pending, 1) == 1 && !rc) {
			int e = close_file(f, err ? why2 : why, sizeof(why));

			err = err ? err : e;
		}
		if (err) {
			set_err(p, err, why);
			break;
		}
		pthread_mutex_lock(&p->lock);
		p->done[i] = 1;
		p->t_read_end = src_now();
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
	}
	src_rconn_free(rc);
	return NULL;
}

/* The last units of the source are cut smaller, down to TAPER_MIN: a
 * unit's length is at most a 4*threads-th of what is left from its start to
 * the end of the source. Why: the readers run their units side by side, so
 * the watermark (what a relay may forward) trails the bytes read by up to
 * threads-1 units, and it catches up only when the read ends: a relay one
 * link away then still has those units to send, 3 x 8 MiB (0.2 s at 1
 * Gbit/s) after the source is read. Cut this way, each round of units is
 * about 3/4 of the one before, which a relay at the read's rate drains
 * while the next round lands, and the last trail is 3 x TAPER_MIN. A few
 * more reads (or GETs) at the end are the price. */
#define TAPER_MIN (1ULL << 20)
static uint64_t unit_len(const struct pfs_source *s, const struct src_file *f, uint64_t off,
			 uint64_t left)
{
	uint64_t len = (uint64_t)f->st.st_size - off, c = s->o.chunk,
		 t = left / (4 * (uint64_t)s->o.threads) & ~(PFS_SOURCE_CHUNK_MIN - 1);

	if (f->whole)
		return len; /* a server without ranges: the whole file in one GET */
	if (t < c)
		c = t > TAPER_MIN ? t : TAPER_MIN < c ? TAPER_MIN : c;
	return len < c ? len : c;
}

/* The units of every file, in order; @fill: store them (else count). */
static size_t walk_units(struct pipe *p, bool fill)
{
	const struct pfs_source *s = p->s;
	uint64_t left = 0;
	size_t nu = 0;

	for (size_t i = 0; i < s->l.n; i++)
		left += (uint64_t)s->l.f[i].st.st_size;
	for (size_t i = 0; i < s->l.n; i++) {
		uint64_t len = (uint64_t)s->l.f[i].st.st_size, off = 0;
		unsigned int k = 0;

		do {
			uint64_t l = unit_len(s, &s->l.f[i], off, left);

			if (fill)
				p->u[nu] = (struct unit){ .file = i, .off = off, .len = l };
			nu++;
			off += l;
			left -= l;
			k++;
		} while (off < len);
		if (fill) {
			p->u[nu - 1].last = true;
			atomic_store(&s->l.f[i].pending, k);
		}
	}
	return nu;
}

static int make_units(struct pipe *p)
{
	size_t nu = walk_units(p, false);

	p->u = calloc(nu ? nu : 1, sizeof(*p->u));
	p->crc = calloc(nu ? nu : 1, sizeof(*p->crc));
	p->done = calloc(nu ? nu : 1, 1);
	p->landed = calloc(nu ? nu : 1, sizeof(*p->landed));
	if (!p->u || !p->crc || !p->done || !p->landed)
		return -ENOMEM;
	p->nu = walk_units(p, true);
	return 0;
}

/* The watermark after unit @i: its end, or where the next file starts when
 * it is a file's last (the zero padding between files is done with it). */
static uint64_t unit_mark(const struct pipe *p, size_t i)
{
	const struct unit *u = &p->u[i];
	const struct pfs_source *s = p->s;

	if (!u->last)
		return s->l.f[u->file].offset + u->off + u->len;
	return u->file + 1 < s->l.n ? s->l.f[u->file + 1].offset : s->mani_off;
}

/* Wait for unit @i under the lock. A remote unit's bytes are final as they
 * land (src_remote_read), so meanwhile the progress hook hears every
 * LANDED_POLL_MS how far the unit has landed: a relay forwards them now
 * rather than a unit at a time. Without that, the last units, which the
 * readers finish together, reach the hook at once, and the whole chain
 * waits for that burst to cross every hop after the read. */
#define LANDED_POLL_MS 2
static void wait_unit(struct pipe *p, size_t i)
{
	uint64_t told = 0, start = p->s->l.f[p->u[i].file].offset + p->u[i].off;
	bool partial = p->s->rem && p->s->o.progress;

	while (!p->done[i] && !p->err) {
		struct timespec ts;
		uint64_t got;

		if (!partial) {
			pthread_cond_wait(&p->cond, &p->lock);
			continue;
		}
		pfs_deadline_ms(&ts, LANDED_POLL_MS);
		pthread_cond_timedwait(&p->cond, &p->lock, &ts);
		got = atomic_load_explicit(&p->landed[i], memory_order_acquire);
		if (got > told && !p->done[i]) {
			told = got;
			pthread_mutex_unlock(&p->lock);
			p->s->o.progress(p->s->o.progress_ctx, start + got);
			pthread_mutex_lock(&p->lock);
		}
	}
}

/* The hashing thread's loop: sha256 per file in order, CRC32C of all;
 * the progress hook hears of each unit as soon as it is in place. */
static void hash_units(struct pipe *p, EVP_MD_CTX *ctx, struct pfs_source_stats *st)
{
	for (size_t i = 0; i < p->nu; i++) {
		const struct unit *u = &p->u[i];
		struct src_file *f = &p->s->l.f[u->file];
		bool done;
		double t;

		pthread_mutex_lock(&p->lock);
		wait_unit(p, i);
		done = p->done[i];
		pthread_mutex_unlock(&p->lock);
		if (!done)
			return;
		if (p->s->o.progress)
			p->s->o.progress(p->s->o.progress_ctx, unit_mark(p, i));
		t = src_now();
		if (!u->off)
			EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
		EVP_DigestUpdate(ctx, p->blob + f->offset + u->off, u->len);
		if (u->last)
			EVP_DigestFinal_ex(ctx, f->sha256, NULL);
		st->sha256_s += src_now() - t;
		st->crc32c = pfs_crc32c_combine(st->crc32c, p->crc[i], u->len);
	}
}

int src_read(struct pfs_source *s, uint8_t *blob, struct pfs_source_stats *st, char *why, size_t n)
{
	struct pipe p = { .s = s, .blob = blob };
	pthread_t tid[PFS_SOURCE_THREADS_MAX];
	int nt = 0, err;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	double t0 = src_now();

	pthread_mutex_init(&p.lock, NULL);
	pfs_cond_init_monotonic(&p.cond);
	err = !ctx || make_units(&p) ? -ENOMEM : 0;
	if (err) {
		snprintf(why, n, "no memory for %zu read units", s->l.n);
		goto out_free;
	}
	p.t_read_end = t0;
	err = src_unpack(s, blob, why, n);
	if (err)
		goto out_free;
	for (; nt < s->o.threads && (size_t)nt < p.nu; nt++) {
		err = -pthread_create(&tid[nt], NULL, reader, &p);
		if (err) {
			set_err(&p, err, "cannot start a reader thread");
			break;
		}
	}
	hash_units(&p, ctx, st);
	for (int i = 0; i < nt; i++)
		pthread_join(tid[i], NULL);
	st->threads = nt;
	st->read_s = p.t_read_end - t0;
	st->o_direct = !s->rem && !s->o.no_direct && !p.buffered;
	if (s->rem)
		snprintf(st->o_direct_why, sizeof(st->o_direct_why), "a remote source");
	else if (s->o.no_direct)
		snprintf(st->o_direct_why, sizeof(st->o_direct_why), "--source-no-direct");
	else if (p.buffered)
		snprintf(st->o_direct_why, sizeof(st->o_direct_why),
			 "%llu of %zu files buffered: %.100s", (unsigned long long)p.buffered,
			 s->l.n, p.direct_why);
	err = p.err;
	if (err)
		snprintf(why, n, "%s", p.why);
out_free:
	EVP_MD_CTX_free(ctx);
	free(p.u);
	free(p.crc);
	free(p.done);
	free(p.landed);
	pthread_cond_destroy(&p.cond);
	pthread_mutex_destroy(&p.lock);
	return err;
}
