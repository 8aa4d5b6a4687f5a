// SPDX-License-Identifier: Apache-2.0
/*
 * Chunk digests (pfs/blob_chunks.h) and their DIGESTS frames
 * (src/wire/blob_repl_wire.h), in memory:
 *   - BLAKE3 as the library computes it equals the published test vector
 *     (the one-byte input of BLAKE3's test_vectors.json);
 *   - workers hash a chunk only once the watermark has passed its end (the
 *     count of hashes follows a feeder thread exactly), on 1 and 4 threads,
 *     and their hashes equal a serial pass;
 *   - the list: in order only, complete with its last digest, waiters woken,
 *     "none" answered; a changed chunk is found by compare, rehashed after
 *     a repair, and the root changes with any digest or the size;
 *   - a failed fill ends the workers with its message;
 *   - save/load round trip; a damaged or other-size file refused, and one
 *     of another user; a file that is not a list never replaced nor
 *     removed as one;
 *   - DIGESTS frames: round trip; refused when truncated, of another blob
 *     size, past the chunk count, not a multiple of 32 bytes, a bad CRC, or
 *     read by the generic frame decoder;
 *   - AUTH's RANGE flag: its end round-trips and is in the MAC; refused with
 *     another flag, over UDP, or without the end.
 * Memory, threads and a private directory only.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pfs/blob_chunks.h"
#include "pfs/blob_repl.h"
#include "pfs/integrity.h"
#include "repl/blob_repl_int.h"
#include "wire/blob_repl_wire.h"
#include "wire/wire_le.h"
#include "tap.h"

#define MIB (1ull << 20)
#define SIZE (37 * MIB + 12345) /* 10 chunks, the last one short */

static uint8_t *blob;

struct feeder {
	struct pfs_progress *p;
	uint64_t piece;
	pthread_t tid;
};

