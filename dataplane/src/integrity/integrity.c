// SPDX-License-Identifier: Apache-2.0
/*
 * Integrity checksums.
 *
 * CRC32C runs three independent crc32 instruction chains over three
 * adjacent blocks of a buffer, because one chain is bound by the
 * instruction's 3-cycle latency while the unit accepts one per cycle. The
 * three partial CRCs are merged by "shifting" the earlier ones over the
 * later blocks' length, which is a multiplication by x^(8*len) mod P. For
 * the two fixed block sizes used in the loop that multiplication is
 * precomputed into four 256-entry tables per size (it is linear in the
 * CRC, so each CRC byte can be looked up separately). Arbitrary-length
 * combines use a table of x^(2^k) mod P and square-and-multiply: O(log n).
 *
 * All tables are built once (pthread_once) and read-only afterwards, so
 * every function is thread-safe. The implementation is chosen at that
 * point from the CPU's features (cpuid via __builtin_cpu_supports on x86,
 * getauxval(AT_HWCAP) on arm64); pfs_crc32c_select() may change it before
 * other threads compute CRCs (the caller's choice: nothing here reads the
 * environment).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
#endif

#include "pfs/integrity.h"

/* Reflected Castagnoli polynomial; bit 31 holds x^0. */
#define CRC32C_POLY 0x82f63b78u
/* Block sizes of the 3-way loops; 3*LONG and 3*SHORT bytes per round. */
#define CRC_LONG 8192
#define CRC_SHORT 256

typedef uint32_t (*crc_fn)(uint32_t crc, const void *buf, size_t len);

static uint32_t slice8[8][256];
static uint32_t x2k[96]; /* x^(2^k) mod P */
static uint32_t shift_long[4][256]; /* raw crc * x^(8*CRC_LONG) */
static uint32_t shift_short[4][256]; /* raw crc * x^(8*CRC_SHORT) */
static crc_fn crc_impl;
static const char *crc_impl_name = "portable-slice8";
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

/* a * b mod P, both in the reflected representation. */
static uint32_t gf2_mulmod(uint32_t a, uint32_t b)
{
	uint32_t prod = 0;

	for (int i = 0; i < 32; i++) {
		if (a & (0x80000000u >> i))
			prod ^= b;
		b = (b >> 1) ^ (CRC32C_POLY & -(b & 1)); /* b *= x */
	}
	return prod;
}

/* x^(8*n) mod P by square-and-multiply over the x^(2^k) table. */
static uint32_t xpow8n(uint64_t n)
{
	uint32_t r = 0x80000000u; /* x^0 */
	unsigned int k = 3; /* 8*n == n << 3 */

	while (n) {
		if (n & 1)
			r = gf2_mulmod(x2k[k], r);
		n >>= 1;
		k++;
	}
	return r;
}

#if defined(__x86_64__)
/* x^n mod P for any n (bits): the folding constants. */
static uint32_t xpown(uint64_t n)
{
	uint32_t r = 0x80000000u;

	for (unsigned int k = 0; n; n >>= 1, k++)
		if (n & 1)
			r = gf2_mulmod(x2k[k], r);
	return r;
}
#endif

static inline uint32_t shift_tab(const uint32_t t[4][256], uint32_t c)
{
	return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^ t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
}

static void build_shift(uint32_t t[4][256], uint64_t nbytes)
{
	uint32_t m = xpow8n(nbytes);

	for (int j = 0; j < 4; j++)
		for (uint32_t b = 0; b < 256; b++)
			t[j][b] = gf2_mulmod(m, b << (8 * j));
}

static inline uint64_t load_le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

