// SPDX-License-Identifier: Apache-2.0
/*
 * Descriptor schedules: the lengths sum exactly to the total, every
 * descriptor stays inside the blob (or the range), sequential schedules sweep
 * the range in order and wrap, and impossible options are refused.
 */
#include <errno.h>
#include <stdlib.h>

#include "pfs/schedule.h"
#include "tap.h"

static struct pfs_desc d[4096];

/* Drain @o; check bounds and alignment; return the sum of lengths. */
static int drain(const struct pfs_sched_opts *o, uint64_t lo, uint64_t hi, uint64_t *sum,
		 uint64_t *count)
{
	struct pfs_sched s;
	uint32_t n;

	*sum = *count = 0;
	CHECK(!pfs_sched_init(&s, o), "init");
	while ((n = pfs_sched_next(&s, d, 4096, UINT64_MAX))) {
		for (uint32_t i = 0; i < n; i++) {
			CHECK(d[i].len > 0, "empty descriptor");
			CHECK(d[i].off >= lo && d[i].off + d[i].len <= hi,
			      "descriptor %llu+%u outside [%llu, %llu)",
			      (unsigned long long)d[i].off, d[i].len, (unsigned long long)lo,
			      (unsigned long long)hi);
			CHECK((d[i].off - lo) % o->align == 0, "offset not aligned to the range");
			*sum += d[i].len;
		}
		*count += n;
	}
	return TAP_PASS;
}

static int t_whole_blob(void)
{
	struct pfs_sched_opts o = { .blob_size = 10 << 20,
				    .total_bytes = 25 << 20,
				    .min_len = 64,
				    .max_len = 256 << 10,
				    .align = 64,
				    .seed = 3 };
	uint64_t sum, cnt;

	for (int p = 0; p < 2; p++) {
		o.pattern = p ? PFS_PATTERN_RANDOM : PFS_PATTERN_SEQ;
		if (drain(&o, 0, o.blob_size, &sum, &cnt))
			return TAP_FAIL;
		CHECK(sum == o.total_bytes, "pattern %d: sum %llu", p, (unsigned long long)sum);
	}
	return TAP_PASS;
}

static int t_range(void)
{
	struct pfs_sched_opts o = { .blob_size = 16 << 20,
				    .total_bytes = 7 << 20,
				    .min_len = 1000,
				    .max_len = 70000,
				    .align = 64,
				    .seed = 9,
				    .range_off = (3 << 20) + 192,
				    .range_len = 5 << 20 };
	uint64_t sum, cnt;

	for (int p = 0; p < 2; p++) {
		o.pattern = p ? PFS_PATTERN_RANDOM : PFS_PATTERN_SEQ;
		if (drain(&o, o.range_off, o.range_off + o.range_len, &sum, &cnt))
			return TAP_FAIL;
		CHECK(sum == o.total_bytes, "pattern %d: sum %llu", p, (unsigned long long)sum);
	}
	return TAP_PASS;
}

/* A sequential schedule of exactly the range's length covers it once, in order. */
static int t_range_sweep(void)
{
	struct pfs_sched_opts o = { .blob_size = 8 << 20,
				    .total_bytes = 3 << 20,
				    .min_len = 4096,
				    .max_len = 65536,
				    .align = 4096,
				    .seed = 1,
				    .range_off = 1 << 20,
				    .range_len = 3 << 20 };
	struct pfs_sched s;
	uint64_t next = o.range_off;
	uint32_t n;

	CHECK(!pfs_sched_init(&s, &o), "init");
	while ((n = pfs_sched_next(&s, d, 7, UINT64_MAX)))
		for (uint32_t i = 0; i < n; i++) {
			CHECK(d[i].off == next, "gap or overlap at %llu", (unsigned long long)next);
			next += d[i].len;
		}
	CHECK(next == o.range_off + o.range_len, "swept to %llu", (unsigned long long)next);
	/* Twice the length wraps back to the range start, not the blob start. */
	o.total_bytes = 2 * o.range_len;
	CHECK(!pfs_sched_init(&s, &o), "init");
	next = 0;
	while ((n = pfs_sched_next(&s, d, 1, UINT64_MAX)))
		if (next++ && d[0].off == o.range_off)
			return TAP_PASS;
	CHECK(0, "never wrapped to the range start");
	return TAP_FAIL;
}

static int t_refused(void)
{
	const struct pfs_sched_opts good = {
		.blob_size = 1 << 20, .total_bytes = 1, .min_len = 64, .max_len = 128, .align = 64
	};
	struct pfs_sched_opts o;
	struct pfs_sched s;

	o = good;
	o.align = 48;
	CHECK(pfs_sched_init(&s, &o) == -EINVAL, "align not a power of 2");
	o = good;
	o.min_len = 256;
	CHECK(pfs_sched_init(&s, &o) == -EINVAL, "min > max");
	o = good;
	o.range_off = 1 << 19;
	o.range_len = (1 << 19) + 64;
	CHECK(pfs_sched_init(&s, &o) == -EINVAL, "range past the blob end");
	o = good;
	o.range_off = 1 << 20;
	o.range_len = 32;
	CHECK(pfs_sched_init(&s, &o) == -EINVAL, "range shorter than align");
	o = good;
	o.range_off = UINT64_MAX - 10;
	o.range_len = 64;
	CHECK(pfs_sched_init(&s, &o) == -EINVAL, "range offset overflow");
	o = good;
	o.range_off = 0;
	o.range_len = 1 << 20;
	CHECK(!pfs_sched_init(&s, &o), "the whole blob as a range");
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "whole blob, seq and random: in bounds, sum exact", t_whole_blob },
	{ "unaligned range, seq and random: inside the range, sum exact", t_range },
	{ "seq over a range sweeps it once in order, then wraps to its start", t_range_sweep },
	{ "impossible options and ranges are refused", t_refused },
};

TAP_MAIN(tests)
