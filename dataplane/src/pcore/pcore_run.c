// SPDX-License-Identifier: Apache-2.0
/*
 * The pcore runner.
 *
 * Threads: one pinned thread per pcore; threads, not processes, because the
 * blob, the rings and the result window then live in one address space
 * with no shared-memory plumbing, and a pinned thread isolates a core as
 * well as a process does for a CPU-bound loop. (The seeds used processes
 * and needed /dev/shm to share ring state.) The control thread only creates
 * and joins the workers; it takes signals, the workers block them.
 *
 * Producer: there is no producer thread. The producer role floats: a
 * pcore whose own ring is half empty tries to take the producer lock (a
 * try-lock, it never waits); the holder folds posted results and publishes
 * new frames to every ring with room, then drops the lock. On a 2-core
 * machine a dedicated producer thread would take a core away from the op,
 * and a producer folded into one fixed pcore stalls every other pcore while
 * that one is preempted (measured here under load: the followers spun on
 * empty rings and the run used twice the CPU time of the baseline). With
 * the floating role any running pcore refills the rings. Producing costs a
 * few dozen stores per frame (dpf descriptors) against tens of
 * microseconds of op work per frame (frames describe dpf x desc_len bytes,
 * 4 MiB by default): well under 1%.
 *
 * Rings: pcore i's ring has one consumer (pcore i) and one producer at any
 * moment (the lock holder); the lock's acquire/release hands the
 * producer-side ring state (tail, cached head) from holder to holder. The
 * holder gives each frame to the next ring in round-robin order that has
 * room, so a slower core (noise from other tenants) simply gets fewer
 * frames.
 *
 * Results: frame g's result goes to slot g % W of a reorder window; the
 * poster sets done = g + 1 with a release store after writing the result,
 * the lock holder folds slots in order with acquire loads. The producer
 * never runs more than W frames ahead of the fold, which bounds the
 * window's memory. After the workers exit, the control thread folds the
 * last frames; the timed interval ends after that fold.
 *
 * Memory: rings, window and worker state are allocated here by the control
 * thread (after any NUMA policy the caller set); each worker's state is
 * cache-line aligned and written only by that worker until it is joined.
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

struct frame_result {
	_Alignas(PFS_CACHELINE) _Atomic uint32_t done; /* frame id + 1 */
	uint32_t ndesc;
	uint64_t bytes;
	uint64_t value; /* counteq count or frame CRC */
};

struct run;

struct worker {
	struct pfs_pcore_ring ring; /* consumer side owned by this worker */
	_Alignas(PFS_CACHELINE) struct run *run;
	unsigned id;
	int cpu;
	pthread_t th;
	bool started;
	const uint8_t **ptrs; /* fnv scratch, dpf entries */
	size_t *lens;
	uint64_t bytes, frames, empty_waits;
	double cpu_s, wait_s;
};

struct run {
	const struct pfs_pcore_opts *o;
	const struct pfs_ops_kernels *k;
	uint8_t *base;
	uint64_t ndesc, nframes; /* per pass */
	uint64_t total_frames; /* passes mode; UINT64_MAX: duration */
	uint32_t wmask;
	uint16_t *owner; /* ring each frame went to, W entries */
	/* Frames in flight past the fold (the result window's size). */
	uint64_t window;
	struct frame_result *results;
	uint64_t *hashes; /* fnv: W x dpf per-descriptor hashes */
	struct worker *w;
	atomic_uint ready; /* workers pinned and waiting */
	atomic_int go; /* 1: start, -1: abort */
	atomic_int pin_err;
	_Alignas(PFS_CACHELINE) atomic_int pub_done; /* no more frames */
	_Alignas(PFS_CACHELINE) atomic_int prod_lock; /* producer role */

