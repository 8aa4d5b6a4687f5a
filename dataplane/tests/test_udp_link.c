// SPDX-License-Identifier: Apache-2.0
/*
 * `pfs udp blast | sink` over a real veth pair between two network
 * namespaces (tests/netns.h): the UDP link probe the udp benchmark takes as
 * its datagram limit. Every variant (plain sendmmsg/recvmmsg, GSO sender,
 * GRO receiver, both) delivers, and the sink counts exactly what the
 * blaster sent when nothing is lost; with 5% loss imposed on the veth
 * (tests/impair.h: tc netem or an iptables statistic DROP) the impairment's
 * own counter shows drops and the sink counts them as lost. Single-threaded;
 * the two ends are pfs processes in the two namespaces.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "impair.h"
#include "json_util.h"
#include "netns.h"
#include "tap.h"

#define PORT 7930
#define DGRAMS 20000 /* per run: 29 MB at 1472 bytes, well inside the socket buffer */
#define END_COPIES 5 /* end markers the blaster sends (tools/pfs/udp.c) */

static const struct impair imp_loss5 = { "5% loss", "loss 5%", 0.05, 0, 0, 0, 0 };

/* The two results of one run (tmpdir/<tag>-sink.json, <tag>-blast.json). */
struct run {
	char sink[4096], blast[4096];
	int src, brc;
};

/* Sink in ns_b (waits until it is bound), blaster in ns_a; @sargs/@bargs
 * are the extra words of each (NULL-terminated). */
static void run_pair(const char *tag, char *const sargs[], char *const bargs[], struct run *r)
{
	char st[64], bt[64], ready[128], listen[48], conn[48], bytes[32];
	char *sa[24] = { "-q", "udp", "sink", "--listen", listen, "--ready-file", ready };
	char *ba[24] = { "-q", "udp", "blast", "--connect", conn, "--bytes", bytes };
	int ns = 7, nb = 7;
	pid_t s, b;

	snprintf(st, sizeof(st), "%s-sink", tag);
	snprintf(bt, sizeof(bt), "%s-blast", tag);
	snprintf(ready, sizeof(ready), "%s/%s.ready", tmpdir, tag);
	addr(listen, ip_b, PORT);
	addr(conn, ip_b, PORT);
	snprintf(bytes, sizeof(bytes), "%d", DGRAMS * 1472);
	for (int i = 0; sargs && sargs[i] && ns < 23; i++)
		sa[ns++] = sargs[i];
	for (int i = 0; bargs && bargs[i] && nb < 23; i++)
		ba[nb++] = bargs[i];
	sa[ns] = NULL;
	ba[nb] = NULL;
	unlink(ready);
	s = spawn(ns_b, st, sa);
	for (int i = 0; i < 1000 && access(ready, F_OK); i++) /* 10 s on a busy machine */
		usleep(10000);
	b = spawn(ns_a, bt, ba);
	r->brc = wait_rc(b, 60);
	r->src = wait_rc(s, 60);
	snprintf(r->sink, sizeof(r->sink), "%s", slurp(st, "json"));
	snprintf(r->blast, sizeof(r->blast), "%s", slurp(bt, "json"));
	r->sink[strcspn(r->sink, "\n")] = '\0';
	r->blast[strcspn(r->blast, "\n")] = '\0';
	tap_diag("sink: %s", r->sink);
	tap_diag("blast: %s", r->blast);
	if (r->src || r->brc) {
		tap_diag("sink rc %d: %s", r->src, slurp(st, "err"));
		tap_diag("blast rc %d: %s", r->brc, slurp(bt, "err"));
	}
}

static int t_setup(void)
{
	int rc = netns_setup("bl", 223);

	if (rc != TAP_PASS)
		return rc;
	tap_diag("%s", impair_probe());
	return TAP_PASS;
}

/* Both ends OK and the sink counted exactly what the blaster sent. */
static int exact(const char *tag, char *const sargs[], char *const bargs[], const char *svar,
		 const char *bvar)
{
	struct run r;
	char v[32];

	NEED_NET();
	run_pair(tag, sargs, bargs, &r);
	CHECK(r.src == 0 && r.brc == 0, "sink rc %d, blast rc %d", r.src, r.brc);
	CHECK(!strcmp(jstr(r.sink, "variant", v, sizeof(v)), svar), "sink variant %s", v);
	CHECK(!strcmp(jstr(r.blast, "variant", v, sizeof(v)), bvar), "blast variant %s", v);
	CHECK(jnum(r.blast, "datagrams") == DGRAMS, "blaster sent %lld",
	      jnum(r.blast, "datagrams"));
	CHECK(jnum(r.sink, "datagrams") == DGRAMS, "sink counted %lld", jnum(r.sink, "datagrams"));
	CHECK(jnum(r.sink, "bytes") == jnum(r.blast, "bytes"), "bytes differ");
	CHECK(jnum(r.sink, "sent") == DGRAMS, "end marker says %lld", jnum(r.sink, "sent"));
	CHECK(strstr(r.sink, "\"end_marker\":true"), "no end marker");
	CHECK(jnum(r.sink, "lost") == 0 && jnum(r.sink, "reordered") == 0 &&
		      jnum(r.sink, "bad") == 0 && jnum(r.sink, "sock_drops") == 0,
	      "lost/reordered/bad/sock_drops not all 0");
	CHECK(jreal(r.sink, "mb_s") > 0 && jreal(r.sink, "elapsed_s") > 0, "no rate");
	return TAP_PASS;
}

