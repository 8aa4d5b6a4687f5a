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
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pfs/blob.h"
#include "pfs/gram.h"
#include "pfs/udp.h"
#include "dgram_client.h"
#include "netns.h"

static int port = 7900;

static double mono(void)
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
	return netns_connect_b((uint16_t)port);
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

/* One `pfs send` to a `pfs recv` that must refuse it over a limit: both
 * exit 4 and each one's log names every string of its NULL-terminated
 * list (the two numbers and the option). */
static int both_refused(const char *tag, char *const rargs[], char *const sargs[],
			const char *const rwant[], const char *const swant[])
{
	char rt[48], st[48];
	int rrc, src;

	xfer(tag, rargs, sargs, &rrc, &src);
	snprintf(rt, sizeof(rt), "%s-recv", tag);
	snprintf(st, sizeof(st), "%s-send", tag);
	CHECK(rrc == 4 && src == 4, "exit codes recv %d send %d (want 4)", rrc, src);
	for (int i = 0; rwant[i]; i++)
		CHECK(strstr(slurp(rt, "err"), rwant[i]), "receiver lacks '%s': %s", rwant[i],
		      slurp(rt, "err"));
	for (int i = 0; swant[i]; i++)
		CHECK(strstr(slurp(st, "err"), swant[i]), "sender lacks '%s': %s", swant[i],
		      slurp(st, "err"));
	return TAP_PASS;
}

/* `pfs send` of a 16 MiB blob to a receiver with --max-size 8M, per
 * transport: both refuse (exit 4) and both messages name the two numbers. */
static int max_size_send(const char *transport)
{
	char addr[64], tag[32];
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
	static const char *const rwant[] = { "16777216 bytes", "8388608 bytes", "--max-size",
					     NULL };
	static const char *const swant[] = { "16777216 bytes", "at most 8388608", "--max-size",
					     NULL };

	NEED_NET();
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	snprintf(tag, sizeof(tag), "maxsz-%s", transport);
	return both_refused(tag, rargs, sargs, rwant, swant);
}

static int t_max_size_tcp(void)
{
	return max_size_send("tcp");
}

static int t_max_size_udp(void)
{
	return max_size_send("udp");
}

/* ---- item: --max-work ---- */

/* A hostile HELLO naming no real blob and announcing 1 TiB of offset-mode
 * work (the amplification: a few bytes on the wire, hours of
 * hashing): refused before anything else is judged, REFUSE.count the bound,
 * receiver exit 4 naming both numbers and the option. */
static int t_max_work_hello(void)
{
	char addr[64];
	char *rargs[] = { "recv", "--listen",	      addr, "--mode",	 "offset", "--size",
			  "8M",	  "--page",	      "4k", "--fill",	 "zero",   "--max-work",
			  "256M", "--accept-timeout", "20", "--timeout", "5",	   NULL };
	pid_t r, c;
	int rc;

	NEED_NET();
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	r = spawn(ns_b, "work", rargs);
	c = fork();
	if (c == 0) {
		struct pfs_ctl h = { .type = PFS_CTL_HELLO,
				     .mode = PFS_MODE_OFFSET,
				     .size = 1ULL << 30,
				     .value = 0x5eed,
				     .count = 1ULL << 40,
				     .word = PFS_GRAM_MAX_DESC };
		uint8_t rec[PFS_CTL_LEN];
		int s = raw_connect();

		pfs_ctl_encode(&h, rec);
		if (s < 0 || write(s, rec, sizeof(rec)) != sizeof(rec) ||
		    read(s, rec, sizeof(rec)) != sizeof(rec) ||
		    pfs_ctl_decode(rec, sizeof(rec), &h) || h.type != PFS_CTL_REFUSE ||
		    h.word != PFS_REFUSE_WORK || h.count != 256ULL << 20)
			_exit(3);
		_exit(0);
	}
	CHECK(wait_rc(c, 20) == 0, "the client did not get REFUSE (work) carrying the bound");
	rc = wait_rc(r, 20);
	CHECK(rc == 4, "receiver exit %d (want 4): %s", rc, slurp("work", "err"));
	CHECK(strstr(slurp("work", "err"), "1099511627776 effective bytes") &&
		      strstr(slurp("work", "err"), "268435456 bytes") &&
		      strstr(slurp("work", "err"), "--max-work"),
	      "message lacks the claim, the bound or the option: %s", slurp("work", "err"));
	return TAP_PASS;
}

