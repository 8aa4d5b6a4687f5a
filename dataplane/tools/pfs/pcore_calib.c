// SPDX-License-Identifier: Apache-2.0
/*
 * Reference rates for `pfs pcore calibrate`: what the memory system and one
 * core can do on this machine, measured in the same process layout as a
 * pcore run (pinned threads, same range, same CPUs), so the pcore targets
 * are ratios taken in one run rather than numbers from somewhere else.
 *
 * Threads: a job runs one pinned thread per share of the range; every
 * thread repeats its share `passes` times, each pass behind a barrier; a
 * pass's time is from the first thread's start to the last thread's end
 * and the rate is the best pass's (a limit is what the machine can do, not
 * what it did while other tenants ran). Memory: the copy destination is a
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

#include "cli.h"
#include "pfs/integrity.h"
#include "pfs/ops.h"
#include "pfs/pcore.h"
#include "pcore_calib.h"

enum job_kind {
	JOB_READ,
	JOB_MEMCPY,
	JOB_COPY_NT,
	JOB_RMW,
	JOB_CRC,
	JOB_FNV_NAIVE,
	JOB_FNV_MULTI,
};

struct job;

struct jthread {
	_Alignas(PFS_CACHELINE) struct job *job;
	pthread_t th;
	int cpu;
	unsigned idx;
	const uint8_t *src;
	uint8_t *dst;
	uint64_t len;
	uint64_t sink; /* keeps the compiler from dropping reads */
	double cpu_s;
};

struct job {
	enum job_kind kind;
	unsigned passes, threads;
	uint64_t (*read)(const uint8_t *p, uint64_t len);
	atomic_uint ready;
	atomic_uint arrived; /* pass barrier: threads * (pass + 1) when all are in */
	atomic_int go;
	atomic_int err;
	double *start, *end; /* [pass * threads + thread], CLOCK_MONOTONIC */
	struct jthread t[PFS_PCORE_MAX];
};

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * Read kernels, best first. A read limit must be one no op can beat, so the
 * sweep is the widest load the CPU has, aligned, with eight independent
 * accumulators and 256 bytes per iteration (enough loads in flight that
 * neither the OR chain nor the loop overhead is the bound); the op kernels
 * (ops_avx2.c) run four vectors per iteration, so the limit's loop is never
 * the narrower one. "avx2-4acc" is the kernel this file used before (four
 * unaligned loads per iteration); it is kept so the test can show the new
 * one is not slower on the same buffer.
 */
#if defined(__x86_64__)
#define AVX2 __attribute__((target("avx2")))

AVX2 static uint64_t read_avx2_8acc(const uint8_t *p, uint64_t len)
{
	__m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
	__m256i a4 = a0, a5 = a0, a6 = a0, a7 = a0;
	uint64_t i = 0, h = (uint64_t)(-(uintptr_t)p) & 31, s = 0, r[4];

	if (h > len)
		h = len;
	for (; i < h; i++)
		s |= p[i];
	for (; i + 256 <= len; i += 256) {
		const __m256i *v = (const __m256i *)(p + i);

		a0 = _mm256_or_si256(a0, _mm256_load_si256(v));
		a1 = _mm256_or_si256(a1, _mm256_load_si256(v + 1));
		a2 = _mm256_or_si256(a2, _mm256_load_si256(v + 2));
		a3 = _mm256_or_si256(a3, _mm256_load_si256(v + 3));
		a4 = _mm256_or_si256(a4, _mm256_load_si256(v + 4));
		a5 = _mm256_or_si256(a5, _mm256_load_si256(v + 5));
		a6 = _mm256_or_si256(a6, _mm256_load_si256(v + 6));
		a7 = _mm256_or_si256(a7, _mm256_load_si256(v + 7));
	}
	for (; i + 32 <= len; i += 32)
		a0 = _mm256_or_si256(a0, _mm256_load_si256((const __m256i *)(p + i)));
	for (; i < len; i++)
		s |= p[i];
	a0 = _mm256_or_si256(_mm256_or_si256(a0, a1), _mm256_or_si256(a2, a3));
	a4 = _mm256_or_si256(_mm256_or_si256(a4, a5), _mm256_or_si256(a6, a7));
	_mm256_storeu_si256((__m256i *)r, _mm256_or_si256(a0, a4));
	return s | r[0] | r[1] | r[2] | r[3];
}

AVX2 static uint64_t read_avx2_4acc(const uint8_t *p, uint64_t len)
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

