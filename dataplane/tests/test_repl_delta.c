// SPDX-License-Identifier: Apache-2.0
/*
 * Delta replication (`pfs blob create/serve --delta-base...`): a new
 * version of a blob fanned out to nodes that hold the old one, as delta
 * grams each relay applies to its own base. The binary in $PFS over a
 * real veth pair (origin and relay2 in one namespace, relay1 in the
 * other), real files from data sets of hack/testdata.sh (tests/testdata.h):
 * both versions hold the all-MiniLM-L6-v2 model directory (87 MiB) beside
 * silero-vad's model files, version 1 those of silero-vad 5.1.2 (5.9 MB),
 * version 2 those of 6.2.3 (13.8 MB: two of the three files retrained,
 * one the same, five new), as a model repository whose next release
 * changes and adds a few files; another blob (silero-vad 5's files alone)
 * is the wrong base. Checked: the chain's copies equal the origin's and
 * verify, far fewer bytes on the wire than the blob; a relay whose base
 * differs, and an upstream without a base, fetch whole (refusal counted,
 * still verified); a relay killed mid-stream (once the next one holds
 * bytes), the next resuming delta grams from the origin; a fake
 * upstream's bad delta grams rejected and counted; AUTH's DELTA flag on
 * the wire; every relay verifies by the origin's chunk digests, which
 * follow the delta grams as they follow whole grams. Needs root (netns); SKIP otherwise. Without its data
 * (PFS_TESTDATA_MINILM, PFS_TESTDATA_SILERO5, PFS_TESTDATA_SILERO6 unset
 * or not a directory) the setup FAILS.
 *
 * By hand, from dataplane/ as root (make test sets the same variables):
 *   for s in minilm silero5 silero6; do
 *     export PFS_TESTDATA_${s^^}="$(../hack/testdata.sh path $s)"; done
 *   PFS=build/pfs build/tests/test_repl_delta
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>

#include "repl/blob_repl_int.h"
#include "json_util.h"
#include "netns.h"
#include "pfs/delta.h"
#include "repl_util.h"
#include "testdata.h"
#include "wire/wire_le.h"

static char tok[128], v1[128], v2[128], other[128], bsize[32], base_path[2][160];
static char names[8][64];
static long long size;

static void cleanup(void)
{
	for (int i = 0; i < 8; i++)
		if (names[i][0])
			sh("rm -f /dev/shm/%s /dev/shm/%s.chunks", names[i], names[i]);
}

static char *bname(int i, const char *what)
{
	snprintf(names[i], sizeof(names[i]), "pfs-rdelta-%s-%d", what, getpid());
	return names[i];
}

/* A source directory @dir of copies of the directories @minilm (NULL:
 * none) and @silero. Copies, not hard links: a link to a cached file
 * shares its inode, whose ctime moves whenever any other process (another
 * run of this suite) links or unlinks it, and the source reader rightly
 * calls that a changed source. */
static int copy_sets(const char *dir, const char *minilm, const char *silero)
{
	if (mkdir(dir, 0755))
		return -1;
	if (minilm && sh("cp -r %s %s/minilm", minilm, dir))
		return -1;
	return sh("cp -r %s %s/silero_vad", silero, dir) ? -1 : 0;
}

/* Blob slot @i from source @dir, in /dev/shm: 0 or -1. */
static int make_blob(int i, const char *what, const char *dir)
{
	return sh("%s blob create --source %s --page 4k --dir /dev/shm --name %s --replace "
		  ">/dev/null 2>%s/mk-%s.err",
		  pfs_bin, dir, bname(i, what), tmpdir, what);
}

