// SPDX-License-Identifier: Apache-2.0
/*
 * Delta mode: the delta gram codec (every field, every truncation, every
 * corruption class), the encoder and applier in process (each operation
 * kind chosen where it should be, and the target rebuilt byte for byte
 * from empty, tiny, larger and smaller inputs and no base at all), and
 * `pfs send/recv --mode delta` between two network namespaces over a veth
 * pair: --out written only when verified, a base that differs refused by
 * fingerprint, --no-base (a full copy), --max-size, and a hostile sender
 * whose gram does not decompress. The bytes here are synthetic patterns
 * made to exercise each path; the real-data figures are in
 * docs/bench/bench-delta.md. The netns tests need root; otherwise they SKIP.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pfs/delta.h"
#include "pfs/gram.h"
#include <openssl/evp.h>
#include <zstd.h>
#include "json_util.h"
#include "netns.h"

static uint32_t rng = 2463534242u;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

static void fill_random(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd();
}

/* float32 weights, and the same nudged in their low mantissa bits: a
 * pattern like a fine-tuned tensor's (XOR with the base is mostly zero
 * in the sign/exponent bytes). */
static void fill_floats(uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 4 <= n; i += 4) {
		float v = ((float)(rnd() % 20001) - 10000.0f) / 40000.0f;

		memcpy(p + i, &v, 4);
	}
}

static void nudge_floats(uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 4 <= n; i += 4)
		p[i] ^= (uint8_t)(rnd() & 0x0f);
}

static void fill_text(uint8_t *p, size_t n)
{
	static const char *const words[] = { "gram ",  "blob ",	  "offset ", "delta ",
					     "pcore ", "tensor ", "shard\n" };

	for (size_t i = 0; i < n;) {
		const char *w = words[rnd() % 7];

		for (size_t k = 0; w[k] && i < n; k++)
			p[i++] = (uint8_t)w[k];
	}
}

/* Encode the whole target (grams of @unit bytes), decode every gram as a
 * receiver does, apply it, and compare. Stats into @st. */
static int round_trip(const uint8_t *base, uint64_t bs, const uint8_t *t, uint64_t ts,
		      uint32_t unit, struct pfs_delta_stats *st, uint64_t *wire)
{
	struct pfs_delta_index *idx = bs ? pfs_delta_index__build(base, bs, 2) : NULL;
	struct pfs_delta_enc *e = pfs_delta_enc__new(idx, base, bs, 3);
	struct pfs_delta_apply *ap = pfs_delta_apply__new();
	static struct pfs_delta_op ops[PFS_DELTA_MAX_OPS];
	uint8_t *out = malloc(ts ? ts : 1);
	uint64_t done = 0, seq = 0;
	int rc = TAP_FAIL;

	memset(st, 0, sizeof(*st));
	*wire = 0;
	if (!e || !ap || !out || (bs && !idx))
		goto out;
	for (uint64_t off = 0; off < ts; off += unit, seq++) {
		uint32_t len = ts - off < unit ? (uint32_t)(ts - off) : unit;
		struct pfs_delta_hdr h;
		const uint8_t *g, *pl;
		ssize_t n = pfs_delta_enc__gram(e, seq, t, off, len, &g, st);
		int k;

		if (n < 0) {
			tap_diag("encode at %llu: %zd", (unsigned long long)off, n);
			goto out;
		}
		k = pfs_delta_decode(g, (size_t)n, bs, ts, &h, ops, PFS_DELTA_MAX_OPS, &pl);
		if (k < 0 || h.seq != seq || (k && ops[0].dst < done)) {
			tap_diag("decode at %llu: %d", (unsigned long long)off, k);
			goto out;
		}
		if (pfs_delta_apply__ops(ap, ops, (uint32_t)k, pl, base, out)) {
			tap_diag("apply at %llu failed", (unsigned long long)off);
			goto out;
		}
		done = off + len;
		*wire += (uint64_t)n;
	}
	if (ts && memcmp(out, t, ts)) {
		tap_diag("rebuilt target differs");
		goto out;
	}
	rc = TAP_PASS;
out:
	free(out);
	pfs_delta_apply__free(ap);
	pfs_delta_enc__free(e);
	pfs_delta_index__free(idx);
	return rc;
}

#define MB (1u << 20)

