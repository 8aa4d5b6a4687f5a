// SPDX-License-Identifier: Apache-2.0
/*
 * The HTTP/1.1 client of remote sources (src/remote/http.c) against a
 * scripted server on the loopback: real TCP sockets and real TLS
 * (OpenSSL on both ends, a throwaway CA and server certificate made by
 * the openssl command in the setup). The server thread answers each
 * connection with the bytes a check scripts, so each framing rule and
 * each fault is one check: Content-Length, chunked (extensions,
 * trailers), until-close bodies, keep-alive, Content-Range, a body cut
 * short, Content-Length beside chunked, a malformed chunk, a head over
 * 16 KiB, a peer that is not HTTP, one that never answers, a refused
 * connect, and a certificate from the wrong CA. Also the SigV4 signer
 * (src/remote/sigv4.c) against signatures computed by botocore 1.43.11's
 * S3SigV4Auth from the same inputs (a session token, a query, an extra
 * signed x-amz-* header).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "remote/http.h"
#include "remote/sigv4.h"
#include "sh.h"
#include "tap.h"

static char dir[64] = "/tmp/pfs-http-XXXXXX", ca[128], other_ca[128], crt[128], key[128];

/* The scripted server: one connection at a time; for each request on it
 * (up to nreply), the head is kept and reply[i] is written; then it
 * closes, or (stall) waits until the client closes. */
struct script {
	const char *reply[2];
	size_t reply_len[2]; /* 0: strlen */
	int nreply;
	bool stall, tls;
	char head[2][4096];
};

static int lfd = -1, port;
static SSL_CTX *srv_ctx;

static int read_head(int fd, SSL *ssl, char *out, size_t n)
{
	size_t l = 0;

	while (l + 1 < n) {
		ssize_t r = ssl ? SSL_read(ssl, out + l, 1) : recv(fd, out + l, 1, 0);

		if (r <= 0)
			return -1;
		l++;
		out[l] = '\0';
		if (l >= 4 && !memcmp(out + l - 4, "\r\n\r\n", 4))
			return 0;
	}
	return -1;
}

static void *serve(void *arg)
{
	struct script *s = arg;
	int fd = accept(lfd, NULL, NULL);
	SSL *ssl = NULL;

	if (fd < 0)
		return NULL;
	if (s->tls) {
		ssl = SSL_new(srv_ctx);
		SSL_set_fd(ssl, fd);
		if (SSL_accept(ssl) != 1)
			goto out;
	}
	for (int i = 0; i < s->nreply; i++) {
		size_t len = s->reply_len[i] ? s->reply_len[i] : strlen(s->reply[i]);

		if (read_head(fd, ssl, s->head[i], sizeof(s->head[i])))
			goto out;
		if (ssl)
			SSL_write(ssl, s->reply[i], (int)len);
		else if (len)
			(void)!send(fd, s->reply[i], len, MSG_NOSIGNAL);
	}
	if (s->stall) {
		char b[64];

		while (recv(fd, b, sizeof(b), 0) > 0)
			;
	}
out:
	if (ssl) {
		SSL_shutdown(ssl);
		SSL_free(ssl);
	}
	close(fd);
	return NULL;
}

static pthread_t tid;

static void start(struct script *s)
{
	pthread_create(&tid, NULL, serve, s);
}

static void url_of(struct http_url *u, bool tls, const char *target)
{
	char s[256], why[256];

	snprintf(s, sizeof(s), "%s://127.0.0.1:%d%s", tls ? "https" : "http", port, target);
	if (http_url_parse(s, u, why, sizeof(why)))
		printf("# %s\n", why);
}

