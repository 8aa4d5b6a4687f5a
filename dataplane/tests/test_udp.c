// SPDX-License-Identifier: Apache-2.0
/*
 * UDP transport end to end over a real veth pair between two network
 * namespaces this test creates and removes (tests/netns.h): `pfs recv
 * --transport udp` in namespace B, `pfs send --transport udp` in A.
 *
 * The path from A to B (data and A's half of the control connection) is
 * impaired by tests/impair.h: tc netem when the kernel has sch_netem, else
 * netfilter (iptables statistic DROP, TEE, an NFQUEUE delay holder), both
 * acting on real packets; nothing is mocked. Without either the impaired
 * cases SKIP with the reason.
 *
 * Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN); otherwise every test SKIPs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "pfs/blob.h"
#include "pfs/gram.h"
#include "pfs/integrity.h"
#include "pfs/udp.h"
#include "dgram_client.h"
#include "impair.h"
#include "netns.h"

static int port = 7700;
static const struct impair imp_clean = { "0% loss", "delay 0ms", .loss = 0 };
static const struct impair imp_loss1 = { "1% loss", "loss 1%", .loss = 0.01 };
static const struct impair imp_loss5 = { "5% loss", "loss 5%", .loss = 0.05 };
static const struct impair imp_reorder = { "25% reordering", "delay 1ms reorder 75% 50%",
					   .reorder = 0.25, .reorder_us = 1000 };
static const struct impair imp_dup = { "1% duplication", "duplicate 1%", .dup = 0.01 };
static const struct impair imp_delay = { "1% loss + 10 ms delay", "loss 1% delay 10ms",
					 .loss = 0.01, .delay_us = 10000 };

/* ---- wire codec (no network) ---- */

static int t_frag_codec(void)
{
	struct pfs_udp_frag f = { .flags = PFS_UDP_F_REPAIR,
				  .frag_len = 100,
				  .seq = 1ULL << 40,
				  .gram_len = 1540,
				  .frag_off = 1440,
				  .tsval = 0xdeadbeef,
				  .pn = 0x0123456789abcdefULL },
			    g;
	uint8_t b[PFS_UDP_FRAG_LEN + 100];

	pfs_udp_frag_encode(&f, b);
	CHECK(!pfs_udp_frag_decode(b, sizeof(b), &g), "round trip");
	CHECK(g.flags == f.flags && g.frag_len == 100 && g.seq == f.seq && g.gram_len == 1540 &&
		      g.frag_off == 1440 && g.tsval == 0xdeadbeef && g.pn == f.pn,
	      "fields");
	CHECK(pfs_udp_frag_decode(b, PFS_UDP_FRAG_LEN - 1, &g) == -EMSGSIZE, "short");
	CHECK(pfs_udp_frag_decode(b, sizeof(b) - 1, &g) == -EMSGSIZE, "frag_len != length");
	b[4] = 1; /* a version 1 datagram: no tag, from a pfs before authentication */
	CHECK(pfs_udp_frag_decode(b, sizeof(b), &g) == -EPROTONOSUPPORT, "version 1");
	b[4] = PFS_UDP_FRAG_VERSION;
	b[0] ^= 1;
	CHECK(pfs_udp_frag_decode(b, sizeof(b), &g) == -EBADMSG, "magic");
	f.flags = 0x80;
	pfs_udp_frag_encode(&f, b);
	CHECK(pfs_udp_frag_decode(b, sizeof(b), &g) == -EPROTO, "unknown flag");
	f.flags = 0;
	f.frag_off = 1500; /* 1500 + 100 > 1540 */
	pfs_udp_frag_encode(&f, b);
	CHECK(pfs_udp_frag_decode(b, sizeof(b), &g) == -ERANGE, "outside the gram");
	f.frag_off = 0xffffffc0u; /* no wrap-around: 63 bytes left, 100 claimed */
	f.gram_len = 0xffffffffu;
	pfs_udp_frag_encode(&f, b);
	CHECK(pfs_udp_frag_decode(b, sizeof(b), &g) == -ERANGE, "offset + length past 2^32");
	return TAP_PASS;
}

