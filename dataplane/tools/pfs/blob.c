// SPDX-License-Identifier: Apache-2.0
/*
 * `pfs blob create|info|rm`: make, inspect and delete blobs; one JSON
 * result. `create --source` loads files into the blob (source.c), `create
 * --replicate-listen/--fetch-from` runs a replication session (repl.c).
 * The other verbs have entry points of their own that main.c dispatches
 * to: `manifest` (manifest.c), the holder's `serve`, `ping` and `attach`
 * (share.c); their lines of the usage below are written here.
 * Single-threaded; the blob is closed before returning.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "acquire.h"
#include "bound.h"
#include "cli.h"
#include "commands.h"
#include "holder_metrics.h"
#include "repl.h"
#include "source.h"
#include "pfs/blob_files.h"
#include "pfs/blob_manifest.h"
#include "pfs/integrity.h"
#include "pfs/log.h"

struct blob_args {
	const char *result_file;
	bool replace, size_given;
	struct pfs_cli_blob cb;
	struct pfs_cli_source src;
	struct pfs_cli_repl repl;
	struct pfs_cli_holder_metrics hm; /* --metrics-listen */
};

static const struct pfs_opt_choice layouts[] = {
	{ "flat", PFS_CLI_LAYOUT_FLAT },
	{ "files", PFS_CLI_LAYOUT_FILES },
	{ 0 },
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
	{ "layout", PFS_OPT_CHOICE, AT(cb.layout), "KIND",
	  "create: flat (default: one file) | files (DIR/NAME.d: one file per manifest entry, "
	  "mapped back to back; needs --name and --source or --fetch-from; "
	  "docs/design/blob-layout.md)",
	  .choices = layouts },
	{ "metrics-listen", PFS_OPT_STR, AT(hm.listen), "ADDR:PORT", PFS_CLI_METRICS_HELP },
	{ 0 },
};
#undef AT

static const char blob_usage[] =
	"usage: pfs blob create [--name NAME [--dir DIR]] [blob options]\n"
	"                       [--source PATH [--source-root DIR]] [--result-file PATH]\n"
	"                       [--replicate-listen ADDR:PORT --token-file PATH]\n"
	"       pfs blob create --name NAME --dir DIR --layout files --source PATH [...]\n"
	"       pfs blob create --name NAME --size N --fetch-from IP:PORT[,...] --token-file PATH\n"
	"                       [--replicate-listen ADDR:PORT] [--layout files [--dir DIR]]\n"
	"                       [--result-file PATH]\n"
	"       pfs blob info --name NAME [--dir DIR] [--result-file PATH]\n"
	"       pfs blob rm --name NAME [--dir DIR]\n"
	"       pfs blob manifest --name NAME [--dir DIR] | --blob-socket PATH --blob-token-file PATH\n"
	"       pfs blob serve --name NAME --socket PATH --token-file PATH [options]\n"
	"       pfs blob ping --socket PATH [--token-file PATH]\n"
	"       pfs blob attach --socket PATH --token-file PATH\n"
	"\n"
	"create  maps, prefaults and fills a blob and prints its page kind, setup\n"
	"        timings and fingerprint. With --name the blob is a file that stays\n"
	"        for other processes (`--blob-name` of send/recv). With --source\n"
	"        the blob holds a file or a directory and its manifest. With\n"
	"        --replicate-listen it serves the blob to other nodes while it fills;\n"
	"        with --fetch-from it is filled from such a server (a relay), resuming\n"
	"        on the next upstream when one breaks, and verified against its manifest;\n"
	"        with --layout files it asks the upstream for the file layout first and\n"
	"        creates DIR/NAME.d from it before the first byte.\n"
	"info    opens a named blob and prints size, page kind and fingerprint.\n"
	"rm      deletes a named blob.\n"
	"manifest prints the manifest of a blob made with --source (-h).\n"
	"serve   holds a named blob and hands its fd to consumers (pfs blob serve -h).\n"
	"ping    asks a holder whether it serves (readiness probe).\n"
	"attach  takes the blob from a holder as a consumer would; prints timings.\n"
	"\n";

