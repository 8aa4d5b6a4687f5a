// SPDX-License-Identifier: Apache-2.0
/*
 * `pfs blob create --source PATH [--source-root DIR]`: the options, the
 * blob size they imply, the load (library: blob_source.h) and the "source"
 * member of the result. Single-threaded here; the library runs its own
 * reader threads inside pfs_cli_source_load and joins them before it
 * returns. The scanned source is owned by struct pfs_cli_source.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"
#include "source.h"
#include "pfs/log.h"

#define AT(f) PFS_OPT_AT(struct pfs_cli_source, f)
const struct pfs_opt pfs_cli_source_opts[] = {
	PFS_OPT_HEADING(
		"\nSource (create: the blob holds these files; docs/design/blob-layout.md):"),
	{ "source", PFS_OPT_STR, AT(path), "PATH",
	  "load this file or directory into the blob instead of a fill; --size then "
	  "defaults to what it needs",
	  .flags = PFS_OPT_NONZERO },
	{ "source-root", PFS_OPT_STR, AT(root), "DIR",
	  "resolve --source (relative) and every file beneath DIR: a '..' or a symlink "
	  "out of DIR is refused",
	  .flags = PFS_OPT_NONZERO },
	{ "source-threads", PFS_OPT_U64, AT(threads), "N", "reader threads (default 4)", .min = 1,
	  .max = PFS_SOURCE_THREADS_MAX },
	{ "source-chunk", PFS_OPT_SIZE, AT(chunk), "N",
	  "bytes per read, a multiple of 4K (default 8M)", .min = PFS_SOURCE_CHUNK_MIN,
	  .max = PFS_SOURCE_CHUNK_MAX },
	{ "source-no-direct", PFS_OPT_FLAG, AT(no_direct), NULL,
	  "read through the page cache, never O_DIRECT" },
	{ "source-s3", PFS_OPT_STR, AT(s3), "BUCKET/KEY",
	  "load one object, or with a trailing '/' every object beneath that prefix (a "
	  "directory), from an S3-compatible store",
	  .flags = PFS_OPT_NONZERO },
	{ "source-s3-endpoint", PFS_OPT_STR, AT(s3_endpoint), "URL",
	  "the store, https://host[:port] (path-style requests)", .flags = PFS_OPT_NONZERO },
	{ "source-s3-region", PFS_OPT_STR, AT(s3_region), "REGION",
	  "SigV4 region (default us-east-1)", .flags = PFS_OPT_NONZERO },
	{ "source-credentials", PFS_OPT_STR, AT(credentials), "DIR",
	  "files AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY [, AWS_SESSION_TOKEN] (a Secret's "
	  "keys); without: anonymous",
	  .flags = PFS_OPT_NONZERO },
	{ "source-url", PFS_OPT_STR, AT(url), "URL",
	  "load one file over HTTP(S), or with --source-files the files under this base URL",
	  .flags = PFS_OPT_NONZERO },
	{ "source-files", PFS_OPT_STR, AT(files), "A,B,...",
	  "names under --source-url (a directory)", .flags = PFS_OPT_NONZERO },
	{ "source-header-file", PFS_OPT_STR, AT(header_file), "PATH",
	  "'Name: value' lines sent with every request (e.g. Authorization: Bearer ...)",
	  .flags = PFS_OPT_NONZERO },
	{ "source-oci", PFS_OPT_STR, AT(oci), "REF",
	  "load an OCI artifact or image, REGISTRY/REPO[:TAG|@sha256:DIGEST] (an index: its "
	  "linux/amd64 manifest): titled layers as files named by their titles, tar and "
	  "tar+gzip layers unpacked",
	  .flags = PFS_OPT_NONZERO },
	{ "source-oci-auth", PFS_OPT_STR, AT(oci_auth), "FILE",
	  "a docker config, the .dockerconfigjson of a pull secret: credentials for the registry "
	  "(default: anonymous)",
	  .flags = PFS_OPT_NONZERO },
	{ "source-oci-plain-http", PFS_OPT_FLAG, AT(oci_plain_http), NULL,
	  "speak plain http to the registry (a test registry), not https" },
	{ "source-oci-path", PFS_OPT_STR, AT(oci_path), "DIR",
	  "of an image's tar layers, only the files beneath DIR (KServe ModelCar: models/), "
	  "named relative to it (default: every file)",
	  .flags = PFS_OPT_NONZERO },
	{ "source-ca-file", PFS_OPT_STR, AT(ca_file), "PATH",
	  "PEM CA bundle to trust for https (default: the system's)", .flags = PFS_OPT_NONZERO },
	{ "source-retries", PFS_OPT_U64, AT(retries), "N",
	  "retries of a range after a transient failure, each resuming where it stopped "
	  "(default 10)",
	  .min = 1, .max = 1000 },
	{ "source-timeout", PFS_OPT_MSEC, AT(timeout_ms), "SECONDS",
	  "deadline of each connect, send and receive (default 30)" },
	{ "dry-run", PFS_OPT_FLAG, AT(dry_run), NULL,
	  "list the source and print the blob size it needs (\"blob_size\"); map and read "
	  "nothing" },
	{ 0 },
};
#undef AT

int pfs_cli_source_check(const struct pfs_cmdline *c, struct pfs_cli_source *s)
{
	static const char *const need[] = { "source-root", "source-threads", "source-chunk",
					    "source-no-direct", "dry-run" };
	static const char *const excl[] = { "fill", "seed", "blob-name", "blob-dir" };

	if (pfs_cli_source_remote_check(c, s))
		return -EINVAL;
	/* A store is a source too: the path names it (without a URL's query,
	 * which may hold a signature). */
	if (pfs_cli_source_remote(s)) {
		if (s->s3)
			snprintf(s->desc, sizeof(s->desc), "s3://%s", s->s3);
		else if (s->oci)
			snprintf(s->desc, sizeof(s->desc), "%s", s->oci);
		else
			snprintf(s->desc, sizeof(s->desc), "%.*s", (int)strcspn(s->url, "?#"),
				 s->url);
		s->path = s->desc;
	}

	if (!s->path) {
		for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
			if (pfs_opt_given(c, need[i]))
				return pfs_opt_fail(c, "--%s needs --source", need[i]);
		return 0;
	}
