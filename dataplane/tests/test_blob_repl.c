// SPDX-License-Identifier: Apache-2.0
/*
 * Blob replication (`pfs blob create --replicate-listen / --fetch-from`,
 * `pfs blob serve --replicate-listen`) as the operator's pods run it: the
 * binary in $PFS over a real veth pair between two network namespaces
 * (origin and relay2 in one, relay1 in the other, so every hop crosses the
 * veth), a source of real files (>= 64 MiB, copied into a private
 * directory): two data sets of hack/testdata.sh (tests/testdata.h), the
 * all-MiniLM-L6-v2 model directory (an 87 MiB safetensors file, tokenizer,
 * configs) and silero-vad 6's model files (eight of 1-3 MiB), 105 MB in
 * 22 files; the small pairs serve the kernel's UAPI headers
 * (/usr/include/linux, which this build compiles against). The chain's
 * results, fingerprints and manifests; cut-through (relay2 starts before
 * relay1 ends); relay1 killed mid-stream, once relay2 holds bytes
 * (relay2 resumes from the origin); a nearest upstream that never answers
 * (the next one after a bounded wait); a bad token, a size mismatch, an
 * origin whose load fails; and malformed
 * input on both sides (this program as a hostile client and as a fake
 * upstream). Needs root (netns); SKIP otherwise. Without its data
 * (PFS_TESTDATA_MINILM, PFS_TESTDATA_SILERO6 unset or not a directory)
 * the setup FAILS. Named blobs in /dev/shm, removed at the end.
 *
 * By hand, from dataplane/ as root (make test sets the same variables):
 *   export PFS_TESTDATA_MINILM="$(../hack/testdata.sh path minilm)"
 *   export PFS_TESTDATA_SILERO6="$(../hack/testdata.sh path silero6)"
 *   PFS=build/pfs build/tests/test_blob_repl
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "repl/blob_repl_int.h"
#include "wire/blob_repl_wire.h"
#include "json_util.h"
#include "netns.h"
#include "repl_util.h"
#include "testdata.h"
#include "pfs/gram.h"
#include "pfs/integrity.h"
#include "wire/wire_le.h"

#define SRC_MIN (64ULL << 20)
#define REAL_UAPI "/usr/include/linux"

static char src_dir[128], tok[128], bad_tok[128], blob_size[32];
static char names[16][64];
static int nnames;
static long long size;

static void cleanup(void)
{
	for (int i = 0; i < nnames; i++)
		sh("rm -f /dev/shm/%s /dev/shm/%s.chunks", names[i], names[i]);
}

/* A source directory of copies of the data sets minilm and silero6 (not
 * links: see test_repl_delta.c), at least SRC_MIN bytes in all; its blob
 * size from --dry-run. */
static int make_source(const char *minilm, const char *silero6)
{
	char *out, args[256];

	snprintf(src_dir, sizeof(src_dir), "%s/src", tmpdir);
	CHECK(!mkdir(src_dir, 0755), "mkdir: %s", strerror(errno));
	CHECK(!sh("cp -r %s %s/minilm && cp -r %s %s/silero_vad", minilm, src_dir, silero6,
		  src_dir),
	      "copy the data sets into %s", src_dir);
	snprintf(args, sizeof(args), "%s blob create --source %s --dry-run 2>/dev/null", pfs_bin,
		 src_dir);
	out = slurp_cmd(args);
	size = (long long)jreal(jsect(out, "\"source\""), "blob_size");
	free(out);
	CHECK(size > (long long)SRC_MIN, "dry run: blob_size %lld", size);
	snprintf(blob_size, sizeof(blob_size), "%lld", size);
	tap_diag("source %s (minilm, silero6): blob %lld bytes", src_dir, size);
	return TAP_PASS;
}

/* The blob name for @what, removed at exit. Each name gets its own slot
 * (a shared slot once forgot a blob: 52 were left in /dev/shm). */
static char *bname(const char *what)
{
	char n[64];
	int i;

	snprintf(n, sizeof(n), "pfs-repl-%s-%d", what, getpid());
	for (i = 0; i < nnames; i++)
		if (!strcmp(names[i], n))
			return names[i];
	if (nnames == (int)(sizeof(names) / sizeof(names[0])))
		abort(); /* a test that names more blobs raises the array */
	snprintf(names[nnames], sizeof(names[0]), "%s", n);
	return names[nnames++];
}