static int blob_rm(const struct blob_args *a)
{
	const char *fdir = a->cb.opts.dir ? a->cb.opts.dir : "/dev/shm";
	char path[512];
	int err;

	if (pfs_blob_files_exists(fdir, a->cb.opts.name)) {
		err = pfs_blob_files_remove(fdir, a->cb.opts.name); /* its list inside */
	} else {
		err = pfs_blob_find(a->cb.opts.dir, a->cb.opts.name, path, sizeof(path));
		if (!err && unlink(path))
			err = -errno;
		/* A flat blob's chunk list (beside it, or in --chunks-dir) goes
		 * with it, and is not left behind by a blob already gone. */
		if (!err || (err == -ENOENT && (a->cb.opts.dir || a->repl.chunks_dir)))
			pfs_cli_chunks_remove(a->repl.chunks_dir, path);
	}
	if (err) {
		pfs_err("blob rm %s: %s", a->cb.opts.name, strerror(-err));
		return PFS_EXIT_ERROR;
	}
	return PFS_EXIT_OK;
}

/* The error result of create or info. */
static int show_error(struct blob_args *a, const char *cmd, const char *msg)
{
	struct pfs_json j;

	pfs_json_begin(&j);
	pfs_json_bool(&j, "ok", false);
	pfs_json_str(&j, "cmd", cmd, 16);
	pfs_json_str(&j, "error", msg, 1000);
	pfs_result_emit(pfs_json_end(&j), a->result_file);
	/* A relay whose bytes failed the manifest's digests exits 3, like a
	 * transfer's integrity mismatch: the operator tells a damaged copy
	 * (VerificationFailed) from a fetch that could not run. */
	return a->repl.verify_failed ? PFS_EXIT_MISMATCH : PFS_EXIT_ERROR;
}

/* info, relay: what the manifest says, or why there is none. */
static void manifest_json(struct pfs_json *j, const struct pfs_blob *blob)
{
	struct pfs_manifest *m;
	char why[256], sha[65];
	int err = pfs_blob__manifest(blob, &m, why, sizeof(why));

	if (err) {
		pfs_json_str(j, "manifest", NULL, 0);
		pfs_json_str(j, "manifest_error", err == -ENOENT ? NULL : why, sizeof(why));
		return;
	}
	pfs_sha256_hex(m->sha256, sha);
	pfs_json_obj(j, "manifest");
	pfs_json_str(j, "kind", pfs_manifest_kind_str(m->kind), 8);
	pfs_json_u64(j, "files", m->nfiles);
	pfs_json_u64(j, "bytes", m->bytes);
	pfs_json_str(j, "sha256", sha, 64);
	pfs_json_u64(j, "offset", m->offset);
	pfs_json_u64(j, "length", m->length);
	pfs_json_close(j);
	pfs_manifest_free(m);
}

/* A files-layout blob: what page kind its files got, and how that was
 * measured (pfs_blob_files_measure). */
static void files_json(struct pfs_json *j, const struct pfs_blob *blob,
		       const struct pfs_blob_files_pages *pg)
{
	pfs_json_obj(j, "files");
	pfs_json_u64(j, "count", pfs_blob__layout(blob)->n);
	pfs_json_u64(j, "nonempty", pg->files);
	pfs_json_u64(j, "bytes", pg->bytes);
	pfs_json_str(j, "page", pg->huge_files ? "THP" : "4K", 8);
	pfs_json_u64(j, "huge_files", pg->huge_files);
	pfs_json_u64(j, "huge_bytes", pg->huge_bytes);
	pfs_json_str(j, "measured",
		     "ShmemPmdMapped+FilePmdMapped (/proc/self/smaps) of each file of 2 MiB or "
		     "more mapped alone 2 MiB-aligned",
		     160);
	pfs_json_close(j);
}

/* create: the blob before its bytes: flat (pfs_blob__create), or the files
 * of the source's listing. NULL with @why. (A files relay's blob is made
 * inside its fetch: relay_files.) */
static struct pfs_blob *make_blob(struct blob_args *a, char *why, size_t n)
{
	if (a->cb.layout != PFS_CLI_LAYOUT_FILES)
		return pfs_cli_blob_get(&a->cb, why, n);
	return pfs_cli_source_create_files(&a->src, &a->cb, why, n);
}

static bool files_relay(const struct blob_args *a)
{
	return a->repl.fetch_from && a->cb.layout == PFS_CLI_LAYOUT_FILES;
}

/* create --fetch-from --layout files: the blob is made from the layout the
 * upstream sends before the bytes (LAYOUT frames), inside the fetch; then
 * the server lingers as after any fill. NULL with @why; on failure the
 * server's clients got the reason and the files made are removed. */
