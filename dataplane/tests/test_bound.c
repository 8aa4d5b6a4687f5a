// SPDX-License-Identifier: Apache-2.0
/*
 * What bound a fill (tools/pfs/bound.c, from libpfs-cli.a) and the cgroup
 * CPU counters it reads (src/util/cgroup_cpu.c). The rules over a table of
 * measured times; then the real thing: `pfs blob create --source` of a
 * real file (libcrypto.a) in a cgroup of its own with a CPU limit of 0.05
 * cores (cgroup v1 cpu.cfs_quota_us, or v2 cpu.max) says "cpu-quota" with
 * the limit and throttled periods in "cpu"; the same without a limit does
 * not. Needs root and a writable cpu controller for the second part.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bound.h"
#include "json_util.h"
#include "sh.h"
#include "tap.h"

static int t_rules(void)
{
	static const struct {
		const char *what;
		struct pfs_cli_fill_times t;
		struct pfs_cgroup_cpu cpu;
		const char *want;
	} cases[] = {
		{ "origin, reads slower than sha256",
		  { .load_s = 2, .read_s = 1.9, .hash_s = 0.5 },
		  { .have_stat = true },
		  "source" },
		{ "origin, sha256 most of the load",
		  { .load_s = 2, .read_s = 1.0, .hash_s = 1.8 },
		  { .have_stat = true },
		  "verification" },
		{ "origin, throttled a third of the load",
		  { .load_s = 3, .read_s = 1, .hash_s = 2.9 },
		  { .have_stat = true, .quota_cores = 0.05, .throttled_s = 1 },
		  "cpu-quota" },
		{ "origin, throttled a little",
		  { .load_s = 3, .read_s = 2.9, .hash_s = 1 },
		  { .have_stat = true, .quota_cores = 2, .throttled_s = 0.1 },
		  "source" },
		{ "origin, no counters",
		  { .load_s = 3, .read_s = 2.9, .hash_s = 1 },
		  { .have_stat = false, .throttled_s = 9 },
		  "source" },
		{ "relay, bytes most of the time",
		  { .relay = true, .fetch_s = 4, .verify_s = 0.1 },
		  { .have_stat = true },
		  "upstream" },
		{ "relay, a long verify after the last byte",
		  { .relay = true, .fetch_s = 1, .verify_s = 0.5 },
		  { .have_stat = true },
		  "verification" },
		{ "relay, throttled over its window",
		  { .relay = true, .window_s = 5, .fetch_s = 1, .verify_s = 0.1 },
		  { .have_stat = true, .quota_cores = 0.5, .throttled_s = 2 },
		  "cpu-quota" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char why[200] = "";
		const char *got = pfs_cli_bound(&cases[i].t, &cases[i].cpu, why, sizeof(why));

		CHECK(!strcmp(got, cases[i].want) && why[0], "%s: %s (%s), want %s", cases[i].what,
		      got, why, cases[i].want);
	}
	return TAP_PASS;
}

static char cg[160], quota_file[200], pfs[512];
static const char *src = "/usr/lib/x86_64-linux-gnu/libcrypto.a";

static void cleanup(void)
{
	if (cg[0])
		rmdir(cg);
}

/* A cgroup of our own with a CPU limit of @quota_us per 100 ms (-1: none). */
static int make_cgroup(long quota_us)
{
	char v[64];
	FILE *f;

	if (!cg[0]) {
		if (!access("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", W_OK)) {
			snprintf(cg, sizeof(cg), "/sys/fs/cgroup/cpu/pfs-test-bound-%d", getpid());
			snprintf(quota_file, sizeof(quota_file), "%s/cpu.cfs_quota_us", cg);
		} else if (!access("/sys/fs/cgroup/cgroup.subtree_control", W_OK)) {
			sh("echo +cpu > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null");
			snprintf(cg, sizeof(cg), "/sys/fs/cgroup/pfs-test-bound-%d", getpid());
			snprintf(quota_file, sizeof(quota_file), "%s/cpu.max", cg);
		} else {
			return -ENOENT;
		}
		if (mkdir(cg, 0755) && errno != EEXIST) {
			cg[0] = '\0';
			return -errno;
		}
		atexit(cleanup);
	}
	if (strstr(quota_file, "cpu.max"))
		snprintf(v, sizeof(v), quota_us < 0 ? "max 100000" : "%ld 100000", quota_us);
	else
		snprintf(v, sizeof(v), "%ld", quota_us);
	f = fopen(quota_file, "w");
	if (!f || fputs(v, f) < 0 || fclose(f))
		return -EIO;
	return 0;
}

