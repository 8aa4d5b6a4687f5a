// SPDX-License-Identifier: Apache-2.0
/*
 * The baseline pcores are measured against: the best plain-threads version
 * of the same op we know how to write. Same op, same range and descriptor
 * schedule, same thread count pinned to the same CPUs, same vector kernels;
 * no rings, no producer, no per-frame results.
 *
 * Threads: one per pcore; thread t takes one contiguous share of the
 * descriptors (static partition, like an OpenMP static schedule) and walks
 * it pass after pass with no barrier between passes. Because the share is
 * contiguous, xor/add/counteq/crc32c run as a few long kernel calls over
 * the whole span (16 MiB pieces, only so a stop request is seen quickly);
 * fnv hashes each descriptor (that is the op's definition) with the same
 * interleaved multi-stream kernel, in batches of 256.
 *
 * Results: each thread keeps its first pass's value (fnv: its hashes in a
 * shared array, disjoint per thread) and checks later passes against it;
 * the control thread combines the shares in order after the join, inside
 * the timed interval.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pfs/integrity.h"
#include "pfs/log.h"
#include "pfs/pcore.h"

#define PIECE (16u << 20)
#define FNV_BATCH 256

struct bl;

struct bthread {
	_Alignas(PFS_CACHELINE) struct bl *bl;
	unsigned id;
	int cpu;
	pthread_t th;
	uint64_t d_begin, d_end; /* descriptor share */
	uint64_t span_off, span_len;
	uint64_t bytes, passes;
	uint64_t first; /* first pass's value */
	bool agree;
	bool stopped;
	uint64_t *scratch; /* fnv hashes of later passes */
	double cpu_s;
};

struct bl {
	const struct pfs_pcore_opts *o;
	const struct pfs_ops_kernels *k;
	uint8_t *base;
	uint64_t *hashes; /* fnv: first pass, one per descriptor */
	struct bthread *t;
	double deadline;
	atomic_uint ready;
	atomic_int go;
	atomic_int pin_err;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline bool stop_requested(const struct bl *bl)
{
	return bl->o->stop && atomic_load_explicit(bl->o->stop, memory_order_relaxed);
}

/* One pass over the thread's span; returns false if stopped part-way. */
static bool span_pass(struct bthread *t, uint64_t *value)
{
	struct bl *bl = t->bl;
	const struct pfs_ops_kernels *k = bl->k;
	uint8_t imm = bl->o->imm;
	uint64_t v = 0;
	uint32_t crc = 0;

	for (uint64_t done = 0; done < t->span_len;) {
		uint8_t *p = bl->base + t->span_off + done;
		size_t n = t->span_len - done < PIECE ? t->span_len - done : PIECE;

		if (stop_requested(bl))
			return false;
		switch (bl->o->op) {
		case PFS_OP_XOR:
			k->xor_imm(p, n, imm);
			break;
		case PFS_OP_ADD:
			k->add_imm(p, n, imm);
			break;
		case PFS_OP_COUNTEQ:
			v += k->counteq(p, n, imm);
			break;
		case PFS_OP_CRC32C:
			crc = pfs_crc32c(crc, p, n);
			break;
		default:
			break;
		}
		done += n;
		t->bytes += n;
	}
	*value = bl->o->op == PFS_OP_CRC32C ? crc : v;
	return true;
}

static bool fnv_pass(struct bthread *t, uint64_t *out)
{
	struct bl *bl = t->bl;
	const uint8_t *ptrs[FNV_BATCH];
	size_t lens[FNV_BATCH];

	for (uint64_t d = t->d_begin; d < t->d_end;) {
		unsigned n = 0;
		uint64_t first = d;

		if (stop_requested(bl))
			return false;
		for (; n < FNV_BATCH && d < t->d_end; n++, d++) {
			uint64_t off;
			uint32_t len;

			pfs_pcore__desc(bl->o, d, &off, &len);
			ptrs[n] = bl->base + off;
			lens[n] = len;
			t->bytes += len;
		}
		bl->k->fnv_multi(ptrs, lens, n, out + (first - t->d_begin));
	}
	return true;
}

static void thread_loop(struct bthread *t)
{
	struct bl *bl = t->bl;
	const struct pfs_pcore_opts *o = bl->o;

	for (;;) {
		uint64_t value = 0;
		bool ok;

		if (o->op == PFS_OP_FNV) {
			uint64_t *out = t->passes ? t->scratch : bl->hashes + t->d_begin;

			ok = fnv_pass(t, out);
			if (ok && t->passes &&
			    memcmp(out, bl->hashes + t->d_begin,
				   (t->d_end - t->d_begin) * sizeof(*out)))
				t->agree = false;
		} else {
			ok = span_pass(t, &value);
			if (ok && !t->passes)
				t->first = value;
			else if (ok && value != t->first)
				t->agree = false;
		}
		if (!ok) {
			t->stopped = true;
			return;
		}
		t->passes++;
		if (o->duration_s > 0 ? now_s() >= bl->deadline : t->passes == o->passes)
			return;
	}
}

static void *bthread_main(void *arg)
{
	struct bthread *t = arg;
	struct bl *bl = t->bl;
	double c0;
	int err;

	if (t->cpu >= 0) {
		err = pfs_pcore_pin(t->cpu);
		if (err)
			atomic_store(&bl->pin_err, err);
	}
	atomic_fetch_add(&bl->ready, 1);
	while (!atomic_load(&bl->go))
		sched_yield();
	if (atomic_load(&bl->go) < 0 || atomic_load(&bl->pin_err))
		return NULL;
	c0 = thread_cpu_s();
	thread_loop(t);
	t->cpu_s = thread_cpu_s() - c0;
	return NULL;
}

/* Combine the threads' first-pass values in descriptor order. */
static uint64_t combine(struct bl *bl, uint64_t ndesc)
{
	const struct pfs_pcore_opts *o = bl->o;
	uint64_t acc = 0;

	switch (o->op) {
	case PFS_OP_COUNTEQ:
		for (unsigned i = 0; i < o->pcores; i++)
			acc += bl->t[i].first;
		break;
	case PFS_OP_CRC32C:
		for (unsigned i = 0; i < o->pcores; i++)
			if (bl->t[i].span_len)
				acc = pfs_ops_crc32c_combine(
					(uint32_t)acc, (uint32_t)bl->t[i].first, bl->t[i].span_len);
		break;
	case PFS_OP_FNV:
		acc = pfs_ops_fnv_fold(PFS_FNV1A64_INIT, bl->hashes, ndesc);
		break;
	default:
		break;
	}
	return acc;
}

static void block_async_signals(sigset_t *old)
{
	sigset_t set;

	sigfillset(&set);
	sigdelset(&set, SIGSEGV);
	sigdelset(&set, SIGBUS);
	sigdelset(&set, SIGFPE);
	sigdelset(&set, SIGILL);
	pthread_sigmask(SIG_BLOCK, &set, old);
}

int pfs_pcore__baseline(const struct pfs_pcore_opts *opts, uint8_t *base, uint64_t size,
			struct pfs_pcore_result *res)
{
	struct bl bl = { .o = opts, .base = base };
	const char *why;
	uint64_t ndesc, min_passes = UINT64_MAX, bytes = 0;
	unsigned started = 0;
	bool agree = true, stopped = false;
	double t0, t1;
	sigset_t oldmask;
	void *mem;
	int err;

