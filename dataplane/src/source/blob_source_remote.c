// SPDX-License-Identifier: Apache-2.0
/*
 * Listing a remote source (pfs_source__scan_remote, blob_source.h) and
 * checking it after the read.
 *
 * S3: a key names one object (HEAD); a key ending in '/' (or none) is a
 * prefix, listed with ListObjectsV2 page by page, every object beneath it
 * a file named by the rest of its key (directory markers, keys ending in
 * '/', are skipped), then a HEAD of each with x-amz-checksum-mode for the
 * sha256 the store keeps (a composite checksum of a multipart upload,
 * "...-N", is not a sha256 of the bytes and is not compared). Requests
 * are path-style (ENDPOINT/BUCKET/KEY), which S3-compatible stores and
 * AWS both take.
 *
 * HTTP: a HEAD of each URL, following up to five redirects (mirrors of
 * model hubs answer with one to a CDN) and keeping where it landed; its
 * Content-Length is the file's size, and without "Accept-Ranges: bytes"
 * the file is read in one GET. A server that refuses HEAD (405, 501) is
 * asked for its first byte instead.
 *
 * Names become the manifest's: valid UTF-8, relative, no empty, "." or
 * ".." part, no control character; anything else is refused (EILSEQ)
 * naming the key, as the files scanner refuses such names.
 */
#include <errno.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/blob_source_int.h"
#include "source/blob_source_remote.h"
#include "util/utf8.h"

#define LIST_MAX (64u << 20) /* one ListObjectsV2 page, at most */
#define REDIRECTS 5

static int fail(char *why, size_t n, int err, const char *fmt, const char *a)
{
	snprintf(why, n, fmt, a);
	return -err;
}

/* ---- options ---- */

static char *dup(const char *s, bool *oom)
{
	char *d = s ? strdup(s) : NULL;

	if (s && !d)
		*oom = true;
	return d;
}

static const char **dup_list(const char *const *l, size_t k, bool *oom)
{
	const char **d = k ? calloc(k, sizeof(*d)) : NULL;

	if (k && !d)
		*oom = true;
	for (size_t i = 0; d && i < k; i++)
		d[i] = dup(l[i], oom);
	return d;
}

static void free_list(const char *const *l, size_t k)
{
	for (size_t i = 0; l && i < k; i++)
		free((char *)l[i]);
	free((void *)l);
}

void src_remote_free(struct src_remote *rm)
{
	struct pfs_remote *o;

	if (!rm)
		return;
	o = &rm->o;
	free((char *)o->endpoint);
	free((char *)o->bucket);
	free((char *)o->key);
	free((char *)o->region);
	free((char *)o->access_key);
	if (o->secret_key)
		OPENSSL_cleanse((char *)o->secret_key, strlen(o->secret_key));
	free((char *)o->secret_key);
	free((char *)o->session_token);
	free((char *)o->url);
	free((char *)o->oci_ref);
	if (o->oci_auth)
		OPENSSL_cleanse((char *)o->oci_auth, strlen(o->oci_auth));
	free((char *)o->oci_auth);
	free((char *)o->oci_path);
	oci_image_free(rm->img);
	OPENSSL_cleanse(rm->auth, sizeof(rm->auth));
	pthread_mutex_destroy(&rm->auth_lock);
	OPENSSL_cleanse(rm->basic, sizeof(rm->basic));
	free((char *)o->ca_file);
	free_list(o->files, o->nfiles);
	for (size_t i = 0; o->headers && i < o->nheaders; i++)
		OPENSSL_cleanse((char *)o->headers[i], strlen(o->headers[i]));
	free_list(o->headers, o->nheaders);
	http_url_free(&rm->ep);
	http_tls_free(rm->tls);
	free(rm);
}

/* The registry of an OCI reference as rm->ep ("docker.io" is served by
 * registry-1.docker.io), and its credentials from the pull secret. */
