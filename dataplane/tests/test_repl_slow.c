// SPDX-License-Identifier: Apache-2.0
/*
 * A relay too slow to relay steps aside (docs/design/fanout.md "A slow
 * relay"), over a real veth between two network namespaces:
 *   origin (ns a, paced) -> relay1 (ns b) -> relay2 (ns a)
 * relay1's uplink (its veth's egress) is shaped with tc tbf to 8 Mbit/s, so
 * it receives at the origin's pace (40 MiB/s) and forwards at 1 MB/s.
 * Its stream to relay2 falls --relay-lag-max further behind its own fill: it must
 * send relay2 STEP (relay2 fetches from its next upstream, the origin) and
 * move its own fetch to the chain's tail (relay2, --fetch-tail). The new
 * order: relay2 < origin, relay1 < relay2; every copy verified. The same
 * chain unshaped: nobody steps aside. The STEP frame and the STEPPED flag
 * on the wire: round trips and refusals.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "json_util.h"
#include "netns.h"
#include "repl_util.h"
#include "tap.h"
#include "testdata.h"
#include "wire/blob_repl_wire.h"
#include "wire/wire_le.h"
#include "pfs/integrity.h"

static char tok[128], src[256], blob_size[32];
static long long size;
static char o[4096], r1[4096], r2[4096];

static void cleanup(void)
{
	sh("rm -f /dev/shm/pfs-slow-*-%d /dev/shm/pfs-slow-*-%d.chunks", getpid(), getpid());
	sh("tc -n %s qdisc del dev %s root 2>/dev/null", ns_b, veth_b);
}

static char *bname(char *buf, const char *what)
{
	snprintf(buf, 64, "pfs-slow-%s-%d", what, getpid());
	return buf;
}

static int t_setup(void)
{
	const char *minilm;
	char cmd[512], *out;
	FILE *f;
	int r = netns_setup("rs", 44);

	if (r != TAP_PASS)
		return r;
	atexit(cleanup);
	minilm = testdata_dir("PFS_TESTDATA_MINILM", "minilm");
	if (!minilm) {
		net_ok = false;
		snprintf(net_skip, sizeof(net_skip), "setup failed: %.170s", testdata_why);
		return TAP_FAIL;
	}
	snprintf(src, sizeof(src), "%s", minilm);
	snprintf(tok, sizeof(tok), "%s/token", tmpdir);
	f = fopen(tok, "w");
	CHECK(f && fprintf(f, "%s\n",
			   "0c9d8e7f6a5b4c3d2e1f00112233445566778899aabbccddeeff001122334455") > 0,
	      "token");
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s blob create --source %s --dry-run 2>/dev/null", pfs_bin,
		 src);
	out = slurp_cmd(cmd);
	size = (long long)jreal(jsect(out, "\"source\""), "blob_size");
	free(out);
	CHECK(size > 32ll << 20, "dry run: blob_size %lld", size);
	snprintf(blob_size, sizeof(blob_size), "%lld", size);
	tap_diag("source %s: blob %lld bytes", src, size);
	return TAP_PASS;
}

/* The chain, relay1 --fetch-tail relay2 (which serves for it); 0 when
 * all three exit 0. The addresses into a0, a1, a2. */
