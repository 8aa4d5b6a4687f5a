// SPDX-License-Identifier: Apache-2.0
/*
 * Files-layout relays (`pfs blob create --fetch-from ... --layout files`)
 * as the holder pods run them: the binary in $PFS over a real veth pair
 * between two network namespaces, a real tree (/usr/include/linux, 700+
 * files) as the source. An origin with --layout files serves relay1 (the
 * other namespace) which serves relay2 (cut-through: relay2 gets bytes
 * before relay1 has them all); every node's files directory equals the
 * source (names, sizes, bytes), the fingerprints agree and every relay
 * verified every chunk against the origin's list. A relay asking
 * a flat origin for the layout fails with the message and leaves nothing;
 * a relay whose upstream dies mid-stream and whose next upstream holds
 * another layout (a smaller tree padded to the same blob size) fails with
 * the message and leaves nothing; a relay of a holder whose copy changed
 * after its load names the file (hashed while it arrived) and leaves
 * nothing. Needs root (netns); SKIP otherwise.
 * Blobs under a private /dev/shm directory, removed at the end.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "json_util.h"
#include "netns.h"
#include "repl_util.h"

#define SRC "/usr/include/linux"
#define SRC_SMALL "/usr/include/linux/netfilter" /* another tree, padded */

static char tok[128], dirs[3][128], blob_size[32], raw_size[32], root[96];
static const char *const node[3] = { "origin", "relay1", "relay2" };

static void cleanup(void)
{
	if (root[0])
		sh("chmod -R u+w %s 2>/dev/null; rm -rf %s", root, root);
}

static int t_setup(void)
{
	int r = netns_setup("rl", 45);
	char cmd[256], *out;
	FILE *f;

	if (r != TAP_PASS)
		return r;
	if (access(SRC, R_OK) || access(SRC_SMALL, R_OK))
		return net_ok = false,
		       tap_skip("%s or %s missing (linux-libc-dev)", SRC, SRC_SMALL);
	atexit(cleanup);
	snprintf(root, sizeof(root), "/dev/shm/pfs-layout-%d", getpid());
	CHECK(!mkdir(root, 0755), "mkdir %s: %s", root, strerror(errno));
	for (int i = 0; i < 3; i++) {
		snprintf(dirs[i], sizeof(dirs[i]), "%s/%s", root, node[i]);
		CHECK(!mkdir(dirs[i], 0755), "mkdir %s", dirs[i]);
	}
	snprintf(tok, sizeof(tok), "%s/token", tmpdir);
	f = fopen(tok, "w");
	CHECK(f && fprintf(f, "%s\n",
			   "3c1f0c3e9a2d4c5b8e7f60718293a4b5c6d7e8f90a1b2c3d4e5f607182") > 0,
	      "token");
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s blob create --source %s --dry-run 2>/dev/null", pfs_bin,
		 SRC);
	out = slurp_cmd(cmd);
	snprintf(blob_size, sizeof(blob_size), "%lld",
		 (long long)jreal(jsect(out, "\"source\""), "blob_size"));
	free(out);
	CHECK(atoll(blob_size) > (4LL << 20), "dry run: blob_size %s", blob_size);
	/* What the operator passes: a --size that is not a 2 MiB multiple (the
	 * relay rounds it up, as every blob's size is). */
	snprintf(raw_size, sizeof(raw_size), "%lld", atoll(blob_size) - 4095);
	tap_diag("source %s, blob %s bytes", SRC, blob_size);
	return TAP_PASS;
}

static char js[3][8192];

/* origin (ns a) -> relay1 (ns b) -> relay2 (ns a), all --layout files,
 * the relays receiving over @xport, on ports from @port. */