static int t_setup(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);

	CHECK(mkdtemp(dir), "mkdtemp");
	snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
	snprintf(other_ca, sizeof(other_ca), "%s/other-ca.pem", dir);
	snprintf(crt, sizeof(crt), "%s/server.pem", dir);
	snprintf(key, sizeof(key), "%s/server.key", dir);
	CHECK(!sh("cd %s && for c in ca other-ca; do openssl req -x509 -newkey rsa:2048 -nodes "
		  "-keyout $c.key -out $c.pem -days 2 -subj /CN=pfs-test-$c >/dev/null 2>&1 || "
		  "exit 1; done && openssl req -newkey rsa:2048 -nodes -keyout server.key -out "
		  "server.csr -subj /CN=127.0.0.1 >/dev/null 2>&1 && printf "
		  "'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' >ext && openssl x509 -req -in "
		  "server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 "
		  "-extfile ext >/dev/null 2>&1",
		  dir),
	      "openssl: a CA and a server certificate");
	srv_ctx = SSL_CTX_new(TLS_server_method());
	CHECK(srv_ctx && SSL_CTX_use_certificate_file(srv_ctx, crt, SSL_FILETYPE_PEM) == 1 &&
		      SSL_CTX_use_PrivateKey_file(srv_ctx, key, SSL_FILETYPE_PEM) == 1,
	      "server TLS context");
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(lfd >= 0 && !bind(lfd, (struct sockaddr *)&a, sizeof(a)) && !listen(lfd, 8) &&
		      !getsockname(lfd, (struct sockaddr *)&a, &al),
	      "listen: %s", strerror(errno));
	port = ntohs(a.sin_port);
	return TAP_PASS;
}

static int t_url(void)
{
	struct http_url u;
	char why[256], auth[300];

	CHECK(!http_url_parse("https://s3.example.net/b/k%20x?versionId=3#frag", &u, why,
			      sizeof(why)) &&
		      u.tls && !strcmp(u.host, "s3.example.net") && !strcmp(u.port, "443") &&
		      !strcmp(u.target, "/b/k%20x?versionId=3") &&
		      !strcmp(http_url_authority(&u, auth, sizeof(auth)), "s3.example.net"),
	      "https: %s %s %s", u.host, u.port, u.target);
	http_url_free(&u);
	CHECK(!http_url_parse("http://[::1]:8333", &u, why, sizeof(why)) &&
		      !strcmp(u.host, "::1") && !strcmp(u.port, "8333") && !strcmp(u.target, "/") &&
		      !strcmp(http_url_authority(&u, auth, sizeof(auth)), "[::1]:8333"),
	      "IPv6 literal: %s %s %s", u.host, u.port, u.target);
	http_url_free(&u);
	CHECK(http_url_parse("http://user:pw@h/x", &u, why, sizeof(why)) == -EINVAL &&
		      strstr(why, "credentials in a URL are refused"),
	      "userinfo: %s", why);
	CHECK(http_url_parse("ftp://h/x", &u, why, sizeof(why)) == -EINVAL, "scheme");
	CHECK(http_url_parse("http://h:0/x", &u, why, sizeof(why)) == -EINVAL, "port 0");
	CHECK(http_url_parse("http://h:99999/x", &u, why, sizeof(why)) == -EINVAL, "port");
	CHECK(http_url_parse("http:///x", &u, why, sizeof(why)) == -EINVAL, "no host");
	CHECK(http_url_parse("http://h/a b", &u, why, sizeof(why)) == -EINVAL, "space");
	return TAP_PASS;
}

/* One exchange on a fresh connection; the status, or -errno. */
static int exchange(struct http_conn *c, struct http_resp *r, bool tls, const char *tca,
		    int timeout_ms, char *why, size_t n)
{
	struct http_url u;
	struct http_tls *t = tls ? http_tls_new(tca, why, n) : NULL;
	const char *h[] = { "Range: bytes=0-99" };
	int err;

	url_of(&u, tls, "/b/obj");
	err = http_connect(c, &u, t, timeout_ms, why, n);
	http_url_free(&u);
	http_tls_free(t); /* the SSL holds its own reference */
	if (err)
		return err;
	err = http_exchange(c, "GET", "/b/obj", h, 1, r, why, n);
	return err ? err : r->status;
}

