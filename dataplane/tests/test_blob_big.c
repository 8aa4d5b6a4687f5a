// SPDX-License-Identifier: Apache-2.0
/*
 * A blob past 4 GiB, end to end: every offset, length and index that could
 * hide a 32-bit truncation crosses 2^32 here. The source directory holds
 * a sparse file whose length is past 4 GiB with the all-MiniLM-L6-v2
 * model file (87 MiB, hack/testdata.sh) written across the 4 GiB mark,
 * and silero-vad's model files behind it, so they sit at blob offsets
 * past 4 GiB. A misplaced byte anywhere (an offset taken modulo 2^32, a
 * length cut to 32 bits) would land real model bytes where zeros belong
 * or the reverse, and the sha256 of the manifest would no longer match.
 *
 * Checked, with the binary in $PFS over a real veth pair (origin in one
 * network namespace, relays in the other):
 *   - the origin's load and manifest: a file longer than 2^32 bytes and
 *     files placed past 2^32, each verified by `pfs blob manifest --verify`;
 *   - a TCP relay's copy (the replication stream, its CRC32C index and
 *     the relay's verification): fingerprint and sha256 equal, verified;
 *   - a UDP relay's copy of the same blob (datagram offsets past 2^32);
 *   - a Delta relay: version 2 (silero-vad 6's files in place of 5's)
 *     rebuilt by a relay over version 1, a few MB on the wire for a
 *     4 GiB blob, equal and verified.
 * Needs root (netns) and about 13 GiB free in /dev/shm (the blobs live
 * there); without them, or without the data sets, the setup FAILS.
 *
 * By hand, from dataplane/ as root (make test sets the same variables):
 *   for s in minilm silero5 silero6; do
 *     export PFS_TESTDATA_${s^^}="$(../hack/testdata.sh path $s)"; done
 *   PFS=build/pfs build/tests/test_blob_big
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/statvfs.h>

#include "json_util.h"
#include "netns.h"
#include "repl_util.h"
#include "testdata.h"

#define FOUR_GIB (1ULL << 32)
/* The model file starts 1 MiB before the 4 GiB mark. */
#define MODEL_AT (FOUR_GIB - (1ULL << 20))
#define SHM_NEEDED (13ULL << 30)

static char tok[128], v1[128], v2[128], bsize[2][32], sock[128];
static char names[8][64];
static long long size[2];

static void cleanup(void)
{
	for (int i = 0; i < 8; i++)
		if (names[i][0])
			sh("rm -f /dev/shm/%s /dev/shm/%s.chunks", names[i], names[i]);
}

static char *bname(int i, const char *what)
{
	snprintf(names[i], sizeof(names[i]), "pfs-big-%s-%d", what, getpid());
	return names[i];
}

static char *shm(int i)
{
	static char p[2][96];
	static int k;

	snprintf(p[k ^= 1], sizeof(p[0]), "/dev/shm/%s", names[i]);
	return p[k];
}

/* Source directory @dir: big.bin (sparse, the model file from MODEL_AT,
 * so its length is past 4 GiB) and a copy of @silero's files beneath
 * silero_vad/ (named after big.bin, so laid out behind it). */
static int make_source(const char *dir, const char *minilm, const char *silero)
{
	if (mkdir(dir, 0755))
		return -1;
	return sh("dd if=%s/model.safetensors of=%s/big.bin bs=1M seek=%llu conv=sparse "
		  "status=none && cp -r %s %s/silero_vad",
		  minilm, dir, (unsigned long long)(MODEL_AT >> 20), silero, dir);
}

static int t_setup(void)
{
	const char *minilm, *silero5, *silero6;
	char cmd[256], *out;
	struct statvfs vfs;
	FILE *f;
	int r = netns_setup("bg", 45);

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
	if (statvfs("/dev/shm", &vfs) || (uint64_t)vfs.f_bavail * vfs.f_frsize < SHM_NEEDED) {
		net_ok = false;
		snprintf(net_skip, sizeof(net_skip),
			 "setup failed: /dev/shm has %.1f GiB free, the blobs need %llu GiB",
			 (double)vfs.f_bavail * vfs.f_frsize / (1 << 30), SHM_NEEDED >> 30);
		return TAP_FAIL;
	}
	atexit(cleanup);
	snprintf(tok, sizeof(tok), "%s/token", tmpdir);
	f = fopen(tok, "w");
	CHECK(f && fprintf(f, "9c2e4a6b8d0f1e3c5a7b9d1f3e5c7a9b0d2f4e6a8c0b\n") > 0, "token");
	fclose(f);
	snprintf(v1, sizeof(v1), "%s/v1", tmpdir);
	snprintf(v2, sizeof(v2), "%s/v2", tmpdir);
	CHECK(!make_source(v1, minilm, silero5) && !make_source(v2, minilm, silero6),
	      "source directories");
	for (int v = 0; v < 2; v++) {
		snprintf(cmd, sizeof(cmd), "%s blob create --source %s --dry-run 2>/dev/null",
			 pfs_bin, v ? v2 : v1);
		out = slurp_cmd(cmd);
		size[v] = (long long)jreal(jsect(out, "\"source\""), "blob_size");
		free(out);
		CHECK(size[v] > (long long)FOUR_GIB + (64LL << 20), "v%d blob size %lld", v + 1,
		      size[v]);
		snprintf(bsize[v], sizeof(bsize[v]), "%lld", size[v]);
	}
	snprintf(sock, sizeof(sock), "%s/serve.sock", tmpdir);
	tap_diag("blobs: v1 %lld, v2 %lld bytes", size[0], size[1]);
	return TAP_PASS;
}

