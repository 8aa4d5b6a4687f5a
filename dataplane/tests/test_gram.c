// SPDX-License-Identifier: Apache-2.0
/*
 * Gram codec: round trips in every mode with edge cases, every rejection
 * class, control records, error counters, and a deterministic mutation run
 * (the libFuzzer harness in fuzz/ explores further under ASan).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pfs/gram.h"
#include "pfs/integrity.h"
#include "pfs/wire.h"
#include "tap.h"

#define NMAX 4096
#define GiB (1ULL << 30)

static uint8_t buf[PFS_GRAM_HDR_LEN + NMAX * PFS_GRAM_ARITH_DESC_MAX + (1 << 20)];
static struct pfs_desc in[NMAX], out[NMAX];
static uint64_t rs = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* After hand-editing a gram: recompute the table CRC and header CRC. */
static void fix_crcs(uint8_t *g, uint32_t desc_len)
{
	put32(g + 28, pfs_crc32c(0, g + PFS_GRAM_HDR_LEN, desc_len));
	put32(g + 36, pfs_crc32c(0, g, 36));
}

static int roundtrip(enum pfs_gram_mode m, const struct pfs_desc *d, uint32_t n, uint64_t blob)
{
	struct pfs_gram_hdr h;
	ssize_t len = pfs_gram_encode(m, 77, d, n, buf, sizeof(buf));
	int r;

	if (len < 0)
		return (int)len;
	r = pfs_gram_decode_hdr(buf, len, &h);
	if (r)
		return r;
	if (h.seq != 77 || h.ndesc != n || h.mode != m || PFS_GRAM_HDR_LEN + h.desc_len != len)
		return -1000;
	r = pfs_gram_decode_desc(&h, buf + PFS_GRAM_HDR_LEN, h.desc_len, blob, out, NMAX);
	if (r != (int)n)
		return r < 0 ? r : -1001;
	for (uint32_t i = 0; i < n; i++)
		if (out[i].off != d[i].off || out[i].len != d[i].len)
			return -1002;
	return (int)len;
}

static int t_roundtrip_random(void)
{
	for (int m = 0; m <= PFS_MODE_ARITH; m++) {
		for (uint32_t i = 0; i < NMAX; i++) {
			in[i].len = m == PFS_MODE_PAYLOAD ? rng() % 256 : rng() % (1 << 20);
			in[i].off = rng() % (GiB - in[i].len);
		}
		CHECK(roundtrip(m, in, NMAX, GiB) > 0, "mode %d: %d", m,
		      roundtrip(m, in, NMAX, GiB));
	}
	return TAP_PASS;
}

static int t_zero_desc_and_zero_len(void)
{
	for (int m = 0; m <= PFS_MODE_ARITH; m++) {
		struct pfs_gram_hdr h;
		const uint8_t *pl;

		CHECK(roundtrip(m, in, 0, GiB) == PFS_GRAM_HDR_LEN, "empty gram mode %d", m);
		CHECK(pfs_gram_decode(buf, PFS_GRAM_HDR_LEN, GiB, &h, out, NMAX, &pl) == 0 && !pl,
		      "whole empty gram mode %d", m);
		for (int i = 0; i < 10; i++)
			in[i] = (struct pfs_desc){ .off = (uint64_t)i * 1000, .len = 0 };
		CHECK(roundtrip(m, in, 10, GiB) > 0, "zero-length descs mode %d", m);
		/* A zero-length descriptor may sit on a zero-size blob. */
		CHECK(roundtrip(m, in, 1, 0) > 0, "zero blob mode %d", m);
	}
	return TAP_PASS;
}