static int t_setup(void)
{
	const char *minilm, *silero6;
	int r = netns_setup("rp", 43);
	FILE *f;

	if (r != TAP_PASS)
		return r;
	minilm = testdata_dir("PFS_TESTDATA_MINILM", "minilm");
	silero6 = testdata_dir("PFS_TESTDATA_SILERO6", "silero6");
	if (!minilm || !silero6) {
		/* The checks after this one skip, each a failure in tests/run.sh. */
		net_ok = false;
		snprintf(net_skip, sizeof(net_skip), "setup failed: %.170s", testdata_why);
		return TAP_FAIL;
	}
	atexit(cleanup);
	snprintf(tok, sizeof(tok), "%s/token", tmpdir);
	snprintf(bad_tok, sizeof(bad_tok), "%s/bad-token", tmpdir);
	f = fopen(tok, "w");
	CHECK(f && fprintf(f, "%s\n",
			   "6b1f0c3e9a2d4c5b8e7f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5") > 0,
	      "token");
	fclose(f);
	f = fopen(bad_tok, "w");
	CHECK(f && fprintf(f, "%s\n", "not-the-token") > 0, "bad token");
	fclose(f);
	chmod(tok, 0644);
	r = make_source(minilm, silero6);
	if (r != TAP_PASS)
		net_ok = false, snprintf(net_skip, sizeof(net_skip), "setup failed: no source");
	return r;
}

/* `pfs blob manifest --verify` of /dev/shm/@name exits 0. */
static bool manifest_verifies(const char *name)
{
	return !sh("%s blob manifest --name %s --dir /dev/shm --verify >/dev/null 2>&1", pfs_bin,
		   name);
}

/* How the chain's relays fetch (--fetch-transport); NULL: the default, tcp. */
static const char *xport;

/* origin (ns a) -> relay1 (ns b) -> relay2 (ns a): all ok and equal.
 * @kill_relay1: SIGKILL relay1 once relay2 holds the origin's first MiB
 * (mid-stream: the paced origin is still sending). */
static int chain(const char *rate, bool kill_relay1, char *o, char *r1, char *r2)
{
	/* relay2 falls back to the origin only where the test wants it: a
	 * relay2 that finds relay1 not yet listening would take the origin. */
	char a0[48], a1[48], held[2][96];
	double waited = 0;
	pid_t po, p1, p2;
	int rc[3];

	addr(a0, ip_a, 7470);
	addr(a1, ip_b, 7471);
	/* The previous run's log must not answer wait_log below, nor its
	 * relay2 blob wait_holds. */
	sh("rm -f %s/relay1.err /dev/shm/%s", tmpdir, bname("relay2"));
	po = pfs_in(ns_a, "origin", "blob", "create", "--source", src_dir, "--page", "4k", "--dir",
		    "/dev/shm", "--name", bname("origin"), "--replace", "--token-file", tok,
		    "--replicate-listen", a0, "--replicate-linger", "2s", "--replicate-rate",
		    rate ? rate : "1T", NULL);
	p1 = pfs_in(ns_b, "relay1", "blob", "create", "--size", blob_size, "--page", "4k", "--dir",
		    "/dev/shm", "--name", bname("relay1"), "--replace", "--token-file", tok,
		    "--fetch-from", a0, "--replicate-listen", a1, "--replicate-linger", "2s",
		    "--fetch-timeout", "60s", xport ? "--fetch-transport" : NULL, xport, NULL);
	/* relay2 must find relay1 listening, or it takes the next upstream. */
	if (!wait_log("relay1", "repl serve: listening"))
		tap_diag("relay1 did not listen within 5 s");
	p2 = pfs_in(ns_a, "relay2", "blob", "create", "--size", blob_size, "--page", "4k", "--dir",
		    "/dev/shm", "--name", bname("relay2"), "--replace", "--token-file", tok,
		    "--fetch-from", kill_relay1 ? strcat(strcat(a1, ","), a0) : a1,
		    "--fetch-timeout", "60s", xport ? "--fetch-transport" : NULL, xport,
		    xport ? "--fetch-data-port" : NULL, "7472", NULL);
	if (kill_relay1) {
		snprintf(held[0], sizeof(held[0]), "/dev/shm/%s", bname("relay2"));
		snprintf(held[1], sizeof(held[1]), "/dev/shm/%s", bname("origin"));
		waited = wait_holds(held[0], held[1], 1 << 20, 60);
		kill(p1, SIGKILL);
		if (waited >= 0)
			tap_diag("relay2 held the origin's first MiB %.2f s after it started: "
				 "relay1 killed",
				 waited);
		else
			tap_diag("relay2 held nothing of the origin's first MiB in 60 s");
	}
	rc[2] = wait_rc(p2, 120);
	rc[1] = wait_rc(p1, 120);
	rc[0] = wait_rc(po, 120);
	snprintf(o, 4096, "%s", slurp("origin", "json"));
	snprintf(r1, 4096, "%s", slurp("relay1", "json"));
	snprintf(r2, 4096, "%s", slurp("relay2", "json"));
	tap_diag("rc origin %d relay1 %d relay2 %d", rc[0], rc[1], rc[2]);
	if (rc[0] || rc[2] || (!kill_relay1 && rc[1]) || waited < 0) {
		tap_diag("origin: %.1500s", slurp("origin", "err"));
		tap_diag("relay1: %.1500s", slurp("relay1", "err"));
		tap_diag("relay2: %.1500s", slurp("relay2", "err"));
		return -1;
	}
	return 0;
}