static int t_rec_codec(void)
{
	struct pfs_udp_range rg[3] = { { 0, 1 }, { 7, 44 }, { 0, PFS_UDP_WHOLE_GRAM } }, out[3];
	struct pfs_udp_rec r = { .type = PFS_UDP_NAK, .n = 3, .a = 12345 }, q;
	uint8_t b[PFS_UDP_REC_LEN + 8 * PFS_UDP_MAX_RANGES + 8];
	int len = pfs_udp_rec_encode(&r, rg, b);

	CHECK(len == PFS_UDP_REC_LEN + 24, "length %d", len);
	CHECK(!pfs_udp_rec_decode_hdr(b, len, &q) && q.type == PFS_UDP_NAK && q.n == 3 &&
		      q.a == 12345,
	      "header");
	CHECK(!pfs_udp_rec_decode_ranges(b, len, &q, out) && out[1].first == 7 &&
		      out[1].count == 44 && out[2].count == PFS_UDP_WHOLE_GRAM,
	      "ranges");
	CHECK(pfs_udp_rec_decode_ranges(b, len - 1, &q, out) == -EMSGSIZE, "truncated ranges");
	b[PFS_UDP_REC_LEN + 3] ^= 1;
	CHECK(pfs_udp_rec_decode_ranges(b, len, &q, out) == -EILSEQ, "range crc");
	b[4] = 9;
	CHECK(pfs_udp_rec_decode_hdr(b, len, &q) == -EILSEQ, "header crc first");
	r = (struct pfs_udp_rec){ .type = PFS_UDP_ACK, .a = 1, .b = 2, .c = 3, .d = 4, .e = 5 };
	len = pfs_udp_rec_encode(&r, NULL, b);
	CHECK(len == PFS_UDP_REC_LEN && !pfs_udp_rec_decode_hdr(b, len, &q) && q.c == 3 && q.e == 5,
	      "ack");
	r.n = PFS_UDP_MAX_RANGES + 1;
	CHECK(pfs_udp_rec_encode(&r, NULL, b) == -E2BIG, "too many ranges");
	return TAP_PASS;
}

static int t_setup(void)
{
	int rc = netns_setup("u", 215);

	if (rc != TAP_PASS)
		return rc;
	tap_diag("%s", impair_probe());
	return TAP_PASS;
}

/* Fingerprint of a file, as a "0x%016llx" string, or "" on error. */
static const char *file_fp(const char *path)
{
	static char out[32];
	struct stat st;
	int fd = open(path, O_RDONLY);
	void *m;

	out[0] = '\0';
	if (fd < 0 || fstat(fd, &st) || !st.st_size) {
		if (fd >= 0)
			close(fd);
		return out;
	}
	m = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (m != MAP_FAILED) {
		snprintf(out, sizeof(out), "0x%016llx",
			 (unsigned long long)pfs_fingerprint_mem(m, st.st_size));
		munmap(m, st.st_size);
	}
	close(fd);
	return out;
}

static unsigned long long json_u64(const char *j, const char *key)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), "\"%s\":", key);
	p = strstr(j, k);
	return p ? strtoull(p + strlen(k), NULL, 10) : 0;
}

