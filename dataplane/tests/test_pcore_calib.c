// SPDX-License-Identifier: Apache-2.0
/*
 * The kernels `pfs pcore calibrate` measures its limits with
 * (tools/pfs/pcore_calib.c, linked from libpfs-cli.a), in-process, one
 * thread: every read, copy and in-place kernel of each ISA this CPU runs
 * against a byte-at-a-time reference over unaligned starts and odd lengths
 * (read: the OR of the range, nothing outside it; copy: the destination
 * equals the source, no byte written around it; rmw: every byte xor-ed
 * once, none outside), then the dispatcher: the widest kernel is the one
 * the CPU's features allow, the measure names the candidate that won each
 * limit, and the limits are at least as wide as the op kernels.
 * Memory: one mapping per check, unmapped before it returns.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "pcore_calib.h" /* tools/pfs */
#include "pfs/integrity.h"
#include "pfs/ops.h"
#include "tap.h"

#define AREA (4u << 20)
#define SLACK 256u /* bytes checked untouched on each side of a range */

/* {offset, length} of the ranges every kernel runs over: empty, shorter
 * than one vector, one vector, unaligned heads and tails, past one loop
 * iteration of the widest kernel, and a long one. */
static const struct {
	uint64_t off, len;
} cases[] = {
	{ SLACK, 0 },		{ SLACK, 1 },
	{ SLACK + 3, 63 },	{ SLACK, 64 },
	{ SLACK + 1, 255 },	{ SLACK, 512 },
	{ SLACK + 64, 1543 },	{ SLACK + 17, 4096 },
	{ SLACK + 33, 100003 }, { SLACK + 5, (1u << 20) + 77 },
};

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint8_t rnd8(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint8_t)(rng >> 32);
}

static uint8_t *area_map(void)
{
	uint8_t *p = mmap(NULL, AREA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* The kernels of @what that need @isa: how many this build has and how
 * many of them this CPU runs; a SKIP with the reason when none runs. */
static int runnable_of(enum pfs_pcore_calib_what what, enum pfs_pcore_calib_isa isa,
		       const struct pfs_pcore_calib_kernel **out, size_t *nout)
{
	size_t n, built = 0;
	const struct pfs_pcore_calib_kernel *t = pfs_pcore_calib__kernels(what, &n);

	*nout = 0;
	for (size_t i = 0; i < n; i++) {
		if (t[i].isa != isa)
			continue;
		built++;
		if (pfs_pcore_calib__runnable(&t[i]))
			out[(*nout)++] = &t[i];
	}
	if (!built)
		return tap_skip("%s kernels are not in this build", pfs_pcore_calib_isa_str(isa));
	if (!*nout)
		return tap_skip("%s not supported by this CPU", pfs_pcore_calib_isa_str(isa));
	return TAP_PASS;
}

static int check_read(enum pfs_pcore_calib_isa isa)
{
	const struct pfs_pcore_calib_kernel *k[PFS_PCORE_CALIB_KMAX];
	size_t nk;
	int rc = runnable_of(PFS_CALIB_READ, isa, k, &nk);
	uint8_t *buf;

	if (rc != TAP_PASS)
		return rc;
	buf = area_map();
	CHECK(buf, "map %u bytes: %s", AREA, strerror(errno));
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		uint64_t off = cases[c].off, len = cases[c].len;

		/* Sparse bits, so a byte the kernel skips or adds shows:
		 * one bit at the range's first and last byte and one just
		 * outside each end (which must not be seen), and a pattern
		 * of the low bits through it. */
		memset(buf, 0, AREA);
		for (uint64_t i = 0; i < len; i++)
			buf[off + i] = (uint8_t)(((off + i) * 7 % 61 == 0) << (i % 3));
		buf[off - 1] = 0x40;
		buf[off + len] = 0x20;
		if (len) {
			buf[off] |= 0x08;
			buf[off + len - 1] |= 0x80;
		}
		uint8_t want = 0;

		for (uint64_t i = 0; i < len; i++)
			want |= buf[off + i];
		for (size_t j = 0; j < nk; j++) {
			uint64_t v = k[j]->read(buf + off, len);
			uint8_t got = 0;

			for (int b = 0; b < 64; b += 8)
				got |= (uint8_t)(v >> b);
			if (got != want) {
				munmap(buf, AREA);
				CHECK(got == want, "%s over [%llu, +%llu): OR %#x, want %#x",
				      k[j]->name, (unsigned long long)off, (unsigned long long)len,
				      got, want);
			}
		}
	}
	munmap(buf, AREA);
	for (size_t j = 0; j < nk; j++)
		tap_diag("read %s (%u-byte loads): OR of %zu ranges equals the scalar OR",
			 k[j]->name, k[j]->width, sizeof(cases) / sizeof(cases[0]));
	return TAP_PASS;
}

static int check_copy(enum pfs_pcore_calib_isa isa)
{
	const struct pfs_pcore_calib_kernel *k[PFS_PCORE_CALIB_KMAX];
	size_t nk;
	int rc = runnable_of(PFS_CALIB_COPY, isa, k, &nk);
	uint8_t *src, *dst;

	if (rc != TAP_PASS)
		return rc;
	src = area_map();
	dst = area_map();
	CHECK(src && dst, "map 2 x %u bytes: %s", AREA, strerror(errno));
	for (uint32_t i = 0; i < AREA; i++)
		src[i] = rnd8();
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (size_t j = 0; j < nk; j++) {
			/* The source one byte further than the destination too:
			 * the two alignments differ. */
			uint64_t off = cases[c].off, len = cases[c].len, so = off + (c & 1);
			int bad = 0;

			memset(dst, 0xcc, AREA);
			k[j]->copy(dst + off, src + so, len);
			bad |= memcmp(dst + off, src + so, len) != 0;
			for (uint64_t i = off - SLACK; i < off; i++)
				bad |= (dst[i] != 0xcc) << 1;
			for (uint64_t i = off + len; i < off + len + SLACK; i++)
				bad |= (dst[i] != 0xcc) << 2;
			if (bad) {
				munmap(src, AREA);
				munmap(dst, AREA);
				CHECK(!bad, "%s to [%llu, +%llu) from +%llu: %s", k[j]->name,
				      (unsigned long long)off, (unsigned long long)len,
				      (unsigned long long)so,
				      bad & 1 ? "destination differs from the source" :
						"a byte around the destination was written");
			}
		}
	}
	munmap(src, AREA);
	munmap(dst, AREA);
	for (size_t j = 0; j < nk; j++)
		tap_diag("copy %s: %zu ranges equal their source, nothing around them written",
			 k[j]->name, sizeof(cases) / sizeof(cases[0]));
	return TAP_PASS;
}