/* Slicing-by-8: eight table lookups per 8 input bytes, no special CPU. */
static uint32_t crc_slice8_raw(uint32_t c, const uint8_t *p, size_t len)
{
	while (len && ((uintptr_t)p & 7)) {
		c = slice8[0][(c ^ *p++) & 0xff] ^ (c >> 8);
		len--;
	}
	while (len >= 8) {
		uint64_t v = load_le64(p) ^ c;

		c = slice8[7][v & 0xff] ^ slice8[6][(v >> 8) & 0xff] ^ slice8[5][(v >> 16) & 0xff] ^
		    slice8[4][(v >> 24) & 0xff] ^ slice8[3][(v >> 32) & 0xff] ^
		    slice8[2][(v >> 40) & 0xff] ^ slice8[1][(v >> 48) & 0xff] ^ slice8[0][v >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		c = slice8[0][(c ^ *p++) & 0xff] ^ (c >> 8);
	return c;
}

static uint32_t crc_portable(uint32_t crc, const void *buf, size_t len)
{
	return ~crc_slice8_raw(~crc, buf, len);
}

/*
 * The 3-way loop, written once for both architectures: CRC_U64/CRC_U8 are
 * the instruction intrinsics. Streams 1 and 2 start from a zero register;
 * since the raw CRC is linear, crc(A||B) = shift(crc(A), |B|) ^ crc0(B).
 */
#define CRC_3WAY_BODY(CRC_U64, CRC_U8)                                  \
	const uint8_t *p = buf;                                         \
	uint64_t c0 = (uint32_t)~crc;                                   \
                                                                        \
	while (len && ((uintptr_t)p & 7)) {                             \
		c0 = CRC_U8((uint32_t)c0, *p++);                        \
		len--;                                                  \
	}                                                               \
	while (len >= 3 * CRC_LONG) {                                   \
		uint64_t c1 = 0, c2 = 0;                                \
		const uint8_t *end = p + CRC_LONG;                      \
                                                                        \
		do {                                                    \
			c0 = CRC_U64(c0, load_le64(p));                 \
			c1 = CRC_U64(c1, load_le64(p + CRC_LONG));      \
			c2 = CRC_U64(c2, load_le64(p + 2 * CRC_LONG));  \
			p += 8;                                         \
		} while (p < end);                                      \
		c0 = shift_tab(shift_long, (uint32_t)c0) ^ c1;          \
		c0 = shift_tab(shift_long, (uint32_t)c0) ^ c2;          \
		p += 2 * CRC_LONG;                                      \
		len -= 3 * CRC_LONG;                                    \
	}                                                               \
	while (len >= 3 * CRC_SHORT) {                                  \
		uint64_t c1 = 0, c2 = 0;                                \
		const uint8_t *end = p + CRC_SHORT;                     \
                                                                        \
		do {                                                    \
			c0 = CRC_U64(c0, load_le64(p));                 \
			c1 = CRC_U64(c1, load_le64(p + CRC_SHORT));     \
			c2 = CRC_U64(c2, load_le64(p + 2 * CRC_SHORT)); \
			p += 8;                                         \
		} while (p < end);                                      \
		c0 = shift_tab(shift_short, (uint32_t)c0) ^ c1;         \
		c0 = shift_tab(shift_short, (uint32_t)c0) ^ c2;         \
		p += 2 * CRC_SHORT;                                     \
		len -= 3 * CRC_SHORT;                                   \
	}                                                               \
	while (len >= 8) {                                              \
		c0 = CRC_U64(c0, load_le64(p));                         \
		p += 8;                                                 \
		len -= 8;                                               \
	}                                                               \
	while (len--)                                                   \
		c0 = CRC_U8((uint32_t)c0, *p++);                        \
	return ~(uint32_t)c0;

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t crc, const void *buf,
							    size_t len)
{
	CRC_3WAY_BODY(_mm_crc32_u64, _mm_crc32_u8)
}

/*
 * Folding with carry-less multiplies (VPCLMULQDQ, 256-bit): the crc32
 * instruction retires at most 8 bytes a cycle however many chains run, while
 * one 256-bit carry-less multiply folds 16 bytes, and cores with VPCLMULQDQ
 * (Ice Lake and later, Zen 3 and later) issue one a cycle.
 * Four accumulators of two 128-bit lanes each hold the message so far reduced
 * to 128 bytes: a lane A = L*x^64 + H (L its first 8 bytes, the higher
 * powers) moves D bits forward as L*(x^(D+63) mod P) ^ H*(x^(D-1) mod P),
 * a 95-bit product that the reflected multiply leaves shifted by one, hence
 * the -1 in both exponents. The last 16 bytes of state go through the crc32
 * instruction from a zero CRC: the raw CRC depends only on the message mod P,
 * which folding preserves, so no Barrett reduction is needed.
 */
#define FOLD_BLOCK 128
/* [x^(D+63), x^(D-1)] for D = 1024, 256, 128 bits, set by crc_init. */
static uint64_t fold_k[3][2];

static uint64_t fold_pair_lo(unsigned int dbits)
{
	return (uint64_t)xpown(dbits + 63) << 32;
}

static uint64_t fold_pair_hi(unsigned int dbits)
{
	return (uint64_t)xpown(dbits - 1) << 32;
}

__attribute__((target("avx2,vpclmulqdq"))) static inline __m256i fold256(__m256i a, __m256i k)
{
	return _mm256_xor_si256(_mm256_clmulepi64_epi128(a, k, 0x00),
				_mm256_clmulepi64_epi128(a, k, 0x11));
}

__attribute__((target("avx2,vpclmulqdq"))) static inline __m256i fold_k256(const uint64_t k[2])
{
	return _mm256_setr_epi64x((long long)k[0], (long long)k[1], (long long)k[0],
				  (long long)k[1]);
}

/* Fold >= FOLD_BLOCK bytes (a multiple of it) into 16 bytes of state. */
__attribute__((target("avx2,vpclmulqdq,pclmul,sse4.2"))) static uint32_t
fold_vpclmul(uint32_t c, const uint8_t *p, size_t len)
{
	const __m256i *v = (const __m256i *)p;
	__m256i k1024 = fold_k256(fold_k[0]), k256 = fold_k256(fold_k[1]);
	__m256i a0 = _mm256_xor_si256(_mm256_loadu_si256(v),
				      _mm256_setr_epi32((int)c, 0, 0, 0, 0, 0, 0, 0));
	__m256i a1 = _mm256_loadu_si256(v + 1), a2 = _mm256_loadu_si256(v + 2);
	__m256i a3 = _mm256_loadu_si256(v + 3);
	__m128i lo, hi, k128;

	for (v += 4, len -= FOLD_BLOCK; len; v += 4, len -= FOLD_BLOCK) {
		a0 = _mm256_xor_si256(fold256(a0, k1024), _mm256_loadu_si256(v));
		a1 = _mm256_xor_si256(fold256(a1, k1024), _mm256_loadu_si256(v + 1));
		a2 = _mm256_xor_si256(fold256(a2, k1024), _mm256_loadu_si256(v + 2));
		a3 = _mm256_xor_si256(fold256(a3, k1024), _mm256_loadu_si256(v + 3));
	}
	a1 = _mm256_xor_si256(fold256(a0, k256), a1);
	a2 = _mm256_xor_si256(fold256(a1, k256), a2);
	a3 = _mm256_xor_si256(fold256(a2, k256), a3);
	lo = _mm256_castsi256_si128(a3);
	hi = _mm256_extracti128_si256(a3, 1);
	k128 = _mm_set_epi64x((long long)fold_k[2][1], (long long)fold_k[2][0]);
	lo = _mm_xor_si128(_mm_clmulepi64_si128(lo, k128, 0x00),
			   _mm_clmulepi64_si128(lo, k128, 0x11));
	hi = _mm_xor_si128(hi, lo);
	c = (uint32_t)_mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(hi));
	return (uint32_t)_mm_crc32_u64(c, (uint64_t)_mm_extract_epi64(hi, 1));
}