static int t_identical(void)
{
	uint8_t *b = malloc(3 * MB);
	struct pfs_delta_stats st;
	uint64_t wire;

	fill_random(b, 3 * MB);
	CHECK(round_trip(b, 3 * MB, b, 3 * MB, 1 * MB, &st, &wire) == TAP_PASS, "round trip");
	CHECK(st.bytes[PFS_DELTA_COPY] == 3 * MB && st.moved_bytes == 0, "all same-offset COPY");
	CHECK(wire < 200, "3 MiB unchanged cost %llu wire bytes", (unsigned long long)wire);
	free(b);
	return TAP_PASS;
}

static int t_moved(void)
{
	uint8_t *b = malloc(2 * MB), *t = malloc(2 * MB + 5000);
	struct pfs_delta_stats st;
	uint64_t wire;

	fill_random(b, 2 * MB);
	/* 5000 new bytes inserted at 700 KiB, and a 10-byte edit at 100 KiB. */
	memcpy(t, b, 700 << 10);
	fill_random(t + (700 << 10), 5000);
	memcpy(t + (700 << 10) + 5000, b + (700 << 10), 2 * MB - (700 << 10));
	memset(t + (100 << 10), 'X', 10);
	CHECK(round_trip(b, 2 * MB, t, 2 * MB + 5000, 4 * MB, &st, &wire) == TAP_PASS, "trip");
	CHECK(st.moved_bytes > MB, "moved %llu", (unsigned long long)st.moved_bytes);
	/* The edits' own bytes plus operation overhead, not whole chunks. */
	CHECK(wire < 5000 + 10 + 600, "wire %llu for 5010 new bytes", (unsigned long long)wire);
	free(b);
	free(t);
	return TAP_PASS;
}

static int t_xor(void)
{
	uint8_t *b = malloc(2 * MB), *t = malloc(2 * MB);
	struct pfs_delta_stats st;
	uint64_t wire, zwire;

	fill_floats(b, 2 * MB);
	memcpy(t, b, 2 * MB);
	nudge_floats(t, 2 * MB);
	CHECK(round_trip(b, 2 * MB, t, 2 * MB, 4 * MB, &st, &wire) == TAP_PASS, "trip");
	CHECK(st.bytes[PFS_DELTA_XOR] > MB, "xor bytes %llu",
	      (unsigned long long)st.bytes[PFS_DELTA_XOR]);
	/* The same target with no base: plain zstd, which the XOR must beat. */
	CHECK(round_trip(NULL, 0, t, 2 * MB, 4 * MB, &st, &zwire) == TAP_PASS, "no-base trip");
	CHECK(st.bytes[PFS_DELTA_XOR] == 0, "no XOR without a base");
	CHECK(wire * 2 < zwire, "xor %llu vs zstd %llu", (unsigned long long)wire,
	      (unsigned long long)zwire);
	tap_diag("2 MiB of nudged float32: %llu bytes as XOR delta, %llu as zstd",
		 (unsigned long long)wire, (unsigned long long)zwire);
	free(b);
	free(t);
	return TAP_PASS;
}

static int t_zstd_raw(void)
{
	uint8_t *b = malloc(MB), *t = malloc(2 * MB);
	struct pfs_delta_stats st;
	uint64_t wire;

	fill_random(b, MB);
	fill_text(t, MB); /* compressible, unlike anything in the base */
	fill_random(t + MB, MB); /* incompressible and new */
	CHECK(round_trip(b, MB, t, 2 * MB, 4 * MB, &st, &wire) == TAP_PASS, "trip");
	/* With a base, compressible bytes go as ZREF (zstd that may also refer
	 * to the base), without as ZSTD. */
	CHECK(st.bytes[PFS_DELTA_ZSTD] + st.bytes[PFS_DELTA_ZREF] >= MB / 2, "zstd %llu zref %llu",
	      (unsigned long long)st.bytes[PFS_DELTA_ZSTD],
	      (unsigned long long)st.bytes[PFS_DELTA_ZREF]);
	CHECK(st.bytes[PFS_DELTA_RAW] >= MB / 2, "raw %llu",
	      (unsigned long long)st.bytes[PFS_DELTA_RAW]);
	/* RAW never costs more than the bytes: the target plus table bytes. */
	CHECK(wire < 2 * MB, "wire %llu", (unsigned long long)wire);
	free(b);
	free(t);
	return TAP_PASS;
}

/* Records of ~3 KiB, each behind a header naming the release (a tarball
 * of a source tree whose top directory carries the version): every chunk
 * holds a changed byte, and the records after a grown one moved. The
 * window-referencing zstd finds them at byte granularity. */
