// SPDX-License-Identifier: Apache-2.0
/*
 * CRC32C and FNV-1a 64: standard vectors, accelerated == portable == a
 * bit-at-a-time reference over random buffers, lengths and alignments, and
 * the combine algebra. Single-threaded; buffers are heap-owned by each test.
 * The implementation under test (vpclmulqdq-fold, sse4.2-3way,
 * armv8-crc-3way or portable-slice8) is printed as a diagnostic and must be the one the CPU
 * allows; on x86 hosts the aarch64 build runs under qemu (tests/arm64.sh).
 */
#include <stdint.h>
#include <stdlib.h>
#if defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
#endif

#include "pfs/integrity.h"
#include "tap.h"

/* Bit-at-a-time reference straight from the definition (reflected). */
static uint32_t crc_ref(uint32_t crc, const uint8_t *p, size_t len)
{
	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78u & -(crc & 1));
	}
	return ~crc;
}

static uint64_t rng_state = 0x1234567887654321ULL;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static int t_crc_check_value(void)
{
	CHECK(pfs_crc32c(0, "123456789", 9) == 0xe3069283u, "got %08x",
	      pfs_crc32c(0, "123456789", 9));
	CHECK(pfs_crc32c_portable(0, "123456789", 9) == 0xe3069283u, "portable");
	CHECK(pfs_crc32c(0, "", 0) == 0, "empty");
	return TAP_PASS;
}

/* RFC 3720 appendix B.4 (iSCSI CRC32C examples). */
static int t_crc_rfc3720(void)
{
	static const uint8_t read10[48] = {
		0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
		0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18, 0x28, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	uint8_t b[32];

	memset(b, 0, 32);
	CHECK(pfs_crc32c(0, b, 32) == 0x8a9136aau, "zeros %08x", pfs_crc32c(0, b, 32));
	memset(b, 0xff, 32);
	CHECK(pfs_crc32c(0, b, 32) == 0x62a8ab43u, "ones %08x", pfs_crc32c(0, b, 32));
	for (int i = 0; i < 32; i++)
		b[i] = i;
	CHECK(pfs_crc32c(0, b, 32) == 0x46dd794eu, "incr %08x", pfs_crc32c(0, b, 32));
	for (int i = 0; i < 32; i++)
		b[i] = 31 - i;
	CHECK(pfs_crc32c(0, b, 32) == 0x113fdb5cu, "decr %08x", pfs_crc32c(0, b, 32));
	CHECK(pfs_crc32c(0, read10, 48) == 0xd9963a56u, "read10 %08x", pfs_crc32c(0, read10, 48));
	return TAP_PASS;
}

/* FNV-1a 64 vectors from the FNV reference test suite. */
static int t_fnv_vectors(void)
{
	CHECK(pfs_fnv1a64(PFS_FNV1A64_INIT, "", 0) == 0xcbf29ce484222325ULL, "empty");
	CHECK(pfs_fnv1a64(PFS_FNV1A64_INIT, "a", 1) == 0xaf63dc4c8601ec8cULL, "a");
	CHECK(pfs_fnv1a64(PFS_FNV1A64_INIT, "foobar", 6) == 0x85944171f73967e8ULL, "foobar");
	/* Incremental == one shot. */
	CHECK(pfs_fnv1a64(pfs_fnv1a64(PFS_FNV1A64_INIT, "foo", 3), "bar", 3) ==
		      0x85944171f73967e8ULL,
	      "split");
	return TAP_PASS;
}

/* The accelerated path must be chosen whenever the CPU has the instruction
 * (cpuid on x86, AT_HWCAP on arm64) and PFS_CRC32C_IMPL does not force the
 * portable one (this program passes it on as pfs does: the library reads
 * no environment); a CPU without it is a SKIP, since nothing accelerated
 * runs. */
static int t_crc_impl_named(void)
{
	const char *force = getenv("PFS_CRC32C_IMPL");
	const char *impl;

	if (force && !strcmp(force, "portable"))
		pfs_crc32c_select("portable");
	impl = pfs_crc32c_impl();

	tap_diag("crc32c implementation: %s", impl);
	if (force && !strcmp(force, "portable")) {
		CHECK(!strcmp(impl, "portable-slice8"), "forced portable but impl is %s", impl);
		return TAP_PASS;
	}
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("sse4.2"))
		return tap_skip("cpu has no sse4.2 crc32; %s in use", impl);
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("vpclmulqdq"))
		CHECK(!strcmp(impl, "vpclmulqdq-fold"), "cpu has vpclmulqdq but impl is %s", impl);
	else
		CHECK(!strcmp(impl, "sse4.2-3way"), "cpu has sse4.2 but impl is %s", impl);