static int t_max_len_and_blob_end(void)
{
	uint64_t blob = 1ULL << 40;

	for (int m = PFS_MODE_OFFSET; m <= PFS_MODE_ARITH; m++) {
		in[0] = (struct pfs_desc){ .off = 0, .len = UINT32_MAX };
		CHECK(roundtrip(m, in, 1, blob) > 0, "max len, mode %d", m);
		/* Referencing exactly PFS_GRAM_MAX_EFFECTIVE bytes is allowed. */
		in[0] = (struct pfs_desc){ .off = blob - UINT32_MAX, .len = UINT32_MAX };
		in[1] = (struct pfs_desc){ .off = blob, .len = 0 };
		in[2] = (struct pfs_desc){ .off = 0, .len = 0 }; /* max backwards delta */
		in[3] = (struct pfs_desc){ .off = blob - 1, .len = 1 };
		CHECK(roundtrip(m, in, 4, blob) > 0, "mode %d: %d", m, roundtrip(m, in, 4, blob));
		in[4] = (struct pfs_desc){ .off = 0, .len = 1 };
		CHECK(roundtrip(m, in, 5, blob) == -E2BIG, "over the effective cap, mode %d: %d", m,
		      roundtrip(m, in, 5, blob));
		in[4] = (struct pfs_desc){ .off = blob, .len = 1 };
		CHECK(roundtrip(m, in, 5, blob) == -ERANGE, "one past the end accepted, mode %d",
		      m);
		in[0] = (struct pfs_desc){ .off = blob - UINT32_MAX + 1, .len = UINT32_MAX };
		CHECK(roundtrip(m, in, 1, blob) == -ERANGE, "max len past end, mode %d", m);
	}
	/* Payload mode: the slab limit bounds the sum of lengths. */
	in[0] = (struct pfs_desc){ .off = 0, .len = PFS_GRAM_MAX_PAYLOAD };
	CHECK(pfs_gram_encode(PFS_MODE_PAYLOAD, 0, in, 1, buf, sizeof(buf)) > 0, "max payload");
	in[1] = (struct pfs_desc){ .off = 0, .len = 1 };
	CHECK(pfs_gram_encode(PFS_MODE_PAYLOAD, 0, in, 2, buf, sizeof(buf)) == -E2BIG,
	      "payload over the limit");
	return TAP_PASS;
}

static int t_arith_deltas(void)
{
	uint32_t n = 1000;
	int len;

	/* Contiguous, constant length: one byte per field after the first. */
	for (uint32_t i = 0; i < n; i++)
		in[i] = (struct pfs_desc){ .off = 4096 + (uint64_t)i * 65536, .len = 65536 };
	len = roundtrip(PFS_MODE_ARITH, in, n, GiB);
	CHECK(len > 0 && len <= PFS_GRAM_HDR_LEN + 2 + 3 + 2 * (int)(n - 1), "dense len %d", len);
	/* Backwards offsets and shrinking lengths. */
	for (uint32_t i = 0; i < n; i++)
		in[i] = (struct pfs_desc){ .off = GiB - (uint64_t)(i + 1) * 1000000, .len = n - i };
	CHECK(roundtrip(PFS_MODE_ARITH, in, n, GiB) > 0, "backwards");
	/* Jumps in both directions, overlapping ranges. */
	for (uint32_t i = 0; i < n; i++)
		in[i] = (struct pfs_desc){ .off = (i & 1) ? 0 : GiB - 4096,
					   .len = (i & 1) ? 4096 : 1 };
	CHECK(roundtrip(PFS_MODE_ARITH, in, n, GiB) > 0, "zigzag");
	in[0] = (struct pfs_desc){ .off = 1ULL << 63, .len = 1 };
	CHECK(pfs_gram_encode(PFS_MODE_ARITH, 0, in, 1, buf, sizeof(buf)) == -EINVAL, "2^63");
	return TAP_PASS;
}

static int encode_sample(enum pfs_gram_mode m, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		in[i] = (struct pfs_desc){ .off = (uint64_t)i * 100, .len = 50 + i };
	return (int)pfs_gram_encode(m, 5, in, n, buf, sizeof(buf));
}

static int decode_whole(size_t len, uint64_t blob)
{
	struct pfs_gram_hdr h;
	const uint8_t *pl;

	return pfs_gram_decode(buf, len, blob, &h, out, NMAX, &pl);
}

