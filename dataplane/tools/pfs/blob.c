// SPDX-License-Identifier: Apache-2.0
/*
 * `pfs blob create|info|rm`: make, inspect and delete blobs; one JSON
 * result. `serve`, `ping` and `attach` are the blob holder's verbs
 * (share.c). Single-threaded; the blob is closed before returning.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "pfs/integrity.h"
#include "pfs/log.h"

struct blob_args {
	const char *result_file;
	bool replace;
	struct pfs_cli_blob cb;
};

#define AT(f) PFS_OPT_AT(struct blob_args, f)
static const struct pfs_opt blob_opts[] = {
	{ "name", PFS_OPT_STR, AT(cb.opts.name), "NAME",
	  "the named blob to create/inspect/delete (--dir DIR)" },
	{ "dir", PFS_OPT_STR, AT(cb.opts.dir), "DIR",
	  "its directory (create: /dev/hugepages for 2m, /dev/hugepages1G for 1g, "
	  "/dev/shm otherwise; info, rm: search them)" },
	{ "replace", PFS_OPT_FLAG, AT(replace), NULL,
	  "create: remove an existing blob of that name first "
	  "(an init container that runs again after a restart)" },
	{ "result-file", PFS_OPT_STR, AT(result_file), "PATH", "also write the JSON result there" },
	{ 0 },
};
#undef AT

static const char blob_usage[] =
	"usage: pfs blob create [--name NAME [--dir DIR]] [blob options]\n"
	"                       [--result-file PATH]\n"
	"       pfs blob info --name NAME [--dir DIR] [--result-file PATH]\n"
	"       pfs blob rm --name NAME [--dir DIR]\n"
	"       pfs blob serve --name NAME --socket PATH --token-file PATH [options]\n"
	"       pfs blob ping --socket PATH [--token-file PATH]\n"
	"       pfs blob attach --socket PATH --token-file PATH\n"
	"\n"
	"create  maps, prefaults and fills a blob and prints its page kind, setup\n"
	"        timings and fingerprint. With --name the blob is a file that stays\n"
	"        for other processes (`--blob-name` of send/recv).\n"
	"info    opens a named blob and prints size, page kind and fingerprint.\n"
	"rm      deletes a named blob.\n"
	"serve   holds a named blob and hands its fd to consumers (pfs blob serve -h).\n"
	"ping    asks a holder whether it serves (readiness probe).\n"
	"attach  takes the blob from a holder as a consumer would; prints timings.\n"
	"\n";

static int blob_rm(const struct blob_args *a)
{
	int err = pfs_blob_remove(a->cb.opts.dir, a->cb.opts.name);

	if (err) {
		pfs_err("blob rm %s: %s", a->cb.opts.name, strerror(-err));
		return PFS_EXIT_ERROR;
	}
	return PFS_EXIT_OK;
}

/* create or info: the blob, its fingerprint and how long that took. */
static int blob_show(struct blob_args *a, bool info)
{
	const char *cmd = info ? "blob-info" : "blob-create";
	struct pfs_blob *blob;
	struct pfs_json j;
	char msg[768];
	double t0, fp_s;
	uint64_t fp;
	int rc = PFS_EXIT_OK;

	if (info) {
		a->cb.open_name = a->cb.opts.name;
		a->cb.open_dir = a->cb.opts.dir;
	}
	if (a->replace && a->cb.opts.name) {
		int err = pfs_blob_remove(a->cb.opts.dir, a->cb.opts.name);

		if (!err)
			pfs_warn("blob create: removed the existing blob '%s' (--replace)",
				 a->cb.opts.name);
		else if (err != -ENOENT)
			pfs_warn("blob create: --replace: %s", strerror(-err));
	}
	blob = pfs_cli_blob_get(&a->cb, msg, sizeof(msg));
	pfs_json_begin(&j);
	pfs_json_bool(&j, "ok", blob != NULL);
	pfs_json_str(&j, "cmd", cmd, 16);
	if (!blob) {
		pfs_json_str(&j, "error", msg, 1000);
		pfs_result_emit(pfs_json_end(&j), a->result_file);
		return PFS_EXIT_ERROR;
	}
	t0 = pfs_cli_now();
	fp = pfs_blob__fingerprint(blob);
	fp_s = pfs_cli_now() - t0;
	pfs_json_str(&j, "crc32c_impl", pfs_crc32c_impl(), 32);
	pfs_cli_blob_json(&j, blob, fp);
	pfs_json_num(&j, "fingerprint_s", fp_s, 4);
	pfs_json_str(&j, "error", NULL, 0);
	if (pfs_result_emit(pfs_json_end(&j), a->result_file)) {
		pfs_err("cannot write the result to %s: %s", a->result_file, strerror(errno));
		rc = PFS_EXIT_ERROR;
	}
	pfs_blob__close(blob);
	return rc;
}

int pfs_cmd_blob(int argc, char **argv)
{
	const char *verb = argc > 1 ? argv[1] : "";
	struct blob_args a = { 0 };
	struct pfs_cmdline c = {
		.usage = blob_usage,
		.group = { { blob_opts, &a }, { pfs_cli_blob_opts, &a.cb } },
	};
	char cmd[16];
	int err;

	if (!strcmp(verb, "--help") || !strcmp(verb, "-h") || !strcmp(verb, "help")) {
		pfs_opt_usage(&c, stdout);
		return PFS_EXIT_OK;
	}
	if (!strcmp(verb, "serve"))
		return pfs_cmd_blob_serve(argc - 1, argv + 1);
	if (!strcmp(verb, "ping"))
		return pfs_cmd_blob_ping(argc - 1, argv + 1);
	if (!strcmp(verb, "attach"))
		return pfs_cmd_blob_attach(argc - 1, argv + 1);
	if (strcmp(verb, "create") && strcmp(verb, "info") && strcmp(verb, "rm")) {
		fprintf(stderr, "pfs blob: unknown or missing verb '%s'\n\n", verb);
		pfs_opt_usage(&c, stderr);
		return PFS_EXIT_USAGE;
	}
	snprintf(cmd, sizeof(cmd), "blob %s", verb);
	c.cmd = cmd;
	pfs_cli_blob_init(&a.cb);
	err = pfs_opt_parse(&c, argc - 1, argv + 1);
	if (err)
		return pfs_exit_parse(err);
	if (strcmp(verb, "create") && !a.cb.opts.name) {
		pfs_opt_fail(&c, "--name is required");
		return PFS_EXIT_USAGE;
	}
	if (pfs_cli_check_args)
		return PFS_EXIT_OK;
	if (!strcmp(verb, "rm"))
		return blob_rm(&a);
	return blob_show(&a, !strcmp(verb, "info"));
}