/* One transfer of @mode across impairment @im; integrity OK on both ends. */
static int udp_case(const struct impair *im, const char *mode)
{
	char addr[64], tag[32], out[128], rt[48], st[48];
	bool payload = !strcmp(mode, "payload");
	int rrc, src;
	const char *rj, *sj;

	NEED_NET();
	if (backend == IMP_NONE && im != &imp_clean)
		return tap_skip("%s", imp_skip);
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	snprintf(tag, sizeof(tag), "%s-%d", mode, port);
	snprintf(out, sizeof(out), "%s/%s.out", tmpdir, tag);
	CHECK(!impair_apply(im), "cannot apply impairment %s", im->name);
	{
		char *rargs[] = { "recv",	"--transport",
				  "udp",	"--listen",
				  addr,		"--mode",
				  (char *)mode, "--size",
				  "64M",	"--page",
				  "4k",		"--seed",
				  "7",		"--accept-timeout",
				  "30",		"--timeout",
				  "10",		payload ? "--out" : NULL,
				  out,		NULL };
		char *sargs[] = { "send",	"--transport",
				  "udp",	"--connect",
				  addr,		"--mode",
				  (char *)mode, "--size",
				  "64M",	"--page",
				  "4k",		"--seed",
				  "7",		"--bytes",
				  "64M",	"--timeout",
				  "10",		payload ? NULL : "--max-len",
				  "2K",		"--desc-per-gram",
				  "256",	NULL };

		xfer(tag, rargs, sargs, &rrc, &src);
	}
	impair_clear();
	snprintf(rt, sizeof(rt), "%s-recv", tag);
	snprintf(st, sizeof(st), "%s-send", tag);
	rj = slurp(rt, "json");
	sj = slurp(st, "json");
	CHECK(rrc == 0 && src == 0, "exit codes recv %d send %d", rrc, src);
	CHECK(strstr(rj, "\"integrity\":\"OK\"") && strstr(sj, "\"integrity\":\"OK\""),
	      "integrity: recv %s send %s", rj, sj);
	CHECK(strlen(rj) < 4096 && strlen(sj) < 4096, "result over 4 KiB");
	CHECK(strstr(rj, "\"decode_errors\":0"), "decode errors: %s", rj);
	CHECK(strstr(rj, "-UDP\"") || strstr(rj, "- UDP\""), "label: %s", rj);
	if (payload) {
		const char *ofp = file_fp(out);

		CHECK(ofp[0] && strstr(sj, ofp),
		      "--out %s (fingerprint %s) is not the sender's "
		      "blob",
		      out, ofp);
	}
	/* The impairment happened, wherever at least 10 losses are expected:
	 * none at all then has a chance below e^-10 (arith at 1% sends ~255
	 * datagrams: 2.5 expected, too few to tell). */
	if (im->loss > 0 && (double)json_u64(rj, "received") * im->loss >= 10)
		CHECK(json_u64(sj, "retransmitted") > 0 && json_u64(sj, "naks") > 0,
		      "%s but nothing NAKed and re-sent: the loss did not happen: %s", im->name,
		      sj);
	if (payload)
		unlink(out);

	tap_diag("%s %s: %.0f MB/s; sender sent %llu retransmitted %llu NAKs %llu; receiver got "
		 "%llu duplicates %llu out-of-order %llu",
		 im->name, mode, strtod(strstr(rj, "\"effective_mb_s\":") + 17, NULL),
		 json_u64(sj, "sent"), json_u64(sj, "retransmitted"), json_u64(sj, "naks"),
		 json_u64(rj, "received"), json_u64(rj, "duplicates"),
		 json_u64(rj, "out_of_order"));
	if (getenv("PFS_TEST_VERBOSE"))
		tap_diag("receiver log: %s", slurp(rt, "err"));
	return TAP_PASS;
}

#define CASES(fn, im)                            \
	static int fn##_payload(void)            \
	{                                        \
		return udp_case(&im, "payload"); \
	}                                        \
	static int fn##_offset(void)             \
	{                                        \
		return udp_case(&im, "offset");  \
	}                                        \
	static int fn##_arith(void)              \
	{                                        \
		return udp_case(&im, "arith");   \
	}
CASES(clean, imp_clean)
CASES(loss1, imp_loss1)
CASES(loss5, imp_loss5)
CASES(reorder, imp_reorder)
CASES(dup, imp_dup)
CASES(delay, imp_delay)

