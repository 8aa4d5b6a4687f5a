// SPDX-License-Identifier: Apache-2.0
/*
 * What bound a fill (bound.h). The rules are coarse on purpose: they name
 * the one resource an operator would add first, from numbers the fill
 * measured itself, and the result says which numbers.
 */
#include <stdio.h>

#include "bound.h"
#include "pfs/result.h"

/* Throttled at least this share of the fill: the quota bound it. */
#define QUOTA_SHARE 0.2
/* Origin: hashing took at least this share of the load. */
#define HASH_SHARE 0.8
/* Relay: the verify after the last byte took at least this share. */
#define VERIFY_SHARE 0.2

const char *pfs_cli_bound(const struct pfs_cli_fill_times *t, const struct pfs_cgroup_cpu *cpu,
			  char *why, size_t n)
{
	double wall = t->relay ? t->fetch_s + t->verify_s : t->load_s;
	double window = t->window_s > wall ? t->window_s : wall;

	/* Throttled time is counted per CPU the cgroup's threads wait on, so
	 * it can exceed the window; any sizeable share means the quota, not
	 * the work, set the pace. */
	if (cpu->have_stat && cpu->quota_cores > 0 && window > 0 &&
	    cpu->throttled_s >= QUOTA_SHARE * window) {
		snprintf(why, n,
			 "throttled %.2f s during the fill's %.2f s by a CPU limit of %.3g cores",
			 cpu->throttled_s, window, cpu->quota_cores);
		return "cpu-quota";
	}
	if (!t->relay) {
		if (t->load_s > 0 && t->hash_s >= HASH_SHARE * t->load_s) {
			snprintf(why, n, "sha256 took %.2f s of the load's %.2f s", t->hash_s,
				 t->load_s);
			return "verification";
		}
		snprintf(why, n, "reads took %.2f s of the load's %.2f s, sha256 %.2f s", t->read_s,
			 t->load_s, t->hash_s);
		return "source";
	}
	if (wall > 0 && t->verify_s >= VERIFY_SHARE * wall) {
		snprintf(why, n, "verifying after the last byte took %.2f s of %.2f s", t->verify_s,
			 wall);
		return "verification";
	}
	snprintf(why, n, "the bytes took %.2f s to arrive, verifying after them %.2f s", t->fetch_s,
		 t->verify_s);
	return "upstream";
}

void pfs_cli_bound_json(struct pfs_json *j, const struct pfs_cli_fill_times *t,
			const struct pfs_cgroup_cpu *cpu)
{
	char why[200];
	const char *b = pfs_cli_bound(t, cpu, why, sizeof(why));

	if (cpu->have_stat) {
		pfs_json_obj(j, "cpu");
		pfs_json_num(j, "quota_cores", cpu->quota_cores, 3);
		if (cpu->have_usage)
			pfs_json_num(j, "usage_seconds", cpu->usage_s, 3);
		pfs_json_num(j, "throttled_seconds", cpu->throttled_s, 3);
		pfs_json_u64(j, "throttled_periods", cpu->throttled_periods);
		pfs_json_u64(j, "periods", cpu->periods);
		pfs_json_close(j);
	}
	pfs_json_str(j, "bound", b, 16);
	pfs_json_str(j, "bound_why", why, sizeof(why));
}