static void fill_records(uint8_t *p, size_t n, char version, size_t grow_at)
{
	uint32_t saved = rng;
	size_t i = 0;

	rng = 4242;
	for (int r = 0; i < n; r++) {
		size_t len = 2000 + rnd() % 2000;

		for (int k = 0; k < 24 && i < n; k++)
			p[i++] = (uint8_t)(k == 12 ? version : "src/pkg@vX/file.go hdr"[k % 22]);
		if (r == (int)grow_at)
			for (int k = 0; k < 100 && i < n; k++)
				p[i++] = '+';
		fill_random(p + i, len < n - i ? len : n - i);
		i += len < n - i ? len : n - i;
	}
	rng = saved;
}

static int t_zref(void)
{
	uint8_t *b = malloc(2 * MB), *t = malloc(2 * MB);
	struct pfs_delta_stats st;
	uint64_t wire;

	fill_records(b, 2 * MB, '1', SIZE_MAX);
	fill_records(t, 2 * MB, '2', 10);
	CHECK(round_trip(b, 2 * MB, t, 2 * MB, 4 * MB, &st, &wire) == TAP_PASS, "trip");
	tap_diag("copy %llu xor %llu->%llu zstd %llu zref %llu->%llu raw %llu",
		 (unsigned long long)st.bytes[0], (unsigned long long)st.bytes[1],
		 (unsigned long long)st.wire[1], (unsigned long long)st.bytes[2],
		 (unsigned long long)st.bytes[4], (unsigned long long)st.wire[4],
		 (unsigned long long)st.bytes[3]);
	CHECK(st.bytes[PFS_DELTA_ZREF] > MB, "zref bytes %llu",
	      (unsigned long long)st.bytes[PFS_DELTA_ZREF]);
	/* ~700 headers of 24 bytes changed, and 100 bytes new: far below the
	 * 2 MiB of random bytes, which only the base can explain. */
	CHECK(wire < 64 << 10, "wire %llu", (unsigned long long)wire);
	tap_diag("2 MiB of records with changed headers, shifted: %llu wire bytes",
		 (unsigned long long)wire);
	free(b);
	free(t);
	return TAP_PASS;
}

static int t_sizes(void)
{
	uint8_t *b = malloc(MB), *t = malloc(MB + 7);
	struct pfs_delta_stats st;
	uint64_t wire;
	static const uint64_t sizes[] = { 0, 1, 7, 4095, 4096, MB / 2, MB, MB + 7 };

	fill_random(b, MB);
	memcpy(t, b, MB);
	fill_random(t + MB, 7);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		CHECK(round_trip(b, MB, t, sizes[i], 256 << 10, &st, &wire) == TAP_PASS,
		      "target %llu over a 1 MiB base", (unsigned long long)sizes[i]);
		CHECK(round_trip(b, sizes[i] < MB ? sizes[i] : MB, t, MB, MB, &st, &wire) ==
			      TAP_PASS,
		      "1 MiB target over a %llu-byte base", (unsigned long long)sizes[i]);
	}
	CHECK(round_trip(NULL, 0, t, 7, MB, &st, &wire) == TAP_PASS, "no base, 7 bytes");
	free(b);
	free(t);
	return TAP_PASS;
}

/* A small valid gram with one operation of each kind, made by hand (the
 * encoder would merge an 8 KiB target into fewer), over a base of 8 KiB:
 * COPY [0, 2048), ZSTD text [2048, 5120), XOR [5120, 6144), RAW [6144,
 * 8192). The target it rebuilds is written to @t when not NULL. */
static uint8_t sample_base[8192];

/* zstd with a content checksum, as the encoder writes frames. */
static size_t zcompress(void *dst, size_t cap, const void *src, size_t n)
{
	ZSTD_CCtx *c = ZSTD_createCCtx();
	size_t z;

	ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
	ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 3);
	z = ZSTD_compress2(c, dst, cap, src, n);
	ZSTD_freeCCtx(c);
	return z;
}

