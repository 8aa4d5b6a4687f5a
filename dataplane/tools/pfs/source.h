/* SPDX-License-Identifier: Apache-2.0 */
/* Loading a blob from files (source.c): the --source options of `pfs blob
 * create`, the blob size they imply, the load and the "source" member of
 * the result. */
#ifndef PFS_TOOL_SOURCE_H
#define PFS_TOOL_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "acquire.h"
#include "opt.h"
#include "pfs/blob_source.h"

/* `pfs blob create --source`: a blob loaded from files. */
struct pfs_source;
struct pfs_cli_source {
	const char *path; /* --source */
	const char *root; /* --source-root */
	int threads; /* --source-threads, 0: the library's default */
	uint64_t chunk; /* --source-chunk, 0: the library's default */
	bool no_direct; /* --source-no-direct */
	bool dry_run; /* --dry-run: plan only */
	/* A remote source (source_remote.c): --source-s3 BUCKET/KEY[/] or
	 * --source-url URL [--source-files a,b,...], and how to reach it. */
	const char *s3, *s3_endpoint, *s3_region, *credentials;
	const char *url, *files, *header_file, *ca_file;
	/* --source-oci REGISTRY/REPO[:TAG|@DIGEST], --source-oci-auth FILE
	 * (a pull secret's .dockerconfigjson), --source-oci-plain-http,
	 * --source-oci-path DIR (of image layers, the files beneath DIR). */
	const char *oci, *oci_auth, *oci_path;
	bool oci_plain_http;
	uint64_t retries;
	int timeout_ms;
	char desc[1100]; /* the path of a remote source: s3://..., the URL, the reference */
	struct pfs_source *src; /* after pfs_cli_source_scan */
	void (*progress)(void *ctx, uint64_t mark); /* the loader's hook */
	void *progress_ctx;
	double t0_unix, t1_unix; /* wall clock: load start and end */
	/* --layout files: the blob whose progress file the load rewrites
	 * (about once a second, from the loader's hashing thread), and when
	 * it last did (CLOCK_MONOTONIC seconds). */
	struct pfs_blob *files_blob;
	double progress_at;
	struct pfs_source_stats st; /* after pfs_cli_source_load */
};

/* The table over struct pfs_cli_source: --source, --source-root,
 * --source-threads, --source-chunk, --source-no-direct, --dry-run. */
extern const struct pfs_opt pfs_cli_source_opts[];

/* What the source options exclude, checked after parsing (the blob comes
 * from the source: no --blob-name, --fill or --seed; the --source-*
 * options need --source). 0 or -EINVAL after printing why. */
int pfs_cli_source_check(const struct pfs_cmdline *c, struct pfs_cli_source *s);

/* Scan the source and size the blob options for it: --size when given
 * must hold it (else -ENOSPC, both sizes in @why), else the size it needs;
 * the fill becomes none (fresh memory is zero). 0 or -errno, @why set. */
int pfs_cli_source_scan(struct pfs_cli_source *s, struct pfs_cli_blob *b, bool size_given,
			char *why, size_t n);

/* --layout files: create the blob's files from the scanned listing (after
 * pfs_cli_source_scan sized @b), before a byte is read. NULL with the
 * reason logged and in @why. */
struct pfs_blob *pfs_cli_source_create_files(struct pfs_cli_source *s, const struct pfs_cli_blob *b,
					     char *why, size_t n);

/* Read the source into @blob (pfs_source__load), logging the rates. 0 or
 * -errno with @why; a named blob whose load failed is removed. */
int pfs_cli_source_load(struct pfs_cli_source *s, struct pfs_blob *blob, char *why, size_t n);

/* --dry-run: the result of a scanned source, its size and the blob's
 * (after pfs_cli_source_scan sized @b); the exit code. */
int pfs_cli_source_plan(const struct pfs_cli_source *s, const struct pfs_cli_blob *b,
			const char *result_file);

/* The "source" member of the create result. */
void pfs_cli_source_json(struct pfs_json *j, const struct pfs_cli_source *s);

void pfs_cli_source_free(struct pfs_cli_source *s);

/* source_remote.c: whether a remote source is asked for, what its options
 * exclude (0 or -EINVAL after printing why), and its scan: the secrets
 * read from --source-credentials and --source-header-file, then
 * pfs_source__scan_remote. NULL and errno with @why. */
bool pfs_cli_source_remote(const struct pfs_cli_source *s);
int pfs_cli_source_remote_check(const struct pfs_cmdline *c, const struct pfs_cli_source *s);
struct pfs_source *pfs_cli_source_remote_scan(struct pfs_cli_source *s,
					      const struct pfs_source_opts *o, char *why, size_t n);

#endif /* PFS_TOOL_SOURCE_H */
