// SPDX-License-Identifier: Apache-2.0
/*
 * `pfs bench`: the local rates the transfer targets are judged against, all
 * measured in one process, one run: single-core CRC32C (over the blob, out
 * of cache, and in cache), the portable CRC, FNV-1a, memset of the same
 * pages (warm) and of fresh pages (cold), the blob's prefault + fill, and
 * one core's copy out of the blob into a 128 KiB buffer in cache (the
 * copy limit of a same-host TCP transfer, bench_copy.c).
 * The blob is created 1 + reps times: the first creation touches memory the VM host
 * may not have backed yet (first touch of a freshly reserved hugepage pool
 * or of freed memory costs seconds per GiB here), the second reuses pages
 * that were touched once, the state of a node's long-lived hugepage pool
 * (median of reps creations).
 * Both are reported; each is compared with the memset of the same state, and
 * the warm creations also with a memset of a fresh mapping of the same page
 * kind (faults included: the like-for-like baseline, the target's).
 * Single-threaded; repeated measurements report the median.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "acquire.h"
#include "bench_copy.h"
#include "cli.h"
#include "commands.h"
#include "pfs/integrity.h"
#include "pfs/log.h"

#define MAX_REPS 15
/* The limits (one core's CRC32C, one core's copy) are the best of at least
 * this many passes over the blob, whatever --reps says: a limit is what the
 * machine can do, measured the same way in every run, and on a shared
 * machine a median pass measures the other tenants. */
#define LIMIT_PASSES 5
/* The copy limit: one socket write's worth per copy. */
#define COPY_CHUNK (128 << 10)

struct bench_args {
	uint64_t reps;
	const char *result_file;
	struct pfs_cli_blob cb;
};

static const struct pfs_opt bench_opts[] = {
	{ "reps", PFS_OPT_U64, PFS_OPT_AT(struct bench_args, reps), "N",
	  "repetitions of each timed pass, median reported (3)", .min = 1, .max = MAX_REPS },
	{ "result-file", PFS_OPT_STR, PFS_OPT_AT(struct bench_args, result_file), "PATH",
	  "also write the JSON there" },
	{ 0 },
};

static const char bench_usage[] =
	"usage: pfs bench [blob options] [--reps N] [--result-file PATH]\n"
	"\n"
	"Measures, in one run: blob map/prefault/fill on the page kind asked for,\n"
	"single-core CRC32C over the blob (out of cache) and over 64 KiB in cache,\n"
	"(the blob is created once on first-touch pages, then --reps times on pages\n"
	"touched before; the median of those is compared with the warm memset),\n"
	"the portable CRC32C, FNV-1a 64, and memset of the same size on the blob's\n"
	"pages (warm) and on fresh 4 KiB pages (cold), and one core's copy of the\n"
	"blob into a 128 KiB buffer in cache (glibc memcpy and the vector copies\n"
	"this CPU has). The limits (CRC32C over the blob, the copy) are also given\n"
	"as the best of at least 5 passes. Prints one JSON object with\n"
	"MB/s (decimal) and the blob target: prefault + fill <= 2x the memset of a\n"
	"fresh mapping of the same page kind (its page faults included, as setup's are).\n"
	"\n";

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_d);
	return v[n / 2];
}

/* Keeps results alive so the compiler cannot drop the measured work. */
static volatile uint64_t sink;

/* CPU time of this thread: what a pass costs whatever else runs. */
static double cpu_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The median pass's seconds; its CPU seconds in *@cpu, the best pass's
 * seconds in *@best. */
static double time_crc(const uint8_t *p, uint64_t len, int reps, double *cpu, double *best)
{
	double t[MAX_REPS], c[MAX_REPS];

	for (int i = 0; i < reps; i++) {
		double t0 = pfs_cli_now(), c0 = cpu_now_s();

		sink += pfs_crc32c(0, p, len);
		t[i] = pfs_cli_now() - t0;
		c[i] = cpu_now_s() - c0;
	}
	*cpu = median(c, reps);
	*best = t[0];
	for (int i = 1; i < reps; i++)
		if (t[i] < *best)
			*best = t[i];
	return median(t, reps);
}

static double time_memset(uint8_t *p, uint64_t len, int reps, int val)
{
	double t[MAX_REPS];

	for (int i = 0; i < reps; i++) {
		double t0 = pfs_cli_now();

		memset(p, val + i, len);
		__asm__ __volatile__("" ::: "memory");
		t[i] = pfs_cli_now() - t0;
		sink += p[len / 2];
	}
	return median(t, reps);
}