	/* Producer state: touched only by the producer lock holder (and by
	 * the control thread after the workers are joined). */
	_Alignas(PFS_CACHELINE) uint64_t next_g, fold_g, final_g;
	unsigned rr;
	uint64_t window_full_waits;
	double t0, t_end, deadline;
	uint64_t pass_acc, fold_bytes, fold_descs, passes_done;
	uint64_t value;
	bool value_valid, passes_agree, stopped;
	struct pfs_crc32c_shift shift;
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

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* ------------------------------------------------------------ consumer */

/* Execute one frame of @n descriptors and post its result. */
static void exec_frame(struct worker *w, const struct pfs_pcore_desc *d0, uint64_t idx, uint32_t n)
{
	struct run *run = w->run;
	const struct pfs_ops_kernels *k = run->k;
	uint8_t *base = run->base;
	uint8_t imm = run->o->imm;
	uint32_t fid = d0->frame;
	struct frame_result *fr = &run->results[fid & run->wmask];
	uint64_t bytes = 0, value = 0;
	uint32_t crc = 0;

	if (run->o->op == PFS_OP_FNV) {
		/* Per-descriptor hashes are the op's definition: no
		 * coalescing; the kernel interleaves the descriptors. */
		for (uint32_t i = 0; i < n; i++) {
			const struct pfs_pcore_desc *d = pfs_pcore_ring__slot(&w->ring, idx + i);

			w->ptrs[i] = base + d->off;
			w->lens[i] = d->len;
			bytes += d->len;
		}
		k->fnv_multi(w->ptrs, w->lens, n,
			     &run->hashes[(uint64_t)(fid & run->wmask) * run->o->dpf]);
	} else {
		/* Coalesce: descriptors that continue where the previous one
		 * ended run as one kernel call (for crc32c, extending one CRC
		 * across descriptors is the CRC of their concatenation
		 * whether or not they are adjacent). Fewer, longer calls keep
		 * the kernels in their wide loops. */
		for (uint32_t i = 0; i < n;) {
			const struct pfs_pcore_desc *d = pfs_pcore_ring__slot(&w->ring, idx + i);
			uint64_t off = d->off, len = d->len;

			for (i++; i < n; i++) {
				const struct pfs_pcore_desc *e =
					pfs_pcore_ring__slot(&w->ring, idx + i);

				if (e->off != off + len)
					break;
				len += e->len;
			}
			switch (run->o->op) {
			case PFS_OP_XOR:
				k->xor_imm(base + off, len, imm);
				break;
			case PFS_OP_ADD:
				k->add_imm(base + off, len, imm);
				break;
			case PFS_OP_COUNTEQ:
				value += k->counteq(base + off, len, imm);
				break;
			default:
				crc = pfs_crc32c(crc, base + off, len);
				break;
			}
			bytes += len;
		}
		if (run->o->op == PFS_OP_CRC32C)
			value = crc;
	}
	fr->ndesc = n;
	fr->bytes = bytes;
	fr->value = value;
	/* Release orders the result (and the fnv hashes) before done: the
	 * producer that sees done reads a complete result. */
	atomic_store_explicit(&fr->done, fid + 1, memory_order_release);
	w->bytes += bytes;
	w->frames++;
}

/* Consume up to @max_frames whole frames from this worker's ring. */
static unsigned consume(struct worker *w, unsigned max_frames)
{
	uint64_t idx;
	uint32_t n = pfs_pcore_ring__peek(&w->ring, w->ring.size, &idx);
	unsigned frames = 0;

	while (n && frames < max_frames) {
		const struct pfs_pcore_desc *d0 = pfs_pcore_ring__slot(&w->ring, idx);
		uint32_t fn = 1;

		/* The producer submits whole frames, so the run of equal
		 * frame ids is always complete. */
		while (fn < n && pfs_pcore_ring__slot(&w->ring, idx + fn)->frame == d0->frame)
			fn++;
		exec_frame(w, d0, idx, fn);
		pfs_pcore_ring__release(&w->ring, fn);
		idx += fn;
		n -= fn;
		frames++;
	}
	return frames;
}

/* ------------------------------------------------------------ producer */

/* Publish frame g to the next ring with room, or only to ring @only. */
static bool publish(struct run *run, uint64_t g, int only)
{
	const struct pfs_pcore_opts *o = run->o;
	uint64_t j = g % run->nframes, d0 = j * o->dpf;
	uint32_t n = (uint32_t)(run->ndesc - d0 < o->dpf ? run->ndesc - d0 : o->dpf);
	unsigned tries = only >= 0 ? 1 : o->pcores;

	for (unsigned t = 0; t < tries; t++) {
		unsigned wi = only >= 0 ? (unsigned)only : (run->rr + t) % o->pcores;
		struct pfs_pcore_ring *r = &run->w[wi].ring;
		uint64_t idx;

		if (!pfs_pcore_ring__reserve(r, n, &idx))
			continue;
		for (uint32_t i = 0; i < n; i++) {
			struct pfs_pcore_desc *d = pfs_pcore_ring__slot(r, idx + i);

			pfs_pcore__desc(o, d0 + i, &d->off, &d->len);
			d->frame = (uint32_t)g;
		}
		pfs_pcore_ring__submit(r, n);
		run->owner[g & run->wmask] = (uint16_t)wi;
		if (only < 0)
			run->rr = wi + 1;
		return true;
	}
	return false;
}

static bool frame_done(struct run *run, uint64_t g)
{
	if (g < run->fold_g)
		return true;
	/* Acquire pairs with the poster's release in exec_frame(): the bytes
	 * it wrote are visible to us, and through our release in __submit()
	 * to the pcore that runs the next pass over them. */
	return atomic_load_explicit(&run->results[g & run->wmask].done, memory_order_acquire) ==
	       (uint32_t)g + 1;
}

static void finish_publishing(struct run *run)
{
	run->final_g = run->next_g;
	/* Release orders every ring submit before the flag: a worker that
	 * sees pub_done and then an empty ring may exit. */
	atomic_store_explicit(&run->pub_done, 1, memory_order_release);
}

static void produce(struct run *run)
{
	const struct pfs_pcore_opts *o = run->o;

	if ((o->stop && atomic_load_explicit(o->stop, memory_order_relaxed))) {
		run->stopped = true;
		finish_publishing(run);
		return;
	}
	if (o->duration_s > 0 && now_s() >= run->deadline) {
		finish_publishing(run);
		return;
	}
	while (run->next_g < run->total_frames) {
		if (run->next_g - run->fold_g >= run->window) {
			/* The fold is behind (a frame still in some ring):
			 * the one producer-side stall worth counting; full
			 * rings are ordinary back-pressure. */
			run->window_full_waits++;
			return;
		}
		int only = -1;

		if (pfs_op_is_inplace(o->op) && run->next_g >= run->nframes &&
		    !frame_done(run, run->next_g - run->nframes)) {
			/* In-place ops: frame g (pass k+1) modifies the
			 * bytes of frame g - nframes (pass k). While that one
			 * is not done, g goes behind it on the same ring: the
			 * consumer runs its ring in order, so two pcores never
			 * modify the same bytes at once and nobody waits. */
			only = run->owner[(run->next_g - run->nframes) & run->wmask];
		}
		if (!publish(run, run->next_g, only)) {
			if (only >= 0)
				run->window_full_waits++;
			return;
		}
		run->next_g++;
	}
	if (run->next_g == run->total_frames)
		finish_publishing(run);
}

static void end_pass(struct run *run)
{
	if (!run->passes_done) {
		run->value = run->pass_acc;
		run->value_valid = true;
	} else if (run->pass_acc != run->value) {
		run->passes_agree = false;
	}
	run->passes_done++;
	run->pass_acc = 0;
	if (run->o->op == PFS_OP_FNV)
		run->pass_acc = PFS_FNV1A64_INIT;
}

static void fold(struct run *run)
{
	const struct pfs_pcore_opts *o = run->o;

	while (run->fold_g < run->next_g) {
		uint64_t g = run->fold_g;
		uint32_t s = (uint32_t)g & run->wmask;
		struct frame_result *fr = &run->results[s];

		/* Acquire pairs with the poster's release in exec_frame(). */
		if (atomic_load_explicit(&fr->done, memory_order_acquire) != (uint32_t)g + 1)
			return;
		run->fold_bytes += fr->bytes;
		run->fold_descs += fr->ndesc;
		switch (o->op) {
		case PFS_OP_COUNTEQ:
			run->pass_acc += fr->value;
			break;
		case PFS_OP_CRC32C:
			if (fr->bytes != run->shift.len)
				pfs_crc32c_shift__init(&run->shift, fr->bytes);
			run->pass_acc = pfs_crc32c_shift__combine(
				&run->shift, (uint32_t)run->pass_acc, (uint32_t)fr->value);
			break;
		case PFS_OP_FNV:
			run->pass_acc = pfs_ops_fnv_fold(
				run->pass_acc, &run->hashes[(uint64_t)s * o->dpf], fr->ndesc);
			break;
		default:
			break;
		}
		run->fold_g++;
		if (g % run->nframes == run->nframes - 1)
			end_pass(run);
	}
}

static inline bool producer_trylock(struct run *run)
{
	/* Acquire pairs with the release in producer_unlock(): the previous
	 * holder's producer state and ring tails are visible to us. */
	return !atomic_load_explicit(&run->prod_lock, memory_order_relaxed) &&
	       !atomic_exchange_explicit(&run->prod_lock, 1, memory_order_acquire);
}

static inline void producer_unlock(struct run *run)
{
	atomic_store_explicit(&run->prod_lock, 0, memory_order_release);
}

/* Descriptors published to this ring and not yet consumed (consumer side). */
static inline uint32_t ring_pending(struct pfs_pcore_ring *r)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);

	/* Acquire pairs with the producer's release in __submit(). */
	r->tail_cache = atomic_load_explicit(&r->tail, memory_order_acquire);
	return (uint32_t)(r->tail_cache - head);
}

