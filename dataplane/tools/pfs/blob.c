// SPDX-License-Identifier: Apache-2.0
/* `pfs blob create|info|rm`: make, inspect and delete blobs; one JSON result. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "cli_share.h"
#include "pfs/integrity.h"
#include "pfs/log.h"

static const char blob_usage[] =
"usage: pfs blob create [--name NAME [--dir DIR]] [blob options] [--result-file PATH]\n"
"       pfs blob info --name NAME [--dir DIR] [--result-file PATH]\n"
"       pfs blob rm --name NAME [--dir DIR]\n"
"       pfs blob serve --name NAME [--dir DIR] --socket PATH --token-file PATH ...\n"
"       pfs blob ping --socket PATH [--token-file PATH]\n"
"       pfs blob attach --socket PATH --token-file PATH\n"
"\n"
"create  maps, prefaults and fills a blob and prints its page kind, setup\n"
"        timings and fingerprint. With --name the blob is a file that stays\n"
"        (default dir /dev/hugepages for 2m, /dev/hugepages1G for 1g,\n"
"        /dev/shm otherwise) for other processes (`--blob-name` of send/recv).\n"
"info    opens a named blob and prints size, page kind and fingerprint.\n"
"rm      deletes a named blob.\n"
"serve   holds a named blob and hands its fd to consumers (pfs blob serve -h).\n"
"ping    asks a holder whether it serves (readiness probe).\n"
"attach  takes the blob from a holder as a consumer would; prints timings.\n"
"\n" PFS_CLI_BLOB_HELP
"  --name NAME, --dir DIR   the named blob to create/inspect/delete\n"
"  --replace                create: remove an existing blob of that name first\n"
"                           (an init container that runs again after a restart)\n"
"  --result-file PATH       also write the JSON result there\n";

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int pfs_cmd_blob(int argc, char **argv)
{
	static const struct option lo[] = {
		PFS_CLI_BLOB_LONGOPTS,
		{ "name", 1, 0, PFS_OPT_LONG }, { "dir", 1, 0, PFS_OPT_LONG },
		{ "result-file", 1, 0, PFS_OPT_LONG }, { "replace", 0, 0, PFS_OPT_LONG },
		{ "help", 0, 0, 'h' }, { 0 },
	};
	const char *verb = argc > 1 ? argv[1] : "", *result_file = NULL;
	struct pfs_cli_blob cb;
	struct pfs_blob *blob;
	struct pfs_json j;
	char msg[768];
	uint64_t fp;
	double t0, fp_s;
	int c, idx, rc = PFS_EXIT_OK;
	bool replace = false;

	if (!strcmp(verb, "--help") || !strcmp(verb, "-h") || !strcmp(verb, "help")) {
		fputs(blob_usage, stdout);
		return PFS_EXIT_OK;
	}
	/* blob-share verbs (share.c) parse their own options. */
	if (!strcmp(verb, "serve"))
		return pfs_cmd_blob_serve(argc - 1, argv + 1);
	if (!strcmp(verb, "ping"))
		return pfs_cmd_blob_ping(argc - 1, argv + 1);
	if (!strcmp(verb, "attach"))
		return pfs_cmd_blob_attach(argc - 1, argv + 1);
	if (strcmp(verb, "create") && strcmp(verb, "info") && strcmp(verb, "rm")) {
		fprintf(stderr, "pfs blob: unknown or missing verb '%s'\n\n%s", verb, blob_usage);
		return PFS_EXIT_USAGE;
	}
	pfs_cli_blob_init(&cb);
	optind = 0;
	while ((c = getopt_long(argc - 1, argv + 1, "h", lo, &idx)) != -1) {
		const char *n = lo[idx].name;
		int r;

		if (c == 'h') {
			fputs(blob_usage, stdout);
			return PFS_EXIT_OK;
		}
		if (c != PFS_OPT_LONG)
			return PFS_EXIT_USAGE;
		r = pfs_cli_blob_opt(&cb, n, optarg);
		if (r < 0)
			return PFS_EXIT_USAGE;
		if (r)
			continue;
		if (!strcmp(n, "name"))
			cb.opts.name = optarg;
		else if (!strcmp(n, "dir"))
			cb.opts.dir = optarg;
		else if (!strcmp(n, "result-file"))
			result_file = optarg;
		else if (!strcmp(n, "replace"))
			replace = true;
	}
	if (optind + 1 < argc) {
		fprintf(stderr, "pfs blob %s: unexpected argument '%s'\n", verb, argv[optind + 1]);
		return PFS_EXIT_USAGE;
	}
	if (strcmp(verb, "create") && !cb.opts.name) {
		fprintf(stderr, "pfs blob %s: --name is required\n", verb);
		return PFS_EXIT_USAGE;
	}
	if (pfs_cli_check_args)
		return PFS_EXIT_OK;
	if (!strcmp(verb, "rm")) {
		int err = pfs_blob_remove(cb.opts.dir, cb.opts.name);

		if (err) {
			pfs_err("blob rm %s: %s", cb.opts.name, strerror(-err));
			return PFS_EXIT_ERROR;
		}
		return PFS_EXIT_OK;
	}
	if (!strcmp(verb, "info")) {
		cb.open_name = cb.opts.name;
		cb.open_dir = cb.opts.dir;
	}
	if (replace && cb.opts.name) {
		int err = pfs_blob_remove(cb.opts.dir, cb.opts.name);

		if (!err)
			pfs_warn("blob create: removed the existing blob '%s' (--replace)",
				 cb.opts.name);
		else if (err != -ENOENT)
			pfs_warn("blob create: --replace: %s", strerror(-err));
	}
	blob = pfs_cli_blob_get(&cb, msg, sizeof(msg));
	pfs_json_begin(&j);
	if (!blob) {
		pfs_json_bool(&j, "ok", false);
		pfs_json_str(&j, "cmd", !strcmp(verb, "info") ? "blob-info" : "blob-create", 16);
		pfs_json_str(&j, "error", msg, 1000);
		pfs_result_emit(pfs_json_end(&j), result_file);
		return PFS_EXIT_ERROR;
	}
	t0 = now_s();
	fp = pfs_blob__fingerprint(blob);
	fp_s = now_s() - t0;
	pfs_json_bool(&j, "ok", true);
	pfs_json_str(&j, "cmd", !strcmp(verb, "info") ? "blob-info" : "blob-create", 16);
	pfs_json_str(&j, "crc32c_impl", pfs_crc32c_impl(), 32);
	pfs_cli_blob_json(&j, blob, fp);
	pfs_json_num(&j, "fingerprint_s", fp_s, 4);
	pfs_json_str(&j, "error", NULL, 0);
	if (pfs_result_emit(pfs_json_end(&j), result_file)) {
		pfs_err("cannot write the result to %s: %s", result_file, strerror(errno));
		rc = PFS_EXIT_ERROR;
	}
	pfs_blob__close(blob);
	return rc;
}