/* Every x86-64 CPU has SSE2: the same shape, 16-byte loads. */
static uint64_t read_sse2_8acc(const uint8_t *p, uint64_t len)
{
	__m128i a0 = _mm_setzero_si128(), a1 = a0, a2 = a0, a3 = a0;
	__m128i a4 = a0, a5 = a0, a6 = a0, a7 = a0;
	uint64_t i = 0, h = (uint64_t)(-(uintptr_t)p) & 15, s = 0, r[2];

	if (h > len)
		h = len;
	for (; i < h; i++)
		s |= p[i];
	for (; i + 128 <= len; i += 128) {
		const __m128i *v = (const __m128i *)(p + i);

		a0 = _mm_or_si128(a0, _mm_load_si128(v));
		a1 = _mm_or_si128(a1, _mm_load_si128(v + 1));
		a2 = _mm_or_si128(a2, _mm_load_si128(v + 2));
		a3 = _mm_or_si128(a3, _mm_load_si128(v + 3));
		a4 = _mm_or_si128(a4, _mm_load_si128(v + 4));
		a5 = _mm_or_si128(a5, _mm_load_si128(v + 5));
		a6 = _mm_or_si128(a6, _mm_load_si128(v + 6));
		a7 = _mm_or_si128(a7, _mm_load_si128(v + 7));
	}
	for (; i + 16 <= len; i += 16)
		a0 = _mm_or_si128(a0, _mm_load_si128((const __m128i *)(p + i)));
	for (; i < len; i++)
		s |= p[i];
	a0 = _mm_or_si128(_mm_or_si128(a0, a1), _mm_or_si128(a2, a3));
	a4 = _mm_or_si128(_mm_or_si128(a4, a5), _mm_or_si128(a6, a7));
	_mm_storeu_si128((__m128i *)r, _mm_or_si128(a0, a4));
	return s | r[0] | r[1];
}

/* Non-temporal copy: 32-byte streaming stores bypass the cache, so the
 * destination is not read for ownership first (glibc switches to them only
 * above a size threshold it guesses; we measure both and keep the best). */
AVX2 static void copy_avx2_nt(uint8_t *d, const uint8_t *s, uint64_t len)
{
	uint64_t i = 0, h = (uint64_t)(-(uintptr_t)d) & 31;

	if (h > len)
		h = len;
	memcpy(d, s, h);
	for (i = h; i + 128 <= len; i += 128) {
		__m256i a = _mm256_loadu_si256((const __m256i *)(s + i));
		__m256i b = _mm256_loadu_si256((const __m256i *)(s + i + 32));
		__m256i c = _mm256_loadu_si256((const __m256i *)(s + i + 64));
		__m256i e = _mm256_loadu_si256((const __m256i *)(s + i + 96));

		_mm256_stream_si256((__m256i *)(d + i), a);
		_mm256_stream_si256((__m256i *)(d + i + 32), b);
		_mm256_stream_si256((__m256i *)(d + i + 64), c);
		_mm256_stream_si256((__m256i *)(d + i + 96), e);
	}
	_mm_sfence(); /* orders the streaming stores before the tail and return */
	memcpy(d + i, s + i, len - i);
}

/* In-place read-modify-write, the limit of the in-place ops (xor, add):
 * each 32-byte line is loaded, xor-ed with @k and stored back where it was,
 * four vectors per iteration like the op kernels. Run with k = 0 on the
 * private copy destination, never on the blob (a holder may share it). */
AVX2 static void rmw_avx2(uint8_t *p, uint64_t len, uint8_t k8)
{
	const __m256i k = _mm256_set1_epi8((char)k8);
	uint64_t i = 0, h = (uint64_t)(-(uintptr_t)p) & 31;

	if (h > len)
		h = len;
	for (; i < h; i++)
		p[i] ^= k8;
	for (; i + 128 <= len; i += 128) {
		__m256i *v = (__m256i *)(p + i);
		__m256i a = _mm256_load_si256(v), b = _mm256_load_si256(v + 1);
		__m256i c = _mm256_load_si256(v + 2), d = _mm256_load_si256(v + 3);

		_mm256_store_si256(v, _mm256_xor_si256(a, k));
		_mm256_store_si256(v + 1, _mm256_xor_si256(b, k));
		_mm256_store_si256(v + 2, _mm256_xor_si256(c, k));
		_mm256_store_si256(v + 3, _mm256_xor_si256(d, k));
	}
	for (; i < len; i++)
		p[i] ^= k8;
}
#endif

