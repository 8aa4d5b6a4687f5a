// SPDX-License-Identifier: Apache-2.0
/*
 * Reading a remote source's units (blob_source_remote.h): one ranged GET
 * per unit on the reader thread's own kept-alive connection, the body
 * read straight into the blob at the file's offset.
 *
 * Every GET carries If-Match with the ETag the listing saw, and the
 * answer's ETag and Content-Range are checked too (a server that ignores
 * If-Match still cannot slip another version or another range in): an
 * object that changed during the read fails the load (ESTALE) instead of
 * mixing two versions in one blob.
 *
 * Retries resume: after a reset, a timeout, a body cut short, a 5xx or a
 * 429, the unit's next GET asks only for the bytes it still misses, after
 * a backoff of 100 ms doubling to 5 s with jitter, up to opts.retries
 * times per unit. A server restarting mid-read costs the units in flight
 * a few seconds, not the load.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "source/blob_source_int.h"
#include "source/blob_source_remote.h"
#include "remote/json.h"
#include "pfs/log.h"
#include "util/random.h"

struct src_rconn *src_rconn_new(void)
{
	struct src_rconn *c = calloc(1, sizeof(*c));

	if (c)
		c->c.fd = -1;
	return c;
}

void src_rconn_free(struct src_rconn *c)
{
	if (c)
		http_close(&c->c);
	free(c);
}

bool src_transient(int err)
{
	switch (-err) {
	case ECONNRESET:
	case ECONNREFUSED:
	case ECONNABORTED:
	case EPIPE:
	case ETIMEDOUT:
	case EHOSTUNREACH:
	case ENETUNREACH:
	case EAGAIN:
	case EPROTO:
		return true;
	}
	return false;
}

static bool same_server(const struct http_conn *c, const struct http_url *u)
{
	return http_connected(c) && c->tls == u->tls && !strcmp(c->host, u->host) &&
	       !strcmp(c->port, u->port);
}

static bool same_origin(const struct http_url *u, const struct http_url *ep)
{
	return u->tls == ep->tls && !strcmp(u->host, ep->host) && !strcmp(u->port, ep->port);
}

int src_rq(struct src_remote *rm, struct http_conn *c, const struct http_url *u, const char *method,
	   const char *target, const char *range, const char *if_match, const char *const *extra,
	   size_t nextra, struct http_resp *r, char *why, size_t n)
{
	char sig[SIGV4_HDRS][SIGV4_HDR_LEN], rh[64], mh[160], host[HTTP_HOST_MAX + 16];
	char auth[sizeof(rm->auth)];
	const char *h[HTTP_HDR_MAX];
	bool reused = same_server(c, u), refreshed = false, bearer = false;
	unsigned gen = 0;
	size_t nh = 0;
	int err;

again:
	if (!same_server(c, u)) {
		http_close(c);
		err = http_connect(c, u, rm->tls, rm->o.timeout_ms, why, n);
		if (err)
			return err;
	}
	if (range) {
		snprintf(rh, sizeof(rh), "Range: %s", range);
		h[nh++] = rh;
	}
	if (if_match && *if_match) {
		snprintf(mh, sizeof(mh), "If-Match: %s", if_match);
		h[nh++] = mh;
	}
	for (size_t i = 0; i < nextra && nh < HTTP_HDR_MAX - SIGV4_HDRS; i++)
		h[nh++] = extra[i]; /* "name:value": a valid header line as it is */
	if (rm->o.kind == PFS_REMOTE_S3 && !rm->anonymous) {
		int ns = sigv4_sign(&rm->key, method, http_url_authority(u, host, sizeof(host)),
				    target, extra, nextra, time(NULL), sig);

		if (ns < 0) {
			snprintf(why, n, "signing the request for %.200s: %s", target,
				 strerror(-ns));
			return ns;
		}
		for (int i = 0; i < ns; i++)
			h[nh++] = sig[i];
	}
	/* The user's headers (a bearer token) and a registry's Authorization
	 * go only to the source's own server, never to where a redirect led
	 * (a CDN, a bucket), as curl does. */
	for (size_t i = 0; rm->o.kind == PFS_REMOTE_HTTP && i < rm->o.nheaders &&
			   nh < HTTP_HDR_MAX && same_origin(u, &rm->ep);
	     i++)
		h[nh++] = rm->o.headers[i];
	if (rm->o.kind == PFS_REMOTE_OCI && nh < HTTP_HDR_MAX && same_origin(u, &rm->ep)) {
		/* A copy: another reader may be refreshing the token. */
		pthread_mutex_lock(&rm->auth_lock);
		memcpy(auth, rm->auth, sizeof(auth));
		gen = atomic_load(&rm->auth_gen);
		bearer = rm->ch.bearer && auth[0];
		pthread_mutex_unlock(&rm->auth_lock);
		if (auth[0])
			h[nh++] = auth;
	}
	atomic_fetch_add(&rm->requests, 1);
	err = http_exchange(c, method, target, h, nh, r, why, n);
	/* Nothing of a signature or a token outlives the request. */
	explicit_bzero(sig, sizeof(sig));
	explicit_bzero(auth, sizeof(auth));
	if (err)
		http_close(c);
	/* A kept-alive connection the server closed while it idled: once
	 * more on a new one, at once (nothing of the request was served). */
	if (reused && (err == -ECONNRESET || err == -EPIPE)) {
		reused = false;
		nh = 0;
		goto again;
	}
	/* A registry's token that expired (a long read outlives Docker Hub's
	 * 300 s): a new one, once per request; the refresh is shared by the
	 * readers that failed with the same token (oci_reauth). */
	if (!err && r->status == 401 && bearer && !refreshed) {
		http_drain(c, r, 64 << 10);
		err = oci_reauth(rm, gen, why, n);
		if (err)
			return err;
		refreshed = true;
		nh = 0;
		goto again;
	}
	return err;
}

