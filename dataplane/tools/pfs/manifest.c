// SPDX-License-Identifier: Apache-2.0
/*
 * `pfs blob manifest`: print the manifest of a blob made with `pfs blob
 * create --source` (a named blob, or a holder's blob through its socket),
 * exactly as the blob holds it, after the decoder checked it. It is the one
 * command whose output is not a result object of at most 4 KiB: it is the
 * manifest itself, one JSON object of any length. Single-threaded.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "acquire.h"
#include "cli.h"
#include "commands.h"
#include "pfs/blob_manifest.h"
#include "pfs/blob_source.h"
#include "pfs/log.h"

struct manifest_args {
	const char *name, *dir;
	bool verify;
	struct pfs_cli_share share;
};

#define AT(f) PFS_OPT_AT(struct manifest_args, f)
static const struct pfs_opt manifest_opts[] = {
	{ "name", PFS_OPT_STR, AT(name), "NAME", "the named blob", .flags = PFS_OPT_NONZERO },
	{ "dir", PFS_OPT_STR, AT(dir), "DIR",
	  "its directory (default: search /dev/hugepages, /dev/hugepages1G, /dev/shm)" },
	{ "verify", PFS_OPT_FLAG, AT(verify), NULL,
	  "also re-hash every file (sha256) against the manifest; exit 3 on a mismatch" },
	{ 0 },
};
#undef AT

static const char manifest_usage[] =
	"usage: pfs blob manifest --name NAME [--dir DIR] [--verify]\n"
	"       pfs blob manifest --blob-socket PATH --blob-token-file PATH [--verify]\n"
	"\n"
	"Prints the manifest of a blob made with `pfs blob create --source`: one JSON\n"
	"object, {\"version\":1,\"kind\":...,\"sha256\":...,\"bytes\":...,\"files\":[...]},\n"
	"the text the blob holds (docs/design/blob-layout.md). Exit 1 when the blob has no\n"
	"manifest (a seeded or zero blob) or a damaged one.\n"
	"\n";

static int show(const struct manifest_args *a, struct pfs_blob *blob)
{
	struct pfs_manifest *m;
	char why[512];
	int err = pfs_blob__manifest(blob, &m, why, sizeof(why));

	if (err) {
		pfs_err("blob manifest: %s", why);
		return PFS_EXIT_ERROR;
	}
	if (a->verify) {
		err = pfs_manifest_verify(m, pfs_blob__data(blob), pfs_blob__size(blob), why,
					  sizeof(why));
		if (err) {
			pfs_err("blob manifest --verify: %s", why);
			pfs_manifest_free(m);
			return err == -EBADMSG ? PFS_EXIT_MISMATCH : PFS_EXIT_ERROR;
		}
		pfs_info("blob manifest --verify: %zu files, %llu bytes: every sha256 matches",
			 m->nfiles, (unsigned long long)m->bytes);
	}
	if (fwrite(m->json, 1, m->length, stdout) != m->length || putchar('\n') == EOF ||
	    fflush(stdout)) {
		pfs_err("blob manifest: cannot write to stdout: %s", strerror(errno));
		err = -EIO;
	}
	pfs_manifest_free(m);
	return err ? PFS_EXIT_ERROR : PFS_EXIT_OK;
}

int pfs_cmd_blob_manifest(int argc, char **argv)
{
	struct manifest_args a = { 0 };
	struct pfs_cmdline c = {
		.cmd = "blob manifest",
		.usage = manifest_usage,
		.group = { { manifest_opts, &a }, { pfs_cli_share_opts, &a.share } },
	};
	struct pfs_blob *blob;
	char why[512];
	int err = pfs_opt_parse(&c, argc, argv), rc;

	if (err)
		return pfs_exit_parse(err);
	if (!a.name == !pfs_cli_share_set(&a.share)) {
		pfs_opt_fail(&c, "give either --name or --blob-socket with --blob-token-file");
		return PFS_EXIT_USAGE;
	}
	if (a.dir && !a.name) {
		pfs_opt_fail(&c, "--dir goes with --name");
		return PFS_EXIT_USAGE;
	}
	if (pfs_cli_check_args)
		return PFS_EXIT_OK;
	if (a.name) {
		blob = pfs_cli_blob_open_named(a.dir, a.name, why, sizeof(why));
		if (!blob)
			pfs_err("blob manifest: %s", why);
	} else {
		blob = pfs_cli_share_get(&a.share, why, sizeof(why));
	}
	if (!blob)
		return PFS_EXIT_ERROR;
	rc = show(&a, blob);
	pfs_blob__close(blob);
	return rc;
}
