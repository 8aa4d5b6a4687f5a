// SPDX-License-Identifier: Apache-2.0
/*
 * The copy limit of a same-host TCP transfer (`pfs bench`'s copy_1t): every
 * payload byte is copied at least once by one core, the sender copying out
 * of its blob (out of cache) into socket buffers, the receiver out of them.
 * So one core copies the source, @chunk bytes at a time (the size of one
 * socket write), into one @chunk-byte buffer that stays in cache, with
 * glibc memcpy and with the widest vector copies the CPU has (detected at
 * run time), and the best pass of the best kernel is the limit.
 *
 * Threads: the caller's only. Memory: the destination buffer is allocated
 * here and freed before return; the source belongs to the caller.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "bench_copy.h"
#include "cli.h"

static void copy_glibc(uint8_t *d, const uint8_t *s, uint64_t len)
{
	memcpy(d, s, len);
}

#if defined(__x86_64__)
/* Four vectors in flight per iteration, unaligned loads (a chunk starts
 * anywhere a socket write would), plain stores: the destination is in cache,
 * where streaming stores would evict it. */
__attribute__((target("avx2"))) static void copy_avx2(uint8_t *d, const uint8_t *s, uint64_t len)
{
	uint64_t i = 0;

	for (; i + 128 <= len; i += 128) {
		__m256i a = _mm256_loadu_si256((const __m256i *)(s + i));
		__m256i b = _mm256_loadu_si256((const __m256i *)(s + i + 32));
		__m256i c = _mm256_loadu_si256((const __m256i *)(s + i + 64));
		__m256i e = _mm256_loadu_si256((const __m256i *)(s + i + 96));

		_mm256_storeu_si256((__m256i *)(d + i), a);
		_mm256_storeu_si256((__m256i *)(d + i + 32), b);
		_mm256_storeu_si256((__m256i *)(d + i + 64), c);
		_mm256_storeu_si256((__m256i *)(d + i + 96), e);
	}
	memcpy(d + i, s + i, len - i);
}

__attribute__((target("avx512f"))) static void copy_avx512(uint8_t *d, const uint8_t *s,
							   uint64_t len)
{
	uint64_t i = 0;

	for (; i + 256 <= len; i += 256) {
		__m512i a = _mm512_loadu_si512((const void *)(s + i));
		__m512i b = _mm512_loadu_si512((const void *)(s + i + 64));
		__m512i c = _mm512_loadu_si512((const void *)(s + i + 128));
		__m512i e = _mm512_loadu_si512((const void *)(s + i + 192));

		_mm512_storeu_si512((void *)(d + i), a);
		_mm512_storeu_si512((void *)(d + i + 64), b);
		_mm512_storeu_si512((void *)(d + i + 128), c);
		_mm512_storeu_si512((void *)(d + i + 192), e);
	}
	memcpy(d + i, s + i, len - i);
}
#endif

static const struct pfs_bench_copy_kernel all_kernels[] = {
	{ "glibc", copy_glibc },
#if defined(__x86_64__)
	{ "avx2", copy_avx2 },
	{ "avx512", copy_avx512 },
#endif
};

static bool runnable(const char *name)
{
#if defined(__x86_64__)
	if (!strcmp(name, "avx2"))
		return __builtin_cpu_supports("avx2");
	if (!strcmp(name, "avx512"))
		return __builtin_cpu_supports("avx512f");
#else
	(void)name; /* glibc only: always runnable */
#endif
	return true;
}

const struct pfs_bench_copy_kernel *pfs_bench_copy__kernels(size_t *n)
{
	static struct pfs_bench_copy_kernel found[PFS_BENCH_COPY_KERNELS];
	size_t k = 0;

	for (size_t i = 0; i < sizeof(all_kernels) / sizeof(all_kernels[0]); i++)
		if (runnable(all_kernels[i].name))
			found[k++] = all_kernels[i];
	*n = k;
	return found;
}

/* One pass: @len bytes through @dst, @chunk bytes at a time, from the
 * source's next chunk each time (@walk) or from its first chunk again (the
 * in-cache case); seconds. */
static double pass(const struct pfs_bench_copy_kernel *k, uint8_t *dst, const uint8_t *src,
		   uint64_t len, uint64_t chunk, bool walk)
{
	double t0 = pfs_cli_now();

	for (uint64_t off = 0; off < len; off += chunk) {
		k->fn(dst, walk ? src + off : src, len - off < chunk ? len - off : chunk);
		/* The copy's stores are observed, so the compiler keeps them. */
		__asm__ __volatile__("" : : "r"(dst) : "memory");
	}
	return pfs_cli_now() - t0;
}

int pfs_bench_copy__measure(const uint8_t *src, uint64_t len, uint64_t chunk, unsigned passes,
			    struct pfs_bench_copy *out)
{
	const struct pfs_bench_copy_kernel *k;
	double best[PFS_BENCH_COPY_KERNELS] = { 0 }, in_s = 0;
	unsigned top = 0;
	uint8_t *dst;
	size_t n;

	if (!chunk || chunk > len || !passes)
		return -EINVAL;
	dst = aligned_alloc(4096, (chunk + 4095) & ~4095ULL);
	if (!dst)
		return -ENOMEM;
	memset(dst, 0, chunk); /* faulted in and cached before the timing */
	memset(out, 0, sizeof(*out));
	k = pfs_bench_copy__kernels(&n);
	for (unsigned p = 0; p < passes; p++) {
		for (size_t i = 0; i < n; i++) {
			double s = pass(&k[i], dst, src, len, chunk, true);

			if (s > 0 && (!best[i] || s < best[i]))
				best[i] = s;
		}
	}
	out->chunk = chunk;
	out->passes = passes;
	out->n = (unsigned)n;
	for (size_t i = 0; i < n; i++) {
		out->kernel[i] = k[i].name;
		out->mb_s[i] = best[i] > 0 ? len / 1e6 / best[i] : 0;
		if (out->mb_s[i] > out->mb_s[top])
			top = (unsigned)i;
	}
	out->impl = k[top].name;
	out->best_mb_s = out->mb_s[top];
	/* The same kernel with a source that stays in cache: as many bytes,
	 * all from the first chunk, the rate an in-cache sender's copy reaches. */
	for (unsigned p = 0; p < passes; p++) {
		double s = pass(&k[top], dst, src, len, chunk, false);

		if (s > 0 && (!in_s || s < in_s))
			in_s = s;
	}
	out->incache_mb_s = in_s > 0 ? len / 1e6 / in_s : 0;
	free(dst);
	return 0;
}