static void worker_loop(struct worker *w)
{
	struct run *run = w->run;
	uint32_t low = w->ring.size / 2;
	bool waiting = false;
	double wait_t0 = 0;
	unsigned spins = 0;
	uint64_t idx;

	for (;;) {
		if (!atomic_load_explicit(&run->pub_done, memory_order_relaxed) &&
		    ring_pending(&w->ring) <= low && producer_trylock(run)) {
			fold(run);
			if (!atomic_load_explicit(&run->pub_done, memory_order_relaxed))
				produce(run);
			producer_unlock(run);
		}
		/* One frame at a time: the ring level is checked between
		 * frames. */
		if (consume(w, 1)) {
			if (waiting)
				w->wait_s += now_s() - wait_t0;
			waiting = false;
			continue;
		}
		/* Acquire pairs with finish_publishing(): after it, one more
		 * peek sees every frame ever submitted to this ring. */
		if (atomic_load_explicit(&run->pub_done, memory_order_acquire) &&
		    !pfs_pcore_ring__peek(&w->ring, 1, &idx))
			break;
		if (!waiting) {
			w->empty_waits++;
			wait_t0 = now_s();
			waiting = true;
			spins = 0;
		}
		/* Spin briefly (a refill is microseconds away), then give the
		 * CPU away between polls: on a shared machine a long wait
		 * means the pcore we wait for was preempted. */
		if (++spins < 4096)
			cpu_relax();
		else
			sched_yield();
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct run *run = w->run;
	double c0;
	int err;

	if (w->cpu >= 0) {
		err = pfs_pcore_pin(w->cpu);
		if (err)
			atomic_store(&run->pin_err, err);
	}
	/* seq_cst is enough here and off the hot path: the control thread
	 * releases everyone at once after every worker is pinned. */
	atomic_fetch_add(&run->ready, 1);
	while (!atomic_load(&run->go))
		sched_yield();
	if (atomic_load(&run->go) < 0 || atomic_load(&run->pin_err))
		return NULL;
	c0 = thread_cpu_s();
	worker_loop(w);
	w->cpu_s = thread_cpu_s() - c0;
	return NULL;
}

/* -------------------------------------------------------------- set-up */

static uint32_t next_pow2(uint64_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

static void run_free(struct run *run)
{
	if (run->w) {
		for (unsigned i = 0; i < run->o->pcores; i++) {
			pfs_pcore_ring__fini(&run->w[i].ring);
			free(run->w[i].ptrs);
			free(run->w[i].lens);
		}
	}
	free(run->w);
	free(run->results);
	free(run->hashes);
	free(run->owner);
}

static int run_alloc(struct run *run)
{
	const struct pfs_pcore_opts *o = run->o;
	uint32_t frames_per_ring = o->ring_slots / o->dpf;
	uint64_t want = (uint64_t)o->pcores * frames_per_ring * 2 + 2;
	uint32_t w;
	void *mem;

	/* A preempted pcore holds up the fold with the frames in its ring;
	 * a window as long as the whole run (capped at 16384 frames: 1 MiB of
	 * results, 8 MiB of fnv hashes at dpf 64) lets the running pcores go
	 * on meanwhile. */
	uint64_t all = run->total_frames < 16384 ? run->total_frames : 16384;

	if (want < all)
		want = all;
	w = next_pow2(want);

	if (w < 8)
		w = 8;
	run->wmask = w - 1;
	run->window = w;
	if (posix_memalign(&mem, PFS_CACHELINE, w * sizeof(*run->results)))
		return -ENOMEM;
	run->results = mem;
	memset(mem, 0, w * sizeof(*run->results));
	run->owner = calloc(w, sizeof(*run->owner));
	if (!run->owner)
		return -ENOMEM;
	if (o->op == PFS_OP_FNV) {
		run->hashes = calloc((size_t)w * o->dpf, sizeof(*run->hashes));
		if (!run->hashes)
			return -ENOMEM;
	}
	if (posix_memalign(&mem, PFS_CACHELINE, o->pcores * sizeof(*run->w)))
		return -ENOMEM;
	run->w = mem;
	memset(mem, 0, o->pcores * sizeof(*run->w));
	for (unsigned i = 0; i < o->pcores; i++) {
		struct worker *wk = &run->w[i];
		int err = pfs_pcore_ring__init(&wk->ring, o->ring_slots);

		if (err)
			return err;
		wk->run = run;
		wk->id = i;
		wk->cpu = o->cpus ? o->cpus[i] : -1;
		wk->ptrs = calloc(o->dpf, sizeof(*wk->ptrs));
		wk->lens = calloc(o->dpf, sizeof(*wk->lens));
		if (!wk->ptrs || !wk->lens)
			return -ENOMEM;
	}
	return 0;
}

static void fill_result(struct run *run, struct pfs_pcore_result *res)
{
	const struct pfs_pcore_opts *o = run->o;

	memset(res, 0, sizeof(*res));
	res->bytes = run->fold_bytes;
	res->descs = run->fold_descs;
	res->frames = run->fold_g;
	res->seconds = run->t_end - run->t0;
	res->passes_done = run->passes_done;
	res->stopped = run->stopped;
	res->complete = !run->stopped && (o->duration_s > 0 || run->passes_done == o->passes);
	res->passes_agree = run->passes_agree;
	if (pfs_op_is_inplace(o->op)) {
		res->value = run->fold_bytes;
		res->value_valid = true;
	} else {
		res->value = run->value;
		res->value_valid = run->value_valid;
	}
	res->window_full_waits = run->window_full_waits;
	res->ncores = o->pcores;
	for (unsigned i = 0; i < o->pcores; i++) {
		res->core[i].cpu = run->w[i].cpu;
		res->core[i].bytes = run->w[i].bytes;
		res->core[i].frames = run->w[i].frames;
		res->core[i].empty_waits = run->w[i].empty_waits;
		res->core[i].cpu_s = run->w[i].cpu_s;
		res->core[i].wait_s = run->w[i].wait_s;
	}
}

/* Workers take no asynchronous signals: SIGTERM must reach the control
 * thread's handler, which asks the producer to stop via opts->stop. */
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

int pfs_pcore__run(const struct pfs_pcore_opts *opts, uint8_t *base, uint64_t size,
		   struct pfs_pcore_result *res)
{
	struct run run = { .o = opts };
	const char *why;
	sigset_t oldmask;
	unsigned started = 0;
	int err;

	err = pfs_pcore__check_opts(opts, size, &why);
	if (err) {
		pfs_err("pcore: %s", why);
		return err;
	}
	run.k = opts->kernels ? opts->kernels : pfs_ops__best();
	run.base = base;
	run.ndesc = pfs_pcore__ndescs(opts);
	run.nframes = (run.ndesc + opts->dpf - 1) / opts->dpf;
	run.total_frames = opts->duration_s > 0 ? UINT64_MAX : opts->passes * run.nframes;
	run.passes_agree = true;
	run.pass_acc = opts->op == PFS_OP_FNV ? PFS_FNV1A64_INIT : 0;
	pfs_crc32c_shift__init(&run.shift, 0);

	err = run_alloc(&run);
	if (err)
		goto out_free;
	block_async_signals(&oldmask);
	for (; started < opts->pcores; started++) {
		err = -pthread_create(&run.w[started].th, NULL, worker_main, &run.w[started]);
		if (err)
			break;
	}
	pthread_sigmask(SIG_SETMASK, &oldmask, NULL);
	if (!err) {
		while (atomic_load(&run.ready) < opts->pcores)
			sched_yield();
	}
	run.t0 = now_s();
	run.deadline = run.t0 + opts->duration_s;
	atomic_store(&run.go, err ? -1 : 1);
	for (unsigned i = 0; i < started; i++)
		pthread_join(run.w[i].th, NULL);
	/* Every ring is empty and every frame posted: fold the rest. */
	fold(&run);
	run.t_end = now_s();
	if (err) {
		pfs_err("pcore: cannot start pcore %u: %s", started, strerror(-err));
		goto out_free;
	}
	err = atomic_load(&run.pin_err);
	if (err) {
		pfs_err("pcore: cannot pin a pcore to its CPU: %s", strerror(-err));
		goto out_free;
	}
	fill_result(&run, res);

out_free:
	run_free(&run);
	return err;
}