#ifdef PFS_NO_SOURCE
	return pfs_opt_fail(c, "this pfs was built without --source (the arm64 cross build has "
			       "no libcrypto for sha256)");
#endif
	for (size_t i = 0; i < sizeof(excl) / sizeof(excl[0]); i++)
		if (pfs_opt_given(c, excl[i]))
			return pfs_opt_fail(c, "--source fills the blob from files: drop --%s",
					    excl[i]);
	if (s->chunk % 4096)
		return pfs_opt_fail(c, "--source-chunk must be a multiple of 4K");
	return 0;
}

/* The loader's watermark hook: the caller's (a replication server's), then
 * the progress file of a files-layout blob, at most about once a second.
 * On the loader's hashing thread; the main thread touches the progress
 * file only before and after the load. */
static void on_progress(void *ctx, uint64_t mark)
{
	struct pfs_cli_source *s = ctx;
	double now;

	if (s->progress)
		s->progress(s->progress_ctx, mark);
	if (!s->files_blob)
		return;
	now = pfs_cli_now();
	if (now - s->progress_at < 1.0)
		return;
	s->progress_at = now;
	pfs_blob_files_progress(s->files_blob, mark, "reading");
}

int pfs_cli_source_scan(struct pfs_cli_source *s, struct pfs_cli_blob *b, bool size_given,
			char *why, size_t n)
{
	struct pfs_source_opts o = { .sz = sizeof(o),
				     .root = s->root,
				     .threads = s->threads,
				     .chunk = s->chunk,
				     .no_direct = s->no_direct,
				     .progress = on_progress,
				     .progress_ctx = s };
	char need[32], have[32];
	uint64_t needed, size;

	s->src = pfs_cli_source_remote(s) ? pfs_cli_source_remote_scan(s, &o, why, n) :
					    pfs_source__scan(s->path, &o, why, n);
	if (!s->src) {
		int e = errno;

		pfs_err("--source: %s", why);
		return -e;
	}
	needed = pfs_source__needed(s->src);
	size = (b->opts.size + PFS_BLOB_ALIGN - 1) & ~(PFS_BLOB_ALIGN - 1);
	if (size_given && size < needed) {
		snprintf(why, n,
			 "source needs %s (%" PRIu64 " bytes) with its manifest, --size is %s",
			 pfs_size_str(needed, need, sizeof(need)), needed,
			 pfs_size_str(b->opts.size, have, sizeof(have)));
		pfs_err("%s", why);
		return -ENOSPC;
	}
	if (!size_given)
		b->opts.size = needed;
	b->opts.fill = PFS_FILL_NONE;
	pfs_info("--source %s: %s, %" PRIu64 " files, %" PRIu64 " bytes; the blob needs %s",
		 s->path, pfs_manifest_kind_str(pfs_source__kind(s->src)),
		 pfs_source__files(s->src), pfs_source__bytes(s->src),
		 pfs_size_str(needed, need, sizeof(need)));
	return 0;
}