static void rmw_portable(uint8_t *p, uint64_t len, uint8_t k8)
{
	for (uint64_t i = 0; i < len; i++)
		p[i] ^= k8;
}

static volatile uint8_t rmw_key; /* 0, unknown to the compiler: stores stay */

static void rmw_sweep(uint8_t *p, uint64_t len)
{
#if defined(__x86_64__)
	if (__builtin_cpu_supports("avx2")) {
		rmw_avx2(p, len, rmw_key);
		return;
	}
#endif
	rmw_portable(p, len, rmw_key);
}

static uint64_t read_portable(const uint8_t *p, uint64_t len)
{
	uint64_t a = 0, b = 0, c = 0, d = 0, i = 0, x[4];

	for (; i + 32 <= len; i += 32) {
		memcpy(x, p + i, 32);
		a |= x[0], b |= x[1], c |= x[2], d |= x[3];
	}
	for (; i < len; i++)
		a |= p[i];
	return a | b | c | d;
}

static const struct pfs_pcore_calib_read read_kernels[] = {
#if defined(__x86_64__)
	{ "avx2-8acc", read_avx2_8acc },
	{ "avx2-4acc", read_avx2_4acc },
	{ "sse2-8acc", read_sse2_8acc },
#endif
	{ "portable", read_portable },
};