static char o[4096], r1[4096], r2[4096];

/* The plain chain: every copy equal, verified, the source read once. */
static int t_chain(void)
{
	char f0[24], f1[24], f2[24], s0[70], s1[70], s2[70], from[64];

	NEED_NET();
	CHECK(!chain(NULL, false, o, r1, r2), "chain failed");
	jstr(jsect(o, "\"blob\""), "fingerprint", f0, sizeof(f0));
	jstr(jsect(r1, "\"blob\""), "fingerprint", f1, sizeof(f1));
	jstr(jsect(r2, "\"blob\""), "fingerprint", f2, sizeof(f2));
	CHECK(f0[0] && !strcmp(f0, f1) && !strcmp(f0, f2), "fingerprints %s %s %s", f0, f1, f2);
	jstr(jsect(o, "\"source\""), "sha256", s0, sizeof(s0));
	jstr(jsect(r1, "\"manifest\""), "sha256", s1, sizeof(s1));
	jstr(jsect(r2, "\"manifest\""), "sha256", s2, sizeof(s2));
	CHECK(s0[0] && !strcmp(s0, s1) && !strcmp(s0, s2), "sha256 %s %s %s", s0, s1, s2);
	CHECK(strstr(r1, "\"verified\":true") && strstr(r2, "\"verified\":true"), "verified");
	CHECK(manifest_verifies(bname("origin")) && manifest_verifies(bname("relay1")) &&
		      manifest_verifies(bname("relay2")),
	      "pfs blob manifest --verify");
	/* Read once: only the origin has a source; it served exactly one copy. */
	CHECK(!strstr(r1, "\"source\"") && !strstr(r2, "\"source\"") &&
		      jreal(jsect(o, "\"repl\""), "clients") == 1 &&
		      jreal(jsect(o, "\"repl\""), "bytes_served") == (double)size &&
		      jreal(jsect(r1, "\"repl\""), "bytes_served") == (double)size,
	      "origin %.300s", strstr(o, "\"repl\""));
	CHECK(!strcmp(jstr(jsect(r2, "\"fetch\""), "from", from, sizeof(from)), ip_b) ||
		      strstr(from, ip_b),
	      "relay2 from %s", from);
	tap_diag("relay1 %.0f MB/s, relay2 %.0f MB/s; JSON %zu/%zu/%zu bytes",
		 jreal(jsect(r1, "\"fetch\""), "mbps"), jreal(jsect(r2, "\"fetch\""), "mbps"),
		 strlen(o), strlen(r1), strlen(r2));
	CHECK(strlen(o) < 3500 && strlen(r1) < 3500 && strlen(r2) < 3500, "result size");
	return TAP_PASS;
}

/* Paced origin: relay2's first byte arrives before relay1's last. */
static int t_cut_through(void)
{
	double r1_t1, r2_t0;

	NEED_NET();
	CHECK(!chain("40Mi", false, o, r1, r2), "chain failed");
	r1_t1 = jreal(jsect(r1, "\"fetch\""), "t1_unix");
	r2_t0 = jreal(jsect(r2, "\"fetch\""), "t0_unix");
	tap_diag("relay1 %.3f..%.3f, relay2 %.3f..%.3f", jreal(jsect(r1, "\"fetch\""), "t0_unix"),
		 r1_t1, r2_t0, jreal(jsect(r2, "\"fetch\""), "t1_unix"));
	CHECK(r1_t1 > 0 && r2_t0 > 0 && r2_t0 < r1_t1 - 0.5, "not cut-through");
	CHECK(strstr(r2, "\"verified\":true"), "relay2 not verified");
	return TAP_PASS;
}

/* relay1 killed mid-stream: relay2 resumes from the origin. */
static int t_kill_relay(void)
{
	char from[64], a0[48];
	const char *ra;

	NEED_NET();
	CHECK(!chain("30Mi", true, o, r1, r2), "chain failed");
	tap_diag("relay2: %.300s", strstr(r2, "\"fetch\""));
	tap_diag("relay2 log: %.800s", slurp("relay2", "err"));
	CHECK(strstr(r2, "\"ok\":true") && strstr(r2, "\"verified\":true"), "relay2 not ok");
	CHECK(!strcmp(jstr(jsect(r2, "\"fetch\""), "from", from, sizeof(from)),
		      addr(a0, ip_a, 7470)),
	      "from %s", from);
	ra = strstr(r2, "\"resumed_at\":[");
	CHECK(ra && ra[14] >= '1' && ra[14] <= '9' &&
		      jreal(jsect(r2, "\"fetch\""), "attempts") >= 2,
	      "no resume");
	CHECK(manifest_verifies(bname("relay2")), "manifest --verify");
	return TAP_PASS;
}