static double mbps(uint64_t bytes, double s)
{
	return s > 0 ? (double)bytes / 1e6 / s : 0;
}

struct pfs_blob *pfs_cli_source_create_files(struct pfs_cli_source *s, const struct pfs_cli_blob *b,
					     char *why, size_t n)
{
	uint64_t size = (b->opts.size + PFS_BLOB_ALIGN - 1) & ~(PFS_BLOB_ALIGN - 1);
	struct pfs_blob_layout *l;
	struct pfs_blob *blob;
	int err = pfs_source__layout(s->src, size, &l);

	if (err) {
		snprintf(why, n, "--source %s: its layout for a %" PRIu64 "-byte blob: %s", s->path,
			 size, strerror(-err));
		pfs_err("%s", why);
		errno = -err;
		return NULL;
	}
	blob = pfs_cli_blob_create_files(b, l, why, n);
	free(l);
	return blob;
}

int pfs_cli_source_load(struct pfs_cli_source *s, struct pfs_blob *blob, char *why, size_t n)
{
	const struct pfs_source_stats *st = &s->st;
	bool files = pfs_blob__layout(blob) != NULL;
	int err;

	if (files) {
		pfs_blob_files_progress(blob, 0, "reading");
		s->progress_at = pfs_cli_now();
		s->files_blob = blob;
	}
	s->t0_unix = pfs_cli_wall();
	err = pfs_source__load(s->src, pfs_blob__data(blob), pfs_blob__size(blob), &s->st, why, n);
	s->t1_unix = pfs_cli_wall();
	s->files_blob = NULL;

	if (err) {
		pfs_err("--source %s: %s", s->path, why);
		if (files) {
			pfs_blob_files_progress(blob, 0, "failed");
			if (!pfs_blob_files_remove_path(pfs_blob__path(blob)))
				pfs_warn("removed the blob %s: its load failed",
					 pfs_blob__path(blob));
		} else if (pfs_blob__path(blob) && unlink(pfs_blob__path(blob)) == 0) {
			pfs_warn("removed the blob %s: its load failed", pfs_blob__path(blob));
		}
		return err;
	}
	if (files)
		pfs_blob_files_progress(blob, pfs_blob__size(blob), "verified");
	pfs_info("--source %s: %" PRIu64 " bytes read in %.3f s (%.0f MB/s, O_DIRECT %s), sha256 "
		 "%.0f MB/s",
		 s->path, st->bytes, st->read_s, mbps(st->bytes, st->read_s),
		 st->o_direct ? "yes" : "no", mbps(st->bytes, st->sha256_s));
	return 0;
}