const struct pfs_pcore_calib_read *pfs_pcore_calib__read_kernel(const char *name)
{
	for (size_t i = 0; i < sizeof(read_kernels) / sizeof(read_kernels[0]); i++) {
		const struct pfs_pcore_calib_read *k = &read_kernels[i];

		if (name && strcmp(name, k->name))
			continue;
#if defined(__x86_64__)
		if (!strncmp(k->name, "avx2", 4) && !__builtin_cpu_supports("avx2"))
			continue;
#endif
		return k;
	}
	return NULL;
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

/* Each pass starts behind a barrier, so a pass's wall time is from the
 * first thread's start to the last thread's end and passes can be compared:
 * the rate reported is the best pass, not the mean, because on a shared
 * machine a slow pass measures the other tenants, not the memory. */
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
	for (unsigned p = 0; p < job->passes && !atomic_load(&job->err); p++) {
		atomic_fetch_add(&job->arrived, 1);
		while (atomic_load(&job->arrived) < job->threads * (p + 1) &&
		       !atomic_load(&job->err))
			;
		double c0 = thread_cpu_s();

		job->start[p * job->threads + t->idx] = pfs_cli_now();
		switch (job->kind) {
		case JOB_READ:
			t->sink += job->read(t->src, t->len);
			break;
		case JOB_MEMCPY:
			memcpy(t->dst, t->src, t->len);
			break;
		case JOB_COPY_NT:
#if defined(__x86_64__)
			copy_avx2_nt(t->dst, t->src, t->len);
#endif
			break;
		case JOB_RMW:
			rmw_sweep(t->dst, t->len);
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
		job->end[p * job->threads + t->idx] = pfs_cli_now();
		/* CPU time of the work only, not of the barrier's spin. */
		t->cpu_s += thread_cpu_s() - c0;
	}
	return NULL;
}

/* Run @kind on @threads threads over [src, src + len); the best pass's
 * MB/s, or -errno. *@per_cpu_s gets MB per CPU-second over all passes
 * (bytes over the threads' CPU time), which preemption by other tenants
 * does not dilute. @read is the read kernel for JOB_READ. */
static double run_job(enum job_kind kind, uint64_t (*read)(const uint8_t *, uint64_t),
		      const uint8_t *src, uint8_t *dst, uint64_t len, const int *cpus,
		      unsigned threads, unsigned passes, double *per_cpu_s)
{
	double cpu = 0, best = 0;
	struct job *job = calloc(1, sizeof(*job));
	unsigned started = 0;
	int err = 0;

	if (!job)
		return -ENOMEM;
	job->start = calloc((size_t)passes * threads, sizeof(double));
	job->end = calloc((size_t)passes * threads, sizeof(double));
	if (!job->start || !job->end) {
		err = -ENOMEM;
		goto out_free;
	}
	job->kind = kind;
	job->read = read;
	job->passes = passes;
	job->threads = threads;
	for (unsigned i = 0; i < threads; i++) {
		/* 4 KiB-aligned shares: no two threads write one page. */
		uint64_t a = (len * i / threads) & ~4095ULL;
		uint64_t b = i + 1 == threads ? len : (len * (i + 1) / threads) & ~4095ULL;

		job->t[i] = (struct jthread){ .job = job,
					      .cpu = cpus[i],
					      .idx = i,
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
	if (err)
		atomic_store(&job->err, err);
	atomic_store(&job->go, err ? -1 : 1);
	for (unsigned i = 0; i < started; i++)
		pthread_join(job->t[i].th, NULL);
	for (unsigned i = 0; i < started; i++)
		cpu += job->t[i].cpu_s;
	*per_cpu_s = cpu > 0 ? (double)len * passes / cpu / 1e6 : 0;
	err = atomic_load(&job->err);
	for (unsigned p = 0; !err && p < passes; p++) {
		double t0 = job->start[p * threads], t1 = job->end[p * threads];

		for (unsigned i = 1; i < threads; i++) {
			if (job->start[p * threads + i] < t0)
				t0 = job->start[p * threads + i];
			if (job->end[p * threads + i] > t1)
				t1 = job->end[p * threads + i];
		}
		if (t1 > t0 && (!best || t1 - t0 < best))
			best = t1 - t0;
	}
out_free:
	free(job->start);
	free(job->end);
	free(job);
	if (err)
		return err;
	return best > 0 ? (double)len / best / 1e6 : -EIO;
}

/* The better of glibc memcpy and the streaming-store copy on @threads; its
 * name in *@impl. */
static double best_copy(const uint8_t *src, uint8_t *dst, uint64_t len, const int *cpus,
			unsigned threads, unsigned passes, double *glibc, double *ntstore,
			double *per_cpu_s, const char **impl)
{
	double cg = 0, cn = 0;

	*glibc = run_job(JOB_MEMCPY, NULL, src, dst, len, cpus, threads, passes, &cg);
	*ntstore = 0;
#if defined(__x86_64__)
	if (__builtin_cpu_supports("avx2"))
		*ntstore = run_job(JOB_COPY_NT, NULL, src, dst, len, cpus, threads, passes, &cn);
#endif
	if (*glibc < 0)
		return *glibc;
	if (*ntstore < 0)
		return *ntstore;
	*impl = *ntstore > *glibc ? "avx2-ntstore" : "glibc";
	*per_cpu_s = *ntstore > *glibc ? cn : cg;
	return *ntstore > *glibc ? *ntstore : *glibc;
}

int pfs_pcore_calib__measure(const uint8_t *base, uint64_t len, const int *cpus, unsigned threads,
			     unsigned passes, struct pfs_pcore_calib *out)
{
	/* FNV is ~1 GB/s per stream: a slice keeps the naive loop short. */
	uint64_t fnv_len = len < (256ULL << 20) ? len : 256ULL << 20;
	uint64_t maplen = (len + (2ULL << 20) - 1) & ~((2ULL << 20) - 1);
	const struct pfs_pcore_calib_read *rk;
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
	rk = pfs_pcore_calib__read_kernel(NULL);
	out->read_impl = rk->name;
	v[0] = run_job(JOB_READ, rk->fn, base, NULL, len, cpus, 1, passes, &out->cpu[0]);
	v[1] = run_job(JOB_READ, rk->fn, base, NULL, len, cpus, threads, passes, &out->cpu[1]);
	v[2] = best_copy(base, dst, len, cpus, 1, passes, &out->memcpy_glibc_1t,
			 &out->memcpy_ntstore_1t, &out->cpu[2], &out->memcpy_impl_1t);
	v[3] = best_copy(base, dst, len, cpus, threads, passes, &out->memcpy_glibc_nt,
			 &out->memcpy_ntstore_nt, &out->cpu[3], &out->memcpy_impl_nt);
	/* dst holds the range's bytes now; rewrite them in place. */
	out->rmw_nt =
		run_job(JOB_RMW, NULL, base, dst, len, cpus, threads, passes, &out->rmw_nt_cpu);
	if (out->rmw_nt < 0)
		v[4] = out->rmw_nt;
	else
		v[4] = run_job(JOB_CRC, NULL, base, NULL, len, cpus, 1, passes, &out->cpu[4]);
	v[5] = run_job(JOB_FNV_NAIVE, NULL, base, NULL, fnv_len, cpus, 1, 1, &out->cpu[5]);
	v[6] = run_job(JOB_FNV_MULTI, NULL, base, NULL, fnv_len, cpus, 1, 1, &out->cpu[6]);
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