/* A small origin on loopback in ns a (UAPI headers, 8 MiB blob) and one
 * relay with @extra options; the relay's exit code, results in o and r1. */
static int small_pair(const char *origin_src, uid_t origin_uid, const char *rtok, const char *rsize)
{
	/* An unprivileged origin cannot --replace root's blob: its own name. */
	char *oname = origin_uid ? bname("small-u") : bname("small");
	char *oargs[] = { "blob",
			  "create",
			  "--source",
			  (char *)origin_src,
			  "--page",
			  "4k",
			  "--dir",
			  "/dev/shm",
			  "--name",
			  oname,
			  "--replace",
			  "--token-file",
			  tok,
			  "--replicate-listen",
			  "127.0.0.1:7480",
			  "--replicate-linger",
			  "3s",
			  NULL };
	pid_t po = spawn_as(ns_a, "sorigin", origin_uid, oargs), pr;
	int rc, orc;

	pr = pfs_in(ns_a, "srelay", "blob", "create", "--size", rsize, "--page", "4k", "--dir",
		    "/dev/shm", "--name", bname("srelay"), "--replace", "--token-file", rtok,
		    "--fetch-from", "127.0.0.1:7480", "--fetch-timeout", "20s",
		    xport ? "--fetch-transport" : NULL, xport, NULL);
	rc = wait_rc(pr, 60);
	orc = wait_rc(po, 60);
	snprintf(o, sizeof(o), "%s", slurp("sorigin", "json"));
	snprintf(r1, sizeof(r1), "%s", slurp("srelay", "json"));
	tap_diag("origin rc %d: %.200s", orc, o);
	if (orc && !strstr(o, "\"ok\":false"))
		tap_diag("origin: %.600s", slurp("sorigin", "err"));
	tap_diag("relay rc %d: %.300s", rc, r1);
	if (rc >= 128) /* a signal: what the process said before it (a sanitizer's report) */
		tap_diag("relay stderr: %.3000s", slurp("srelay", "err"));
	return rc;
}

static int t_bad_token(void)
{
	char e[600];

	NEED_NET();
	CHECK(small_pair(REAL_UAPI, 0, bad_tok, "8M") == 1, "relay did not fail");
	CHECK(strstr(jstr(jsect(r1, NULL), "error", e, sizeof(e)), "authentication"), "error: %s",
	      e);
	CHECK(jreal(jsect(o, "\"repl\""), "refused") >= 1 &&
		      jreal(jsect(o, "\"repl\""), "bytes_served") == 0,
	      "origin counted no refusal");
	return TAP_PASS;
}

static int t_size_mismatch(void)
{
	char e[600];

	NEED_NET();
	CHECK(small_pair(REAL_UAPI, 0, tok, "16M") == 1, "relay did not fail");
	CHECK(strstr(jstr(jsect(r1, NULL), "error", e, sizeof(e)), "holds a blob of 8388608 bytes"),
	      "error: %s", e);
	return TAP_PASS;
}

/* The origin (unprivileged) cannot open one file of its source: the relay
 * fails with the origin's message and never reports ok. */
static int t_origin_fails(void)
{
	char dir[128], e[600];

	NEED_NET();
	snprintf(dir, sizeof(dir), "%s/unreadable", tmpdir);
	CHECK(!sh("mkdir -p %s && cp /usr/include/linux/tcp.h /usr/include/linux/udp.h %s/ && "
		  "chmod 755 %s && chmod 644 %s/tcp.h && chmod 000 %s/udp.h && chmod 644 %s",
		  dir, dir, dir, dir, dir, tok),
	      "setup");
	CHECK(small_pair(dir, 65534, tok, "2M") == 1, "relay did not fail");
	CHECK(strstr(jstr(jsect(r1, NULL), "error", e, sizeof(e)),
		     "upstream 127.0.0.1:7480 failed: ") &&
		      strstr(e, "udp.h"),
	      "error: %s", e);
	CHECK(strstr(o, "\"ok\":false"), "origin: %s", o);
	return TAP_PASS;
}

/* ---- the datagram transports (--fetch-transport udp | afxdp) ---- */

/* The chain and its checks over @x; xport is reset for the next test. */
static int over(const char *x, int (*t)(void))
{
	int r;

	xport = x;
	r = t();
	xport = NULL;
	return r;
}

/* Both relays received datagrams and said so. */
static bool dgram_fetched(const char *r, const char *x)
{
	char tr[16];

	return !strcmp(jstr(jsect(r, "\"fetch\""), "transport", tr, sizeof(tr)), x) &&
	       jreal(jsect(r, "\"dgrams\""), "received") > 0;
}