static int t_setup(void)
{
	const char *minilm, *silero5, *silero6;
	char cmd[256], *out;
	FILE *f;
	int r = netns_setup("rd", 44);

	if (r != TAP_PASS)
		return r;
	minilm = testdata_dir("PFS_TESTDATA_MINILM", "minilm");
	silero5 = testdata_dir("PFS_TESTDATA_SILERO5", "silero5");
	silero6 = testdata_dir("PFS_TESTDATA_SILERO6", "silero6");
	if (!minilm || !silero5 || !silero6) {
		/* The checks after this one skip, each a failure in tests/run.sh. */
		net_ok = false;
		snprintf(net_skip, sizeof(net_skip), "setup failed: %.170s", testdata_why);
		return TAP_FAIL;
	}
	atexit(cleanup);
	snprintf(tok, sizeof(tok), "%s/token", tmpdir);
	f = fopen(tok, "w");
	CHECK(f && fprintf(f, "6b1f0c3e9a2d4c5b8e7f60718293a4b5c6d7e8f90a1b2c3d\n") > 0, "token");
	fclose(f);
	snprintf(v1, sizeof(v1), "%s/v1", tmpdir);
	snprintf(v2, sizeof(v2), "%s/v2", tmpdir);
	snprintf(other, sizeof(other), "%s/other", tmpdir);
	CHECK(!copy_sets(v1, minilm, silero5) && !copy_sets(v2, minilm, silero6) &&
		      !copy_sets(other, NULL, silero5),
	      "source directories");
	/* The old version on each "node", and a different one. */
	CHECK(!make_blob(0, "base-a", v1) && !make_blob(1, "base-b", v1) &&
		      !make_blob(2, "other", other),
	      "base blobs: %s", slurp("mk-base-a", "err"));
	for (int i = 0; i < 2; i++)
		snprintf(base_path[i], sizeof(base_path[i]), "/dev/shm/%s", names[i]);
	snprintf(cmd, sizeof(cmd), "%s blob create --source %s --dry-run 2>/dev/null", pfs_bin, v2);
	out = slurp_cmd(cmd);
	size = (long long)jreal(jsect(out, "\"source\""), "blob_size");
	free(out);
	CHECK(size > (40LL << 20), "v2 blob size %lld", size);
	snprintf(bsize, sizeof(bsize), "%lld", size);
	tap_diag("v2: %lld bytes", size);
	return TAP_PASS;
}

static char o[8192], r1[8192], r2[8192];

/* The origin of v2 in ns a on @port with base @obase (NULL: none), paced
 * at @rate (NULL: not). */
static pid_t origin(int port, const char *obase, const char *rate)
{
	char a0[48];

	sh("rm -f %s/origin.err", tmpdir);
	return pfs_in(ns_a, "origin", "blob", "create", "--source", v2, "--page", "4k", "--dir",
		      "/dev/shm", "--name", bname(3, "origin"), "--replace", "--token-file", tok,
		      "--replicate-listen", addr(a0, ip_a, port), "--replicate-linger", "2s",
		      "--replicate-rate", rate ? rate : "1T", obase ? "--delta-base" : NULL, obase,
		      NULL);
}

/* A relay in @ns (slot @i, @tag) from @from, rebuilding over @base,
 * serving on @listen (NULL: not). */
static pid_t relay(const char *ns, int i, const char *tag, const char *from, const char *listen,
		   const char *base)
{
	sh("rm -f %s/%s.err", tmpdir, tag);
	return pfs_in(ns, tag, "blob", "create", "--size", bsize, "--page", "4k", "--dir",
		      "/dev/shm", "--name", bname(i, tag), "--replace", "--token-file", tok,
		      "--fetch-from", from, "--fetch-timeout", "60s", "--delta-base", base,
		      listen ? "--replicate-listen" : NULL, listen, "--replicate-linger", "2s",
		      NULL);
}

/* Exit codes; on a failure the logs. */
static bool ended_ok(const char *const *tags, const pid_t *pids, int n, int ok_mask)
{
	bool ok = true;

	for (int i = 0; i < n; i++) {
		int rc = wait_rc(pids[i], 120);

		if (rc && (ok_mask >> i & 1)) {
			tap_diag("%s rc %d: %.1500s", tags[i], rc, slurp(tags[i], "err"));
			ok = false;
		}
	}
	return ok;
}

static const char *fetch_delta(const char *r)
{
	return jsect(jsect(r, "\"fetch\""), "\"delta\"");
}

