// SPDX-License-Identifier: Apache-2.0
/*
 * The option-table engine of the pfs CLI (tools/pfs/opt.c, linked from
 * libpfs-cli.a): one table drives the parser and --help, an alias sets
 * the same field and counts as given, bounds and types are enforced, and
 * the shared blob options read --size and --blob-size alike.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "acquire.h"
#include "tap.h"

struct t_args {
	uint64_t count, size;
	uint32_t small;
	double secs;
	int ms, pick;
	bool flag;
	const char *str;
	struct pfs_opt_range range;
};

static const struct pfs_opt_choice picks[] = { { "one", 1 }, { "two", 2 }, { 0 } };

#define AT(f) PFS_OPT_AT(struct t_args, f)
static const struct pfs_opt t_opts[] = {
	PFS_OPT_HEADING("Test:"),
	{ "count", PFS_OPT_U64, AT(count), "N", "a count", .min = 1, .max = 9 },
	{ "size", PFS_OPT_SIZE, AT(size), "N", "a size" },
	{ "old-size", PFS_OPT_SIZE, AT(size), "N", "alias of --size" },
	{ "small", PFS_OPT_SIZE, AT(small), "N", "a size in 32 bits, a power of two",
	  .flags = PFS_OPT_POW2 },
	{ "secs", PFS_OPT_SECS, AT(secs), "S", "seconds", .flags = PFS_OPT_NONZERO },
	{ "ms", PFS_OPT_MSEC, AT(ms), "S", "seconds into milliseconds", .max = 10 },
	{ "pick", PFS_OPT_CHOICE, AT(pick), "P", "one | two", .choices = picks },
	{ "flag", PFS_OPT_FLAG, AT(flag), NULL, "a flag" },
	{ "str", PFS_OPT_STR, AT(str), "S", "a string", .flags = PFS_OPT_REQUIRED },
	{ "range", PFS_OPT_RANGE, AT(range), "OFF:LEN", "a range", .flags = PFS_OPT_NONZERO },
	{ 0 },
};
#undef AT

/* Parse the NULL-terminated words after "test" into @a. */
static int parse(struct pfs_cmdline *c, struct t_args *a, const char *const *words)
{
	char *argv[32] = { "test" };
	int argc = 1;

	memset(a, 0, sizeof(*a));
	*c = (struct pfs_cmdline){ .cmd = "test",
				   .usage = "usage: test\n",
				   .group = { { t_opts, a } } };
	while (words[argc - 1])
		argv[argc] = (char *)words[argc - 1], argc++;
	return pfs_opt_parse(c, argc, argv);
}

static int t_types(void)
{
	static const char *const ok[] = {
		"--count", "0x9",   "--size", "1.5K",	 "--small", "4K",
		"--secs",  "0.25",  "--ms",   "2.5",	 "--pick",  "two",
		"--flag",  "--str", "x",      "--range", "1K:2GB",  NULL
	};
	struct pfs_cmdline c;
	struct t_args a;

	CHECK(!parse(&c, &a, ok), "parse");
	CHECK(a.count == 9 && a.size == 1536 && a.small == 4096 && a.secs == 0.25 && a.ms == 2500 &&
		      a.pick == 2 && a.flag && !strcmp(a.str, "x"),
	      "values: %llu %llu %u %f %d %d", (unsigned long long)a.count,
	      (unsigned long long)a.size, a.small, a.secs, a.ms, a.pick);
	CHECK(a.range.off == 1024 && a.range.len == 2000000000ULL, "range %llu:%llu",
	      (unsigned long long)a.range.off, (unsigned long long)a.range.len);
	CHECK(pfs_opt_given(&c, "count") && pfs_opt_given(&c, "old-size"),
	      "given (an alias counts with its option)");
	return TAP_PASS;
}

static int t_alias(void)
{
	static const char *const w[] = { "--str", "x", "--old-size", "2M", NULL };
	struct pfs_cmdline c;
	struct t_args a;

	CHECK(!parse(&c, &a, w) && a.size == 2 << 20, "alias sets the field");
	CHECK(pfs_opt_given(&c, "size") && pfs_opt_given(&c, "old-size"), "given by either name");
	CHECK(!pfs_opt_given(&c, "count"), "count not given");
	return TAP_PASS;
}

static int t_refused(void)
{
	static const char *const cases[][4] = {
		{ "--count", "0" },  { "--count", "10" },   { "--count", "1K" },
		{ "--small", "3" },  { "--small", "8G" },   { "--secs", "0" },
		{ "--ms", "11" },    { "--pick", "three" }, { "--range", "1K:0" },
		{ "--range", "1K" }, { "--size", "-1" },    { "--size", "0.5" },
		{ "--bogus" },	     { "stray" },	    { "--count" },
	};
	int null = open("/dev/null", O_WRONLY), saved = dup(2);

	/* the refusals are reported on stderr; keep the TAP output clean */
	dup2(null, 2);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *w[6] = { "--str", "x", cases[i][0], cases[i][1], NULL };
		struct pfs_cmdline c;
		struct t_args a;

		if (parse(&c, &a, w) != -EINVAL) {
			dup2(saved, 2);
			CHECK(0, "case %zu (%s %s) accepted", i, cases[i][0],
			      cases[i][1] ? cases[i][1] : "");
		}
	}
	{
		const char *w[] = { "--count", "1", NULL };
		struct pfs_cmdline c;
		struct t_args a;
		int rc = parse(&c, &a, w);

		dup2(saved, 2);
		CHECK(rc == -EINVAL, "--str is required");
	}
	close(null);
	close(saved);
	return TAP_PASS;
}

