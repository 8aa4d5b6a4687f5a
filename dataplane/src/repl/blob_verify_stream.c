// SPDX-License-Identifier: Apache-2.0
/*
 * The sha256 of every file of a relay's blob, computed while the bytes
 * arrive (pfs_verify_stream, blob_repl.h). A relay used to hash its whole
 * copy after the last byte: one serial pass that every node paid at the
 * end, and the last node's pass was the tail of the fan-out's time. Here
 * workers follow the blob's watermark (pfs_progress: bytes below it are
 * final, the same promise the relay's own server relies on when it sends
 * them downstream), so after the last byte only what the hashers had not
 * reached yet is left.
 *
 * sha256 of one file is serial, so the unit of parallel work is a file:
 * each worker takes the next file in offset order (an atomic index) and
 * hashes it slice by slice as far as the watermark allows. A model of many
 * files verifies on several cores; one big file on one (the chunk digests
 * of docs/design/fanout.md are what lifts that). OpenSSL's EVP sha256 (SHA
 * extensions where the CPU has them).
 */
#include <errno.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pfs/blob_manifest.h"
#include "pfs/blob_repl.h"
#include "pfs/blob_source.h"

#define SLICE (4u << 20) /* bytes hashed between two looks at the watermark */
#define WAIT_MS 200 /* how long a worker sleeps before it checks for a stop */

struct pfs_verify_stream {
	const uint8_t *blob;
	struct pfs_progress *prog;
	uint32_t n;
	uint64_t *off, *len;
	uint8_t (*sha)[32];
	_Atomic uint32_t next; /* the next file a worker takes */
	_Atomic bool stop;
	_Atomic int err; /* the first worker's failure, 0 */
	_Atomic uint64_t busy_ns; /* time spent hashing, all workers */
	_Atomic uint32_t hashed; /* files whose digest is final */
	unsigned nthreads;
	pthread_t *tid;
	char msg[PFS_REPL_MSG_MAX + 1]; /* the fill's failure, as the watermark said it */
	pthread_mutex_t lock; /* msg */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void fail(struct pfs_verify_stream *v, int err, const char *msg)
{
	int zero = 0;

	if (atomic_compare_exchange_strong(&v->err, &zero, err)) {
		pthread_mutex_lock(&v->lock);
		snprintf(v->msg, sizeof(v->msg), "%s", msg);
		pthread_mutex_unlock(&v->lock);
	}
	atomic_store(&v->stop, true);
}

/* Bytes [pos, ...) of the blob are final up to the returned mark (> pos),
 * or 0 after a stop or a failed fill. */
static uint64_t wait_past(struct pfs_verify_stream *v, uint64_t pos)
{
	char msg[PFS_REPL_MSG_MAX + 1];
	uint64_t mark = pfs_progress__mark(v->prog);

	while (mark <= pos && !atomic_load(&v->stop)) {
		int err = pfs_progress__wait(v->prog, pos, WAIT_MS, &mark, msg, sizeof(msg));

		if (err == -ECANCELED) {
			fail(v, -ECANCELED, msg);
			return 0;
		}
	}
	return atomic_load(&v->stop) ? 0 : mark;
}

/* One file: slices of it as the watermark passes them. */
static int hash_file(struct pfs_verify_stream *v, EVP_MD_CTX *ctx, uint32_t i)
{
	uint64_t pos = v->off[i], end = v->off[i] + v->len[i];
	unsigned int len = 0;

	if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
		return -EIO;
	while (pos < end) {
		uint64_t mark = wait_past(v, pos), stop, t0;

		if (!mark)
			return -ECANCELED;
		stop = mark < end ? mark : end;
		if (stop - pos > SLICE)
			stop = pos + SLICE;
		t0 = now_ns();
		if (EVP_DigestUpdate(ctx, v->blob + pos, stop - pos) != 1)
			return -EIO;
		atomic_fetch_add(&v->busy_ns, now_ns() - t0);
		pos = stop;
	}
	return EVP_DigestFinal_ex(ctx, v->sha[i], &len) == 1 && len == 32 ? 0 : -EIO;
}

static void *worker(void *arg)
{
	struct pfs_verify_stream *v = arg;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	if (!ctx) {
		fail(v, -ENOMEM, "no memory for a sha256 context");
		return NULL;
	}
	while (!atomic_load(&v->stop)) {
		uint32_t i = atomic_fetch_add(&v->next, 1);
		int err;

		if (i >= v->n)
			break;
		err = hash_file(v, ctx, i);
		if (!err)
			atomic_fetch_add(&v->hashed, 1);
		if (err == -EIO)
			fail(v, err, "sha256 failed");
		if (err)
			break;
	}
	EVP_MD_CTX_free(ctx);
	return NULL;
}

static void join(struct pfs_verify_stream *v)
{
	for (unsigned t = 0; t < v->nthreads; t++)
		pthread_join(v->tid[t], NULL);
	v->nthreads = 0;
}

uint32_t pfs_verify_stream__hashed(struct pfs_verify_stream *v)
{
	return atomic_load(&v->hashed);
}

void pfs_verify_stream__free(struct pfs_verify_stream *v)
{
	if (!v)
		return;
	atomic_store(&v->stop, true);
	join(v);
	pthread_mutex_destroy(&v->lock);
	free(v->tid);
	free(v->off);
	free(v->len);
	free(v->sha);
	free(v);
}

struct pfs_verify_stream *pfs_verify_stream__start(const uint8_t *blob,
						   const struct pfs_blob_layout *l,
						   struct pfs_progress *p, unsigned threads)
{
	struct pfs_verify_stream *v = calloc(1, sizeof(*v));
	uint32_t n = l->n;