static int t_reject_truncated(void)
{
	for (int m = 0; m <= PFS_MODE_ARITH; m++) {
		int len = encode_sample(m, 20);
		size_t total = len;

		if (m == PFS_MODE_PAYLOAD) {
			for (int i = 0; i < 20; i++)
				total += 50 + i;
			memset(buf + len, 0xab, total - len);
		}
		CHECK(decode_whole(total, GiB) == 20, "valid gram mode %d: %d", m,
		      decode_whole(total, GiB));
		for (size_t l = 0; l < total; l++)
			CHECK(decode_whole(l, GiB) == -EMSGSIZE, "prefix %zu mode %d: %d", l, m,
			      decode_whole(l, GiB));
		CHECK(decode_whole(total + 1, GiB) == -EMSGSIZE, "trailing byte mode %d", m);
	}
	return TAP_PASS;
}

/* Every error a decoder returns reads as what was wrong, not as the
 * errno's strerror ("Invalid or incomplete multibyte or wide character"). */
static int t_wire_strerror(void)
{
	static const struct {
		int err;
		const char *word;
	} tab[] = { { -EMSGSIZE, "truncated" },	  { -EBADMSG, "malformed" },
		    { -EILSEQ, "checksum" },	  { -EPROTONOSUPPORT, "version" },
		    { -EPROTO, "protocol" },	  { -E2BIG, "limit" },
		    { -ERANGE, "out of bounds" }, { -ENOSPC, "descriptors" },
		    { -EINVAL, "invalid" },	  { -ENOENT, "port" } };
	int len = encode_sample(PFS_MODE_OFFSET, 4);

	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		const char *m = pfs_wire_strerror(tab[i].err);

		CHECK(strstr(m, tab[i].word) && strcmp(m, strerror(-tab[i].err)), "%d: '%s'",
		      tab[i].err, m);
	}
	CHECK(!strcmp(pfs_wire_strerror(-ENOMEM), strerror(ENOMEM)), "other errno: strerror");
	buf[12] ^= 1; /* seq, CRC not fixed */
	CHECK(strstr(pfs_wire_strerror(decode_whole(len, GiB)), "checksum (CRC32C) mismatch"),
	      "a corrupted header");
	return TAP_PASS;
}

static int t_reject_header(void)
{
	int len = encode_sample(PFS_MODE_OFFSET, 4);
	uint8_t save[PFS_GRAM_HDR_LEN];

	memcpy(save, buf, sizeof(save));
	buf[0] ^= 1;
	CHECK(decode_whole(len, GiB) == -EBADMSG, "bad magic");
	memcpy(buf, save, sizeof(save));
	buf[12] ^= 1; /* seq, CRC not fixed */
	CHECK(decode_whole(len, GiB) == -EILSEQ, "bad header crc");
	memcpy(buf, save, sizeof(save));
	buf[4] = 2;
	fix_crcs(buf, 48);
	CHECK(decode_whole(len, GiB) == -EPROTONOSUPPORT, "version 2");
	memcpy(buf, save, sizeof(save));
	buf[5] = 3;
	fix_crcs(buf, 48);
	CHECK(decode_whole(len, GiB) == -EPROTO, "mode 3");
	memcpy(buf, save, sizeof(save));
	buf[7] = 0x80;
	fix_crcs(buf, 48);
	CHECK(decode_whole(len, GiB) == -EPROTO, "unknown flag");
	memcpy(buf, save, sizeof(save));
	buf[33] = 1;
	fix_crcs(buf, 48);
	CHECK(decode_whole(len, GiB) == -EPROTO, "reserved");
	memcpy(buf, save, sizeof(save));
	put32(buf + 16, PFS_GRAM_MAX_DESC + 1);
	fix_crcs(buf, 48);
	CHECK(decode_whole(len, GiB) == -E2BIG, "too many descriptors");
	memcpy(buf, save, sizeof(save));
	put32(buf + 16, 5); /* ndesc disagrees with the 48-byte table */
	fix_crcs(buf, 48);
	CHECK(decode_whole(len, GiB) == -EBADMSG, "ndesc vs desc_len");
	memcpy(buf, save, sizeof(save));
	put32(buf + 24, 10); /* offset mode carries no payload */
	fix_crcs(buf, 48);
	CHECK(decode_whole(len + 10, GiB) == -EBADMSG, "payload in offset mode");
	memcpy(buf, save, sizeof(save));
	put32(buf + 16, 0xffffffffu);
	put32(buf + 20, 0xfffffff4u);
	fix_crcs(buf, 0);
	CHECK(decode_whole(len, GiB) == -E2BIG, "huge counts");
	return TAP_PASS;
}