static int t_chain_udp(void)
{
	int r = over("udp", t_chain);

	CHECK(r == TAP_PASS, "chain over udp");
	CHECK(dgram_fetched(r1, "udp") && dgram_fetched(r2, "udp"), "relays: %.300s / %.300s",
	      strstr(r1, "\"fetch\""), strstr(r2, "\"fetch\""));
	tap_diag("relay2: %.400s", strstr(r2, "\"fetch\""));
	return TAP_PASS;
}

static int t_cut_through_udp(void)
{
	int r = over("udp", t_cut_through);

	CHECK(r == TAP_PASS && dgram_fetched(r2, "udp"), "cut-through over udp");
	return TAP_PASS;
}

static int t_kill_relay_udp(void)
{
	int r = over("udp", t_kill_relay);

	CHECK(r == TAP_PASS && dgram_fetched(r2, "udp"), "route around over udp");
	return TAP_PASS;
}

/* The origin fails mid-load: ABORT carries its message to the relay. */
static int t_origin_fails_udp(void)
{
	CHECK(over("udp", t_origin_fails) == TAP_PASS, "origin failure over udp");
	return TAP_PASS;
}

/* AF_XDP receivers on both veth ends (copy mode: veth has no zero-copy).
 * The origin and relay1 send through kernel UDP sockets. */
static int t_chain_afxdp(void)
{
	int r;

	NEED_NET();
	if (geteuid())
		return tap_skip("AF_XDP needs CAP_NET_ADMIN and CAP_BPF: run as root");
	r = over("afxdp", t_chain);
	CHECK(r == TAP_PASS, "chain over afxdp");
	CHECK(dgram_fetched(r1, "afxdp") && dgram_fetched(r2, "afxdp"), "relays: %.300s / %.300s",
	      strstr(r1, "\"fetch\""), strstr(r2, "\"fetch\""));
	CHECK(strstr(r1, "afxdp") && strstr(jsect(r1, "\"fetch\""), "\"path\":\"afxdp"),
	      "relay1 path: %.300s", strstr(r1, "\"path\""));
	tap_diag("relay1: %.400s", strstr(r1, "\"fetch\""));
	return TAP_PASS;
}

/* ---- malformed input: this program as a client and as an upstream ---- */

/* One gram of @len bytes at @off; @corrupt flips a header byte (CRC). */
static void gram_out(int fd, uint64_t seq, uint64_t off, uint32_t len, bool corrupt)
{
	struct pfs_desc d = { .off = off, .len = len };
	static uint8_t b[PFS_GRAM_HDR_LEN + 12 + 65536];
	ssize_t h = pfs_gram_encode(PFS_MODE_PAYLOAD, seq, &d, 1, b, sizeof(b));

	memset(b + h, 0x5a, len);
	if (corrupt)
		b[9] ^= 1;
	(void)!write(fd, b, (size_t)h + len);
}

/* As a hostile client of the holder on @port: garbage instead of AUTH, a
 * gram instead of AUTH, silence then close. Each must get REFUSE (or a
 * close) and no blob byte. The number of cases that behaved. */
static int hostile_client(int port)
{
	static const uint8_t garbage[64] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	struct repl_frame f;
	int good = 0;

	for (int k = 0; k < 3; k++) {
		int fd = tcp_to(port);

		if (fd < 0 || frame_in(fd, &f) != REPL_HELLO) {
			close(fd);
			continue;
		}
		if (k == 0)
			(void)!write(fd, garbage, sizeof(garbage));
		else if (k == 1)
			gram_out(fd, 0, 0, 4096, false);
		else
			shutdown(fd, SHUT_WR);
		good += frame_in(fd, &f) == REPL_REFUSE || k == 2;
		close(fd);
	}
	return good;
}

/* As a fake upstream on @port: two connections, an out-of-order gram on
 * the first, a gram with a broken header CRC on the second. */
static int fake_upstream(int port, uint64_t blob)
{
	int lfd = fake_listen(port), served = 0;

	for (int k = 0; lfd >= 0 && k < 2; k++) {
		struct repl_frame ok = { .type = REPL_ACCEPT, .size = blob }, au;
		int type, fd = fake_accept(lfd, blob, &au, &type);

		if (fd < 0)
			break;
		if (type == REPL_AUTH) {
			frame_out(fd, &ok);
			gram_out(fd, 0, k ? 0 : 4096, 4096, k == 1);
			served++;
		}
		/* The relay must drop us: wait for its close. */
		frame_in(fd, &au);
		close(fd);
	}
	if (lfd >= 0)
		close(lfd);
	return served;
}

/* Run @fn(@port, @arg) in a child inside ns a; its result (exit code). */
static pid_t in_ns_a(int (*fn)(int, uint64_t), int port, uint64_t arg)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(netns_enter(ns_a) ? 255 : fn(port, arg));
	return pid;
}

static int hostile_fn(int port, uint64_t arg)
{
	(void)arg;
	return hostile_client(port);
}

/* A blob of the UAPI headers named after @tag, served by `pfs blob serve` in ns
 * a (log and result under @tag) with replication on @listen: its pid, or
 * -1 when the blob could not be made. */