static int oci_endpoint(struct src_remote *rm, char *why, size_t n)
{
	const char *host;
	char url[300];
	int err = oci_ref_parse(rm->o.oci_ref, &rm->ref, why, n);

	if (err)
		return err;
	host = strcmp(rm->ref.host, "docker.io") ? rm->ref.host : "registry-1.docker.io";
	snprintf(url, sizeof(url), "%s://%s/", rm->o.oci_plain_http ? "http" : "https", host);
	err = http_url_parse(url, &rm->ep, why, n);
	if (err || !rm->o.oci_auth)
		return err;
	err = oci_auth_lookup(rm->o.oci_auth, strlen(rm->o.oci_auth), rm->ref.host, rm->basic,
			      sizeof(rm->basic), why, n);
	/* A secret without this registry: anonymous, as a kubelet would. */
	return err == -ENOENT ? 0 : err;
}

/* --source-oci-path as a directory: no leading "/" or "./", one trailing
 * '/' ("" stays NULL: the whole image). */
static const char *oci_path(const char *p, bool *oom)
{
	char *d;

	while (p && (p[0] == '/' || (p[0] == '.' && p[1] == '/')))
		p += p[0] == '/' ? 1 : 2;
	if (!p || !*p)
		return NULL;
	if (asprintf(&d, "%s%s", p, p[strlen(p) - 1] == '/' ? "" : "/") < 0) {
		*oom = true;
		return NULL;
	}
	return d;
}

static struct src_remote *remote_new(const struct pfs_remote *r, char *why, size_t n)
{
	struct src_remote *rm = calloc(1, sizeof(*rm));
	bool oom = !rm, https;
	struct pfs_remote *o;

	if (oom)
		goto out_oom;
	pthread_mutex_init(&rm->auth_lock, NULL);
	o = &rm->o;
	*o = (struct pfs_remote){ .kind = r->kind,
				  .nfiles = r->nfiles,
				  .nheaders = r->nheaders,
				  .timeout_ms =
					  r->timeout_ms > 0 ? r->timeout_ms : PFS_REMOTE_TIMEOUT_MS,
				  .retries = r->retries > 0 ? r->retries : PFS_REMOTE_RETRIES };
	o->endpoint = dup(r->endpoint, &oom);
	o->bucket = dup(r->bucket, &oom);
	o->key = dup(r->key, &oom);
	o->region = dup(r->region ? r->region : "us-east-1", &oom);
	o->access_key = dup(r->access_key, &oom);
	o->secret_key = dup(r->secret_key, &oom);
	o->session_token = dup(r->session_token, &oom);
	o->url = dup(r->url, &oom);
	o->oci_ref = dup(r->oci_ref, &oom);
	o->oci_auth = dup(r->oci_auth, &oom);
	o->oci_plain_http = r->oci_plain_http;
	o->oci_path = oci_path(r->oci_path, &oom);
	o->ca_file = dup(r->ca_file, &oom);
	o->files = dup_list(r->files, r->nfiles, &oom);
	o->headers = dup_list(r->headers, r->nheaders, &oom);
	if (oom)
		goto out_oom;
	if (r->kind == PFS_REMOTE_S3) {
		if (!r->endpoint || !r->bucket || !*r->bucket || !r->access_key != !r->secret_key) {
			fail(why, n, EINVAL, "%s",
			     "an S3 source needs an endpoint, a bucket, and an access key and "
			     "a secret key together (or neither: anonymous)");
			goto out_free;
		}
		if (http_url_parse(r->endpoint, &rm->ep, why, n))
			goto out_free;
		rm->anonymous = !r->access_key;
		rm->key = (struct sigv4_key){ .access_key = o->access_key,
					      .secret_key = o->secret_key,
					      .session_token = o->session_token,
					      .region = o->region,
					      .service = "s3" };
		https = rm->ep.tls;
	} else if (r->kind == PFS_REMOTE_HTTP && r->url && *r->url) {
		/* Its server: the only one the user's headers are sent to. */
		if (http_url_parse(r->url, &rm->ep, why, n))
			goto out_free;
		https = rm->ep.tls;
	} else if (r->kind == PFS_REMOTE_OCI && r->oci_ref) {
		if (oci_endpoint(rm, why, n))
			goto out_free;
		https = rm->ep.tls;
	} else {
		fail(why, n, EINVAL, "%s",
		     "a remote source needs kind S3, HTTP with a URL or OCI with a reference");
		goto out_free;
	}
	/* One TLS context for every reader thread; made up front (a redirect
	 * from http to https needs it too), required only where https is. */
	rm->tls = http_tls_new(o->ca_file, why, n);
	if (!rm->tls && (https || o->ca_file))
		goto out_free;
	return rm;
out_oom:
	fail(why, n, ENOMEM, "%s", "no memory");
out_free:
	src_remote_free(rm);
	return NULL;
}