static int chain(const char *xport, int port)
{
	char a0[48], a1[48], fp[3][32], e[64], dp[8];
	pid_t p[3];
	int rc[3];

	NEED_NET();
	addr(a0, ip_a, port);
	addr(a1, ip_b, port + 1);
	snprintf(dp, sizeof(dp), "%d", port + 2);
	for (int i = 0; i < 3; i++)
		sh("chmod -R u+w %s/m.d 2>/dev/null; rm -rf %s/m.d %s/*.json %s/*.err", dirs[i],
		   dirs[i], tmpdir, tmpdir);
	/* paced so that relay2 is under way before relay1 has every byte */
	p[0] = pfs_in(ns_a, "origin", "blob", "create", "--source", SRC, "--layout", "files",
		      "--dir", dirs[0], "--name", "m", "--token-file", tok, "--replicate-listen",
		      a0, "--replicate-linger", "2s", "--replicate-rate", "3M", NULL);
	p[1] = pfs_in(ns_b, "relay1", "blob", "create", "--size", blob_size, "--layout", "files",
		      "--dir", dirs[1], "--name", "m", "--token-file", tok, "--fetch-from", a0,
		      "--replicate-listen", a1, "--replicate-linger", "2s", "--fetch-timeout",
		      "60s", "--fetch-transport", xport, NULL);
	/* relay1 listens once it has the layout and made its blob */
	if (!wait_log_for("relay1", "repl serve: listening", 10))
		tap_diag("relay1 did not listen within 10 s: %s", slurp("relay1", "err"));
	p[2] = pfs_in(ns_a, "relay2", "blob", "create", "--size", raw_size, "--layout", "files",
		      "--dir", dirs[2], "--name", "m", "--token-file", tok, "--fetch-from", a1,
		      "--fetch-timeout", "60s", "--fetch-transport", xport,
		      /* tcp takes no data port: the list ends here */
		      strcmp(xport, "tcp") ? "--fetch-data-port" : NULL, dp, NULL);
	for (int i = 2; i >= 0; i--)
		rc[i] = wait_rc(p[i], 120);
	for (int i = 0; i < 3; i++) {
		snprintf(js[i], sizeof(js[i]), "%s", slurp(node[i], "json"));
		if (rc[i])
			tap_diag("%s rc %d: %.1500s", node[i], rc[i], slurp(node[i], "err"));
	}
	CHECK(!rc[0] && !rc[1] && !rc[2], "exit codes %d %d %d", rc[0], rc[1], rc[2]);
	for (int i = 0; i < 3; i++) {
		CHECK(jstr(jsect(js[i], "\"blob\""), "fingerprint", fp[i], sizeof(fp[i])) &&
			      !strcmp(fp[i], fp[0]),
		      "%s fingerprint %s, origin %s", node[i], fp[i], fp[0]);
		/* names, sizes and bytes: diff -r says "Only in" for a name
		 * on one side and "differ" for any other content */
		CHECK(!sh("diff -r %s %s/m.d/files >&2", SRC, dirs[i]),
		      "%s: %s/m.d/files differs from %s", node[i], dirs[i], SRC);
		CHECK(!sh("test \"$(cd %s && find . | sort)\" = \"$(cd %s/m.d/files && find . | "
			  "sort)\"",
			  SRC, dirs[i]),
		      "%s: the tree of names differs", node[i]);
	}
	for (int i = 1; i < 3; i++) {
		const char *f = jsect(js[i], "\"fetch\"");
		const char *ch = jsect(js[i], "\"chunks\":{"), *och = jsect(js[0], "\"chunks\":{");
		char root[72], oroot[72];

		/* Relays verify every chunk against the origin's BLAKE3 list (the
		 * same root as the origin's), over TCP or datagrams alike. */
		CHECK(f && strstr(f, "\"verified_by\":\"chunks\""), "%s (%s) fetch: %.600s",
		      node[i], xport, f ? f : js[i]);
		CHECK(ch && och && jstr(ch, "root", root, sizeof(root)) &&
			      jstr(och, "root", oroot, sizeof(oroot)) && !strcmp(root, oroot) &&
			      jreal(ch, "verified") == jreal(ch, "count"),
		      "%s chunks %.400s, origin's %.400s", node[i], ch ? ch : "-", och ? och : "-");
		CHECK(f && strstr(f, "\"verified\":true") &&
			      jreal(jsect(f, "\"layout\""), "files") > 700 &&
			      jreal(jsect(f, "\"layout\""), "frames") >= 1,
		      "%s fetch: %.600s", node[i], f ? f : js[i]);
	}
	for (int i = 1; i < 3; i++)
		CHECK(!sh("grep -q '\"state\":\"verified\"' %s/m.d/progress", dirs[i]),
		      "%s: its progress file does not say verified", node[i]);
	CHECK(!strcmp(jstr(jsect(js[2], "\"fetch\""), "from", e, sizeof(e)), a1),
	      "relay2 fetched from %s, not relay1", e);
	/* cut-through: relay2's first byte before relay1's last */
	CHECK(jreal(jsect(js[2], "\"fetch\""), "t0_unix") <
		      jreal(jsect(js[1], "\"fetch\""), "t1_unix"),
	      "relay2 began at %.3f, relay1 ended at %.3f",
	      jreal(jsect(js[2], "\"fetch\""), "t0_unix"),
	      jreal(jsect(js[1], "\"fetch\""), "t1_unix"));
	tap_diag("%s: fingerprint %s on all three; relay1 %.0f files in %.0f LAYOUT frames", xport,
		 fp[0], jreal(jsect(jsect(js[1], "\"fetch\""), "\"layout\""), "files"),
		 jreal(jsect(jsect(js[1], "\"fetch\""), "\"layout\""), "frames"));
	return TAP_PASS;
}