/* A registry's error body, {"errors":[{"code":...,"message":...}]}: the
 * first error's code and message. */
static void registry_error(const char *body, size_t len, char *code, size_t cn, char *msg,
			   size_t mn)
{
	struct json_doc d;
	char why[160];
	int e;

	if (json_parse(&d, body, len, 4096, why, sizeof(why)))
		return;
	e = json_first(&d, json_get(&d, 0, "errors"));
	if (json_str(&d, json_get(&d, e, "code"), code, cn) < 0)
		code[0] = '\0';
	if (json_str(&d, json_get(&d, e, "message"), msg, mn) < 0)
		msg[0] = '\0';
	json_free(&d);
}

int src_status_err(struct http_conn *c, struct http_resp *r, const char *what, char *why, size_t n)
{
	char code[64] = "", msg[200] = "", *body = NULL;
	size_t len;
	int err;

	if (!r->done && !http_slurp(c, r, 64 << 10, &body, &len)) {
		if (body[0] == '{') {
			registry_error(body, len, code, sizeof(code), msg, sizeof(msg));
		} else {
			src_xml_field(body, body + len, "Code", code, sizeof(code));
			src_xml_field(body, body + len, "Message", msg, sizeof(msg));
		}
	}
	free(body);
	if (!r->done || !r->keep_alive)
		http_close(c);
	switch (r->status) {
	case 401:
	case 403:
		err = -EACCES;
		break;
	case 404:
		err = -ENOENT;
		break;
	case 412:
	case 416:
		err = -ESTALE;
		break;
	case 429:
		err = -EAGAIN;
		break;
	default:
		err = r->status >= 500 ? -EAGAIN : -EIO;
	}
	snprintf(why, n, "%s: HTTP %d %s%s%s%s%s%s", what, r->status, http_reason(r->status),
		 code[0] ? ": " : "", code, msg[0] ? " (" : "", msg, msg[0] ? ")" : "");
	if (r->status == 412)
		snprintf(why + strlen(why), n - strlen(why),
			 ": the object changed while it was read");
	else if (r->status == 401 || r->status == 403)
		snprintf(why + strlen(why), n - strlen(why),
			 ": check the credentials and their access to it (and the clock: a "
			 "signature is valid 15 minutes)");
	return err;
}

/* The URL and target of @f's bytes. */
static int file_url(const struct src_remote *rm, const struct src_file *f, struct http_url *u,
		    char *why, size_t n)
{
	if (rm->o.kind == PFS_REMOTE_S3) {
		*u = rm->ep;
		u->target = f->url;
		return 0;
	}
	return http_url_parse(f->url, u, why, n);
}

/* One GET of [@off, @off + @len) of @f; *@got says how much landed, and
 * so does *@landed (when given) as it lands, plus @base. */