#elif defined(__aarch64__)
	tap_diag("AT_HWCAP 0x%lx (HWCAP_CRC32 %s)", getauxval(AT_HWCAP),
		 getauxval(AT_HWCAP) & HWCAP_CRC32 ? "set" : "clear");
	if (!(getauxval(AT_HWCAP) & HWCAP_CRC32))
		return tap_skip("HWCAP_CRC32 clear; %s in use", impl);
	CHECK(!strcmp(impl, "armv8-crc-3way"), "HWCAP_CRC32 set but impl is %s", impl);
#else
	return tap_skip("no accelerated crc32c on this architecture; %s in use", impl);
#endif
	return TAP_PASS;
}

/* Every length 0..2000 and larger random ones, every alignment 0..15. */
static int t_crc_accel_eq_portable(void)
{
	size_t cap = 3 * 8192 * 4 + 64;
	uint8_t *buf = malloc(cap);

	CHECK(buf, "malloc");
	tap_diag("accelerated = %s", pfs_crc32c_impl());
	for (size_t i = 0; i < cap; i++)
		buf[i] = rng();
	for (size_t len = 0; len <= 2000; len++) {
		size_t a = len % 16;
		uint32_t seed = (uint32_t)rng();
		uint32_t r = crc_ref(seed, buf + a, len);

		CHECK(pfs_crc32c(seed, buf + a, len) == r, "len %zu align %zu", len, a);
		CHECK(pfs_crc32c_portable(seed, buf + a, len) == r, "portable len %zu", len);
	}
	for (int i = 0; i < 300; i++) {
		size_t a = rng() % 16;
		size_t len = rng() % (cap - a);
		uint32_t r = crc_ref(0, buf + a, len);

		CHECK(pfs_crc32c(0, buf + a, len) == r, "len %zu align %zu", len, a);
		CHECK(pfs_crc32c_portable(0, buf + a, len) == r, "portable len %zu", len);
	}
	free(buf);
	return TAP_PASS;
}

static int t_crc_combine(void)
{
	uint8_t buf[70000];

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = rng();
	for (int i = 0; i < 200; i++) {
		size_t n = rng() % sizeof(buf), k = n ? rng() % (n + 1) : 0;
		uint32_t a = pfs_crc32c(0, buf, k), b = pfs_crc32c(0, buf + k, n - k);

		CHECK(pfs_crc32c_combine(a, b, n - k) == pfs_crc32c(0, buf, n), "n %zu k %zu", n,
		      k);
	}
	CHECK(pfs_crc32c_combine(0x12345678u, 0, 0) == 0x12345678u, "len 0");
	/* Associativity at lengths far past any buffer: (A.B).C == A.(B.C). */
	for (int i = 0; i < 50; i++) {
		uint32_t a = rng(), b = rng(), c = rng();
		uint64_t nb = rng() >> 20, nc = rng() >> 20;

		CHECK(pfs_crc32c_combine(pfs_crc32c_combine(a, b, nb), c, nc) ==
			      pfs_crc32c_combine(a, pfs_crc32c_combine(b, c, nc), nb + nc),
		      "assoc nb %llu nc %llu", (unsigned long long)nb, (unsigned long long)nc);
	}
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "crc32c check value 123456789", t_crc_check_value },
	{ "crc32c RFC 3720 B.4 vectors", t_crc_rfc3720 },
	{ "fnv1a64 reference vectors", t_fnv_vectors },
	{ "crc32c implementation matches cpu", t_crc_impl_named },
	{ "crc32c accelerated == portable == bitwise (lengths, alignments)",
	  t_crc_accel_eq_portable },
	{ "crc32c combine == direct, associative at large lengths", t_crc_combine },
};

TAP_MAIN(tests)