/* Same bytes as the origin: fingerprint and manifest sha256, verified. */
static bool same_as_origin(const char *r)
{
	char f0[24], f1[24], s0[70], s1[70];

	jstr(jsect(o, "\"blob\""), "fingerprint", f0, sizeof(f0));
	jstr(jsect(r, "\"blob\""), "fingerprint", f1, sizeof(f1));
	jstr(jsect(o, "\"source\""), "sha256", s0, sizeof(s0));
	jstr(jsect(r, "\"manifest\""), "sha256", s1, sizeof(s1));
	return f0[0] && !strcmp(f0, f1) && s0[0] && !strcmp(s0, s1) &&
	       strstr(r, "\"verified\":true");
}

/* origin -> relay1 -> relay2, every node holding v1: delta all the way. */
static int t_chain(void)
{
	static const char *const tags[] = { "relay2", "relay1", "origin" };
	char a0[48], a1[48];
	pid_t p[3];
	double w1, w2;

	NEED_NET();
	p[2] = origin(7470, base_path[0], NULL);
	p[1] = relay(ns_b, 4, "relay1", addr(a0, ip_a, 7470), addr(a1, ip_b, 7471), base_path[1]);
	if (!wait_log("relay1", "repl serve: listening"))
		tap_diag("relay1 did not listen within 5 s");
	p[0] = relay(ns_a, 5, "relay2", a1, NULL, base_path[0]);
	CHECK(ended_ok(tags, p, 3, 7), "chain failed");
	snprintf(o, sizeof(o), "%s", slurp("origin", "json"));
	snprintf(r1, sizeof(r1), "%s", slurp("relay1", "json"));
	snprintf(r2, sizeof(r2), "%s", slurp("relay2", "json"));
	CHECK(same_as_origin(r1) && same_as_origin(r2), "copies: %.600s | %.600s", r1, r2);
	w1 = jreal(fetch_delta(r1), "wire_bytes");
	w2 = jreal(fetch_delta(r2), "wire_bytes");
	tap_diag("blob %lld bytes; on the wire: relay1 %.0f, relay2 %.0f (%.1fx less)", size, w1,
		 w2, (double)size / w1);
	CHECK(jreal(fetch_delta(r1), "bytes") == (double)size &&
		      jreal(fetch_delta(r2), "bytes") == (double)size &&
		      jreal(fetch_delta(r1), "whole_bytes") == 0,
	      "rebuilt from delta grams: %.500s", fetch_delta(r1));
	/* silero-vad 6's changed and new files (12.5 MB) are new to the
	 * base: the rest (minilm, the unchanged half model) must travel as
	 * offsets. Measured: 8.9 MB on the wire of a 107 MB blob. */
	CHECK(w1 > 0 && w1 < (double)size / 3 && w2 < (double)size / 3, "wire %.0f %.0f of %lld",
	      w1, w2, size);
	CHECK(jreal(jsect(jsect(o, "\"repl\""), "\"delta\""), "clients") == 1 &&
		      jreal(jsect(jsect(r1, "\"repl\""), "\"delta\""), "clients") == 1 &&
		      jreal(jsect(jsect(r1, "\"repl\""), "\"delta\""), "wire_bytes") > 0,
	      "served as delta: %.400s", strstr(r1, "\"repl\""));
	CHECK(!sh("%s blob manifest --name %s --dir /dev/shm --verify >/dev/null 2>&1", pfs_bin,
		  names[5]),
	      "pfs blob manifest --verify");
	/* Delta grams carry the chunk digests too: each relay verified the
	 * bytes it rebuilt chunk by chunk, against the origin's list. */
	for (int i = 0; i < 2; i++) {
		const char *r = i ? r2 : r1;
		char ro[72], rr[72];

		CHECK(strstr(jsect(r, "\"fetch\""), "\"verified_by\":\"chunks\"") &&
			      strstr(jsect(r, "\"chunks\":{"), "\"list\":\"received\"") &&
			      jreal(jsect(r, "\"chunks\":{"), "verified") ==
				      jreal(jsect(o, "\"chunks\":{"), "count") &&
			      jstr(jsect(o, "\"chunks\":{"), "root", ro, sizeof(ro)) &&
			      jstr(jsect(r, "\"chunks\":{"), "root", rr, sizeof(rr)) &&
			      !strcmp(ro, rr),
		      "relay%d: %.400s / origin %.400s", i + 1, jsect(r, "\"chunks\":{"),
		      jsect(o, "\"chunks\":{"));
	}
	return TAP_PASS;
}

