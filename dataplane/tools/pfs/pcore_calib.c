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
 * what it did while other tenants ran). Each of the three limits (read,
 * copy, in-place rewrite) is timed with every candidate kernel the CPU runs
 * (AVX-512 where present, AVX2, glibc memcpy for the copy), asked at run
 * time, their passes alternating; the best wins and is named in the
 * result. Memory: the copy destination is a
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
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

#include "cli.h"
#include "pfs/integrity.h"
#include "pfs/ops.h"
#include "pfs/pcore.h"
#include "pcore_calib.h"

enum job_kind {
	JOB_READ,
	JOB_COPY,
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
	double cpu_s[PFS_PCORE_CALIB_KMAX]; /* per kernel of the job */
};

struct job {
	enum job_kind kind;
	unsigned passes, threads;
	/* JOB_READ, JOB_COPY, JOB_RMW: the kernels, taking turns within each
	 * pass; one (NULL) for the other kinds. */
	const struct pfs_pcore_calib_kernel *k[PFS_PCORE_CALIB_KMAX];
	unsigned nk;
	atomic_uint ready;
	atomic_uint arrived; /* sweep barrier: threads * (sweep + 1) when all are in */
	atomic_int go;
	atomic_int err;
	double *start, *end; /* [(pass * nk + kernel) * threads + thread], CLOCK_MONOTONIC */
	struct jthread t[PFS_PCORE_MAX];
};

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * The kernels, widest first in each table. A limit must be one no op can
 * beat, so each measure times every candidate kernel (every one this CPU
 * runs that is at least half as wide as its widest: AVX-512 and AVX2 where
 * both run, since on some cores 64-byte vectors are split in two and the
 * 32-byte loop is the faster) and keeps the best; the op kernels
 * (src/ops/ops_avx2.c, and the CRC32C fold of integrity.c) are at most 32
 * bytes wide, so the calibration is never the narrower loop. The reads are
 * aligned, with eight independent accumulators (enough loads in flight that
 * neither the OR chain nor the loop overhead is the bound); copies and
 * rewrites move four vectors per iteration like the op kernels. Every
 * kernel takes any start, end and length (a scalar head up to the
 * alignment, a scalar tail). "avx2-4acc" is the read kernel this file used
 * before (four unaligned loads per iteration); it stays a candidate, since
 * on a loaded machine it sometimes wins by a few percent.
 */
static inline uint64_t head_to(const void *p, uint64_t len, uint64_t a)
{
	uint64_t h = (uint64_t)(-(uintptr_t)p) & (a - 1);

	return h < len ? h : len;
}

#if defined(__x86_64__)
#define AVX2 __attribute__((target("avx2")))
#define AVX512 __attribute__((target("avx512f")))

AVX512 static uint64_t read_avx512_8acc(const uint8_t *p, uint64_t len)
{
	__m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
	__m512i a4 = a0, a5 = a0, a6 = a0, a7 = a0;
	uint64_t i = 0, h = head_to(p, len, 64), s = 0, r[8];

	for (; i < h; i++)
		s |= p[i];
	for (; i + 512 <= len; i += 512) {
		const __m512i *v = (const __m512i *)(p + i);

		a0 = _mm512_or_si512(a0, _mm512_load_si512(v));
		a1 = _mm512_or_si512(a1, _mm512_load_si512(v + 1));
		a2 = _mm512_or_si512(a2, _mm512_load_si512(v + 2));
		a3 = _mm512_or_si512(a3, _mm512_load_si512(v + 3));
		a4 = _mm512_or_si512(a4, _mm512_load_si512(v + 4));
		a5 = _mm512_or_si512(a5, _mm512_load_si512(v + 5));
		a6 = _mm512_or_si512(a6, _mm512_load_si512(v + 6));
		a7 = _mm512_or_si512(a7, _mm512_load_si512(v + 7));
	}
	for (; i + 64 <= len; i += 64)
		a0 = _mm512_or_si512(a0, _mm512_load_si512((const __m512i *)(p + i)));
	for (; i < len; i++)
		s |= p[i];
	a0 = _mm512_or_si512(_mm512_or_si512(a0, a1), _mm512_or_si512(a2, a3));
	a4 = _mm512_or_si512(_mm512_or_si512(a4, a5), _mm512_or_si512(a6, a7));
	_mm512_storeu_si512(r, _mm512_or_si512(a0, a4));
	for (int k = 0; k < 8; k++)
		s |= r[k];
	return s;
}

