// SPDX-License-Identifier: Apache-2.0
/*
 * How a relay could forward the blob's bytes without copying them into the
 * kernel (issue 31, item 2): one sender, one receiver, each reporting its
 * own CPU seconds (getrusage: user + sys, softirq work done in its context
 * included, as a relay's is), so bench/zctx.sh can put each method's cost on
 * both ends side by side.
 *
 *   zctx send <ip> <port> <file> <method>   prints: bytes seconds cpu_s copied
 *   zctx recv <port> <tcp|udp>              prints: bytes seconds cpu_s
 *
 * The sender maps <file> (a tmpfs file, like a files-layout blob) and sends
 * it whole, in 1 MiB grams each behind a 32-byte header as pfs does:
 *   tcp-writev     writev(header, payload): the kernel copies (pfs today)
 *   tcp-sendfile   header with MSG_MORE, then sendfile() of the file's pages
 *   tcp-splice     vmsplice() of the mapped payload into a 1 MiB pipe, then
 *                  splice() to the socket: page references, any mapping
 *   tcp-zerocopy   MSG_ZEROCOPY (SO_ZEROCOPY); completions drained from the
 *                  error queue, and how many the kernel says it copied
 *   udp-gso        64 KiB sends cut into 1472-byte datagrams (UDP_SEGMENT)
 *   udp-zerocopy   the same with MSG_ZEROCOPY
 * UDP is sent unpaced: the receiver reports what reached it.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

#define GRAM (1u << 20)
#define HDR 32
#define DGRAM 1472
#define GSO_BYTES (44u * DGRAM) /* under 64 KiB */

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double cpu(void)
{
	struct rusage r;

	getrusage(RUSAGE_SELF, &r);
	return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
	       (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* Completions of MSG_ZEROCOPY sends: how many calls are still pending, and
 * how many the kernel reports it had to copy after all (a local receiver). */
struct zc {
	long pending, copied;
};

static void zc_drain(int s, struct zc *z, int flags)
{
	char cb[128];

	for (;;) {
		struct msghdr mh = { .msg_control = cb, .msg_controllen = sizeof(cb) };
		struct cmsghdr *cm;

		if (recvmsg(s, &mh, MSG_ERRQUEUE | flags) < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			die("recvmsg(MSG_ERRQUEUE)");
		}
		for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			struct sock_extended_err *e = (void *)CMSG_DATA(cm);

			if (e->ee_origin != SO_EE_ORIGIN_ZEROCOPY)
				continue;
			z->pending -= (long)(e->ee_data - e->ee_info + 1);
			if (e->ee_code & SO_EE_CODE_ZEROCOPY_COPIED)
				z->copied += (long)(e->ee_data - e->ee_info + 1);
		}
		if (flags == 0)
			return; /* one blocking read per call */
	}
}

/* send() all of [p, p + len), MSG_ZEROCOPY calls counted in @z. */
static void send_all(int s, const char *p, size_t len, int flags, struct zc *z)
{
	while (len) {
		ssize_t n = send(s, p, len, flags);

		if (n < 0 && errno == ENOBUFS && z) { /* too many completions unread */
			zc_drain(s, z, 0);
			continue;
		}
		if (n < 0)
			die("send");
		if (flags & MSG_ZEROCOPY)
			z->pending++;
		p += n;
		len -= (size_t)n;
	}
}

static void send_tcp(int s, int fd, const char *m, size_t size, const char *how, struct zc *z)
{
	char hdr[HDR] = { 0 };
	int pipefd[2] = { -1, -1 }, one = 1;

	if (!strcmp(how, "tcp-splice")) {
		if (pipe(pipefd) || fcntl(pipefd[1], F_SETPIPE_SZ, GRAM) < 0)
			die("pipe");
	}
	if (!strcmp(how, "tcp-zerocopy") && setsockopt(s, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)))
		die("SO_ZEROCOPY");
	for (size_t off = 0; off < size;) {
		size_t len = size - off < GRAM ? size - off : GRAM;

		if (!strcmp(how, "tcp-writev")) {
			struct iovec iov[2] = { { hdr, HDR }, { (void *)(m + off), len } };
			size_t left = HDR + len;

			while (left) {
				ssize_t n = writev(s, iov, 2);

				if (n < 0)
					die("writev");
				left -= (size_t)n;
				for (int i = 0; i < 2 && n; i++) {
					size_t k = (size_t)n < iov[i].iov_len ? (size_t)n : iov[i].iov_len;

					iov[i].iov_base = (char *)iov[i].iov_base + k;
					iov[i].iov_len -= k;
					n -= (ssize_t)k;
				}
			}
		} else if (!strcmp(how, "tcp-sendfile")) {
			off_t o = (off_t)off;

			send_all(s, hdr, HDR, MSG_MORE, NULL);
			for (size_t left = len; left;) {
				ssize_t n = sendfile(s, fd, &o, left);

				if (n <= 0)
					die("sendfile");
				left -= (size_t)n;
			}
		} else if (!strcmp(how, "tcp-splice")) {
			const char *p = m + off;

			send_all(s, hdr, HDR, MSG_MORE, NULL);
			for (size_t left = len; left;) {
				struct iovec iov = { (void *)p, left };
				ssize_t n = vmsplice(pipefd[1], &iov, 1, 0);

				if (n <= 0)
					die("vmsplice");
				for (ssize_t k = n; k;) {
					ssize_t q = splice(pipefd[0], NULL, s, NULL, (size_t)k, SPLICE_F_MORE);

					if (q <= 0)
						die("splice");
					k -= q;
				}
				p += n;
				left -= (size_t)n;
			}
		} else if (!strcmp(how, "tcp-zerocopy")) {
			send_all(s, hdr, HDR, MSG_MORE, NULL);
			send_all(s, m + off, len, MSG_ZEROCOPY, z);
			zc_drain(s, z, MSG_DONTWAIT);
		} else {
			fprintf(stderr, "zctx: unknown method %s\n", how);
			exit(2);
		}
		off += len;
	}
	while (z->pending > 0)
		zc_drain(s, z, 0);
}

