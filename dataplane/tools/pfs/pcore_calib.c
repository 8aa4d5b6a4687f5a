// SPDX-License-Identifier: Apache-2.0
/*
 * Reference rates for `pfs pcore calibrate`: what the memory system and one
 * core can do on this machine, measured in the same process layout as a
 * pcore run (pinned threads, same range, same CPUs), so the pcore targets
 * are ratios taken in one run rather than numbers from somewhere else.
 *
 * Threads: a job runs one pinned thread per share of the range; every
 * thread repeats its share `passes` times; the time is from the common go
 * signal to the last thread's end. Memory: the copy destination is a
 * private mapping of the range's size (2 MiB hugetlb if the pool has room,
 * else THP), unmapped before return.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "pfs/integrity.h"
#include "pfs/ops.h"
#include "pfs/pcore.h"
#include "pcore.h"

enum job_kind { JOB_READ, JOB_MEMCPY, JOB_CRC, JOB_FNV_NAIVE, JOB_FNV_MULTI };

struct job;

struct jthread {
	_Alignas(PFS_CACHELINE) struct job *job;
	pthread_t th;
	int cpu;
	const uint8_t *src;
	uint8_t *dst;
	uint64_t len;
	uint64_t sink; /* keeps the compiler from dropping reads */
	double cpu_s;
};

struct job {
	enum job_kind kind;
	unsigned passes;
	atomic_uint ready;
	atomic_int go;
	atomic_int err;
	struct jthread t[PFS_PCORE_MAX];
};

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#if defined(__x86_64__)
/* The fastest plain read we can write: 32-byte loads or-ed into four
 * independent accumulators; no compare, no store. */
__attribute__((target("avx2"))) static uint64_t read_avx2(const uint8_t *p, uint64_t len)
{
	__m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
	uint64_t i = 0, r[4];

	for (; i + 128 <= len; i += 128) {
		a = _mm256_or_si256(a, _mm256_loadu_si256((const __m256i *)(p + i)));
		b = _mm256_or_si256(b, _mm256_loadu_si256((const __m256i *)(p + i + 32)));
		c = _mm256_or_si256(c, _mm256_loadu_si256((const __m256i *)(p + i + 64)));
		d = _mm256_or_si256(d, _mm256_loadu_si256((const __m256i *)(p + i + 96)));
	}
	a = _mm256_or_si256(_mm256_or_si256(a, b), _mm256_or_si256(c, d));
	_mm256_storeu_si256((__m256i *)r, a);
	for (; i < len; i++)
		r[0] |= p[i];
	return r[0] | r[1] | r[2] | r[3];
}
#endif

static uint64_t read_portable(const uint8_t *p, uint64_t len)
{
	uint64_t a = 0, b = 0, i = 0, x, y;

	for (; i + 16 <= len; i += 16) {
		memcpy(&x, p + i, 8);
		memcpy(&y, p + i + 8, 8);
		a |= x, b |= y;
	}
	for (; i < len; i++)
		a |= p[i];
	return a | b;
}

static uint64_t read_sweep(const uint8_t *p, uint64_t len)
{
#if defined(__x86_64__)
	if (__builtin_cpu_supports("avx2"))
		return read_avx2(p, len);
#endif
	return read_portable(p, len);
}

/* The loop a programmer writes first: one byte, one xor, one multiply. */
static uint64_t fnv_naive(const uint8_t *p, uint64_t len)
{
	uint64_t h = PFS_FNV1A64_INIT;

	for (uint64_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= PFS_FNV1A64_PRIME;
	}
	return h;
}

static uint64_t fnv_multi(const uint8_t *p, uint64_t len)
{
	enum { DESC = 64 << 10, BATCH = 64 };
	const struct pfs_ops_kernels *k = pfs_ops__best();
	const uint8_t *ptrs[BATCH];
	size_t lens[BATCH];
	uint64_t out[BATCH], acc = 0;

	for (uint64_t off = 0; off < len;) {
		unsigned n = 0;

		for (; n < BATCH && off < len; n++, off += DESC) {
			ptrs[n] = p + off;
			lens[n] = len - off < DESC ? len - off : DESC;
		}
		k->fnv_multi(ptrs, lens, n, out);
		acc ^= out[0];
	}
	return acc;
}

static void *jthread_main(void *arg)
{
	struct jthread *t = arg;
	struct job *job = t->job;
	int err = pfs_pcore_pin(t->cpu);

	if (err)
		atomic_store(&job->err, err);
	atomic_fetch_add(&job->ready, 1);
	while (!atomic_load(&job->go))
		sched_yield();
	double c0 = thread_cpu_s();

	for (unsigned p = 0; p < job->passes && !atomic_load(&job->err); p++) {
		switch (job->kind) {
		case JOB_READ:
			t->sink += read_sweep(t->src, t->len);
			break;
		case JOB_MEMCPY:
			memcpy(t->dst, t->src, t->len);
			break;
		case JOB_CRC:
			t->sink += pfs_crc32c(0, t->src, t->len);
			break;
		case JOB_FNV_NAIVE:
			t->sink += fnv_naive(t->src, t->len);
			break;
		case JOB_FNV_MULTI:
			t->sink += fnv_multi(t->src, t->len);
			break;
		}
	}
	t->cpu_s = thread_cpu_s() - c0;
	return NULL;
}