void pfs_cli_source_json(struct pfs_json *j, const struct pfs_cli_source *s)
{
	const struct pfs_source_stats *st = &s->st;

	pfs_json_obj(j, "source");
	pfs_json_str(j, "kind", pfs_manifest_kind_str(st->kind), 8);
	pfs_json_str(j, "path", s->path, 256);
	pfs_json_str(j, "root", s->root, 256);
	pfs_json_u64(j, "files", st->files);
	pfs_json_u64(j, "bytes", st->bytes);
	pfs_json_str(j, "sha256", st->sha256, 64);
	pfs_json_hex(j, "crc32c", st->crc32c, 8);
	pfs_json_u64(j, "manifest_offset", st->manifest_offset);
	pfs_json_u64(j, "manifest_length", st->manifest_length);
	pfs_json_num(j, "scan_seconds", st->scan_s, 4);
	pfs_json_num(j, "read_seconds", st->read_s, 4);
	pfs_json_num(j, "seconds", st->load_s, 4);
	pfs_json_num(j, "read_mbps", mbps(st->bytes, st->read_s), 1);
	pfs_json_num(j, "sha256_mbps", mbps(st->bytes, st->sha256_s), 1);
	pfs_json_u64(j, "threads", (uint64_t)st->threads);
	pfs_json_u64(j, "chunk", st->chunk);
	pfs_json_bool(j, "o_direct", st->o_direct);
	pfs_json_str(j, "o_direct_why", st->o_direct ? NULL : st->o_direct_why, 160);
	pfs_json_num(j, "t0_unix", s->t0_unix, 3);
	pfs_json_num(j, "t1_unix", s->t1_unix, 3);
	if (pfs_cli_source_remote(s)) {
		pfs_json_obj(j, "remote");
		pfs_json_str(j, "kind", s->s3 ? "s3" : s->oci ? "oci" : "http", 8);
		pfs_json_str(j, "oci_manifest", s->oci ? st->oci_manifest_digest : NULL, 72);
		pfs_json_u64(j, "requests", st->requests);
		pfs_json_u64(j, "retries", st->retries);
		pfs_json_u64(j, "resumed_bytes", st->resumed_bytes);
		pfs_json_u64(j, "checksums", st->checksums);
		pfs_json_close(j);
	} else {
		pfs_json_str(j, "remote", NULL, 0);
	}
	pfs_json_close(j);
}

int pfs_cli_source_plan(const struct pfs_cli_source *s, const struct pfs_cli_blob *b,
			const char *result_file)
{
	struct pfs_json j;

	pfs_json_begin(&j);
	pfs_json_bool(&j, "ok", true);
	pfs_json_str(&j, "cmd", "blob-create", 16);
	pfs_json_bool(&j, "dry_run", true);
	pfs_json_obj(&j, "source");
	pfs_json_str(&j, "kind", pfs_manifest_kind_str(pfs_source__kind(s->src)), 8);
	pfs_json_str(&j, "path", s->path, 256);
	pfs_json_str(&j, "root", s->root, 256);
	pfs_json_u64(&j, "files", pfs_source__files(s->src));
	pfs_json_u64(&j, "bytes", pfs_source__bytes(s->src));
	pfs_json_u64(&j, "needed", pfs_source__needed(s->src));
	pfs_json_u64(&j, "blob_size", (b->opts.size + PFS_BLOB_ALIGN - 1) & ~(PFS_BLOB_ALIGN - 1));
	pfs_json_close(&j);
	pfs_json_str(&j, "error", NULL, 0);
	if (pfs_result_emit(pfs_json_end(&j), result_file)) {
		pfs_err("cannot write the result to %s: %s", result_file, strerror(errno));
		return PFS_EXIT_ERROR;
	}
	return PFS_EXIT_OK;
}

void pfs_cli_source_free(struct pfs_cli_source *s)
{
	pfs_source__free(s->src);
	s->src = NULL;
}