static int check_rmw(enum pfs_pcore_calib_isa isa)
{
	const struct pfs_pcore_calib_kernel *k[PFS_PCORE_CALIB_KMAX];
	size_t nk;
	int rc = runnable_of(PFS_CALIB_RMW, isa, k, &nk);
	uint8_t *buf, *ref;

	if (rc != TAP_PASS)
		return rc;
	buf = area_map();
	ref = area_map();
	CHECK(buf && ref, "map 2 x %u bytes: %s", AREA, strerror(errno));
	for (uint32_t i = 0; i < AREA; i++)
		ref[i] = rnd8();
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (size_t j = 0; j < nk; j++) {
			uint64_t off = cases[c].off, len = cases[c].len, bad = UINT64_MAX;
			uint8_t key = (uint8_t)(0x5a + c);

			memcpy(buf, ref, AREA);
			k[j]->rmw(buf + off, len, key);
			for (uint64_t i = off - SLACK; i < off + len + SLACK && bad == UINT64_MAX;
			     i++) {
				uint8_t want = i >= off && i < off + len ? ref[i] ^ key : ref[i];

				if (buf[i] != want)
					bad = i;
			}
			if (bad != UINT64_MAX) {
				munmap(buf, AREA);
				munmap(ref, AREA);
				CHECK(bad == UINT64_MAX,
				      "%s over [%llu, +%llu) key %#x: byte %llu wrong", k[j]->name,
				      (unsigned long long)off, (unsigned long long)len, key,
				      (unsigned long long)bad);
			}
		}
	}
	munmap(buf, AREA);
	munmap(ref, AREA);
	for (size_t j = 0; j < nk; j++)
		tap_diag("rmw %s (%u-byte vectors): %zu ranges xor-ed once, nothing around them",
			 k[j]->name, k[j]->width, sizeof(cases) / sizeof(cases[0]));
	return TAP_PASS;
}

static int test_read_avx512(void)
{
	return check_read(PFS_CALIB_ISA_AVX512);
}

static int test_read_avx2(void)
{
	return check_read(PFS_CALIB_ISA_AVX2);
}

static int test_read_sse2(void)
{
	return check_read(PFS_CALIB_ISA_SSE2);
}