static int t_length_and_chunked_keepalive(void)
{
	struct script s = {
		.nreply = 2,
		.reply = { "HTTP/1.1 206 Partial Content\r\nContent-Length: 10\r\n"
			   "Content-Range: bytes 5-14/4294967396\r\nETag: \"abc-2\"\r\n"
			   "x-amz-checksum-sha256: q83vEjRWeJA=\r\n\r\n0123456789",
			   "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
			   "4;ext=1\r\nwiki\r\n5\r\npedia\r\n0\r\nX-Trailer: t\r\n\r\n" }
	};
	struct http_conn c;
	struct http_resp r;
	char why[256], b[64] = { 0 }, *all;
	size_t len;

	start(&s);
	CHECK(exchange(&c, &r, false, NULL, 2000, why, sizeof(why)) == 206, "%s", why);
	CHECK(r.has_range && r.first == 5 && r.last == 14 && r.total == 4294967396ULL &&
		      !strcmp(r.etag, "\"abc-2\"") && !strcmp(r.checksum_sha256, "q83vEjRWeJA=") &&
		      r.keep_alive,
	      "head: %llu-%llu/%llu %s", (unsigned long long)r.first, (unsigned long long)r.last,
	      (unsigned long long)r.total, r.etag);
	CHECK(strstr(s.head[0], "GET /b/obj HTTP/1.1\r\n") &&
		      strstr(s.head[0], "Range: bytes=0-99\r\n") &&
		      strstr(s.head[0], "Host: 127.0.0.1:"),
	      "request: %s", s.head[0]);
	/* Two reads: the buffered part, then the rest. */
	CHECK(http_read(&c, &r, b, 3) == 3 && http_read(&c, &r, b + 3, 60) == 7 &&
		      !strcmp(b, "0123456789") && http_read(&c, &r, b, 60) == 0 && r.done,
	      "body %s", b);
	CHECK(!http_exchange(&c, "GET", "/b/obj", NULL, 0, &r, why, sizeof(why)) &&
		      r.status == 200 && r.chunked,
	      "second request on the kept-alive connection: %s", why);
	CHECK(!http_slurp(&c, &r, 1 << 20, &all, &len) && len == 9 && !strcmp(all, "wikipedia"),
	      "chunked body");
	free(all);
	http_close(&c);
	pthread_join(tid, NULL);
	return TAP_PASS;
}

static int t_until_close(void)
{
	struct script s = { .nreply = 1, .reply = { "HTTP/1.0 200 OK\r\n\r\nbody until close" } };
	struct http_conn c;
	struct http_resp r;
	char why[256], *all;
	size_t len;

	start(&s);
	CHECK(exchange(&c, &r, false, NULL, 2000, why, sizeof(why)) == 200, "%s", why);
	CHECK(!r.keep_alive && !http_slurp(&c, &r, 1 << 20, &all, &len) &&
		      !strcmp(all, "body until close"),
	      "until close");
	free(all);
	http_close(&c);
	pthread_join(tid, NULL);
	return TAP_PASS;
}

/* A reply whose head or body must fail with @want (in the exchange when
 * @in_head, else reading the body). */
static int refused(const char *reply, int want, bool in_head, const char *what)
{
	struct script s = { .nreply = 1, .reply = { reply } };
	struct http_conn c;
	struct http_resp r;
	char why[256] = "", b[256];
	int got;
	ssize_t rd = 0;

	start(&s);
	got = exchange(&c, &r, false, NULL, 2000, why, sizeof(why));
	if (!in_head && got > 0)
		while ((rd = http_read(&c, &r, b, sizeof(b))) > 0)
			;
	http_close(&c);
	pthread_join(tid, NULL);
	CHECK(in_head ? got == want : rd == want, "%s: exchange %d, read %zd (%s)", what, got, rd,
	      why);
	tap_diag("%s: %s", what, in_head ? why : strerror((int)-rd));
	return TAP_PASS;
}

static int t_truncated(void)
{
	return refused("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nonly this much", -ECONNRESET,
		       false, "a body cut short");
}

static int t_length_and_chunked(void)
{
	return refused("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
		       "0\r\n\r\n",
		       -EPROTO, true, "Content-Length beside chunked");
}

static int t_two_lengths(void)
{
	return refused("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nabcde",
		       -EPROTO, true, "two different Content-Lengths");
}

static int t_bad_chunk(void)
{
	return refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n",
		       -EPROTO, false, "a malformed chunk size");
}

static int t_not_http(void)
{
	return refused("SSH-2.0-OpenSSH_9.2\r\n", -EPROTO, true, "not HTTP");
}

static int t_huge_head(void)
{
	size_t n = 20000;
	char *big = malloc(n + 64);
	int rc;

	CHECK(big, "malloc");
	strcpy(big, "HTTP/1.1 200 OK\r\nX-Long: ");
	memset(big + strlen(big), 'a', n);
	strcpy(big + 26 + n, "\r\n\r\n");
	rc = refused(big, -EPROTO, true, "a head over 16 KiB");
	free(big);
	return rc;
}

