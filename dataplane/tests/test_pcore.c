// SPDX-License-Identifier: Apache-2.0
/*
 * The pcore runner and baseline against scalar references: every op over
 * odd ranges (unaligned start and end, lengths that are not a multiple of
 * the vector width, one-byte descriptors, short frames), multi-pass
 * in-place ops, descriptors crossing 2 MiB hugepage boundaries (a few pages
 * are reserved through /proc/sys/vm/nr_hugepages and the old value is
 * restored), ring wrap-around with a real producer and consumer thread, the
 * duration mode and an early stop. Runs with as many pcores as the allowed
 * CPU set has (at most 2 here), so it exercises real cross-core rings.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "pfs/integrity.h"
#include "pfs/pcore.h"
#include "tap.h"

/* ---------------------------------------------------------- references */

static uint64_t ref_fnv(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
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

/* The defined result of each op over one pass, computed the slow way:
 * walk the descriptor schedule byte by byte. In-place ops are applied to
 * @p @passes times; their value is the byte count. */
static uint64_t ref_run(const struct pfs_pcore_opts *o, uint8_t *p, uint64_t passes)
{
	uint64_t nd = pfs_pcore__ndescs(o), v = 0, fold = 0xcbf29ce484222325ULL;
	uint64_t start = o->range_off, end = o->range_off + o->range_len;

	switch (o->op) {
	case PFS_OP_XOR:
	case PFS_OP_ADD:
		for (uint64_t k = 0; k < passes; k++)
			for (uint64_t i = start; i < end; i++)
				p[i] = o->op == PFS_OP_XOR ? p[i] ^ o->imm :
							     (uint8_t)(p[i] + o->imm);
		return o->range_len * passes;
	case PFS_OP_COUNTEQ:
		for (uint64_t i = start; i < end; i++)
			v += p[i] == o->imm;
		return v;
	case PFS_OP_CRC32C:
		return ref_crc32c(0, p + start, o->range_len);
	case PFS_OP_FNV:
		for (uint64_t d = 0; d < nd; d++) {
			uint64_t off, h;
			uint32_t len;

			pfs_pcore__desc(o, d, &off, &len);
			h = ref_fnv(p + off, len);
			for (int b = 0; b < 8; b++)
				fold = (fold ^ ((h >> (8 * b)) & 0xff)) * 0x100000001b3ULL;
		}
		return fold;
	default:
		return 0;
	}
}

/* --------------------------------------------------------------- setup */

static int cpus[PFS_PCORE_MAX];
static int ncpus;

static void fill(uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t x = seed | 1;

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		p[i] = (uint8_t)(x % 7 + 0xfa);
	}
}

static void base_opts(struct pfs_pcore_opts *o, enum pfs_op op)
{
	memset(o, 0, sizeof(*o));
	o->sz = sizeof(*o);
	o->op = op;
	o->imm = 0xfc;
	o->desc_len = 4096;
	o->align = 64;
	o->dpf = 8;
	o->ring_slots = 32;
	o->pcores = ncpus < 2 ? ncpus : 2;
	o->cpus = cpus;
	o->passes = 1;
}

struct shape {
	uint64_t off, len;
	uint32_t desc_len, align, dpf, ring_slots;
};

/* Odd shapes: unaligned start/end, tiny ranges, one-byte descriptors,
 * frames shorter than dpf at the end of a pass, dpf == ring size. */
static const struct shape shapes[] = {
	{ 0, 1, 64, 64, 1, 1 },
	{ 3, 1, 1, 1, 1, 1 },
	{ 1, 31, 1, 1, 3, 4 },
	{ 7, 1000, 1, 1, 16, 16 },
	{ 5, 300000, 4096, 64, 8, 32 },
	{ 4093, 123457, 192, 64, 5, 8 },
	{ 64, 65536 * 3, 65536, 4096, 2, 2 },
	{ 33, 999999, 33, 1, 64, 64 },
	{ 0, 1 << 20, 1 << 20, 64, 1, 1 },
	{ 100, (1 << 20) - 201, 3 * 64, 64, 64, 256 },
};