static pid_t uapi_holder(const char *tag, const char *listen)
{
	char sock[128], *name = bname(tag);

	if (sh("%s blob create --source %s --page 4k --dir /dev/shm --name %s --replace "
	       ">/dev/null 2>&1",
	       pfs_bin, REAL_UAPI, name))
		return -1;
	snprintf(sock, sizeof(sock), "%s/%s.sock", tmpdir, tag);
	return pfs_in(ns_a, tag, "blob", "serve", "--name", name, "--dir", "/dev/shm", "--socket",
		      sock, "--token-file", tok, "--replicate-listen", listen, NULL);
}

/* @arg connections in a row that send a bad AUTH (a zero MAC). */
static int bad_auth_burst(int port, uint64_t arg)
{
	struct repl_frame a = { .type = REPL_AUTH, .size = 8ULL << 20, .body_len = REPL_MAC };
	uint8_t b[REPL_FRAME_MAX];
	int n = repl_frame_encode(&a, b), sent = 0;

	for (uint64_t i = 0; i < arg; i++) {
		int fd = tcp_to(port);
		struct repl_frame h;

		if (fd < 0)
			continue;
		if (frame_in(fd, &h) == REPL_HELLO && send(fd, b, (size_t)n, MSG_NOSIGNAL) == n)
			sent++;
		frame_in(fd, &h); /* the REFUSE, so the server logged before we go on */
		close(fd);
	}
	return sent == (int)arg ? 0 : 1;
}

/* 300 clients with the wrong token in a burst: the holder logs at most
 * REPL_LOG_PER_S refusal lines a second and counts the rest in
 * "suppressed N" lines (the last one on its way out). */
static int t_log_rate(void)
{
	char cmd[512], *out;
	unsigned long supp = 0;
	int lines = 0, br;
	pid_t srv, c;

	NEED_NET();
	srv = uapi_holder("lograte", "127.0.0.1:7496");
	CHECK(srv > 0, "create");
	c = in_ns_a(bad_auth_burst, 7496, 300);
	br = wait_rc(c, 120);
	kill(srv, SIGTERM);
	wait_rc(srv, 20);
	/* The whole log, however long the burst took: counted by grep and awk. */
	snprintf(cmd, sizeof(cmd),
		 "grep -c 'repl serve: refused ' %s/lograte.err; "
		 "sed -n 's/.*suppressed \\([0-9]*\\).*/\\1/p' %s/lograte.err | "
		 "awk '{ s += $1 } END { print s + 0 }'",
		 tmpdir, tmpdir);
	out = slurp_cmd(cmd);
	if (!out || sscanf(out, "%d %lu", &lines, &supp) != 2)
		lines = -1;
	free(out);
	tap_diag("300 bad AUTHs: %d refusal lines, %lu suppressed", lines, supp);
	CHECK(br == 0, "the burst did not complete (rc %d)", br);
	CHECK(lines + supp == 300 && supp > 0 && lines < 300, "lines %d + suppressed %lu", lines,
	      supp);
	return TAP_PASS;
}

/* A DNS name in --fetch-from (the operator lists holders by name): one that
 * does not resolve yet is waited for like a refused connect, then used.
 * `ip netns exec` gives the relay /etc/netns/NS/hosts as its /etc/hosts, a
 * file this test writes the name into after the relay started. */
static int t_name_upstream(void)
{
	char etc[128], rcf[128], e[600];
	pid_t po;
	int rc = -1, orc;

	NEED_NET();
	snprintf(etc, sizeof(etc), "/etc/netns/%s", ns_a);
	snprintf(rcf, sizeof(rcf), "%s/dns.rc", tmpdir);
	CHECK(!sh("mkdir -p %s && printf '127.0.0.1 localhost\\n' >%s/hosts", etc, etc), "hosts");
	po = pfs_in(ns_a, "dorigin", "blob", "create", "--source", REAL_UAPI, "--page", "4k",
		    "--dir", "/dev/shm", "--name", bname("dorigin"), "--replace", "--token-file",
		    tok, "--replicate-listen", "127.0.0.1:7480", "--replicate-linger", "3s", NULL);
	sh("(ip netns exec %s %s blob create --size 8M --page 4k --dir /dev/shm --name %s --replace "
	   "--token-file %s --fetch-from origin.pfs-test:7480 --fetch-timeout 30s >%s/dns.json "
	   "2>%s/dns.err; echo $? >%s) &",
	   ns_a, pfs_bin, bname("drelay"), tok, tmpdir, tmpdir, rcf);
	usleep(1500000);
	/* In place (>>): the bind mount is of this inode. */
	sh("echo '127.0.0.1 origin.pfs-test' >>%s/hosts", etc);
	for (int i = 0; i < 600 && rc < 0; i++) {
		FILE *f = fopen(rcf, "r");

		if (!f || fscanf(f, "%d", &rc) != 1)
			rc = -1;
		if (f)
			fclose(f);
		if (rc < 0)
			usleep(100000);
	}
	orc = wait_rc(po, 30);
	sh("rm -rf %s", etc);
	snprintf(r1, sizeof(r1), "%s", slurp("dns", "json"));
	tap_diag("relay rc %d origin rc %d: %.300s", rc, orc, strstr(r1, "\"fetch\""));
	CHECK(rc == 0 && strstr(r1, "\"verified\":true"), "relay: %.600s", slurp("dns", "err"));
	CHECK(!strcmp(jstr(jsect(r1, "\"fetch\""), "from", e, sizeof(e)), "origin.pfs-test:7480") &&
		      jreal(jsect(r1, "\"fetch\""), "attempts") == 1,
	      "from %s, attempts %.0f", e, jreal(jsect(r1, "\"fetch\""), "attempts"));
	return TAP_PASS;
}

