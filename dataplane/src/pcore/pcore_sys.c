// SPDX-License-Identifier: Apache-2.0
/*
 * Where pcores run and where their memory lives: the allowed CPU set
 * (sched_getaffinity, which inside a Guaranteed pod under the static CPU
 * manager is exactly the cores Kubernetes assigned), NUMA node topology from
 * sysfs, memory binding with raw set_mempolicy/mbind syscalls (no libnuma
 * dependency), and thread pinning. Called from the control thread before
 * workers start, except pfs_pcore_pin(), which each worker calls on itself.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pfs/pcore.h"

#define MPOL_BIND 2
#define MPOL_MF_MOVE (1 << 1)
#define MAX_NODES 1024

int pfs_pcore_allowed_cpus(int *cpus, int max)
{
	cpu_set_t *set;
	size_t setsz;
	int n = 0, ncpu = CPU_SETSIZE;

	/* Size the mask for machines with more than CPU_SETSIZE CPUs. */
	long conf = sysconf(_SC_NPROCESSORS_CONF);

	if (conf > ncpu)
		ncpu = (int)conf;
	set = CPU_ALLOC(ncpu);
	if (!set)
		return -ENOMEM;
	setsz = CPU_ALLOC_SIZE(ncpu);
	CPU_ZERO_S(setsz, set);
	if (sched_getaffinity(0, setsz, set)) {
		int err = -errno;

		CPU_FREE(set);
		return err;
	}
	for (int c = 0; c < ncpu && n < max; c++)
		if (CPU_ISSET_S(c, setsz, set))
			cpus[n++] = c;
	CPU_FREE(set);
	return n;
}

/* Parse a sysfs list such as "0-3,8,10-11" into a bitmap of @nbits. */
static int parse_list(const char *path, unsigned char *bits, int nbits)
{
	char buf[4096], *s, *end;
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	memset(bits, 0, (nbits + 7) / 8);
	for (s = buf; *s && *s != '\n';) {
		long a = strtol(s, &end, 10), b = a;

		if (end == s)
			return -EIO;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (long i = a; i <= b && i < nbits; i++)
			bits[i / 8] |= 1u << (i % 8);
		s = *end == ',' ? end + 1 : end;
	}
	return 0;
}

static int node_online(int node, unsigned char *bits)
{
	if (parse_list("/sys/devices/system/node/online", bits, MAX_NODES))
		return node == 0; /* no NUMA sysfs: one node */
	return node >= 0 && node < MAX_NODES && (bits[node / 8] >> (node % 8)) & 1;
}

int pfs_pcore_numa_nodes(void)
{
	unsigned char bits[MAX_NODES / 8];
	int n = 0;

	if (parse_list("/sys/devices/system/node/online", bits, MAX_NODES))
		return 1;
	for (int i = 0; i < MAX_NODES; i++)
		n += (bits[i / 8] >> (i % 8)) & 1;
	return n ? n : 1;
}

int pfs_pcore_node_filter(int node, int *cpus, int n)
{
	unsigned char nodes[MAX_NODES / 8], bits[8192 / 8];
	char path[96];
	int w = 0;

	if (!node_online(node, nodes))
		return -EINVAL;
	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", node);
	if (parse_list(path, bits, 8192))
		return pfs_pcore_numa_nodes() == 1 ? n : -EINVAL;
	for (int i = 0; i < n; i++)
		if (cpus[i] < 8192 && (bits[cpus[i] / 8] >> (cpus[i] % 8)) & 1)
			cpus[w++] = cpus[i];
	return w;
}

int pfs_pcore_cpus_node(const int *cpus, int n)
{
	unsigned char nodes[MAX_NODES / 8], bits[8192 / 8];
	char path[96];

	if (n <= 0)
		return -1;
	if (parse_list("/sys/devices/system/node/online", nodes, MAX_NODES))
		return 0;
	for (int node = 0; node < MAX_NODES; node++) {
		int i = 0;

		if (!((nodes[node / 8] >> (node % 8)) & 1))
			continue;
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", node);
		if (parse_list(path, bits, 8192))
			continue;
		while (i < n && cpus[i] >= 0 && cpus[i] < 8192 &&
		       (bits[cpus[i] / 8] >> (cpus[i] % 8)) & 1)
			i++;
		if (i == n)
			return node;
	}
	return -1;
}

int pfs_pcore_numa_bind(int node, void *addr, size_t len, char *note, size_t note_len)
{
	unsigned char nodes[MAX_NODES / 8];
	unsigned long mask[MAX_NODES / (8 * sizeof(unsigned long))] = { 0 };

	if (!node_online(node, nodes))
		return -EINVAL;
	if (pfs_pcore_numa_nodes() == 1) {
		snprintf(note, note_len, "single NUMA node: binding to node %d is a no-op", node);
		return 0;
	}
	mask[node / (8 * sizeof(unsigned long))] |= 1UL << (node % (8 * sizeof(unsigned long)));
	/* The thread policy covers rings and result buffers allocated after
	 * this call (workers inherit it); mbind moves the blob pages that are
	 * already faulted in. */
	if (syscall(SYS_set_mempolicy, MPOL_BIND, mask, (unsigned long)MAX_NODES + 1))
		return -errno;
	if (addr && len &&
	    syscall(SYS_mbind, addr, len, MPOL_BIND, mask, (unsigned long)MAX_NODES + 1,
		    MPOL_MF_MOVE))
		return -errno;
	snprintf(note, note_len, "memory bound to node %d", node);
	return 0;
}

int pfs_pcore_pin(int cpu)
{
	cpu_set_t *set;
	size_t setsz;
	int err = 0;

	if (cpu < 0)
		return -EINVAL;
	set = CPU_ALLOC(cpu + 1);
	if (!set)
		return -ENOMEM;
	setsz = CPU_ALLOC_SIZE(cpu + 1);
	CPU_ZERO_S(setsz, set);
	CPU_SET_S(cpu, setsz, set);
	if (sched_setaffinity(0, setsz, set))
		err = -errno;
	CPU_FREE(set);
	return err;
}