static int check_op(enum pfs_op op, uint8_t *mem, size_t memlen, const struct shape *s,
		    const struct pfs_ops_kernels *k, int baseline)
{
	struct pfs_pcore_opts o;
	struct pfs_pcore_result *res = malloc(sizeof(*res));
	uint8_t *copy = malloc(memlen);
	uint64_t want;
	int err;

	CHECK(res && copy, "malloc");
	base_opts(&o, op);
	o.range_off = s->off;
	o.range_len = s->len;
	o.desc_len = s->desc_len;
	o.align = s->align;
	o.dpf = s->dpf;
	o.ring_slots = s->ring_slots;
	o.kernels = k;
	o.passes = pfs_op_is_inplace(op) ? 3 : 2;
	fill(mem, memlen, s->off * 31 + s->len);
	memcpy(copy, mem, memlen);
	want = ref_run(&o, copy, o.passes);
	err = (baseline ? pfs_pcore__baseline : pfs_pcore__run)(&o, mem, memlen, res);
	CHECK(!err, "run: %d", err);
	CHECK(res->complete && !res->stopped, "complete");
	CHECK(res->passes_done == o.passes, "passes %lu", (unsigned long)res->passes_done);
	CHECK(res->bytes == o.passes * s->len, "bytes %lu", (unsigned long)res->bytes);
	CHECK(res->value_valid && res->passes_agree, "value valid and passes agree");
	CHECK(res->value == want, "%s %s off %lu len %lu desc %u: got %#lx want %#lx",
	      baseline ? "baseline" : "pcore", pfs_op_str(op), (unsigned long)s->off,
	      (unsigned long)s->len, s->desc_len, (unsigned long)res->value, (unsigned long)want);
	CHECK(!memcmp(mem, copy, memlen), "blob contents after %s (%s) off %lu len %lu desc %u",
	      pfs_op_str(op), baseline ? "baseline" : "pcore", (unsigned long)s->off,
	      (unsigned long)s->len, s->desc_len);
	free(res);
	free(copy);
	return 0;
}

static int check_all_shapes(enum pfs_op op, int baseline)
{
	size_t memlen = 2 << 20;
	uint8_t *mem = malloc(memlen);

	CHECK(mem, "malloc");
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		int r = check_op(op, mem, memlen, &shapes[i], NULL, baseline);

		if (r) {
			free(mem);
			return r;
		}
	}
	free(mem);
	return 0;
}

static int test_xor(void)
{
	return check_all_shapes(PFS_OP_XOR, 0);
}
static int test_add(void)
{
	return check_all_shapes(PFS_OP_ADD, 0);
}
static int test_counteq(void)
{
	return check_all_shapes(PFS_OP_COUNTEQ, 0);
}
static int test_fnv(void)
{
	return check_all_shapes(PFS_OP_FNV, 0);
}
static int test_crc32c(void)
{
	return check_all_shapes(PFS_OP_CRC32C, 0);
}
static int test_bl_xor(void)
{
	return check_all_shapes(PFS_OP_XOR, 1);
}
static int test_bl_add(void)
{
	return check_all_shapes(PFS_OP_ADD, 1);
}
static int test_bl_counteq(void)
{
	return check_all_shapes(PFS_OP_COUNTEQ, 1);
}
static int test_bl_fnv(void)
{
	return check_all_shapes(PFS_OP_FNV, 1);
}
static int test_bl_crc32c(void)
{
	return check_all_shapes(PFS_OP_CRC32C, 1);
}

