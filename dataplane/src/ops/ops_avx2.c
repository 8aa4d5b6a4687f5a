// SPDX-License-Identifier: Apache-2.0
/*
 * AVX2 op kernels (x86-64). Compiled with per-function target attributes so
 * the rest of the build stays baseline x86-64; pfs_ops__avx2() hands the
 * table out only when the CPU reports AVX2 (__builtin_cpu_supports).
 *
 * Loops align the pointer to 32 bytes with a scalar head, run four vectors
 * per iteration (two loads in flight per cycle on current cores need that
 * much independent work), then finish with one-vector steps and a scalar
 * tail, so any start, end and length is handled.
 */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#include <stdint.h>
#include <string.h>

#include "pfs/integrity.h"
#include "ops_impl.h"

#if defined(__x86_64__) || defined(__i386__)

#define AVX2 __attribute__((target("avx2")))

static inline size_t head_to_align(const void *p, size_t len, size_t a)
{
	size_t h = (size_t)(-(uintptr_t)p) & (a - 1);

	return h < len ? h : len;
}

#define INPLACE_KERNEL(name, vop, sop)                                       \
	AVX2 static void name(uint8_t *p, size_t len, uint8_t imm)           \
	{                                                                    \
		const __m256i k = _mm256_set1_epi8((char)imm);               \
		size_t i = 0, h = head_to_align(p, len, 32);                 \
                                                                             \
		for (; i < h; i++)                                           \
			p[i] = sop(p[i], imm);                               \
		for (; i + 128 <= len; i += 128) {                           \
			__m256i *v = (__m256i *)(p + i);                     \
			__m256i a = _mm256_load_si256(v);                    \
			__m256i b = _mm256_load_si256(v + 1);                \
			__m256i c = _mm256_load_si256(v + 2);                \
			__m256i d = _mm256_load_si256(v + 3);                \
			_mm256_store_si256(v, vop(a, k));                    \
			_mm256_store_si256(v + 1, vop(b, k));                \
			_mm256_store_si256(v + 2, vop(c, k));                \
			_mm256_store_si256(v + 3, vop(d, k));                \
		}                                                            \
		for (; i + 32 <= len; i += 32) {                             \
			__m256i *v = (__m256i *)(p + i);                     \
			_mm256_store_si256(v, vop(_mm256_load_si256(v), k)); \
		}                                                            \
		for (; i < len; i++)                                         \
			p[i] = sop(p[i], imm);                               \
	}

#define SXOR(a, b) ((uint8_t)((a) ^ (b)))
#define SADD(a, b) ((uint8_t)((a) + (b)))

INPLACE_KERNEL(xor_avx2, _mm256_xor_si256, SXOR)
INPLACE_KERNEL(add_avx2, _mm256_add_epi8, SADD)

/* Byte counters: cmpeq gives 0xff (-1) per match, subtracting it adds one.
 * A byte counter overflows after 255 steps, so every 255 iterations the
 * counters are summed into 64-bit lanes with psadbw. */
