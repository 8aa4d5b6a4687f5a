// SPDX-License-Identifier: Apache-2.0
/*
 * Listing a source in an OCI registry (distribution spec v1.1): the
 * manifest, authentication, and where each layer's bytes are. The reads
 * are the other remote sources' (blob_source_get.c): ranged GETs on each
 * reader's connection, resumed retries.
 *
 * 1. GET /v2/REPO/manifests/REF accepting OCI and Docker manifests and
 *    indexes. A 401 names its scheme: Bearer -> a token from the realm
 *    (Basic with the pull secret's credentials when given, anonymous
 *    otherwise), then the manifest again with "Authorization: Bearer";
 *    Basic -> the pull secret's credentials at once. That header goes to
 *    the registry's host only (src_rq), never to storage it redirects to.
 * 2. The manifest's sha256 must be the reference's digest (or, by tag,
 *    the Docker-Content-Digest the registry sent, when it sent one); an
 *    index gives its linux/amd64 manifest (else its only one), whose
 *    sha256 and size must be the entry's.
 * 3. Each layer titled org.opencontainers.image.title is a file of that
 *    name and the layer's size. Its blob URL is probed with a GET of the
 *    first byte, following a redirect (to S3, GCS, a CDN) to where the
 *    bytes are: the readers then GET ranges there directly. The layer's
 *    digest is compared with the sha256 the loader computed after the
 *    read (src_remote_check): digests are immutable, so that pins the
 *    bytes where storage sends no ETag to pin them by.
 *
 * Layers without a title whose media type is an image layer (tar,
 * tar+gzip) are unpacked (blob_source_oci_layer.c): their regular members
 * become files too, in the same name space (a name both titled and in an
 * image layer is refused as listed twice). Other untitled layers (zstd,
 * an artifact's blob) and oras' packed directories are refused, naming
 * the layer and its media type.
 * The listing runs on one thread; the readers share the token it leaves in
 * rm->auth, and the first of them to meet a 401 (a token expired during a
 * long read) fetches a new one for all (oci_reauth, under rm->auth_lock).
 */
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "source/blob_source_int.h"
#include "source/blob_source_remote.h"
#include "pfs/log.h"

#define TOKEN_BODY_MAX (64u << 10)

static int fail(char *why, size_t n, int err, const char *fmt, const char *a, const char *b)
{
	snprintf(why, n, fmt, a, b);
	return -err;
}

/* "https://registry[:port]" as written in requests and messages. */
static const char *origin(const struct src_remote *rm, char *buf, size_t n)
{
	char auth[HTTP_HOST_MAX + 16];

	snprintf(buf, n, "%s://%s", rm->ep.tls ? "https" : "http",
		 http_url_authority(&rm->ep, auth, sizeof(auth)));
	return buf;
}

/* ---- authentication ---- */

/* A token from the realm of @ch as an Authorization line into @auth
 * (sizeof(rm->auth) bytes). */
static int fetch_token(struct src_remote *rm, const struct oci_challenge *ch, char *auth, char *why,
		       size_t n)
{
	/* The realm, service and scope are at most 1023 bytes each (struct
	 * oci_challenge), the latter two percent-encoded at most threefold. */
	char scope[600], url[8192], basic[sizeof(rm->basic) + 32], *body = NULL;
	const char *hdr[1] = { basic };
	struct http_conn c = { .fd = -1 };
	struct http_resp r;
	struct http_url u;
	size_t len, o;
	int err, k;

	snprintf(scope, sizeof(scope), "repository:%s:pull", rm->ref.repo);
	o = (size_t)snprintf(url, sizeof(url), "%s%sservice=", ch->realm,
			     strchr(ch->realm, '?') ? "&" : "?");
	k = sigv4_uri_encode(ch->service, 0, url + o, sizeof(url) - o);
	if (k >= 0) {
		o += (size_t)k;
		o += (size_t)snprintf(url + o, sizeof(url) - o, "&scope=");
		k = sigv4_uri_encode(ch->scope[0] ? ch->scope : scope, 0, url + o, sizeof(url) - o);
	}
	if (k < 0)
		return fail(why, n, E2BIG, "%s%s", "the token request is too long", "");
	err = http_url_parse(url, &u, why, n);
	if (err)
		return err;
	if (!u.tls && rm->basic[0] && !rm->o.oci_plain_http) {
		http_url_free(&u);
		return fail(why, n, EACCES,
			    "the token realm %.200s is plain http: the credentials are not sent "
			    "there%s",
			    ch->realm, "");
	}
	snprintf(basic, sizeof(basic), "Authorization: Basic %s", rm->basic);
	/* Not src_rq: the registry's own Authorization (an expired token)
	 * must not go with it, nor may its 401 ask for a refresh. */
	err = http_connect(&c, &u, rm->tls, rm->o.timeout_ms, why, n);
	if (!err) {
		atomic_fetch_add(&rm->requests, 1);
		err = http_exchange(&c, "GET", u.target, hdr, rm->basic[0] ? 1 : 0, &r, why, n);
	}
	OPENSSL_cleanse(basic, sizeof(basic));
	if (!err && r.status != 200) {
		char what[300];

		snprintf(what, sizeof(what), "a token from %.200s", u.host);
		err = src_status_err(&c, &r, what, why, n);
	} else if (!err) {
		err = http_slurp(&c, &r, TOKEN_BODY_MAX, &body, &len);
		if (err)
			fail(why, n, -err, "reading the token from %.200s failed%s", u.host, "");
	}
	if (!err) {
		o = (size_t)snprintf(auth, sizeof(rm->auth), "Authorization: Bearer ");
		err = oci_token_parse(body, len, auth + o, sizeof(rm->auth) - o);
		if (err)
			fail(why, n, EACCES,
			     "the token server %.200s sent no token (no \"token\" or "
			     "\"access_token\" of printable ASCII)%s",
			     u.host, "");
	}
	if (body)
		OPENSSL_cleanse(body, len);
	free(body);
	http_close(&c);
	http_url_free(&u);
	if (err)
		auth[0] = '\0';
	return err;
}

