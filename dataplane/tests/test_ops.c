// SPDX-License-Identifier: Apache-2.0
/*
 * Op kernels against simple scalar references, for every kernel variant
 * this CPU can run (a variant it cannot run is a SKIP with the reason):
 * odd starts, odd ends, lengths around the vector widths, counters that
 * must be drained (> 255 vector iterations), FNV batches of unequal and
 * empty descriptors, the FNV fold and the CRC32C shift operator.
 * Single-threaded; buffers are malloc'd and guarded by canaries.
 * The NEON variant runs in the aarch64 build of this program, which
 * `make test` cross-builds and runs under qemu on x86 hosts (tests/arm64.sh).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfs/integrity.h"
#include "pfs/ops.h"
#include "tap.h"

/* ---------------------------------------------------------- references */

static void ref_xor(uint8_t *p, size_t n, uint8_t k)
{
	for (size_t i = 0; i < n; i++)
		p[i] ^= k;
}
static void ref_add(uint8_t *p, size_t n, uint8_t k)
{
	for (size_t i = 0; i < n; i++)
		p[i] += k;
}

static uint64_t ref_counteq(const uint8_t *p, size_t n, uint8_t k)
{
	uint64_t c = 0;

	for (size_t i = 0; i < n; i++)
		c += p[i] == k;
	return c;
}

static uint64_t ref_fnv(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static uint32_t ref_crc32c(uint32_t crc, const uint8_t *p, size_t n)
{
	crc = ~crc;
	for (size_t i = 0; i < n; i++) {
		crc ^= p[i];
		for (int b = 0; b < 8; b++)
			crc = (crc >> 1) ^ (0x82f63b78u & -(crc & 1));
	}
	return ~crc;
}

/* --------------------------------------------------------------- data */

#define BUF (256 * 1024)
#define GUARD 64

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Bytes drawn from a small alphabet so counteq finds many matches. */
static void fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(next_rand() % 5 + 0xfd);
}

static const size_t lens[] = {
	0,
	1,
	2,
	3,
	7,
	8,
	15,
	16,
	17,
	31,
	32,
	33,
	63,
	64,
	65,
	127,
	128,
	129,
	255,
	256,
	257,
	1000,
	4095,
	4096,
	4097,
	65535,
	65536 + 13,
	255 * 128 + 1,
	255 * 128 * 2 + 77,
	BUF - 2 * GUARD - 64,
};

/* A variant this CPU or build cannot run; NEON on x86 runs in the aarch64
 * build of this program instead (build/arm64/tests/test_ops under qemu). */
static int skip_isa(enum pfs_ops_isa isa)
{
#if !defined(__aarch64__)
	if (isa == PFS_ISA_NEON)
		return tap_skip("neon kernels are not in this build; the aarch64 build of "
				"test_ops runs them (tests/arm64.sh)");
#endif
	return tap_skip("%s kernels not supported by this CPU or build", pfs_ops_isa_str(isa));
}

static int test_inplace(enum pfs_ops_isa isa, int add)
{
	const struct pfs_ops_kernels *k = pfs_ops__kernels(isa);
	uint8_t *a = malloc(BUF), *b = malloc(BUF);

	if (!k) {
		free(a), free(b);
		return skip_isa(isa);
	}
	CHECK(a && b, "malloc");
	for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
		for (size_t start = GUARD; start < GUARD + 64; start += 7) {
			size_t n = lens[li];
			uint8_t imm = (uint8_t)next_rand();

			fill(a, BUF);
			memcpy(b, a, BUF);
			(add ? k->add_imm : k->xor_imm)(a + start, n, imm);
			(add ? ref_add : ref_xor)(b + start, n, imm);
			/* Whole-buffer compare: also catches writes outside. */
			CHECK(!memcmp(a, b, BUF), "%s %s start %zu len %zu", k->name,
			      add ? "add" : "xor", start, n);
		}
	}
	free(a), free(b);
	return 0;
}