static int t_stalled(void)
{
	struct script s = { .nreply = 1, .reply = { "" }, .reply_len = { 0 }, .stall = true };
	struct http_conn c;
	struct http_resp r;
	char why[256];
	int got;

	s.reply[0] = "";
	start(&s);
	got = exchange(&c, &r, false, NULL, 300, why, sizeof(why));
	http_close(&c);
	pthread_join(tid, NULL);
	CHECK(got == -ETIMEDOUT && strstr(why, "timed out"), "%d %s", got, why);
	return TAP_PASS;
}

static int t_refused(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), free_port;
	struct http_url u;
	struct http_conn c;
	char s[128], why[256];
	int err;

	/* A port bound but not listening: connect is refused. */
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(!bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
		      !getsockname(fd, (struct sockaddr *)&a, &al),
	      "bind");
	free_port = ntohs(a.sin_port);
	snprintf(s, sizeof(s), "http://127.0.0.1:%d/x", free_port);
	CHECK(!http_url_parse(s, &u, why, sizeof(why)), "%s", why);
	err = http_connect(&c, &u, NULL, 1000, why, sizeof(why));
	http_url_free(&u);
	close(fd);
	CHECK(err == -ECONNREFUSED && strstr(why, "Connection refused"), "%d %s", err, why);
	return TAP_PASS;
}

static int t_tls(void)
{
	struct script s = { .nreply = 1,
			    .tls = true,
			    .reply = { "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecret" } };
	struct http_conn c;
	struct http_resp r;
	char why[256], b[16] = { 0 };

	start(&s);
	CHECK(exchange(&c, &r, true, ca, 2000, why, sizeof(why)) == 200, "%s", why);
	CHECK(http_read(&c, &r, b, sizeof(b)) == 6 && !strcmp(b, "secret"), "body %s", b);
	http_close(&c);
	pthread_join(tid, NULL);
	return TAP_PASS;
}

static int t_tls_wrong_ca(void)
{
	struct script s = { .nreply = 1, .tls = true, .reply = { "HTTP/1.1 200 OK\r\n\r\n" } };
	struct http_conn c;
	struct http_resp r;
	char why[256];
	int got;

	start(&s);
	got = exchange(&c, &r, true, other_ca, 2000, why, sizeof(why));
	http_close(&c);
	pthread_join(tid, NULL);
	CHECK(got == -EACCES && strstr(why, "certificate not trusted"), "%d %s", got, why);
	tap_diag("%s", why);
	return TAP_PASS;
}

/* Without a CA file the client trusts the default bundle: in the image,
 * the one SSL_CERT_FILE names (dataplane/Dockerfile), since the path built
 * into the static libssl is the build host's. */
static int t_tls_default_bundle(void)
{
	const char *bundles[] = { ca, other_ca };
	char why[256];
	int got[2];

	for (int i = 0; i < 2; i++) {
		struct script s = { .nreply = 1,
				    .tls = true,
				    .reply = { "HTTP/1.1 200 OK\r\n\r\n" } };
		struct http_conn c;
		struct http_resp r;

		setenv("SSL_CERT_FILE", bundles[i], 1);
		start(&s);
		got[i] = exchange(&c, &r, true, NULL, 2000, why, sizeof(why));
		http_close(&c);
		pthread_join(tid, NULL);
	}
	unsetenv("SSL_CERT_FILE");
	CHECK(got[0] == 200, "SSL_CERT_FILE=the server's CA: %d", got[0]);
	CHECK(got[1] == -EACCES, "SSL_CERT_FILE=another CA: %d %s", got[1], why);
	return TAP_PASS;
}

/* botocore 1.43.11, S3SigV4Auth(Credentials(KEY, SECRET[, TOKEN]), 's3',
 * 'eu-west-3').add_auth() of a GET on each URL at 2026-12-04T07:32:15Z. */
