/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the replication tests: this program as a peer of the
 * replication stream (a TCP connection to a holder on the loopback, its
 * control frames in and out), and what it can see of a relay's fetch. */
#ifndef PFS_TESTS_REPL_UTIL_H
#define PFS_TESTS_REPL_UTIL_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "sh.h"
#include "wire/blob_repl_wire.h"

__attribute__((unused)) static int tcp_to(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct timeval tv = { .tv_sec = 5 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (int i = 0; i < 100; i++) {
		if (!connect(fd, (struct sockaddr *)&a, sizeof(a)))
			return fd;
		usleep(50000);
	}
	close(fd);
	return -1;
}

static int read_full(int fd, void *b, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = recv(fd, (char *)b + got, n - got, 0);

		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

/* The next frame from @fd (its type), or -1. */
__attribute__((unused)) static int frame_in(int fd, struct repl_frame *f)
{
	uint8_t b[REPL_FRAME_MAX];
	int bl;

	if (read_full(fd, b, REPL_HDR) || (bl = repl_frame_body_len(b, REPL_HDR)) < 0 ||
	    read_full(fd, b + REPL_HDR, (size_t)bl) ||
	    repl_frame_decode(b, REPL_HDR + (size_t)bl, f))
		return -1;
	return f->type;
}

__attribute__((unused)) static void frame_out(int fd, const struct repl_frame *f)
{
	uint8_t b[REPL_FRAME_MAX];
	int n = repl_frame_encode(f, b);

	if (n > 0)
		(void)!write(fd, b, (size_t)n);
}

/* A fake upstream's listener on 127.0.0.1:@port, or -1. */
__attribute__((unused)) static int fake_listen(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 4)) {
		close(lfd);
		return -1;
	}
	return lfd;
}

/* The fake upstream's next client (within 20 s): HELLO for a blob of
 * @blob bytes sent, its answer read into @au. The fd (the answer's type in
 * *@type, -1 if none came), or -1. */
__attribute__((unused)) static int fake_accept(int lfd, uint64_t blob, struct repl_frame *au,
					       int *type)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	struct repl_frame h = { .type = REPL_HELLO, .size = blob, .body_len = REPL_NONCE };
	int fd;

	if (poll(&p, 1, 20000) != 1 || (fd = accept(lfd, NULL, NULL)) < 0)
		return -1;
	frame_out(fd, &h);
	*type = frame_in(fd, au);
	return fd;
}

/* The first @n bytes of file @path into @b: true when all were read. */
__attribute__((unused)) static bool read_head(const char *path, uint8_t *b, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool ok = fd >= 0 && pread(fd, b, n, 0) == (ssize_t)n;

	if (fd >= 0)
		close(fd);
	return ok;
}

/* Seconds on the monotonic clock. */
__attribute__((unused)) static double mono_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Wait (@timeout_s at most) until the blob file @relay holds the first @n
 * bytes of the blob file @origin, and they are not all zero: evidence that
 * the relay has received bytes (a fetch writes them in place from offset
 * 0 up; a fresh blob is zeros; the caller removed any older blob of that
 * name before starting the relay). A fault injected after it lands
 * mid-stream however slow or fast the machine (a fixed sleep once landed
 * before the first byte under ASan). Returns the seconds waited, or -1. */
__attribute__((unused)) static double wait_holds(const char *relay, const char *origin, size_t n,
						 int timeout_s)
{
	uint8_t *r = malloc(n), *o = malloc(n);
	double t0 = mono_s(), waited = -1;

	while (r && o && mono_s() < t0 + timeout_s) {
		/* Not all zero (all zero: o[0] is 0 and equals each next byte). */
		if (read_head(origin, o, n) && (o[0] || memcmp(o, o + 1, n - 1)) &&
		    read_head(relay, r, n) && !memcmp(r, o, n)) {
			waited = mono_s() - t0;
			break;
		}
		usleep(20000);
	}
	free(r);
	free(o);
	return waited;
}

#endif /* PFS_TESTS_REPL_UTIL_H */