static int test_counteq(enum pfs_ops_isa isa)
{
	const struct pfs_ops_kernels *k = pfs_ops__kernels(isa);
	uint8_t *a = malloc(BUF);

	if (!k) {
		free(a);
		return skip_isa(isa);
	}
	CHECK(a, "malloc");
	fill(a, BUF);
	for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
		for (size_t start = GUARD; start < GUARD + 64; start += 5) {
			uint8_t v = (uint8_t)(0xfd + next_rand() % 5);

			CHECK(k->counteq(a + start, lens[li], v) ==
				      ref_counteq(a + start, lens[li], v),
			      "%s start %zu len %zu", k->name, start, lens[li]);
		}
	}
	/* Every byte matches: byte counters must be drained before they
	 * overflow at 255. */
	memset(a, 0x5a, BUF);
	CHECK(k->counteq(a + 3, BUF - 3, 0x5a) == BUF - 3, "%s all-equal", k->name);
	CHECK(k->counteq(a + 3, BUF - 3, 0x5b) == 0, "%s none-equal", k->name);
	free(a);
	return 0;
}

static int test_fnv(enum pfs_ops_isa isa)
{
	const struct pfs_ops_kernels *k = pfs_ops__kernels(isa);
	enum { N = 67 };
	const uint8_t *p[N];
	size_t len[N];
	uint64_t out[N];
	uint8_t *a = malloc(BUF);

	if (!k) {
		free(a);
		return skip_isa(isa);
	}
	CHECK(a, "malloc");
	fill(a, BUF);
	for (int round = 0; round < 40; round++) {
		size_t n = round < 10 ? (size_t)round : N - (size_t)(next_rand() % 8);

		for (size_t i = 0; i < n; i++) {
			/* Mix of empty, one-byte, short and long, unequal. */
			size_t l = next_rand() % 4 == 0 ? next_rand() % 3 : next_rand() % 3000;

			p[i] = a + next_rand() % (BUF - 3000);
			len[i] = l;
		}
		if (round == 1)
			len[0] = 1;
		k->fnv_multi(p, len, n, out);
		for (size_t i = 0; i < n; i++)
			CHECK(out[i] == ref_fnv(p[i], len[i]), "%s round %d desc %zu len %zu",
			      k->name, round, i, len[i]);
	}
	/* Equal long lengths: the wide path runs start to end. */
	for (size_t i = 0; i < 16; i++)
		p[i] = a + i * 8191 + 1, len[i] = 8191;
	k->fnv_multi(p, len, 16, out);
	for (size_t i = 0; i < 16; i++)
		CHECK(out[i] == ref_fnv(p[i], len[i]), "%s equal desc %zu", k->name, i);
	free(a);
	return 0;
}

#define VARIANT_TESTS(isa, tag)              \
	static int test_xor_##tag(void)      \
	{                                    \
		return test_inplace(isa, 0); \
	}                                    \
	static int test_add_##tag(void)      \
	{                                    \
		return test_inplace(isa, 1); \
	}                                    \
	static int test_counteq_##tag(void)  \
	{                                    \
		return test_counteq(isa);    \
	}                                    \
	static int test_fnv_##tag(void)      \
	{                                    \
		return test_fnv(isa);        \
	}

VARIANT_TESTS(PFS_ISA_PORTABLE, portable)
VARIANT_TESTS(PFS_ISA_SSE2, sse2)
VARIANT_TESTS(PFS_ISA_AVX2, avx2)
VARIANT_TESTS(PFS_ISA_NEON, neon)

static int test_fnv_fold(void)
{
	uint64_t h[3] = { 0x0102030405060708ULL, 0, ~0ULL };
	uint8_t bytes[24];

	for (int i = 0; i < 3; i++)
		for (int b = 0; b < 8; b++)
			bytes[i * 8 + b] = (uint8_t)(h[i] >> (8 * b));
	CHECK(pfs_ops_fnv_fold(0xcbf29ce484222325ULL, h, 3) == ref_fnv(bytes, 24),
	      "fold is FNV-1a over little-endian hashes");
	CHECK(pfs_ops_fnv_fold(pfs_ops_fnv_fold(0xcbf29ce484222325ULL, h, 1), h + 1, 2) ==
		      ref_fnv(bytes, 24),
	      "fold extends");
	return 0;
}

