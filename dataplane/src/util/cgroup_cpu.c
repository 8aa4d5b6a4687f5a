// SPDX-License-Identifier: Apache-2.0
/*
 * pfs_cgroup_cpu_read (pfs/cgroup_cpu.h): this process's cgroup, v2 or v1,
 * its CPU quota and throttling counters. Only reads small files; a
 * missing file leaves its fields zero.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pfs/cgroup_cpu.h"

#define CG "/sys/fs/cgroup"

/* The cgroup path of @ctrl ("" for v2's unified line "0::") from
 * /proc/self/cgroup into @out; 0 or -ENOENT. */
static int self_path(const char *ctrl, char *out, size_t n)
{
	FILE *f = fopen("/proc/self/cgroup", "r");
	char line[4096];
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (err && fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		char *tok, *save;

		if (!c2)
			continue;
		*c2 = '\0';
		line[strcspn(line, "\n")] = '\0';
		c2[1 + strcspn(c2 + 1, "\n")] = '\0';
		if (!*ctrl) {
			if (!strcmp(line, "0") && !c1[1]) {
				snprintf(out, n, "%s", c2 + 1);
				err = 0;
			}
			continue;
		}
		for (tok = strtok_r(c1 + 1, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
			if (!strcmp(tok, ctrl)) {
				snprintf(out, n, "%s", c2 + 1);
				err = 0;
			}
	}
	fclose(f);
	return err;
}

/* @mnt/@path/@file if it exists, else @mnt/@file (a container's own cgroup
 * is the root of its mount); 0 with the path in @out, or -ENOENT. */
static int pick(const char *mnt, const char *path, const char *file, char *out, size_t n)
{
	snprintf(out, n, "%s%s/%s", mnt, path, file);
	if (!access(out, R_OK))
		return 0;
	snprintf(out, n, "%s/%s", mnt, file);
	return access(out, R_OK) ? -ENOENT : 0;
}

static int read_text(const char *p, char *buf, size_t n)
{
	FILE *f = fopen(p, "r");
	size_t r;

	if (!f)
		return -errno;
	r = fread(buf, 1, n - 1, f);
	buf[r] = '\0';
	fclose(f);
	return 0;
}

/* "key value" lines: @key's value, or 0 when absent. */
static uint64_t stat_field(const char *text, const char *key)
{
	size_t kl = strlen(key);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, key, kl) && l[kl] == ' ')
			return strtoull(l + kl + 1, NULL, 10);
	return 0;
}

static int read_v2(const char *path, struct pfs_cgroup_cpu *c)
{
	char p[4200], text[1024];
	char quota[32];
	unsigned long long period;

	if (pick(CG, path, "cpu.stat", p, sizeof(p)) || read_text(p, text, sizeof(text)))
		return -ENOENT;
	c->have_stat = c->have_usage = true;
	c->usage_s = (double)stat_field(text, "usage_usec") / 1e6;
	c->periods = stat_field(text, "nr_periods");
	c->throttled_periods = stat_field(text, "nr_throttled");
	c->throttled_s = (double)stat_field(text, "throttled_usec") / 1e6;
	/* "max 100000" or "5000 100000"; absent at the root */
	if (!pick(CG, path, "cpu.max", p, sizeof(p)) && !read_text(p, text, sizeof(text)) &&
	    sscanf(text, "%31s %llu", quota, &period) == 2 && strcmp(quota, "max") && period)
		c->quota_cores = strtod(quota, NULL) / (double)period;
	return 0;
}

static int read_v1(struct pfs_cgroup_cpu *c)
{
	/* cpu mounted alone, or with cpuacct (either order); cpuacct alone */
	static const char *const mnts[] = { CG "/cpu", CG "/cpu,cpuacct", CG "/cpuacct,cpu" };
	static const char *const acct[] = { CG "/cpuacct", CG "/cpu,cpuacct", CG "/cpuacct,cpu" };
	char path[4096], p[4200], text[1024];
	const char *mnt = NULL;
	long long quota = -1, period = 0;

	if (self_path("cpu", path, sizeof(path)))
		return -ENOENT;
	for (size_t i = 0; i < sizeof(mnts) / sizeof(mnts[0]) && !mnt; i++)
		if (!pick(mnts[i], path, "cpu.stat", p, sizeof(p)))
			mnt = mnts[i];
	if (!mnt || read_text(p, text, sizeof(text)))
		return -ENOENT;
	c->have_stat = true;
	c->periods = stat_field(text, "nr_periods");
	c->throttled_periods = stat_field(text, "nr_throttled");
	c->throttled_s = (double)stat_field(text, "throttled_time") / 1e9;
	if (!pick(mnt, path, "cpu.cfs_quota_us", p, sizeof(p)) && !read_text(p, text, sizeof(text)))
		quota = strtoll(text, NULL, 10);
	if (!pick(mnt, path, "cpu.cfs_period_us", p, sizeof(p)) &&
	    !read_text(p, text, sizeof(text)))
		period = strtoll(text, NULL, 10);
	if (quota > 0 && period > 0)
		c->quota_cores = (double)quota / (double)period;
	/* cpuacct.usage (ns): with cpu on the same mount, or cpuacct's own */
	if (self_path("cpuacct", path, sizeof(path)))
		return 0;
	for (size_t i = 0; i < sizeof(acct) / sizeof(acct[0]); i++)
		if (!pick(acct[i], path, "cpuacct.usage", p, sizeof(p)) &&
		    !read_text(p, text, sizeof(text))) {
			c->usage_s = (double)strtoull(text, NULL, 10) / 1e9;
			c->have_usage = true;
			break;
		}
	return 0;
}

int pfs_cgroup_cpu_read(struct pfs_cgroup_cpu *c)
{
	char path[4096];

	memset(c, 0, sizeof(*c));
	/* v1 first: on a hybrid host the unified hierarchy has no cpu controller */
	if (!read_v1(c))
		return 0;
	memset(c, 0, sizeof(*c));
	if (!self_path("", path, sizeof(path)) && !read_v2(path, c))
		return 0;
	memset(c, 0, sizeof(*c));
	return -ENOENT;
}

struct pfs_cgroup_cpu pfs_cgroup_cpu_since(const struct pfs_cgroup_cpu *then,
					   const struct pfs_cgroup_cpu *now)
{
	struct pfs_cgroup_cpu d = *now;

	if (!then->have_stat || !now->have_stat)
		return d;
	d.usage_s = now->usage_s - then->usage_s;
	d.throttled_s = now->throttled_s - then->throttled_s;
	d.periods = now->periods - then->periods;
	d.throttled_periods = now->throttled_periods - then->throttled_periods;
	return d;
}