/* After a 401 of the registry: what its challenge asks for, into rm->auth. */
static int authorize(struct src_remote *rm, struct http_conn *c, struct http_resp *r, char *why,
		     size_t n)
{
	struct oci_challenge ch;
	char o[300];

	http_drain(c, r, 64 << 10);
	if (oci_challenge_parse(r->www_authenticate, &ch))
		return fail(why, n, EACCES,
			    "%s: HTTP 401 with no Bearer or Basic challenge in WWW-Authenticate%s",
			    origin(rm, o, sizeof(o)), "");
	if (ch.bearer) {
		rm->ch = ch; /* for oci_reauth; no reader runs yet */
		return fetch_token(rm, &ch, rm->auth, why, n);
	}
	if (!rm->basic[0])
		return fail(why, n, EACCES,
			    "%s: HTTP 401, it asks for credentials (Basic): give a pull secret "
			    "for it (--source-oci-auth, the PfsBlob's pullSecretRef)%s",
			    origin(rm, o, sizeof(o)), "");
	snprintf(rm->auth, sizeof(rm->auth), "Authorization: Basic %s", rm->basic);
	return 0;
}

int oci_reauth(struct src_remote *rm, unsigned seen, char *why, size_t n)
{
	char *fresh;
	int err = 0;

	fresh = calloc(1, sizeof(rm->auth));
	if (!fresh)
		return fail(why, n, ENOMEM, "no memory%s%s", "", "");
	/* The lock is held across the fetch: the other readers that failed
	 * with the same token wait for this one instead of fetching theirs. */
	pthread_mutex_lock(&rm->auth_lock);
	if (atomic_load(&rm->auth_gen) == seen) {
		err = fetch_token(rm, &rm->ch, fresh, why, n);
		if (!err) {
			memcpy(rm->auth, fresh, sizeof(rm->auth));
			atomic_fetch_add(&rm->auth_gen, 1);
			pfs_warn("source: the registry's token expired; fetched a new one");
		}
	}
	pthread_mutex_unlock(&rm->auth_lock);
	OPENSSL_cleanse(fresh, sizeof(rm->auth));
	free(fresh);
	return err;
}

/* ---- manifests ---- */

/* The manifest @ref (a tag or a digest) into *@body; its digest into @got. */
static int manifest_get(struct src_remote *rm, struct http_conn *c, const char *ref, char **body,
			size_t *len, char *content_type, size_t ctn, char *got, char *why, size_t n)
{
	static const char *const accept[] = { OCI_ACCEPT };
	char target[700], what[800], o[300], *repo = rm->ref.repo;
	unsigned char md[32];
	struct http_resp r;
	int err;

	snprintf(target, sizeof(target), "/v2/%s/manifests/%s", repo, ref);
	snprintf(what, sizeof(what), "the manifest %s/%s%s%s", origin(rm, o, sizeof(o)), repo,
		 oci_digest_valid(ref) ? "@" : ":", ref);
	for (int attempt = 0;; attempt++) {
		err = src_rq(rm, c, &rm->ep, "GET", target, NULL, NULL, accept, 1, &r, why, n);
		if (err)
			return err;
		if (r.status != 401 || attempt || rm->auth[0])
			break;
		err = authorize(rm, c, &r, why, n);
		if (err)
			return err;
	}
	if (r.status != 200)
		return src_status_err(c, &r, what, why, n);
	err = http_slurp(c, &r, OCI_MANIFEST_MAX, body, len);
	if (err) {
		http_close(c);
		return fail(why, n, -err,
			    err == -EFBIG ? "%s: over 4 MiB%s" : "%s: reading it failed%s", what,
			    "");
	}
	snprintf(content_type, ctn, "%s", r.content_type);
	EVP_Digest(*body, *len, md, NULL, EVP_sha256(), NULL);
	strcpy(got, "sha256:");
	for (int k = 0; k < 32; k++)
		snprintf(got + 7 + 2 * k, 3, "%02x", md[k]);
	if (oci_digest_valid(ref) ?
		    strcmp(ref, got) :
		    r.docker_content_digest[0] && strcmp(r.docker_content_digest, got)) {
		snprintf(why, n,
			 "%s: its sha256 is %s, not the digest %.80s %s: refused (the registry "
			 "sent other bytes than the ones named)",
			 what, got, oci_digest_valid(ref) ? ref : r.docker_content_digest,
			 oci_digest_valid(ref) ? "it was asked by" :
						 "its Docker-Content-Digest says");
		free(*body);
		*body = NULL;
		return -EBADMSG;
	}
	return 0;
}

