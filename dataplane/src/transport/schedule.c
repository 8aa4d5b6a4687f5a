// SPDX-License-Identifier: Apache-2.0
/*
 * Descriptor schedules. A schedule is owned by one sender thread; its state
 * is three integers, so producing a descriptor costs a few instructions and
 * never touches the blob. Lengths are uniform in [min_len, max_len] rounded
 * down to the alignment, clamped at the range end; the final descriptor is cut
 * so the lengths sum exactly to total_bytes.
 */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "pfs/schedule.h"

static inline uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

int pfs_pattern_parse(const char *str, enum pfs_pattern *p)
{
	if (!strcasecmp(str, "seq") || !strcasecmp(str, "sequential"))
		*p = PFS_PATTERN_SEQ;
	else if (!strcasecmp(str, "random"))
		*p = PFS_PATTERN_RANDOM;
	else
		return -EINVAL;
	return 0;
}

int pfs_sched_init(struct pfs_sched *s, const struct pfs_sched_opts *o)
{
	uint64_t len = o->range_len ? o->range_len : o->blob_size;
	uint64_t off = o->range_len ? o->range_off : 0;

	if (!o->align || (o->align & (o->align - 1)) || !o->min_len || o->max_len < o->min_len ||
	    o->max_len < o->align || len < o->align || (o->total_bytes && !o->blob_size) ||
	    off > o->blob_size || len > o->blob_size - off)
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	s->o = *o;
	s->o.range_off = off;
	s->o.range_len = len;
	s->left = o->total_bytes;
	s->rng = o->seed;
	return 0;
}

uint32_t pfs_sched_next(struct pfs_sched *s, struct pfs_desc *d, uint32_t max, uint64_t byte_cap)
{
	const struct pfs_sched_opts *o = &s->o;
	uint64_t span = o->max_len - o->min_len + 1, mask = ~(uint64_t)(o->align - 1);
	uint32_t n = 0;

	while (n < max && s->left && byte_cap) {
		uint64_t len = (o->min_len + splitmix64(&s->rng) % span) & mask, off;

		if (!len)
			len = o->align;
		/* off is relative to the range until it is stored. */
		if (o->pattern == PFS_PATTERN_RANDOM) {
			off = (splitmix64(&s->rng) % o->range_len) & mask;
		} else {
			if (s->cursor >= o->range_len)
				s->cursor = 0;
			off = s->cursor;
		}
		if (len > o->range_len - off)
			len = o->range_len - off;
		if (len > s->left)
			len = s->left;
		if (len > byte_cap)
			len = byte_cap;
		d[n].off = o->range_off + off;
		d[n].len = (uint32_t)len;
		d[n].rsvd = 0;
		n++;
		s->cursor = off + len;
		s->left -= len;
		byte_cap -= len;
	}
	return n;
}
