/* SPDX-License-Identifier: Apache-2.0 */
/* What bound a fill, from what the fill measured: the word the result's
 * "bound" carries and the operator shows per node. Pure; bound.c. */
#ifndef PFS_CLI_BOUND_H
#define PFS_CLI_BOUND_H

#include <stdbool.h>
#include <stddef.h>

#include "pfs/cgroup_cpu.h"

struct pfs_json;

/* One fill's times, seconds. An origin sets load_s (the whole load),
 * read_s (reads, wall) and hash_s (its in-order hashing thread's sha256
 * time); a relay sets fetch_s (first to last byte) and verify_s (last
 * byte to verified). */
struct pfs_cli_fill_times {
	bool relay;
	double window_s; /* between the two cgroup snapshots (the fill, set-up included) */
	double load_s, read_s, hash_s;
	double fetch_s, verify_s;
};

/* "cpu-quota" (throttled by its cgroup for at least a fifth of the fill),
 * "verification" (origin: hashing took at least 80% of the load, so the
 * reads waited on it; relay: the verify after the last byte took at least
 * a fifth of the fill), else "source" (origin) or "upstream" (relay: the
 * bytes came at the pace of the upstream and the link). @why (size @n)
 * gets the numbers that decided it. */
const char *pfs_cli_bound(const struct pfs_cli_fill_times *t, const struct pfs_cgroup_cpu *cpu,
			  char *why, size_t n);

/* The result's "cpu" object (the cgroup's quota and what the fill used
 * and was throttled), then "bound" and "bound_why". */
void pfs_cli_bound_json(struct pfs_json *j, const struct pfs_cli_fill_times *t,
			const struct pfs_cgroup_cpu *cpu);

#endif /* PFS_CLI_BOUND_H */