static int rc_of(const char *tag, pid_t p)
{
	int rc = wait_rc(p, 300);

	if (rc)
		tap_diag("%s rc %d: %.1500s", tag, rc, slurp(tag, "err"));
	return rc;
}

static char o[8192], r[8192];

/* The same bytes as the origin's result @org: fingerprint, sha256, verified. */
static bool same_as(const char *org, const char *rel)
{
	char f0[24], f1[24], s0[70], s1[70];

	jstr(jsect(org, "\"blob\""), "fingerprint", f0, sizeof(f0));
	jstr(jsect(rel, "\"blob\""), "fingerprint", f1, sizeof(f1));
	jstr(jsect(org, "\"source\""), "sha256", s0, sizeof(s0));
	jstr(jsect(rel, "\"manifest\""), "sha256", s1, sizeof(s1));
	if (!s0[0])
		jstr(jsect(org, "\"manifest\""), "sha256", s0, sizeof(s0));
	return f0[0] && !strcmp(f0, f1) && s0[0] && !strcmp(s0, s1) &&
	       strstr(rel, "\"verified\":true");
}

/* The relay in ns b fetching version @v from @from into slot @i over
 * @xport (NULL: tcp), rebuilding over @base (NULL: none). */
static pid_t relay(int v, int i, const char *tag, const char *from, const char *xport,
		   const char *base)
{
	/* pfs_in's list ends at the first NULL: one optional pair. */
	const char *opt = xport ? "--fetch-transport" : base ? "--delta-base" : NULL;

	sh("rm -f %s/%s.err", tmpdir, tag);
	return pfs_in(ns_b, tag, "blob", "create", "--size", bsize[v], "--page", "4k", "--dir",
		      "/dev/shm", "--name", bname(i, tag), "--replace", "--token-file", tok,
		      "--fetch-from", from, "--fetch-timeout", "120s", opt, xport ? xport : base,
		      NULL);
}

/* The manifest of slot @i lists a file longer than 2^32 and one placed
 * past 2^32 (the model's neighbours), and re-hashes to its sha256. */
static int t_origin(void)
{
	char a0[48], cmd[256], *m, *p;
	bool long_file = false, far_file = false;
	pid_t po, pr;

	NEED_NET();
	/* Both prefault 4 GiB first; the relay retries its connect until the
	 * origin listens, the origin lingers until the relay came. */
	pr = relay(0, 1, "tcp", addr(a0, ip_a, 7470), NULL, NULL);
	po = pfs_in(ns_a, "origin", "blob", "create", "--source", v1, "--page", "4k", "--dir",
		    "/dev/shm", "--name", bname(0, "v1"), "--replace", "--token-file", tok,
		    "--replicate-listen", a0, "--replicate-linger", "10s", NULL);
	CHECK(!rc_of("tcp", pr) && !rc_of("origin", po), "origin -> relay over TCP failed");
	snprintf(o, sizeof(o), "%s", slurp("origin", "json"));
	snprintf(r, sizeof(r), "%s", slurp("tcp", "json"));
	CHECK(same_as(o, r), "relay's copy: %.800s", r);
	CHECK(jreal(jsect(o, "\"repl\""), "bytes_served") == (double)size[0] &&
		      jreal(jsect(r, "\"fetch\""), "bytes") == (double)size[0],
	      "bytes %.300s | %.300s", strstr(o, "\"repl\""), strstr(r, "\"fetch\""));
	snprintf(cmd, sizeof(cmd), "%s blob manifest --name %s --dir /dev/shm", pfs_bin, names[1]);
	m = slurp_cmd(cmd);
	for (p = strstr(m, "\"offset\""); p; p = strstr(p + 1, "\"offset\"")) {
		if (jreal(p, "offset") > (double)FOUR_GIB)
			far_file = true;
		if (jreal(p, "length") > (double)FOUR_GIB)
			long_file = true;
	}
	tap_diag("relay's manifest: %.300s", m);
	free(m);
	CHECK(long_file && far_file, "no file longer than 2^32 (%d) or past 2^32 (%d)", long_file,
	      far_file);
	for (int i = 0; i < 2; i++)
		CHECK(!sh("%s blob manifest --name %s --dir /dev/shm --verify >/dev/null", pfs_bin,
			  names[i]),
		      "pfs blob manifest --verify %s", names[i]);
	tap_diag("TCP relay: %.0f MB/s, verified in %.1f s", jreal(jsect(r, "\"fetch\""), "mbps"),
		 jreal(jsect(r, "\"fetch\""), "verify_seconds"));
	return TAP_PASS;
}