AVX2 static uint64_t read_avx2_8acc(const uint8_t *p, uint64_t len)
{
	__m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
	__m256i a4 = a0, a5 = a0, a6 = a0, a7 = a0;
	uint64_t i = 0, h = head_to(p, len, 32), s = 0, r[4];

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
	uint64_t i = 0, h = head_to(p, len, 16), s = 0, r[2];

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

/* Copies align the destination (a scalar memcpy head) and load the source
 * unaligned; calibrate's shares are page-aligned on both sides, so its
 * loads are aligned too. The streaming ("ntstore") copies bypass the
 * cache, so the destination is not read for ownership first (glibc switches
 * to them only above a size threshold it guesses; every copy is timed and
 * the best kept). */
AVX512 static void copy_avx512(uint8_t *d, const uint8_t *s, uint64_t len)
{
	uint64_t i = head_to(d, len, 64);

	memcpy(d, s, i);
	for (; i + 256 <= len; i += 256) {
		__m512i a = _mm512_loadu_si512(s + i), b = _mm512_loadu_si512(s + i + 64);
		__m512i c = _mm512_loadu_si512(s + i + 128), e = _mm512_loadu_si512(s + i + 192);

		_mm512_store_si512(d + i, a);
		_mm512_store_si512(d + i + 64, b);
		_mm512_store_si512(d + i + 128, c);
		_mm512_store_si512(d + i + 192, e);
	}
	memcpy(d + i, s + i, len - i);
}

AVX512 static void copy_avx512_nt(uint8_t *d, const uint8_t *s, uint64_t len)
{
	uint64_t i = head_to(d, len, 64);

	memcpy(d, s, i);
	for (; i + 256 <= len; i += 256) {
		__m512i a = _mm512_loadu_si512(s + i), b = _mm512_loadu_si512(s + i + 64);
		__m512i c = _mm512_loadu_si512(s + i + 128), e = _mm512_loadu_si512(s + i + 192);

		_mm512_stream_si512((__m512i *)(d + i), a);
		_mm512_stream_si512((__m512i *)(d + i + 64), b);
		_mm512_stream_si512((__m512i *)(d + i + 128), c);
		_mm512_stream_si512((__m512i *)(d + i + 192), e);
	}
	_mm_sfence(); /* orders the streaming stores before the tail and return */
	memcpy(d + i, s + i, len - i);
}

AVX2 static void copy_avx2_nt(uint8_t *d, const uint8_t *s, uint64_t len)
{
	uint64_t i = head_to(d, len, 32);

	memcpy(d, s, i);
	for (; i + 128 <= len; i += 128) {
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
 * each vector is loaded, xor-ed with @k and stored back where it was.
 * Calibrate runs them with k = 0 on the private copy destination, never on
 * the blob (a holder may share it). */
AVX512 static void rmw_avx512(uint8_t *p, uint64_t len, uint8_t k8)
{
	const __m512i k = _mm512_set1_epi32((int)(0x01010101u * k8));
	uint64_t i = 0, h = head_to(p, len, 64);

	for (; i < h; i++)
		p[i] ^= k8;
	for (; i + 256 <= len; i += 256) {
		__m512i *v = (__m512i *)(p + i);
		__m512i a = _mm512_load_si512(v), b = _mm512_load_si512(v + 1);
		__m512i c = _mm512_load_si512(v + 2), d = _mm512_load_si512(v + 3);

		_mm512_store_si512(v, _mm512_xor_si512(a, k));
		_mm512_store_si512(v + 1, _mm512_xor_si512(b, k));
		_mm512_store_si512(v + 2, _mm512_xor_si512(c, k));
		_mm512_store_si512(v + 3, _mm512_xor_si512(d, k));
	}
	for (; i + 64 <= len; i += 64) {
		__m512i *v = (__m512i *)(p + i);

		_mm512_store_si512(v, _mm512_xor_si512(_mm512_load_si512(v), k));
	}
	for (; i < len; i++)
		p[i] ^= k8;
}

AVX2 static void rmw_avx2(uint8_t *p, uint64_t len, uint8_t k8)
{
	const __m256i k = _mm256_set1_epi8((char)k8);
	uint64_t i = 0, h = head_to(p, len, 32);

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

static void rmw_sse2(uint8_t *p, uint64_t len, uint8_t k8)
{
	const __m128i k = _mm_set1_epi8((char)k8);
	uint64_t i = 0, h = head_to(p, len, 16);

	for (; i < h; i++)
		p[i] ^= k8;
	for (; i + 64 <= len; i += 64) {
		__m128i *v = (__m128i *)(p + i);
		__m128i a = _mm_load_si128(v), b = _mm_load_si128(v + 1);
		__m128i c = _mm_load_si128(v + 2), d = _mm_load_si128(v + 3);

		_mm_store_si128(v, _mm_xor_si128(a, k));
		_mm_store_si128(v + 1, _mm_xor_si128(b, k));
		_mm_store_si128(v + 2, _mm_xor_si128(c, k));
		_mm_store_si128(v + 3, _mm_xor_si128(d, k));
	}
	for (; i < len; i++)
		p[i] ^= k8;
}
#endif

#if defined(__aarch64__)
/* Advanced SIMD is in every aarch64 CPU: 16-byte vectors, the width of
 * the NEON op kernels (src/ops/ops_neon.c). */
static uint64_t read_neon_8acc(const uint8_t *p, uint64_t len)
{
	uint8x16_t a0 = vdupq_n_u8(0), a1 = a0, a2 = a0, a3 = a0;
	uint8x16_t a4 = a0, a5 = a0, a6 = a0, a7 = a0;
	uint64_t i = 0, h = head_to(p, len, 16), s = 0;

	for (; i < h; i++)
		s |= p[i];
	for (; i + 128 <= len; i += 128) {
		a0 = vorrq_u8(a0, vld1q_u8(p + i));
		a1 = vorrq_u8(a1, vld1q_u8(p + i + 16));
		a2 = vorrq_u8(a2, vld1q_u8(p + i + 32));
		a3 = vorrq_u8(a3, vld1q_u8(p + i + 48));
		a4 = vorrq_u8(a4, vld1q_u8(p + i + 64));
		a5 = vorrq_u8(a5, vld1q_u8(p + i + 80));
		a6 = vorrq_u8(a6, vld1q_u8(p + i + 96));
		a7 = vorrq_u8(a7, vld1q_u8(p + i + 112));
	}
	for (; i + 16 <= len; i += 16)
		a0 = vorrq_u8(a0, vld1q_u8(p + i));
	for (; i < len; i++)
		s |= p[i];
	a0 = vorrq_u8(vorrq_u8(a0, a1), vorrq_u8(a2, a3));
	a4 = vorrq_u8(vorrq_u8(a4, a5), vorrq_u8(a6, a7));
	uint64x2_t r = vreinterpretq_u64_u8(vorrq_u8(a0, a4));

	return s | vgetq_lane_u64(r, 0) | vgetq_lane_u64(r, 1);
}

static void rmw_neon(uint8_t *p, uint64_t len, uint8_t k8)
{
	const uint8x16_t k = vdupq_n_u8(k8);
	uint64_t i = 0, h = head_to(p, len, 16);

	for (; i < h; i++)
		p[i] ^= k8;
	for (; i + 64 <= len; i += 64) {
		uint8x16_t a = vld1q_u8(p + i), b = vld1q_u8(p + i + 16);
		uint8x16_t c = vld1q_u8(p + i + 32), d = vld1q_u8(p + i + 48);

		vst1q_u8(p + i, veorq_u8(a, k));
		vst1q_u8(p + i + 16, veorq_u8(b, k));
		vst1q_u8(p + i + 32, veorq_u8(c, k));
		vst1q_u8(p + i + 48, veorq_u8(d, k));
	}
	for (; i < len; i++)
		p[i] ^= k8;
}
#endif

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

static void copy_glibc(uint8_t *d, const uint8_t *s, uint64_t len)
{
	memcpy(d, s, len);
}

static void rmw_portable(uint8_t *p, uint64_t len, uint8_t k8)
{
	for (uint64_t i = 0; i < len; i++)
		p[i] ^= k8;
}

static const struct pfs_pcore_calib_kernel read_kernels[] = {
#if defined(__x86_64__)
	{ .name = "avx512-8acc",
	  .isa = PFS_CALIB_ISA_AVX512,
	  .width = 64,
	  .read = read_avx512_8acc },
	{ .name = "avx2-8acc", .isa = PFS_CALIB_ISA_AVX2, .width = 32, .read = read_avx2_8acc },
	{ .name = "avx2-4acc", .isa = PFS_CALIB_ISA_AVX2, .width = 32, .read = read_avx2_4acc },
	{ .name = "sse2-8acc", .isa = PFS_CALIB_ISA_SSE2, .width = 16, .read = read_sse2_8acc },
#elif defined(__aarch64__)
	{ .name = "neon-8acc", .isa = PFS_CALIB_ISA_NEON, .width = 16, .read = read_neon_8acc },
#endif
	{ .name = "portable", .isa = PFS_CALIB_ISA_ANY, .width = 8, .read = read_portable },
};

static const struct pfs_pcore_calib_kernel copy_kernels[] = {
#if defined(__x86_64__)
	{ .name = "avx512-ntstore",
	  .isa = PFS_CALIB_ISA_AVX512,
	  .width = 64,
	  .copy = copy_avx512_nt },
	{ .name = "avx512", .isa = PFS_CALIB_ISA_AVX512, .width = 64, .copy = copy_avx512 },
	{ .name = "avx2-ntstore", .isa = PFS_CALIB_ISA_AVX2, .width = 32, .copy = copy_avx2_nt },
#endif
	{ .name = "glibc", .isa = PFS_CALIB_ISA_ANY, .width = 0, .copy = copy_glibc },
};

static const struct pfs_pcore_calib_kernel rmw_kernels[] = {
#if defined(__x86_64__)
	{ .name = "avx512", .isa = PFS_CALIB_ISA_AVX512, .width = 64, .rmw = rmw_avx512 },
	{ .name = "avx2", .isa = PFS_CALIB_ISA_AVX2, .width = 32, .rmw = rmw_avx2 },
	{ .name = "sse2", .isa = PFS_CALIB_ISA_SSE2, .width = 16, .rmw = rmw_sse2 },
#elif defined(__aarch64__)
	{ .name = "neon", .isa = PFS_CALIB_ISA_NEON, .width = 16, .rmw = rmw_neon },
#endif
	{ .name = "portable", .isa = PFS_CALIB_ISA_ANY, .width = 1, .rmw = rmw_portable },
};

const struct pfs_pcore_calib_kernel *pfs_pcore_calib__kernels(enum pfs_pcore_calib_what what,
							      size_t *n)
{
	switch (what) {
	case PFS_CALIB_READ:
		*n = sizeof(read_kernels) / sizeof(read_kernels[0]);
		return read_kernels;
	case PFS_CALIB_COPY:
		*n = sizeof(copy_kernels) / sizeof(copy_kernels[0]);
		return copy_kernels;
	case PFS_CALIB_RMW:
		*n = sizeof(rmw_kernels) / sizeof(rmw_kernels[0]);
		return rmw_kernels;
	default:
		*n = 0;
		return NULL;
	}
}

bool pfs_pcore_calib__runnable(const struct pfs_pcore_calib_kernel *k)
{
	switch (k->isa) {
	case PFS_CALIB_ISA_ANY:
		return true;
#if defined(__x86_64__)
	case PFS_CALIB_ISA_SSE2:
		return true; /* x86-64's baseline */
	case PFS_CALIB_ISA_AVX2:
		__builtin_cpu_init();
		return __builtin_cpu_supports("avx2");
	case PFS_CALIB_ISA_AVX512:
		/* libgcc's answer includes the OS check (XCR0 saves the
		 * 512-bit state), not only cpuid's bit. */
		__builtin_cpu_init();
		return __builtin_cpu_supports("avx512f");
#elif defined(__aarch64__)
	case PFS_CALIB_ISA_NEON:
		return true;
#endif
	default:
		return false;
	}
}

const struct pfs_pcore_calib_kernel *pfs_pcore_calib__widest(enum pfs_pcore_calib_what what)
{
	size_t n;
	const struct pfs_pcore_calib_kernel *t = pfs_pcore_calib__kernels(what, &n), *w = NULL;

	for (size_t i = 0; i < n; i++)
		if (pfs_pcore_calib__runnable(&t[i]) && (!w || t[i].width > w->width))
			w = &t[i];
	return w;
}

bool pfs_pcore_calib__candidate(enum pfs_pcore_calib_what what,
				const struct pfs_pcore_calib_kernel *k)
{
	const struct pfs_pcore_calib_kernel *w = pfs_pcore_calib__widest(what);

	if (!pfs_pcore_calib__runnable(k) || k->test_only)
		return false;
	return k->width == 0 || 2 * k->width >= w->width;
}

const struct pfs_pcore_calib_kernel *pfs_pcore_calib__read_kernel(const char *name)
{
	size_t n;
	const struct pfs_pcore_calib_kernel *t = pfs_pcore_calib__kernels(PFS_CALIB_READ, &n);

	if (!name)
		return pfs_pcore_calib__widest(PFS_CALIB_READ);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(name, t[i].name))
			return pfs_pcore_calib__runnable(&t[i]) ? &t[i] : NULL;
	return NULL;
}

const char *pfs_pcore_calib_isa_str(enum pfs_pcore_calib_isa isa)
{
	switch (isa) {
	case PFS_CALIB_ISA_ANY:
		return "any";
	case PFS_CALIB_ISA_SSE2:
		return "sse2";
	case PFS_CALIB_ISA_AVX2:
		return "avx2";
	case PFS_CALIB_ISA_AVX512:
		return "avx512f";
	case PFS_CALIB_ISA_NEON:
		return "neon";
	default:
		return "?";
	}
}

static volatile uint8_t rmw_key; /* 0, unknown to the compiler: stores stay */

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
	unsigned sweeps = job->passes * job->nk;

	if (err)
		atomic_store(&job->err, err);
	atomic_fetch_add(&job->ready, 1);
	while (!atomic_load(&job->go))
		sched_yield();
	for (unsigned w = 0; w < sweeps && !atomic_load(&job->err); w++) {
		const struct pfs_pcore_calib_kernel *k = job->k[w % job->nk];

		atomic_fetch_add(&job->arrived, 1);
		while (atomic_load(&job->arrived) < job->threads * (w + 1) &&
		       !atomic_load(&job->err))
			;
		double c0 = thread_cpu_s();

		job->start[w * job->threads + t->idx] = pfs_cli_now();
		switch (job->kind) {
		case JOB_READ:
			t->sink += k->read(t->src, t->len);
			break;
		case JOB_COPY:
			k->copy(t->dst, t->src, t->len);
			break;
		case JOB_RMW:
			k->rmw(t->dst, t->len, rmw_key);
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
		job->end[w * job->threads + t->idx] = pfs_cli_now();
		/* CPU time of the work only, not of the barrier's spin. */
		t->cpu_s[w % job->nk] += thread_cpu_s() - c0;
	}
	return NULL;
}

/* Run @kind on @threads threads over [src, src + len), the @nk kernels
 * @k (JOB_READ, JOB_COPY, JOB_RMW; else nk = 1, k[0] NULL) taking turns
 * in each of @passes passes on the same threads (threads made for each
 * sweep start cold: up to 10% slower here). rate[i] gets kernel i's best
 * sweep in MB/s, per_cpu_s[i] its MB per CPU-second over all its sweeps
 * (bytes over the threads' CPU time), which preemption by other tenants
 * does not dilute. Returns 0 or -errno. */
static int run_job(enum job_kind kind, const struct pfs_pcore_calib_kernel *const *k, unsigned nk,
		   const uint8_t *src, uint8_t *dst, uint64_t len, const int *cpus,
		   unsigned threads, unsigned passes, double *rate, double *per_cpu_s)
{
	struct job *job = calloc(1, sizeof(*job));
	unsigned started = 0, sweeps = passes * nk;
	int err = 0;

	if (!job)
		return -ENOMEM;
	job->start = calloc((size_t)sweeps * threads, sizeof(double));
	job->end = calloc((size_t)sweeps * threads, sizeof(double));
	if (!job->start || !job->end) {
		err = -ENOMEM;
		goto out_free;
	}
	job->kind = kind;
	job->nk = nk;
	for (unsigned i = 0; i < nk; i++)
		job->k[i] = k[i];
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
	err = atomic_load(&job->err);
	for (unsigned i = 0; !err && i < nk; i++) {
		double cpu = 0, best = 0;

		for (unsigned t = 0; t < threads; t++)
			cpu += job->t[t].cpu_s[i];
		per_cpu_s[i] = cpu > 0 ? (double)len * passes / cpu / 1e6 : 0;
		for (unsigned p = 0; p < passes; p++) {
			const double *s0 = job->start + (size_t)(p * nk + i) * threads;
			const double *e0 = job->end + (size_t)(p * nk + i) * threads;
			double t0 = s0[0], t1 = e0[0];

			for (unsigned t = 1; t < threads; t++) {
				if (s0[t] < t0)
					t0 = s0[t];
				if (e0[t] > t1)
					t1 = e0[t];
			}
			if (t1 > t0 && (!best || t1 - t0 < best))
				best = t1 - t0;
		}
		if (best <= 0)
			err = -EIO;
		else
			rate[i] = (double)len / best / 1e6;
	}
out_free:
	free(job->start);
	free(job->end);
	free(job);
	return err;
}

/* One rate of a job without kernels (CRC, FNV): MB/s or -errno. */
static double run_one(enum job_kind kind, const uint8_t *src, uint64_t len, const int *cpus,
		      unsigned threads, unsigned passes, double *per_cpu_s)
{
	const struct pfs_pcore_calib_kernel *none = NULL;
	double rate = 0;
	int err = run_job(kind, &none, 1, src, NULL, len, cpus, threads, passes, &rate, per_cpu_s);

	return err ? err : rate;
}

/*
 * The best of every candidate kernel of @what (pfs_pcore_calib__candidate)
 * on @threads: the candidates take turns on the same threads, one sweep
 * each per pass, so a burst of load from other tenants falls on all of
 * them alike; each keeps its best pass and the best of those is the limit. Every candidate
 * and its rate go into *@tried, the winner's name into *@impl and its MB
 * per CPU-second (over its passes) into *@per_cpu_s.
 */
static double best_kernel(enum pfs_pcore_calib_what what, const uint8_t *src, uint8_t *dst,
			  uint64_t len, const int *cpus, unsigned threads, unsigned passes,
			  struct pfs_pcore_calib_tried *tried, const char **impl, double *per_cpu_s)
{
	static const enum job_kind kinds[PFS_CALIB__COUNT] = {
		[PFS_CALIB_READ] = JOB_READ,
		[PFS_CALIB_COPY] = JOB_COPY,
		[PFS_CALIB_RMW] = JOB_RMW,
	};
	const struct pfs_pcore_calib_kernel *k[PFS_PCORE_CALIB_KMAX];
	double cpu[PFS_PCORE_CALIB_KMAX] = { 0 };
	size_t n, m = 0, win = 0;
	const struct pfs_pcore_calib_kernel *t = pfs_pcore_calib__kernels(what, &n);
	int err;

	memset(tried, 0, sizeof(*tried));
	for (size_t i = 0; i < n && m < PFS_PCORE_CALIB_KMAX; i++)
		if (pfs_pcore_calib__candidate(what, &t[i]))
			k[m++] = &t[i];
	err = run_job(kinds[what], k, (unsigned)m, src, dst, len, cpus, threads, passes,
		      tried->mbps, cpu);
	if (err)
		return err;
	tried->n = (unsigned)m;
	for (size_t i = 0; i < m; i++) {
		tried->name[i] = k[i]->name;
		if (tried->mbps[i] > tried->mbps[win])
			win = i;
	}
	*impl = k[win]->name;
	*per_cpu_s = cpu[win];
	return tried->mbps[win];
}

/* The rate of the kernel named @name in @t, 0 if it was not timed. */
static double tried_rate(const struct pfs_pcore_calib_tried *t, const char *name)
{
	for (unsigned i = 0; i < t->n; i++)
		if (!strcmp(t->name[i], name))
			return t->mbps[i];
	return 0;
}

int pfs_pcore_calib__measure(const uint8_t *base, uint64_t len, const int *cpus, unsigned threads,
			     unsigned passes, struct pfs_pcore_calib *out)
{
	/* FNV is ~1 GB/s per stream: a slice keeps the naive loop short. */
	uint64_t fnv_len = len < (256ULL << 20) ? len : 256ULL << 20;
	uint64_t maplen = (len + (2ULL << 20) - 1) & ~((2ULL << 20) - 1);
	struct pfs_pcore_calib_tried *tr = out->tried;
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
	v[0] = best_kernel(PFS_CALIB_READ, base, NULL, len, cpus, 1, passes,
			   &tr[PFS_CALIB_TRIED_READ_1T], &out->read_impl_1t, &out->cpu[0]);
	v[1] = best_kernel(PFS_CALIB_READ, base, NULL, len, cpus, threads, passes,
			   &tr[PFS_CALIB_TRIED_READ_NT], &out->read_impl_nt, &out->cpu[1]);
	v[2] = best_kernel(PFS_CALIB_COPY, base, dst, len, cpus, 1, passes,
			   &tr[PFS_CALIB_TRIED_COPY_1T], &out->memcpy_impl_1t, &out->cpu[2]);
	v[3] = best_kernel(PFS_CALIB_COPY, base, dst, len, cpus, threads, passes,
			   &tr[PFS_CALIB_TRIED_COPY_NT], &out->memcpy_impl_nt, &out->cpu[3]);
	/* dst holds the range's bytes now; rewrite them in place. */
	out->rmw_nt = best_kernel(PFS_CALIB_RMW, base, dst, len, cpus, threads, passes,
				  &tr[PFS_CALIB_TRIED_RMW_NT], &out->rmw_impl_nt, &out->rmw_nt_cpu);
	/* One thread too (the 1-pcore point of a sweep is judged by it): a
	 * job on one thread is the same job, so with threads == 1 it is the
	 * rate above. */
	if (out->rmw_nt >= 0 && threads > 1)
		out->rmw_1t = best_kernel(PFS_CALIB_RMW, base, dst, len, cpus, 1, passes,
					  &tr[PFS_CALIB_TRIED_RMW_1T], &out->rmw_impl_1t,
					  &out->rmw_1t_cpu);
	else if (out->rmw_nt >= 0) {
		out->rmw_1t = out->rmw_nt;
		out->rmw_1t_cpu = out->rmw_nt_cpu;
		out->rmw_impl_1t = out->rmw_impl_nt;
		tr[PFS_CALIB_TRIED_RMW_1T] = tr[PFS_CALIB_TRIED_RMW_NT];
	}
	if (out->rmw_nt < 0 || out->rmw_1t < 0)
		v[4] = out->rmw_nt < 0 ? out->rmw_nt : out->rmw_1t;
	else
		v[4] = run_one(JOB_CRC, base, len, cpus, 1, passes, &out->cpu[4]);
	v[5] = run_one(JOB_FNV_NAIVE, base, fnv_len, cpus, 1, 1, &out->cpu[5]);
	v[6] = run_one(JOB_FNV_MULTI, base, fnv_len, cpus, 1, 1, &out->cpu[6]);
	munmap(dst, maplen);
	for (int i = 0; i < 7; i++)
		if (v[i] < 0)
			return (int)v[i];
	out->read_1t = v[0];
	out->read_nt = v[1];
	out->memcpy_1t = v[2];
	out->memcpy_nt = v[3];
	out->memcpy_glibc_1t = tried_rate(&tr[PFS_CALIB_TRIED_COPY_1T], "glibc");
	out->memcpy_glibc_nt = tried_rate(&tr[PFS_CALIB_TRIED_COPY_NT], "glibc");
	out->memcpy_ntstore_1t = tried_rate(&tr[PFS_CALIB_TRIED_COPY_1T], "avx2-ntstore");
	out->memcpy_ntstore_nt = tried_rate(&tr[PFS_CALIB_TRIED_COPY_NT], "avx2-ntstore");
	out->crc32c_1core = v[4];
	out->fnv_naive_1core = v[5];
	out->fnv_multi_1core = v[6];
	return 0;
}