static int test_read_neon(void)
{
	return check_read(PFS_CALIB_ISA_NEON);
}

static int test_rmw_neon(void)
{
	return check_rmw(PFS_CALIB_ISA_NEON);
}

static int test_read_any(void)
{
	return check_read(PFS_CALIB_ISA_ANY);
}

static int test_copy_avx512(void)
{
	return check_copy(PFS_CALIB_ISA_AVX512);
}

static int test_copy_avx2(void)
{
	return check_copy(PFS_CALIB_ISA_AVX2);
}

static int test_copy_any(void)
{
	return check_copy(PFS_CALIB_ISA_ANY);
}

static int test_rmw_avx512(void)
{
	return check_rmw(PFS_CALIB_ISA_AVX512);
}

static int test_rmw_avx2(void)
{
	return check_rmw(PFS_CALIB_ISA_AVX2);
}

static int test_rmw_sse2(void)
{
	return check_rmw(PFS_CALIB_ISA_SSE2);
}

static int test_rmw_any(void)
{
	return check_rmw(PFS_CALIB_ISA_ANY);
}

/* The widest kernel of each limit is the one the CPU's features allow,
 * asked here independently of pcore_calib.c. */
static int test_widest(void)
{
	static const enum pfs_pcore_calib_what whats[] = { PFS_CALIB_READ, PFS_CALIB_COPY,
							   PFS_CALIB_RMW };
	unsigned want = 8; /* the portable read */

#if defined(__aarch64__)
	want = 16;
#elif defined(__x86_64__)
	__builtin_cpu_init();
	want = __builtin_cpu_supports("avx512f") ? 64 : __builtin_cpu_supports("avx2") ? 32 : 16;
#endif
	for (size_t i = 0; i < sizeof(whats) / sizeof(whats[0]); i++) {
		const struct pfs_pcore_calib_kernel *w = pfs_pcore_calib__widest(whats[i]);
		unsigned need = want;

		CHECK(w, "a widest kernel of limit %zu", i);
		/* Without AVX2 the copy's only kernel is glibc's. */
		if (whats[i] == PFS_CALIB_COPY && want < 32)
			need = 0;
		if (whats[i] == PFS_CALIB_RMW && want == 8)
			need = 1; /* the portable rewrite is bytewise */
		CHECK(w->width == need, "limit %zu: widest %s is %u bytes wide, the CPU allows %u",
		      i, w->name, w->width, need);
		CHECK(pfs_pcore_calib__candidate(whats[i], w), "%s is a candidate", w->name);
		tap_diag("limit %zu: widest kernel %s (%s, %u bytes)", i, w->name,
			 pfs_pcore_calib_isa_str(w->isa), w->width);
	}
	CHECK(!pfs_pcore_calib__candidate(
		      PFS_CALIB_READ, &(struct pfs_pcore_calib_kernel){ .name = "t",
									.isa = PFS_CALIB_ISA_ANY,
									.width = 1,
									.test_only = true }),
	      "a test-only kernel is never a limit's candidate");
	return TAP_PASS;
}

/* No op kernel is wider than the limits it is judged against: the read
 * limit covers counteq, fnv and the CRC32C fold (32-byte vpclmulqdq), the
 * in-place limit covers xor and add. */
static int test_wider_than_ops(void)
{
	const struct pfs_ops_kernels *ops = pfs_ops__best();
	unsigned opw = ops->isa == PFS_ISA_AVX2				    ? 32 :
		       ops->isa == PFS_ISA_SSE2 || ops->isa == PFS_ISA_NEON ? 16 :
									      8;
	unsigned rd = pfs_pcore_calib__widest(PFS_CALIB_READ)->width;
	unsigned rmw = pfs_pcore_calib__widest(PFS_CALIB_RMW)->width;

	if (!strcmp(pfs_crc32c_impl(), "vpclmulqdq-fold") && opw < 32)
		opw = 32;
	tap_diag("ops %s, crc32c %s: %u bytes; read limit %u, in-place limit %u", ops->name,
		 pfs_crc32c_impl(), opw, rd, rmw);
	CHECK(rd >= opw, "read limit %u bytes wide, ops %u", rd, opw);
	if (ops->isa != PFS_ISA_PORTABLE)
		CHECK(rmw >= opw, "in-place limit %u bytes wide, ops %u", rmw, opw);
	return TAP_PASS;
}

/* The measure times every candidate and names the one that won each limit;
 * the limit is that candidate's rate, the best of them. 16 MiB, one pass,
 * one thread on the CPU this runs on: a check of the choice, not of rates. */