/* Short buffers and the tail go through the 3-way crc32 loop. */
__attribute__((target("avx2,vpclmulqdq,pclmul,sse4.2"))) static uint32_t
crc_vpclmul(uint32_t crc, const void *buf, size_t len)
{
	size_t body = len / FOLD_BLOCK * FOLD_BLOCK;

	if (len < 2 * FOLD_BLOCK)
		return crc_sse42(crc, buf, len);
	crc = ~fold_vpclmul(~crc, buf, body);
	return crc_sse42(crc, (const uint8_t *)buf + body, len - body);
}
#endif

#if defined(__aarch64__)
/* Inline asm rather than <arm_acle.h>: its intrinsics need the whole file
 * built with +crc on some compilers, and this path is chosen at run time. */
static inline uint64_t arm_crc_u64(uint64_t c, uint64_t v)
{
	uint32_t r;

	__asm__(".arch_extension crc\n\tcrc32cx %w0, %w1, %x2"
		: "=r"(r)
		: "r"((uint32_t)c), "r"(v));
	return r;
}

static inline uint32_t arm_crc_u8(uint32_t c, uint8_t v)
{
	uint32_t r;

	__asm__(".arch_extension crc\n\tcrc32cb %w0, %w1, %w2"
		: "=r"(r)
		: "r"(c), "r"((uint32_t)v));
	return r;
}