/* Every kernel variant through the runner, one odd shape each. */
static int test_variants(void)
{
	size_t memlen = 2 << 20;
	uint8_t *mem = malloc(memlen);
	int ran = 0;

	CHECK(mem, "malloc");
	for (int isa = 0; isa < PFS_ISA__COUNT; isa++) {
		const struct pfs_ops_kernels *k = pfs_ops__kernels(isa);

		if (!k)
			continue;
		for (int op = 0; op < PFS_OP__COUNT; op++) {
			int r = check_op(op, mem, memlen, &shapes[5], k, 0);

			if (r) {
				free(mem);
				return r;
			}
		}
		ran++;
	}
	free(mem);
	CHECK(ran >= 2, "at least portable and one vector variant ran");
	return 0;
}

/* -------------------------------------------------------------- hugepages */

#define HP_SIZE (2UL << 20)
#define HP_PAGES 4

static long read_nr_hugepages(void)
{
	FILE *f = fopen("/proc/sys/vm/nr_hugepages", "re");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static int write_nr_hugepages(long v)
{
	FILE *f = fopen("/proc/sys/vm/nr_hugepages", "we");
	int ok;

	if (!f)
		return -errno;
	ok = fprintf(f, "%ld\n", v) > 0;
	return fclose(f) == 0 && ok ? 0 : -EIO;
}

static int free_hugepages(void)
{
	FILE *f = fopen("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "re");
	int v = 0;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

static int test_hugepage_crossing(void)
{
	long old = read_nr_hugepages();
	bool raised = false;
	uint8_t *mem;
	int rc = 0;

	if (old < 0)
		return tap_skip("cannot read /proc/sys/vm/nr_hugepages");
	if (free_hugepages() < HP_PAGES) {
		if (write_nr_hugepages(old + HP_PAGES) || read_nr_hugepages() < old + HP_PAGES)
			return tap_skip("cannot raise nr_hugepages (needs root/CAP_SYS_ADMIN)");
		raised = true;
	}
	mem = mmap(NULL, HP_PAGES * HP_SIZE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
	if (mem == MAP_FAILED) {
		if (raised)
			write_nr_hugepages(old);
		return tap_skip("no 2 MiB hugepages available: %s", strerror(errno));
	}
	/* Descriptors of 1 MiB + 320 bytes starting 1 MiB + 7 bytes in: most
	 * of them straddle a 2 MiB page boundary; the range ends mid-page. */
	struct shape s = { (1 << 20) + 7, 3 * HP_SIZE - 12345, (1 << 20) + 320, 64, 3, 4 };

	for (int op = 0; op < PFS_OP__COUNT && !rc; op++) {
		rc = check_op(op, mem, HP_PAGES * HP_SIZE, &s, NULL, 0);
		if (!rc)
			rc = check_op(op, mem, HP_PAGES * HP_SIZE, &s, NULL, 1);
	}
	munmap(mem, HP_PAGES * HP_SIZE);
	/* Give back what we added, relative to the current value: other
	 * programs on the host may have changed the pool meanwhile. */
	if (raised) {
		long cur = read_nr_hugepages();

		if (cur < HP_PAGES || write_nr_hugepages(cur - HP_PAGES)) {
			fprintf(stderr, "# could not give back %d hugepages\n", HP_PAGES);
			rc = 1;
		}
	}
	return rc;
}

/* ------------------------------------------------------------------ ring */

#define RING_ITEMS 200000

static void *ring_consumer(void *arg)
{
	struct pfs_pcore_ring *r = arg;
	uint64_t expect = 0, idx;

	while (expect < RING_ITEMS) {
		uint32_t n = pfs_pcore_ring__peek(r, 5, &idx);

		for (uint32_t i = 0; i < n; i++, expect++) {
			struct pfs_pcore_desc *d = pfs_pcore_ring__slot(r, idx + i);

			if (d->off != expect || d->len != (uint32_t)(expect * 3) ||
			    d->frame != (uint32_t)~expect)
				return (void *)1;
		}
		pfs_pcore_ring__release(r, n);
	}
	return NULL;
}

/* A 8-slot ring carries 200000 descriptors between two threads in batches
 * of 1..7: indices wrap the slot array 25000 times; a full ring refuses a
 * reservation instead of overwriting. */
static int test_ring_wrap(void)
{
	struct pfs_pcore_ring r;
	pthread_t th;
	uint64_t idx, sent = 0;
	void *ret;

	CHECK(pfs_pcore_ring__init(&r, 6) == -EINVAL, "non power of two rejected");
	CHECK(!pfs_pcore_ring__init(&r, 8), "init");
	CHECK(pfs_pcore_ring__reserve(&r, 9, &idx) == 0, "more than the ring refused");
	CHECK(pfs_pcore_ring__reserve(&r, 8, &idx) == 8 && idx == 0, "reserve all");
	pfs_pcore_ring__submit(&r, 8);
	CHECK(pfs_pcore_ring__reserve(&r, 1, &idx) == 0, "full ring refuses");
	CHECK(pfs_pcore_ring__peek(&r, 3, &idx) == 3 && idx == 0, "peek is capped");
	pfs_pcore_ring__release(&r, 3);
	CHECK(pfs_pcore_ring__reserve(&r, 3, &idx) == 3 && idx == 8, "freed slots reusable");
	pfs_pcore_ring__fini(&r);

	CHECK(!pfs_pcore_ring__init(&r, 8), "init");
	CHECK(!pthread_create(&th, NULL, ring_consumer, &r), "thread");
	for (uint32_t batch = 1; sent < RING_ITEMS; batch = batch % 7 + 1) {
		uint32_t n = RING_ITEMS - sent < batch ? (uint32_t)(RING_ITEMS - sent) : batch;

		if (!pfs_pcore_ring__reserve(&r, n, &idx))
			continue;
		for (uint32_t i = 0; i < n; i++) {
			struct pfs_pcore_desc *d = pfs_pcore_ring__slot(&r, idx + i);
			uint64_t v = sent + i;

			d->off = v;
			d->len = (uint32_t)(v * 3);
			d->frame = (uint32_t)~v;
		}
		pfs_pcore_ring__submit(&r, n);
		sent += n;
	}
	pthread_join(th, &ret);
	CHECK(!ret, "consumer saw every descriptor once, in order");
	CHECK(pfs_pcore_ring__used(&r) == 0, "ring drained");
	pfs_pcore_ring__fini(&r);
	return 0;
}

/* ---------------------------------------------------- duration and stop */

static int test_duration(void)
{
	size_t memlen = 8 << 20;
	uint8_t *mem = malloc(memlen);
	struct pfs_pcore_opts o;
	struct pfs_pcore_result *res = malloc(sizeof(*res));

	CHECK(mem && res, "malloc");
	fill(mem, memlen, 5);
	base_opts(&o, PFS_OP_CRC32C);
	o.range_len = memlen;
	o.passes = 0;
	o.duration_s = 0.3;
	CHECK(!pfs_pcore__run(&o, mem, memlen, res), "run");
	CHECK(res->complete && !res->stopped, "complete");
	CHECK(res->seconds >= 0.3 && res->seconds < 5, "seconds %.3f", res->seconds);
	CHECK(res->passes_done >= 1 && res->passes_agree, "passes %lu bytes %lu frames %lu s %.3f",
	      (unsigned long)res->passes_done, (unsigned long)res->bytes,
	      (unsigned long)res->frames, res->seconds);
	CHECK(res->value == ref_crc32c(0, mem, memlen), "crc");
	CHECK(!pfs_pcore__baseline(&o, mem, memlen, res), "baseline");
	CHECK(res->complete && res->seconds >= 0.3 && res->value == ref_crc32c(0, mem, memlen),
	      "baseline duration");
	free(mem);
	free(res);
	return 0;
}

static atomic_int stop_flag;

static void *stopper(void *arg)
{
	(void)arg;
	usleep(200 * 1000);
	atomic_store(&stop_flag, 1);
	return NULL;
}

static int test_stop(void)
{
	size_t memlen = 16 << 20;
	uint8_t *mem = malloc(memlen);
	struct pfs_pcore_opts o;
	struct pfs_pcore_result *res = malloc(sizeof(*res));
	struct timespec a, b;
	pthread_t th;

	CHECK(mem && res, "malloc");
	fill(mem, memlen, 9);
	for (int bl = 0; bl < 2; bl++) {
		base_opts(&o, PFS_OP_XOR);
		o.range_len = memlen;
		o.passes = 1000000;
		o.stop = &stop_flag;
		atomic_store(&stop_flag, 0);
		clock_gettime(CLOCK_MONOTONIC, &a);
		CHECK(!pthread_create(&th, NULL, stopper, NULL), "thread");
		CHECK(!(bl ? pfs_pcore__baseline : pfs_pcore__run)(&o, mem, memlen, res), "run");
		pthread_join(th, NULL);
		clock_gettime(CLOCK_MONOTONIC, &b);
		CHECK(res->stopped && !res->complete, "stopped, not complete");
		CHECK(res->bytes > 0 && res->passes_done < o.passes, "partial work reported");
		CHECK(b.tv_sec - a.tv_sec < 5, "stopped promptly");
	}
	free(mem);
	free(res);
	return 0;
}

static int test_bad_opts(void)
{
	struct pfs_pcore_opts o;
	struct pfs_pcore_result res;
	uint8_t mem[4096];
	const char *why;

	base_opts(&o, PFS_OP_XOR);
	o.range_len = 4097;
	CHECK(pfs_pcore__run(&o, mem, sizeof(mem), &res) == -EINVAL, "range past end");
	o.range_len = 100;
	o.align = 48;
	CHECK(pfs_pcore__check_opts(&o, sizeof(mem), &why) == -EINVAL && strstr(why, "align"),
	      "align");
	o.align = 64;
	o.ring_slots = 4;
	CHECK(pfs_pcore__check_opts(&o, sizeof(mem), &why) == -EINVAL && strstr(why, "ring"),
	      "ring < dpf");
	o.ring_slots = 32;
	o.desc_len = 100;
	CHECK(pfs_pcore__check_opts(&o, sizeof(mem), &why) == -EINVAL && strstr(why, "multiple"),
	      "desc_len");
	return 0;
}

static const struct tap_test tests[] = {
	{ "ring wrap-around with a producer and a consumer thread", test_ring_wrap },
	{ "bad options rejected with a reason", test_bad_opts },
	{ "pcore xor over odd ranges equals reference", test_xor },
	{ "pcore add over odd ranges equals reference", test_add },
	{ "pcore counteq over odd ranges equals reference", test_counteq },
	{ "pcore fnv over odd ranges equals reference", test_fnv },
	{ "pcore crc32c over odd ranges equals single-threaded CRC", test_crc32c },
	{ "baseline xor over odd ranges equals reference", test_bl_xor },
	{ "baseline add over odd ranges equals reference", test_bl_add },
	{ "baseline counteq over odd ranges equals reference", test_bl_counteq },
	{ "baseline fnv over odd ranges equals reference", test_bl_fnv },
	{ "baseline crc32c over odd ranges equals reference", test_bl_crc32c },
	{ "every kernel variant through the runner", test_variants },
	{ "descriptors crossing 2 MiB hugepage boundaries", test_hugepage_crossing },
	{ "duration mode", test_duration },
	{ "stop request ends the run with partial results", test_stop },
};

int main(void)
{
	ncpus = pfs_pcore_allowed_cpus(cpus, PFS_PCORE_MAX);
	if (ncpus < 1) {
		printf("1..0 # SKIP cannot read the allowed CPU set\n0 passed, 0 failed\n");
		return 0;
	}
	printf("# pcores in use: %d\n", ncpus < 2 ? ncpus : 2);
	return tap_run(tests, (int)(sizeof(tests) / sizeof(tests[0])));
}
