// SPDX-License-Identifier: Apache-2.0
/*
 * `pfs bench`: the local rates the transfer targets are judged against, all
 * measured in one process, one run: single-core CRC32C (over the blob, out
 * of cache, and in cache), the portable CRC, FNV-1a, memset of the same
 * pages (warm) and of fresh pages (cold), and the blob's prefault + fill.
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
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "cli.h"
#include "pfs/integrity.h"
#include "pfs/log.h"

static const char bench_usage[] =
"usage: pfs bench [blob options] [--reps N] [--result-file PATH]\n"
"\n"
"Measures, in one run: blob map/prefault/fill on the page kind asked for,\n"
"single-core CRC32C over the blob (out of cache) and over 64 KiB in cache,\n"
"(the blob is created once on first-touch pages, then --reps times on pages\n"
"touched before; the median of those is compared with the warm memset),\n"
"the portable CRC32C, FNV-1a 64, and memset of the same size on the blob's\n"
"pages (warm) and on fresh 4 KiB pages (cold). Prints one JSON object with\n"
"MB/s (decimal) and the blob target: prefault + fill <= 2x the memset of a\n"
"fresh mapping of the same page kind (its page faults included, as setup's are).\n"
"\n" PFS_CLI_BLOB_HELP
"  --reps N             repetitions of each timed pass, median reported (3)\n"
"  --result-file PATH   also write the JSON there\n";

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

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

static double time_crc(const uint8_t *p, uint64_t len, int reps, double *cpu)
{
	double t[16], c[16];

	for (int i = 0; i < reps; i++) {
		double t0 = now_s(), c0 = cpu_now_s();

		sink += pfs_crc32c(0, p, len);
		t[i] = now_s() - t0;
		c[i] = cpu_now_s() - c0;
	}
	*cpu = median(c, reps);
	return median(t, reps);
}

static double time_memset(uint8_t *p, uint64_t len, int reps, int val)
{
	double t[16];

	for (int i = 0; i < reps; i++) {
		double t0 = now_s();

		memset(p, val + i, len);
		__asm__ __volatile__("" ::: "memory");
		t[i] = now_s() - t0;
		sink += p[len / 2];
	}
	return median(t, reps);
}

int pfs_cmd_bench(int argc, char **argv)
{
	static const struct option lo[] = {
		PFS_CLI_BLOB_LONGOPTS,
		{ "reps", 1, 0, PFS_OPT_LONG }, { "result-file", 1, 0, PFS_OPT_LONG },
		{ "help", 0, 0, 'h' }, { 0 },
	};
	const char *result_file = NULL;
	struct pfs_cli_blob cb;
	struct pfs_blob *blob;
	struct pfs_json j;
	char why[768];
	const struct pfs_blob_timings *bt;
	uint64_t size, reps = 3, in_total = 2ULL << 30, small = 64 << 10, n;
	double setups[16], fresh_s[16];
	double crc_s, crc_cpu, crc_in_s, port_s, fnv_s, ms_warm, ms_cold, ms_fresh, setup, setup_first, t0;
	enum pfs_page_kind kind;
	enum pfs_page_kind kind_first;
	uint8_t *cold;
	uint64_t h;
	int c, idx;

	pfs_cli_blob_init(&cb);
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", lo, &idx)) != -1) {
		int r;

		if (c == 'h') {
			fputs(bench_usage, stdout);
			return PFS_EXIT_OK;
		}
		if (c != PFS_OPT_LONG)
			goto usage;
		r = pfs_cli_blob_opt(&cb, lo[idx].name, optarg);
		if (r < 0)
			return PFS_EXIT_USAGE;
		if (r)
			continue;
		if (!strcmp(lo[idx].name, "reps")) {
			if (pfs_parse_u64(optarg, &reps) || !reps || reps > 15)
				goto usage;
		} else if (!strcmp(lo[idx].name, "result-file")) {
			result_file = optarg;
		}
	}
	if (optind < argc)
		goto usage;

	if (cb.open_name) {
		fprintf(stderr, "pfs bench: measures blob creation; --blob-name is not allowed\n");
		return PFS_EXIT_USAGE;
	}
	blob = pfs_cli_blob_get(&cb, why, sizeof(why));
	if (!blob)
		return PFS_EXIT_ERROR;
	bt = pfs_blob__timings(blob);
	setup_first = bt->prefault_s + bt->fill_s;
	kind_first = pfs_blob__page_kind(blob);
	pfs_blob__close(blob);
	/* Warm creations: median of reps, like every other timed pass here. */
	for (uint64_t i = 0; i < reps; i++) {
		blob = pfs_cli_blob_get(&cb, why, sizeof(why));
		if (!blob)
			return PFS_EXIT_ERROR;
		bt = pfs_blob__timings(blob);
		setups[i] = bt->prefault_s + bt->fill_s;
		if (i + 1 < reps)
			pfs_blob__close(blob);
	}
	size = pfs_blob__size(blob);
	setup = median(setups, (int)reps);

	crc_s = time_crc(pfs_blob__data(blob), size, (int)reps, &crc_cpu);
	t0 = now_s();
	for (n = 0; n < in_total; n += small)
		sink += pfs_crc32c(0, pfs_blob__data(blob), small);
	crc_in_s = now_s() - t0;
	n = size < (256ULL << 20) ? size : 256ULL << 20;
	t0 = now_s();
	sink += pfs_crc32c_portable(0, pfs_blob__data(blob), n / 4);
	port_s = now_s() - t0;
	t0 = now_s();
	h = pfs_fnv1a64(PFS_FNV1A64_INIT, pfs_blob__data(blob), n);
	fnv_s = now_s() - t0;
	sink += h;

	ms_warm = time_memset(pfs_blob__data(blob), size, (int)reps, 0x11);
	kind = pfs_blob__page_kind(blob);
	pfs_blob__close(blob);
	blob = NULL;
	/* What a program pays to memset a fresh allocation of these pages: the
	 * faults (the kernel zeroes each page) plus the memset. Blob setup pays
	 * the same faults, so this is the like-for-like baseline. */
	for (uint64_t i = 0; i < reps; i++) {
		struct pfs_blob_opts fo = cb.opts;
		struct pfs_blob *fresh;

		fo.page = kind;
		fo.no_fallback = true;
		fo.no_prefault = true;
		fo.fill = PFS_FILL_NONE;
		fo.name = NULL;
		fresh = pfs_blob__create(&fo);
		if (!fresh) {
			pfs_err("bench: a fresh %s mapping for the memset: %s",
				pfs_page_kind_str(kind), strerror(errno));
			return PFS_EXIT_ERROR;
		}
		fresh_s[i] = time_memset(pfs_blob__data(fresh), size, 1, 0x33);
		pfs_blob__close(fresh);
	}
	ms_fresh = median(fresh_s, (int)reps);
	blob = pfs_cli_blob_get(&cb, why, sizeof(why));
	if (!blob)
		return PFS_EXIT_ERROR;
	cold = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (cold == MAP_FAILED) {
		pfs_err("bench: mmap %llu bytes for the cold memset: %s",
			(unsigned long long)size, strerror(errno));
		pfs_blob__close(blob);
		return PFS_EXIT_ERROR;
	}
	ms_cold = time_memset(cold, size, 1, 0x22);
	munmap(cold, size);

	pfs_json_begin(&j);
	pfs_json_bool(&j, "ok", true);
	pfs_json_str(&j, "cmd", "bench", 8);
	pfs_json_u64(&j, "bytes", size);
	pfs_json_u64(&j, "reps", reps);
	pfs_json_str(&j, "crc32c_impl", pfs_crc32c_impl(), 24);
	pfs_json_num(&j, "crc32c_mb_s", size / 1e6 / crc_s, 1);
	pfs_json_num(&j, "crc32c_mb_per_cpu_s", size / 1e6 / crc_cpu, 1);
	pfs_json_num(&j, "crc32c_incache_mb_s", in_total / 1e6 / crc_in_s, 1);
	pfs_json_num(&j, "crc32c_portable_mb_s", n / 4 / 1e6 / port_s, 1);
	pfs_json_num(&j, "fnv1a64_mb_s", n / 1e6 / fnv_s, 1);
	pfs_json_num(&j, "memset_warm_s", ms_warm, 4);
	pfs_json_num(&j, "memset_warm_mb_s", size / 1e6 / ms_warm, 1);
	pfs_json_num(&j, "memset_cold_4k_s", ms_cold, 4);
	pfs_json_num(&j, "prefault_fill_s", setup, 4);
	pfs_json_num(&j, "memset_fresh_s", ms_fresh, 4);
	pfs_json_num(&j, "setup_over_memset", setup / ms_warm, 2);
	pfs_json_num(&j, "setup_over_fresh_memset", setup / ms_fresh, 2);
	pfs_json_str(&j, "target_setup_within_2x_memset", setup <= 2 * ms_fresh ? "PASS" : "MISS",
		     8);
	pfs_json_str(&j, "first_page", pfs_page_kind_str(kind_first), 8);
	pfs_json_num(&j, "first_prefault_fill_s", setup_first, 4);
	pfs_json_num(&j, "first_over_cold_memset", setup_first / ms_cold, 2);
	pfs_cli_blob_json(&j, blob, 0);
	pfs_json_str(&j, "error", NULL, 0);
	pfs_result_emit(pfs_json_end(&j), result_file);
	pfs_blob__close(blob);
	return PFS_EXIT_OK;
usage:
	fprintf(stderr, "%s", bench_usage);
	return PFS_EXIT_USAGE;
}