static int t_reject_table(void)
{
	struct pfs_gram_hdr h;
	int len = encode_sample(PFS_MODE_OFFSET, 4);

	buf[PFS_GRAM_HDR_LEN + 3] ^= 0x40; /* table byte, CRC not fixed */
	CHECK(decode_whole(len, GiB) == -EILSEQ, "table crc");
	/* Out of the blob, and offset + length wrapping past 2^64. */
	in[0] = (struct pfs_desc){ .off = GiB, .len = 1 };
	len = pfs_gram_encode(PFS_MODE_OFFSET, 0, in, 1, buf, sizeof(buf));
	CHECK(decode_whole(len, GiB) == -ERANGE, "past blob");
	in[0] = (struct pfs_desc){ .off = UINT64_MAX - 5, .len = 10 };
	len = pfs_gram_encode(PFS_MODE_OFFSET, 0, in, 1, buf, sizeof(buf));
	CHECK(decode_whole(len, UINT64_MAX) == -ERANGE, "wrap");
	/* Payload mode: sum of lengths must equal payload_len. */
	len = encode_sample(PFS_MODE_PAYLOAD, 2);
	put32(buf + 24, 50 + 51 + 1);
	fix_crcs(buf, 24);
	CHECK(decode_whole(len + 102, GiB) == -EBADMSG, "payload sum");
	/* Caller's array too small. */
	len = encode_sample(PFS_MODE_OFFSET, 8);
	CHECK(!pfs_gram_decode_hdr(buf, len, &h), "hdr");
	CHECK(pfs_gram_decode_desc(&h, buf + 40, h.desc_len, GiB, out, 7) == -ENOSPC, "max_out");
	CHECK(pfs_gram_decode_desc(&h, buf + 40, h.desc_len - 1, GiB, out, 8) == -EMSGSIZE,
	      "short table");
	return TAP_PASS;
}

/* Hand-made arithmetic tables: header for n descriptors over @t. */
static int arith_raw(const uint8_t *t, uint32_t tl, uint32_t n, uint64_t blob)
{
	memset(buf, 0, PFS_GRAM_HDR_LEN);
	put32(buf, PFS_GRAM_MAGIC);
	buf[4] = PFS_GRAM_VERSION;
	buf[5] = PFS_MODE_ARITH;
	buf[6] = PFS_GRAM_HDR_LEN;
	put32(buf + 16, n);
	put32(buf + 20, tl);
	memcpy(buf + PFS_GRAM_HDR_LEN, t, tl);
	fix_crcs(buf, tl);
	return decode_whole(PFS_GRAM_HDR_LEN + tl, blob);
}