/* The nearest upstream never answers (it died before its first connect:
 * refused, like one that does not listen yet): the relay waits for it
 * half its --fetch-timeout at most, then fetches from the next one. Once
 * the wait could take the whole fetch, and the relay failed with a live
 * upstream listed ("no upstream completed the blob in 60 s"). */
static int t_first_never_answers(void)
{
	pid_t srv, rel;
	double t0, took;
	char from[48];
	int rc;

	NEED_NET();
	srv = uapi_holder("holder", "127.0.0.1:7497");
	CHECK(srv > 0, "create");
	CHECK(wait_log("holder", "repl serve: listening"), "holder: %.300s",
	      slurp("holder", "err"));
	t0 = mono_s();
	rel = pfs_in(ns_a, "nrelay", "blob", "create", "--size", "8M", "--page", "4k", "--dir",
		     "/dev/shm", "--name", bname("nrelay"), "--replace", "--token-file", tok,
		     "--fetch-from", "127.0.0.1:7498,127.0.0.1:7497", "--fetch-timeout", "6s",
		     NULL);
	rc = wait_rc(rel, 30);
	took = mono_s() - t0;
	kill(srv, SIGTERM);
	wait_rc(srv, 20);
	snprintf(r1, sizeof(r1), "%s", slurp("nrelay", "json"));
	tap_diag("relay rc %d after %.1f s: %.300s", rc, took, strstr(r1, "\"fetch\""));
	CHECK(rc == 0 && strstr(r1, "\"verified\":true"), "relay: %.600s", slurp("nrelay", "err"));
	CHECK(!strcmp(jstr(jsect(r1, "\"fetch\""), "from", from, sizeof(from)), "127.0.0.1:7497"),
	      "from %s", from);
	/* It did wait for the nearest one: a chain must not collapse onto
	 * the origin while its nodes are still starting. */
	CHECK(took >= 3.0, "fell back after %.1f s, before half the fetch timeout", took);
	return TAP_PASS;
}

/* AUTH's xport word: round trip, what the decoder refuses, and the MAC
 * covers it (a TCP AUTH cannot be turned into "datagrams to this port"). */
static int t_auth_xport(void)
{
	struct repl_frame a = { .type = REPL_AUTH,
				.xport = REPL_XPORT_UDP,
				.data_port = 9000,
				.size = 4096,
				.body_len = REPL_MAC },
			  d;
	uint8_t b[REPL_FRAME_MAX], nonce[REPL_NONCE] = { 1 }, m0[REPL_MAC], m1[REPL_MAC];
	int n = repl_frame_encode(&a, b);

	CHECK(n == REPL_HDR + REPL_MAC && !repl_frame_decode(b, (size_t)n, &d) &&
		      d.xport == REPL_XPORT_UDP && d.data_port == 9000,
	      "round trip: %d, xport %u port %u", n, d.xport, d.data_port);
	a.data_port = 0;
	CHECK(repl_frame_encode(&a, b) == -EINVAL, "udp without a port encoded");
	a.xport = REPL_XPORT_TCP;
	a.data_port = 9000;
	CHECK(repl_frame_encode(&a, b) == -EINVAL, "tcp with a port encoded");
	/* Bytes from a peer: an unknown transport, byte 25, a port on ACCEPT. */
	a = (struct repl_frame){ .type = REPL_AUTH,
				 .xport = REPL_XPORT_AFXDP,
				 .data_port = 1,
				 .size = 4096,
				 .body_len = REPL_MAC };
	n = repl_frame_encode(&a, b);
	b[24] = 3;
	put32(b + 28, pfs_crc32c(pfs_crc32c(0, b, 28), b + REPL_HDR, REPL_MAC));
	CHECK(repl_frame_decode(b, (size_t)n, &d) == -EPROTO, "transport 3 accepted");
	b[24] = REPL_XPORT_AFXDP;
	b[25] = 1;
	put32(b + 28, pfs_crc32c(pfs_crc32c(0, b, 28), b + REPL_HDR, REPL_MAC));
	CHECK(repl_frame_decode(b, (size_t)n, &d) == -EPROTO, "byte 25 accepted");
	a = (struct repl_frame){ .type = REPL_ACCEPT, .size = 4096 };
	n = repl_frame_encode(&a, b);
	b[26] = 1;
	put32(b + 28, pfs_crc32c(0, b, 28));
	CHECK(repl_frame_decode(b, (size_t)n, &d) == -EPROTO, "ACCEPT with an xport");
	a = (struct repl_frame){ .type = REPL_AUTH, .xport = REPL_XPORT_UDP, .data_port = 9000 };
	CHECK(!repl_mac("k", 1, nonce, 4096, 0, m0) &&
		      !repl_mac("k", 1, nonce, 4096, repl_xport_word(&a), m1) &&
		      memcmp(m0, m1, REPL_MAC),
	      "the MAC does not cover the transport");
	return TAP_PASS;
}