static int t_plain(void)
{
	return exact("plain", NULL, NULL, "recvmmsg", "sendmmsg");
}

static int t_gso_gro(void)
{
	char *s[] = { "--gro", NULL }, *b[] = { "--gso", NULL };
	struct run r;
	int rc = exact("gsogro", s, b, "recvmmsg+gro", "sendmmsg+gso");

	if (rc != TAP_PASS)
		return rc;
	/* Super-datagrams on both ends: 44 per message at 1472 bytes. */
	snprintf(r.sink, sizeof(r.sink), "%s", slurp("gsogro-sink", "json"));
	snprintf(r.blast, sizeof(r.blast), "%s", slurp("gsogro-blast", "json"));
	CHECK(jnum(r.blast, "segs") == 44, "segs %lld", jnum(r.blast, "segs"));
	CHECK(jnum(r.blast, "messages") == (DGRAMS + 43) / 44, "blaster messages %lld",
	      jnum(r.blast, "messages"));
	CHECK(jnum(r.sink, "messages") < DGRAMS / 2, "sink took %lld messages (no GRO?)",
	      jnum(r.sink, "messages"));
	return TAP_PASS;
}

static int t_gso_plain(void)
{
	char *b[] = { "--gso", NULL };

	return exact("gsoplain", NULL, b, "recvmmsg", "sendmmsg+gso");
}

static int t_plain_gro(void)
{
	char *s[] = { "--gro", NULL };

	return exact("plaingro", s, NULL, "recvmmsg+gro", "sendmmsg");
}

/* A partial last GSO message, odd sizes, batches of 1 and of 1024. */
static int t_odd(void)
{
	/* 1001500 bytes: 1002 datagrams (whole ones, rounded up), 144 messages
	 * of 7 but the last of 1; this --bytes comes after run_pair's: the last
	 * given wins. */
	char *s[] = { "--batch", "1", NULL };
	char *b[] = { "--gso",	 "--segs", "7",	      "--size",	 "1000",
		      "--batch", "1024",   "--bytes", "1001500", NULL };
	struct run r;

	NEED_NET();
	run_pair("odd", s, b, &r);
	CHECK(r.src == 0 && r.brc == 0, "sink rc %d, blast rc %d", r.src, r.brc);
	CHECK(jnum(r.blast, "datagrams") == 1002, "blaster sent %lld", jnum(r.blast, "datagrams"));
	CHECK(jnum(r.blast, "messages") == 144, "messages %lld", jnum(r.blast, "messages"));
	CHECK(jnum(r.sink, "datagrams") == 1002 && jnum(r.sink, "lost") == 0 &&
		      jnum(r.sink, "bytes") == 1002000,
	      "sink counted %lld datagrams, %lld lost", jnum(r.sink, "datagrams"),
	      jnum(r.sink, "lost"));
	return TAP_PASS;
}

/* Packets the impairment dropped so far, from its own counter; -1 unknown. */
static long long impair_drops(void)
{
	char cmd[256], line[256];
	long long n = -1;
	FILE *f;

	if (backend == IMP_NETEM)
		snprintf(
			cmd, sizeof(cmd),
			"tc -s -n %s qdisc show dev %s | sed -n 's/.*dropped \\([0-9]*\\).*/\\1/p'",
			ns_a, veth_a);
	else if (backend == IMP_NETFILTER)
		snprintf(cmd, sizeof(cmd),
			 "ip netns exec %s iptables -L INPUT -v -x -n | awk '$3 == \"DROP\" "
			 "{ print $1 }'",
			 ns_b);
	else
		return -1;
	f = popen(cmd, "r");
	if (!f)
		return -1;
	if (fgets(line, sizeof(line), f))
		n = atoll(line);
	pclose(f);
	return n;
}

/* 5% loss on the veth: the impairment dropped packets, the sink counts the
 * missing datagrams as lost, and delivered + lost = sent. */