static int test_crc_shift(void)
{
	static const size_t cuts[] = { 0, 1, 3, 64, 4095, 65536, 100000 };
	uint8_t *a = malloc(200000);
	struct pfs_crc32c_shift sh;

	CHECK(a, "malloc");
	fill(a, 200000);
	CHECK(ref_crc32c(0, (const uint8_t *)"123456789", 9) == 0xe3069283,
	      "reference check value");
	CHECK(pfs_crc32c(0, "123456789", 9) == 0xe3069283, "pfs_crc32c check value");
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		size_t na = 777, nb = cuts[i];
		uint32_t ca = ref_crc32c(0, a, na), cb = ref_crc32c(0, a + na, nb);
		uint32_t whole = ref_crc32c(0, a, na + nb);

		pfs_crc32c_shift__init(&sh, nb);
		CHECK(pfs_crc32c_shift__combine(&sh, ca, cb) == whole, "shift len %zu", nb);
		CHECK(pfs_ops_crc32c_combine(ca, cb, nb) == whole, "combine len %zu", nb);
		CHECK(pfs_crc32c_combine(ca, cb, nb) == whole, "integrity combine len %zu", nb);
		CHECK(pfs_crc32c(0, a, na + nb) == whole, "pfs_crc32c len %zu", na + nb);
	}
	/* A zero CRC on the left (first frame of a pass) passes b through. */
	pfs_crc32c_shift__init(&sh, 5);
	CHECK(pfs_crc32c_shift__combine(&sh, 0, 0x1234) == 0x1234, "zero left");
	free(a);
	return 0;
}

static int test_dispatch(void)
{
	const struct pfs_ops_kernels *b = pfs_ops__best();
	enum pfs_op op;
	enum pfs_ops_isa isa;

	CHECK(b && b->xor_imm && b->add_imm && b->counteq && b->fnv_multi, "best table");
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2"))
		CHECK(b->isa == PFS_ISA_AVX2, "AVX2 CPU must get AVX2 kernels, got %s", b->name);
#elif defined(__aarch64__)
	/* Advanced SIMD is architectural on AArch64: NEON is always the best. */
	CHECK(b->isa == PFS_ISA_NEON, "AArch64 must get NEON kernels, got %s", b->name);
#endif
	tap_diag("best kernels: %s", b->name);
	CHECK(!pfs_op_parse("crc32c", &op) && op == PFS_OP_CRC32C, "parse crc32c");
	CHECK(pfs_op_parse("mul", &op) == -22, "unknown op rejected");
	CHECK(!pfs_ops_isa_parse("auto", &isa) && isa == b->isa, "auto isa");
	CHECK(pfs_ops_isa_parse("avx9", &isa) == -22, "unknown isa rejected");
	return 0;
}

static const struct tap_test tests[] = {
	{ "dispatch picks the best supported kernels", test_dispatch },
	{ "xor portable vs reference", test_xor_portable },
	{ "add portable vs reference", test_add_portable },
	{ "counteq portable vs reference", test_counteq_portable },
	{ "fnv portable vs reference", test_fnv_portable },
	{ "xor sse2 vs reference", test_xor_sse2 },
	{ "add sse2 vs reference", test_add_sse2 },
	{ "counteq sse2 vs reference", test_counteq_sse2 },
	{ "fnv sse2 vs reference", test_fnv_sse2 },
	{ "xor avx2 vs reference", test_xor_avx2 },
	{ "add avx2 vs reference", test_add_avx2 },
	{ "counteq avx2 vs reference", test_counteq_avx2 },
	{ "fnv avx2 vs reference", test_fnv_avx2 },
	{ "xor neon vs reference", test_xor_neon },
	{ "add neon vs reference", test_add_neon },
	{ "counteq neon vs reference", test_counteq_neon },
	{ "fnv neon vs reference", test_fnv_neon },
	{ "fnv fold is FNV-1a over ordered hashes", test_fnv_fold },
	{ "crc32c shift/combine equals CRC of concatenation", test_crc_shift },
};

TAP_MAIN(tests)
