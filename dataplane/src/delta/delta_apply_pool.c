// SPDX-License-Identifier: Apache-2.0
/*
 * The delta receiver's appliers (delta_int.h, struct pfs_delta_apply_pool):
 * grams that the reading thread decoded are applied by `threads` workers,
 * each with its own applier, in any order. Grams write disjoint target
 * ranges (the decoder checked each one starts after the previous one ends)
 * and read only the base, so no two workers touch the same byte.
 *
 * A fixed set of 2 x threads jobs circulates: the reader takes a free one
 * (waiting while all are in flight: the appliers bound it then), fills it,
 * submits it; a worker applies it and gives it back. The first apply error
 * stops the pool; the reader sees it at its next take or at the drain.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "delta_int.h"

struct pfs_delta_apply_pool {
	const uint8_t *base;
	uint8_t *target;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct pfs_delta_apply_job *jobs;
	struct pfs_delta_apply_job **free_, **ready; /* stacks of jobs */
	int nfree, nready, njobs, busy; /* busy: jobs taken by workers */
	int err; /* the first apply error */
	uint64_t err_seq;
	bool stop;
	pthread_t th[PFS_DELTA_APPLY_THREADS_MAX];
	int nth;
	double busy_s;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
	struct pfs_delta_apply_pool *p = arg;
	struct pfs_delta_apply *ap = pfs_delta_apply__new();
	double busy = 0;

	pthread_mutex_lock(&p->mu);
	if (!ap && !p->err)
		p->err = -ENOMEM;
	for (;;) {
		struct pfs_delta_apply_job *j;
		double t0;
		int err;

		while (!p->stop && !p->err && !p->nready)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->stop || p->err)
			break;
		j = p->ready[--p->nready];
		p->busy++;
		pthread_mutex_unlock(&p->mu);
		t0 = now();
		err = pfs_delta_apply__ops(ap, j->ops, j->n, j->payload, p->base, p->target);
		busy += now() - t0;
		pthread_mutex_lock(&p->mu);
		p->busy--;
		if (err && !p->err) {
			p->err = err;
			p->err_seq = j->seq;
		}
		p->free_[p->nfree++] = j;
		pthread_cond_broadcast(&p->cv);
	}
	p->busy_s += busy;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pfs_delta_apply__free(ap);
	return NULL;
}

struct pfs_delta_apply_pool *pfs_delta_apply_pool__new(int threads, const uint8_t *base,
						       uint8_t *target)
{
	struct pfs_delta_apply_pool *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	threads = threads < 1				? 1 :
		  threads > PFS_DELTA_APPLY_THREADS_MAX ? PFS_DELTA_APPLY_THREADS_MAX :
							  threads;
	p->base = base;
	p->target = target;
	p->njobs = 2 * threads;
	p->jobs = calloc((size_t)p->njobs, sizeof(*p->jobs));
	p->free_ = calloc((size_t)p->njobs, sizeof(*p->free_));
	p->ready = calloc((size_t)p->njobs, sizeof(*p->ready));
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	if (!p->jobs || !p->free_ || !p->ready) {
		pfs_delta_apply_pool__free(p, NULL, NULL);
		return NULL;
	}
	for (int i = 0; i < p->njobs; i++)
		p->free_[p->nfree++] = &p->jobs[i];
	for (int i = 0; i < threads; i++)
		if (!pthread_create(&p->th[p->nth], NULL, worker, p))
			p->nth++;
	if (!p->nth) {
		pfs_delta_apply_pool__free(p, NULL, NULL);
		return NULL;
	}
	return p;
}

int pfs_delta_apply_pool__threads(const struct pfs_delta_apply_pool *p)
{
	return p->nth;
}

struct pfs_delta_apply_job *pfs_delta_apply_pool__take(struct pfs_delta_apply_pool *p,
						       double *wait_s, int *err, uint64_t *err_seq)
{
	struct pfs_delta_apply_job *j = NULL;
	double t0 = now();

	pthread_mutex_lock(&p->mu);
	while (!p->err && !p->nfree)
		pthread_cond_wait(&p->cv, &p->mu);
	if (!p->err)
		j = p->free_[--p->nfree];
	*err = p->err;
	*err_seq = p->err_seq;
	pthread_mutex_unlock(&p->mu);
	*wait_s += now() - t0;
	return j;
}

void pfs_delta_apply_pool__give_back(struct pfs_delta_apply_pool *p, struct pfs_delta_apply_job *j)
{
	pthread_mutex_lock(&p->mu);
	p->free_[p->nfree++] = j;
	pthread_mutex_unlock(&p->mu);
}

void pfs_delta_apply_pool__submit(struct pfs_delta_apply_pool *p, struct pfs_delta_apply_job *j)
{
	pthread_mutex_lock(&p->mu);
	p->ready[p->nready++] = j;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

int pfs_delta_apply_pool__drain(struct pfs_delta_apply_pool *p, double *wait_s, uint64_t *err_seq)
{
	double t0 = now();
	int err;

	pthread_mutex_lock(&p->mu);
	while (!p->err && (p->nready || p->busy))
		pthread_cond_wait(&p->cv, &p->mu);
	err = p->err;
	*err_seq = p->err_seq;
	pthread_mutex_unlock(&p->mu);
	*wait_s += now() - t0;
	return err;
}

void pfs_delta_apply_pool__free(struct pfs_delta_apply_pool *p, double *busy_s, int *threads)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->nth; i++)
		pthread_join(p->th[i], NULL);
	if (busy_s)
		*busy_s = p->busy_s;
	if (threads)
		*threads = p->nth;
	for (int i = 0; p->jobs && i < p->njobs; i++) {
		free(p->jobs[i].buf);
		free(p->jobs[i].ops);
	}
	free(p->jobs);
	free(p->free_);
	free(p->ready);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}