static void *feed(void *arg)
{
	struct feeder *f = arg;
	struct timespec ts = { .tv_nsec = 2000000 };

	for (uint64_t at = 0; at < SIZE;) {
		at = at + f->piece < SIZE ? at + f->piece : SIZE;
		pfs_progress__advance(f->p, at);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static int t_setup(void)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;

	blob = malloc(SIZE);
	CHECK(blob, "malloc");
	for (uint64_t i = 0; i < SIZE; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		blob[i] = (uint8_t)x;
	}
	return TAP_PASS;
}

static void hex(const uint8_t *d, char *out)
{
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static int t_vector(void)
{
	static const uint8_t one[1] = { 0 };
	struct pfs_chunks *c = pfs_chunks__new(1);
	char h[65];

	CHECK(c, "new");
	CHECK(!pfs_chunks__hash_start(c, one, NULL, 1), "start");
	CHECK(!pfs_chunks__hash_wait(c, h, sizeof(h)), "wait: %s", h);
	pfs_chunks__list_from_hashes(c);
	hex(pfs_chunks__list(c), h);
	CHECK(!strcmp(h, "2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213"),
	      "BLAKE3 of one zero byte: %s (%s code)", h, pfs_blake3_impl());
	tap_diag("BLAKE3 code path: %s", pfs_blake3_impl());
	pfs_chunks__free(c);
	CHECK(!pfs_chunks__new(0) && errno == EINVAL, "a blob of 0 bytes has no chunks");
	return TAP_PASS;
}

/* Workers follow a watermark fed in 1 MiB pieces: never a hash of a chunk
 * whose end the watermark has not passed. */
static int follow(unsigned threads, uint8_t (*want)[32])
{
	struct pfs_progress *p = pfs_progress__new(SIZE);
	struct pfs_chunks *c = pfs_chunks__new(SIZE);
	struct feeder f = { .p = p, .piece = MIB };
	struct pfs_chunks_stats st;
	char why[200];
	int bad = 0;

	CHECK(p && c && pfs_chunks__count(c) == 10, "new: %u chunks", c ? pfs_chunks__count(c) : 0);
	CHECK(!pfs_chunks__hash_start(c, blob, p, threads), "start");
	CHECK(pfs_chunks__hash_start(c, blob, p, threads) == -EALREADY, "started twice");
	pthread_create(&f.tid, NULL, feed, &f);
	for (int i = 0; i < 4000; i++) {
		uint64_t mark, ended;

		pfs_chunks__stats(c, &st);
		/* A chunk is hashed only once the mark passed its end: no more
		 * hashes than chunks ending below the mark read after them. */
		mark = pfs_progress__mark(p);
		ended = mark == SIZE ? 10 : mark / PFS_CHUNK_SIZE;
		bad += st.hashed > ended;
		if (mark == SIZE)
			break;
		usleep(250);
	}
	pthread_join(f.tid, NULL);
	CHECK(!pfs_chunks__hash_wait(c, why, sizeof(why)), "wait: %s", why);
	CHECK(!bad, "%d looks saw a chunk hashed past the watermark", bad);
	pfs_chunks__list_from_hashes(c);
	for (uint32_t i = 0; i < 10; i++)
		CHECK(!memcmp(pfs_chunks__list(c) + 32 * i, want[i], 32),
		      "%u threads: chunk %u differs from a serial pass", threads, i);
	pfs_chunks__stats(c, &st);
	CHECK(st.hashed == 10 && st.threads == threads, "stats: %u hashed, %u threads", st.hashed,
	      st.threads);
	pfs_chunks__free(c);
	pfs_progress__free(p);
	return TAP_PASS;
}

static int t_follow(void)
{
	static uint8_t want[10][32];
	struct pfs_chunks *s = pfs_chunks__new(SIZE);
	char why[200];
	int r;

	CHECK(s && !pfs_chunks__hash_start(s, blob, NULL, 1) &&
		      !pfs_chunks__hash_wait(s, why, sizeof(why)),
	      "serial pass");
	pfs_chunks__list_from_hashes(s);
	memcpy(want, pfs_chunks__list(s), sizeof(want));
	pfs_chunks__free(s);
	if ((r = follow(1, want)) != TAP_PASS)
		return r;
	return follow(4, want);
}

static int t_list_and_compare(void)
{
	struct pfs_chunks *o = pfs_chunks__new(SIZE), *r = pfs_chunks__new(SIZE);
	uint8_t *copy = malloc(SIZE), root_o[32], root_r[32];
	const uint8_t *l;
	uint32_t bad[4], n;
	char why[200];

	CHECK(o && r && copy, "new");
	CHECK(!pfs_chunks__hash_start(o, blob, NULL, 2) && !pfs_chunks__hash_wait(o, why, 200),
	      "origin hashes");
	pfs_chunks__list_from_hashes(o);
	l = pfs_chunks__list(o);
	CHECK(pfs_chunks__list_wait(r, 50) == -ETIMEDOUT, "an empty list is not complete");
	CHECK(pfs_chunks__list_put(r, 1, l + 32, 1) == -EPROTO, "out of order accepted");
	CHECK(!pfs_chunks__list_put(r, 0, l, 4), "first frame");
	pfs_chunks__list_reset(r); /* a new upstream sends it whole */
	CHECK(!pfs_chunks__list_put(r, 0, l, 4) && !pfs_chunks__list_done(r), "after a reset");
	CHECK(pfs_chunks__list_put(r, 4, l + 128, 7) == -EPROTO, "past the count accepted");
	CHECK(!pfs_chunks__list_put(r, 4, l + 128, 6) && pfs_chunks__list_done(r) &&
		      !pfs_chunks__list_wait(r, 0),
	      "the last frame completes it");
	memcpy(copy, blob, SIZE);
	copy[pfs_chunks__off(7) + 99] ^= 1;
	CHECK(!pfs_chunks__hash_start(r, copy, NULL, 3) && !pfs_chunks__hash_wait(r, why, 200),
	      "relay hashes");
	n = pfs_chunks__compare(r, 0, bad, 4);
	CHECK(n == 1 && bad[0] == 7, "compare: %u bad, first %u", n, n ? bad[0] : 0);
	copy[pfs_chunks__off(7) + 99] ^= 1; /* fetched again */
	pfs_chunks__rehash(r, 7, 10);
	CHECK(!pfs_chunks__compare(r, 7, bad, 4), "still bad after the repair");
	pfs_chunks__root(o, root_o);
	pfs_chunks__root(r, root_r);
	CHECK(!memcmp(root_o, root_r, 32), "roots of equal lists differ");
	pfs_chunks__list_none(r); /* no effect on a complete list */
	CHECK(!pfs_chunks__list_wait(r, 0), "none after done");
	pfs_chunks__free(r);
	r = pfs_chunks__new(SIZE + 1); /* same digests, another size */
	CHECK(r && !pfs_chunks__list_put(r, 0, l, 10) && pfs_chunks__count(r) == 10, "other size");
	pfs_chunks__root(r, root_r);
	CHECK(memcmp(root_o, root_r, 32), "the root does not bind the size");
	pfs_chunks__free(r);
	r = pfs_chunks__new(SIZE);
	pfs_chunks__list_none(r);
	CHECK(pfs_chunks__list_wait(r, 1000) == -ENOENT && !pfs_chunks__list(r), "none");
	pfs_chunks__free(r);
	pfs_chunks__free(o);
	free(copy);
	return TAP_PASS;
}

static int t_failed_fill(void)
{
	struct pfs_progress *p = pfs_progress__new(SIZE);
	struct pfs_chunks *c = pfs_chunks__new(SIZE);
	char why[200] = "";

	CHECK(p && c && !pfs_chunks__hash_start(c, blob, p, 2), "start");
	pfs_progress__advance(p, 3 * PFS_CHUNK_SIZE);
	pfs_progress__fail(p, "upstream 10.0.0.1:7470 failed: source changed");
	CHECK(pfs_chunks__hash_wait(c, why, sizeof(why)) == -ECANCELED &&
		      strstr(why, "source changed"),
	      "wait after a failed fill: '%s'", why);
	pfs_chunks__free(c);
	c = pfs_chunks__new(SIZE);
	CHECK(c && !pfs_chunks__hash_start(c, blob, p, 2), "start on a failed fill");
	pfs_chunks__free(c); /* a free while waiting does not hang */
	pfs_progress__free(p);
	return TAP_PASS;
}

static int t_save_load(void)
{
	char dir[] = "/tmp/pfs-chunks-XXXXXX", path[64], why[200];
	struct pfs_chunks *c = pfs_chunks__new(SIZE), *l;
	uint8_t a[32], b[32];
	int dfd, fd;

	CHECK(mkdtemp(dir), "mkdtemp");
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(c && !pfs_chunks__hash_start(c, blob, NULL, 2) && !pfs_chunks__hash_wait(c, why, 200),
	      "hashes");
	CHECK(pfs_chunks__save(c, dfd, "chunks") == -EINVAL, "saved an incomplete list");
	pfs_chunks__list_from_hashes(c);
	CHECK(!pfs_chunks__save(c, dfd, "chunks"), "save");
	l = pfs_chunks__load(dfd, "chunks", SIZE);
	CHECK(l && pfs_chunks__list_done(l), "load: %s", strerror(errno));
	pfs_chunks__root(c, a);
	pfs_chunks__root(l, b);
	CHECK(!memcmp(a, b, 32), "loaded list differs");
	pfs_chunks__free(l);
	CHECK(!pfs_chunks__load(dfd, "chunks", SIZE + 4096) && errno == EBADMSG,
	      "loaded for another size");
	CHECK(!pfs_chunks__load(dfd, "none", SIZE) && errno == ENOENT, "a missing file");
	snprintf(path, sizeof(path), "%s/chunks", dir);
	chmod(path, 0644);
	fd = open(path, O_WRONLY);
	CHECK(fd >= 0 && pwrite(fd, "x", 1, 100) == 1, "damage it");
	close(fd);
	CHECK(!pfs_chunks__load(dfd, "chunks", SIZE) && errno == EBADMSG, "a damaged list loaded");
	CHECK(!pfs_chunks__unlink(dfd, "chunks") && pfs_chunks__unlink(dfd, "chunks") == -ENOENT,
	      "unlink a list");
	/* Something else of the name (a blob called so) is never replaced
	 * nor removed as a list; a save that died (its .tmp) is. */
	fd = openat(dfd, "other", O_WRONLY | O_CREAT, 0600);
	CHECK(fd >= 0 && write(fd, "not a list", 10) == 10, "a file");
	close(fd);
	CHECK(pfs_chunks__save(c, dfd, "other") == -EEXIST &&
		      pfs_chunks__unlink(dfd, "other") == -EEXIST &&
		      !faccessat(dfd, "other", F_OK, 0),
	      "a file that is not a list was replaced or removed");
	fd = openat(dfd, "chunks.tmp", O_WRONLY | O_CREAT, 0600);
	close(fd);
	CHECK(!pfs_chunks__save(c, dfd, "chunks") && faccessat(dfd, "chunks.tmp", F_OK, 0),
	      "save over a dead save's empty .tmp");
	/* A list that is not this user's (in a shared directory) is not
	 * loaded: checked as root, by giving it away. */
	if (!geteuid()) {
		CHECK(!fchownat(dfd, "chunks", 65534, 65534, 0), "chown: %s", strerror(errno));
		CHECK(!pfs_chunks__load(dfd, "chunks", SIZE) && errno == EPERM,
		      "loaded another user's list");
	}
	unlinkat(dfd, "chunks", 0);
	unlinkat(dfd, "other", 0);
	close(dfd);
	rmdir(dir);
	pfs_chunks__free(c);
	return TAP_PASS;
}

static void recrc(uint8_t *b, size_t len)
{
	put32(b + 28, pfs_crc32c(pfs_crc32c(0, b, 28), b + REPL_HDR, len - REPL_HDR));
}

static int t_frames(void)
{
	static uint8_t d[REPL_DIGESTS_MAX * 32], buf[REPL_DIGESTS_FRAME_MAX];
	const uint64_t size = 10 * PFS_CHUNK_SIZE - 1; /* 10 chunks */
	struct repl_digests x;
	struct repl_frame f;
	int len;

	for (size_t i = 0; i < sizeof(d); i++)
		d[i] = (uint8_t)(i * 7);
	CHECK(repl_digests_encode(size, 0, d, 0, buf) == -EINVAL &&
		      repl_digests_encode(size, 0, d, REPL_DIGESTS_MAX + 1, buf) == -EINVAL,
	      "encoded 0 or too many digests");
	len = repl_digests_encode(size, 3, d, 7, buf);
	CHECK(len == REPL_HDR + 7 * 32, "encode: %d", len);
	CHECK(!repl_digests_decode(buf, (size_t)len, size, &x) && x.first == 3 && x.n == 7 &&
		      !memcmp(x.d, d, 7 * 32),
	      "round trip");
	CHECK(repl_digests_decode(buf, (size_t)len - 1, size, &x) == -EMSGSIZE, "truncated");
	CHECK(repl_digests_decode(buf, (size_t)len, size + PFS_CHUNK_SIZE, &x) == -ERANGE,
	      "another blob size");
	len = repl_digests_encode(size, 4, d, 7, buf); /* 4 + 7 > 10 */
	CHECK(repl_digests_decode(buf, (size_t)len, size, &x) == -ERANGE, "past the count");
	len = repl_digests_encode(size, 0, d, 2, buf);
	put16(buf + 6, 63); /* not a multiple of 32 */
	recrc(buf, (size_t)len - 1);
	CHECK(repl_digests_decode(buf, (size_t)len - 1, size, &x) == -EPROTO, "63-byte body");
	len = repl_digests_encode(size, 0, d, 2, buf);
	buf[REPL_HDR + 5] ^= 1;
	CHECK(repl_digests_decode(buf, (size_t)len, size, &x) == -EILSEQ, "bad CRC");
	buf[REPL_HDR + 5] ^= 1;
	CHECK(repl_frame_body_len(buf, (size_t)len) == -EPROTO &&
		      repl_frame_decode(buf, (size_t)len, &f) == -EPROTO,
	      "the generic decoder took a DIGESTS frame");
	CHECK(repl_layout_body_len(buf, (size_t)len) == -EPROTO, "read as a LAYOUT frame");
	return TAP_PASS;
}

/* AUTH's RANGE flag (a chunk asked for again): its end in the body and in
 * the MAC; TCP and alone only. */
static int t_range_auth(void)
{
	static const char tok[] = "token";
	struct repl_frame a = { .type = REPL_AUTH,
				.size = 10 * PFS_CHUNK_SIZE,
				.offset = PFS_CHUNK_SIZE,
				.end = 2 * PFS_CHUNK_SIZE,
				.flags = REPL_FLAG_RANGE,
				.body_len = REPL_AUTH_RANGE_BODY },
			  b;
	uint8_t buf[REPL_FRAME_MAX], nonce[REPL_NONCE] = { 7 }, m1[REPL_MAC], m2[REPL_MAC];
	int len = repl_frame_encode(&a, buf);

	CHECK(len == REPL_HDR + REPL_AUTH_RANGE_BODY && !repl_frame_decode(buf, (size_t)len, &b) &&
		      b.end == a.end && b.flags == REPL_FLAG_RANGE && b.offset == a.offset,
	      "round trip: %d, end %llu", len, (unsigned long long)b.end);
	CHECK(!repl_auth_mac(tok, 5, nonce, a.size, &a, m1), "mac");
	a.end += 4096;
	CHECK(!repl_auth_mac(tok, 5, nonce, a.size, &a, m2) && memcmp(m1, m2, REPL_MAC),
	      "the MAC does not cover the end");
	a.flags = REPL_FLAG_RANGE | REPL_FLAG_CHUNKS;
	CHECK(repl_frame_encode(&a, buf) == -EINVAL, "RANGE with CHUNKS encoded");
	a.flags = REPL_FLAG_RANGE;
	a.xport = REPL_XPORT_UDP;
	a.data_port = 7470;
	CHECK(repl_frame_encode(&a, buf) == -EINVAL, "RANGE over UDP encoded");
	a.xport = REPL_XPORT_TCP;
	a.data_port = 0;
	a.body_len = REPL_MAC;
	CHECK(repl_frame_encode(&a, buf) == -EINVAL, "RANGE without its end encoded");
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "setup: a 37 MiB buffer of pseudo-random bytes", t_setup, .setup = true },
	{ "BLAKE3 equals its published test vector", t_vector },
	{ "workers hash a chunk only past the watermark; 1 and 4 threads equal a serial pass",
	  t_follow },
	{ "the list: in order, complete, none; compare finds the changed chunk; the root binds "
	  "the digests and the size",
	  t_list_and_compare },
	{ "a failed fill ends the workers with its message", t_failed_fill },
	{ "save and load; another size, a damaged file or another user's refused; a file "
	  "that is not a list left alone",
	  t_save_load },
	{ "DIGESTS frames: round trip and every refusal", t_frames },
	{ "AUTH with RANGE: the end in the body and the MAC, TCP and alone only", t_range_auth },
};

TAP_MAIN(tests)
