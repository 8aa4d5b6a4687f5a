// SPDX-License-Identifier: Apache-2.0
/*
 * `pfs blob create --source-s3 BUCKET/KEY` and `--source-url URL`: a source
 * in an object store or on a web server (library: pfs_source__scan_remote).
 * This file turns the options into a struct pfs_remote and reads the
 * secrets it needs from files, the way a Kubernetes Secret reaches a
 * container: --source-credentials DIR holds AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY and optionally AWS_SESSION_TOKEN (a Secret's keys
 * mounted as a volume); --source-header-file holds "Name: value" lines
 * sent with every request (a bearer token); --source-oci-auth holds a pull
 * secret's .dockerconfigjson (the library picks the registry's entry). Never from the command line
 * or the environment: both show in /proc and in pod specs. The secrets
 * are wiped and freed once the scan has copied them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "source.h"
#include "pfs/log.h"

#define SECRET_MAX 65536 /* a docker config of several registries fits */

bool pfs_cli_source_remote(const struct pfs_cli_source *s)
{
	return s->s3 || s->url || s->oci;
}

int pfs_cli_source_remote_check(const struct pfs_cmdline *c, const struct pfs_cli_source *s)
{
	static const char *const s3_only[] = { "source-s3-endpoint", "source-s3-region",
					       "source-credentials" };
	static const char *const oci_only[] = { "source-oci-auth", "source-oci-plain-http",
						"source-oci-path" };
	static const char *const remote_only[] = { "source-ca-file", "source-retries",
						   "source-timeout", "source-header-file" };

	if (!!s->s3 + !!s->url + !!s->oci > 1)
		return pfs_opt_fail(c, "--source-s3, --source-url and --source-oci: give one");
	if (pfs_cli_source_remote(s) && pfs_opt_given(c, "source"))
		return pfs_opt_fail(c, "--source reads files; --source-s3, --source-url and "
				       "--source-oci read a store: give one");
	for (size_t i = 0; i < sizeof(oci_only) / sizeof(oci_only[0]); i++)
		if (!s->oci && pfs_opt_given(c, oci_only[i]))
			return pfs_opt_fail(c, "--%s needs --source-oci", oci_only[i]);
	if (s->oci && s->header_file)
		return pfs_opt_fail(c, "--source-header-file is not sent to a registry: its "
				       "credentials come from --source-oci-auth");
	for (size_t i = 0; i < sizeof(s3_only) / sizeof(s3_only[0]); i++)
		if (!s->s3 && pfs_opt_given(c, s3_only[i]))
			return pfs_opt_fail(c, "--%s needs --source-s3", s3_only[i]);
	for (size_t i = 0; i < sizeof(remote_only) / sizeof(remote_only[0]); i++)
		if (!pfs_cli_source_remote(s) && pfs_opt_given(c, remote_only[i]))
			return pfs_opt_fail(c,
					    "--%s needs --source-s3, --source-url or --source-oci",
					    remote_only[i]);
	if (s->files && !s->url)
		return pfs_opt_fail(c,
				    "--source-files needs --source-url (the base they are under)");
	if (s->s3 && !s->s3_endpoint)
		return pfs_opt_fail(c,
				    "--source-s3 needs --source-s3-endpoint (https://host[:port])");
	if (s->s3 && (!strchr(s->s3, '/') || s->s3[0] == '/'))
		return pfs_opt_fail(c, "--source-s3 is BUCKET/KEY (one object) or BUCKET/PREFIX/ "
				       "(every object beneath it), e.g. models/llama/");
	if (pfs_opt_given(c, "source-root") && pfs_cli_source_remote(s))
		return pfs_opt_fail(c, "--source-root is for files, not a store");
	return 0;
}

/* The contents of @path (at most SECRET_MAX bytes), trailing whitespace cut;
 * NULL with why. */
