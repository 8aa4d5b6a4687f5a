// SPDX-License-Identifier: Apache-2.0
/*
 * The descriptor schedule both the pcore runner and the baseline walk, and
 * option validation. Pure functions: no threads, no memory.
 *
 * A pass over [range_off, range_end) is cut at range_off, at every multiple
 * of desc_len counted from align_down(range_off, align), and at range_end.
 * So every descriptor but the first starts on an align boundary, the first
 * may be short (it ends on the first such boundary) and the last may be
 * short; descriptor i is computable in O(1), which lets the producer
 * generate frames without a precomputed list.
 */
#include <errno.h>

#include "pfs/pcore.h"

static inline uint64_t sched_base(const struct pfs_pcore_opts *o)
{
	return o->range_off & ~((uint64_t)o->align - 1);
}

uint64_t pfs_pcore__ndescs(const struct pfs_pcore_opts *o)
{
	uint64_t span = o->range_off + o->range_len - sched_base(o);

	return (span + o->desc_len - 1) / o->desc_len;
}

void pfs_pcore__desc(const struct pfs_pcore_opts *o, uint64_t i, uint64_t *off, uint32_t *len)
{
	uint64_t base = sched_base(o), end = o->range_off + o->range_len;
	uint64_t a = base + i * o->desc_len, b = a + o->desc_len;

	if (a < o->range_off)
		a = o->range_off;
	if (b > end)
		b = end;
	*off = a;
	*len = (uint32_t)(b - a);
}

static inline int is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

int pfs_pcore__check_opts(const struct pfs_pcore_opts *o, uint64_t size, const char **why)
{
	const char *r = NULL;

	if (!o || o->sz < sizeof(*o))
		r = "options struct too small";
	else if ((unsigned)o->op >= PFS_OP__COUNT)
		r = "unknown op";
	else if (!o->range_len)
		r = "range length is zero";
	else if (o->range_off > size || o->range_len > size - o->range_off)
		r = "range extends past the end of the blob";
	else if (!is_pow2(o->align))
		r = "align must be a power of two";
	else if (!o->desc_len || o->desc_len % o->align)
		r = "descriptor length must be a non-zero multiple of align";
	else if (o->desc_len > (1u << 30))
		r = "descriptor length must be <= 1 GiB";
	else if (!o->dpf || o->dpf > 4096)
		r = "dpf must be 1..4096";
	else if (!is_pow2(o->ring_slots) || o->ring_slots < o->dpf)
		r = "ring slots must be a power of two >= dpf";
	else if (!o->pcores || o->pcores > PFS_PCORE_MAX)
		r = "pcores must be 1..256";
	else if (!(o->duration_s > 0) && !o->passes)
		r = "need a duration or at least one pass";
	else if (!(o->duration_s > 0) && o->passes > UINT64_MAX / pfs_pcore__ndescs(o))
		r = "too many passes";
	if (why)
		*why = r;
	return r ? -EINVAL : 0;
}