/* A relay whose base is another blob: refused, fetched whole, verified. */
static int t_other_base(void)
{
	static const char *const tags[] = { "relay1", "origin" };
	char a0[48], path[160];
	pid_t p[2];

	NEED_NET();
	snprintf(path, sizeof(path), "/dev/shm/%s", names[2]);
	p[1] = origin(7480, base_path[0], NULL);
	p[0] = relay(ns_b, 4, "relay1", addr(a0, ip_a, 7480), NULL, path);
	CHECK(ended_ok(tags, p, 2, 3), "failed");
	snprintf(o, sizeof(o), "%s", slurp("origin", "json"));
	snprintf(r1, sizeof(r1), "%s", slurp("relay1", "json"));
	CHECK(same_as_origin(r1), "copy: %.600s", r1);
	CHECK(jreal(fetch_delta(r1), "refused") == 1 && jreal(fetch_delta(r1), "bytes") == 0 &&
		      jreal(fetch_delta(r1), "whole_bytes") == (double)size,
	      "whole after a refusal: %.500s", fetch_delta(r1));
	CHECK(jreal(jsect(jsect(o, "\"repl\""), "\"delta\""), "refused") == 1 &&
		      strstr(slurp("origin", "err"), "base is another"),
	      "the origin says why: %.300s", strstr(o, "\"repl\""));
	return TAP_PASS;
}

/* An upstream without a base: the relay with one fetches whole. */
static int t_no_base_upstream(void)
{
	static const char *const tags[] = { "relay1", "origin" };
	char a0[48];
	pid_t p[2];

	NEED_NET();
	p[1] = origin(7482, NULL, NULL);
	p[0] = relay(ns_b, 4, "relay1", addr(a0, ip_a, 7482), NULL, base_path[1]);
	CHECK(ended_ok(tags, p, 2, 3), "failed");
	snprintf(o, sizeof(o), "%s", slurp("origin", "json"));
	snprintf(r1, sizeof(r1), "%s", slurp("relay1", "json"));
	CHECK(same_as_origin(r1), "copy: %.600s", r1);
	CHECK(jreal(fetch_delta(r1), "refused") == 1 &&
		      jreal(fetch_delta(r1), "whole_bytes") == (double)size &&
		      strstr(slurp("relay1", "err"), "holds no base"),
	      "whole: %.500s", fetch_delta(r1));
	return TAP_PASS;
}

/* relay1 killed mid-stream (a paced origin), once relay2 holds the
 * origin's first MiB: relay2 resumes its delta grams from the origin at
 * its watermark. */
static int t_resume(void)
{
	static const char *const tags[] = { "relay2", "origin" };
	char a0[48], a1[48], from[100], held[2][96];
	pid_t p[2], k;
	double resumed, waited;

	NEED_NET();
	/* ~12x less on the wire (8.9 MB): 1 MB/s makes the delta last seconds. */
	p[1] = origin(7484, base_path[0], "1M");
	k = relay(ns_b, 4, "relay1", addr(a0, ip_a, 7484), addr(a1, ip_b, 7485), base_path[1]);
	if (!wait_log("relay1", "repl serve: listening"))
		tap_diag("relay1 did not listen within 5 s");
	snprintf(from, sizeof(from), "%s,%s", a1, a0);
	/* t_chain's relay2 blob must not answer wait_holds. */
	snprintf(held[0], sizeof(held[0]), "/dev/shm/%s", bname(5, "relay2"));
	snprintf(held[1], sizeof(held[1]), "/dev/shm/%s", bname(3, "origin"));
	sh("rm -f %s", held[0]);
	p[0] = relay(ns_a, 5, "relay2", from, NULL, base_path[0]);
	/* Not a fixed sleep: under ASan relay2 once held nothing 1.5 s after
	 * it started (the origin, then relay1, index the 98 MB base when
	 * their first delta client comes). */
	waited = wait_holds(held[0], held[1], 1 << 20, 60);
	kill(k, SIGKILL);
	wait_rc(k, 10);
	tap_diag("relay2 held the origin's first MiB %.2f s after it started", waited);
	CHECK(ended_ok(tags, p, 2, 3), "failed");
	CHECK(waited >= 0, "relay2 held nothing of the origin's first MiB in 60 s: %.600s",
	      slurp("relay2", "err"));
	snprintf(o, sizeof(o), "%s", slurp("origin", "json"));
	snprintf(r2, sizeof(r2), "%s", slurp("relay2", "json"));
	CHECK(same_as_origin(r2), "copy: %.600s", r2);
	resumed = jreal(jsect(r2, "\"resumed_at\""), "resumed_at");
	tap_diag("relay2 resumed at %s", strstr(r2, "\"resumed_at\""));
	CHECK(strstr(r2, "\"resumed_at\":[") && !strstr(r2, "\"resumed_at\":[]") &&
		      jreal(fetch_delta(r2), "bytes") == (double)size,
	      "resumed as delta: %.300s (%.0f)", fetch_delta(r2), resumed);
	return TAP_PASS;
}