static uint32_t crc_armv8(uint32_t crc, const void *buf, size_t len)
{
	CRC_3WAY_BODY(arm_crc_u64, arm_crc_u8)
}
#endif

/* The implementation: the table, or the best the CPU has. */
static void crc_choose(bool portable)
{
	crc_impl = crc_portable;
	crc_impl_name = "portable-slice8";
	if (portable)
		return;
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("sse4.2")) {
		crc_impl = crc_sse42;
		crc_impl_name = "sse4.2-3way";
	}
	if (__builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("avx2") &&
	    __builtin_cpu_supports("vpclmulqdq")) {
		crc_impl = crc_vpclmul;
		crc_impl_name = "vpclmulqdq-fold";
	}
#elif defined(__aarch64__)
	if (getauxval(AT_HWCAP) & HWCAP_CRC32) {
		crc_impl = crc_armv8;
		crc_impl_name = "armv8-crc-3way";
	}
#endif
}

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (CRC32C_POLY & -(c & 1));
		slice8[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			slice8[t][i] = slice8[0][slice8[t - 1][i] & 0xff] ^ (slice8[t - 1][i] >> 8);

	x2k[0] = 0x40000000u; /* x^1 */
	for (size_t k = 1; k < sizeof(x2k) / sizeof(x2k[0]); k++)
		x2k[k] = gf2_mulmod(x2k[k - 1], x2k[k - 1]);
	build_shift(shift_long, CRC_LONG);
	build_shift(shift_short, CRC_SHORT);
#if defined(__x86_64__)
	for (int i = 0; i < 3; i++) {
		static const unsigned int dbits[3] = { 8 * FOLD_BLOCK, 256, 128 };

		fold_k[i][0] = fold_pair_lo(dbits[i]);
		fold_k[i][1] = fold_pair_hi(dbits[i]);
	}
#endif
	crc_choose(false);
}

int pfs_crc32c_select(const char *name)
{
	bool portable;

	if (!name)
		return -EINVAL;
	if (!strcmp(name, "portable"))
		portable = true;
	else if (!strcmp(name, "auto"))
		portable = false;
	else
		return -EINVAL;
	pthread_once(&crc_once, crc_init);
	crc_choose(portable);
	return 0;
}

uint32_t pfs_crc32c_portable(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&crc_once, crc_init);
	return crc_portable(crc, buf, len);
}

uint32_t pfs_crc32c(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&crc_once, crc_init);
	return crc_impl(crc, buf, len);
}

/* With the standard pre/post inversion the inversions cancel out:
 * crc(A||B) = crc(A) * x^(8|B|) ^ crc(B). */
uint32_t pfs_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
	pthread_once(&crc_once, crc_init);
	return gf2_mulmod(xpow8n(len_b), crc_a) ^ crc_b;
}

const char *pfs_crc32c_impl(void)
{
	pthread_once(&crc_once, crc_init);
	return crc_impl_name;
}

/* FNV-1a is one serial multiply chain; unrolling only trims loop overhead. */
uint64_t pfs_fnv1a64(uint64_t h, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len >= 4) {
		h = (h ^ p[0]) * PFS_FNV1A64_PRIME;
		h = (h ^ p[1]) * PFS_FNV1A64_PRIME;
		h = (h ^ p[2]) * PFS_FNV1A64_PRIME;
		h = (h ^ p[3]) * PFS_FNV1A64_PRIME;
		p += 4;
		len -= 4;
	}
	while (len--)
		h = (h ^ *p++) * PFS_FNV1A64_PRIME;
	return h;
}

static const char *const integrity_names[] = {
	[PFS_INTEGRITY_CRC32C] = "crc32c",
	[PFS_INTEGRITY_FNV1A64] = "fnv1a64",
	[PFS_INTEGRITY_NONE] = "none",
};

int pfs_integrity_parse(const char *s, enum pfs_integrity *k)
{
	for (size_t i = 0; i < sizeof(integrity_names) / sizeof(integrity_names[0]); i++)
		if (!strcasecmp(s, integrity_names[i])) {
			*k = (enum pfs_integrity)i;
			return 0;
		}
	return -EINVAL;
}

const char *pfs_integrity_str(enum pfs_integrity k)
{
	return (unsigned)k < sizeof(integrity_names) / sizeof(integrity_names[0]) ?
		       integrity_names[k] :
		       "unknown";
}