/* --help is printed from the table: every option and heading is in it. */
static int t_help(void)
{
	static const char *const w[] = { "--help", NULL };
	char *buf = NULL;
	size_t len = 0;
	struct pfs_cmdline c;
	struct t_args a;
	FILE *f = open_memstream(&buf, &len);
	int rc;

	CHECK(f, "open_memstream");
	{
		/* --help prints to stdout: not into the TAP stream */
		int null = open("/dev/null", O_WRONLY), saved = dup(1);

		fflush(stdout);
		dup2(null, 1);
		rc = parse(&c, &a, w);
		fflush(stdout);
		dup2(saved, 1);
		close(null);
		close(saved);
	}
	CHECK(rc == PFS_OPT_HELP, "--help returns PFS_OPT_HELP");
	pfs_opt_usage(&c, f);
	fclose(f);
	for (const struct pfs_opt *o = t_opts; o->type != PFS_OPT_END; o++) {
		char want[64];

		snprintf(want, sizeof(want), o->type == PFS_OPT_HEAD ? "%s" : "--%s", o->name);
		rc = strstr(buf, want) && (!o->help || strstr(buf, o->help));
		if (!rc) {
			tap_diag("%s", buf);
			free(buf);
			CHECK(0, "%s missing from --help", want);
		}
	}
	free(buf);
	return TAP_PASS;
}

/* The shared blob options: --size and its alias --blob-size. */
static int t_blob_opts(void)
{
	static const char *const sizes[][2] = { { "--size", "1GB" }, { "--blob-size", "1GB" } };

	for (int i = 0; i < 2; i++) {
		char *argv[] = { "test",
				 (char *)sizes[i][0],
				 (char *)sizes[i][1],
				 "--fill",
				 "none",
				 "--numa",
				 "3",
				 NULL };
		struct pfs_cli_blob cb;
		struct pfs_cmdline c = { .cmd = "test",
					 .usage = "",
					 .group = { { pfs_cli_blob_opts, &cb } } };

		pfs_cli_blob_init(&cb);
		CHECK(!pfs_opt_parse(&c, 7, argv), "%s parses", sizes[i][0]);
		CHECK(cb.opts.size == 1000000000ULL && cb.opts.fill == PFS_FILL_NONE &&
			      cb.opts.numa_node == 3 && cb.opts.page == PFS_PAGE_2M,
		      "%s: size %llu fill %d numa %d", sizes[i][0],
		      (unsigned long long)cb.opts.size, cb.opts.fill, cb.opts.numa_node);
	}
	return TAP_PASS;
}

/* `pfs send --transport list` names the transports of the build even with
 * every required option missing: the e2e tests and make demo ask the image
 * that way, so a parser that checks --mode first would break them. */
static int t_transport_list(void)
{
	const char *pfs = getenv("PFS") ? getenv("PFS") : "build/pfs";
	char cmd[512], out[512] = "";
	size_t n = 0;
	FILE *f;
	int rc;

	if (access(pfs, X_OK))
		return tap_skip("pfs binary %s not built", pfs);
	snprintf(cmd, sizeof(cmd), "%s send --transport list 2>&1", pfs);
	f = popen(cmd, "r");
	CHECK(f, "popen: %s", strerror(errno));
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	rc = pclose(f);
	CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2, "exit %d: %s", rc, out);
	CHECK(strstr(out, "this build has: tcp"), "no transport list: %s", out);
	return TAP_PASS;
}

/* An AF_XDP end without its interface exits 6, "transport unavailable"
 * (the operator's TransportUnavailable), not 1, on either side. */
static int t_afxdp_unavailable(void)
{
	const char *pfs = getenv("PFS") ? getenv("PFS") : "build/pfs";
	static const char *const sides[] = {
		"recv --transport afxdp --ifname pfs-none0 --listen 127.0.0.1:9 --mode payload "
		"--accept-timeout 1",
		"send --transport afxdp --ifname pfs-none0 --connect 127.0.0.1:9 --mode payload "
		"--size 1M",
	};

	CHECK(!access(pfs, X_OK), "pfs binary %s not built", pfs);
	for (size_t i = 0; i < sizeof(sides) / sizeof(sides[0]); i++) {
		char cmd[512], out[4096] = "";
		size_t n;
		FILE *f;
		int rc;

		snprintf(cmd, sizeof(cmd), "%s %s 2>/dev/null", pfs, sides[i]);
		f = popen(cmd, "r");
		CHECK(f, "popen: %s", strerror(errno));
		n = fread(out, 1, sizeof(out) - 1, f);
		out[n] = '\0';
		rc = pclose(f);
		CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 6, "%s: exit %d, want 6: %s", sides[i],
		      WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, out);
		CHECK(strstr(out, "pfs-none0"), "%s: the error does not name the interface: %s",
		      sides[i], out);
	}
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "every option type parses into its field", t_types },
	{ "an alias sets the same field and counts as given", t_alias },
	{ "out of range, wrong type, unknown, stray and missing are refused", t_refused },
	{ "--help lists every option and heading of the table", t_help },
	{ "blob options: --size and --blob-size alike, 1GB decimal", t_blob_opts },
	{ "pfs send --transport list names the transports before any required option",
	  t_transport_list },
	{ "an AF_XDP end without its interface exits 6 (transport unavailable)",
	  t_afxdp_unavailable },
};

TAP_MAIN(tests)
