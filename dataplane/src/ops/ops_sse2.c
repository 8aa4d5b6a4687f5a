// SPDX-License-Identifier: Apache-2.0
/*
 * SSE2 op kernels: the x86-64 baseline, so always present there; the
 * fallback when AVX2 is missing. Same loop shape as the AVX2 file with
 * 16-byte vectors. FNV uses the shared scalar 4-lane interleave: SSE2 has
 * no 64-bit multiply and two lanes per register do not pay for the
 * emulation.
 */
#if defined(__x86_64__)
#include <emmintrin.h>
#endif
#include <stdint.h>

#include "ops_impl.h"

#if defined(__x86_64__)

static inline size_t head_to_align(const void *p, size_t len, size_t a)
{
	size_t h = (size_t)(-(uintptr_t)p) & (a - 1);

	return h < len ? h : len;
}

#define INPLACE_KERNEL(name, vop, sop)                                 \
	static void name(uint8_t *p, size_t len, uint8_t imm)          \
	{                                                              \
		const __m128i k = _mm_set1_epi8((char)imm);            \
		size_t i = 0, h = head_to_align(p, len, 16);           \
                                                                       \
		for (; i < h; i++)                                     \
			p[i] = sop(p[i], imm);                         \
		for (; i + 64 <= len; i += 64) {                       \
			__m128i *v = (__m128i *)(p + i);               \
			__m128i a = _mm_load_si128(v);                 \
			__m128i b = _mm_load_si128(v + 1);             \
			__m128i c = _mm_load_si128(v + 2);             \
			__m128i d = _mm_load_si128(v + 3);             \
			_mm_store_si128(v, vop(a, k));                 \
			_mm_store_si128(v + 1, vop(b, k));             \
			_mm_store_si128(v + 2, vop(c, k));             \
			_mm_store_si128(v + 3, vop(d, k));             \
		}                                                      \
		for (; i + 16 <= len; i += 16) {                       \
			__m128i *v = (__m128i *)(p + i);               \
			_mm_store_si128(v, vop(_mm_load_si128(v), k)); \
		}                                                      \
		for (; i < len; i++)                                   \
			p[i] = sop(p[i], imm);                         \
	}

#define SXOR(a, b) ((uint8_t)((a) ^ (b)))
#define SADD(a, b) ((uint8_t)((a) + (b)))

INPLACE_KERNEL(xor_sse2, _mm_xor_si128, SXOR)
INPLACE_KERNEL(add_sse2, _mm_add_epi8, SADD)

/* Byte counters drained with psadbw every 255 iterations (see AVX2). */
static uint64_t counteq_sse2(const uint8_t *p, size_t len, uint8_t val)
{
	const __m128i k = _mm_set1_epi8((char)val);
	const __m128i zero = _mm_setzero_si128();
	__m128i total = zero;
	size_t i = 0, h = head_to_align(p, len, 16);
	uint64_t n = 0;

	for (; i < h; i++)
		n += p[i] == val;
	while (i + 64 <= len) {
		__m128i c0 = zero, c1 = zero, c2 = zero, c3 = zero;
		size_t blocks = (len - i) / 64;

		if (blocks > 255)
			blocks = 255;
		for (size_t b = 0; b < blocks; b++, i += 64) {
			const __m128i *v = (const __m128i *)(p + i);

			c0 = _mm_sub_epi8(c0, _mm_cmpeq_epi8(_mm_load_si128(v), k));
			c1 = _mm_sub_epi8(c1, _mm_cmpeq_epi8(_mm_load_si128(v + 1), k));
			c2 = _mm_sub_epi8(c2, _mm_cmpeq_epi8(_mm_load_si128(v + 2), k));
			c3 = _mm_sub_epi8(c3, _mm_cmpeq_epi8(_mm_load_si128(v + 3), k));
		}
		total = _mm_add_epi64(total, _mm_sad_epu8(c0, zero));
		total = _mm_add_epi64(total, _mm_sad_epu8(c1, zero));
		total = _mm_add_epi64(total, _mm_sad_epu8(c2, zero));
		total = _mm_add_epi64(total, _mm_sad_epu8(c3, zero));
	}
	for (; i + 16 <= len; i += 16) {
		__m128i c = _mm_sub_epi8(
			zero, _mm_cmpeq_epi8(_mm_load_si128((const __m128i *)(p + i)), k));
		total = _mm_add_epi64(total, _mm_sad_epu8(c, zero));
	}
	for (; i < len; i++)
		n += p[i] == val;
	return n + (uint64_t)_mm_cvtsi128_si64(total) +
	       (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(total, total));
}

static void fnv_multi_sse2(const uint8_t *const *p, const size_t *len, size_t n, uint64_t *out)
{
	pfs_ops_fnv_sched(p, len, n, out, 4, pfs_ops_fnv_step4);
}

static const struct pfs_ops_kernels kernels_sse2 = {
	.isa = PFS_ISA_SSE2,
	.name = "sse2",
	.xor_imm = xor_sse2,
	.add_imm = add_sse2,
	.counteq = counteq_sse2,
	.fnv_multi = fnv_multi_sse2,
};

const struct pfs_ops_kernels *pfs_ops__sse2(void)
{
	return &kernels_sse2;
}

#else

const struct pfs_ops_kernels *pfs_ops__sse2(void)
{
	return NULL;
}

#endif
