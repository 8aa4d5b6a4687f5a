// SPDX-License-Identifier: Apache-2.0
/*
 * Result output: JSON escaping and the 4 KiB bound, the seed-001 labels and
 * CSV layout, size parsing, and the real CLI's result on a failed run with
 * oversized inputs (it must still be one JSON object under 4 KiB).
 */
#include <stdlib.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "opt.h" /* tools/pfs: pfs_parse_size, linked from libpfs-cli.a */
#include "pfs/result.h"
#include "tap.h"

static int t_json_escape(void)
{
	struct pfs_json j;
	const char *out;

	pfs_json_begin(&j);
	pfs_json_str(&j, "s", "a\"b\\c\nd\x01", 100);
	pfs_json_u64(&j, "n", 18446744073709551615ULL);
	pfs_json_num(&j, "f", 1.5, 2);
	pfs_json_str(&j, "null", NULL, 0);
	pfs_json_obj(&j, "o");
	pfs_json_bool(&j, "b", true);
	pfs_json_close(&j);
	out = pfs_json_end(&j);
	CHECK(!strcmp(out, "{\"s\":\"a\\\"b\\\\c\\u000ad\\u0001\",\"n\":18446744073709551615,"
			   "\"f\":1.50,\"null\":null,\"o\":{\"b\":true}}"),
	      "got %s", out);
	return TAP_PASS;
}

static int t_json_bound(void)
{
	char big[2000];
	struct pfs_json j;
	const char *out;

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	pfs_json_begin(&j);
	pfs_json_str(&j, "a", big, 300);
	out = pfs_json_end(&j);
	CHECK(strlen(out) == 300 + 8, "cut to the field limit: %zu", strlen(out));
	pfs_json_begin(&j);
	for (int i = 0; i < 10; i++)
		pfs_json_str(&j, "k", big, 1000);
	out = pfs_json_end(&j);
	CHECK(strlen(out) < PFS_RESULT_MAX && strstr(out, "\"ok\":false"), "overflow: %.80s", out);
	return TAP_PASS;
}

static int t_labels(void)
{
	char b[64];

	CHECK(!strcmp(pfs_label(PFS_MODE_PAYLOAD, "TCP", b, sizeof(b)), "PFS-With-Payload-TCP"),
	      "p");
	CHECK(!strcmp(pfs_label(PFS_MODE_OFFSET, "TCP", b, sizeof(b)),
		      "Native PFS Offset-only Mode - TCP"),
	      "o");
	CHECK(!strcmp(pfs_label(PFS_MODE_ARITH, "TCP", b, sizeof(b)),
		      "Native PFS Arithmetic Mode - TCP"),
	      "a");
	return TAP_PASS;
}

static int t_csv(void)
{
	char path[] = "/tmp/pfs-csv-XXXXXX", buf[1024];
	struct pfs_csv_row r = { "Native PFS Offset-only Mode - TCP",
				 "Transfer|pCPU",
				 1073.74,
				 0.5,
				 2147.5,
				 0.4,
				 0.01,
				 2618.9,
				 "OK",
				 1,
				 "say \"hi\"" };
	int fd = mkstemp(path);
	ssize_t n;

	CHECK(fd >= 0, "mkstemp");
	CHECK(!pfs_csv_append(path, &r) && !pfs_csv_append(path, &r), "append");
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	unlink(path);
	buf[n > 0 ? n : 0] = '\0';
	CHECK(!strncmp(
		      buf,
		      "label,purpose,size_mb,elapsed_s,effective_mb_s,user_s,sys_s,"
		      "mb_per_cpu_s,integrity,pthreads,notes\n\"Native PFS Offset-only Mode - TCP\","
		      "\"Transfer|pCPU\",1073.74,0.5000,2147.5,0.400,0.010,2618.9,\"OK\",1,"
		      "\"say \"\"hi\"\"\"\n",
		      198),
	      "csv: %s", buf);
	CHECK(strstr(buf + 100, "\nlabel") == NULL, "header written twice");
	return TAP_PASS;
}

static int t_sizes(void)
{
	uint64_t v;

	CHECK(!pfs_parse_size("1G", &v) && v == 1ULL << 30, "1G");
	CHECK(!pfs_parse_size("64k", &v) && v == 65536, "64k");
	CHECK(!pfs_parse_size("1GB", &v) && v == 1000000000ULL, "1GB");
	CHECK(!pfs_parse_size("1.5M", &v) && v == 1572864, "1.5M");
	CHECK(!pfs_parse_size("2GiB", &v) && v == 2ULL << 30, "2GiB");
	CHECK(pfs_parse_size("-1", &v) && pfs_parse_size("1Q", &v) && pfs_parse_size("", &v) &&
		      pfs_parse_size("0.5", &v),
	      "junk accepted");
	return TAP_PASS;
}

/* The real binary, failing (nothing listens), with every string maxed out. */
static int t_cli_failure_result(void)
{
	const char *pfs = getenv("PFS") ? getenv("PFS") : "build/pfs";
	char notes[3000], cmd[4096], out[8192], rf[] = "/tmp/pfs-result-XXXXXX";
	FILE *p;
	size_t n;
	int fd = mkstemp(rf), st;

	if (access(pfs, X_OK))
		return tap_skip("%s not built", pfs);
	CHECK(fd >= 0, "mkstemp");
	close(fd);
	memset(notes, 'n', sizeof(notes) - 1);
	notes[sizeof(notes) - 1] = '\0';
	snprintf(cmd, sizeof(cmd),
		 "%s -q send --connect 127.0.0.1:9 --mode offset --size 4M "
		 "--page 1g --connect-timeout 0.2 --result-file %s --notes %s 2>/dev/null",
		 pfs, rf, notes);
	p = popen(cmd, "r");
	CHECK(p, "popen");
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	st = pclose(p);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1, "exit %d", WEXITSTATUS(st));
	CHECK(n > 1 && n <= PFS_RESULT_MAX && out[0] == '{' && out[n - 2] == '}' &&
		      strchr(out, '\n') == out + n - 1,
	      "stdout is not one JSON line: %zu bytes", n);
	CHECK(strstr(out, "\"ok\":false") && strstr(out, "Connection refused") &&
		      strstr(out, "\"integrity\":\"NA\""),
	      "content: %.200s", out);
	fd = open(rf, O_RDONLY);
	n = read(fd, cmd, sizeof(cmd));
	close(fd);
	unlink(rf);
	CHECK(n + 1 == strlen(out) && !memcmp(cmd, out, n), "result file differs");
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "json escaping and types", t_json_escape },
	{ "json fields cut to limits, overflow -> short error object", t_json_bound },
	{ "seed-001 labels", t_labels },
	{ "csv header once, fields quoted", t_csv },
	{ "size parsing", t_sizes },
	{ "pfs send failure: one JSON object <= 4 KiB, also in --result-file",
	  t_cli_failure_result },
};

TAP_MAIN(tests)