static ssize_t sample_gram(uint8_t *g, size_t cap, uint8_t *t)
{
	static uint8_t tt[8192], resid[1024], z[2][8192];
	struct pfs_delta_op ops[4] = {
		{ .dst = 0, .src = 0, .len = 2048, .kind = PFS_DELTA_COPY, .elem = 1 },
		{ .dst = 2048, .len = 3072, .kind = PFS_DELTA_ZSTD, .elem = 1 },
		{ .dst = 5120, .len = 1024, .kind = PFS_DELTA_XOR, .elem = 1 },
		{ .dst = 6144, .len = 2048, .clen = 2048, .kind = PFS_DELTA_RAW, .elem = 1 },
	};
	ssize_t n;

	rng = 99;
	fill_random(sample_base, sizeof(sample_base));
	memcpy(tt, sample_base, 2048);
	fill_text(tt + 2048, 3072);
	for (int i = 0; i < 1024; i++) {
		resid[i] = i % 61 == 0 ? (uint8_t)(1 + i % 7) : 0;
		tt[5120 + i] = sample_base[5120 + i] ^ resid[i];
	}
	fill_random(tt + 6144, 2048);
	ops[1].clen = (uint32_t)zcompress(z[0], sizeof(z[0]), tt + 2048, 3072);
	ops[2].clen = (uint32_t)zcompress(z[1], sizeof(z[1]), resid, 1024);
	n = pfs_delta_gram_encode(0, ops, 4, g, cap);
	if (n < 0 || (size_t)n + ops[1].clen + ops[2].clen + 2048 > cap)
		return -1;
	memcpy(g + n, z[0], ops[1].clen);
	memcpy(g + n + ops[1].clen, z[1], ops[2].clen);
	memcpy(g + n + ops[1].clen + ops[2].clen, tt + 6144, 2048);
	if (t)
		memcpy(t, tt, sizeof(tt));
	return n + ops[1].clen + ops[2].clen + 2048;
}

static int t_codec(void)
{
	struct pfs_delta_op ops[5] = {
		{ .dst = 0, .src = 4096, .len = 100, .kind = PFS_DELTA_COPY, .elem = 1 },
		{ .dst = 100, .len = 50, .clen = 9, .kind = PFS_DELTA_XOR, .elem = 4 },
		{ .dst = 160, .len = 70, .clen = 12, .kind = PFS_DELTA_ZSTD, .elem = 2 },
		{ .dst = 300, .len = 5, .clen = 5, .kind = PFS_DELTA_RAW, .elem = 1 },
		{ .dst = 400, .src = 10, .len = 600, .clen = 40, .wlen = 5000,
		  .kind = PFS_DELTA_ZREF, .elem = 1 },
	}, back[5];
	uint8_t g[512];
	struct pfs_delta_hdr h;
	ssize_t n = pfs_delta_gram_encode(7, ops, 5, g, sizeof(g));
	int k;

	CHECK(n > PFS_DELTA_HDR_LEN, "encode %zd", n);
	CHECK(!pfs_delta_decode_hdr(g, (size_t)n, &h) && h.seq == 7 && h.nops == 5 &&
		      h.payload_len == 66,
	      "header");
	k = pfs_delta_decode_ops(&h, g + PFS_DELTA_HDR_LEN, h.table_len, 8192, 4096, 0, back, 5);
	CHECK(k == 5, "decode %d", k);
	for (int i = 0; i < 5; i++)
		CHECK(back[i].dst == ops[i].dst && back[i].src == ops[i].src &&
			      back[i].len == ops[i].len && back[i].clen == ops[i].clen &&
			      back[i].kind == ops[i].kind && back[i].elem == ops[i].elem &&
			      back[i].wlen == ops[i].wlen,
		      "op %d differs", i);
	/* A ZREF window past the base is refused. */
	CHECK(pfs_delta_decode_ops(&h, g + PFS_DELTA_HDR_LEN, h.table_len, 5009, 4096, 0, back,
				   5) == -ERANGE,
	      "zref window past the base");
	/* Order is the gaps': out-of-order or overlapping cannot be encoded. */
	ops[1].dst = 50;
	CHECK(pfs_delta_gram_encode(7, ops, 5, g, sizeof(g)) == -EINVAL, "overlap encoded");
	return TAP_PASS;
}

static int t_codec_bounds(void)
{
	struct pfs_delta_op ops[1] = { { .dst = 1000,
					 .src = 9000,
					 .len = 100,
					 .kind = PFS_DELTA_COPY,
					 .elem = 1 } },
			    back[1];
	struct pfs_delta_hdr h;
	uint8_t g[256];
	ssize_t n = pfs_delta_gram_encode(0, ops, 1, g, sizeof(g));

	CHECK(n > 0 && !pfs_delta_decode_hdr(g, (size_t)n, &h), "encode");
	/* The COPY source past the base, the target past its size. */
	CHECK(pfs_delta_decode_ops(&h, g + 40, h.table_len, 9050, 4096, 0, back, 1) == -ERANGE,
	      "source past the base");
	CHECK(pfs_delta_decode_ops(&h, g + 40, h.table_len, 1 << 20, 1050, 0, back, 1) == -ERANGE,
	      "target past its size");
	/* Before the end of the previous gram. */
	CHECK(pfs_delta_decode_ops(&h, g + 40, h.table_len, 1 << 20, 4096, 1001, back, 1) ==
		      -ERANGE,
	      "rewinding into bytes already written");
	CHECK(pfs_delta_decode_ops(&h, g + 40, h.table_len, 1 << 20, 4096, 0, back, 0) == -ENOSPC,
	      "output array too small");
	/* XOR needs the base at the same offset. */
	ops[0] = (struct pfs_delta_op){
		.dst = 1000, .len = 100, .clen = 5, .kind = PFS_DELTA_XOR, .elem = 1
	};
	n = pfs_delta_gram_encode(0, ops, 1, g, sizeof(g));
	CHECK(n > 0 && !pfs_delta_decode_hdr(g, (size_t)n, &h), "encode xor");
	CHECK(pfs_delta_decode_ops(&h, g + 40, h.table_len, 1050, 4096, 0, back, 1) == -ERANGE,
	      "xor past the base");
	return TAP_PASS;
}

