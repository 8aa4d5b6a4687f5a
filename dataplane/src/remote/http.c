// SPDX-License-Identifier: Apache-2.0
/*
 * The HTTP/1.1 client of remote sources (http.h): URLs, connections
 * (plain or TLS), one request and its response head at a time, bodies by
 * Content-Length, chunked or until close, read straight into the caller's
 * memory.
 *
 * Strictness where it protects the blob: a status line that is not HTTP,
 * a head over 16 KiB, a Content-Length beside chunked (RFC 9112 6.3: a
 * request-smuggling shape), two different Content-Lengths, a malformed
 * chunk size, or a body cut short all fail the read; the caller retries
 * and resumes, it never keeps bytes it cannot account for.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "remote/http.h"

#define HEAD_MAX (sizeof(((struct http_conn *)0)->buf))

/* ---- URLs ---- */

static bool is_ip_literal(const char *h)
{
	struct in6_addr a6;
	struct in_addr a4;

	return inet_pton(AF_INET, h, &a4) == 1 || inet_pton(AF_INET6, h, &a6) == 1;
}

int http_url_parse(const char *s, struct http_url *u, char *why, size_t n)
{
	const char *a, *end, *colon = NULL;
	size_t hl;

	memset(u, 0, sizeof(*u));
	if (!strncasecmp(s, "https://", 8)) {
		u->tls = true;
		a = s + 8;
	} else if (!strncasecmp(s, "http://", 7)) {
		a = s + 7;
	} else {
		snprintf(why, n, "'%.200s': want an http:// or https:// URL", s);
		return -EINVAL;
	}
	end = a + strcspn(a, "/?#");
	if (memchr(a, '@', (size_t)(end - a))) {
		snprintf(why, n,
			 "'%.200s': credentials in a URL are refused (they would be logged): "
			 "pass them in a file",
			 s);
		return -EINVAL;
	}
	if (*a == '[') {
		const char *rb = memchr(a, ']', (size_t)(end - a));

		if (!rb) {
			snprintf(why, n, "'%.200s': an IPv6 literal without ']'", s);
			return -EINVAL;
		}
		hl = (size_t)(rb - a - 1);
		memcpy(u->host, a + 1, hl < sizeof(u->host) ? hl : 0);
		if (rb + 1 < end && rb[1] == ':')
			colon = rb + 1;
		else if (rb + 1 != end)
			hl = sizeof(u->host);
	} else {
		colon = memchr(a, ':', (size_t)(end - a));
		hl = (size_t)((colon ? colon : end) - a);
		if (hl < sizeof(u->host))
			memcpy(u->host, a, hl);
	}
	if (!hl || hl >= sizeof(u->host)) {
		snprintf(why, n, "'%.200s': no host, or a host name too long", s);
		return -EINVAL;
	}
	u->host[hl] = '\0';
	if (colon) {
		size_t pl = (size_t)(end - colon - 1);
		char *e;
		unsigned long p;

		if (!pl || pl >= sizeof(u->port)) {
			snprintf(why, n, "'%.200s': a bad port", s);
			return -EINVAL;
		}
		memcpy(u->port, colon + 1, pl);
		p = strtoul(u->port, &e, 10);
		if (*e || !p || p > 65535) {
			snprintf(why, n, "'%.200s': a bad port", s);
			return -EINVAL;
		}
	} else {
		snprintf(u->port, sizeof(u->port), "%s", u->tls ? "443" : "80");
	}
	if (*end == '#')
		end = "";
	for (const char *p = end; *p && *p != '#'; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f) {
			snprintf(why, n, "'%.200s': a space or control character in the path", s);
			return -EINVAL;
		}
	hl = strcspn(end, "#");
	u->target = malloc(hl + 2);
	if (!u->target) {
		snprintf(why, n, "no memory");
		return -ENOMEM;
	}
	snprintf(u->target, hl + 2, "%s%.*s", *end == '/' ? "" : "/", (int)hl, end);
	return 0;
}

void http_url_free(struct http_url *u)
{
	free(u->target);
	u->target = NULL;
}