static char *read_secret(const char *path, bool required, char *why, size_t n)
{
	char *b = calloc(1, SECRET_MAX + 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t len = fd >= 0 && b ? read(fd, b, SECRET_MAX + 1) : -1;

	if (fd >= 0)
		close(fd);
	if (len < 0 || len > SECRET_MAX) {
		if (required || fd >= 0 || errno != ENOENT)
			snprintf(why, n, "%s: %s", path,
				 len > SECRET_MAX ? "over 64 KiB" : strerror(errno));
		else
			why[0] = '\0';
		free(b);
		return NULL;
	}
	while (len && strchr(" \t\r\n", b[len - 1]))
		b[--len] = '\0';
	return b;
}

static void wipe(char *s)
{
	if (s)
		explicit_bzero(s, strlen(s));
	free(s);
}

/* "Name: value" lines of @path into @r's header list (the text owned by
 * *@text). */
static int read_headers(const char *path, struct pfs_remote *r, char **text, char *why, size_t n)
{
	static const char *lines[32];
	char *save = NULL, *line;

	*text = read_secret(path, true, why, n);
	if (!*text)
		return -EINVAL;
	for (line = strtok_r(*text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *colon = strchr(line, ':');

		line[strcspn(line, "\r")] = '\0';
		if (!*line)
			continue;
		if (!colon || colon == line || strcspn(line, " \t") < (size_t)(colon - line)) {
			/* The line may be a secret: name only its number. */
			snprintf(why, n, "%s: line %zu is not 'Name: value'", path,
				 r->nheaders + 1);
			return -EINVAL;
		}
		if (r->nheaders == sizeof(lines) / sizeof(lines[0])) {
			snprintf(why, n, "%s: more than 32 headers", path);
			return -E2BIG;
		}
		lines[r->nheaders++] = line;
	}
	r->headers = lines;
	return 0;
}

/* --source-files "a,b,c" split in place into @r (NULL-free list). */
static int split_files(char *list, struct pfs_remote *r, char *why, size_t n)
{
	static const char *names[4096];
	char *save = NULL, *t;

	for (t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (r->nfiles == sizeof(names) / sizeof(names[0])) {
			snprintf(why, n, "--source-files: more than 4096 names");
			return -E2BIG;
		}
		names[r->nfiles++] = t;
	}
	r->files = names;
	return r->nfiles ? 0 : -EINVAL;
}

struct pfs_source *pfs_cli_source_remote_scan(struct pfs_cli_source *s,
					      const struct pfs_source_opts *o, char *why, size_t n)
{
	struct pfs_remote r = { .ca_file = s->ca_file,
				.retries = (int)s->retries,
				.timeout_ms = s->timeout_ms };
	char *key_id = NULL, *secret = NULL, *token = NULL, *hdrs = NULL, *files = NULL;
	char *oci_auth = NULL;
	char *bucket = NULL, p[4200];
	struct pfs_source *src = NULL;
	int err = 0;

	if (s->s3) {
		bucket = strdup(s->s3);
		if (!bucket) {
			snprintf(why, n, "no memory");
			errno = ENOMEM;
			return NULL;
		}
		bucket[strcspn(bucket, "/")] = '\0';
		r = (struct pfs_remote){ .kind = PFS_REMOTE_S3,
					 .endpoint = s->s3_endpoint,
					 .bucket = bucket,
					 .key = s->s3 + strlen(bucket) + 1,
					 .region = s->s3_region,
					 .ca_file = s->ca_file,
					 .retries = (int)s->retries,
					 .timeout_ms = s->timeout_ms };
		if (s->credentials) {
			snprintf(p, sizeof(p), "%s/AWS_ACCESS_KEY_ID", s->credentials);
			key_id = read_secret(p, true, why, n);
			snprintf(p, sizeof(p), "%s/AWS_SECRET_ACCESS_KEY", s->credentials);
			secret = key_id ? read_secret(p, true, why, n) : NULL;
			snprintf(p, sizeof(p), "%s/AWS_SESSION_TOKEN", s->credentials);
			token = secret ? read_secret(p, false, why, n) : NULL;
			err = !key_id || !secret || (!token && why[0]) ? -EACCES : 0;
			r.access_key = key_id;
			r.secret_key = secret;
			r.session_token = token;
		}
	} else if (s->oci) {
		r.kind = PFS_REMOTE_OCI;
		r.oci_ref = s->oci;
		r.oci_plain_http = s->oci_plain_http;
		r.oci_path = s->oci_path;
		if (s->oci_auth) {
			oci_auth = read_secret(s->oci_auth, true, why, n);
			err = oci_auth ? 0 : -EACCES;
			r.oci_auth = oci_auth;
		}
	} else {
		r.kind = PFS_REMOTE_HTTP;
		r.url = s->url;
		if (s->files) {
			files = strdup(s->files);
			err = files ? split_files(files, &r, why, n) : -ENOMEM;
			if (err == -EINVAL)
				snprintf(why, n, "--source-files: no name");
		}
	}
	if (!err && s->header_file)
		err = read_headers(s->header_file, &r, &hdrs, why, n);
	if (!err)
		src = pfs_source__scan_remote(&r, o, why, n);
	else
		errno = -err;
	err = errno;
	wipe(key_id);
	wipe(secret);
	wipe(token);
	wipe(hdrs);
	wipe(oci_auth);
	free(files);
	free(bucket);
	errno = err;
	return src;
}
