/* SPDX-License-Identifier: Apache-2.0 */
/* A small HTTP/1.1 client for reading sources from object stores and web
 * servers (S3 and its compatibles, mirrors of model hubs): GET and HEAD,
 * ranged reads straight into the caller's memory, keep-alive, chunked
 * bodies, TLS through OpenSSL with a CA bundle and host name checks.
 *
 * Why our own and not libcurl: pfs is one static binary, and a static
 * libcurl drags in a dozen libraries (nghttp2, libidn2, libpsl, brotli,
 * LDAP, GSSAPI, ...) for features a ranged GET does not use; OpenSSL's
 * libssl is already beside the libcrypto pfs links. What a reader needs
 * from HTTP is small: one request at a time per connection, a status, a
 * few headers, and a body read into place.
 *
 * One connection per thread; nothing here is shared between threads but
 * the TLS context, which OpenSSL allows. Every read and write has a
 * deadline (the connection's timeout) so a stalled server fails the read
 * instead of hanging it. */
#ifndef PFS_REMOTE_HTTP_H
#define PFS_REMOTE_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HTTP_HOST_MAX 256
#define HTTP_HDR_MAX 64 /* request header lines */

/* scheme://host[:port]/target; target keeps its path and query as given
 * (already percent-encoded). */
struct http_url {
	bool tls; /* https */
	char host[HTTP_HOST_MAX]; /* without brackets for an IPv6 literal */
	char port[8];
	char *target; /* "/..." (malloc'd) */
};

/* http_url_parse - "http://h[:p]/t" or "https://..."; 0 or -EINVAL with
 * why. Userinfo ("user@") is refused: credentials come from files. */
int http_url_parse(const char *s, struct http_url *u, char *why, size_t n);
void http_url_free(struct http_url *u);
/* "host" or "host:port" when the port is not the scheme's default, as the
 * Host header wants it (brackets around an IPv6 literal). */
const char *http_url_authority(const struct http_url *u, char *buf, size_t n);

struct http_tls;

/* http_tls_new - a TLS client context that trusts @ca_file (PEM; NULL:
 * the system's bundle). NULL with why. */
struct http_tls *http_tls_new(const char *ca_file, char *why, size_t n);
void http_tls_free(struct http_tls *t);

/* One connection. Zero it, then http_connect. */
struct http_conn {
	int fd; /* -1: not connected */
	void *ssl; /* SSL *, or NULL for plain HTTP */
	char host[HTTP_HOST_MAX], port[8];
	bool tls;
	int timeout_ms;
	/* Bytes read past the headers, not yet handed out. */
	uint8_t buf[16384];
	size_t bo, bl;
};

/* A response's status line and the headers a reader needs. */
struct http_resp {
	int status;
	bool keep_alive;
	bool chunked;
	bool has_len;
	uint64_t len; /* Content-Length */
	bool has_range; /* Content-Range: bytes FIRST-LAST/TOTAL */
	uint64_t first, last, total; /* total UINT64_MAX: "*" */
	char etag[136]; /* as sent, quotes included */
	char last_modified[64];
	char content_type[128];
	char checksum_sha256[64]; /* x-amz-checksum-sha256 (base64) */
	char location[1024];
	char accept_ranges[24];
	char www_authenticate[1024]; /* the first challenge of a 401 */
	char docker_content_digest[80]; /* a registry's digest of what it sent */
	/* Reading the body. */
	uint64_t left; /* of Content-Length, or of the current chunk */
	bool done; /* the body ended */
	bool in_chunks; /* chunked: past the first chunk's size line */
	bool head; /* a HEAD: no body whatever the headers say */
};

/* http_connect - to @u's host and port (every address getaddrinfo gives,
 * in order), TLS when @u is https (with @tls: SNI and the certificate
 * checked against the host). 0 or -errno with why. */
int http_connect(struct http_conn *c, const struct http_url *u, struct http_tls *tls,
		 int timeout_ms, char *why, size_t n);
void http_close(struct http_conn *c);
bool http_connected(const struct http_conn *c);

/* http_exchange - send "@method @target HTTP/1.1" with Host and the
 * @nh header lines @hdrs ("Name: value"), then read the status line and
 * headers into @r. 0, or -errno with why: EPROTO (not HTTP, a header too
 * long, a Content-Length and chunked at once), ECONNRESET/EPIPE (the peer
 * closed: a kept-alive connection the server dropped), ETIMEDOUT. */
int http_exchange(struct http_conn *c, const char *method, const char *target,
		  const char *const *hdrs, size_t nh, struct http_resp *r, char *why, size_t n);

/* http_read - up to @len body bytes into @dst (straight from the socket
 * or TLS when the buffer is empty: no bounce copy for large reads). The
 * count, 0 at the end of the body, or -errno: EPROTO (a malformed chunk),
 * ECONNRESET (closed before the body ended: truncated), ETIMEDOUT. */
ssize_t http_read(struct http_conn *c, struct http_resp *r, void *dst, size_t len);

/* http_slurp - the whole body (at most @max bytes) into a malloc'd,
 * NUL-terminated *@out of *@len bytes. 0 or -errno (EFBIG past @max). */
int http_slurp(struct http_conn *c, struct http_resp *r, size_t max, char **out, size_t *len);

/* http_drain - read and drop what is left of the body (at most @max
 * bytes, else the connection is closed): keeps the connection usable. */
void http_drain(struct http_conn *c, struct http_resp *r, size_t max);

/* http_reason - a few words for @status ("Not Found"). */
const char *http_reason(int status);

#endif /* PFS_REMOTE_HTTP_H */
