// SPDX-License-Identifier: Apache-2.0
/*
 * zcrx: how much of a TCP stream TCP_ZEROCOPY_RECEIVE can map on this host,
 * against plain recv(). Issue 19 named it as a candidate for the payload
 * receiver; bench/zcrx.sh runs this over loopback and veth and prints a table.
 *
 *   zcrx recv PORT copy|zc BYTES       accept one connection, read BYTES
 *   zcrx send ADDR PORT BYTES [FILE]   write BYTES: 256 KiB write()s from a
 *                                      1 GiB buffer, as pfs send does, or
 *                                      sendfile() of FILE (1 GiB or more)
 *
 * The receiver prints one line: bytes, MB/s, the share the kernel mapped,
 * its CPU seconds and MB per CPU-second. It touches one byte per cache line
 * of everything it gets, so mapped bytes are paid for as copied ones are.
 * Not a product tool: nothing in pfs uses it.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define WINDOW (2u << 20) /* the receiver's mapping of the socket */
#define PIECE (256u << 10)
#define SRC_SIZE (1ul << 30)

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static double tv_s(struct timeval t)
{
	return t.tv_sec + t.tv_usec / 1e6;
}

/* One read per cache line; volatile, so the compiler keeps every read. */
static void touch(const volatile uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i += 64)
		(void)p[i];
}

/* One TCP_ZEROCOPY_RECEIVE round: map what whole pages the kernel can,
 * copy what it cannot (up to PIECE) into @buf. The bytes consumed, 0 at
 * the end of the stream, -1 on error; *mapped grows by the mapped part. */
static ssize_t zc_round(int fd, void *map, uint8_t *buf, uint64_t *mapped)
{
	struct tcp_zerocopy_receive z = { .address = (uint64_t)(uintptr_t)map,
					  .length = WINDOW,
					  .copybuf_address = (uint64_t)(uintptr_t)buf,
					  .copybuf_len = PIECE };
	socklen_t zl = sizeof(z);
	ssize_t n = 0;

	if (getsockopt(fd, IPPROTO_TCP, TCP_ZEROCOPY_RECEIVE, &z, &zl))
		return -1;
	*mapped += z.length;
	touch(map, z.length);
	n = z.length;
	if (z.copybuf_len > 0) {
		touch(buf, (size_t)z.copybuf_len);
		n += z.copybuf_len;
	}
	if (n == 0) { /* nothing mapped or copied: wait in recv() */
		n = recv(fd, buf, PIECE, 0);
		if (n > 0)
			touch(buf, (size_t)n);
	}
	return n;
}

static int do_recv(int port, int zc, uint64_t want)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	uint64_t got = 0, mapped = 0;
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1, fd;
	uint8_t *buf = aligned_alloc(4096, PIECE);
	struct rusage ru;
	void *map = NULL;
	double t, cpu;

	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (!buf || bind(l, (void *)&a, sizeof(a)) || listen(l, 1) || (fd = accept(l, 0, 0)) < 0) {
		perror("zcrx recv: listen");
		return 1;
	}
	memset(buf, 0, PIECE);
	if (zc && (map = mmap(NULL, WINDOW, PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		perror("zcrx recv: mmap of the socket");
		return 1;
	}
	t = now();
	while (got < want) {
		ssize_t n = zc ? zc_round(fd, map, buf, &mapped) : recv(fd, buf, PIECE, 0);

		if (n < 0) {
			perror("zcrx recv");
			return 1;
		}
		if (n == 0)
			break;
		if (!zc)
			touch(buf, (size_t)n);
		got += (uint64_t)n;
	}
	t = now() - t;
	getrusage(RUSAGE_SELF, &ru);
	cpu = tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
	printf("%s\t%llu\t%.0f\t%.1f\t%.3f\t%.0f\n", zc ? "zc" : "copy", (unsigned long long)got,
	       got / t / 1e6, got ? 100.0 * mapped / got : 0, cpu, got / 1e6 / cpu);
	return 0;
}

static int send_file(int fd, const char *path, uint64_t want)
{
	int f = open(path, O_RDONLY);
	uint64_t sent = 0;
	off_t off = 0;

	if (f < 0) {
		perror("zcrx send: open");
		return 1;
	}
	while (sent < want) {
		ssize_t n;

		if (off >= (off_t)SRC_SIZE)
			off = 0;
		n = sendfile(fd, f, &off, 1u << 20);
		if (n <= 0) {
			perror("zcrx send: sendfile");
			return 1;
		}
		sent += (uint64_t)n;
	}
	return 0;
}

static int send_mem(int fd, uint64_t want)
{
	uint8_t *b = mmap(NULL, SRC_SIZE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	uint64_t sent = 0;
	size_t off = 0;

	if (b == MAP_FAILED) {
		perror("zcrx send: 1 GiB of 2 MiB pages");
		return 1;
	}
	for (size_t i = 0; i < SRC_SIZE; i += 8)
		*(uint64_t *)(b + i) = i * 0x9e3779b97f4a7c15ull;
	while (sent < want) {
		size_t n = want - sent < PIECE ? want - sent : PIECE;
		ssize_t w;

		if (off >= SRC_SIZE)
			off = 0;
		w = write(fd, b + off, n);
		if (w <= 0) {
			perror("zcrx send: write");
			return 1;
		}
		sent += (uint64_t)w;
		off += (size_t)w;
	}
	return 0;
}

static int do_send(const char *addr, int port, uint64_t want, const char *file)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1, err;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (inet_pton(AF_INET, addr, &a.sin_addr) != 1) {
		fprintf(stderr, "zcrx send: %s is not an IPv4 address\n", addr);
		return 1;
	}
	for (int i = 0; connect(fd, (void *)&a, sizeof(a)); i++) {
		if (i == 50) {
			perror("zcrx send: connect");
			return 1;
		}
		usleep(100000);
	}
	err = file ? send_file(fd, file, want) : send_mem(fd, want);
	close(fd);
	return err;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "recv"))
		return do_recv(atoi(argv[2]), !strcmp(argv[3], "zc"), strtoull(argv[4], NULL, 0));
	if ((argc == 5 || argc == 6) && !strcmp(argv[1], "send"))
		return do_send(argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 0),
			       argc == 6 ? argv[5] : NULL);
	fprintf(stderr, "usage: zcrx recv PORT copy|zc BYTES | zcrx send ADDR PORT BYTES [FILE]\n");
	return 2;
}