static int t_chain(void)
{
	return chain("tcp", 7480);
}

/* The LAYOUT frames come on the control connection before the datagram
 * transfer's own records. */
static int t_chain_udp(void)
{
	return chain("udp", 7490);
}

/* A relay asking a flat origin for the layout: refused with the message. */
static int t_flat_origin(void)
{
	char a0[48];
	pid_t po, pr;
	int ro, rr;

	NEED_NET();
	addr(a0, ip_a, 7482);
	po = pfs_in(ns_a, "flat", "blob", "create", "--source", SRC, "--page", "4k", "--dir",
		    dirs[0], "--name", "flat", "--token-file", tok, "--replicate-listen", a0,
		    "--replicate-linger", "1s", NULL);
	pr = pfs_in(ns_b, "frelay", "blob", "create", "--size", blob_size, "--layout", "files",
		    "--dir", dirs[1], "--name", "f", "--token-file", tok, "--fetch-from", a0,
		    "--fetch-timeout", "30s", NULL);
	rr = wait_rc(pr, 60);
	ro = wait_rc(po, 60);
	tap_diag("relay: %.400s", slurp("frelay", "json"));
	CHECK(!ro, "flat origin rc %d: %s", ro, slurp("flat", "err"));
	CHECK(rr && strstr(slurp("frelay", "json"), "without a file layout") &&
		      strstr(slurp("frelay", "json"), "--layout files"),
	      "relay rc %d: %s", rr, slurp("frelay", "json"));
	CHECK(sh("test -e %s/f.d", dirs[1]), "the failed relay left %s/f.d", dirs[1]);
	return TAP_PASS;
}

/* The relay's first upstream dies mid-stream; the next one holds a blob of
 * the same size with another layout: the resume fails with the message. */
static int t_resume_other_layout(void)
{
	char a0[48], a1[48], ups[100], prog[160], pl[256];
	pid_t p1, p2, pr;
	FILE *pf;
	int rr;

	NEED_NET();
	addr(a0, ip_a, 7483);
	addr(a1, ip_a, 7484);
	snprintf(ups, sizeof(ups), "%s,%s", a0, a1);
	p1 = pfs_in(ns_a, "up1", "blob", "create", "--source", SRC, "--layout", "files", "--dir",
		    dirs[0], "--name", "u1", "--token-file", tok, "--replicate-listen", a0,
		    "--replicate-rate", "1M", NULL);
	p2 = pfs_in(ns_a, "up2", "blob", "create", "--source", SRC_SMALL, "--size", blob_size,
		    "--layout", "files", "--dir", dirs[0], "--name", "u2", "--token-file", tok,
		    "--replicate-listen", a1, "--replicate-linger", "20s", NULL);
	CHECK(wait_log_for("up1", "repl serve: listening", 10) &&
		      wait_log_for("up2", "repl serve: listening", 10),
	      "upstreams: %s %s", slurp("up1", "err"), slurp("up2", "err"));
	pr = pfs_in(ns_b, "rrelay", "blob", "create", "--size", blob_size, "--layout", "files",
		    "--dir", dirs[1], "--name", "r", "--token-file", tok, "--fetch-from", ups,
		    "--fetch-timeout", "30s", NULL);
	/* some bytes in from up1, then it dies */
	if (!wait_log_for("rrelay", "created", 10))
		tap_diag("the relay made no blob: %s", slurp("rrelay", "err"));
	usleep(1500000);
	/* meanwhile the relay's progress file says how far it got */
	snprintf(prog, sizeof(prog), "%s/r.d/progress", dirs[1]);
	pf = fopen(prog, "r");
	pl[0] = '\0';
	if (pf) {
		if (!fgets(pl, sizeof(pl), pf))
			pl[0] = '\0';
		fclose(pf);
	}
	kill(p1, SIGKILL);
	rr = wait_rc(pr, 60);
	wait_rc(p1, 10);
	kill(p2, SIGTERM);
	wait_rc(p2, 20);
	tap_diag("relay: %.500s", slurp("rrelay", "json"));
	CHECK(rr && strstr(slurp("rrelay", "json"), "another file layout") &&
		      strstr(slurp("rrelay", "json"), a1),
	      "relay rc %d: %s / %s", rr, slurp("rrelay", "json"), slurp("rrelay", "err"));
	tap_diag("progress mid-fetch: %s", pl);
	CHECK(strstr(pl, "\"state\":\"fetching\"") && jreal(pl, "bytes") > 0 &&
		      jreal(pl, "size") == atof(blob_size),
	      "the relay's progress file mid-fetch: '%s'", pl);
	CHECK(strstr(slurp("rrelay", "err"), "resuming at"), "no resume: %s",
	      slurp("rrelay", "err"));
	CHECK(sh("test -e %s/r.d", dirs[1]), "the failed relay left %s/r.d", dirs[1]);
	return TAP_PASS;
}

