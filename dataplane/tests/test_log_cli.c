// SPDX-License-Identifier: Apache-2.0
/*
 * The data plane's log lines as the operator's pods ask for them: the
 * binary in $PFS, run on a real source (/usr/include/linux) and on a path
 * that does not exist. --log-format json writes one JSON object a line
 * with zap's field names in zap's order (level, ts, logger "pfs", msg);
 * each --log-time-encoding writes ts the way zap does; quotes,
 * backslashes, control bytes and bytes that are not UTF-8 in a message
 * come out escaped; PFS_LOG_* set the same, flags win, a bad value is a
 * usage error; text stays "pfs: LEVEL: msg". Each line is checked by
 * Python's json module, not by the code that wrote it. No root.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sh.h"
#include "tap.h"

static char pfs[512], dir[128];

/* Run a shell command; its output (stdout + stderr as the command routes
 * them, malloc'd) and exit code in *@rc. */
static char *run(int *rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *run(int *rc, const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return slurp_cmd_rc(cmd, rc);
}

/* Python checks every line of pfs's stderr (@args after pfs) against
 * @check, a Python expression over the decoded line `o` (a dict); prints
 * "ok N" for N good lines or the first bad one. */
static char *json_lines(const char *env, const char *args, const char *check, int *rc)
{
	return run(
		rc,
		"%s %s %s 2>&1 >/dev/null | python3 -c '\n"
		"import json, re, sys\n"
		"n = 0\n"
		"for line in sys.stdin:\n"
		"    o = json.loads(line)\n"
		"    assert list(o) == [\"level\", \"ts\", \"logger\", \"msg\"], line\n"
		"    assert o[\"level\"] in (\"error\", \"warn\", \"info\", \"debug\") and o[\"logger\"] == \"pfs\", line\n"
		"    assert %s, line\n"
		"    n += 1\n"
		"print(\"ok\", n)\n"
		"' 2>&1",
		env, pfs, args, check);
}

static int t_setup(void)
{
	const char *p = getenv("PFS");

	snprintf(pfs, sizeof(pfs), "%s", p && *p ? p : "build/pfs");
	CHECK(!access(pfs, X_OK), "no pfs at %s", pfs);
	CHECK(!access("/usr/include/linux", R_OK), "no /usr/include/linux (linux-libc-dev)");
	snprintf(dir, sizeof(dir), "/tmp/pfs-log-%d", getpid());
	CHECK(!mkdir(dir, 0700), "mkdir %s", dir);
	return TAP_PASS;
}

static int encoding(const char *enc, const char *check)
{
	char args[512];
	char *out;
	int rc;

	snprintf(args, sizeof(args),
		 "--log-format json --log-time-encoding %s blob create --source /usr/include/linux "
		 "--dir %s --name l --page 4k --replace",
		 enc, dir);
	out = json_lines("", args, check, &rc);
	CHECK(out && !strncmp(out, "ok ", 3) && atoi(out + 3) >= 2, "%s: %s", enc, out);
	tap_diag("%s: %s", enc, out);
	free(out);
	return TAP_PASS;
}

static int t_epoch(void)
{
	return encoding("epoch", "isinstance(o[\"ts\"], float) and o[\"ts\"] > 1.7e9");
}

static int t_millis(void)
{
	return encoding("millis", "isinstance(o[\"ts\"], float) and o[\"ts\"] > 1.7e12");
}

static int t_nano(void)
{
	return encoding("nano", "isinstance(o[\"ts\"], int) and o[\"ts\"] > 1.7e18");
}

static int t_iso(void)
{
	return encoding(
		"iso8601",
		"re.fullmatch(r\"\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z\", o[\"ts\"])");
}

static int t_rfc3339(void)
{
	return encoding("rfc3339",
			"re.fullmatch(r\"\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ\", o[\"ts\"])");
}

static int t_rfc3339nano(void)
{
	return encoding(
		"rfc3339nano",
		"re.fullmatch(r\"\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{9}Z\", o[\"ts\"])");
}

/* A path with a quote, a backslash, a tab and a byte that is not UTF-8:
 * the error line carries it escaped, U+FFFD for the stray byte. */
static int t_escapes(void)
{
	char *out;
	int rc;

	out = json_lines(
		"PFS_LOG_FORMAT=json",
		"blob create --source \"$(printf '/tmp/no\\042such\\134dir\\t\\377')\" "
		"--name l --page 4k",
		"o[\"level\"] == \"error\" and \"/tmp/no\\\"such\\\\dir\\t\\ufffd\" in o[\"msg\"]",
		&rc);
	CHECK(out && !strcmp(out, "ok 1\n"), "%s", out);
	free(out);
	return TAP_PASS;
}

static int t_env_and_flags(void)
{
	char *out;
	int rc;

	/* the flag wins over the environment */
	out = run(&rc, "PFS_LOG_FORMAT=json %s --log-format text blob info --name none-%d 2>&1",
		  pfs, getpid());
	CHECK(out && strstr(out, "pfs: error: ") && !strstr(out, "\"level\""), "rc %d: %s", rc,
	      out);
	free(out);
	out = run(&rc, "PFS_LOG_FORMAT=xml %s blob info --name x 2>&1", pfs);
	CHECK(rc == 2 && out && strstr(out, "PFS_LOG_FORMAT='xml': want text or json"), "rc %d: %s",
	      rc, out);
	free(out);
	out = run(&rc, "%s --log-time-encoding weeks blob info --name x 2>&1", pfs);
	CHECK(rc == 2 && out && strstr(out, "unknown log time encoding 'weeks'"), "rc %d: %s", rc,
	      out);
	free(out);
	/* PFS_LOG_LEVEL=error hides the info lines of a good run */
	out = run(
		&rc,
		"PFS_LOG_LEVEL=error %s blob create --source /usr/include/linux --dir %s --name l "
		"--page 4k --replace 2>&1 >/dev/null",
		pfs, dir);
	CHECK(rc == 0 && out && !*out, "rc %d: '%s'", rc, out);
	free(out);
	return TAP_PASS;
}

static int t_teardown(void)
{
	int rc;

	free(run(&rc, "rm -rf %s", dir));
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "setup", t_setup, .setup = true },
	{ "json, epoch: zap's fields in zap's order, ts float seconds", t_epoch },
	{ "json, millis", t_millis },
	{ "json, nano", t_nano },
	{ "json, iso8601", t_iso },
	{ "json, rfc3339", t_rfc3339 },
	{ "json, rfc3339nano", t_rfc3339nano },
	{ "a message with a quote, a backslash, a tab and a stray byte is escaped", t_escapes },
	{ "PFS_LOG_*: flags win, bad values are usage errors, the level applies", t_env_and_flags },
	{ "teardown", t_teardown, .setup = true },
};

TAP_MAIN(tests)