/* Without GSO/GRO (PFS_UDP_OFFLOAD=off): one datagram per message, 1% loss. */
static int t_no_offload(void)
{
	char addr[64];
	int rrc, src;

	NEED_NET();
	if (backend == IMP_NONE)
		return tap_skip("%s", imp_skip);
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	CHECK(!impair_apply(&imp_loss1), "impairment");
	setenv("PFS_UDP_OFFLOAD", "off", 1);
	{
		char *rargs[] = { "recv",    "--transport",	 "udp", "--listen", addr, "--mode",
				  "payload", "--accept-timeout", "30",	NULL };
		char *sargs[] = { "send",   "--transport", "udp",    "--connect", addr,
				  "--mode", "payload",	   "--size", "16M",	  "--page",
				  "4k",	    "--bytes",	   "32M",    NULL };

		xfer("nooff", rargs, sargs, &rrc, &src);
	}
	unsetenv("PFS_UDP_OFFLOAD");
	impair_clear();
	CHECK(rrc == 0 && src == 0, "exit codes %d %d", rrc, src);
	CHECK(strstr(slurp("nooff-recv", "json"), "\"integrity\":\"OK\""), "integrity");
	CHECK(strstr(slurp("nooff-send", "json"), "no gso") &&
		      strstr(slurp("nooff-recv", "json"), "no gro"),
	      "path: %s", slurp("nooff-send", "json"));
	return TAP_PASS;
}

/* A receiver without CAP_NET_ADMIN gets socket buffers capped by
 * net.core.rmem_max: bursts may overflow its socket. Whatever the kernel
 * drops there is repaired, reported as socket_drops, and is the signal that
 * slows the sender (AIMD). */
static int t_capped_rcvbuf(void)
{
	char addr[64], *rj, *sj;
	int rrc, src;

	NEED_NET();
	if (access("/usr/bin/setpriv", X_OK))
		return tap_skip("setpriv (util-linux) missing: cannot drop CAP_NET_ADMIN");
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	{
		char *rargs[] = { "recv",    "--transport",	 "udp", "--listen", addr, "--mode",
				  "payload", "--accept-timeout", "30",	NULL };
		char *sargs[] = { "send",   "--transport", "udp",    "--connect", addr,
				  "--mode", "payload",	   "--size", "64M",	  "--page",
				  "4k",	    "--bytes",	   "512M",   NULL };
		const char *real = pfs_bin;
		char *wrapped[] = { "--bounding-set", "-net_admin", "--inh-caps=-net_admin",
				    (char *)real,     rargs[0],	    rargs[1],
				    rargs[2],	      rargs[3],	    rargs[4],
				    rargs[5],	      rargs[6],	    rargs[7],
				    rargs[8],	      NULL };
		pid_t r, s;

		/* spawn() execs pfs_bin: run the receiver through setpriv. */
		pfs_bin = "/usr/bin/setpriv";
		r = spawn(ns_b, "capped-recv", wrapped);
		pfs_bin = real;
		s = spawn(ns_a, "capped-send", sargs);
		src = wait_rc(s, 60);
		rrc = wait_rc(r, 60);
	}
	rj = slurp("capped-recv", "json");
	sj = slurp("capped-send", "json");
	tap_diag("socket drops %llu, duplicates %llu, re-sent %llu; sender %.90s",
		 json_u64(rj, "socket_drops"), json_u64(rj, "duplicates"),
		 json_u64(sj, "retransmitted"), strstr(sj, "\"path\""));
	CHECK(strstr(rj, "\"integrity\":\"OK\"") && strstr(sj, "\"integrity\":\"OK\""),
	      "integrity: %s", rj);
	CHECK(rrc == 0 && src == 0, "exit codes recv %d send %d: %s", rrc, src,
	      slurp("capped-recv", "err"));
	CHECK(strstr(slurp("capped-recv", "err"), "socket buffers capped"), "no warning: %s",
	      slurp("capped-recv", "err"));
	return TAP_PASS;
}

/* IPv6: the fragment size follows from a 40-byte IP header (1452-byte
 * datagrams at MTU 1500). */
