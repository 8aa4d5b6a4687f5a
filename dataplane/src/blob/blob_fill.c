// SPDX-License-Identifier: Apache-2.0
/*
 * The blob's seed fill: a counter-based generator (formula in blob.h), so any
 * byte range can be produced independently, by any thread, on any host, with
 * the same result. Pure function of its arguments; no shared state. The AVX2
 * path makes eight words per step and uses streaming stores for large
 * ranges; it is chosen per call from the CPU's features.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "pfs/blob.h"

#define FILL_GOLDEN 0x9e3779b9u
#define FILL_HI_MUL 0x27d4eb2fu

static inline uint32_t fmix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

static inline uint32_t seed_word(uint64_t i, uint64_t seed)
{
	uint32_t k = (uint32_t)(seed >> 32) ^ ((uint32_t)(i >> 32) * FILL_HI_MUL);

	return fmix32(((uint32_t)seed + (uint32_t)i * FILL_GOLDEN) ^ k);
}

static inline void store_le32(uint8_t *p, uint32_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	memcpy(p, &v, 4);
}

/* n words starting at word index i (no 2^32-word boundary inside). */
static void fill_words_scalar(uint8_t *dst, uint64_t i, size_t n, uint64_t seed)
{
	for (size_t j = 0; j < n; j++)
		store_le32(dst + 4 * j, seed_word(i + j, seed));
}

#if defined(__x86_64__)
/* Eight words per step; large fills use streaming stores so the pattern
 * does not first read every line it is about to overwrite. */
__attribute__((target("avx2"))) static void fill_words_avx2(uint8_t *dst, uint64_t i, size_t n,
							    uint64_t seed)
{
	uint32_t k = (uint32_t)(seed >> 32) ^ ((uint32_t)(i >> 32) * FILL_HI_MUL);
	bool nt = n >= (1u << 20);
	size_t j = 0;
	__m256i x, step, kk, m1, m2;

	while (j < n && ((uintptr_t)(dst + 4 * j) & 31)) {
		store_le32(dst + 4 * j, seed_word(i + j, seed));
		j++;
	}
	x = _mm256_add_epi32(
		_mm256_set1_epi32((int)((uint32_t)seed + (uint32_t)(i + j) * FILL_GOLDEN)),
		_mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
				   _mm256_set1_epi32((int)FILL_GOLDEN)));
	step = _mm256_set1_epi32((int)(8 * FILL_GOLDEN));
	kk = _mm256_set1_epi32((int)k);
	m1 = _mm256_set1_epi32((int)0x85ebca6bu);
	m2 = _mm256_set1_epi32((int)0xc2b2ae35u);
	for (; j + 8 <= n; j += 8) {
		__m256i h = _mm256_xor_si256(x, kk);

		h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 16));
		h = _mm256_mullo_epi32(h, m1);
		h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 13));
		h = _mm256_mullo_epi32(h, m2);
		h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 16));
		if (nt)
			_mm256_stream_si256((__m256i *)(dst + 4 * j), h);
		else
			_mm256_store_si256((__m256i *)(dst + 4 * j), h);
		x = _mm256_add_epi32(x, step);
	}
	if (nt)
		_mm_sfence();
	for (; j < n; j++)
		store_le32(dst + 4 * j, seed_word(i + j, seed));
}
#endif

static void fill_words(uint8_t *dst, uint64_t i, uint64_t n, uint64_t seed)
{
	while (n) {
		/* k changes every 2^32 words; keep each call inside one span. */
		uint64_t span = (1ULL << 32) - (i & 0xffffffffULL);
		size_t m = n < span ? n : span;

#if defined(__x86_64__)
		if (__builtin_cpu_supports("avx2"))
			fill_words_avx2(dst, i, m, seed);
		else
#endif
			fill_words_scalar(dst, i, m, seed);
		dst += 4 * m;
		i += m;
		n -= m;
	}
}

void pfs_blob_fill_seed(uint8_t *dst, uint64_t off, uint64_t len, uint64_t seed)
{
	uint64_t i = off / 4;
	unsigned int skip = off % 4;
	uint8_t w[4];

	if (skip && len) {
		size_t n = 4 - skip < len ? 4 - skip : len;

		store_le32(w, seed_word(i++, seed));
		memcpy(dst, w + skip, n);
		dst += n;
		len -= n;
	}
	fill_words(dst, i, len / 4, seed);
	dst += len & ~3ULL;
	i += len / 4;
	if (len & 3) {
		store_le32(w, seed_word(i, seed));
		memcpy(dst, w, len & 3);
	}
}
