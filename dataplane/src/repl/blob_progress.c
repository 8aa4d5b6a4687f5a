// SPDX-License-Identifier: Apache-2.0
/*
 * The watermark of a blob being filled (blob_repl.h, pfs_progress). One
 * writer advances it (the source loader's hashing thread, or the fetch
 * client); any number of server connection threads read it and wait on it.
 *
 * mark is an atomic so readers that only look (pfs_progress__mark) take no
 * lock: the writer's release store orders the blob bytes below the new mark
 * before it, the reader's acquire load orders its reads of those bytes
 * after it. Waiters sleep on cond under lock; the writer takes the lock
 * only to broadcast, so a waiter that checked the mark under the lock
 * cannot miss the wake-up. failed and msg are written once, under lock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pfs/blob_repl.h"
#include "util/deadline.h"

struct pfs_progress {
	_Atomic uint64_t mark;
	uint64_t size;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC */
	bool failed; /* under lock */
	char msg[PFS_REPL_MSG_MAX + 1];
};

struct pfs_progress *pfs_progress__new(uint64_t size)
{
	struct pfs_progress *p = calloc(1, sizeof(*p));

	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	p->size = size;
	pthread_mutex_init(&p->lock, NULL);
	pfs_cond_init_monotonic(&p->cond);
	return p;
}

void pfs_progress__free(struct pfs_progress *p)
{
	if (!p)
		return;
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

void pfs_progress__advance(struct pfs_progress *p, uint64_t mark)
{
	if (mark > p->size)
		mark = p->size;
	pthread_mutex_lock(&p->lock);
	/* release: the bytes below @mark are visible before the mark is. */
	if (mark > atomic_load_explicit(&p->mark, memory_order_relaxed))
		atomic_store_explicit(&p->mark, mark, memory_order_release);
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

void pfs_progress_hook(void *ctx, uint64_t mark)
{
	pfs_progress__advance(ctx, mark);
}

void pfs_progress__fail(struct pfs_progress *p, const char *msg)
{
	pthread_mutex_lock(&p->lock);
	if (!p->failed) {
		p->failed = true;
		snprintf(p->msg, sizeof(p->msg), "%s", msg && *msg ? msg : "fill failed");
	}
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

uint64_t pfs_progress__mark(const struct pfs_progress *p)
{
	/* acquire: pairs with the release in pfs_progress__advance. */
	return atomic_load_explicit(&((struct pfs_progress *)p)->mark, memory_order_acquire);
}

uint64_t pfs_progress__size(const struct pfs_progress *p)
{
	return p->size;
}

int pfs_progress__wait(struct pfs_progress *p, uint64_t have, int timeout_ms, uint64_t *mark,
		       char *msg, size_t n)
{
	struct timespec ts;
	int err = 0;

	pfs_deadline_ms(&ts, timeout_ms);
	pthread_mutex_lock(&p->lock);
	while (!p->failed && pfs_progress__mark(p) <= have && err != ETIMEDOUT)
		err = pthread_cond_timedwait(&p->cond, &p->lock, &ts);
	*mark = pfs_progress__mark(p);
	if (p->failed) {
		snprintf(msg, n, "%s", p->msg);
		err = -ECANCELED;
	} else {
		err = *mark > have ? 0 : -ETIMEDOUT;
	}
	pthread_mutex_unlock(&p->lock);
	return err;
}