static int t_ipv6(void)
{
	char addr[64];
	int rrc, src;

	NEED_NET();
	if (sh("ip -n %s addr add fd00:215::1/64 dev %s nodad && ip -n %s addr add fd00:215::2/64 "
	       "dev %s nodad",
	       ns_a, veth_a, ns_b, veth_b))
		return tap_skip("cannot add IPv6 addresses (IPv6 disabled?)");
	snprintf(addr, sizeof(addr), "[fd00:215::2]:%d", ++port);
	{
		char *rargs[] = { "recv",    "--transport",	 "udp", "--listen", addr, "--mode",
				  "payload", "--accept-timeout", "30",	NULL };
		char *sargs[] = { "send",   "--transport", "udp",    "--connect", addr,
				  "--mode", "payload",	   "--size", "16M",	  "--page",
				  "4k",	    "--bytes",	   "64M",    NULL };

		xfer("v6", rargs, sargs, &rrc, &src);
	}
	CHECK(rrc == 0 && src == 0, "exit codes %d %d", rrc, src);
	CHECK(strstr(slurp("v6-recv", "json"), "\"integrity\":\"OK\""), "integrity");
	CHECK(strstr(slurp("v6-send", "json"), "udp 1452B"), "path: %s", slurp("v6-send", "json"));
	return TAP_PASS;
}

/* --ifname: the data socket is bound to the veth and, without --mtu, the
 * datagrams follow the device MTU (9000 here: 8972-byte datagrams). A
 * device that does not exist is a clear error. */
static int t_ifname_mtu(void)
{
	char addr[64], *rj;
	int rrc, src;

	NEED_NET();
	CHECK(!sh("ip -n %s link set %s mtu 9000 && ip -n %s link set %s mtu 9000", ns_a, veth_a,
		  ns_b, veth_b),
	      "set mtu 9000");
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	{
		char *rargs[] = { "recv", "--transport",      "udp",	 "--listen",
				  addr,	  "--mode",	      "payload", "--ifname",
				  veth_b, "--accept-timeout", "30",	 NULL };
		char *sargs[] = { "send",    "--transport", "udp",  "--connect", addr,	"--mode",
				  "payload", "--ifname",    veth_a, "--size",	 "16M", "--page",
				  "4k",	     "--bytes",	    "64M",  NULL };

		xfer("jumbo", rargs, sargs, &rrc, &src);
	}
	sh("ip -n %s link set %s mtu 1500; ip -n %s link set %s mtu 1500", ns_a, veth_a, ns_b,
	   veth_b);
	rj = slurp("jumbo-recv", "json");
	CHECK(rrc == 0 && src == 0, "exit codes %d %d", rrc, src);
	CHECK(strstr(rj, "\"integrity\":\"OK\"") && strstr(rj, "udp 8972B"), "recv: %s", rj);
	CHECK(strstr(slurp("jumbo-send", "json"), "gso x7"), "send: %s",
	      slurp("jumbo-send", "json"));
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	{
		char *sargs[] = { "send",   "--transport", "udp",      "--connect",   addr,
				  "--mode", "payload",	   "--ifname", "pfs-no-such", "--size",
				  "16M",    "--page",	   "4k",       NULL };

		src = wait_rc(spawn(ns_a, "nodev-send", sargs), 20);
	}
	CHECK(src == 1 && strstr(slurp("nodev-send", "err"), "pfs-no-such"), "exit %d: %s", src,
	      slurp("nodev-send", "err"));
	return TAP_PASS;
}