/* The manifest to read, through an index when the reference names one. */
static int resolve(struct src_remote *rm, struct http_conn *c, struct oci_manifest *m, char *why,
		   size_t n)
{
	const char *ref = rm->ref.digest[0] ? rm->ref.digest : rm->ref.tag;
	char ct[128], got[OCI_DIGEST_LEN + 1], *body = NULL;
	struct oci_desc entry;
	size_t len;
	int err, k;

	err = manifest_get(rm, c, ref, &body, &len, ct, sizeof(ct), got, why, n);
	if (!err)
		err = oci_manifest_parse(body, len, ct, m, why, n);
	free(body);
	if (err || !m->index)
		goto out;
	k = oci_index_pick(m, why, n);
	if (k < 0) {
		oci_manifest_free(m);
		return k;
	}
	entry = m->d[k];
	entry.title = NULL;
	oci_manifest_free(m);
	err = manifest_get(rm, c, entry.digest, &body, &len, ct, sizeof(ct), got, why, n);
	if (!err && len != entry.size)
		err = fail(why, n, EBADMSG,
			   "the manifest %s is not the size its index entry says%s", entry.digest,
			   "");
	if (!err)
		err = oci_manifest_parse(body, len, ct, m, why, n);
	free(body);
	if (!err && m->index) {
		oci_manifest_free(m);
		err = fail(why, n, EBADMSG, "the index entry %s is an index itself: not read%s",
			   entry.digest, "");
	}
out:
	if (!err)
		snprintf(rm->manifest_digest, sizeof(rm->manifest_digest), "%s", got);
	return err;
}

/* ---- layers ---- */

static int layer(struct pfs_source *s, struct http_conn *c, const struct oci_desc *d, size_t i,
		 char *why, size_t n)
{
	struct src_remote *rm = s->rem;
	char url[1100], o[300], *final = NULL;
	struct http_resp r;
	struct src_file *f;
	int err;

	if (!d->title && oci_layer_kind(d->media_type) != OCI_LAYER_NONE)
		return oci_image_list(s, c, d, why, n);
	if (!d->title) {
		snprintf(why, n,
			 "layer %zu (%.120s, %s) has no org.opencontainers.image.title "
			 "annotation and is not an image layer read here (tar, tar+gzip): push "
			 "the model's files as titled layers (oras push)",
			 i, d->media_type, d->digest);
		return -ENOTSUP;
	}
	if (d->unpack)
		return fail(why, n, ENOTSUP,
			    "layer '%.200s' is a directory packed by oras (%.100s, "
			    "io.deis.oras.content.unpack): not unpacked; push its files one by one",
			    d->title, d->media_type);
	snprintf(url, sizeof(url), "%s/v2/%s/blobs/%s", origin(rm, o, sizeof(o)), rm->ref.repo,
		 d->digest);
	/* An empty layer has no byte to probe or read. */
	memset(&r, 0, sizeof(r));
	err = d->size ? src_probe(rm, c, url, true, &final, &r, why, n) : 0;
	if (!err)
		err = src_add_file(s, d->title, d->title, d->size, final ? final : url, why, n);
	free(final);
	if (err)
		return err;
	if (r.len != d->size) {
		snprintf(why, n,
			 "layer '%.200s' (%s): the registry serves %llu bytes, the manifest says "
			 "%llu",
			 d->title, d->digest, (unsigned long long)r.len,
			 (unsigned long long)d->size);
		return -EBADMSG;
	}
	f = &s->l.f[s->l.n - 1];
	snprintf(f->etag, sizeof(f->etag), "%s", r.etag);
	snprintf(f->digest, sizeof(f->digest), "%s", d->digest);
	f->whole = strcasecmp(r.accept_ranges, "bytes") != 0;
	return 0;
}

int oci_scan(struct pfs_source *s, char *why, size_t n)
{
	struct src_rconn *c = src_rconn_new();
	struct oci_manifest m = { 0 };
	int err = c ? 0 : fail(why, n, ENOMEM, "no memory%s%s", "", "");

	s->kind = PFS_MANIFEST_DIR;
	if (!err)
		err = resolve(s->rem, &c->c, &m, why, n);
	if (!err && !m.n)
		err = fail(why, n, ENOENT, "the manifest %s has no layer%s",
			   s->rem->manifest_digest, "");
	for (size_t i = 0; !err && i < m.n; i++)
		err = layer(s, &c->c, &m.d[i], i, why, n);
	if (!err)
		err = oci_image_files(s, why, n);
	oci_manifest_free(&m);
	src_rconn_free(c);
	return err;
}