static int t_reject_arith(void)
{
	static const uint8_t ok[] = { 0x10, 0x05, 0x00, 0x00 }; /* (16,5) then (21,5) */
	static const uint8_t overlong[] = { 0x90, 0x00, 0x05 }; /* 16 as 2 bytes */
	static const uint8_t elevenbytes[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					       0xff, 0xff, 0xff, 0xff, 0x01, 0x00 };
	static const uint8_t back[] = { 0x10, 0x05, 0x2b, 0x00 }; /* delta -22 < -21 */
	static const uint8_t lenneg[] = { 0x10, 0x05, 0x00, 0x0b }; /* len delta -6 */
	static const uint8_t trailing[] = { 0x10, 0x05, 0x00, 0x00, 0x00 };
	static const uint8_t cut[] = { 0x10, 0x05, 0x00, 0x80 };
	static const uint8_t biglen[] = { 0x00, 0x80, 0x80, 0x80, 0x80, 0x10 }; /* 2^32 */
	/* (2^64-2, 1) ends at 2^64-1; a +1 delta must not wrap to 0. */
	static const uint8_t bits64[] = { 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					  0xff, 0xff, 0x01, 0x01, 0x02, 0x00 };

	CHECK(arith_raw(ok, sizeof(ok), 2, 100) == 2 && out[1].off == 21 && out[1].len == 5,
	      "hand-made table");
	CHECK(arith_raw(ok, sizeof(ok), 2, 25) == -ERANGE, "second past blob end");
	CHECK(arith_raw(overlong, sizeof(overlong), 1, 100) == -EBADMSG, "non-canonical varint");
	CHECK(arith_raw(elevenbytes, sizeof(elevenbytes), 1, UINT64_MAX) == -ERANGE ||
		      arith_raw(elevenbytes, sizeof(elevenbytes), 1, UINT64_MAX) == -EBADMSG,
	      "65 bits");
	CHECK(arith_raw(back, sizeof(back), 2, 100) == -ERANGE, "negative offset");
	CHECK(arith_raw(lenneg, sizeof(lenneg), 2, 100) == -ERANGE, "negative length");
	CHECK(arith_raw(trailing, sizeof(trailing), 2, 100) == -EBADMSG, "trailing bytes");
	CHECK(arith_raw(cut, sizeof(cut), 2, 100) == -EBADMSG, "varint cut by table end");
	CHECK(arith_raw(biglen, sizeof(biglen), 1, UINT64_MAX) == -ERANGE, "len >= 2^32");
	CHECK(arith_raw(bits64, sizeof(bits64), 1, UINT64_MAX) == -EBADMSG, "trailing after 1");
	CHECK(arith_raw(bits64, sizeof(bits64), 2, UINT64_MAX) == -ERANGE, "delta overflow");
	return TAP_PASS;
}

static int t_ctl_roundtrip(void)
{
	uint8_t rec[PFS_CTL_LEN];

	for (int t = PFS_CTL_HELLO; t <= PFS_CTL_AUTH; t++) {
		struct pfs_ctl c = { .type = t,
				     .mode = PFS_MODE_ARITH,
				     .flags =
					     PFS_CTL_F_OK | PFS_CTL_F_INTEGRITY(PFS_INTEGRITY_NONE),
				     .size = 1ULL << 40,
				     .value = 0x0123456789abcdefULL,
				     .count = 42,
				     .word = 0xdeadbeef },
			       d;

		CHECK(pfs_ctl_encode(&c, rec) == PFS_CTL_LEN, "encode %d", t);
		CHECK(pfs_wire_magic(rec, sizeof(rec)) == PFS_CTL_MAGIC, "magic");
		CHECK(!pfs_ctl_decode(rec, sizeof(rec), &d), "decode %d", t);
		CHECK(!memcmp(&c, &d, sizeof(c)) ||
			      (c.type == d.type && c.size == d.size && c.value == d.value &&
			       c.count == d.count && c.word == d.word && c.flags == d.flags &&
			       c.mode == d.mode),
		      "fields %d", t);
		CHECK(pfs_ctl_decode(rec, PFS_CTL_LEN - 1, &d) == -EMSGSIZE, "short");
		rec[20] ^= 1;
		CHECK(pfs_ctl_decode(rec, sizeof(rec), &d) == -EILSEQ, "crc");
	}
	{
		struct pfs_ctl c = { .type = PFS_CTL_AUTH + 1 }, d;

		CHECK(pfs_ctl_encode(&c, rec) == -EINVAL, "bad type encodes");
		c = (struct pfs_ctl){ .type = PFS_CTL_HELLO,
				      .flags = PFS_CTL_F_INTEGRITY(PFS_INTEGRITY_FNV1A64) };
		CHECK(pfs_ctl_encode(&c, rec) == PFS_CTL_LEN &&
			      !pfs_ctl_decode(rec, sizeof(rec), &d) &&
			      PFS_CTL_INTEGRITY(d.flags) == PFS_INTEGRITY_FNV1A64,
		      "integrity kind in flags");
		rec[7] |= 0x80;
		put32(rec + 36, pfs_crc32c(0, rec, 36));
		CHECK(pfs_ctl_decode(rec, sizeof(rec), &d) == -EPROTO,
		      "undefined flag bit refused");
	}
	return TAP_PASS;
}