static int t_refused(void)
{
	char addr[64];
	int rrc, src;

	NEED_NET();
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	{
		char *rargs[] = { "recv",   "--transport", "udp",    "--listen", addr,
				  "--mode", "offset",	   "--size", "16M",	 "--page",
				  "4k",	    "--seed",	   "2",	     NULL };
		char *sargs[] = { "send",   "--transport", "udp",    "--connect", addr,
				  "--mode", "offset",	   "--size", "16M",	  "--page",
				  "4k",	    "--seed",	   "1",	     NULL };

		xfer("refuse", rargs, sargs, &rrc, &src);
	}
	CHECK(rrc == 4 && src == 4, "exit codes recv %d send %d (want 4)", rrc, src);
	CHECK(strstr(slurp("refuse-send", "err"), "blob fingerprint mismatch") &&
		      strstr(slurp("refuse-recv", "err"), "blob fingerprint mismatch"),
	      "messages: %s", slurp("refuse-send", "err"));
	return TAP_PASS;
}

/* Kill -9 the receiver mid-transfer: the sender must exit non-zero, soon,
 * saying what happened. */
static int t_receiver_killed(void)
{
	char addr[64];
	char *rargs[] = { "recv",    "--transport",	 "udp", "--listen", addr, "--mode",
			  "payload", "--accept-timeout", "30",	NULL };
	char *sargs[] = { "send",   "--transport", "udp",    "--connect", addr,
			  "--mode", "payload",	   "--size", "64M",	  "--page",
			  "4k",	    "--bytes",	   "1T",     NULL };
	pid_t r, s;
	double t0;
	int rc;

	NEED_NET();
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	r = spawn(ns_b, "killed-recv", rargs);
	s = spawn(ns_a, "killed-send", sargs);
	sleep(2);
	CHECK(waitpid(s, NULL, WNOHANG) == 0, "sender ended before the kill: %s",
	      slurp("killed-send", "err"));
	kill(r, SIGKILL);
	waitpid(r, NULL, 0);
	t0 = mono();
	rc = wait_rc(s, 15);
	tap_diag("sender exited %d after %.2f s: %.300s", rc, mono() - t0,
		 slurp("killed-send", "err"));
	CHECK(rc > 0 && rc < 128, "sender exit %d (want a clean non-zero exit)", rc);
	CHECK(mono() - t0 < 6, "sender took %.1f s to notice", mono() - t0);
	CHECK(strstr(slurp("killed-send", "err"), "receiver") &&
		      strstr(slurp("killed-send", "json"), "\"ok\":false"),
	      "message: %s", slurp("killed-send", "err"));
	return TAP_PASS;
}

/* Kill -9 the sender mid-transfer: the receiver must notice at once. */
static int t_sender_killed(void)
{
	char addr[64];
	char *rargs[] = { "recv",    "--transport",	 "udp", "--listen", addr, "--mode",
			  "payload", "--accept-timeout", "30",	NULL };
	char *sargs[] = { "send",   "--transport", "udp",    "--connect", addr,
			  "--mode", "payload",	   "--size", "64M",	  "--page",
			  "4k",	    "--bytes",	   "1T",     NULL };
	pid_t r, s;
	double t0;
	int rc;

	NEED_NET();
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	r = spawn(ns_b, "skilled-recv", rargs);
	s = spawn(ns_a, "skilled-send", sargs);
	sleep(2);
	CHECK(waitpid(r, NULL, WNOHANG) == 0, "receiver ended before the kill: %s",
	      slurp("skilled-recv", "err"));
	kill(s, SIGKILL);
	waitpid(s, NULL, 0);
	t0 = mono();
	rc = wait_rc(r, 15);
	tap_diag("receiver exited %d after %.2f s: %.300s", rc, mono() - t0,
		 slurp("skilled-recv", "err"));
	CHECK(rc > 0 && rc < 128, "receiver exit %d (want a clean non-zero exit)", rc);
	CHECK(mono() - t0 < 6, "receiver took %.1f s to notice", mono() - t0);
	CHECK(strstr(slurp("skilled-recv", "json"), "closed the control connection"), "json: %s",
	      slurp("skilled-recv", "json"));
	return TAP_PASS;
}

/* The path dies mid-transfer (everything A sends is dropped): both ends end
 * with a clear error within their io timeout instead of hanging. */