static struct pfs_blob *relay_files(struct blob_args *a, char *why, size_t n)
{
	const char *dir = pfs_cli_files_dir(&a->cb);
	struct pfs_blob *blob = NULL;
	int err;

	a->repl.ch.want = true;
	err = pfs_cli_repl_fetch_files(&a->repl, &a->cb, &blob, why, n);

	if (!err) {
		pfs_cli_holder_metrics_set(&a->hm, PFS_CLI_PHASE_READY);
		pfs_cli_repl_finish(&a->repl);
		return blob;
	}
	pfs_cli_holder_metrics_set(&a->hm, PFS_CLI_PHASE_FAILED);
	pfs_cli_repl_abort(&a->repl, why);
	if (blob) {
		pfs_blob__close(blob);
		if (!pfs_blob_files_remove(dir, a->cb.opts.name))
			pfs_warn("removed the blob %s/%s%s: its fetch failed", dir, a->cb.opts.name,
				 PFS_BLOB_FILES_SUFFIX);
	}
	return NULL;
}

/* create: what fills the blob beyond pfs_blob__create (files, upstreams)
 * and the replication server on it. 0 or -errno with @why; on failure the
 * server's clients got the reason and the server is stopped. */
static int fill(struct blob_args *a, struct pfs_blob *blob, char *why, size_t n)
{
	int err = 0;

	pfs_cli_metrics_lock();
	a->hm.size = pfs_blob__size(blob);
	pfs_cli_metrics_unlock();
	pfs_cli_holder_metrics_set(&a->hm, PFS_CLI_PHASE_FILLING);
	/* Chunk digests: computed by an origin while it loads, verified by a
	 * relay (repl_chunks.h). */
	a->repl.ch.want = a->src.path || a->repl.fetch_from;
	pfs_cli_chunks_forget(&a->repl, blob);
	if (pfs_cli_repl_set(&a->repl))
		err = pfs_cli_repl_start(&a->repl, blob, why, n);
	if (!err && a->src.path)
		err = pfs_cli_source_load(&a->src, blob, why, n);
	if (!err && a->src.path)
		err = pfs_cli_chunks_origin_done(&a->repl, blob, why, n);
	if (!err && a->repl.fetch_from)
		err = pfs_cli_repl_fetch(&a->repl, blob, why, n);
	if (err) {
		pfs_cli_holder_metrics_set(&a->hm, PFS_CLI_PHASE_FAILED);
		pfs_cli_repl_abort(&a->repl, why);
		if (a->repl.fetch_from && pfs_blob__path(blob) && !unlink(pfs_blob__path(blob)))
			pfs_warn("removed the blob %s: its fetch failed", pfs_blob__path(blob));
		return err;
	}
	pfs_cli_holder_metrics_set(&a->hm, PFS_CLI_PHASE_READY);
	pfs_cli_repl_finish(&a->repl);
	return 0;
}

