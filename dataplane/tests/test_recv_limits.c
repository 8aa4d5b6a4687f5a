// SPDX-License-Identifier: Apache-2.0
/*
 * What a `pfs recv` does with a sender that does not play fair, over a real
 * veth pair between two network namespaces this test creates (and removes
 * at exit): the receiver is the static pfs in namespace B, the misbehaving
 * senders are hand-made clients forked into namespace A (raw sockets, bytes
 * encoded with the library's own codec), the well-behaved ones `pfs send`.
 * Each test names the limit it checks: the receiver's --max-size, the
 * effective bytes the HELLO announced, the per-gram cap, the handshake and
 * per-gram deadlines, and a silent first connection that must not lock out
 * the real sender. Needs root (netns, veth); otherwise every test SKIPs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pfs/gram.h"
#include "pfs/udp.h"
#include "netns.h"

static int port = 7900;

__attribute__((unused)) static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int t_setup(void)
{
	return netns_setup("l", 217);
}

/* In a child in ns_a: a TCP connection to the receiver (retried while it
 * starts listening), or -1. */
static int raw_connect(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int s = -1;

	if (netns_enter(ns_a))
		return -1;
	inet_pton(AF_INET, ip_b, &sa.sin_addr);
	for (int i = 0; i < 100 && s < 0; i++) {
		s = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(s, (struct sockaddr *)&sa, sizeof(sa))) {
			close(s);
			s = -1;
			usleep(50000);
		}
	}
	return s;
}

/* Bytes of the file @path, or -1. */
static long long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : (long long)st.st_size;
}

/* ---- item: --max-size ---- */

/* A payload HELLO claiming a 1 TiB blob: refused (exit 4) with both numbers
 * and the option named, and --out is not sized to the claim. */
static int t_max_size_hello(void)
{
	char addr[64], out[128];
	char *rargs[] = { "recv", "--listen",  addr, "--mode", "payload", "--accept-timeout",
			  "20",	  "--timeout", "5",  "--out",  out,	  NULL };
	pid_t r, c;
	int rc;

	NEED_NET();
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	snprintf(out, sizeof(out), "%s/huge.out", tmpdir);
	r = spawn(ns_b, "huge", rargs);
	c = fork();
	if (c == 0) {
		struct pfs_ctl h = { .type = PFS_CTL_HELLO,
				     .mode = PFS_MODE_PAYLOAD,
				     .size = 1ULL << 40,
				     .count = 1ULL << 40,
				     .word = 1024 };
		uint8_t rec[PFS_CTL_LEN];
		int s = raw_connect();

		pfs_ctl_encode(&h, rec);
		if (s < 0 || write(s, rec, sizeof(rec)) != sizeof(rec) ||
		    read(s, rec, sizeof(rec)) != sizeof(rec) ||
		    pfs_ctl_decode(rec, sizeof(rec), &h) || h.type != PFS_CTL_REFUSE ||
		    h.word != PFS_REFUSE_LIMIT)
			_exit(3);
		_exit(0);
	}
	CHECK(wait_rc(c, 20) == 0, "the client did not get REFUSE (size limit)");
	rc = wait_rc(r, 20);
	CHECK(rc == 4, "receiver exit %d (want 4): %s", rc, slurp("huge", "err"));
	CHECK(strstr(slurp("huge", "err"), "1099511627776 bytes") &&
		      strstr(slurp("huge", "err"), "68719476736 bytes") &&
		      strstr(slurp("huge", "err"), "--max-size"),
	      "message lacks the claim, the limit or the option: %s", slurp("huge", "err"));
	CHECK(file_size(out) == 0, "--out is %lld bytes (want 0)", file_size(out));
	return TAP_PASS;
}

/* `pfs send` of a 16 MiB blob to a receiver with --max-size 8M, per
 * transport: both refuse (exit 4) and both messages name the two numbers. */
static int max_size_send(const char *transport)
{
	char addr[64], tag[32], rt[48], st[48];
	char *rargs[] = { "recv",
			  "--listen",
			  addr,
			  "--mode",
			  "payload",
			  "--transport",
			  (char *)transport,
			  "--accept-timeout",
			  "20",
			  "--max-size",
			  "8M",
			  NULL };
	char *sargs[] = { "send",
			  "--connect",
			  addr,
			  "--mode",
			  "payload",
			  "--transport",
			  (char *)transport,
			  "--size",
			  "16M",
			  "--page",
			  "4k",
			  NULL };
	int rrc, src;

	NEED_NET();
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	snprintf(tag, sizeof(tag), "maxsz-%s", transport);
	xfer(tag, rargs, sargs, &rrc, &src);
	snprintf(rt, sizeof(rt), "%s-recv", tag);
	snprintf(st, sizeof(st), "%s-send", tag);
	CHECK(rrc == 4 && src == 4, "exit codes recv %d send %d (want 4)", rrc, src);
	CHECK(strstr(slurp(rt, "err"), "16777216 bytes") &&
		      strstr(slurp(rt, "err"), "8388608 bytes") &&
		      strstr(slurp(rt, "err"), "--max-size"),
	      "receiver: %s", slurp(rt, "err"));
	CHECK(strstr(slurp(st, "err"), "16777216 bytes") &&
		      strstr(slurp(st, "err"), "at most 8388608") &&
		      strstr(slurp(st, "err"), "--max-size"),
	      "sender: %s", slurp(st, "err"));
	return TAP_PASS;
}

static int t_max_size_tcp(void)
{
	return max_size_send("tcp");
}

static int t_max_size_udp(void)
{
	return max_size_send("udp");
}

static int t_teardown(void)
{
	NEED_NET();
	CHECK(sh("ip netns del %s && ip netns del %s", ns_a, ns_b) == 0, "netns del");
	ns_a[0] = '\0';
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "create two netns joined by a veth pair", t_setup },
	{ "payload HELLO claiming 1 TiB: REFUSE (limit), both numbers named, --out not sized",
	  t_max_size_hello },
	{ "tcp: pfs send over --max-size: both sides exit 4 naming both numbers", t_max_size_tcp },
	{ "udp: pfs send over --max-size: both sides exit 4 naming both numbers", t_max_size_udp },
	{ "remove the namespaces and veth", t_teardown },
};

TAP_MAIN(tests)