/* As a fake upstream on @port: HELLO, ACCEPT for a DELTA AUTH, then a
 * delta gram @k: 0 one whose operation starts past the watermark, 1 a
 * wrong sequence number. Each must be dropped. Returns how many AUTHs
 * asked for a delta. */
static int fake_upstream(int port, uint64_t blob)
{
	int lfd = fake_listen(port), asked = 0;

	for (int k = 0; lfd >= 0 && k < 2; k++) {
		struct repl_frame ok = { .type = REPL_ACCEPT, .size = blob }, au;
		struct pfs_delta_op op = {
			.dst = k ? 0 : 4096, .len = 4096, .kind = PFS_DELTA_COPY, .elem = 1
		};
		int type, fd = fake_accept(lfd, blob, &au, &type);
		uint8_t g[256];
		ssize_t n;

		if (fd < 0)
			break;
		if (type == REPL_AUTH && (au.flags & REPL_FLAG_DELTA)) {
			asked++;
			frame_out(fd, &ok);
			n = pfs_delta_gram_encode(k ? 7 : 0, &op, 1, g, sizeof(g));
			if (n > 0)
				(void)!write(fd, g, (size_t)n);
		}
		frame_in(fd, &au); /* the relay must drop us: wait for its close */
		close(fd);
	}
	if (lfd >= 0)
		close(lfd);
	return asked;
}

static int t_malformed(void)
{
	char sock[128];
	pid_t srv, fk, rel;
	int fr, rr;

	NEED_NET();
	/* The real upstream: v2's origin blob of t_chain, served with v1. */
	snprintf(sock, sizeof(sock), "%s/serve.sock", tmpdir);
	srv = pfs_in(ns_a, "serve", "blob", "serve", "--name", names[3], "--dir", "/dev/shm",
		     "--socket", sock, "--token-file", tok, "--replicate-listen", "127.0.0.1:7490",
		     "--delta-base", base_path[0], NULL);
	fk = fork();
	if (fk == 0)
		_exit(netns_enter(ns_a) ? 255 : fake_upstream(7491, (uint64_t)size));
	usleep(100000);
	rel = pfs_in(ns_a, "mrelay", "blob", "create", "--size", bsize, "--page", "4k", "--dir",
		     "/dev/shm", "--name", bname(6, "mrelay"), "--replace", "--token-file", tok,
		     "--fetch-from", "127.0.0.1:7491,127.0.0.1:7491,127.0.0.1:7490",
		     "--fetch-timeout", "30s", "--delta-base", base_path[0], NULL);
	rr = wait_rc(rel, 60);
	fr = wait_rc(fk, 30);
	kill(srv, SIGTERM);
	wait_rc(srv, 20);
	snprintf(r1, sizeof(r1), "%s", slurp("mrelay", "json"));
	tap_diag("fake upstream asked %d, relay rc %d: %.300s", fr, rr, strstr(r1, "\"fetch\""));
	CHECK(fr == 2 && rr == 0, "relay: %.600s", slurp("mrelay", "err"));
	CHECK(jreal(jsect(r1, "\"fetch\""), "rejected") == 2 &&
		      jreal(fetch_delta(r1), "bytes") == (double)size &&
		      strstr(r1, "\"verified\":true"),
	      "two bad grams counted, then delta grams from the holder: %.600s", r1);
	CHECK(strstr(slurp("mrelay", "err"), "bad delta gram"), "logged: %.600s",
	      slurp("mrelay", "err"));
	return TAP_PASS;
}