/* create or info: the blob, its fingerprint and how long that took. */
static int blob_show(struct blob_args *a, bool info)
{
	const char *cmd = info ? "blob-info" : "blob-create";
	struct pfs_blob_files_pages pg = { 0 };
	struct pfs_blob *blob;
	struct pfs_json j;
	char msg[768];
	struct pfs_cgroup_cpu cpu0, cpu1;
	struct pfs_cli_fill_times times;
	double t0, fp_s, fill_t0;
	uint64_t fp;
	int rc = PFS_EXIT_OK;

	if (info) {
		a->cb.open_name = a->cb.opts.name;
		a->cb.open_dir = a->cb.opts.dir;
	}
	if (a->repl.listen) {
		a->src.progress = pfs_cli_repl_hook;
		a->src.progress_ctx = &a->repl;
	}
	if (a->repl.fetch_from)
		a->cb.opts.fill = PFS_FILL_NONE;
	if (a->src.path && pfs_cli_source_scan(&a->src, &a->cb, a->size_given, msg, sizeof(msg)))
		return show_error(a, cmd, msg);
	if (a->src.dry_run)
		return pfs_cli_source_plan(&a->src, &a->cb, a->result_file);
	if (a->replace && a->cb.opts.name) {
		const char *fdir = pfs_cli_files_dir(&a->cb);
		int err = pfs_blob_files_exists(fdir, a->cb.opts.name) ?
				  pfs_blob_files_remove(fdir, a->cb.opts.name) :
				  pfs_blob_remove(a->cb.opts.dir, a->cb.opts.name);

		if (!err)
			pfs_warn("blob create: removed the existing blob '%s' (--replace)",
				 a->cb.opts.name);
		else if (err != -ENOENT)
			pfs_warn("blob create: --replace: %s", strerror(-err));
	}
	pfs_cgroup_cpu_read(&cpu0);
	fill_t0 = pfs_cli_now();
	if (files_relay(a)) {
		pfs_cli_holder_metrics_set(&a->hm, PFS_CLI_PHASE_FILLING);
		blob = relay_files(a, msg, sizeof(msg));
	} else {
		blob = info ? pfs_cli_blob_get(&a->cb, msg, sizeof(msg)) :
			      make_blob(a, msg, sizeof(msg));
	}
	if (!blob) {
		pfs_cli_holder_metrics_set(&a->hm, PFS_CLI_PHASE_FAILED);
		return show_error(a, cmd, msg);
	}
	if (!files_relay(a) && !info && fill(a, blob, msg, sizeof(msg))) {
		pfs_blob__close(blob);
		return show_error(a, cmd, msg);
	}
	pfs_cgroup_cpu_read(&cpu1);
	times = (struct pfs_cli_fill_times){ .relay = a->repl.fetch_from != NULL,
					     .window_s = pfs_cli_now() - fill_t0,
					     .load_s = a->src.st.load_s,
					     .read_s = a->src.st.read_s,
					     .hash_s = a->src.st.sha256_s,
					     .fetch_s = a->repl.fr.seconds,
					     .verify_s = a->repl.verify_s };
	if (pfs_blob__layout(blob))
		pfs_cli_files_measure(blob, &pg);
	t0 = pfs_cli_now();
	fp = pfs_blob__fingerprint(blob);
	fp_s = pfs_cli_now() - t0;
	pfs_json_begin(&j);
	pfs_json_bool(&j, "ok", true);
	pfs_json_str(&j, "cmd", cmd, 16);
	pfs_json_str(&j, "crc32c_impl", pfs_crc32c_impl(), 32);
	pfs_cli_blob_json(&j, blob, fp);
	pfs_json_num(&j, "fingerprint_s", fp_s, 4);
	if (pfs_blob__layout(blob))
		files_json(&j, blob, &pg);
	if (a->src.path)
		pfs_cli_source_json(&j, &a->src);
	/* The operator reads the verified digest from "manifest" on every
	 * holder, the origin's included. */
	if (info || a->repl.fetch_from || a->src.path)
		manifest_json(&j, blob);
	pfs_cli_repl_json(&j, &a->repl);
	if (a->src.path || a->repl.fetch_from) {
		struct pfs_cgroup_cpu used = pfs_cgroup_cpu_since(&cpu0, &cpu1);

		pfs_cli_bound_json(&j, &times, &used);
	}
	pfs_json_str(&j, "error", NULL, 0);
	if (pfs_result_emit(pfs_json_end(&j), a->result_file)) {
		pfs_err("cannot write the result to %s: %s", a->result_file, strerror(errno));
		rc = PFS_EXIT_ERROR;
	}
	pfs_blob__close(blob);
	return rc;
}

/* --layout: files only for a created blob whose layout is known before
 * its bytes (--source, or a relay's --fetch-from), named, off hugetlbfs
 * (checked when the blob is made). 0 or -EINVAL after printing why. */
static int check_layout(const struct pfs_cmdline *c, const struct blob_args *a, const char *verb)
{
	if (a->repl.chunks_dir && !strcmp(verb, "info"))
		return pfs_opt_fail(c, "--chunks-dir is an option of create and rm");
	if (a->repl.chunks_dir && !strcmp(verb, "create") && !pfs_cli_repl_set(&a->repl))
		return pfs_opt_fail(c, "--chunks-dir needs --replicate-listen or --fetch-from (the "
				       "list is kept for the relays a holder serves later)");
	if (a->repl.chunks_dir && a->cb.layout == PFS_CLI_LAYOUT_FILES)
		return pfs_opt_fail(c, "--chunks-dir is for a flat blob: a files-layout blob keeps "
				       "its list in DIR/NAME.d/chunks");
	if (!pfs_opt_given(c, "layout"))
		return 0;
	if (strcmp(verb, "create"))
		return pfs_opt_fail(c, "--layout is an option of create (info and rm find "
				       "DIR/NAME.d themselves)");
	if (a->cb.layout != PFS_CLI_LAYOUT_FILES)
		return 0;
	if (!a->src.path && !a->repl.fetch_from)
		return pfs_opt_fail(c, "--layout files needs --source PATH or --fetch-from: the "
				       "files are the manifest's, known before the bytes; a "
				       "seeded or zero blob is --layout flat");
	if (!a->cb.opts.name)
		return pfs_opt_fail(c, "--layout files needs --name NAME (the blob is "
				       "DIR/NAME.d, DIR from --dir, default /dev/shm)");
	return 0;
}

