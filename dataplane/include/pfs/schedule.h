/* SPDX-License-Identifier: Apache-2.0 */
/* Descriptor schedules: the deterministic stream of (offset, length) pairs a
 * sender turns into grams. Sequential schedules sweep the blob and wrap;
 * random ones jump anywhere (arithmetic deltas then go backwards too). Both
 * stay inside an optional range of the blob. */
#ifndef PFS_SCHEDULE_H
#define PFS_SCHEDULE_H

#include <stdint.h>

#include "pfs/gram.h"

enum pfs_pattern {
	PFS_PATTERN_SEQ = 0,
	PFS_PATTERN_RANDOM,
};

struct pfs_sched_opts {
	uint64_t blob_size;
	uint64_t total_bytes; /* effective bytes to cover (sum of lengths) */
	uint32_t min_len; /* >= 1 */
	uint32_t max_len; /* >= min_len */
	uint32_t align; /* offsets and lengths are multiples (power of 2) */
	enum pfs_pattern pattern;
	uint64_t seed;
	/* The part of the blob descriptors stay in; range_len 0 is the whole
	 * blob. Offsets are range_off plus multiples of align. */
	uint64_t range_off, range_len;
};

struct pfs_sched {
	struct pfs_sched_opts o;
	uint64_t cursor; /* next offset (sequential) */
	uint64_t left; /* effective bytes still to schedule */
	uint64_t rng;
};

/* 0, or -EINVAL when the options cannot produce a schedule. */
int pfs_sched_init(struct pfs_sched *s, const struct pfs_sched_opts *o);

/* Next up-to-@max descriptors whose lengths sum to at most @byte_cap (the
 * first one may be cut to fit). Returns the count; 0 when finished. */
uint32_t pfs_sched_next(struct pfs_sched *s, struct pfs_desc *d, uint32_t max, uint64_t byte_cap);

int pfs_pattern_parse(const char *str, enum pfs_pattern *p);

#endif /* PFS_SCHEDULE_H */