static int lossy(const char *tag, char *const sargs[], char *const bargs[], bool gso)
{
	struct run r;
	long long drops, lost, got;

	NEED_NET();
	if (backend == IMP_NONE)
		return tap_skip("%s", imp_skip);
	CHECK(impair_apply(&imp_loss5) == 0, "cannot impose 5%% loss");
	run_pair(tag, sargs, bargs, &r);
	drops = impair_drops();
	impair_clear();
	lost = jnum(r.sink, "lost");
	got = jnum(r.sink, "datagrams");
	tap_diag("%s: the impairment dropped %lld packets; the sink counted %lld lost, %lld "
		 "socket drops",
		 tag, drops, lost, jnum(r.sink, "sock_drops"));
	CHECK(r.src == 0 && r.brc == 0, "sink rc %d, blast rc %d", r.src, r.brc);
	CHECK(jnum(r.blast, "datagrams") == DGRAMS, "blaster sent %lld",
	      jnum(r.blast, "datagrams"));
	CHECK(drops > 0, "the impairment reports %lld drops", drops);
	CHECK(lost > 0, "sink counted no loss");
	CHECK(got + lost == DGRAMS, "delivered %lld + lost %lld != %d sent", got, lost, DGRAMS);
	CHECK(got < DGRAMS, "everything arrived");
	if (!gso) {
		/* One datagram per packet: every drop is a lost datagram, but for
		 * the copies of the end marker the impairment also hit. */
		long long sd = jnum(r.sink, "sock_drops");

		CHECK(lost <= drops + sd && drops + sd - lost <= END_COPIES,
		      "lost %lld vs %lld dropped + %lld socket drops", lost, drops, sd);
	} else {
		/* A dropped GSO packet takes all its datagrams with it. */
		CHECK(lost >= drops - END_COPIES, "lost %lld < %lld dropped packets", lost, drops);
	}
	return TAP_PASS;
}

static int t_loss_plain(void)
{
	return lossy("loss", NULL, NULL, false);
}

static int t_loss_gso(void)
{
	char *s[] = { "--gro", NULL }, *b[] = { "--gso", NULL };

	return lossy("lossgso", s, b, true);
}

/* Nothing arrives: the sink gives up after --timeout with exit 5. */
static int t_timeout(void)
{
	char ready[128], listen[48];
	pid_t s;
	int rc;

	NEED_NET();
	snprintf(ready, sizeof(ready), "%s/to.ready", tmpdir);
	addr(listen, ip_b, PORT + 1);
	s = pfs_in(ns_b, "to-sink", "-q", "udp", "sink", "--listen", listen, "--timeout", "0.5",
		   NULL);
	rc = wait_rc(s, 10);
	CHECK(rc == 5, "sink exit %d, want 5 (timeout): %s", rc, slurp("to-sink", "json"));
	CHECK(strstr(slurp("to-sink", "json"), "\"verdict\":\"TIMEOUT\""), "verdict");
	return TAP_PASS;
}

/* Each side refuses the other's options. */
static int t_args(void)
{
	NEED_NET();
	CHECK(sh("%s --check-args udp blast --connect 10.0.0.1:1 --gso >/dev/null 2>&1", pfs_bin) ==
		      0,
	      "blast args refused");
	CHECK(sh("%s --check-args udp sink --listen 10.0.0.1:1 --gro >/dev/null 2>&1", pfs_bin) ==
		      0,
	      "sink args refused");
	CHECK(sh("%s --check-args udp blast --connect 10.0.0.1:1 --gro 2>/dev/null", pfs_bin) == 2,
	      "blast took --gro");
	CHECK(sh("%s --check-args udp sink --listen 10.0.0.1:1 --gso 2>/dev/null", pfs_bin) == 2,
	      "sink took --gso");
	CHECK(sh("%s --check-args udp blast --connect 10.0.0.1:1 --segs 4 2>/dev/null", pfs_bin) ==
		      2,
	      "--segs without --gso");
	CHECK(sh("%s --check-args udp blast 2>/dev/null", pfs_bin) == 2, "blast without --connect");
	return TAP_PASS;
}

static int t_teardown(void)
{
	impair_clear();
	return netns_remove();
}

static const struct tap_test tests[] = {
	{ "create two netns joined by a veth pair; pick the impairment backend", t_setup,
	  .setup = true },
	{ "sendmmsg -> recvmmsg: every datagram delivered, counted exactly", t_plain },
	{ "sendmmsg+gso -> recvmmsg+gro: super-datagrams both ends, counted exactly", t_gso_gro },
	{ "sendmmsg+gso -> recvmmsg (kernel segments): counted exactly", t_gso_plain },
	{ "sendmmsg -> recvmmsg+gro: counted exactly", t_plain_gro },
	{ "partial last GSO message, 1000-byte datagrams, batches of 1024 and 1", t_odd },
	{ "5% loss, plain: drops happened, each counted lost, delivered + lost = sent",
	  t_loss_plain },
	{ "5% loss, GSO+GRO: drops happened, counted lost, delivered + lost = sent", t_loss_gso },
	{ "sink with nothing arriving: exit 5 after --timeout", t_timeout },
	{ "blast and sink refuse each other's options", t_args },
	{ "remove the namespaces and veth", t_teardown, .setup = true },
};

TAP_MAIN(tests)
