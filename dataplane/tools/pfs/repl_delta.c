// SPDX-License-Identifier: Apache-2.0
/*
 * Delta replication in the CLI (blob_repl.h): the base a holder serves
 * delta grams against and a relay rebuilds its blob over, from a file
 * (--delta-base) or from the base blob's holder on this node
 * (--delta-base-socket, the operator's way: the node's copy of the
 * PfsBlob named in spec.base). A base that cannot be had is reported, not
 * fatal: the node then serves and fetches the blob whole, which is still
 * right, only bigger on the wire.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "acquire.h"
#include "delta_json.h"
#include "repl.h"
#include "pfs/log.h"

#define AT(f) PFS_OPT_AT(struct pfs_cli_repl_delta, f)
const struct pfs_opt pfs_cli_repl_delta_opts[] = {
	PFS_OPT_HEADING("\nDelta replication (an older version of the blob is on this node):"),
	{ "delta-base", PFS_OPT_STR, AT(file), "FILE",
	  "the older version, from a file: serve delta grams against it to relays that\n"
	  "hold it too; a relay (--fetch-from) asks for delta grams and rebuilds over it",
	  .flags = PFS_OPT_NONZERO },
	{ "delta-base-socket", PFS_OPT_STR, AT(socket), "PATH",
	  "the older version, the blob of this holder (`pfs blob serve`)",
	  .flags = PFS_OPT_NONZERO },
	{ "delta-base-token-file", PFS_OPT_STR, AT(token_file), "PATH",
	  "the token of --delta-base-socket", .flags = PFS_OPT_NONZERO },
	{ "delta-zstd-level", PFS_OPT_U64, AT(level), "N",
	  "zstd level of the delta grams served (1..19, default 3)", .min = 1, .max = 19 },
	{ 0 },
};
#undef AT

bool pfs_cli_repl_delta_set(const struct pfs_cli_repl_delta *d)
{
	return d->file || d->socket || d->token_file || d->level;
}

int pfs_cli_repl_delta_check(const struct pfs_cmdline *c, const struct pfs_cli_repl_delta *d,
			     bool serving, bool fetching, int xport)
{
	if (!pfs_cli_repl_delta_set(d))
		return 0;
	if (!serving && !fetching)
		return pfs_opt_fail(c, "the --delta-base options need --replicate-listen or "
				       "--fetch-from");
	if (!!d->file + !!d->socket != 1)
		return pfs_opt_fail(c, "delta replication needs one base: --delta-base FILE or "
				       "--delta-base-socket PATH");
	if (!!d->socket != !!d->token_file)
		return pfs_opt_fail(c, "--delta-base-socket and --delta-base-token-file go "
				       "together");
	if (fetching && xport != PFS_CLI_FETCH_TCP)
		return pfs_opt_fail(c, "delta replication fetches over --fetch-transport tcp "
				       "only");
	return 0;
}

/* --delta-base: the file mapped read-only, not empty. 0 or -errno with
 * d->error. */
static int map_base_file(struct pfs_cli_repl_delta *d)
{
	char why[sizeof(d->error) - 16];
	int err = pfs_cli_map_file(d->file, &d->map, why, sizeof(why));

	if (!err && !d->map.size)
		snprintf(why, sizeof(why), "%.200s: empty", d->file), err = -EINVAL;
	if (err) {
		snprintf(d->error, sizeof(d->error), "--delta-base %s", why);
		return err;
	}
	d->p = d->map.p;
	d->size = d->map.size;
	return 0;
}

void pfs_cli_repl_delta_open(struct pfs_cli_repl_delta *d)
{
	const struct pfs_cli_share sh = { .socket = d->socket, .token_file = d->token_file };
	double t0;
	int err = 0;

	if (d->tried || !(d->file || d->socket))
		return;
	d->tried = true;
	if (d->file) {
		err = map_base_file(d);
	} else {
		d->blob = pfs_cli_share_get(&sh, d->error, sizeof(d->error));
		err = d->blob ? 0 : -ENOENT;
		if (d->blob) {
			d->p = pfs_blob__data(d->blob);
			d->size = pfs_blob__size(d->blob);
		}
	}
	if (err) {
		pfs_warn("delta replication: no base (%s): the blob travels whole", d->error);
		return;
	}
	t0 = pfs_cli_now();
	d->fp = pfs_fingerprint_mem(d->p, d->size);
	d->fp_s = pfs_cli_now() - t0;
	pfs_info("delta replication: base of %" PRIu64 " bytes, fingerprint %016" PRIx64
		 " (%.3f s)",
		 d->size, d->fp, d->fp_s);
}

void pfs_cli_repl_delta_close(struct pfs_cli_repl_delta *d)
{
	pfs_cli_unmap(&d->map);
	pfs_blob__close(d->blob);
	d->map = (struct pfs_cli_mapped){ 0 };
	d->blob = NULL;
	d->p = NULL;
}

/* What both members start with: the base, or why there is none. */
static void base_json(struct pfs_json *j, const struct pfs_cli_repl_delta *d)
{
	char fp[17];

	snprintf(fp, sizeof(fp), "%016" PRIx64, d->fp);
	pfs_json_obj(j, "delta");
	pfs_json_bool(j, "base", d->p != NULL);
	pfs_json_str(j, "error", d->p ? NULL : d->error, sizeof(d->error));
	pfs_json_u64(j, "base_bytes", d->size);
	pfs_json_str(j, "base_fingerprint", d->p ? fp : NULL, sizeof(fp));
}

void pfs_cli_repl_delta_fetch_json(struct pfs_json *j, const struct pfs_cli_repl_delta *d,
				   const struct pfs_repl_fetch_result *f)
{
	const struct pfs_repl_delta_fetch *x = &f->delta;
	uint64_t whole = f->bytes - x->bytes;

	if (!d->tried)
		return;
	base_json(j, d);
	pfs_json_u64(j, "bytes", x->bytes);
	pfs_json_u64(j, "delta_wire_bytes", x->wire);
	pfs_json_u64(j, "whole_bytes", whole);
	/* What came over the connection for the blob: the delta grams and the
	 * bytes that came whole (after a refusal, or without a base). */
	pfs_json_u64(j, "wire_bytes", x->wire + whole);
	pfs_json_num(j, "ratio", x->wire + whole ? (double)f->bytes / (double)(x->wire + whole) : 0,
		     3);
	pfs_json_u64(j, "refused", x->refused);
	pfs_json_num(j, "apply_s", x->apply_s, 4);
	pfs_cli_delta_regions_json(j, &x->st);
	pfs_json_close(j);
}

void pfs_cli_repl_delta_serve_json(struct pfs_json *j, const struct pfs_cli_repl_delta *d,
				   const struct pfs_repl_server_stats *st)
{
	if (!d->tried)
		return;
	base_json(j, d);
	pfs_json_u64(j, "clients", st->delta_clients);
	pfs_json_u64(j, "refused", st->delta_refused);
	pfs_json_u64(j, "bytes", st->delta_bytes);
	pfs_json_u64(j, "wire_bytes", st->delta_wire);
	pfs_json_num(j, "index_s", st->index_s, 4);
	pfs_json_num(j, "encode_s", st->encode_s, 4);
	pfs_json_close(j);
}