	err = pfs_pcore__check_opts(opts, size, &why);
	if (err) {
		pfs_err("pcore baseline: %s", why);
		return err;
	}
	bl.k = opts->kernels ? opts->kernels : pfs_ops__best();
	ndesc = pfs_pcore__ndescs(opts);
	if (posix_memalign(&mem, PFS_CACHELINE, opts->pcores * sizeof(*bl.t)))
		return -ENOMEM;
	bl.t = mem;
	memset(mem, 0, opts->pcores * sizeof(*bl.t));
	err = -ENOMEM;
	if (opts->op == PFS_OP_FNV) {
		bl.hashes = calloc(ndesc, sizeof(*bl.hashes));
		if (!bl.hashes)
			goto out_free;
	}
	for (unsigned i = 0; i < opts->pcores; i++) {
		struct bthread *t = &bl.t[i];
		uint64_t off, last_off;
		uint32_t len, last_len;

		t->bl = &bl;
		t->id = i;
		t->cpu = opts->cpus ? opts->cpus[i] : -1;
		t->agree = true;
		t->d_begin = ndesc * i / opts->pcores;
		t->d_end = ndesc * (i + 1) / opts->pcores;
		if (t->d_end > t->d_begin) {
			pfs_pcore__desc(opts, t->d_begin, &off, &len);
			pfs_pcore__desc(opts, t->d_end - 1, &last_off, &last_len);
			t->span_off = off;
			t->span_len = last_off + last_len - off;
		}
		if (opts->op == PFS_OP_FNV) {
			t->scratch = calloc(t->d_end - t->d_begin + 1, sizeof(uint64_t));
			if (!t->scratch)
				goto out_free;
		}
	}

	err = 0;
	block_async_signals(&oldmask);
	for (; started < opts->pcores; started++) {
		err = -pthread_create(&bl.t[started].th, NULL, bthread_main, &bl.t[started]);
		if (err)
			break;
	}
	pthread_sigmask(SIG_SETMASK, &oldmask, NULL);
	if (!err)
		while (atomic_load(&bl.ready) < opts->pcores)
			sched_yield();
	t0 = now_s();
	bl.deadline = t0 + opts->duration_s;
	atomic_store(&bl.go, err ? -1 : 1);
	for (unsigned i = 0; i < started; i++)
		pthread_join(bl.t[i].th, NULL);
	if (err) {
		pfs_err("pcore baseline: cannot start thread %u: %s", started, strerror(-err));
		goto out_free;
	}
	err = atomic_load(&bl.pin_err);
	if (err) {
		pfs_err("pcore baseline: cannot pin a thread: %s", strerror(-err));
		goto out_free;
	}

	for (unsigned i = 0; i < opts->pcores; i++) {
		struct bthread *t = &bl.t[i];

		if (t->passes < min_passes)
			min_passes = t->passes;
		agree &= t->agree;
		stopped |= t->stopped;
		bytes += t->bytes;
	}
	memset(res, 0, sizeof(*res));
	res->value = pfs_op_is_inplace(opts->op) ? bytes : min_passes ? combine(&bl, ndesc) : 0;
	t1 = now_s();
	res->value_valid = pfs_op_is_inplace(opts->op) || min_passes > 0;
	res->bytes = bytes;
	res->seconds = t1 - t0;
	res->passes_done = min_passes;
	res->passes_agree = agree;
	res->stopped = stopped;
	res->complete = !stopped && (opts->duration_s > 0 || min_passes == opts->passes);
	res->ncores = opts->pcores;
	for (unsigned i = 0; i < opts->pcores; i++) {
		res->core[i].cpu = bl.t[i].cpu;
		res->core[i].bytes = bl.t[i].bytes;
		res->core[i].cpu_s = bl.t[i].cpu_s;
	}

out_free:
	for (unsigned i = 0; i < opts->pcores; i++)
		free(bl.t[i].scratch);
	free(bl.t);
	free(bl.hashes);
	return err;
}