AVX2 static uint64_t counteq_avx2(const uint8_t *p, size_t len, uint8_t val)
{
	const __m256i k = _mm256_set1_epi8((char)val);
	const __m256i zero = _mm256_setzero_si256();
	__m256i total = zero;
	size_t i = 0, h = head_to_align(p, len, 32);
	uint64_t n = 0;

	for (; i < h; i++)
		n += p[i] == val;
	while (i + 128 <= len) {
		__m256i c0 = zero, c1 = zero, c2 = zero, c3 = zero;
		size_t blocks = (len - i) / 128;

		if (blocks > 255)
			blocks = 255;
		for (size_t b = 0; b < blocks; b++, i += 128) {
			const __m256i *v = (const __m256i *)(p + i);

			c0 = _mm256_sub_epi8(c0, _mm256_cmpeq_epi8(_mm256_load_si256(v), k));
			c1 = _mm256_sub_epi8(c1, _mm256_cmpeq_epi8(_mm256_load_si256(v + 1), k));
			c2 = _mm256_sub_epi8(c2, _mm256_cmpeq_epi8(_mm256_load_si256(v + 2), k));
			c3 = _mm256_sub_epi8(c3, _mm256_cmpeq_epi8(_mm256_load_si256(v + 3), k));
		}
		total = _mm256_add_epi64(total, _mm256_sad_epu8(c0, zero));
		total = _mm256_add_epi64(total, _mm256_sad_epu8(c1, zero));
		total = _mm256_add_epi64(total, _mm256_sad_epu8(c2, zero));
		total = _mm256_add_epi64(total, _mm256_sad_epu8(c3, zero));
	}
	for (; i + 32 <= len; i += 32) {
		__m256i c = _mm256_sub_epi8(
			zero, _mm256_cmpeq_epi8(_mm256_load_si256((const __m256i *)(p + i)), k));
		total = _mm256_add_epi64(total, _mm256_sad_epu8(c, zero));
	}
	for (; i < len; i++)
		n += p[i] == val;

	uint64_t lanes[4];

	_mm256_storeu_si256((__m256i *)lanes, total);
	return n + lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

/*
 * FNV-1a 64 on eight lanes: two ymm registers of four 64-bit hashes. AVX2
 * has no 64x64 multiply, but the FNV prime is 2^40 + 0x1b3, so
 * h * prime = (h << 40) + lo32(h) * 0x1b3 + (hi32(h) * 0x1b3 << 32), which is
 * two vpmuludq, shifts and adds. Each lane loads 8 bytes at a time and
 * feeds them low byte first.
 */
AVX2 static inline __m256i fnv_mul(__m256i h)
{
	const __m256i c = _mm256_set1_epi64x(0x1b3);
	__m256i lo = _mm256_mul_epu32(h, c);
	__m256i hi = _mm256_mul_epu32(_mm256_srli_epi64(h, 32), c);

	return _mm256_add_epi64(_mm256_add_epi64(lo, _mm256_slli_epi64(hi, 32)),
				_mm256_slli_epi64(h, 40));
}

static inline long long ld64(const uint8_t *p)
{
	long long v;

	memcpy(&v, p, sizeof(v));
	return v;
}

AVX2 static void fnv_step8_avx2(uint64_t *h, const uint8_t **p, size_t m)
{
	const __m256i low = _mm256_set1_epi64x(0xff);
	__m256i ha = _mm256_loadu_si256((const __m256i *)h);
	__m256i hb = _mm256_loadu_si256((const __m256i *)(h + 4));
	const uint8_t *p0 = p[0], *p1 = p[1], *p2 = p[2], *p3 = p[3];
	const uint8_t *p4 = p[4], *p5 = p[5], *p6 = p[6], *p7 = p[7];
	size_t i = 0;

	for (; i + 8 <= m; i += 8) {
		__m256i va =
			_mm256_set_epi64x(ld64(p3 + i), ld64(p2 + i), ld64(p1 + i), ld64(p0 + i));
		__m256i vb =
			_mm256_set_epi64x(ld64(p7 + i), ld64(p6 + i), ld64(p5 + i), ld64(p4 + i));

		for (int b = 0; b < 8; b++) {
			ha = fnv_mul(_mm256_xor_si256(ha, _mm256_and_si256(va, low)));
			hb = fnv_mul(_mm256_xor_si256(hb, _mm256_and_si256(vb, low)));
			va = _mm256_srli_epi64(va, 8);
			vb = _mm256_srli_epi64(vb, 8);
		}
	}
	_mm256_storeu_si256((__m256i *)h, ha);
	_mm256_storeu_si256((__m256i *)(h + 4), hb);
	for (; i < m; i++)
		for (int j = 0; j < 8; j++)
			h[j] = (h[j] ^ p[j][i]) * PFS_FNV1A64_PRIME;
	for (int j = 0; j < 8; j++)
		p[j] += m;
}

AVX2 static void fnv_multi_avx2(const uint8_t *const *p, const size_t *len, size_t n, uint64_t *out)
{
	pfs_ops_fnv_sched(p, len, n, out, 8, fnv_step8_avx2);
}

static const struct pfs_ops_kernels kernels_avx2 = {
	.isa = PFS_ISA_AVX2,
	.name = "avx2",
	.xor_imm = xor_avx2,
	.add_imm = add_avx2,
	.counteq = counteq_avx2,
	.fnv_multi = fnv_multi_avx2,
};

const struct pfs_ops_kernels *pfs_ops__avx2(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") ? &kernels_avx2 : NULL;
}

#else

const struct pfs_ops_kernels *pfs_ops__avx2(void)
{
	return NULL;
}

#endif
