// SPDX-License-Identifier: Apache-2.0
/*
 * `pfs send/recv --mode delta`: the base (a blob as for offset mode, a
 * file with --base, or none with recv --no-base), the sender's source (a
 * file, or a blob from its holder), and the receiver's output (--out FILE,
 * written under a temporary name and renamed only once its SHA-256 equals
 * the sender's, so a failed transfer never replaces a good file). The
 * result is the usual one plus a "delta" member.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acquire.h"
#include "cli.h"
#include "delta_json.h"
#include "xfer_args.h"
#include "pfs/log.h"

#define AT(f) PFS_OPT_AT(struct pfs_cli_delta, f)

const struct pfs_opt pfs_cli_delta_opts[] = {
	PFS_OPT_HEADING("\nDelta mode (--mode delta, tcp):"),
	{ "base", PFS_OPT_STR, AT(base_file), "FILE",
	  "the base both ends hold, from a file (default: the blob options)" },
	{ "src", PFS_OPT_STR, AT(src_file), "FILE", "send: the new version, from a file" },
	{ "src-blob-socket", PFS_OPT_STR, AT(src_share.socket), "PATH",
	  "send: the new version, the blob of this holder" },
	{ "src-blob-token-file", PFS_OPT_STR, AT(src_share.token_file), "FILE",
	  "send: the token of --src-blob-socket" },
	{ "no-base", PFS_OPT_FLAG, AT(no_base), NULL,
	  "recv: this side holds no base; the sender sends a compressed full copy" },
	{ "zstd-level", PFS_OPT_U64, AT(level), "N", "send: zstd level 1..19 (default 3)", .min = 1,
	  .max = 19 },
	{ "delta-threads", PFS_OPT_U64, AT(threads), "N",
	  "send: encoder threads; recv: applier threads (default: the CPUs this process\n"
	  "may use)",
	  .min = 1, .max = 64 },
	{ 0 },
};

#undef AT

int pfs_cli_delta_check(const struct pfs_cmdline *c, const struct xfer_args *a)
{
	static const char *const own[] = {
		"base",	   "src",	 "src-blob-socket", "src-blob-token-file",
		"no-base", "zstd-level", "delta-threads",   NULL
	};
	static const char *const blob[] = { "blob-socket", "blob-name", NULL };
	const struct pfs_cli_delta *d = &a->delta;

	if (a->mode != PFS_MODE_DELTA) {
		for (int i = 0; own[i]; i++)
			if (pfs_opt_given(c, own[i]))
				return pfs_opt_fail(c, "--%s is an option of --mode delta", own[i]);
		return 0;
	}
	if (a->transport && strcmp(a->transport->name, "tcp"))
		return pfs_opt_fail(c, "--mode delta runs over --transport tcp only");
	if (a->into_blob)
		return pfs_opt_fail(c, "--into-blob is for payload mode; delta writes --out");
	if (a->sender && !!d->src_file == !!d->src_share.socket)
		return pfs_opt_fail(c, "pfs send --mode delta needs one source: --src FILE or "
				       "--src-blob-socket PATH");
	if (a->sender && d->no_base)
		return pfs_opt_fail(c, "--no-base is the receiver's: the sender needs its base");
	if (!a->sender && (d->src_file || d->src_share.socket))
		return pfs_opt_fail(c, "--src and --src-blob-socket are the sender's");
	for (int i = 0; blob[i]; i++)
		if ((d->base_file || d->no_base) && pfs_opt_given(c, blob[i]))
			return pfs_opt_fail(c, "--%s names a base: not with %s", blob[i],
					    d->base_file ? "--base" : "--no-base");
	if (d->base_file && d->no_base)
		return pfs_opt_fail(c, "--base and --no-base exclude each other");
	return 0;
}

/* The receiver's --out: a temporary file beside it, mapped when the
 * sender's size is known, renamed over --out once verified. */
struct out_file {
	const char *path;
	char tmp[4096];
	int fd;
	uint8_t *p;
	uint64_t size;
};

static uint8_t *out_map(void *ctx, uint64_t size)
{
	struct out_file *f = ctx;

	if (ftruncate(f->fd, (off_t)size))
		return NULL;
	f->p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
	if (f->p == MAP_FAILED) {
		f->p = NULL;
		return NULL;
	}
	f->size = size;
	return f->p;
}

/* Keep the file when @ok, else remove it; 0 or -errno. */
static int out_finish(struct out_file *f, bool ok)
{
	int err = 0;

	if (f->fd < 0)
		return 0;
	if (f->p)
		munmap(f->p, f->size);
	if (ok && fsync(f->fd))
		err = -errno;
	close(f->fd);
	if (ok && !err && rename(f->tmp, f->path))
		err = -errno;
	if (!ok || err)
		unlink(f->tmp);
	if (err)
		pfs_err("--out %s: %s", f->path, strerror(-err));
	return err;
}