static int chain(char *a0, char *a1, char *a2)
{
	char n0[64], n1[64], n2[64], up2[100];
	pid_t po, p1, p2;
	int rc[3];

	addr(a0, ip_a, 7480);
	addr(a1, ip_b, 7481);
	addr(a2, ip_a, 7482);
	snprintf(up2, sizeof(up2), "%s,%s", a1, a0);
	sh("rm -f %s/relay1.err", tmpdir);
	po = pfs_in(ns_a, "origin", "blob", "create", "--source", src, "--page", "4k", "--dir",
		    "/dev/shm", "--name", bname(n0, "origin"), "--replace", "--token-file", tok,
		    "--replicate-listen", a0, "--replicate-linger", "2s", "--replicate-rate",
		    "40Mi", NULL);
	p1 = pfs_in(ns_b, "relay1", "blob", "create", "--size", blob_size, "--page", "4k", "--dir",
		    "/dev/shm", "--name", bname(n1, "relay1"), "--replace", "--token-file", tok,
		    "--fetch-from", a0, "--fetch-tail", a2, "--replicate-listen", a1,
		    "--replicate-linger", "2s", "--fetch-timeout", "100s", NULL);
	if (!wait_log("relay1", "repl serve: listening"))
		tap_diag("relay1 did not listen within 5 s");
	p2 = pfs_in(ns_a, "relay2", "blob", "create", "--size", blob_size, "--page", "4k", "--dir",
		    "/dev/shm", "--name", bname(n2, "relay2"), "--replace", "--token-file", tok,
		    "--fetch-from", up2, "--replicate-listen", a2, "--replicate-linger", "2s",
		    "--fetch-timeout", "100s", NULL);
	rc[2] = wait_rc(p2, 150);
	rc[1] = wait_rc(p1, 150);
	rc[0] = wait_rc(po, 150);
	snprintf(o, sizeof(o), "%s", slurp("origin", "json"));
	snprintf(r1, sizeof(r1), "%s", slurp("relay1", "json"));
	snprintf(r2, sizeof(r2), "%s", slurp("relay2", "json"));
	tap_diag("rc origin %d relay1 %d relay2 %d", rc[0], rc[1], rc[2]);
	if (rc[0] || rc[1] || rc[2]) {
		tap_diag("origin: %.1500s", slurp("origin", "err"));
		tap_diag("relay1: %.1500s", slurp("relay1", "err"));
		tap_diag("relay2: %.1500s", slurp("relay2", "err"));
		return -1;
	}
	return 0;
}

/* Every copy verified, one sha256: the origin's. */
static int all_verified(void)
{
	char s0[70], s1[70], s2[70];

	jstr(jsect(o, "\"source\""), "sha256", s0, sizeof(s0));
	jstr(jsect(r1, "\"manifest\""), "sha256", s1, sizeof(s1));
	jstr(jsect(r2, "\"manifest\""), "sha256", s2, sizeof(s2));
	CHECK(s0[0] && !strcmp(s0, s1) && !strcmp(s0, s2), "sha256 %s %s %s", s0, s1, s2);
	CHECK(strstr(jsect(r1, "\"fetch\""), "\"verified\":true") &&
		      strstr(jsect(r2, "\"fetch\""), "\"verified\":true"),
	      "not verified: %.300s | %.300s", jsect(r1, "\"fetch\""), jsect(r2, "\"fetch\""));
	return TAP_PASS;
}

static int t_slow_relay(void)
{
	char a0[48], a1[48], a2[48], v[64];
	const char *st = NULL;
	double took;
	int r;

	NEED_NET();
	CHECK(!sh("tc -n %s qdisc add dev %s root tbf rate 8mbit burst 32kb latency 400ms", ns_b,
		  veth_b),
	      "tc tbf on %s", veth_b);
	r = chain(a0, a1, a2);
	sh("tc -n %s qdisc del dev %s root", ns_b, veth_b);
	CHECK(!r, "chain failed");
	r = all_verified();
	if (r != TAP_PASS)
		return r;
	tap_diag("relay1 repl: %.400s", jsect(r1, "\"repl\""));
	tap_diag("relay1 fetch: %.500s", jsect(r1, "\"fetch\""));
	tap_diag("relay2 fetch: %.500s", jsect(r2, "\"fetch\""));
	/* relay1 stepped aside, for a stream 4 MiB (the default) further behind
	 * its fill. */
	st = jsect(r1, "\"stepped_aside\"");
	CHECK(st && jreal(jsect(r1, "\"repl\""), "steps") >= 1 &&
		      jreal(st, "lag") > jreal(st, "lag_start") + (4 << 20) &&
		      jreal(st, "mark") < (double)size,
	      "relay1 did not step aside: %.300s", jsect(r1, "\"repl\""));
	CHECK(wait_log("relay1", "forwards slower than it receives"), "relay1 log: %.600s",
	      slurp("relay1", "err"));
	/* The new order: relay2 < origin (relay1 skipped), relay1 < relay2. */
	CHECK(!strcmp(jstr(jsect(r2, "\"fetch\""), "skipped", v, sizeof(v)), a1), "skipped %s", v);
	CHECK(!strcmp(jstr(jsect(r2, "\"fetch\""), "from", v, sizeof(v)), a0), "relay2 from %s", v);
	CHECK(!strcmp(jstr(jsect(r1, "\"fetch\""), "moved_to", v, sizeof(v)), a2) &&
		      jreal(jsect(r1, "\"fetch\""), "moved_at") > 0,
	      "relay1 moved to %s", v);
	CHECK(!strcmp(jstr(jsect(r1, "\"fetch\""), "from", v, sizeof(v)), a2), "relay1 from %s", v);
	/* Through relay1's 1 MB/s uplink the blob takes over a minute; from
	 * the origin (40 MiB/s), a few seconds. */
	took = jreal(jsect(r2, "\"fetch\""), "seconds");
	CHECK(took > 0 && took < (double)size / 1e6 / 3, "relay2 took %.1f s", took);
	tap_diag("relay2 verified in %.2f s (%.0f s through relay1's uplink)", took,
		 (double)size / 1e6);
	return TAP_PASS;
}