/* A UDP relay of the same blob, served by `pfs blob serve`. */
static int t_udp(void)
{
	char a0[48];
	pid_t ps, pr;

	NEED_NET();
	sh("rm -f %s", shm(1));
	ps = pfs_in(ns_a, "serve", "blob", "serve", "--name", names[0], "--dir", "/dev/shm",
		    "--socket", sock, "--token-file", tok, "--replicate-listen",
		    addr(a0, ip_a, 7472), NULL);
	pr = relay(0, 2, "udp", a0, "udp", NULL);
	CHECK(!rc_of("udp", pr), "relay over UDP failed; server: %.1000s", slurp("serve", "err"));
	kill(ps, SIGTERM);
	wait_rc(ps, 30);
	snprintf(r, sizeof(r), "%s", slurp("udp", "json"));
	CHECK(same_as(o, r), "UDP relay's copy: %.800s", r);
	CHECK(strstr(jsect(r, "\"fetch\""), "\"transport\":\"udp\""), "transport: %.300s",
	      jsect(r, "\"fetch\""));
	tap_diag("UDP relay: %.0f MB/s", jreal(jsect(r, "\"fetch\""), "mbps"));
	return TAP_PASS;
}

/* Version 2 from an origin over v1, to a relay over v1: delta grams. */
static int t_delta(void)
{
	char a0[48], base[96];
	double wire;
	pid_t po, pr;

	NEED_NET();
	sh("rm -f %s", shm(2));
	snprintf(base, sizeof(base), "%s", shm(0));
	/* Both ends map the one v1 blob: they are on one machine. */
	pr = relay(1, 4, "delta", addr(a0, ip_a, 7474), NULL, base);
	po = pfs_in(ns_a, "origin2", "blob", "create", "--source", v2, "--page", "4k", "--dir",
		    "/dev/shm", "--name", bname(3, "v2"), "--replace", "--token-file", tok,
		    "--replicate-listen", a0, "--replicate-linger", "10s", "--delta-base", base,
		    NULL);
	CHECK(!rc_of("delta", pr) && !rc_of("origin2", po), "delta relay failed");
	snprintf(o, sizeof(o), "%s", slurp("origin2", "json"));
	snprintf(r, sizeof(r), "%s", slurp("delta", "json"));
	CHECK(same_as(o, r), "delta relay's copy: %.800s", r);
	wire = jreal(jsect(jsect(r, "\"fetch\""), "\"delta\""), "wire_bytes");
	tap_diag("v2: %lld bytes, %.0f on the wire", size[1], wire);
	/* silero-vad 6's changed and new files are 12.5 MB; everything else
	 * travels as offsets into v1. */
	CHECK(wire > 0 && wire < 64.0 * (1 << 20) &&
		      jreal(jsect(jsect(r, "\"fetch\""), "\"delta\""), "bytes") == (double)size[1],
	      "delta: %.400s; relay: %.600s; origin: %.600s", jsect(r, "\"fetch\""),
	      slurp("delta", "err"), slurp("origin2", "err"));
	CHECK(!sh("%s blob manifest --name %s --dir /dev/shm --verify >/dev/null", pfs_bin,
		  names[4]),
	      "pfs blob manifest --verify");
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "setup: netns, veth, two versions of a source past 4 GiB", t_setup, .setup = true },
	{ "origin loads past 4 GiB, a TCP relay copies it: equal, verified, offsets past 2^32",
	  t_origin },
	{ "a UDP relay copies it: equal, verified", t_udp },
	{ "version 2 to a relay holding version 1: delta grams, equal, verified", t_delta },
};

TAP_MAIN(tests)
