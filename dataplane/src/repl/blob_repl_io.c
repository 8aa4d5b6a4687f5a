// SPDX-License-Identifier: Apache-2.0
/*
 * What the replication server and client share (blob_repl_int.h): numeric
 * addresses, blocking socket I/O bounded by SO_RCVTIMEO/SO_SNDTIMEO, the
 * control frames on a socket, the AUTH MAC (OpenSSL's one-shot HMAC) and
 * the nonce. No state; safe from any thread.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "repl/blob_repl_int.h"
#include "util/random.h"
#include "wire/wire_le.h"

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double repl_now(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

double repl_wall(void)
{
	return clock_s(CLOCK_REALTIME);
}

int repl_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	const char *colon = s ? strrchr(s, ':') : NULL;
	char host[64], *end;
	unsigned long port;
	size_t hl;

	if (!colon || !colon[1])
		return -EINVAL;
	port = strtoul(colon + 1, &end, 10);
	hl = (size_t)(colon - s);
	if (*end || port > 65535 || hl >= sizeof(host) || colon[1] == '-' || colon[1] == '+')
		return -EINVAL;
	memcpy(host, s, hl);
	host[hl] = '\0';
	memset(ss, 0, sizeof(*ss));
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		host[hl - 1] = '\0';
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		*len = sizeof(*a);
		return inet_pton(AF_INET6, host + 1, &a->sin6_addr) == 1 ? 0 : -EINVAL;
	}
	struct sockaddr_in *a = (struct sockaddr_in *)ss;

	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)port);
	*len = sizeof(*a);
	return inet_pton(AF_INET, host, &a->sin_addr) == 1 ? 0 : -EINVAL;
}

int repl_resolve_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV }, *ai;
	const char *colon = strrchr(s, ':');
	char host[256];
	int rc;

	if (!repl_parse_addr(s, ss, len))
		return 0;
	if (!colon || colon == s || (size_t)(colon - s) >= sizeof(host) || s[0] == '[' ||
	    !colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1))
		return -EINVAL;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	rc = getaddrinfo(host, colon + 1, &hints, &ai);
	if (rc == EAI_NONAME || rc == EAI_AGAIN || rc == EAI_FAIL
#ifdef EAI_NODATA
	    || rc == EAI_NODATA
#endif
	)
		return -EAGAIN;
	if (rc == EAI_SYSTEM)
		return errno ? -errno : -EIO;
	if (rc)
		return -EINVAL;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

void repl_addr_str(const struct sockaddr_storage *ss, char *out, size_t n)
{
	char h[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &a->sin6_addr, h, sizeof(h));
		snprintf(out, n, "[%s]:%u", h, ntohs(a->sin6_port));
		return;
	}
	const struct sockaddr_in *a = (const struct sockaddr_in *)ss;

	inet_ntop(AF_INET, &a->sin_addr, h, sizeof(h));
	snprintf(out, n, "%s:%u", h, ntohs(a->sin_port));
}

int repl_set_timeout(int fd, int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)))
		return -errno;
	return 0;
}

static int io_err(int e)
{
	if (e == EAGAIN || e == EWOULDBLOCK)
		return -ETIMEDOUT;
	if (e == EPIPE)
		return -ECONNRESET;
	return -e;
}

int repl_read_full(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t r = recv(fd, p, len, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return io_err(errno);
		if (!r)
			return -ECONNRESET;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

int repl_writev_full(int fd, struct iovec *iov, int cnt)
{
	while (cnt) {
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)cnt };
		ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return io_err(errno);
		while (cnt && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			cnt--;
		}
		if (cnt) {
			iov->iov_base = (uint8_t *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

int repl_send_frame(int fd, const struct repl_frame *f)
{
	uint8_t buf[REPL_FRAME_MAX];
	int len = repl_frame_encode(f, buf);
	struct iovec iov = { .iov_base = buf };

	if (len < 0)
		return len;
	iov.iov_len = (size_t)len;
	return repl_writev_full(fd, &iov, 1);
}

void repl_send_text(int fd, uint8_t type, uint64_t size, uint64_t code, const char *text)
{
	struct repl_frame f = { .type = type, .size = size, .offset = code };
	size_t n = 0;

	/* Control bytes a message might carry (a file name) become '?'. */
	for (; text[n] && n < PFS_REPL_MSG_MAX; n++)
		f.body[n] = (uint8_t)text[n] < 0x20 ? '?' : (uint8_t)text[n];
	if (!n)
		f.body[n++] = '?';
	f.body_len = (uint16_t)n;
	(void)repl_send_frame(fd, &f);
}

int repl_read_frame(int fd, const uint8_t *hdr, struct repl_frame *f)
{
	uint8_t buf[REPL_FRAME_MAX];
	int bl = repl_frame_body_len(hdr, REPL_HDR), err;

	if (bl < 0)
		return bl;
	memcpy(buf, hdr, REPL_HDR);
	err = repl_read_full(fd, buf + REPL_HDR, (size_t)bl);
	return err ? err : repl_frame_decode(buf, REPL_HDR + (size_t)bl, f);
}

/* HMAC-SHA256(token, REPL_LABEL || nonce || le64 size [|| le32 xport
 * [|| le64 base_size || le64 base_fp]]). */
static int mac_of(const char *token, size_t token_len, const uint8_t *nonce, uint64_t size,
		  uint32_t xport, const uint64_t *base, const uint64_t *end, uint8_t *mac)
{
	uint8_t msg[sizeof(REPL_LABEL) - 1 + REPL_NONCE + 8 + 4 + 16 + 8];
	size_t len = sizeof(REPL_LABEL) - 1 + REPL_NONCE + 8;
	unsigned int ml = 0;

	/* No openssl.cnf: a static pfs in a scratch image has none. */
	OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, NULL);
	memcpy(msg, REPL_LABEL, sizeof(REPL_LABEL) - 1);
	memcpy(msg + sizeof(REPL_LABEL) - 1, nonce, REPL_NONCE);
	put64(msg + sizeof(REPL_LABEL) - 1 + REPL_NONCE, size);
	/* A datagram or delta request is signed too: nobody on the path turns
	 * it into "send the blob to this other port" or "against this other
	 * base". TCP keeps the v1 message. */
	if (xport) {
		put32(msg + len, xport);
		len += 4;
	}
	if (base) {
		put64(msg + len, base[0]);
		put64(msg + len + 8, base[1]);
		len += 16;
	}
	if (end) {
		put64(msg + len, *end);
		len += 8;
	}
	if (!HMAC(EVP_sha256(), token, (int)token_len, msg, len, mac, &ml) || ml != REPL_MAC)
		return -EIO;
	return 0;
}

int repl_mac(const char *token, size_t token_len, const uint8_t *nonce, uint64_t size,
	     uint32_t xport, uint8_t *mac)
{
	return mac_of(token, token_len, nonce, size, xport, NULL, NULL, mac);
}

int repl_auth_mac(const char *token, size_t token_len, const uint8_t *nonce, uint64_t size,
		  const struct repl_frame *a, uint8_t *mac)
{
	uint64_t base[2] = { a->base_size, a->base_fp };

	return mac_of(token, token_len, nonce, size, repl_xport_word(a),
		      a->flags & REPL_FLAG_DELTA ? base : NULL,
		      a->flags & REPL_FLAG_RANGE ? &a->end : NULL, mac);
}

int repl_nonce(uint8_t *nonce)
{
	return pfs_random_fill(nonce, REPL_NONCE);
}