/* What one run measured. */
struct bench {
	uint64_t size, in_total, small, n;
	double setup_first, setup; /* prefault + fill: first touch, warm median */
	enum pfs_page_kind kind_first, kind;
	double crc_s, crc_cpu, crc_best_s, crc_in_s, port_s, fnv_s;
	int crc_passes;
	double ms_warm, ms_cold, ms_fresh;
	struct pfs_bench_copy copy;
};

/* The blob's setup: once on first-touch pages, then reps times on pages
 * touched before (median). Returns the last blob, or NULL. */
static struct pfs_blob *time_setup(const struct bench_args *a, struct bench *b)
{
	const struct pfs_blob_timings *bt;
	double setups[MAX_REPS];
	struct pfs_blob *blob;
	char why[768];

	blob = pfs_cli_blob_get(&a->cb, why, sizeof(why));
	if (!blob)
		return NULL;
	bt = pfs_blob__timings(blob);
	b->setup_first = bt->prefault_s + bt->fill_s;
	b->kind_first = pfs_blob__page_kind(blob);
	pfs_blob__close(blob);
	for (uint64_t i = 0; i < a->reps; i++) {
		blob = pfs_cli_blob_get(&a->cb, why, sizeof(why));
		if (!blob)
			return NULL;
		bt = pfs_blob__timings(blob);
		setups[i] = bt->prefault_s + bt->fill_s;
		if (i + 1 < a->reps)
			pfs_blob__close(blob);
	}
	b->size = pfs_blob__size(blob);
	b->setup = median(setups, (int)a->reps);
	return blob;
}

/* Checksums over the blob, then the warm memset of its pages. */
static void time_rates(const struct bench_args *a, struct pfs_blob *blob, struct bench *b)
{
	uint8_t *data = pfs_blob__data(blob);
	double t0;

	b->crc_passes = a->reps > LIMIT_PASSES ? (int)a->reps : LIMIT_PASSES;
	b->crc_s = time_crc(data, b->size, b->crc_passes, &b->crc_cpu, &b->crc_best_s);
	b->in_total = 2ULL << 30;
	b->small = 64 << 10;
	t0 = pfs_cli_now();
	for (uint64_t n = 0; n < b->in_total; n += b->small)
		sink += pfs_crc32c(0, data, b->small);
	b->crc_in_s = pfs_cli_now() - t0;
	b->n = b->size < (256ULL << 20) ? b->size : 256ULL << 20;
	t0 = pfs_cli_now();
	sink += pfs_crc32c_portable(0, data, b->n / 4);
	b->port_s = pfs_cli_now() - t0;
	t0 = pfs_cli_now();
	sink += pfs_fnv1a64(PFS_FNV1A64_INIT, data, b->n);
	b->fnv_s = pfs_cli_now() - t0;
	if (b->size < COPY_CHUNK ||
	    pfs_bench_copy__measure(data, b->size, COPY_CHUNK, LIMIT_PASSES, &b->copy))
		pfs_err("bench: no copy limit: the blob is under %d bytes or no buffer",
			COPY_CHUNK); /* copy_1t_mb_s is then 0, copy_1t_impl null */
	b->ms_warm = time_memset(data, b->size, (int)a->reps, 0x11);
	b->kind = pfs_blob__page_kind(blob);
}

/* What a program pays to memset a fresh allocation of these pages: the
 * faults (the kernel zeroes each page) plus the memset. Blob setup pays
 * the same faults, so this is the like-for-like baseline. */
static int time_fresh(const struct bench_args *a, struct bench *b)
{
	double fresh_s[MAX_REPS];

	for (uint64_t i = 0; i < a->reps; i++) {
		struct pfs_blob_opts fo = a->cb.opts;
		struct pfs_blob *fresh;

		fo.page = b->kind;
		fo.no_fallback = true;
		fo.no_prefault = true;
		fo.fill = PFS_FILL_NONE;
		fo.name = NULL;
		fresh = pfs_blob__create(&fo);
		if (!fresh) {
			pfs_err("bench: a fresh %s mapping for the memset: %s",
				pfs_page_kind_str(b->kind), strerror(errno));
			return -ENOMEM;
		}
		fresh_s[i] = time_memset(pfs_blob__data(fresh), b->size, 1, 0x33);
		pfs_blob__close(fresh);
	}
	b->ms_fresh = median(fresh_s, (int)a->reps);
	return 0;
}