/* "host[:port]" as the Host header carries it, and as SigV4 signs it: one
 * spelling for both, or the server computes another signature. */
static const char *authority(const char *host, const char *port, bool tls, char *buf, size_t n)
{
	bool v6 = strchr(host, ':') != NULL;
	bool dflt = !strcmp(port, tls ? "443" : "80");

	snprintf(buf, n, "%s%s%s%s%s", v6 ? "[" : "", host, v6 ? "]" : "", dflt ? "" : ":",
		 dflt ? "" : port);
	return buf;
}

const char *http_url_authority(const struct http_url *u, char *buf, size_t n)
{
	return authority(u->host, u->port, u->tls, buf, n);
}

/* ---- TLS ---- */

struct http_tls {
	SSL_CTX *ctx;
};

static void ssl_why(const char *what, char *why, size_t n)
{
	char e[256] = "unknown error";
	unsigned long code = ERR_get_error();

	if (code)
		ERR_error_string_n(code, e, sizeof(e));
	ERR_clear_error();
	snprintf(why, n, "%s: %s", what, e);
}

struct http_tls *http_tls_new(const char *ca_file, char *why, size_t n)
{
	struct http_tls *t = calloc(1, sizeof(*t));

	/* No openssl.cnf: a static pfs in a scratch image has none. */
	OPENSSL_init_ssl(OPENSSL_INIT_NO_LOAD_CONFIG, NULL);
	if (!t || !(t->ctx = SSL_CTX_new(TLS_client_method()))) {
		ssl_why("TLS context", why, n);
		free(t);
		return NULL;
	}
	SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
	if (ca_file ? SSL_CTX_load_verify_locations(t->ctx, ca_file, NULL) != 1 :
		      SSL_CTX_set_default_verify_paths(t->ctx) != 1) {
		char what[300];

		snprintf(what, sizeof(what), "CA bundle %.200s", ca_file ? ca_file : "(system)");
		ssl_why(what, why, n);
		http_tls_free(t);
		return NULL;
	}
	return t;
}

void http_tls_free(struct http_tls *t)
{
	if (t)
		SSL_CTX_free(t->ctx);
	free(t);
}

/* ---- connections ---- */

static int connect_deadline(int fd, const struct sockaddr *sa, socklen_t sl, int timeout_ms)
{
	int fl = fcntl(fd, F_GETFL), err = 0;
	socklen_t el = sizeof(err);
	struct pollfd p = { .fd = fd, .events = POLLOUT };

	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	if (connect(fd, sa, sl)) {
		int r;

		if (errno != EINPROGRESS)
			return -errno;
		r = poll(&p, 1, timeout_ms);

		if (r == 0)
			return -ETIMEDOUT;
		if (r < 0)
			return -errno;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) || err)
			return -(err ? err : errno);
	}
	fcntl(fd, F_SETFL, fl);
	return 0;
}

static int tcp_connect(struct http_conn *c, char *why, size_t n)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
	struct timeval tv = { .tv_sec = c->timeout_ms / 1000,
			      .tv_usec = (c->timeout_ms % 1000) * 1000 };
	int one = 1, err = -EHOSTUNREACH, g = getaddrinfo(c->host, c->port, &hints, &res);

	if (g) {
		snprintf(why, n, "%s:%s: %s", c->host, c->port, gai_strerror(g));
		return g == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);

		if (fd < 0) {
			err = -errno;
			continue;
		}
		err = connect_deadline(fd, ai->ai_addr, ai->ai_addrlen, c->timeout_ms);
		if (!err) {
			setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
			setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			c->fd = fd;
			break;
		}
		close(fd);
	}
	freeaddrinfo(res);
	if (err)
		snprintf(why, n, "connect %s:%s: %s", c->host, c->port, strerror(-err));
	return err;
}