static int t_malformed(void)
{
	char e[64];
	pid_t srv, h, fk, rel;
	int hr, fr, rr;

	NEED_NET();
	srv = uapi_holder("serve", "127.0.0.1:7490");
	CHECK(srv > 0, "create");
	h = in_ns_a(hostile_fn, 7490, 0);
	hr = wait_rc(h, 60);
	fk = in_ns_a(fake_upstream, 7491, 8ULL << 20);
	usleep(100000);
	rel = pfs_in(ns_a, "mrelay", "blob", "create", "--size", "8M", "--page", "4k", "--dir",
		     "/dev/shm", "--name", bname("mrelay"), "--replace", "--token-file", tok,
		     "--fetch-from", "127.0.0.1:7491,127.0.0.1:7491,127.0.0.1:7490",
		     "--fetch-timeout", "30s", NULL);
	rr = wait_rc(rel, 60);
	fr = wait_rc(fk, 60);
	kill(srv, SIGTERM);
	wait_rc(srv, 20);
	tap_diag("hostile cases handled %d/3, fake upstream served %d, relay rc %d", hr, fr, rr);
	tap_diag("relay: %.400s", strstr(slurp("mrelay", "json"), "\"fetch\""));
	tap_diag("serve: %.300s", strstr(slurp("serve", "json"), "\"accepted\""));
	CHECK(hr == 3 && fr == 2 && rr == 0, "see above; relay: %.600s", slurp("mrelay", "err"));
	snprintf(r1, sizeof(r1), "%s", slurp("mrelay", "json"));
	CHECK(jreal(jsect(r1, "\"fetch\""), "rejected") == 2 &&
		      jreal(jsect(r1, "\"fetch\""), "attempts") == 3 &&
		      !strcmp(jstr(jsect(r1, "\"fetch\""), "from", e, sizeof(e)),
			      "127.0.0.1:7490") &&
		      strstr(r1, "\"verified\":true"),
	      "relay result");
	snprintf(o, sizeof(o), "%s", slurp("serve", "json"));
	CHECK(jreal(jsect(o, "\"repl\""), "refused") >= 2 &&
		      jreal(jsect(o, "\"repl\""), "clients") == 1,
	      "serve result %s", o);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "setup: netns, veth, a >= 64 MiB source of real files", t_setup, .setup = true },
	{ "origin -> relay1 -> relay2 over veth: equal, verified, source read once", t_chain },
	{ "cut-through: relay2 starts before relay1 ends (paced origin)", t_cut_through },
	{ "relay1 SIGKILLed mid-stream: relay2 resumes from the origin", t_kill_relay },
	{ "udp: origin -> relay1 -> relay2, datagrams NAK-repaired, verified", t_chain_udp },
	{ "udp: cut-through (paced origin)", t_cut_through_udp },
	{ "udp: relay1 SIGKILLed mid-stream, relay2 resumes from the origin", t_kill_relay_udp },
	{ "udp: the origin's load fails: the relay fails with its message", t_origin_fails_udp },
	{ "afxdp: both relays receive through AF_XDP sockets on veth", t_chain_afxdp },
	{ "bad token: refused, the relay names auth", t_bad_token },
	{ "size mismatch: refused with both sizes", t_size_mismatch },
	{ "origin load fails: the relay fails with the upstream's message", t_origin_fails },
	{ "malformed: hostile client, fake upstream; counted, no crash", t_malformed },
	{ "AUTH's transport word: round trip, refused when malformed, signed", t_auth_xport },
	{ "a DNS name in --fetch-from: waited for until it resolves, then fetched",
	  t_name_upstream },
	{ "the nearest upstream never answers: waited for half --fetch-timeout, then the next",
	  t_first_never_answers },
	{ "300 bad AUTHs in a burst: refusal lines rate-limited, the rest counted", t_log_rate },
};

TAP_MAIN(tests)