/* The memset of fresh 4 KiB pages (while the blob is mapped). */
static int time_cold(struct bench *b)
{
	uint8_t *cold =
		mmap(NULL, b->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (cold == MAP_FAILED) {
		pfs_err("bench: mmap %llu bytes for the cold memset: %s",
			(unsigned long long)b->size, strerror(errno));
		return -ENOMEM;
	}
	b->ms_cold = time_memset(cold, b->size, 1, 0x22);
	munmap(cold, b->size);
	return 0;
}

static void report(const struct bench_args *a, const struct bench *b, const struct pfs_blob *blob)
{
	struct pfs_json j;

	pfs_json_begin(&j);
	pfs_json_bool(&j, "ok", true);
	pfs_json_str(&j, "cmd", "bench", 8);
	pfs_json_u64(&j, "bytes", b->size);
	pfs_json_u64(&j, "reps", a->reps);
	pfs_json_str(&j, "crc32c_impl", pfs_crc32c_impl(), 24);
	pfs_json_num(&j, "crc32c_mb_s", b->size / 1e6 / b->crc_s, 1);
	pfs_json_num(&j, "crc32c_mb_per_cpu_s", b->size / 1e6 / b->crc_cpu, 1);
	pfs_json_num(&j, "crc32c_best_mb_s", b->size / 1e6 / b->crc_best_s, 1);
	pfs_json_u64(&j, "crc32c_passes", (uint64_t)b->crc_passes);
	pfs_json_num(&j, "crc32c_incache_mb_s", b->in_total / 1e6 / b->crc_in_s, 1);
	pfs_json_num(&j, "crc32c_portable_mb_s", b->n / 4 / 1e6 / b->port_s, 1);
	pfs_json_num(&j, "fnv1a64_mb_s", b->n / 1e6 / b->fnv_s, 1);
	pfs_json_str(&j, "copy_1t_impl", b->copy.impl, 16);
	pfs_json_num(&j, "copy_1t_mb_s", b->copy.best_mb_s, 1);
	for (unsigned i = 0; i < b->copy.n; i++) {
		char key[48];

		snprintf(key, sizeof(key), "copy_1t_%s_mb_s", b->copy.kernel[i]);
		pfs_json_num(&j, key, b->copy.mb_s[i], 1);
	}
	pfs_json_num(&j, "copy_1t_incache_mb_s", b->copy.incache_mb_s, 1);
	pfs_json_u64(&j, "copy_1t_chunk", b->copy.chunk);
	pfs_json_u64(&j, "copy_1t_passes", b->copy.passes);
	pfs_json_num(&j, "memset_warm_s", b->ms_warm, 4);
	pfs_json_num(&j, "memset_warm_mb_s", b->size / 1e6 / b->ms_warm, 1);
	pfs_json_num(&j, "memset_cold_4k_s", b->ms_cold, 4);
	pfs_json_num(&j, "prefault_fill_s", b->setup, 4);
	pfs_json_num(&j, "memset_fresh_s", b->ms_fresh, 4);
	pfs_json_num(&j, "setup_over_memset", b->setup / b->ms_warm, 2);
	pfs_json_num(&j, "setup_over_fresh_memset", b->setup / b->ms_fresh, 2);
	pfs_json_str(&j, "target_setup_within_2x_memset",
		     b->setup <= 2 * b->ms_fresh ? "PASS" : "MISS", 8);
	pfs_json_str(&j, "first_page", pfs_page_kind_str(b->kind_first), 8);
	pfs_json_num(&j, "first_prefault_fill_s", b->setup_first, 4);
	pfs_json_num(&j, "first_over_cold_memset", b->setup_first / b->ms_cold, 2);
	pfs_cli_blob_json(&j, blob, 0);
	pfs_json_str(&j, "error", NULL, 0);
	pfs_result_emit(pfs_json_end(&j), a->result_file);
}

int pfs_cmd_bench(int argc, char **argv)
{
	struct bench_args a = { .reps = 3 };
	struct pfs_cmdline c = {
		.cmd = "bench",
		.usage = bench_usage,
		.group = { { bench_opts, &a }, { pfs_cli_blob_opts, &a.cb } },
	};
	struct bench b = { 0 };
	struct pfs_blob *blob;
	char why[768];
	int err;

	pfs_cli_blob_init(&a.cb);
	err = pfs_opt_parse(&c, argc, argv);
	if (err)
		return pfs_exit_parse(err);
	if (a.cb.open_name) {
		pfs_opt_fail(&c, "measures blob creation; --blob-name is not allowed");
		return PFS_EXIT_USAGE;
	}
	if (pfs_cli_check_args)
		return PFS_EXIT_OK;
	blob = time_setup(&a, &b);
	if (!blob)
		return PFS_EXIT_ERROR;
	time_rates(&a, blob, &b);
	pfs_blob__close(blob);
	if (time_fresh(&a, &b))
		return PFS_EXIT_ERROR;
	blob = pfs_cli_blob_get(&a.cb, why, sizeof(why));
	if (!blob)
		return PFS_EXIT_ERROR;
	if (time_cold(&b)) {
		pfs_blob__close(blob);
		return PFS_EXIT_ERROR;
	}
	report(&a, &b, blob);
	pfs_blob__close(blob);
	return PFS_EXIT_OK;
}