/* AUTH with DELTA: round trip; refused malformed; the MAC covers the base. */
static int t_auth(void)
{
	struct repl_frame a = { .type = REPL_AUTH,
				.size = 1 << 20,
				.body_len = REPL_AUTH_DELTA_BODY,
				.flags = REPL_FLAG_DELTA,
				.base_size = 12345,
				.base_fp = 0xabcdef },
			  d;
	uint8_t b[REPL_FRAME_MAX], nonce[REPL_NONCE] = { 1 }, m0[REPL_MAC], m1[REPL_MAC];
	int n = repl_frame_encode(&a, b);

	CHECK(n == REPL_HDR + REPL_AUTH_DELTA_BODY && !repl_frame_decode(b, (size_t)n, &d) &&
		      d.flags == REPL_FLAG_DELTA && d.base_size == 12345 && d.base_fp == 0xabcdef,
	      "round trip");
	a.xport = REPL_XPORT_UDP;
	a.data_port = 9000;
	CHECK(repl_frame_encode(&a, b) == -EINVAL, "DELTA over udp encoded");
	b[24] = REPL_XPORT_UDP;
	put16(b + 26, 9000);
	put32(b + 28, pfs_crc32c(pfs_crc32c(0, b, 28), b + REPL_HDR, REPL_AUTH_DELTA_BODY));
	CHECK(repl_frame_decode(b, (size_t)n, &d) == -EPROTO, "DELTA over udp decoded");
	a = (struct repl_frame){ .type = REPL_AUTH,
				 .body_len = REPL_MAC,
				 .flags = REPL_FLAG_DELTA };
	CHECK(repl_frame_encode(&a, b) == -EINVAL, "DELTA without the base");
	a.flags = 0x80;
	CHECK(repl_frame_encode(&a, b) == -EINVAL, "an unknown flag");
	a = (struct repl_frame){
		.type = REPL_AUTH, .flags = REPL_FLAG_DELTA, .base_size = 1, .base_fp = 2
	};
	CHECK(!repl_auth_mac("k", 1, nonce, 4096, &a, m0), "mac");
	a.base_fp = 3;
	CHECK(!repl_auth_mac("k", 1, nonce, 4096, &a, m1) && memcmp(m0, m1, REPL_MAC),
	      "the MAC does not cover the base");
	return TAP_PASS;
}

/* The CLI's checks. */
static int t_cli(void)
{
	CHECK(sh("%s blob create --size 4M --delta-base /x >/dev/null 2>&1", pfs_bin) == 2,
	      "--delta-base alone");
	CHECK(sh("%s blob create --size 4M --token-file %s --fetch-from 127.0.0.1:1 "
		 "--fetch-transport udp --delta-base /x >/dev/null 2>&1",
		 pfs_bin, tok) == 2,
	      "delta over udp");
	CHECK(sh("%s blob create --size 4M --token-file %s --fetch-from 127.0.0.1:1 "
		 "--delta-base /x --delta-base-socket /y --delta-base-token-file /z "
		 ">/dev/null 2>&1",
		 pfs_bin, tok) == 2,
	      "two bases");
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "setup: netns, veth, v1 and v2 of a data set of real files", t_setup, .setup = true },
	{ "origin -> relay1 -> relay2, all holding v1: delta grams, equal, verified", t_chain },
	{ "a relay with another base: refused, fetched whole, verified", t_other_base },
	{ "an upstream without a base: fetched whole", t_no_base_upstream },
	{ "relay1 SIGKILLed mid-stream: relay2 resumes delta grams from the origin", t_resume },
	{ "a fake upstream's bad delta grams: rejected, counted, fetched elsewhere", t_malformed },
	{ "AUTH's DELTA flag: round trip, refused when malformed, base signed", t_auth },
	{ "CLI: what the --delta-base options need", t_cli },
};

TAP_MAIN(tests)