/* The same chain at full speed: no relay falls behind, none steps aside. */
static int t_no_step_unshaped(void)
{
	char a0[48], a1[48], a2[48], v[64];
	int r;

	NEED_NET();
	CHECK(!chain(a0, a1, a2), "chain failed");
	r = all_verified();
	if (r != TAP_PASS)
		return r;
	CHECK(jreal(jsect(r1, "\"repl\""), "steps") == 0 && !strstr(r1, "\"stepped_aside\"") &&
		      !jstr(jsect(r2, "\"fetch\""), "skipped", v, sizeof(v))[0] &&
		      !jstr(jsect(r1, "\"fetch\""), "moved_to", v, sizeof(v))[0],
	      "a step aside: %.300s | %.300s", jsect(r1, "\"repl\""), jsect(r2, "\"fetch\""));
	CHECK(!strcmp(jstr(jsect(r2, "\"fetch\""), "from", v, sizeof(v)), a1), "relay2 from %s", v);
	return TAP_PASS;
}

/* STEP is a text frame; STEPPED an AUTH flag, with RANGE too; the next bit
 * is refused. */
static int t_wire(void)
{
	struct repl_frame f = { .type = REPL_STEP, .size = 4096, .offset = 8192, .body_len = 5 }, d;
	uint8_t b[REPL_FRAME_MAX];
	int n;

	memcpy(f.body, "slow!", 5);
	n = repl_frame_encode(&f, b);
	CHECK(n == REPL_HDR + 5 && !repl_frame_decode(b, (size_t)n, &d) && d.type == REPL_STEP &&
		      d.offset == 8192 && !strcmp((char *)d.body, "slow!"),
	      "STEP round trip: %d", n);
	b[REPL_HDR] = '\n';
	put32(b + 28, pfs_crc32c(pfs_crc32c(0, b, 28), b + REPL_HDR, 5));
	CHECK(repl_frame_decode(b, (size_t)n, &d) == -EBADMSG,
	      "a control byte in STEP's text accepted");
	f = (struct repl_frame){ .type = REPL_STEP, .size = 4096 };
	CHECK(repl_frame_encode(&f, b) == -EINVAL, "an empty STEP encoded");
	f = (struct repl_frame){ .type = REPL_AUTH,
				 .size = 4096,
				 .offset = 0,
				 .end = 4096,
				 .flags = REPL_FLAG_RANGE | REPL_FLAG_STEPPED,
				 .body_len = REPL_AUTH_RANGE_BODY };
	n = repl_frame_encode(&f, b);
	CHECK(n > 0 && !repl_frame_decode(b, (size_t)n, &d) &&
		      d.flags == (REPL_FLAG_RANGE | REPL_FLAG_STEPPED),
	      "AUTH RANGE|STEPPED: %d flags %#x", n, d.flags);
	b[25] |= 0x20;
	put32(b + 28, pfs_crc32c(pfs_crc32c(0, b, 28), b + REPL_HDR, (size_t)n - REPL_HDR));
	CHECK(repl_frame_decode(b, (size_t)n, &d) == -EPROTO, "flag 0x20 accepted");
	CHECK(!strcmp(repl_type_str(REPL_STEP), "STEP"), "type name %s", repl_type_str(REPL_STEP));
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "setup: netns, veth, a source of real files", t_setup, .setup = true },
	{ "STEP and STEPPED on the wire: round trips, refusals", t_wire },
	{ "relay1's uplink at 8 Mbit/s: it steps aside, relay2 < origin, relay1 < relay2, all "
	  "verified",
	  t_slow_relay },
	{ "the same chain unshaped: nobody steps aside", t_no_step_unshaped },
};

TAP_MAIN(tests)