static void send_udp(int s, const char *m, size_t size, const char *how, struct zc *z)
{
	int seg = DGRAM, one = 1, flags = 0;

	if (setsockopt(s, SOL_UDP, UDP_SEGMENT, &seg, sizeof(seg)))
		die("UDP_SEGMENT");
	if (!strcmp(how, "udp-zerocopy")) {
		if (setsockopt(s, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)))
			die("SO_ZEROCOPY");
		flags = MSG_ZEROCOPY;
	} else if (strcmp(how, "udp-gso")) {
		fprintf(stderr, "zctx: unknown method %s\n", how);
		exit(2);
	}
	for (size_t off = 0; off < size;) {
		size_t len = size - off < GSO_BYTES ? size - off : GSO_BYTES;
		ssize_t n = send(s, m + off, len, flags);

		if (n < 0 && (errno == ENOBUFS || errno == EAGAIN)) {
			if (flags)
				zc_drain(s, z, MSG_DONTWAIT);
			continue;
		}
		if (n < 0)
			die("send udp");
		if (flags) {
			z->pending++;
			zc_drain(s, z, MSG_DONTWAIT);
		}
		off += (size_t)n;
	}
	while (z->pending > 0)
		zc_drain(s, z, 0);
	send(s, "", 0, 0); /* the empty datagram: end */
}

static int do_send(char **v)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(v[3])) };
	const char *how = v[5];
	int udp = !strncmp(how, "udp", 3);
	int fd = open(v[4], O_RDONLY), s;
	struct zc z = { 0, 0 };
	off_t size;
	char *m;
	double t0, c0;

	if (fd < 0)
		die(v[4]);
	size = lseek(fd, 0, SEEK_END);
	m = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (m == MAP_FAILED)
		die("mmap");
	s = socket(AF_INET, udp ? SOCK_DGRAM : SOCK_STREAM, 0);
	if (inet_pton(AF_INET, v[2], &a.sin_addr) != 1 || connect(s, (void *)&a, sizeof(a)))
		die("connect");
	t0 = now();
	c0 = cpu();
	if (udp) {
		send_udp(s, m, (size_t)size, how, &z);
	} else {
		char x;

		send_tcp(s, fd, m, (size_t)size, how, &z);
		shutdown(s, SHUT_WR);
		if (read(s, &x, 1) < 0) /* the receiver closes once it read all */
			die("read");
	}
	printf("%lld %.4f %.4f %ld\n", (long long)size, now() - t0, cpu() - c0, z.copied);
	return 0;
}

static int do_recv(char **v)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(v[2])) };
	int udp = !strcmp(v[3], "udp"), one = 1, big = 64 << 20;
	int l = socket(AF_INET, udp ? SOCK_DGRAM : SOCK_STREAM, 0), s;
	static char buf[GRAM];
	long long got = 0;
	double t0 = 0, c0 = 0;
	ssize_t n;

	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(l, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
	if (bind(l, (void *)&a, sizeof(a)))
		die("bind");
	if (udp) {
		if (setsockopt(l, SOL_UDP, UDP_GRO, &one, sizeof(one)))
			die("UDP_GRO");
		struct timeval tv = { .tv_sec = 2 }; /* the end datagram may be lost */

		setsockopt(l, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		s = l;
	} else {
		listen(l, 1);
		s = accept(l, NULL, NULL);
		if (s < 0)
			die("accept");
	}
	while ((n = recv(s, buf, sizeof(buf), 0)) > 0) {
		if (!got) {
			t0 = now();
			c0 = cpu();
		}
		got += n;
	}
	if (n < 0 && !(udp && got && (errno == EAGAIN || errno == EWOULDBLOCK)))
		die("recv");
	printf("%lld %.4f %.4f\n", got, now() - t0, cpu() - c0);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 6 && !strcmp(argv[1], "send"))
		return do_send(argv);
	if (argc == 4 && !strcmp(argv[1], "recv"))
		return do_recv(argv);
	fprintf(stderr, "usage: zctx send <ip> <port> <file> <method> | zctx recv <port> <tcp|udp>\n");
	return 2;
}