static int get_once(struct src_remote *rm, struct src_rconn *rc, struct src_file *f, uint64_t off,
		    uint64_t len, uint8_t *dst, uint64_t *got, _Atomic uint64_t *landed,
		    uint64_t base, char *why, size_t n)
{
	uint64_t size = (uint64_t)f->st.st_size, last = off + len - 1;
	char range[64], what[320];
	struct http_resp r;
	struct http_url u;
	int err;

	*got = 0;
	err = file_url(rm, f, &u, why, n);
	if (err)
		return err;
	snprintf(range, sizeof(range), "bytes=%" PRIu64 "-%" PRIu64, off, last);
	snprintf(what, sizeof(what), "'%.200s' bytes %" PRIu64 "-%" PRIu64, f->name, off, last);
	err = src_rq(rm, &rc->c, &u, "GET", u.target, f->whole ? NULL : range, f->etag, NULL, 0, &r,
		     why, n);
	if (rm->o.kind != PFS_REMOTE_S3)
		http_url_free(&u);
	if (err)
		return err;
	if (r.status != 200 && r.status != 206)
		return src_status_err(&rc->c, &r, what, why, n);
	if (f->etag[0] && r.etag[0] && strcmp(f->etag, r.etag)) {
		http_close(&rc->c);
		snprintf(why, n,
			 "%s: ETag %.60s, the listing saw %.60s: the object changed while "
			 "it was read",
			 what, r.etag, f->etag);
		return -ESTALE;
	}
	if (r.status == 206 ? !r.has_range || r.first != off || r.last != last ||
				      (r.total != size && r.total != UINT64_MAX) :
			      off || len != size || (r.has_len && r.len != size)) {
		http_close(&rc->c);
		snprintf(why, n,
			 "%s: the server answered %d with %s %" PRIu64 "-%" PRIu64 "/%" PRIu64
			 " of a %" PRIu64 "-byte object",
			 what, r.status, r.has_range ? "range" : "no range", r.first, r.last,
			 r.total, size);
		/* Either way not worth a retry: the server does not do ranges
		 * as it said, or it serves other bytes than the listing saw. */
		return r.status == 200 ? -ENOTSUP : -ESTALE;
	}
	while (*got < len) {
		ssize_t k = http_read(&rc->c, &r, dst + *got, len - *got);

		if (k <= 0) {
			http_close(&rc->c);
			snprintf(why, n,
				 "%s: the body ended at %" PRIu64 " of %" PRIu64 " bytes: %s", what,
				 *got, len, k ? strerror((int)-k) : "closed early");
			return k ? (int)k : -ECONNRESET;
		}
		*got += (uint64_t)k;
		/* Release: the bytes before the count, for whoever forwards
		 * them while the rest of the range is on its way. */
		if (landed)
			atomic_store_explicit(landed, base + *got, memory_order_release);
	}
	if (!r.keep_alive || !r.done)
		http_close(&rc->c);
	return 0;
}

void src_backoff(int attempt)
{
	uint64_t ms = 100ULL << (attempt < 6 ? attempt : 6), j = 0;
	struct timespec ts;

	if (ms > 5000)
		ms = 5000;
	/* Jitter: readers that failed together do not come back together. */
	if (!pfs_random_fill((uint8_t *)&j, sizeof(j)))
		ms += j % (ms / 2 + 1);
	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)(ms % 1000) * 1000000;
	nanosleep(&ts, NULL);
}

int src_remote_read(struct pfs_source *s, struct src_file *f, uint64_t off, uint64_t len,
		    uint8_t *dst, struct src_rconn *c, _Atomic uint64_t *landed, char *why,
		    size_t n)
{
	struct src_remote *rm = s->rem;
	uint64_t done = 0;

	if (!len)
		return 0;
	for (int attempt = 0;; attempt++) {
		uint64_t got;
		int err = get_once(rm, c, f, off + done, len - done, dst + done, &got,
				   f->whole ? NULL : landed, done, why, n);

		done += got;
		if (!err)
			break;
		if (!src_transient(err) || attempt >= rm->o.retries) {
			if (attempt)
				snprintf(why + strlen(why), n - strlen(why), " (after %d retries)",
					 attempt);
			return err;
		}
		atomic_fetch_add(&rm->retries, 1);
		/* The next GET starts at the first missing byte: what this one
		 * delivered is not fetched again. Without ranges it cannot. */
		if (f->whole)
			done = 0;
		else
			atomic_fetch_add(&rm->resumed, got);
		pfs_warn("source: %s; retrying from byte %" PRIu64 " of the range", why, done);
		src_backoff(attempt);
	}
	return 0;
}