struct delta_inputs {
	struct pfs_cli_mapped base_file, src_file;
	struct pfs_blob *base_blob, *src_blob;
	struct out_file out;
};

/* Base, source and output into @o. 0 or -errno with r->error set. */
static int inputs_open(struct xfer_args *a, struct delta_inputs *in, struct pfs_xfer_delta_opts *o,
		       struct pfs_xfer_result *r)
{
	const struct pfs_cli_delta *d = &a->delta;
	int err = 0;

	if (d->base_file) {
		err = pfs_cli_map_file(d->base_file, &in->base_file, r->error, sizeof(r->error));
		o->base = in->base_file.p;
		o->base_size = in->base_file.size;
	} else if (!d->no_base) {
		in->base_blob = pfs_cli_blob_acquire(&a->cb, &a->share, r->error, sizeof(r->error));
		err = in->base_blob ? 0 : -ENOENT;
		if (in->base_blob) {
			o->base = pfs_blob__data(in->base_blob);
			o->base_size = pfs_blob__size(in->base_blob);
		}
	}
	if (!err && d->src_file) {
		err = pfs_cli_map_file(d->src_file, &in->src_file, r->error, sizeof(r->error));
		o->target = in->src_file.p;
		o->target_size = in->src_file.size;
	} else if (!err && d->src_share.socket) {
		in->src_blob = pfs_cli_share_get(&d->src_share, r->error, sizeof(r->error));
		err = in->src_blob ? 0 : -ENOENT;
		if (in->src_blob) {
			o->target = pfs_blob__data(in->src_blob);
			o->target_size = pfs_blob__size(in->src_blob);
		}
	}
	if (!err && a->out) {
		snprintf(in->out.tmp, sizeof(in->out.tmp), "%s.pfs-partial", a->out);
		in->out.path = a->out;
		in->out.fd = open(in->out.tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (in->out.fd < 0) {
			err = -errno;
			snprintf(r->error, sizeof(r->error), "--out %.500s: %s", in->out.tmp,
				 strerror(errno));
		}
		o->out_map = out_map;
		o->out_ctx = &in->out;
	}
	if (err)
		pfs_err("%s", r->error);
	return err;
}

static void inputs_close(struct delta_inputs *in)
{
	pfs_cli_unmap(&in->base_file);
	pfs_cli_unmap(&in->src_file);
	pfs_blob__close(in->base_blob);
	pfs_blob__close(in->src_blob);
}

/* The report hook: integrity is the rebuilt target's SHA-256 against the
 * sender's (in the "delta" member), not a checksum over grams. */
static void integrity_json(struct pfs_json *j, const void *ctx, const struct pfs_xfer_result *r)
{
	(void)ctx;
	(void)r;
	pfs_json_str(j, "integrity_alg", "sha256", 8);
}

static void member_json(struct pfs_json *j, const void *ctx, const struct pfs_xfer_result *r)
{
	pfs_cli_delta_json(j, ctx, r);
}

int pfs_cli_delta_run(struct xfer_args *a, const char *host, uint16_t port)
{
	struct delta_inputs in = { .out = { .fd = -1 } };
	struct pfs_xfer_result r = { 0 };
	struct pfs_delta_result d = { 0 };
	struct pfs_xfer_opts o = {
		.sz = sizeof(o),
		.host = host,
		.port = port,
		.mode = PFS_MODE_DELTA,
		.io_timeout_ms = (int)(a->timeout * 1000),
		.send = { .connect_timeout_ms = (int)(a->connect_timeout * 1000) },
		.recv = { .out_fd = -1,
			  .accept_timeout_ms = (int)(a->accept_timeout * 1000),
			  .ready_file = a->ready_file,
			  .max_size = a->max_size },
		.delta = { .threads = (int)a->delta.threads,
			   .level = (int)a->delta.level,
			   .res = &d },
		.auth = a->auth,
	};
	int err = inputs_open(a, &in, &o.delta, &r), rc;

	if (!err)
		err = a->sender ? pfs_xfer_send(a->transport, &o, &r) :
				  pfs_xfer_recv(a->transport, &o, &r);
	rc = err && !r.error[0] ? PFS_EXIT_ERROR : pfs_cli_xfer_exit(err, &r);
	if (out_finish(&in.out, !err && rc == PFS_EXIT_OK) && rc == PFS_EXIT_OK)
		rc = PFS_EXIT_ERROR;
	a->report_hook = (struct pfs_cli_xfer_hook){ .integrity = integrity_json,
						     .member = member_json,
						     .ctx = &d };
	pfs_cli_xfer_report(a, NULL, 0, &r, err, rc);
	inputs_close(&in);
	return rc;
}