/* Run @kind on @threads threads over [src, src + len); MB/s or -errno.
 * *@per_cpu_s gets MB per CPU-second (bytes over the threads' CPU time),
 * which preemption by other tenants does not dilute. */
static double run_job(enum job_kind kind, const uint8_t *src, uint8_t *dst, uint64_t len,
		      const int *cpus, unsigned threads, unsigned passes, double *per_cpu_s)
{
	double cpu = 0;
	struct job *job = calloc(1, sizeof(*job));
	unsigned started = 0;
	double t0, t1;
	int err = 0;

	if (!job)
		return -ENOMEM;
	job->kind = kind;
	job->passes = passes;
	for (unsigned i = 0; i < threads; i++) {
		/* 4 KiB-aligned shares: no two threads write one page. */
		uint64_t a = (len * i / threads) & ~4095ULL;
		uint64_t b = i + 1 == threads ? len : (len * (i + 1) / threads) & ~4095ULL;

		job->t[i] = (struct jthread){ .job = job,
					      .cpu = cpus[i],
					      .src = src + a,
					      .dst = dst ? dst + a : NULL,
					      .len = b - a };
	}
	for (; started < threads; started++) {
		err = -pthread_create(&job->t[started].th, NULL, jthread_main, &job->t[started]);
		if (err)
			break;
	}
	while (!err && atomic_load(&job->ready) < threads)
		sched_yield();
	t0 = now_s();
	atomic_store(&job->go, err ? -1 : 1);
	if (err)
		atomic_store(&job->err, err);
	for (unsigned i = 0; i < started; i++)
		pthread_join(job->t[i].th, NULL);
	t1 = now_s();
	for (unsigned i = 0; i < started; i++)
		cpu += job->t[i].cpu_s;
	*per_cpu_s = cpu > 0 ? (double)len * passes / cpu / 1e6 : 0;
	err = atomic_load(&job->err);
	free(job);
	if (err)
		return err;
	return (double)len * passes / (t1 - t0) / 1e6;
}

int pfs_pcore_calib__measure(const uint8_t *base, uint64_t len, const int *cpus, unsigned threads,
			     unsigned passes, struct pfs_pcore_calib *out)
{
	/* FNV is ~1 GB/s per stream: a slice keeps the naive loop short. */
	uint64_t fnv_len = len < (256ULL << 20) ? len : 256ULL << 20;
	uint64_t maplen = (len + (2ULL << 20) - 1) & ~((2ULL << 20) - 1);
	uint8_t *dst;
	double v[7];

	memset(out, 0, sizeof(*out));
	memset(v, 0, sizeof(v));
	out->threads = threads;
	out->memcpy_dst_page = "2m";
	dst = mmap(NULL, maplen, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
	if (dst == MAP_FAILED) {
		out->memcpy_dst_page = "thp";
		dst = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			   0);
		if (dst == MAP_FAILED)
			return -ENOMEM;
		madvise(dst, maplen, MADV_HUGEPAGE);
		memset(dst, 0, maplen); /* fault in outside the timing */
	}
	v[0] = run_job(JOB_READ, base, NULL, len, cpus, 1, passes, &out->cpu[0]);
	v[1] = run_job(JOB_READ, base, NULL, len, cpus, threads, passes, &out->cpu[1]);
	v[2] = run_job(JOB_MEMCPY, base, dst, len, cpus, 1, passes, &out->cpu[2]);
	v[3] = run_job(JOB_MEMCPY, base, dst, len, cpus, threads, passes, &out->cpu[3]);
	v[4] = run_job(JOB_CRC, base, NULL, len, cpus, 1, passes, &out->cpu[4]);
	v[5] = run_job(JOB_FNV_NAIVE, base, NULL, fnv_len, cpus, 1, 1, &out->cpu[5]);
	v[6] = run_job(JOB_FNV_MULTI, base, NULL, fnv_len, cpus, 1, 1, &out->cpu[6]);
	munmap(dst, maplen);
	for (int i = 0; i < 7; i++)
		if (v[i] < 0)
			return (int)v[i];
	out->read_1t = v[0];
	out->read_nt = v[1];
	out->memcpy_1t = v[2];
	out->memcpy_nt = v[3];
	out->crc32c_1core = v[4];
	out->fnv_naive_1core = v[5];
	out->fnv_multi_1core = v[6];
	return 0;
}