	if (!v)
		return NULL;
	pthread_mutex_init(&v->lock, NULL);
	v->blob = blob;
	v->prog = p;
	v->n = n;
	if (!threads)
		threads = 1;
	if (threads > n)
		threads = n ? n : 1;
	v->off = calloc(n ? n : 1, sizeof(*v->off));
	v->len = calloc(n ? n : 1, sizeof(*v->len));
	v->sha = calloc(n ? n : 1, sizeof(*v->sha));
	v->tid = calloc(threads, sizeof(*v->tid));
	if (!v->off || !v->len || !v->sha || !v->tid)
		goto fail;
	for (uint32_t i = 0; i < n; i++) {
		v->off[i] = l->ent[i].offset;
		v->len[i] = l->ent[i].length;
	}
	for (unsigned t = 0; t < threads; t++) {
		if (pthread_create(&v->tid[t], NULL, worker, v))
			goto fail;
		v->nthreads++;
	}
	return v;
fail:
	pfs_verify_stream__free(v);
	errno = ENOMEM;
	return NULL;
}

int pfs_verify_stream__finish(struct pfs_verify_stream *v, const struct pfs_manifest *m,
			      uint64_t size, struct pfs_verify_stream_stats *st, char *why,
			      size_t n)
{
	int err;

	join(v);
	if (st)
		*st = (struct pfs_verify_stream_stats){ .busy_s = (double)atomic_load(&v->busy_ns) /
								  1e9 };
	err = atomic_load(&v->err);
	if (err) {
		snprintf(why, n, "%s", v->msg);
		return err;
	}
	/* What was hashed is the layout the upstream sent first; the manifest
	 * that arrived last must name the same extents, or the digests would
	 * be of other bytes than the ones it vouches for. */
	if (m->nfiles != v->n) {
		snprintf(why, n, "the manifest lists %zu files, the layout sent first %u",
			 m->nfiles, v->n);
		return -EBADMSG;
	}
	for (uint32_t i = 0; i < v->n; i++) {
		if (m->files[i].offset != v->off[i] || m->files[i].length != v->len[i]) {
			snprintf(why, n,
				 "'%s': the manifest puts it at %llu+%llu, the layout "
				 "sent first at %llu+%llu",
				 m->files[i].name, (unsigned long long)m->files[i].offset,
				 (unsigned long long)m->files[i].length,
				 (unsigned long long)v->off[i], (unsigned long long)v->len[i]);
			return -EBADMSG;
		}
	}
	return pfs_manifest_check_digests(m, size, (const uint8_t(*)[32])v->sha, why, n);
}