/* create --metrics-listen: the endpoint, before the blob is mapped so a
 * scrape sees the mapping phase too. */
static void start_metrics(struct blob_args *a, const char *verb)
{
	a->hm.process = "fill";
	a->hm.role = a->src.path ? "origin" : a->repl.fetch_from ? "relay" : "seeded";
	a->hm.repl = &a->repl;
	if (!strcmp(verb, "create"))
		pfs_cli_holder_metrics_start(&a->hm);
}

int pfs_cmd_blob(int argc, char **argv)
{
	const char *verb = argc > 1 ? argv[1] : "";
	struct blob_args a = { 0 };
	struct pfs_cmdline c = {
		.usage = blob_usage,
		.group = { { blob_opts, &a },
			   { pfs_cli_blob_opts, &a.cb },
			   { pfs_cli_source_opts, &a.src },
			   { pfs_cli_repl_opts, &a.repl },
			   { pfs_cli_repl_delta_opts, &a.repl.delta } },
	};
	char cmd[16];
	int err;

	if (!strcmp(verb, "--help") || !strcmp(verb, "-h") || !strcmp(verb, "help")) {
		pfs_opt_usage(&c, stdout);
		return PFS_EXIT_OK;
	}
	if (strcmp(verb, "create") && strcmp(verb, "info") && strcmp(verb, "rm")) {
		fprintf(stderr, "pfs blob: unknown or missing verb '%s'\n\n", verb);
		pfs_opt_usage(&c, stderr);
		return PFS_EXIT_USAGE;
	}
	snprintf(cmd, sizeof(cmd), "blob %s", verb);
	c.cmd = cmd;
	pfs_cli_blob_init(&a.cb);
	pfs_cli_repl_init(&a.repl);
	err = pfs_opt_parse(&c, argc - 1, argv + 1);
	if (err)
		return pfs_exit_parse(err);
	if (strcmp(verb, "create") && !a.cb.opts.name) {
		pfs_opt_fail(&c, "--name is required");
		return PFS_EXIT_USAGE;
	}
	if (strcmp(verb, "create") && a.src.path) {
		pfs_opt_fail(&c, "--source is an option of create");
		return PFS_EXIT_USAGE;
	}
	if (strcmp(verb, "create") && pfs_cli_repl_set(&a.repl)) {
		pfs_opt_fail(&c, "--replicate-listen and --fetch-from are options of create");
		return PFS_EXIT_USAGE;
	}
	if (a.hm.listen && strcmp(verb, "create")) {
		pfs_opt_fail(&c, "--metrics-listen is an option of create");
		return PFS_EXIT_USAGE;
	}
	if (a.hm.listen && pfs_cli_metrics_check(a.hm.listen)) {
		pfs_opt_fail(&c, "invalid --metrics-listen '%s' (ADDR:PORT or :PORT)", a.hm.listen);
		return PFS_EXIT_USAGE;
	}
	if (pfs_cli_source_check(&c, &a.src) || pfs_cli_repl_check(&c, &a.repl, &a.src) ||
	    check_layout(&c, &a, verb))
		return PFS_EXIT_USAGE;
	a.size_given = pfs_opt_given(&c, "size");
	if (pfs_cli_check_args)
		return PFS_EXIT_OK;
	if (!strcmp(verb, "rm"))
		return blob_rm(&a);
	start_metrics(&a, verb);
	err = blob_show(&a, !strcmp(verb, "info"));
	pfs_cli_holder_metrics_stop(&a.hm);
	pfs_cli_source_free(&a.src);
	pfs_cli_repl_free(&a.repl);
	return err;
}
