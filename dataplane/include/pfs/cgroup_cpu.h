/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU quota of the cgroup this process runs in, and how much of the
 * time it was throttled by it: what tells "the fill was slow because its
 * container had 50m of CPU" from "the source was slow". Read from the
 * cgroup file system, v2 (cpu.max, cpu.stat: usage_usec, nr_periods,
 * nr_throttled, throttled_usec) or v1 (cpu.cfs_quota_us, cpu.cfs_period_us,
 * cpu.stat: nr_periods, nr_throttled, throttled_time; cpuacct.usage), the
 * cgroup found from /proc/self/cgroup, or the mount's root when that path
 * is not there (a container sees its own cgroup at the root). No state. */
#ifndef PFS_CGROUP_CPU_H
#define PFS_CGROUP_CPU_H

#include <stdbool.h>
#include <stdint.h>

struct pfs_cgroup_cpu {
	bool have_stat; /* cpu.stat was read (throttling counters) */
	bool have_usage; /* usage_s is known */
	double quota_cores; /* cpu.max / cfs quota over period; 0: no limit */
	double usage_s; /* CPU time the cgroup used */
	double throttled_s; /* time its tasks were throttled */
	uint64_t periods, throttled_periods;
};

/* pfs_cgroup_cpu_read - a snapshot into *@c; 0, or -ENOENT when no cgroup
 * CPU controller is found (then *@c is zeroed). */
int pfs_cgroup_cpu_read(struct pfs_cgroup_cpu *c);

/* pfs_cgroup_cpu_since - the counters of @now minus those of @then (the
 * quota is @now's): what happened between two snapshots. */
struct pfs_cgroup_cpu pfs_cgroup_cpu_since(const struct pfs_cgroup_cpu *then,
					   const struct pfs_cgroup_cpu *now);

#endif /* PFS_CGROUP_CPU_H */