static int tls_start(struct http_conn *c, struct http_tls *tls, char *why, size_t n)
{
	SSL *ssl = SSL_new(tls->ctx);
	long vr;

	if (!ssl) {
		ssl_why("TLS session", why, n);
		return -ENOMEM;
	}
	c->ssl = ssl;
	SSL_set_fd(ssl, c->fd);
	if (is_ip_literal(c->host)) {
		X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), c->host);
	} else {
		SSL_set_tlsext_host_name(ssl, c->host);
		SSL_set1_host(ssl, c->host);
	}
	if (SSL_connect(ssl) == 1)
		return 0;
	vr = SSL_get_verify_result(ssl);
	if (vr != X509_V_OK) {
		ERR_clear_error();
		snprintf(why, n, "TLS to %s:%s: certificate not trusted: %s (set the CA bundle)",
			 c->host, c->port, X509_verify_cert_error_string(vr));
		return -EACCES;
	}
	{
		char what[300];

		snprintf(what, sizeof(what), "TLS handshake with %s:%s", c->host, c->port);
		ssl_why(what, why, n);
	}
	return -ECONNREFUSED;
}

int http_connect(struct http_conn *c, const struct http_url *u, struct http_tls *tls,
		 int timeout_ms, char *why, size_t n)
{
	int err;

	memset(c, 0, offsetof(struct http_conn, buf));
	c->fd = -1;
	c->timeout_ms = timeout_ms > 0 ? timeout_ms : 30000;
	c->tls = u->tls;
	snprintf(c->host, sizeof(c->host), "%s", u->host);
	snprintf(c->port, sizeof(c->port), "%s", u->port);
	if (c->tls && !tls) {
		snprintf(why, n, "https://%s: no TLS context", c->host);
		return -EINVAL;
	}
	err = tcp_connect(c, why, n);
	if (!err && c->tls)
		err = tls_start(c, tls, why, n);
	if (err)
		http_close(c);
	return err;
}

void http_close(struct http_conn *c)
{
	if (c->ssl) {
		SSL_free(c->ssl);
		c->ssl = NULL;
	}
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->bo = c->bl = 0;
}

bool http_connected(const struct http_conn *c)
{
	return c->fd >= 0;
}

/* ---- raw I/O ---- */

static ssize_t raw_read(struct http_conn *c, void *dst, size_t len)
{
	if (c->ssl) {
		size_t got = 0;
		int r, e;

		ERR_clear_error();
		r = SSL_read_ex(c->ssl, dst, len, &got);
		if (r == 1)
			return (ssize_t)got;
		e = SSL_get_error(c->ssl, r);
		if (e == SSL_ERROR_ZERO_RETURN)
			return 0;
		if (e == SSL_ERROR_SYSCALL && (errno == EAGAIN || errno == EWOULDBLOCK))
			return -ETIMEDOUT;
		/* A peer that closes without close_notify: the caller decides
		 * from the framing whether the body was complete. */
		if (e == SSL_ERROR_SSL &&
		    ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
			ERR_clear_error();
			return 0;
		}
		ERR_clear_error();
		return -ECONNRESET;
	}
	for (;;) {
		ssize_t r = recv(c->fd, dst, len, 0);

		if (r >= 0)
			return r;
		if (errno == EINTR)
			continue;
		return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
	}
}