static int test_measure_names_winner(void)
{
	static const char *const what[PFS_CALIB_TRIED__COUNT] = { "read 1t", "read nt", "copy 1t",
								  "copy nt", "rmw nt",	"rmw 1t" };
	const uint64_t len = 16 << 20;
	struct pfs_pcore_calib c;
	int cpu = sched_getcpu(), err;
	uint8_t *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(buf != MAP_FAILED, "map: %s", strerror(errno));
	CHECK(cpu >= 0, "sched_getcpu: %s", strerror(errno));
	for (uint64_t i = 0; i < len; i++)
		buf[i] = (uint8_t)i;
	err = pfs_pcore_calib__measure(buf, len, &cpu, 1, 1, &c);
	munmap(buf, len);
	CHECK(!err, "measure: %s", strerror(-err));
	{
		const char *impl[PFS_CALIB_TRIED__COUNT] = { c.read_impl_1t,   c.read_impl_nt,
							     c.memcpy_impl_1t, c.memcpy_impl_nt,
							     c.rmw_impl_nt,    c.rmw_impl_1t };
		const double rate[PFS_CALIB_TRIED__COUNT] = { c.read_1t,   c.read_nt, c.memcpy_1t,
							      c.memcpy_nt, c.rmw_nt,  c.rmw_1t };
		const enum pfs_pcore_calib_what kind[PFS_CALIB_TRIED__COUNT] = {
			PFS_CALIB_READ, PFS_CALIB_READ, PFS_CALIB_COPY,
			PFS_CALIB_COPY, PFS_CALIB_RMW,	PFS_CALIB_RMW
		};

		for (int i = 0; i < PFS_CALIB_TRIED__COUNT; i++) {
			const struct pfs_pcore_calib_tried *t = &c.tried[i];
			const struct pfs_pcore_calib_kernel *w = pfs_pcore_calib__widest(kind[i]);
			size_t n, want = 0;
			const struct pfs_pcore_calib_kernel *tab =
				pfs_pcore_calib__kernels(kind[i], &n);
			int named = 0, widest = 0;

			for (size_t j = 0; j < n; j++)
				want += pfs_pcore_calib__candidate(kind[i], &tab[j]);
			CHECK(t->n == want, "%s: %u kernels timed, %zu candidates", what[i], t->n,
			      want);
			CHECK(impl[i] && rate[i] > 0, "%s: a winner and a rate", what[i]);
			for (unsigned j = 0; j < t->n; j++) {
				CHECK(t->mbps[j] > 0 && t->mbps[j] <= rate[i],
				      "%s: %s %.0f MB/s, the limit %.0f", what[i], t->name[j],
				      t->mbps[j], rate[i]);
				named |= !strcmp(t->name[j], impl[i]) && t->mbps[j] == rate[i];
				widest |= !strcmp(t->name[j], w->name);
			}
			CHECK(named, "%s: the winner %s is the timed kernel of the best rate",
			      what[i], impl[i]);
			CHECK(widest, "%s: the widest kernel %s was timed", what[i], w->name);
			tap_diag("%s: %s won of %u at %.0f MB/s", what[i], impl[i], t->n, rate[i]);
		}
	}
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "read avx512 kernels: the OR of the range", test_read_avx512 },
	{ "read avx2 kernels: the OR of the range", test_read_avx2 },
	{ "read sse2 kernels: the OR of the range", test_read_sse2 },
	{ "read neon kernels: the OR of the range", test_read_neon },
	{ "read any-CPU kernels (portable): the OR of the range", test_read_any },
	{ "copy avx512 kernels: destination equals source", test_copy_avx512 },
	{ "copy avx2 kernels: destination equals source", test_copy_avx2 },
	{ "copy any-CPU kernels (glibc): destination equals source", test_copy_any },
	{ "rmw avx512 kernels: every byte xor-ed once", test_rmw_avx512 },
	{ "rmw avx2 kernels: every byte xor-ed once", test_rmw_avx2 },
	{ "rmw sse2 kernels: every byte xor-ed once", test_rmw_sse2 },
	{ "rmw neon kernels: every byte xor-ed once", test_rmw_neon },
	{ "rmw any-CPU kernels (portable): every byte xor-ed once", test_rmw_any },
	{ "each limit's widest kernel is the widest the CPU runs", test_widest },
	{ "the limits are at least as wide as the op kernels", test_wider_than_ops },
	{ "calibrate times every candidate and names the winner", test_measure_names_winner },
};

TAP_MAIN(tests)