/* Every truncation of a valid gram is an error, never a crash or an
 * accepted gram; every single-bit flip in the header or table is too. */
static int t_codec_corrupt(void)
{
	static uint8_t g[32768], c[32768];
	static struct pfs_delta_op ops[PFS_DELTA_MAX_OPS];
	struct pfs_delta_hdr h;
	const uint8_t *pl;
	ssize_t n = sample_gram(g, sizeof(g), NULL);
	int k;

	CHECK(n > 0, "sample gram");
	k = pfs_delta_decode(g, (size_t)n, 8192, 8192, &h, ops, PFS_DELTA_MAX_OPS, &pl);
	CHECK(k == 4, "sample decodes to %d ops", k);
	for (ssize_t len = 0; len < n; len++)
		CHECK(pfs_delta_decode(g, (size_t)len, 8192, 8192, &h, ops, PFS_DELTA_MAX_OPS,
				       &pl) < 0,
		      "truncated to %zd accepted", len);
	for (size_t bit = 0; bit < (PFS_DELTA_HDR_LEN + h.table_len) * 8; bit++) {
		memcpy(c, g, (size_t)n);
		c[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		CHECK(pfs_delta_decode(c, (size_t)n, 8192, 8192, &h, ops, PFS_DELTA_MAX_OPS, &pl) <
			      0,
		      "bit %zu flipped accepted", bit);
	}
	/* Wrong version, reserved bytes: refused for what they are. */
	memcpy(c, g, (size_t)n);
	c[4] = 2;
	CHECK(pfs_delta_decode_hdr(c, (size_t)n, &h) == -EILSEQ, "crc guards the version");
	return TAP_PASS;
}

/* A payload the table describes but zstd cannot turn into that many
 * bytes, or whose checksum fails: the applier refuses it, writing nothing
 * out of bounds; the intact gram rebuilds the target. */
static int t_apply_corrupt(void)
{
	static uint8_t g[32768], t[8192], want[8192];
	static struct pfs_delta_op ops[PFS_DELTA_MAX_OPS];
	struct pfs_delta_apply *ap = pfs_delta_apply__new();
	struct pfs_delta_hdr h;
	const uint8_t *pl;
	ssize_t n = sample_gram(g, sizeof(g), want);
	int k, bad = 0;
	uint32_t frames;

	k = pfs_delta_decode(g, (size_t)n, 8192, 8192, &h, ops, PFS_DELTA_MAX_OPS, &pl);
	CHECK(k == 4 && ap, "decode %d", k);
	frames = ops[1].clen + ops[2].clen; /* the ZSTD and the XOR frames */
	for (uint32_t i = 0; i < frames; i++) {
		uint8_t *p = (uint8_t *)pl + i;

		*p ^= 0x5a;
		bad += pfs_delta_apply__ops(ap, ops, (uint32_t)k, pl, sample_base, t) == -EBADMSG;
		*p ^= 0x5a;
	}
	CHECK(bad == (int)frames, "only %d of %u corrupted frame bytes refused", bad, frames);
	CHECK(pfs_delta_apply__ops(ap, ops, (uint32_t)k, pl, sample_base, t) == 0,
	      "intact applies");
	CHECK(!memcmp(t, want, sizeof(t)), "intact gram rebuilt another target");
	pfs_delta_apply__free(ap);
	return TAP_PASS;
}

/* ---- between two namespaces ---- */

static int port = 7960;

static int t_setup(void)
{
	return netns_setup("d", 219);
}

static void path(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", tmpdir, name);
}

static int write_file(const char *name, const uint8_t *p, size_t n)
{
	char f[160];
	FILE *fp;

	path(f, sizeof(f), name);
	fp = fopen(f, "wb");
	if (!fp || fwrite(p, 1, n, fp) != n)
		return -1;
	return fclose(fp);
}

static long long fsize(const char *name)
{
	char f[160];
	struct stat st;

	path(f, sizeof(f), name);
	return stat(f, &st) ? -1 : (long long)st.st_size;
}

/* base.bin, base2.bin (differs in one byte) and new.bin (an edited copy). */
static int make_files(void)
{
	uint8_t *b = malloc(6 * MB), *t = malloc(6 * MB + 4096);
	int err;

	fill_floats(b, 3 * MB);
	fill_text(b + 3 * MB, 3 * MB);
	memcpy(t, b, 6 * MB);
	nudge_floats(t + MB, MB);
	fill_random(t + 6 * MB, 4096);
	memmove(t + 4 * MB + 4096, t + 4 * MB, 2 * MB);
	fill_text(t + 4 * MB, 4096);
	err = write_file("base.bin", b, 6 * MB) || write_file("new.bin", t, 6 * MB + 4096);
	b[12345] ^= 1;
	err = err || write_file("base2.bin", b, 6 * MB);
	free(b);
	free(t);
	return err;
}

static int t_xfer_ok(void)
{
	char pb[24], base[160], src[160], out[160], lst[64], con[64];
	int rrc, src_rc;

	NEED_NET();
	CHECK(!make_files(), "writing the test files");
	snprintf(pb, sizeof(pb), "%d", ++port);
	path(base, sizeof(base), "base.bin");
	path(src, sizeof(src), "new.bin");
	path(out, sizeof(out), "out.bin");
	snprintf(lst, sizeof(lst), "%s:%s", ip_b, pb);
	snprintf(con, sizeof(con), "%s:%s", ip_b, pb);
	xfer("ok",
	     (char *const[]){ "recv", "--mode", "delta", "--listen", lst, "--base", base, "--out",
			      out, "--delta-threads", "3", NULL },
	     (char *const[]){ "send", "--mode", "delta", "--connect", con, "--base", base, "--src",
			      src, "--delta-threads", "2", NULL },
	     &rrc, &src_rc);
	CHECK(rrc == 0 && src_rc == 0, "exit codes %d %d", rrc, src_rc);
	CHECK(sh("cmp -s %s %s", src, out) == 0, "--out differs from the source");
	{
		const char *rj = slurp("ok-recv", "json"), *sj = slurp("ok-send", "json");
		long long wire = jnum(rj, "wire_bytes");

		CHECK(strstr(rj, "\"integrity\":\"OK\"") && strstr(sj, "\"integrity\":\"OK\""),
		      "verdicts");
		CHECK(strstr(rj, "\"full_copy\":false"), "full copy?");
		CHECK(wire > 0 && wire < (long long)MB, "wire %lld for a 6 MiB target", wire);
		CHECK(jnum(jsect(rj, "\"xor\""), "bytes") > 0, "no XOR region");
		CHECK(jnum(jsect(rj, "\"moved\""), "bytes") > 0, "no moved region");
		/* Three appliers: the grams applied in any order, same bytes. */
		CHECK(jnum(jsect(rj, "\"delta\""), "threads") == 3, "recv threads %lld",
		      jnum(jsect(rj, "\"delta\""), "threads"));
		tap_diag("6 MiB target: %lld wire bytes, ratio %.1f", wire,
			 jreal(jsect(rj, "\"delta\""), "ratio"));
	}
	return TAP_PASS;
}

static int t_xfer_other_base(void)
{
	char pb[24], base[160], base2[160], src[160], out[160], a[64];
	int rrc, src_rc;

	NEED_NET();
	snprintf(pb, sizeof(pb), "%d", ++port);
	path(base, sizeof(base), "base.bin");
	path(base2, sizeof(base2), "base2.bin");
	path(src, sizeof(src), "new.bin");
	path(out, sizeof(out), "out2.bin");
	snprintf(a, sizeof(a), "%s:%s", ip_b, pb);
	xfer("fp",
	     (char *const[]){ "recv", "--mode", "delta", "--listen", a, "--base", base2, "--out",
			      out, NULL },
	     (char *const[]){ "send", "--mode", "delta", "--connect", a, "--base", base, "--src",
			      src, NULL },
	     &rrc, &src_rc);
	CHECK(rrc == 4 && src_rc == 4, "exit codes %d %d (want 4: refused)", rrc, src_rc);
	CHECK(strstr(slurp("fp-send", "err"), "fingerprint"), "sender says why");
	CHECK(fsize("out2.bin") < 0 && fsize("out2.bin.pfs-partial") < 0,
	      "a refused transfer left an output file");
	return TAP_PASS;
}

static int t_xfer_no_base(void)
{
	char pb[24], base[160], src[160], out[160], a[64];
	int rrc, src_rc;

	NEED_NET();
	snprintf(pb, sizeof(pb), "%d", ++port);
	path(base, sizeof(base), "base.bin");
	path(src, sizeof(src), "new.bin");
	path(out, sizeof(out), "out3.bin");
	snprintf(a, sizeof(a), "%s:%s", ip_b, pb);
	xfer("nb",
	     (char *const[]){ "recv", "--mode", "delta", "--listen", a, "--no-base", "--out", out,
			      NULL },
	     (char *const[]){ "send", "--mode", "delta", "--connect", a, "--base", base, "--src",
			      src, NULL },
	     &rrc, &src_rc);
	CHECK(rrc == 0 && src_rc == 0, "exit codes %d %d", rrc, src_rc);
	CHECK(sh("cmp -s %s %s", src, out) == 0, "--out differs from the source");
	CHECK(strstr(slurp("nb-send", "json"), "\"full_copy\":true"), "sender: full copy");
	CHECK(jnum(jsect(slurp("nb-recv", "json"), "\"same\""), "bytes") == 0,
	      "copied from a base it does not have");
	return TAP_PASS;
}

static int t_xfer_max_size(void)
{
	char pb[24], base[160], src[160], a[64];
	int rrc, src_rc;

	NEED_NET();
	snprintf(pb, sizeof(pb), "%d", ++port);
	path(base, sizeof(base), "base.bin");
	path(src, sizeof(src), "new.bin");
	snprintf(a, sizeof(a), "%s:%s", ip_b, pb);
	xfer("ms",
	     (char *const[]){ "recv", "--mode", "delta", "--listen", a, "--base", base,
			      "--max-size", "1M", NULL },
	     (char *const[]){ "send", "--mode", "delta", "--connect", a, "--base", base, "--src",
			      src, NULL },
	     &rrc, &src_rc);
	CHECK(rrc == 4 && src_rc == 4, "exit codes %d %d (want 4)", rrc, src_rc);
	CHECK(strstr(slurp("ms-recv", "err"), "max-size"), "receiver names --max-size");
	return TAP_PASS;
}

/* A hand-made sender in ns_a: a valid HELLO (the sample base), the gram
 * with one byte flipped at payload offset @flip, then the SHA-256 of the
 * intact target and END, as pfs send would. Its exit code. */
static int hostile_sender(const uint8_t *g, size_t n, size_t flip, const uint8_t sha[32])
{
	struct pfs_ctl hello = { .type = PFS_CTL_HELLO,
				 .mode = PFS_MODE_DELTA,
				 .size = sizeof(sample_base),
				 .value = pfs_delta_base_fp(sample_base, sizeof(sample_base)),
				 .count = 8192 };
	struct pfs_ctl dg = { .type = PFS_CTL_DIGEST,
			      .mode = PFS_MODE_DELTA,
			      .count = 32,
			      .word = PFS_DIGEST_SHA256 };
	struct pfs_ctl end = {
		.type = PFS_CTL_END, .mode = PFS_MODE_DELTA, .size = 8192, .value = 4, .count = 1
	};
	uint8_t rec[PFS_CTL_LEN], *c = malloc(n);
	int s = netns_connect_b((uint16_t)port);

	if (!c)
		return 10;
	pfs_ctl_encode(&hello, rec);
	if (s < 0 || write(s, rec, sizeof(rec)) != (ssize_t)sizeof(rec) ||
	    read(s, rec, sizeof(rec)) != (ssize_t)sizeof(rec))
		return 11;
	memcpy(c, g, n);
	c[flip] ^= 0x40;
	if (write(s, c, n) != (ssize_t)n)
		return 12;
	pfs_ctl_encode(&dg, rec);
	if (write(s, rec, sizeof(rec)) < 0 || write(s, sha, 32) < 0)
		return 0; /* the receiver may have hung up already */
	pfs_ctl_encode(&end, rec);
	if (write(s, rec, sizeof(rec)) < 0)
		return 0;
	(void)read(s, rec, sizeof(rec)); /* RESULT, or the close */
	return 0;
}

/* @where: "zstd" flips a byte of the ZSTD frame (the applier refuses it:
 * exit 1), "raw" one of the RAW bytes (rebuilt, but the SHA-256 differs:
 * exit 3 MISMATCH). Either way no --out file is left. */
static int corrupt_xfer(const char *where, int want_rc, const char *want_msg)
{
	static uint8_t g[32768], t[8192];
	uint8_t sha[32];
	char pb[24], out[160], a[64], tag[32], base[160];
	ssize_t n = sample_gram(g, sizeof(g), t);
	struct pfs_delta_hdr h;
	size_t payload;
	pid_t r, c;
	int rrc, crc;

	NEED_NET();
	CHECK(n > 0 && !pfs_delta_decode_hdr(g, (size_t)n, &h), "sample gram");
	CHECK(EVP_Digest(t, sizeof(t), sha, NULL, EVP_sha256(), NULL), "sha256");
	CHECK(!write_file("sample_base.bin", sample_base, sizeof(sample_base)), "base file");
	path(base, sizeof(base), "sample_base.bin");
	payload = PFS_DELTA_HDR_LEN + h.table_len;
	snprintf(pb, sizeof(pb), "%d", ++port);
	snprintf(tag, sizeof(tag), "cg-%s", where);
	snprintf(out, sizeof(out), "%s/out-%s.bin", tmpdir, where);
	snprintf(a, sizeof(a), "%s:%s", ip_b, pb);
	r = spawn(ns_b, tag,
		  (char *const[]){ "recv", "--mode", "delta", "--listen", a, "--base", base,
				   "--out", out, "--timeout", "5", NULL });
	c = fork();
	if (c == 0)
		_exit(hostile_sender(g, (size_t)n,
				     strcmp(where, "raw") ? payload + 10 : (size_t)n - 7, sha));
	crc = wait_rc(c, 30);
	rrc = wait_rc(r, 30);
	CHECK(crc == 0, "hostile client rc %d", crc);
	CHECK(rrc == want_rc, "receiver exit %d, want %d: %s", rrc, want_rc, slurp(tag, "err"));
	CHECK(strstr(slurp(tag, "err"), want_msg), "receiver does not say '%s'", want_msg);
	CHECK(access(out, F_OK) && sh("ls %s.pfs-partial 2>/dev/null", out) != 0,
	      "a failed transfer left an output file");
	return TAP_PASS;
}

static int t_xfer_corrupt_zstd(void)
{
	return corrupt_xfer("zstd", 1, "does not decompress");
}

static int t_xfer_corrupt_raw(void)
{
	return corrupt_xfer("raw", 3, "MISMATCH");
}

static int t_teardown(void)
{
	NEED_NET();
	CHECK(sh("ip netns del %s && ip netns del %s", ns_a, ns_b) == 0, "netns del");
	ns_a[0] = '\0';
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "codec: every field of every operation kind round-trips; overlap refused", t_codec },
	{ "codec: COPY/XOR past the base, past the target, rewinding: -ERANGE", t_codec_bounds },
	{ "codec: every truncation and every header/table bit flip is refused", t_codec_corrupt },
	{ "applier: corrupted zstd frames refused (-EBADMSG), the intact one applies",
	  t_apply_corrupt },
	{ "encoder: an unchanged target is same-offset COPYs, a few bytes on the wire",
	  t_identical },
	{ "encoder: an insertion and an edit cost their own bytes (moved COPYs)", t_moved },
	{ "encoder: nudged float32 goes as XOR, under half of plain zstd", t_xor },
	{ "encoder: compressible new bytes as ZSTD, random new bytes as RAW", t_zstd_raw },
	{ "encoder: shifted records with a changed byte in every chunk go as ZREF, compactly",
	  t_zref },
	{ "encoder: empty, tiny, smaller and larger targets and bases, no base", t_sizes },
	{ "create two netns joined by a veth pair", t_setup, .setup = true },
	{ "pfs send/recv --mode delta: --out equals the source, OK both sides", t_xfer_ok },
	{ "a receiver whose base differs refuses (fingerprint, exit 4); no --out left",
	  t_xfer_other_base },
	{ "recv --no-base: the sender sends a full copy, OK", t_xfer_no_base },
	{ "recv --max-size below the target: refused, exit 4", t_xfer_max_size },
	{ "a corrupt zstd frame ends the transfer (exit 1), said so; no --out left",
	  t_xfer_corrupt_zstd },
	{ "a corrupt RAW byte: rebuilt, SHA-256 differs, MISMATCH (exit 3); no --out left",
	  t_xfer_corrupt_raw },
	{ "remove the namespaces and veth", t_teardown, .setup = true },
};

int main(void)
{
	return tap_run(tests, sizeof(tests) / sizeof(tests[0]));
}