static int raw_write(struct http_conn *c, const void *src, size_t len)
{
	const char *p = src;

	while (len) {
		ssize_t w;

		if (c->ssl) {
			size_t done = 0;

			ERR_clear_error();
			w = SSL_write_ex(c->ssl, p, len, &done) == 1 ? (ssize_t)done : -1;
			if (w < 0) {
				ERR_clear_error();
				return -EPIPE;
			}
		} else {
			w = send(c->fd, p, len, MSG_NOSIGNAL);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				return errno == EAGAIN ? -ETIMEDOUT : -errno;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* More bytes into the buffer (compacted first). >0, 0 at EOF, -errno. */
static ssize_t fill(struct http_conn *c)
{
	ssize_t r;

	if (c->bo) {
		memmove(c->buf, c->buf + c->bo, c->bl - c->bo);
		c->bl -= c->bo;
		c->bo = 0;
	}
	if (c->bl == sizeof(c->buf))
		return -EPROTO;
	r = raw_read(c, c->buf + c->bl, sizeof(c->buf) - c->bl);
	if (r > 0)
		c->bl += (size_t)r;
	return r;
}

/* One CRLF-terminated line from the buffer, NUL-terminated in place
 * (without the CRLF); NULL and *@err at EOF, an error or a line over the
 * buffer. */
static char *read_line(struct http_conn *c, int *err)
{
	for (;;) {
		char *s = (char *)c->buf + c->bo;
		char *nl = memchr(s, '\n', c->bl - c->bo);
		ssize_t r;

		if (nl) {
			c->bo = (size_t)(nl + 1 - (char *)c->buf);
			if (nl > s && nl[-1] == '\r')
				nl--;
			*nl = '\0';
			return s;
		}
		r = fill(c);
		if (r <= 0) {
			*err = r ? (int)r : -ECONNRESET;
			return NULL;
		}
	}
}

/* ---- responses ---- */

static void copy_value(char *dst, size_t n, const char *v)
{
	snprintf(dst, n, "%s", v);
}

static bool has_token(const char *v, const char *tok)
{
	size_t tl = strlen(tok);

	for (const char *p = v; (p = strcasestr(p, tok)); p += tl)
		if ((p == v || p[-1] == ',' || p[-1] == ' ') &&
		    (!p[tl] || p[tl] == ',' || p[tl] == ' ' || p[tl] == ';'))
			return true;
	return false;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *e;

	if (!isdigit((unsigned char)*s))
		return -EPROTO;
	errno = 0;
	*v = strtoull(s, &e, 10);
	return errno || (*e && *e != ' ') ? -EPROTO : 0;
}

/* Content-Range: "bytes FIRST-LAST/TOTAL"; a 416 sends an asterisk for the range. */
static int parse_range(const char *v, struct http_resp *r)
{
	unsigned long long a, b;
	char tot[32];

	if (sscanf(v, "bytes %llu-%llu/%31s", &a, &b, tot) == 3 && a <= b) {
		r->first = a;
		r->last = b;
	} else if (sscanf(v, "bytes */%31s", tot) != 1) {
		return -EPROTO;
	}
	r->has_range = true;
	if (!strcmp(tot, "*"))
		r->total = UINT64_MAX;
	else if (parse_u64(tot, &r->total))
		return -EPROTO;
	return 0;
}

static int header(struct http_resp *r, char *line)
{
	char *colon = strchr(line, ':'), *v;
	size_t vl;

	/* RFC 9112 5.1: no whitespace between the name and the colon. */
	if (!colon || colon == line || strcspn(line, " \t") < (size_t)(colon - line))
		return -EPROTO;
	*colon = '\0';
	for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
		;
	for (vl = strlen(v); vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t');)
		v[--vl] = '\0';
	if (!strcasecmp(line, "content-length")) {
		uint64_t len;

		if (parse_u64(v, &len) || (r->has_len && len != r->len))
			return -EPROTO;
		r->has_len = true;
		r->len = len;
	} else if (!strcasecmp(line, "transfer-encoding")) {
		if (has_token(v, "chunked"))
			r->chunked = true;
	} else if (!strcasecmp(line, "connection")) {
		if (has_token(v, "close"))
			r->keep_alive = false;
		else if (has_token(v, "keep-alive"))
			r->keep_alive = true;
	} else if (!strcasecmp(line, "content-range")) {
		return parse_range(v, r);
	} else if (!strcasecmp(line, "etag")) {
		copy_value(r->etag, sizeof(r->etag), v);
	} else if (!strcasecmp(line, "last-modified")) {
		copy_value(r->last_modified, sizeof(r->last_modified), v);
	} else if (!strcasecmp(line, "content-type")) {
		copy_value(r->content_type, sizeof(r->content_type), v);
	} else if (!strcasecmp(line, "x-amz-checksum-sha256")) {
		copy_value(r->checksum_sha256, sizeof(r->checksum_sha256), v);
	} else if (!strcasecmp(line, "location")) {
		copy_value(r->location, sizeof(r->location), v);
	} else if (!strcasecmp(line, "www-authenticate")) {
		if (!r->www_authenticate[0])
			copy_value(r->www_authenticate, sizeof(r->www_authenticate), v);
	} else if (!strcasecmp(line, "docker-content-digest")) {
		copy_value(r->docker_content_digest, sizeof(r->docker_content_digest), v);
	} else if (!strcasecmp(line, "accept-ranges")) {
		copy_value(r->accept_ranges, sizeof(r->accept_ranges), v);
	}
	return 0;
}

/* The body's framing from the head (RFC 9112 6.3). */
static int framing(struct http_resp *r, bool head)
{
	r->head = head;
	if (head || r->status == 204 || r->status == 304 || r->status < 200) {
		r->done = true;
		return 0;
	}
	if (r->chunked && r->has_len)
		return -EPROTO;
	if (r->chunked) {
		r->left = 0;
	} else if (r->has_len) {
		r->left = r->len;
		r->done = !r->len;
	} else {
		r->left = UINT64_MAX; /* until the server closes */
		r->keep_alive = false;
	}
	return 0;
}

static int read_head(struct http_conn *c, struct http_resp *r, bool head, char *why, size_t n)
{
	int err = 0, minor;
	char *line = read_line(c, &err);

	if (!line) {
		snprintf(why, n, "%s:%s: %s before a response", c->host, c->port,
			 err == -ETIMEDOUT ? "timed out" : "connection closed");
		return err;
	}
	if (sscanf(line, "HTTP/1.%d %3d", &minor, &r->status) != 2 || r->status < 100 ||
	    r->status > 599) {
		snprintf(why, n, "%s:%s: not an HTTP/1.x response: '%.60s'", c->host, c->port,
			 line);
		return -EPROTO;
	}
	r->keep_alive = minor >= 1;
	while ((line = read_line(c, &err)) && *line) {
		char shown[81];

		snprintf(shown, sizeof(shown), "%s", line); /* header() cuts it at the colon */
		if (header(r, line)) {
			snprintf(why, n, "%s:%s: a malformed or conflicting header '%s'", c->host,
				 c->port, shown);
			return -EPROTO;
		}
	}
	if (!line) {
		snprintf(why, n, "%s:%s: %s", c->host, c->port,
			 err == -EPROTO ? "response headers over 16 KiB" :
					  "closed inside the headers");
		return err;
	}
	if (framing(r, head)) {
		snprintf(why, n, "%s:%s: both Content-Length and chunked: refused", c->host,
			 c->port);
		return -EPROTO;
	}
	return 0;
}

int http_exchange(struct http_conn *c, const char *method, const char *target,
		  const char *const *hdrs, size_t nh, struct http_resp *r, char *why, size_t n)
{
	char req[HEAD_MAX];
	char host[HTTP_HOST_MAX + 16];
	int len, err;

	memset(r, 0, sizeof(*r));
	len = snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: pfs\r\n",
		       method, target, authority(c->host, c->port, c->tls, host, sizeof(host)));
	for (size_t i = 0; i < nh && len > 0 && (size_t)len < sizeof(req); i++)
		len += snprintf(req + len, sizeof(req) - (size_t)len, "%s\r\n", hdrs[i]);
	if (len > 0 && (size_t)len < sizeof(req))
		len += snprintf(req + len, sizeof(req) - (size_t)len, "\r\n");
	if (len <= 0 || (size_t)len >= sizeof(req)) {
		snprintf(why, n, "request head over %zu bytes", sizeof(req));
		return -E2BIG;
	}
	/* A response left in the buffer belongs to no request: start clean. */
	c->bo = c->bl = 0;
	err = raw_write(c, req, (size_t)len);
	if (err) {
		snprintf(why, n, "%s:%s: sending the request: %s", c->host, c->port,
			 strerror(-err));
		return err;
	}
	err = read_head(c, r, !strcmp(method, "HEAD"), why, n);
	/* Nothing more will come on a connection the server closes. */
	if (!err && r->done && !r->keep_alive)
		http_close(c);
	return err;
}

/* The next chunk's size (after the previous chunk's CRLF); 0 ends the body
 * (its trailer read). */
static int next_chunk(struct http_conn *c, struct http_resp *r, bool first)
{
	int err = 0;
	char *line, *e;
	unsigned long long sz;

	if (!first) {
		line = read_line(c, &err);
		if (!line)
			return err;
		if (*line)
			return -EPROTO;
	}
	line = read_line(c, &err);
	if (!line)
		return err;
	if (!isxdigit((unsigned char)*line))
		return -EPROTO;
	errno = 0;
	sz = strtoull(line, &e, 16);
	if (errno || (*e && *e != ';' && *e != ' '))
		return -EPROTO;
	if (!sz) {
		while ((line = read_line(c, &err)) && *line)
			;
		if (!line)
			return err;
		r->done = true;
	}
	r->left = sz;
	return 0;
}

ssize_t http_read(struct http_conn *c, struct http_resp *r, void *dst, size_t len)
{
	size_t want;
	ssize_t got;

	if (r->done || !len)
		return 0;
	if (r->chunked && !r->left) {
		int err = next_chunk(c, r, !r->in_chunks);

		r->in_chunks = true;
		if (err)
			return err;
		if (r->done)
			return 0;
	}
	want = r->left < len ? (size_t)r->left : len;
	if (c->bo < c->bl) {
		got = (ssize_t)(c->bl - c->bo < want ? c->bl - c->bo : want);
		memcpy(dst, c->buf + c->bo, (size_t)got);
		c->bo += (size_t)got;
	} else {
		got = raw_read(c, dst, want);
	}
	if (got < 0)
		return got;
	if (!got) {
		if (r->left == UINT64_MAX) {
			r->done = true;
			return 0;
		}
		return -ECONNRESET;
	}
	if (r->left != UINT64_MAX) {
		r->left -= (uint64_t)got;
		if (!r->left && !r->chunked)
			r->done = true;
	}
	return got;
}

int http_slurp(struct http_conn *c, struct http_resp *r, size_t max, char **out, size_t *len)
{
	size_t cap = 4096, l = 0;
	char *b = malloc(cap + 1);

	if (!b)
		return -ENOMEM;
	for (;;) {
		ssize_t got;

		if (l == cap) {
			char *nb;

			if (cap >= max) {
				free(b);
				return -EFBIG;
			}
			cap = cap * 2 < max ? cap * 2 : max;
			nb = realloc(b, cap + 1);
			if (!nb) {
				free(b);
				return -ENOMEM;
			}
			b = nb;
		}
		got = http_read(c, r, b + l, cap - l);
		if (got < 0) {
			free(b);
			return (int)got;
		}
		if (!got)
			break;
		l += (size_t)got;
	}
	b[l] = '\0';
	*out = b;
	*len = l;
	return 0;
}

void http_drain(struct http_conn *c, struct http_resp *r, size_t max)
{
	char b[4096];
	size_t total = 0;

	while (!r->done && total <= max) {
		ssize_t got = http_read(c, r, b, sizeof(b));

		if (got <= 0)
			break;
		total += (size_t)got;
	}
	if (!r->done || !r->keep_alive)
		http_close(c);
}

const char *http_reason(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 206:
		return "Partial Content";
	case 301:
		return "Moved Permanently";
	case 302:
		return "Found";
	case 304:
		return "Not Modified";
	case 307:
		return "Temporary Redirect";
	case 308:
		return "Permanent Redirect";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 412:
		return "Precondition Failed";
	case 416:
		return "Range Not Satisfiable";
	case 429:
		return "Too Many Requests";
	case 500:
		return "Internal Server Error";
	case 502:
		return "Bad Gateway";
	case 503:
		return "Service Unavailable";
	case 504:
		return "Gateway Timeout";
	}
	return status >= 500 ? "server error" : status >= 400 ? "client error" : "";
}
