// SPDX-License-Identifier: Apache-2.0
/*
 * The copy limit of `pfs bench` (tools/pfs/bench_copy.c, linked from
 * libpfs-cli.a): every kernel this CPU runs copies exactly (odd lengths,
 * unaligned sources), the widest vector copy the CPU has is among them,
 * and a measurement names its best kernel and refuses bad arguments.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench_copy.h"
#include "tap.h"

static bool has(const char *name)
{
	size_t n;
	const struct pfs_bench_copy_kernel *k = pfs_bench_copy__kernels(&n);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(k[i].name, name))
			return true;
	return false;
}

static int t_kernels_copy_exactly(void)
{
	static const uint64_t lens[] = { 0, 1, 63, 255, 256, 257, 4097, 131072 + 7 };
	enum { CAP = 131072 + 64 };
	uint8_t *src = malloc(CAP + 64), *dst = malloc(CAP + 64);
	size_t n;
	const struct pfs_bench_copy_kernel *k = pfs_bench_copy__kernels(&n);

	CHECK(src && dst, "malloc");
	for (size_t i = 0; i < CAP + 64; i++)
		src[i] = (uint8_t)(i * 131 + 7);
	for (size_t i = 0; i < n; i++) {
		for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
			memset(dst, 0xee, CAP + 64);
			k[i].fn(dst + 1, src + 3, lens[l]); /* both unaligned */
			CHECK(!memcmp(dst + 1, src + 3, lens[l]), "%s: %llu bytes differ",
			      k[i].name, (unsigned long long)lens[l]);
			CHECK(dst[0] == 0xee && dst[1 + lens[l]] == 0xee,
			      "%s: %llu bytes: wrote outside the destination", k[i].name,
			      (unsigned long long)lens[l]);
		}
	}
	free(src);
	free(dst);
	return TAP_PASS;
}

static int t_widest_vector_is_there(void)
{
	CHECK(has("glibc"), "glibc memcpy is always measured");
#if defined(__x86_64__)
	CHECK(has("avx2") == !!__builtin_cpu_supports("avx2"), "avx2 runs iff the CPU has it");
	CHECK(has("avx512") == !!__builtin_cpu_supports("avx512f"),
	      "avx512 runs iff the CPU has it");
	if (!__builtin_cpu_supports("avx512f"))
		tap_diag("no AVX-512 on this CPU: the copy limit's widest kernel is avx2");
#endif
	return TAP_PASS;
}

static int t_measure_names_the_best(void)
{
	enum { LEN = 8 << 20, CHUNK = 128 << 10 };
	uint8_t *src = malloc(LEN);
	struct pfs_bench_copy c;
	double best = 0;

	CHECK(src, "malloc");
	memset(src, 0x5a, LEN);
	CHECK(pfs_bench_copy__measure(src, LEN, CHUNK, 2, &c) == 0, "measure");
	CHECK(c.n >= 1 && c.impl && c.chunk == CHUNK && c.passes == 2, "n %u", c.n);
	for (unsigned i = 0; i < c.n; i++) {
		CHECK(c.mb_s[i] > 0, "%s: rate %.1f", c.kernel[i], c.mb_s[i]);
		if (c.mb_s[i] > best)
			best = c.mb_s[i];
	}
	CHECK(c.best_mb_s == best, "best %.1f, max of kernels %.1f", c.best_mb_s, best);
	CHECK(c.incache_mb_s > 0, "in-cache rate %.1f", c.incache_mb_s);
	tap_diag("8 MiB source: %s %.0f MB/s, in cache %.0f MB/s", c.impl, c.best_mb_s,
		 c.incache_mb_s);
	CHECK(pfs_bench_copy__measure(src, LEN, 0, 2, &c) == -EINVAL, "chunk 0");
	CHECK(pfs_bench_copy__measure(src, CHUNK - 1, CHUNK, 2, &c) == -EINVAL, "chunk > len");
	CHECK(pfs_bench_copy__measure(src, LEN, CHUNK, 0, &c) == -EINVAL, "0 passes");
	free(src);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "every copy kernel copies exactly (odd lengths, unaligned)", t_kernels_copy_exactly },
	{ "the widest vector copy of this CPU is measured", t_widest_vector_is_there },
	{ "a measurement names its best kernel and refuses bad arguments",
	  t_measure_names_the_best },
};

TAP_MAIN(tests)