static int t_path_dies(void)
{
	char addr[64];
	char *rargs[] = { "recv",    "--transport",	 "udp", "--listen",  addr, "--mode",
			  "payload", "--accept-timeout", "30",	"--timeout", "2",  NULL };
	char *sargs[] = { "send",    "--transport", "udp", "--connect", addr, "--mode",
			  "payload", "--size",	    "64M", "--page",	"4k", "--bytes",
			  "1T",	     "--timeout",   "2",   NULL };
	struct impair dead = { "100% loss", "loss 100%", .loss = 1.0 };
	pid_t r, s;
	double t0;
	int rrc, src;

	NEED_NET();
	if (backend == IMP_NONE)
		return tap_skip("%s", imp_skip);
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	r = spawn(ns_b, "dies-recv", rargs);
	s = spawn(ns_a, "dies-send", sargs);
	sleep(2);
	CHECK(!impair_apply(&dead), "impairment");
	t0 = mono();
	rrc = wait_rc(r, 15);
	src = wait_rc(s, 15);
	impair_clear();
	tap_diag("after %.2f s: recv %d: %.200s", mono() - t0, rrc, slurp("dies-recv", "err"));
	tap_diag("send %d: %.300s", src, slurp("dies-send", "err"));
	CHECK(rrc == 5, "receiver exit %d (want 5, timeout)", rrc);
	CHECK(src == 5 || src == 1,
	      "sender exit %d (want 5, or 1 when it saw the receiver "
	      "leave first)",
	      src);
	CHECK(mono() - t0 < 8, "took %.1f s", mono() - t0);
	CHECK(strstr(slurp("dies-recv", "json"), "no progress"), "receiver message: %s",
	      slurp("dies-recv", "json"));
	return TAP_PASS;
}

/* A hand-made sender: proper handshake, then garbage datagrams, then one
 * valid one-fragment gram and END. The receiver must drop and count the
 * garbage (decode_errors), log it, and still finish with integrity OK. */
static int t_malformed(void)
{
	char addr[64];
	char *rargs[] = { "recv",    "--transport",	 "udp", "--listen",  addr, "--mode",
			  "payload", "--accept-timeout", "20",	"--timeout", "5",  NULL };
	pid_t r, c;
	int rc, crc;

	NEED_NET();
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	r = spawn(ns_b, "malformed", rargs);
	c = fork();
	if (c == 0) {
		struct pfs_ctl h = { .type = PFS_CTL_HELLO,
				     .mode = PFS_MODE_PAYLOAD,
				     .size = 1 << 20,
				     .count = 100, /* the one gram's bytes */
				     .word = 1 },
			       e;
		struct pfs_desc d = { .off = 4096, .len = 100 };
		struct pfs_udp_frag f = { 0 };
		struct pfs_udp_rec p = { .a = 4096, .d = 1440, .e = 32 };
		struct dclient dc;
		uint8_t rec[PFS_CTL_LEN], dg[512], g[256];
		ssize_t gl;
		int s;

		if (netns_enter(ns_a) || dclient_connect(&dc, ip_b, (uint16_t)port))
			_exit(2);
		if (dclient_handshake(&dc, &h, &p, NULL))
			_exit(4);
		gl = pfs_gram_encode(PFS_MODE_PAYLOAD, 0, &d, 1, g, sizeof(g));
		memset(g + gl, 0x5a, 100);
		gl += 100;
		/* 1: too short; 2: bad magic; 3: fragment beyond its gram (tag
		 * valid); 4: the right bytes with a wrong tag (forged); then the
		 * real one. */
		memset(dg, 0xee, sizeof(dg));
		(void)!send(dc.u, dg, 10, 0);
		(void)!send(dc.u, dg, 100, 0);
		f = (struct pfs_udp_frag){ .frag_len = (uint16_t)gl,
					   .gram_len = (uint32_t)gl,
					   .frag_off = 1440 };
		dclient_frag(&dc, &f, g, true);
		f.frag_off = 0;
		dclient_frag(&dc, &f, g, false);
		dclient_frag(&dc, &f, g, true);
		s = dc.s;
		e = (struct pfs_ctl){ .type = PFS_CTL_END,
				      .size = 100,
				      .value = 1,
				      .count = 1,
				      .word = pfs_crc32c(0, g + gl - 100, 100) };
		pfs_ctl_encode(&e, rec);
		if (write(s, rec, PFS_CTL_LEN) != PFS_CTL_LEN)
			_exit(5);
		/* Drain ACKs until RESULT (a PFSC record) or EOF. */
		for (;;) {
			uint8_t b[4096];
			ssize_t n = read(s, b, sizeof(b));

			if (n <= 0)
				break;
		}
		_exit(0);
	}
	crc = wait_rc(c, 20);
	rc = wait_rc(r, 20);
	CHECK(crc == 0, "client exit %d", crc);
	CHECK(rc == 0, "receiver exit %d (want 0): %s", rc, slurp("malformed", "err"));
	CHECK(strstr(slurp("malformed", "json"), "\"integrity\":\"OK\""), "json: %s",
	      slurp("malformed", "json"));
	CHECK(strstr(slurp("malformed", "json"), "\"decode_errors\":3"), "not counted: %s",
	      slurp("malformed", "json"));
	CHECK(strstr(slurp("malformed", "json"), "\"forged\":1"), "forged not counted: %s",
	      slurp("malformed", "json"));
	CHECK(strstr(slurp("malformed", "err"), "dropped a malformed datagram"), "not logged: %s",
	      slurp("malformed", "err"));
	return TAP_PASS;
}