/* pfs blob create --source SRC inside the cgroup: its result. */
static char *create_in_cgroup(const char *name)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd),
		 "sh -c 'echo $$ > %s/cgroup.procs && exec %s blob create --source %s --dir "
		 "/dev/shm --name %s --page 4k --replace' 2>/dev/null; rm -f /dev/shm/%s",
		 cg, pfs, src, name, name);
	return slurp_cmd(cmd);
}

static int t_setup(void)
{
	const char *p = getenv("PFS");

	snprintf(pfs, sizeof(pfs), "%s", p && *p ? p : "build/pfs");
	if (geteuid())
		return tap_skip("needs root (a cgroup of its own)");
	if (access(src, R_OK))
		src = "/usr/lib/aarch64-linux-gnu/libcrypto.a";
	CHECK(!access(src, R_OK), "no libcrypto.a (hack/install-deps.sh installs libssl-dev)");
	CHECK(!access(pfs, X_OK), "no pfs at %s", pfs);
	if (make_cgroup(-1))
		return tap_skip("no writable cpu controller (cgroup v1 cpu or v2 cpu.max)");
	return TAP_PASS;
}

static int t_quota(void)
{
	char *out, bound[32] = "";
	const char *cpu;

	CHECK(!make_cgroup(5000), "set a quota of 5 ms per 100 ms in %s", quota_file);
	out = create_in_cgroup("bound-q");
	cpu = out ? jsect(out, "\"cpu\"") : NULL;
	tap_diag("%.400s", out ? strstr(out, "\"cpu\"") : "(no output)");
	CHECK(out && strstr(out, "\"ok\":true") && cpu, "result: %s", out ? out : "none");
	CHECK(jreal(cpu, "quota_cores") == 0.05, "quota_cores %g", jreal(cpu, "quota_cores"));
	CHECK(jreal(cpu, "throttled_periods") >= 1 && jreal(cpu, "throttled_seconds") > 0,
	      "not throttled: %s", cpu);
	CHECK(jstr(out, "bound", bound, sizeof(bound)) && !strcmp(bound, "cpu-quota"),
	      "bound '%s': %s", bound, out);
	free(out);
	return TAP_PASS;
}

static int t_no_quota(void)
{
	char *out, bound[32] = "";
	const char *cpu;

	CHECK(!make_cgroup(-1), "lift the quota");
	out = create_in_cgroup("bound-n");
	cpu = out ? jsect(out, "\"cpu\"") : NULL;
	CHECK(out && strstr(out, "\"ok\":true") && cpu, "result: %s", out ? out : "none");
	CHECK(jreal(cpu, "quota_cores") == 0 && jreal(cpu, "throttled_periods") == 0, "cpu: %s",
	      cpu);
	CHECK(jstr(out, "bound", bound, sizeof(bound)) &&
		      (!strcmp(bound, "source") || !strcmp(bound, "verification")),
	      "bound '%s': %s", bound, out);
	tap_diag("without a limit: %s", bound);
	free(out);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "the rules over measured times", t_rules },
	{ "setup: root, a cgroup of our own", t_setup, .setup = true },
	{ "a 0.05-core limit: bound cpu-quota, the limit and its throttling in cpu", t_quota },
	{ "no limit: bound source or verification, nothing throttled", t_no_quota },
};

TAP_MAIN(tests)