/* `pfs send` in offset mode planning 512 MiB to a receiver with
 * --max-work 256M, per transport: both exit 4 naming both numbers; then
 * 256 MiB, exactly the bound, succeeds with integrity OK. */
static int max_work_send(const char *transport)
{
	char addr[64], tag[32], rt[48], bytes[16] = "512M";
	char *rargs[] = { "recv",
			  "--listen",
			  addr,
			  "--mode",
			  "offset",
			  "--size",
			  "8M",
			  "--page",
			  "4k",
			  "--fill",
			  "zero",
			  "--transport",
			  (char *)transport,
			  "--max-work",
			  "256M",
			  "--accept-timeout",
			  "20",
			  NULL };
	char *sargs[] = { "send",
			  "--connect",
			  addr,
			  "--mode",
			  "offset",
			  "--size",
			  "8M",
			  "--page",
			  "4k",
			  "--fill",
			  "zero",
			  "--transport",
			  (char *)transport,
			  "--bytes",
			  bytes,
			  NULL };
	static const char *const rwant[] = { "536870912 effective bytes", "268435456 bytes",
					     "--max-work", NULL };
	static const char *const swant[] = { "plans 536870912", "at most 268435456", "--max-work",
					     NULL };
	int rrc, src;

	NEED_NET();
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	snprintf(tag, sizeof(tag), "maxwork-%s", transport);
	if (both_refused(tag, rargs, sargs, rwant, swant) != TAP_PASS)
		return TAP_FAIL;

	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	snprintf(bytes, sizeof(bytes), "256M");
	snprintf(tag, sizeof(tag), "maxwork-ok-%s", transport);
	xfer(tag, rargs, sargs, &rrc, &src);
	snprintf(rt, sizeof(rt), "%s-recv", tag);
	CHECK(rrc == 0 && src == 0, "at the bound: exit codes recv %d send %d (want 0): %s", rrc,
	      src, slurp(rt, "err"));
	CHECK(strstr(slurp(rt, "json"), "\"integrity\":\"OK\""), "at the bound: %s",
	      slurp(rt, "json"));
	return TAP_PASS;
}

static int t_max_work_tcp(void)
{
	return max_work_send("tcp");
}

static int t_max_work_udp(void)
{
	return max_work_send("udp");
}

/* ---- item: --token-file (a stranger's HELLO does not end the transfer) ---- */