/* ---- names ---- */

int src_check_name(const char *name, const char *key, char *why, size_t n)
{
	size_t len = strlen(name);
	const char *p = name;

	if (!len || len > 4000 || !utf8_valid(name, len))
		return fail(why, n, EILSEQ,
			    "the key '%.200s' cannot be a file name: empty, too long or not UTF-8",
			    key);
	for (const char *c = name; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return fail(why, n, EILSEQ,
				    "the key '%.200s' has a control character: refused", key);
	while (*p) {
		size_t seg = strcspn(p, "/");

		if (!seg || (seg == 1 && p[0] == '.') || (seg == 2 && !strncmp(p, "..", 2)))
			return fail(why, n, EILSEQ,
				    "the key '%.200s' has an empty, '.' or '..' part: it cannot "
				    "be a file name beneath the blob",
				    key);
		p += seg;
		if (*p == '/' && !*++p)
			return fail(why, n, EILSEQ, "the key '%.200s' ends in '/'", key);
	}
	return 0;
}

int src_add_file(struct pfs_source *s, const char *name, const char *key, uint64_t size,
		 const char *url, char *why, size_t n)
{
	struct stat st = { .st_mode = S_IFREG | 0444, .st_size = (off_t)size };
	struct src_file *f;
	int err = src_check_name(name, key, why, n);

	if (err)
		return err;
	if (src_list_add(&s->l, name, name, &st))
		return fail(why, n, ENOMEM, "%s", "no memory");
	f = &s->l.f[s->l.n - 1];
	f->url = strdup(url);
	return f->url ? 0 : fail(why, n, ENOMEM, "%s", "no memory");
}

/* ---- S3 ---- */

/* XML text with its five entities and numeric references decoded. */
static void xml_unescape(const char *a, size_t len, char *out, size_t n)
{
	static const struct {
		const char *e;
		char c;
	} ent[] = { { "&amp;", '&' },
		    { "&lt;", '<' },
		    { "&gt;", '>' },
		    { "&quot;", '"' },
		    { "&apos;", '\'' } };
	size_t o = 0;

	for (size_t i = 0; i < len && o + 5 < n;) {
		size_t k, el = 0;

		for (k = 0; a[i] == '&' && k < sizeof(ent) / sizeof(ent[0]); k++)
			if (!strncmp(a + i, ent[k].e, strlen(ent[k].e))) {
				el = strlen(ent[k].e);
				break;
			}
		if (el) {
			out[o++] = ent[k].c;
			i += el;
		} else if (a[i] == '&' && a[i + 1] == '#') {
			char *e;
			unsigned long cp = a[i + 2] == 'x' ? strtoul(a + i + 3, &e, 16) :
							     strtoul(a + i + 2, &e, 10);

			if (*e != ';' || !cp || cp > 0x10ffff)
				cp = 0xfffd; /* not a name anyone can have: refused later */
			o += utf8_put(out + o, (uint32_t)cp);
			i = *e == ';' ? (size_t)(e + 1 - a) : i + 2;
		} else {
			out[o++] = a[i++];
		}
	}
	out[o] = '\0';
}

const char *src_xml_field(const char *a, const char *end, const char *tag, char *out, size_t n)
{
	char open[40], close[40];
	const char *p, *q;

	snprintf(open, sizeof(open), "<%s>", tag);
	snprintf(close, sizeof(close), "</%s>", tag);
	p = strstr(a, open);
	if (!p || p >= end)
		return NULL;
	p += strlen(open);
	q = strstr(p, close);
	if (!q || q > end)
		return NULL;
	xml_unescape(p, (size_t)(q - p), out, n);
	return out;
}

static char *s3_target(const struct src_remote *rm, const char *key)
{
	size_t bl = strlen(rm->o.bucket), kl = strlen(key), cap = 3 * (bl + kl) + 3;
	char *t = malloc(cap);

	if (!t)
		return NULL;
	t[0] = '/';
	if (sigv4_uri_encode(rm->o.bucket, 0, t + 1, cap - 1) < 0) {
		free(t);
		return NULL;
	}
	strcat(t, "/");
	if (sigv4_uri_encode(key, 1, t + strlen(t), cap - strlen(t)) < 0) {
		free(t);
		return NULL;
	}
	return t;
}

/* HEAD of @f: its size (checked against @size unless UINT64_MAX), ETag
 * and stored sha256. */
static int s3_head(struct src_remote *rm, struct http_conn *c, struct src_file *f, const char *key,
		   char *why, size_t n)
{
	static const char *const mode[] = { "x-amz-checksum-mode:ENABLED" };
	char what[300];
	struct http_resp r;
	int err;

	snprintf(what, sizeof(what), "HEAD s3://%.100s/%.180s", rm->o.bucket, key);
	err = src_rq(rm, c, &rm->ep, "HEAD", f->url, NULL, NULL, mode, 1, &r, why, n);
	if (err)
		return err;
	if (r.status != 200)
		return src_status_err(c, &r, what, why, n);
	if (!r.has_len)
		return fail(why, n, EPROTO, "%s: no Content-Length", what);
	f->st.st_size = (off_t)r.len;
	snprintf(f->etag, sizeof(f->etag), "%s", r.etag);
	/* "...-N" is a multipart upload's composite checksum: not a sha256 of
	 * the object's bytes. */
	if (strlen(r.checksum_sha256) == 44 && !strchr(r.checksum_sha256, '-'))
		snprintf(f->sum256, sizeof(f->sum256), "%s", r.checksum_sha256);
	return 0;
}

/* One page of ListObjectsV2 beneath @prefix; *@token becomes the next
 * page's continuation token ("" on the last page). */
static int s3_list_page(struct pfs_source *s, struct http_conn *c, const char *prefix, char *token,
			size_t tn, char *why, size_t n)
{
	struct src_remote *rm = s->rem;
	size_t cap = 3 * (strlen(rm->o.bucket) + strlen(prefix) + strlen(token)) + 128, len;
	char *target = malloc(cap), *body = NULL, what[300], key[4096], size[32];
	const char *p;
	struct http_resp r;
	int err = target ? 0 : -ENOMEM, o;

	snprintf(what, sizeof(what), "list s3://%.100s/%.180s", rm->o.bucket, prefix);
	if (err)
		return fail(why, n, ENOMEM, "%s", "no memory");
	o = snprintf(target, cap, "/");
	o += sigv4_uri_encode(rm->o.bucket, 0, target + o, cap - (size_t)o);
	o += snprintf(target + o, cap - (size_t)o, "?list-type=2&prefix=");
	o += sigv4_uri_encode(prefix, 0, target + o, cap - (size_t)o);
	if (*token) {
		o += snprintf(target + o, cap - (size_t)o, "&continuation-token=");
		sigv4_uri_encode(token, 0, target + o, cap - (size_t)o);
	}
	err = src_rq(rm, c, &rm->ep, "GET", target, NULL, NULL, NULL, 0, &r, why, n);
	free(target);
	if (err)
		return err;
	if (r.status != 200)
		return src_status_err(c, &r, what, why, n);
	err = http_slurp(c, &r, LIST_MAX, &body, &len);
	if (err) {
		http_close(c);
		return fail(why, n, -err, "%s: reading the listing failed", what);
	}
	if (!strstr(body, "<ListBucketResult")) {
		free(body);
		return fail(why, n, EPROTO, "%s: the answer is not a ListBucketResult", what);
	}
	for (p = strstr(body, "<Contents>"); p && !err; p = strstr(p + 1, "<Contents>")) {
		const char *end = strstr(p, "</Contents>");
		char etag[136] = "";
		uint64_t sz;
		char *u, *e;

		if (!end || !src_xml_field(p, end, "Key", key, sizeof(key)) ||
		    !src_xml_field(p, end, "Size", size, sizeof(size))) {
			err = fail(why, n, EPROTO, "%s: a <Contents> without Key or Size", what);
			break;
		}
		src_xml_field(p, end, "ETag", etag, sizeof(etag));
		sz = strtoull(size, &e, 10);
		if (*e || strncmp(key, prefix, strlen(prefix))) {
			err = fail(why, n, EPROTO,
				   "a key outside the prefix, or a bad size: '%.200s'", key);
			break;
		}
		if (key[strlen(key) - 1] == '/' && !sz)
			continue; /* a "directory" marker */
		u = s3_target(rm, key);
		err = u ? src_add_file(s, key + strlen(prefix), key, sz, u, why, n) :
			  fail(why, n, ENOMEM, "%s", "no memory");
		free(u);
		if (!err)
			snprintf(s->l.f[s->l.n - 1].etag, sizeof(etag), "%s", etag);
	}
	if (!err && strstr(body, "<IsTruncated>true</IsTruncated>") &&
	    !src_xml_field(body, body + len, "NextContinuationToken", token, tn))
		err = fail(why, n, EPROTO, "%s: truncated without a NextContinuationToken", what);
	else if (!err && !strstr(body, "<IsTruncated>true</IsTruncated>"))
		token[0] = '\0';
	free(body);
	return err;
}

static int s3_scan(struct pfs_source *s, char *why, size_t n)
{
	struct src_remote *rm = s->rem;
	const char *key = rm->o.key ? rm->o.key : "";
	struct src_rconn *c = src_rconn_new();
	char token[1024] = "";
	int err = c ? 0 : fail(why, n, ENOMEM, "%s", "no memory");

	if (!err && *key && key[strlen(key) - 1] != '/') {
		const char *base = strrchr(key, '/');
		char *u = s3_target(rm, key);

		s->kind = PFS_MANIFEST_FILE;
		err = u ? src_add_file(s, base ? base + 1 : key, key, 0, u, why, n) :
			  fail(why, n, ENOMEM, "%s", "no memory");
		free(u);
		if (!err)
			err = s3_head(rm, &c->c, &s->l.f[0], key, why, n);
	} else if (!err) {
		s->kind = PFS_MANIFEST_DIR;
		do
			err = s3_list_page(s, &c->c, key, token, sizeof(token), why, n);
		while (!err && token[0]);
		if (!err && !s->l.n)
			err = fail(why, n, ENOENT, "s3 prefix '%.200s': no object beneath it", key);
		for (size_t i = 0; !err && i < s->l.n; i++) {
			char *k = s->l.f[i].name;
			char full[4200];
			uint64_t listed = (uint64_t)s->l.f[i].st.st_size;

			snprintf(full, sizeof(full), "%s%s", key, k);
			err = s3_head(rm, &c->c, &s->l.f[i], full, why, n);
			if (!err && (uint64_t)s->l.f[i].st.st_size != listed)
				err = fail(why, n, ESTALE,
					   "'%.200s' changed between its listing and its HEAD", k);
		}
	}
	src_rconn_free(c);
	return err;
}

/* ---- HTTP ---- */

/* @loc resolved against @base (absolute, or a path on the same server)
 * into a malloc'd URL. */
static char *resolve(const char *base, const char *loc)
{
	const char *p;
	char *u;

	if (!strncasecmp(loc, "http://", 7) || !strncasecmp(loc, "https://", 8))
		return strdup(loc);
	if (loc[0] != '/' || loc[1] == '/')
		return NULL; /* relative paths and scheme-relative: not followed */
	p = strchr(strstr(base, "://") + 3, '/');
	u = malloc(strlen(base) + strlen(loc) + 1);
	if (u)
		sprintf(u, "%.*s%s", (int)(p ? p - base : (long)strlen(base)), base, loc);
	return u;
}

enum probe { P_HEAD, P_FIRST_BYTE, P_BODY };

/* HEAD, GET of the first byte, or GET (of @range) whose body is left to
 * read, following redirects; *@final the URL that answered (@final may be
 * NULL). */
static int follow(struct src_remote *rm, struct http_conn *c, const char *url, enum probe mode,
		  const char *range, char **final, struct http_resp *r, char *why, size_t n)
{
	bool get = mode != P_HEAD;
	char *cur = strdup(url);
	int err = cur ? 0 : fail(why, n, ENOMEM, "%s", "no memory");

	for (int hop = 0; !err; hop++) {
		struct http_url u;
		char what[1100];
		bool head = !get;

		snprintf(what, sizeof(what), "%s %.1000s", get ? "GET" : "HEAD", cur);
		err = http_url_parse(cur, &u, why, n);
		if (err)
			break;
		if (get)
			err = src_rq(rm, c, &u, "GET", u.target, range, NULL, NULL, 0, r, why, n);
		else
			err = src_rq(rm, c, &u, "HEAD", u.target, NULL, NULL, NULL, 0, r, why, n);
		if (!err && head && (r->status == 405 || r->status == 501)) {
			/* No HEAD here: the first byte tells the size. */
			http_drain(c, r, 0);
			head = false;
			err = src_rq(rm, c, &u, "GET", u.target, "bytes=0-0", NULL, NULL, 0, r, why,
				     n);
		}
		http_url_free(&u);
		if (err)
			break;
		if (r->status >= 300 && r->status < 400 && r->status != 304 && r->location[0]) {
			char *next = hop < REDIRECTS ? resolve(cur, r->location) : NULL;

			http_drain(c, r, 64 << 10);
			if (!next) {
				err = fail(why, n, EPROTO,
					   "%s: too many redirects, or one to a relative place",
					   what);
				break;
			}
			free(cur);
			cur = next;
			continue;
		}
		if (r->status != 200 && r->status != 206) {
			err = src_status_err(c, r, what, why, n);
			break;
		}
		if (mode == P_BODY)
			break; /* the caller reads the body */
		if (!head && r->status == 206 && r->has_range && r->total != UINT64_MAX) {
			r->len = r->total;
			r->has_len = true;
			snprintf(r->accept_ranges, sizeof(r->accept_ranges), "bytes");
		} else if (!head) {
			memset(r->accept_ranges, 0, sizeof(r->accept_ranges));
		}
		if (!head)
			http_close(c); /* a 200 would be the whole file: not read here */
		if (!r->has_len)
			err = fail(why, n, EPROTO, "%s: the server sends no Content-Length", what);
		break;
	}
	if (err || !final)
		free(cur);
	else
		*final = cur;
	return err;
}

int src_probe(struct src_remote *rm, struct http_conn *c, const char *url, bool get, char **final,
	      struct http_resp *r, char *why, size_t n)
{
	return follow(rm, c, url, get ? P_FIRST_BYTE : P_HEAD, "bytes=0-0", final, r, why, n);
}

int src_get(struct src_remote *rm, struct http_conn *c, const char *url, const char *range,
	    struct http_resp *r, char *why, size_t n)
{
	return follow(rm, c, url, P_BODY, range, NULL, r, why, n);
}

static int http_scan(struct pfs_source *s, char *why, size_t n)
{
	struct src_remote *rm = s->rem;
	struct src_rconn *c = src_rconn_new();
	size_t k = rm->o.nfiles ? rm->o.nfiles : 1;
	int err = c ? 0 : fail(why, n, ENOMEM, "%s", "no memory");

	s->kind = rm->o.nfiles ? PFS_MANIFEST_DIR : PFS_MANIFEST_FILE;
	for (size_t i = 0; !err && i < k; i++) {
		const char *name = rm->o.nfiles ? rm->o.files[i] : NULL;
		size_t cap = strlen(rm->o.url) + (name ? 3 * strlen(name) : 0) + 2;
		char *url = malloc(cap), *final = NULL;
		struct http_resp r;

		if (!url) {
			err = fail(why, n, ENOMEM, "%s", "no memory");
			break;
		}
		snprintf(url, cap, "%s%s", rm->o.url,
			 name && rm->o.url[strlen(rm->o.url) - 1] != '/' ? "/" : "");
		if (name)
			sigv4_uri_encode(name, 1, url + strlen(url), cap - strlen(url));
		if (!name) {
			const char *q = rm->o.url + strcspn(rm->o.url, "?#"), *b = q;

			while (b > rm->o.url && b[-1] != '/')
				b--;
			name = strndup(b, (size_t)(q - b));
		}
		err = name ? src_probe(rm, &c->c, url, false, &final, &r, why, n) :
			     fail(why, n, ENOMEM, "%s", "no memory");
		if (!err)
			err = src_add_file(s, name, url, r.len, final, why, n);
		if (!err) {
			struct src_file *f = &s->l.f[s->l.n - 1];

			snprintf(f->etag, sizeof(f->etag), "%s", r.etag);
			f->whole = strcasecmp(r.accept_ranges, "bytes") != 0;
		}
		if (!rm->o.nfiles)
			free((char *)name);
		free(url);
		free(final);
	}
	src_rconn_free(c);
	return err;
}

int src_names_unique(const struct pfs_source *s, char *why, size_t n)
{
	for (size_t i = 1; i < s->l.n; i++)
		if (!strcmp(s->l.f[i].name, s->l.f[i - 1].name))
			return fail(why, n, EINVAL, "'%.200s' is listed twice", s->l.f[i].name);
	return 0;
}

/* ---- the source ---- */

struct pfs_source *pfs_source__scan_remote(const struct pfs_remote *r,
					   const struct pfs_source_opts *opts, char *why, size_t n)
{
	double t0 = src_now();
	struct pfs_source *s;
	char desc[1200];
	int err;

	s = r ? src_new(opts, why, n) : NULL;
	if (!s) {
		if (!r)
			errno = -fail(why, n, EINVAL, "%s", "no remote source");
		return NULL;
	}
	s->rem = remote_new(r, why, n);
	if (!s->rem) {
		err = -EINVAL;
		goto out_free;
	}
	if (r->kind == PFS_REMOTE_S3)
		snprintf(desc, sizeof(desc), "s3://%s/%s", r->bucket, r->key ? r->key : "");
	else
		snprintf(desc, sizeof(desc), "%s", r->kind == PFS_REMOTE_OCI ? r->oci_ref : r->url);
	s->path = strdup(desc);
	err = !s->path			? fail(why, n, ENOMEM, "%s", "no memory") :
	      r->kind == PFS_REMOTE_S3	? s3_scan(s, why, n) :
	      r->kind == PFS_REMOTE_OCI ? oci_scan(s, why, n) :
					  http_scan(s, why, n);
	if (!err)
		err = src_layout(s, why, n);
	if (!err)
		err = src_names_unique(s, why, n);
	if (!err) {
		s->scan_s = src_now() - t0;
		return s;
	}
out_free:
	pfs_source__free(s);
	errno = -err;
	return NULL;
}

int src_remote_check(struct pfs_source *s, char *why, size_t n)
{
	for (size_t i = 0; i < s->l.n; i++) {
		const struct src_file *f = &s->l.f[i];
		unsigned char want[48];

		if (f->digest[0]) {
			char hex[65];

			for (int k = 0; k < 32; k++)
				snprintf(hex + 2 * k, 3, "%02x", f->sha256[k]);
			if (strcmp(hex, f->digest + 7)) {
				snprintf(
					why, n,
					"'%.200s': its sha256 is %s, not the layer's digest %s: the "
					"registry served other bytes than the manifest names",
					f->name, hex, f->digest);
				return -EBADMSG;
			}
			atomic_fetch_add(&s->rem->checksums, 1);
			continue;
		}
		if (!f->sum256[0])
			continue;
		if (EVP_DecodeBlock(want, (const unsigned char *)f->sum256, 44) != 33 ||
		    memcmp(want, f->sha256, 32)) {
			snprintf(
				why, n,
				"'%.200s': its sha256 is not the x-amz-checksum-sha256 %s the store "
				"published: the bytes read are not the bytes stored",
				f->name, f->sum256);
			return -EBADMSG;
		}
		atomic_fetch_add(&s->rem->checksums, 1);
	}
	return 0;
}

void src_remote_stats(const struct pfs_source *s, struct pfs_source_stats *st)
{
	if (!s->rem)
		return;
	st->requests = atomic_load(&s->rem->requests);
	st->retries = atomic_load(&s->rem->retries);
	st->resumed_bytes = atomic_load(&s->rem->resumed);
	st->checksums = atomic_load(&s->rem->checksums);
	snprintf(st->oci_manifest_digest, sizeof(st->oci_manifest_digest), "%s",
		 s->rem->manifest_digest);
}