/* A holder whose copy was changed after its load (one byte of types.h):
 * the relay hashes while it receives, names the file and leaves nothing. */
static int t_changed_holder(void)
{
	char a0[48], sock[128];
	pid_t ps, pr;
	int rr;

	NEED_NET();
	addr(a0, ip_a, 7485);
	CHECK(!sh("%s blob create --source %s --layout files --dir %s --name x >/dev/null 2>&1 && "
		  "chmod u+w %s/x.d/files/types.h && "
		  "printf X | dd of=%s/x.d/files/types.h bs=1 seek=100 conv=notrunc 2>/dev/null",
		  pfs_bin, SRC, dirs[0], dirs[0], dirs[0]),
	      "make and change the holder's blob");
	snprintf(sock, sizeof(sock), "%s/x.sock", tmpdir);
	ps = pfs_in(ns_a, "xhold", "blob", "serve", "--name", "x", "--dir", dirs[0], "--socket",
		    sock, "--token-file", tok, "--replicate-listen", a0, NULL);
	CHECK(wait_log_for("xhold", "repl serve: listening", 10), "holder: %s",
	      slurp("xhold", "err"));
	pr = pfs_in(ns_b, "xrelay", "blob", "create", "--size", blob_size, "--layout", "files",
		    "--dir", dirs[1], "--name", "x", "--token-file", tok, "--fetch-from", a0,
		    "--fetch-timeout", "30s", "--verify-threads", "2", NULL);
	rr = wait_rc(pr, 60);
	kill(ps, SIGTERM);
	wait_rc(ps, 20);
	tap_diag("relay: %.300s", slurp("xrelay", "json"));
	/* Exit 3 (PFS_EXIT_MISMATCH): the operator's VerificationFailed. */
	CHECK(rr == 3 && strstr(slurp("xrelay", "json"),
				"'types.h': its bytes do not have the manifest's sha256"),
	      "relay rc %d: %s", rr, slurp("xrelay", "json"));
	CHECK(!strstr(slurp("xrelay", "err"), "no streaming verify"),
	      "the relay did not stream: %s", slurp("xrelay", "err"));
	CHECK(sh("test -e %s/x.d", dirs[1]), "the failed relay left %s/x.d", dirs[1]);
	return TAP_PASS;
}

/* --verify-threads 0: the files are hashed after the last byte, and still
 * verified (what a benchmark's one-hop limit uses: a receive alone). */
static int t_verify_after(void)
{
	char a0[48];
	const char *f;
	pid_t po, pr;
	int ro, rr;

	NEED_NET();
	addr(a0, ip_a, 7486);
	sh("chmod -R u+w %s/va.d %s/va.d 2>/dev/null; rm -rf %s/va.d %s/va.d", dirs[0], dirs[1],
	   dirs[0], dirs[1]);
	po = pfs_in(ns_a, "vorigin", "blob", "create", "--source", SRC, "--layout", "files",
		    "--dir", dirs[0], "--name", "va", "--token-file", tok, "--replicate-listen", a0,
		    "--replicate-linger", "1s", NULL);
	pr = pfs_in(ns_b, "vrelay", "blob", "create", "--size", blob_size, "--layout", "files",
		    "--dir", dirs[1], "--name", "va", "--token-file", tok, "--fetch-from", a0,
		    "--fetch-timeout", "30s", "--verify-threads", "0", NULL);
	rr = wait_rc(pr, 60);
	ro = wait_rc(po, 60);
	f = jsect(slurp("vrelay", "json"), "\"fetch\"");
	CHECK(!ro && !rr, "origin rc %d, relay rc %d: %s", ro, rr, slurp("vrelay", "err"));
	CHECK(f && strstr(f, "\"verified\":true") && strstr(f, "\"verify_streamed\":false"),
	      "relay fetch: %.500s", f ? f : slurp("vrelay", "json"));
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "setup: netns, veth, a real tree (/usr/include/linux)", t_setup, .setup = true },
	{ "--layout files: origin -> relay1 -> relay2 (cut-through): every files dir equals the "
	  "source, fingerprints equal",
	  t_chain },
	{ "udp: the same chain, the layout first on the control connection", t_chain_udp },
	{ "a relay asking a flat origin for the layout fails with the message", t_flat_origin },
	{ "a resume on an upstream with another layout fails with the message",
	  t_resume_other_layout },
	{ "a holder whose copy changed: the relay names the file, leaves nothing",
	  t_changed_holder },
	{ "--verify-threads 0: hashed after the last byte, still verified", t_verify_after },
	{ "teardown: namespaces removed", netns_remove, .setup = true },
};

TAP_MAIN(tests)