/* tmpdir/@name holding @token; its path in @path. */
static int token_file(const char *name, const char *token, char *path, size_t n)
{
	FILE *f;

	snprintf(path, n, "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "%s\n", token);
	return fclose(f);
}

/* A receiver with the transfer's token, per transport: first a stranger
 * that answers the CHALLENGE with a HELLO of another protocol version (which
 * without a token would make the receiver refuse and exit), then `pfs send`
 * with another token: both are dropped, counted and logged, the receiver
 * keeps waiting, and the real sender (the same token) then succeeds with
 * integrity OK; the receiver's JSON counts the two drops. */
static int token_strangers(const char *transport)
{
	char addr[64], good[128], bad[128], tag[32], rt[48];
	char *rargs[] = { "recv",
			  "--listen",
			  addr,
			  "--mode",
			  "offset",
			  "--size",
			  "8M",
			  "--page",
			  "4k",
			  "--fill",
			  "zero",
			  "--transport",
			  (char *)transport,
			  "--token-file",
			  good,
			  "--accept-timeout",
			  "30",
			  NULL };
	char *sargs[] = { "send",
			  "--connect",
			  addr,
			  "--mode",
			  "offset",
			  "--size",
			  "8M",
			  "--page",
			  "4k",
			  "--fill",
			  "zero",
			  "--transport",
			  (char *)transport,
			  "--bytes",
			  "32M",
			  "--token-file",
			  bad,
			  NULL };
	pid_t r, c, s;
	int rc;

	NEED_NET();
	CHECK(!token_file("token-good", "the-transfer-token-0123456789abcdef", good,
			  sizeof(good)) &&
		      !token_file("token-bad", "another-token-0123456789abcdefghij", bad,
				  sizeof(bad)),
	      "cannot write the token files");
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	snprintf(tag, sizeof(tag), "tok-%s", transport);
	snprintf(rt, sizeof(rt), "%s-recv", tag);
	r = spawn(ns_b, rt, rargs);
	c = fork();
	if (c == 0) {
		struct pfs_ctl h = { .type = PFS_CTL_HELLO, .mode = PFS_MODE_OFFSET };
		uint8_t rec[2 * PFS_CTL_LEN];
		int s = raw_connect();

		/* The CHALLENGE, then a HELLO of the next protocol version and
		 * no AUTH worth the name. */
		if (s < 0 || read(s, rec, PFS_CTL_LEN) != PFS_CTL_LEN ||
		    pfs_ctl_decode(rec, PFS_CTL_LEN, &h) || h.type != PFS_CTL_CHALLENGE)
			_exit(3);
		h = (struct pfs_ctl){ .type = PFS_CTL_HELLO, .mode = PFS_MODE_OFFSET, .size = 1 };
		pfs_ctl_encode(&h, rec);
		rec[4]++; /* the version byte; the CRC no longer matches either */
		h = (struct pfs_ctl){ .type = PFS_CTL_AUTH, .size = 1, .value = 2, .count = 3 };
		pfs_ctl_encode(&h, rec + PFS_CTL_LEN);
		if (write(s, rec, sizeof(rec)) != sizeof(rec))
			_exit(4);
		/* Dropped: the receiver closes, never answers. */
		_exit(read(s, rec, 1) == 0 ? 0 : 5);
	}
	CHECK(wait_rc(c, 20) == 0, "the stranger was not dropped without an answer");
	s = spawn(ns_a, "tok-bad", sargs);
	rc = wait_rc(s, 30);
	CHECK(rc != 0, "a sender with another token succeeded: %s", slurp("tok-bad", "json"));
	CHECK(!waitpid(r, NULL, WNOHANG), "the receiver ended after the strangers: %s",
	      slurp(rt, "err"));
	sargs[sizeof(sargs) / sizeof(sargs[0]) - 2] = good;
	s = spawn(ns_a, "tok-good", sargs);
	rc = wait_rc(s, 30);
	CHECK(rc == 0, "the real sender: exit %d: %s", rc, slurp("tok-good", "err"));
	rc = wait_rc(r, 30);
	CHECK(rc == 0, "the receiver: exit %d: %s", rc, slurp(rt, "err"));
	CHECK(strstr(slurp(rt, "json"), "\"integrity\":\"OK\"") &&
		      strstr(slurp(rt, "json"), "\"dropped_connections\":2"),
	      "receiver: %s", slurp(rt, "json"));
	CHECK(strstr(slurp(rt, "err"), "not authenticated: its AUTH does not verify"),
	      "the drops are not logged: %s", slurp(rt, "err"));
	return TAP_PASS;
}

static int t_token_tcp(void)
{
	return token_strangers("tcp");
}

static int t_token_udp(void)
{
	return token_strangers("udp");
}

/* ---- item: work bounded by what was agreed ---- */

#define BLOB_SIZE (64ULL << 20)

/* The fingerprint of the receivers' blob: --size 64M --fill zero. */
static uint64_t zero_blob_fp(void)
{
	static uint64_t fp;
	uint8_t *z;

	if (fp)
		return fp;
	z = calloc(1, BLOB_SIZE);
	if (z)
		fp = pfs_fingerprint_mem(z, BLOB_SIZE);
	free(z);
	return fp;
}

/* In a child: an offset-mode gram 0 of @n descriptors of @len bytes at
 * offset 0 into @g (cap bytes); its length or -1. */
static ssize_t offset_gram(uint32_t n, uint32_t len, uint8_t *g, size_t cap)
{
	struct pfs_desc *d = calloc(n, sizeof(*d));
	ssize_t gl;

	if (!d)
		return -1;
	for (uint32_t i = 0; i < n; i++)
		d[i].len = len;
	gl = pfs_gram_encode(PFS_MODE_OFFSET, 0, d, n, g, cap);
	free(d);
	return gl;
}

/* In a child: HELLO for the receivers' blob announcing @planned bytes; udp:
 * + PARAMS and KEY through @dc (its data socket connected), the datagram
 * key agreed. 0 on ACCEPT. */
static int hello_accepted(int s, struct dclient *dc, uint64_t planned)
{
	struct pfs_ctl h = { .type = PFS_CTL_HELLO,
			     .mode = PFS_MODE_OFFSET,
			     .size = BLOB_SIZE,
			     .value = zero_blob_fp(),
			     .count = planned,
			     .word = PFS_GRAM_MAX_DESC };
	struct pfs_udp_rec p = { .a = 1u << 20, .d = 1440, .e = 32 };
	uint8_t rec[PFS_CTL_LEN];

	if (dc) {
		dc->s = s;
		return dclient_handshake(dc, &h, &p, NULL) ? -1 : 0;
	}
	pfs_ctl_encode(&h, rec);
	if (write(s, rec, PFS_CTL_LEN) != PFS_CTL_LEN || read(s, rec, PFS_CTL_LEN) != PFS_CTL_LEN ||
	    pfs_ctl_decode(rec, PFS_CTL_LEN, &h) || h.type != PFS_CTL_ACCEPT)
		return -1;
	return 0;
}

/* A hand-made sender of one offset gram of @n x @len bytes after a HELLO
 * announcing @planned: the receiver (--timeout 4) must reject it, count it,
 * say @want, exit 1 and drop the connection, well within its timeout. */
static int bad_gram(const char *transport, uint32_t n, uint32_t len, uint64_t planned,
		    const char *want)
{
	bool udp = !strcmp(transport, "udp");
	char addr[64];
	char *rargs[] = { "recv",
			  "--listen",
			  addr,
			  "--mode",
			  "offset",
			  "--size",
			  "64M",
			  "--page",
			  "4k",
			  "--fill",
			  "zero",
			  "--transport",
			  (char *)transport,
			  "--timeout",
			  "4",
			  "--accept-timeout",
			  "20",
			  NULL };
	double t0;
	pid_t r, c;
	int rc;

	NEED_NET();
	CHECK(zero_blob_fp(), "no memory for the blob's fingerprint");
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	r = spawn(ns_b, "badgram", rargs);
	t0 = mono();
	c = fork();
	if (c == 0) {
		size_t cap = PFS_GRAM_HDR_LEN + pfs_gram_desc_len_max(PFS_MODE_OFFSET, n);
		uint8_t *g = malloc(cap), dg[PFS_UDP_FRAG_LEN + 1440];
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
		struct dclient dc = { .u = -1 };
		ssize_t gl;
		int s = raw_connect();

		if (s < 0 || !g || (gl = offset_gram(n, len, g, cap)) < 0)
			_exit(2);
		if (udp) {
			inet_pton(AF_INET, ip_b, &sa.sin_addr);
			dc.u = socket(AF_INET, SOCK_DGRAM, 0);
			if (connect(dc.u, (struct sockaddr *)&sa, sizeof(sa)))
				_exit(3);
		}
		if (hello_accepted(s, udp ? &dc : NULL, planned))
			_exit(4);
		if (!udp && write(s, g, gl) != gl)
			_exit(5);
		for (uint32_t off = 0; udp && off < gl; off += 1440) {
			struct pfs_udp_frag f = { .frag_len = gl - off < 1440 ? gl - off : 1440,
						  .gram_len = (uint32_t)gl,
						  .frag_off = off };

			dclient_frag(&dc, &f, g + off, true);
			if (off / 1440 % 32 == 31)
				usleep(1000); /* no socket overflow: nobody repairs */
		}
		/* The receiver closes the connection when it drops us. */
		while (read(s, dg, sizeof(dg)) > 0)
			;
		_exit(0);
	}
	rc = wait_rc(r, 20);
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	tap_diag("%s: rejected after %.2f s: %.160s", transport, mono() - t0,
		 strstr(slurp("badgram", "err"), "recv: gram") ?: slurp("badgram", "err"));
	CHECK(rc == 1, "receiver exit %d (want 1): %s", rc, slurp("badgram", "err"));
	CHECK(mono() - t0 < 4, "took %.1f s, over the receiver's --timeout 4", mono() - t0);
	CHECK(strstr(slurp("badgram", "err"), want), "message lacks '%s': %s", want,
	      slurp("badgram", "err"));
	CHECK(strstr(slurp("badgram", "json"), "\"decode_errors\":1"), "not counted: %s",
	      slurp("badgram", "json"));
	return TAP_PASS;
}

/* The gram: 65536 descriptors of 64 MiB (786 KB on the wire, 4 TiB
 * to hash), announced honestly: over the per-gram cap. */
static int t_gram_cap_tcp(void)
{
	return bad_gram("tcp", PFS_GRAM_MAX_DESC, 64u << 20, 1ULL << 42, "over the limit");
}

static int t_gram_cap_udp(void)
{
	return bad_gram("udp", PFS_GRAM_MAX_DESC, 64u << 20, 1ULL << 42, "over the limit");
}

/* Within the cap, but past what the HELLO announced (1 MiB). */
static int t_planned_tcp(void)
{
	return bad_gram("tcp", 4, 1u << 20, 1u << 20, "past the 1048576 effective bytes");
}

static int t_planned_udp(void)
{
	return bad_gram("udp", 4, 1u << 20, 1u << 20, "past the 1048576 effective bytes");
}

/* ---- item: deadlines, not per-recv() timeouts ---- */

/* In a child: write @len bytes of @b one a second until @max_s have passed
 * or the receiver closes; exit with the seconds until it closed (255: it
 * never did). */
static void trickle(int s, const uint8_t *b, size_t len, int max_s)
{
	double t0 = mono();

	signal(SIGPIPE, SIG_IGN);
	for (size_t i = 0; i < len && mono() - t0 < max_s; i++) {
		struct timeval tv = { .tv_sec = 1 };
		uint8_t c;

		if (write(s, b + i, 1) != 1)
			_exit((int)(mono() - t0 + 0.5));
		/* A second's wait that also sees the receiver close. */
		setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (read(s, &c, 1) == 0)
			_exit((int)(mono() - t0 + 0.5));
	}
	_exit(255);
}

/* A client sends its HELLO (udp: HELLO + PARAMS) a byte a second to a
 * receiver with --timeout 3: it is dropped after 3 s, said so, and the
 * receiver goes on accepting: a real `pfs send` then succeeds. */
static int trickle_hello(const char *transport)
{
	bool udp = !strcmp(transport, "udp");
	char addr[64], tag[32], rt[48], st[48];
	char *rargs[] = { "recv",
			  "--listen",
			  addr,
			  "--mode",
			  "payload",
			  "--transport",
			  (char *)transport,
			  "--timeout",
			  "3",
			  "--accept-timeout",
			  "30",
			  NULL };
	char *sargs[] = { "send",
			  "--connect",
			  addr,
			  "--mode",
			  "payload",
			  "--transport",
			  (char *)transport,
			  "--size",
			  "8M",
			  "--page",
			  "4k",
			  NULL };
	pid_t r, c, s;
	int rc, crc, src;

	NEED_NET();
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	snprintf(tag, sizeof(tag), "trickle-%s", transport);
	snprintf(rt, sizeof(rt), "%s-recv", tag);
	snprintf(st, sizeof(st), "%s-send", tag);
	r = spawn(ns_b, rt, rargs);
	c = fork();
	if (c == 0) {
		struct pfs_ctl h = { .type = PFS_CTL_HELLO,
				     .mode = PFS_MODE_PAYLOAD,
				     .size = 1 << 20,
				     .count = 1 << 20,
				     .word = 1 };
		struct pfs_udp_rec p = {
			.type = PFS_UDP_PARAMS, .a = 1u << 20, .b = 9, .d = 1440, .e = 32
		};
		uint8_t rec[PFS_CTL_LEN + PFS_UDP_REC_LEN];
		int fd = raw_connect();

		pfs_ctl_encode(&h, rec);
		pfs_udp_rec_encode(&p, NULL, rec + PFS_CTL_LEN);
		if (fd < 0)
			_exit(254);
		trickle(fd, rec, udp ? sizeof(rec) : PFS_CTL_LEN, 10);
	}
	crc = wait_rc(c, 20);
	s = spawn(ns_a, st, sargs);
	src = wait_rc(s, 30);
	rc = wait_rc(r, 30);
	tap_diag("%s: the trickling client was dropped after %d s", transport, crc);
	CHECK(crc >= 2 && crc <= 4, "dropped after %d s (want 3 +- 1; 255: never)", crc);
	CHECK(strstr(slurp(rt, "err"), "no complete HELLO within 3.0 s"), "no message: %s",
	      slurp(rt, "err"));
	CHECK(rc == 0 && src == 0, "the real transfer: recv %d send %d: %s", rc, src,
	      slurp(rt, "err"));
	CHECK(strstr(slurp(rt, "json"), "\"integrity\":\"OK\""), "receiver: %s", slurp(rt, "json"));
	return TAP_PASS;
}

static int t_trickle_hello_tcp(void)
{
	return trickle_hello("tcp");
}

static int t_trickle_hello_udp(void)
{
	return trickle_hello("udp");
}

/* A valid HELLO, then a gram header a byte a second: the receiver (exit 5)
 * gives up 3 s after the HELLO, saying the gram did not arrive whole. */
static int t_trickle_gram_tcp(void)
{
	char addr[64];
	char *rargs[] = { "recv", "--listen",	      addr, "--mode", "payload", "--timeout",
			  "3",	  "--accept-timeout", "20", NULL };
	pid_t r, c;
	int rc, crc;

	NEED_NET();
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	r = spawn(ns_b, "tricklegram", rargs);
	c = fork();
	if (c == 0) {
		struct pfs_ctl h = { .type = PFS_CTL_HELLO,
				     .mode = PFS_MODE_PAYLOAD,
				     .size = 1 << 20,
				     .count = 100,
				     .word = 1 };
		struct pfs_desc d = { .len = 100 };
		uint8_t rec[PFS_CTL_LEN], g[256];
		int fd = raw_connect();
		ssize_t gl = pfs_gram_encode(PFS_MODE_PAYLOAD, 0, &d, 1, g, sizeof(g));

		pfs_ctl_encode(&h, rec);
		if (fd < 0 || gl < 0 || write(fd, rec, sizeof(rec)) != sizeof(rec) ||
		    read(fd, rec, sizeof(rec)) != sizeof(rec))
			_exit(254);
		trickle(fd, g, (size_t)gl, 10);
	}
	crc = wait_rc(c, 20);
	rc = wait_rc(r, 20);
	tap_diag("the trickling sender was dropped after %d s", crc);
	CHECK(rc == 5, "receiver exit %d (want 5): %s", rc, slurp("tricklegram", "err"));
	CHECK(crc >= 2 && crc <= 4, "dropped after %d s (want 3 +- 1; 255: never)", crc);
	CHECK(strstr(slurp("tricklegram", "err"), "gram 0") &&
		      strstr(slurp("tricklegram", "err"), "not complete within 3.0 s"),
	      "message: %s", slurp("tricklegram", "err"));
	return TAP_PASS;
}

/* A connection that says nothing, then the real sender at once: the
 * transfer succeeds without waiting for the silent one's deadline. */
static int silent_first(const char *transport)
{
	char addr[64], tag[32], rt[48], st[48];
	char *rargs[] = { "recv",
			  "--listen",
			  addr,
			  "--mode",
			  "payload",
			  "--transport",
			  (char *)transport,
			  "--timeout",
			  "20",
			  "--accept-timeout",
			  "30",
			  NULL };
	char *sargs[] = { "send",
			  "--connect",
			  addr,
			  "--mode",
			  "payload",
			  "--transport",
			  (char *)transport,
			  "--size",
			  "8M",
			  "--page",
			  "4k",
			  NULL };
	double t0;
	pid_t r, c, s;
	int rc, src;

	NEED_NET();
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	snprintf(tag, sizeof(tag), "silent-%s", transport);
	snprintf(rt, sizeof(rt), "%s-recv", tag);
	snprintf(st, sizeof(st), "%s-send", tag);
	r = spawn(ns_b, rt, rargs);
	c = fork();
	if (c == 0) {
		int fd = raw_connect();

		sleep(25); /* connected, silent */
		_exit(fd < 0 ? 1 : 0);
	}
	usleep(500000); /* the silent one first */
	t0 = mono();
	s = spawn(ns_a, st, sargs);
	src = wait_rc(s, 30);
	rc = wait_rc(r, 30);
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	CHECK(rc == 0 && src == 0, "recv %d send %d: %s", rc, src, slurp(rt, "err"));
	CHECK(mono() - t0 < 10, "took %.1f s (the receiver waited for the silent one)",
	      mono() - t0);
	CHECK(strstr(slurp(rt, "json"), "\"integrity\":\"OK\""), "receiver: %s", slurp(rt, "json"));
	return TAP_PASS;
}

static int t_silent_first_tcp(void)
{
	return silent_first("tcp");
}

static int t_silent_first_udp(void)
{
	return silent_first("udp");
}

static const struct tap_test tests[] = {
	{ "create two netns joined by a veth pair", t_setup, .setup = true },
	{ "payload HELLO claiming 1 TiB: REFUSE (limit), both numbers named, --out not sized",
	  t_max_size_hello },
	{ "tcp: pfs send over --max-size: both sides exit 4 naming both numbers", t_max_size_tcp },
	{ "udp: pfs send over --max-size: both sides exit 4 naming both numbers", t_max_size_udp },
	{ "offset HELLO announcing 1 TiB of work: REFUSE (work) carrying --max-work, exit 4",
	  t_max_work_hello },
	{ "tcp: pfs send over --max-work: both exit 4 naming both numbers; at the bound OK",
	  t_max_work_tcp },
	{ "udp: pfs send over --max-work: both exit 4 naming both numbers; at the bound OK",
	  t_max_work_udp },
	{ "tcp, --token-file: a stranger's HELLO and another token are dropped, counted, logged; "
	  "the real sender then succeeds",
	  t_token_tcp },
	{ "udp, --token-file: a stranger's HELLO and another token are dropped, counted, logged; "
	  "the real sender then succeeds",
	  t_token_udp },
	{ "tcp: a gram of 65536 x 64 MiB is rejected (cap), counted, logged, within --timeout",
	  t_gram_cap_tcp },
	{ "udp: a gram of 65536 x 64 MiB is rejected (cap), counted, logged, within --timeout",
	  t_gram_cap_udp },
	{ "tcp: a gram past the HELLO's planned bytes is rejected, counted, logged",
	  t_planned_tcp },
	{ "udp: a gram past the HELLO's planned bytes is rejected, counted, logged",
	  t_planned_udp },
	{ "tcp: a HELLO at 1 byte/s is dropped at --timeout, said so; the real sender then succeeds",
	  t_trickle_hello_tcp },
	{ "udp: HELLO+PARAMS at 1 byte/s dropped at --timeout, said so; the real sender succeeds",
	  t_trickle_hello_udp },
	{ "tcp: a gram header at 1 byte/s ends the transfer at --timeout (exit 5), said so",
	  t_trickle_gram_tcp },
	{ "tcp: a silent first connection does not lock out the real sender", t_silent_first_tcp },
	{ "udp: a silent first connection does not lock out the real sender", t_silent_first_udp },
	{ "remove the namespaces and veth", netns_remove, .setup = true },
};

TAP_MAIN(tests)