static int t_sigv4(void)
{
	static const struct {
		const char *host, *target, *token, *sig;
	} v[] = {
		{ "127.0.0.1:8333", "/models/minilm/model.safetensors", NULL,
		  "89c325b745f93536c063de1caa4846b7baa81b39db956a47ccf85a0272428b73" },
		{ "s3.example.net", "/bucket?list-type=2&prefix=models%2Fminilm%2F&max-keys=2",
		  NULL, "dc380b657ca20001bd44b0ad8f58411501c888b4acb6a6f73de7b5a0607e912e" },
		{ "127.0.0.1:8333", "/b/a%20b%2Bc.bin", "SESSION/TOKEN+1",
		  "f07a93d593758e724c324e2226acc3ccc91260985c72e65a22dfbf8c4a8dd8d1" },
	};
	char hdrs[SIGV4_HDRS][SIGV4_HDR_LEN], enc[64];

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct sigv4_key k = { .access_key = "PFSTESTACCESSKEY",
				       .secret_key = "pfs/test+secret=key0123456789abcdefABCDEF",
				       .session_token = v[i].token,
				       .region = "eu-west-3",
				       .service = "s3" };
		int nh = sigv4_sign(&k, "GET", v[i].host, v[i].target, NULL, 0, 1796369535, hdrs);

		CHECK(nh == (v[i].token ? 4 : 3), "%zu: %d headers", i, nh);
		CHECK(!strcmp(hdrs[0], "x-amz-date: 20261204T073215Z") &&
			      strstr(hdrs[nh - 1], "Credential=PFSTESTACCESSKEY/20261204/eu-west-3/"
						   "s3/aws4_request") &&
			      strstr(hdrs[nh - 1], v[i].sig),
		      "%zu: %s", i, hdrs[nh - 1]);
	}
	/* A HEAD asking for the stored checksum: that x-amz-* header is signed. */
	{
		struct sigv4_key k = { .access_key = "PFSTESTACCESSKEY",
				       .secret_key = "pfs/test+secret=key0123456789abcdefABCDEF",
				       .region = "eu-west-3",
				       .service = "s3" };
		const char *extra[] = { "x-amz-checksum-mode:ENABLED" };
		int nh = sigv4_sign(&k, "HEAD", "127.0.0.1:8333",
				    "/models/minilm/model.safetensors", extra, 1, 1796369535, hdrs);

		CHECK(nh == 3 && strstr(hdrs[2],
					"SignedHeaders=host;x-amz-checksum-mode;"
					"x-amz-content-sha256;x-amz-date, Signature=8305e2519936f"
					"9389655f657fdf45e39955319993bb2dc7b9df49af5446aa109"),
		      "HEAD: %s", hdrs[nh > 0 ? nh - 1 : 0]);
	}
	CHECK(sigv4_uri_encode("models/a b+c~_.-", 1, enc, sizeof(enc)) > 0 &&
		      !strcmp(enc, "models/a%20b%2Bc~_.-"),
	      "encode %s", enc);
	CHECK(sigv4_uri_encode("a/b", 0, enc, sizeof(enc)) > 0 && !strcmp(enc, "a%2Fb"),
	      "encode %s", enc);
	return TAP_PASS;
}

static int t_cleanup(void)
{
	if (lfd >= 0)
		close(lfd);
	SSL_CTX_free(srv_ctx);
	sh("rm -rf %s", dir);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "setup: a listening socket, a CA and a server certificate", t_setup, .setup = true },
	{ "URLs: https, an IPv6 literal; userinfo, other schemes, bad ports refused", t_url },
	{ "206 with Content-Range past 4 GiB, then chunked on the kept-alive connection",
	  t_length_and_chunked_keepalive },
	{ "HTTP/1.0 body until close", t_until_close },
	{ "a body cut short: ECONNRESET, not a short success", t_truncated },
	{ "Content-Length beside chunked: refused", t_length_and_chunked },
	{ "two different Content-Lengths: refused", t_two_lengths },
	{ "a malformed chunk size: refused", t_bad_chunk },
	{ "a peer that is not HTTP: refused", t_not_http },
	{ "a head over 16 KiB: refused", t_huge_head },
	{ "a server that never answers: ETIMEDOUT at the deadline", t_stalled },
	{ "a refused connect: ECONNREFUSED", t_refused },
	{ "TLS with the CA bundle: host checked, body read", t_tls },
	{ "TLS with another CA: refused, saying so", t_tls_wrong_ca },
	{ "TLS without a CA file: the bundle SSL_CERT_FILE names", t_tls_default_bundle },
	{ "SigV4: botocore's signatures for the same requests", t_sigv4 },
	{ "cleanup", t_cleanup, .setup = true },
};

TAP_MAIN(tests)