static int t_teardown(void)
{
	NEED_NET();
	impair_clear();
	CHECK(sh("ip netns del %s && ip netns del %s", ns_a, ns_b) == 0, "netns del");
	CHECK(sh("ip link show %s >/dev/null 2>&1", veth_a) != 0, "veth left behind");
	ns_a[0] = '\0';
	return TAP_PASS;
}

#define ROWS(fn, what)                                                              \
	{ "payload, " what ": integrity OK, --out equals the blob", fn##_payload }, \
		{ "offset, " what ": integrity OK", fn##_offset },                  \
		{ "arith, " what ": integrity OK", fn##_arith },

static const struct tap_test tests[] = {
	{ "udp fragment header: round trip and every rejection", t_frag_codec },
	{ "udp repair records: round trip, ranges, CRCs, limits", t_rec_codec },
	{ "create two netns joined by a veth pair; pick the impairment backend", t_setup,
	  .setup = true },
	ROWS(clean, "0% loss") ROWS(loss1, "1% loss") ROWS(loss5, "5% loss")
		ROWS(reorder, "25% reordering (1 ms)") ROWS(dup, "1% duplication") ROWS(
			delay, "1% loss + 10 ms delay"){
			"no GSO/GRO (PFS_UDP_OFFLOAD=off), 1% loss: integrity OK, path says so",
			t_no_offload },
	{ "receiver socket buffer capped (no CAP_NET_ADMIN): drops repaired, integrity OK",
	  t_capped_rcvbuf },
	{ "IPv6: 1452-byte datagrams at MTU 1500, integrity OK", t_ipv6 },
	{ "--ifname binds the veth and follows its MTU (9000: 8972-byte datagrams, gso x7)",
	  t_ifname_mtu },
	{ "offset mode against a different blob is refused over udp too", t_refused },
	{ "malformed datagrams: dropped, counted, logged; transfer still OK", t_malformed },
	{ "receiver killed mid-transfer: sender exits non-zero within seconds", t_receiver_killed },
	{ "sender killed mid-transfer: receiver exits non-zero at once", t_sender_killed },
	{ "path dies mid-transfer: both ends time out with a clear error", t_path_dies },
	{ "remove the namespaces and veth", t_teardown, .setup = true },
};

TAP_MAIN(tests)