static int t_stats(void)
{
	struct pfs_gram_stats s = { 0 };
	int errs[] = {
		3, -EMSGSIZE, -EBADMSG, -EILSEQ, -EPROTONOSUPPORT, -EPROTO, -E2BIG, -ERANGE
	};

	for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++)
		pfs_gram_stats_count(&s, errs[i]);
	CHECK(s.ok == 1 && s.errors == 7 && s.truncated == 1 && s.malformed == 2 &&
		      s.bad_crc == 1 && s.bad_version == 1 && s.over_limit == 1 &&
		      s.out_of_bounds == 1,
	      "counters");
	return TAP_PASS;
}

/* Mutate valid grams (optionally re-fixing the CRCs so the table parser is
 * reached); every result must be an error or descriptors inside the blob. */
static int t_mutation_run(void)
{
	static uint8_t g[PFS_GRAM_HDR_LEN + 64 * 15 + 4096];
	uint64_t blob = 1 << 20;
	long accepted = 0;

	for (int it = 0; it < 100000; it++) {
		int m = it % 3, n = 1 + rng() % 64, r;
		ssize_t len;
		size_t total;
		struct pfs_gram_hdr h;
		const uint8_t *pl;

		for (int i = 0; i < n; i++) {
			in[i].len = rng() % 64;
			in[i].off = rng() % (blob - 64);
		}
		len = pfs_gram_encode(m, it, in, n, g, sizeof(g));
		CHECK(len > 0, "encode");
		total = len;
		if (m == PFS_MODE_PAYLOAD)
			for (int i = 0; i < n; i++)
				total += in[i].len;
		for (int k = 0, nm = 1 + rng() % 4; k < nm; k++)
			g[rng() % total] ^= (uint8_t)(1u << (rng() % 8));
		if (rng() & 1)
			fix_crcs(g, (uint32_t)(len - PFS_GRAM_HDR_LEN));
		if (rng() % 8 == 0)
			total = rng() % (total + 1);
		r = pfs_gram_decode(g, total, blob, &h, out, NMAX, &pl);
		if (r >= 0) {
			accepted++;
			for (int i = 0; i < r; i++)
				CHECK(out[i].off + out[i].len <= blob, "accepted out of bounds");
		}
	}
	tap_diag("mutation run: %ld of 100000 mutated grams still decoded (in bounds)", accepted);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "round trip, 4096 random descriptors, every mode", t_roundtrip_random },
	{ "zero descriptors, zero-length descriptors", t_zero_desc_and_zero_len },
	{ "max length, offset at blob end, one past end rejected", t_max_len_and_blob_end },
	{ "arithmetic: dense encoding, backwards deltas, jumps", t_arith_deltas },
	{ "reject every truncation and trailing bytes", t_reject_truncated },
	{ "reject bad magic/crc/version/mode/flags/counts", t_reject_header },
	{ "reject table crc, out of bounds, overflow, payload sum", t_reject_table },
	{ "reject malformed arithmetic tables", t_reject_arith },
	{ "control records round trip and reject corruption", t_ctl_roundtrip },
	{ "decode errors are counted by class", t_stats },
	{ "decode errors in words (pfs_wire_strerror)", t_wire_strerror },
	{ "100k mutated grams: no crash, nothing out of bounds", t_mutation_run },
};

TAP_MAIN(tests)
