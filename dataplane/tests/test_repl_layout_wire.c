// SPDX-License-Identifier: Apache-2.0
/*
 * The replication stream's LAYOUT frames (src/wire/blob_repl_wire.h) and
 * the list they build (src/wire/blob_repl_layout.c): a layout of a few
 * thousand entries over several frames round-trips; "no layout" and a
 * layout of no entries are told apart; every field of a frame out of its
 * range is refused with the decoder's errno (the frame re-checksummed, so
 * the field check is what refuses it); frames out of order, with another
 * count or with names that go backwards across a frame boundary are
 * refused by the list. Pure functions over buffers: needs no privilege.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "wire/blob_repl_wire.h"
#include "pfs/integrity.h"
#include "wire/wire_le.h"

#define BLOB (64ULL << 30)
#define NENT 5000

static uint8_t fr[4][REPL_LAYOUT_FRAME_MAX];
static int frlen[4];
static struct repl_layout_ent ents[NENT];
static char names[NENT][96];

/* A layout packed as a source load makes one: names ascending, each file
 * at the first multiple of 4096 after the previous end, some empty. */
static struct repl_layout make_layout(uint32_t n)
{
	uint64_t at = 0;

	for (uint32_t i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]),
			 "model/shard-%05u/weights-%05u.safetensors-with-a-long-name", i, i);
		ents[i].name = names[i];
		ents[i].offset = at;
		ents[i].length = i % 7 ? (uint64_t)i * 1000 + 1 : 0;
		at = (at + ents[i].length + 4095) & ~4095ULL;
	}
	return (struct repl_layout){ .n = n, .ent = ents, .tail_off = at };
}

/* Re-checksum frame @b of @len bytes after a test changed a field. */
static void recrc(uint8_t *b, size_t len)
{
	put32(b + 28, pfs_crc32c(pfs_crc32c(0, b, 28), b + REPL_HDR, len - REPL_HDR));
}

static int t_round_trip(void)
{
	struct repl_layout l = make_layout(NENT), got;
	struct repl_layout_list list = { 0 };
	struct repl_layout_frame f;
	uint32_t first = 0, next;
	int frames = 0, rc = 0;

	while (rc != 1) {
		int n = repl_layout_encode(&l, first, fr[0], &next);

		CHECK(n > REPL_HDR && n <= (int)REPL_LAYOUT_FRAME_MAX, "encode: %d", n);
		CHECK(!repl_layout_decode(fr[0], (size_t)n, BLOB, &f), "decode frame %d", frames);
		CHECK(f.count == NENT && f.first == first && f.n == next - first,
		      "count %u first %u n %u", f.count, f.first, f.n);
		rc = repl_layout_list_add(&list, &f);
		CHECK(rc == (next == NENT), "list add: %d at %u", rc, next);
		first = next;
		frames++;
	}
	got = repl_layout_list_get(&list);
	CHECK(frames >= 3, "%d frames for %d entries of ~70 bytes", frames, NENT);
	CHECK(repl_layout_equal(&l, &got), "the list differs from the layout sent");
	ents[17].length++;
	CHECK(!repl_layout_equal(&l, &got), "equal with another length");
	ents[17].length--;
	repl_layout_list_fini(&list);
	tap_diag("%d entries in %d frames", NENT, frames);
	return TAP_PASS;
}

static int t_none_and_empty(void)
{
	struct repl_layout empty = { .n = 0, .tail_off = 0 };
	struct repl_layout_list list = { 0 };
	struct repl_layout_frame f;
	uint32_t next = 9;
	int n = repl_layout_encode(NULL, 0, fr[0], &next);

	CHECK(n == REPL_HDR && next == 0, "no layout: %d bytes", n);
	CHECK(!repl_layout_decode(fr[0], (size_t)n, BLOB, &f) && f.none && !f.count,
	      "no layout decodes as none");
	CHECK(repl_layout_list_add(&list, &f) == 1 && list.none, "list of none");
	CHECK(repl_layout_list_add(&list, &f) == -EPROTO, "a frame after the end accepted");
	repl_layout_list_fini(&list);
	n = repl_layout_encode(&empty, 0, fr[0], &next);
	CHECK(n == REPL_HDR + 2 + 8, "empty layout: %d bytes", n);
	CHECK(!repl_layout_decode(fr[0], (size_t)n, BLOB, &f) && !f.none && f.last && !f.n,
	      "empty layout decodes as a complete list of 0");
	CHECK(repl_layout_list_add(&list, &f) == 1 && !list.none && list.done, "list of 0");
	repl_layout_list_fini(&list);
	CHECK(repl_layout_encode(NULL, 1, fr[0], &next) == -EINVAL, "none from index 1");
	return TAP_PASS;
}

/* One frame of three entries, then a change: refused with @want. */
struct bad {
	const char *what;
	int want;
	void (*mutate)(uint8_t *b, int *len);
};

/* Byte offsets in the three-entry frame below: entry i starts at E(i). */
#define BODY REPL_HDR
#define E0 (BODY + 2)
static int ent_at(const uint8_t *b, int i)
{
	int at = E0;

	while (i--)
		at += REPL_LAYOUT_ENT_HDR + get16(b + at + 16);
	return at;
}

static void m_count_max(uint8_t *b, int *len)
{
	(void)len;
	put64(b + 8, REPL_LAYOUT_ENT_MAX + 1ULL);
}
static void m_first_past(uint8_t *b, int *len)
{
	(void)len;
	put64(b + 16, 4);
}
static void m_n_past(uint8_t *b, int *len)
{
	(void)len;
	put16(b + BODY, 4);
}
static void m_n_zero(uint8_t *b, int *len)
{
	(void)len;
	put16(b + BODY, 0);
}
static void m_xport(uint8_t *b, int *len)
{
	(void)len;
	b[25] = REPL_FLAG_LAYOUT;
}
static void m_name_len0(uint8_t *b, int *len)
{
	(void)len;
	put16(b + ent_at(b, 1) + 16, 0);
}
static void m_name_len_big(uint8_t *b, int *len)
{
	(void)len;
	put16(b + ent_at(b, 1) + 16, REPL_LAYOUT_NAME_MAX + 1);
}
static void m_name_len_past(uint8_t *b, int *len)
{
	(void)len;
	put16(b + ent_at(b, 2) + 16, 200);
}
static void m_name_dotdot(uint8_t *b, int *len)
{
	(void)len;
	memcpy(b + ent_at(b, 1) + REPL_LAYOUT_ENT_HDR, "../", 3);
}
static void m_name_abs(uint8_t *b, int *len)
{
	(void)len;
	b[ent_at(b, 0) + REPL_LAYOUT_ENT_HDR] = '/';
}
static void m_name_nul(uint8_t *b, int *len)
{
	(void)len;
	b[ent_at(b, 1) + REPL_LAYOUT_ENT_HDR + 2] = 0;
}
static void m_name_utf8(uint8_t *b, int *len)
{
	(void)len;
	b[ent_at(b, 1) + REPL_LAYOUT_ENT_HDR + 2] = 0xc0; /* an overlong lead byte */
}
static void m_name_order(uint8_t *b, int *len)
{
	(void)len;
	b[ent_at(b, 2) + REPL_LAYOUT_ENT_HDR] = 'a'; /* "a..." after "b..." */
}
static void m_off_align(uint8_t *b, int *len)
{
	(void)len;
	put64(b + ent_at(b, 1), get64(b + ent_at(b, 1)) + 1);
}
static void m_off_overlap(uint8_t *b, int *len)
{
	(void)len;
	put64(b + ent_at(b, 2), 0);
}
static void m_len_past(uint8_t *b, int *len)
{
	(void)len;
	put64(b + ent_at(b, 2) + 8, BLOB);
}
static void m_len_wrap(uint8_t *b, int *len)
{
	(void)len;
	put64(b + ent_at(b, 2) + 8, ~0ULL - 4095);
}
static void m_tail_align(uint8_t *b, int *len)
{
	put64(b + *len - 8, get64(b + *len - 8) + 512);
}
static void m_tail_size(uint8_t *b, int *len)
{
	put64(b + *len - 8, BLOB);
}
static void m_tail_before(uint8_t *b, int *len)
{
	put64(b + *len - 8, 0);
}
static void m_tail_missing(uint8_t *b, int *len)
{
	*len -= 8;
	put16(b + 6, (uint16_t)(*len - REPL_HDR));
}
static void m_trailing(uint8_t *b, int *len)
{
	b[*len] = 0;
	*len += 1;
	put16(b + 6, (uint16_t)(*len - REPL_HDR));
}
static void m_body_short(uint8_t *b, int *len)
{
	put16(b + 6, 1);
	*len = REPL_HDR + 1;
}
static void m_none_count(uint8_t *b, int *len)
{
	put16(b + 6, 0);
	*len = REPL_HDR;
}

static int t_out_of_range(void)
{
	static const struct bad bad[] = {
		{ "count over REPL_LAYOUT_ENT_MAX", -ERANGE, m_count_max },
		{ "first index past the count", -ERANGE, m_first_past },
		{ "entries past the count", -ERANGE, m_n_past },
		{ "no entry in a frame of a non-empty list", -ERANGE, m_n_zero },
		{ "an xport word on LAYOUT", -EPROTO, m_xport },
		{ "a name of 0 bytes", -ERANGE, m_name_len0 },
		{ "a name over 4095 bytes", -ERANGE, m_name_len_big },
		{ "a name longer than the body", -EMSGSIZE, m_name_len_past },
		{ "a '..' component", -EBADMSG, m_name_dotdot },
		{ "an absolute name", -EBADMSG, m_name_abs },
		{ "a NUL in a name", -EBADMSG, m_name_nul },
		{ "a name not UTF-8", -EBADMSG, m_name_utf8 },
		{ "names not ascending", -EBADMSG, m_name_order },
		{ "an offset not 4096-aligned", -ERANGE, m_off_align },
		{ "an extent over the one before", -ERANGE, m_off_overlap },
		{ "an extent past the blob", -ERANGE, m_len_past },
		{ "offset + length wrapping", -ERANGE, m_len_wrap },
		{ "a tail not 4096-aligned", -ERANGE, m_tail_align },
		{ "a tail at the blob's size", -ERANGE, m_tail_size },
		{ "a tail before the last extent's end", -ERANGE, m_tail_before },
		{ "the last frame without its tail", -EMSGSIZE, m_tail_missing },
		{ "a trailing byte", -EMSGSIZE, m_trailing },
		{ "a body of 1 byte", -EMSGSIZE, m_body_short },
		{ "an empty body with a count", -EMSGSIZE, m_none_count },
	};
	static const struct repl_layout_ent three[] = {
		{ "b/config.json", 0, 700 },
		{ "b/model.safetensors", 4096, 10000 },
		{ "b/tokenizer.json", 16384, 4096 },
	};
	struct repl_layout l = { .n = 3, .ent = three, .tail_off = 20480 };
	struct repl_layout_frame f;
	uint32_t next;
	int n0 = repl_layout_encode(&l, 0, fr[1], &next), len;

	CHECK(n0 > 0 && !repl_layout_decode(fr[1], (size_t)n0, BLOB, &f), "the good frame");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int err;

		memcpy(fr[0], fr[1], (size_t)n0);
		len = n0;
		bad[i].mutate(fr[0], &len);
		recrc(fr[0], (size_t)len);
		err = repl_layout_decode(fr[0], (size_t)len, BLOB, &f);
		CHECK(err == bad[i].want, "%s: %d (%s), want %d", bad[i].what, err, strerror(-err),
		      bad[i].want);
	}
	memcpy(fr[0], fr[1], (size_t)n0);
	fr[0][REPL_HDR + 5] ^= 1;
	CHECK(repl_layout_decode(fr[0], (size_t)n0, BLOB, &f) == -EILSEQ, "a CRC mismatch");
	CHECK(repl_layout_decode(fr[1], (size_t)n0 - 1, BLOB, &f) == -EMSGSIZE, "cut short");
	CHECK(repl_layout_decode(fr[1], (size_t)n0, 16384, &f) == -ERANGE, "a smaller blob");
	/* LAYOUT is not a struct repl_frame (its body is larger) and the
	 * other frames are not LAYOUT. */
	CHECK(repl_frame_body_len(fr[1], REPL_HDR) == -EPROTO, "LAYOUT as a repl_frame");
	{
		struct repl_frame a = { .type = REPL_ACCEPT, .size = 1 };

		len = repl_frame_encode(&a, fr[0]);
		CHECK(repl_layout_body_len(fr[0], (size_t)len) == -EPROTO, "ACCEPT as LAYOUT");
	}
	return TAP_PASS;
}

/* The list: frames in order, one count, names ascending across frames. */
static int t_list_order(void)
{
	struct repl_layout l = make_layout(NENT);
	struct repl_layout_list list = { 0 };
	struct repl_layout_frame f[3];
	uint32_t first = 0, next;

	for (int i = 0; i < 3; i++) {
		frlen[i] = repl_layout_encode(&l, first, fr[i], &next);
		CHECK(frlen[i] > 0 && !repl_layout_decode(fr[i], (size_t)frlen[i], BLOB, &f[i]),
		      "frame %d", i);
		first = next;
	}
	CHECK(repl_layout_list_add(&list, &f[1]) == -EPROTO, "a second frame first");
	CHECK(!repl_layout_list_add(&list, &f[0]), "the first frame");
	CHECK(repl_layout_list_add(&list, &f[0]) == -EPROTO, "the first frame again");
	CHECK(repl_layout_list_add(&list, &f[2]) == -EPROTO, "a frame skipped");
	repl_layout_list_fini(&list);

	/* The second frame's first name made smaller than the first frame's
	 * last: each frame alone is fine, the list refuses the pair. */
	memcpy(fr[3], fr[1], (size_t)frlen[1]);
	memcpy(fr[3] + E0 + REPL_LAYOUT_ENT_HDR, "a", 1);
	recrc(fr[3], (size_t)frlen[1]);
	CHECK(!repl_layout_decode(fr[3], (size_t)frlen[1], BLOB, &f[1]), "the changed frame");
	CHECK(!repl_layout_list_add(&list, &f[0]) && repl_layout_list_add(&list, &f[1]) == -EBADMSG,
	      "a name going backwards across frames");
	repl_layout_list_fini(&list);

	/* Its first extent over the first frame's last one. */
	memcpy(fr[3], fr[1], (size_t)frlen[1]);
	put64(fr[3] + E0, 0);
	recrc(fr[3], (size_t)frlen[1]);
	CHECK(!repl_layout_decode(fr[3], (size_t)frlen[1], BLOB, &f[1]), "the changed frame");
	CHECK(!repl_layout_list_add(&list, &f[0]) && repl_layout_list_add(&list, &f[1]) == -ERANGE,
	      "an extent overlapping across frames");
	repl_layout_list_fini(&list);

	/* Another count in the second frame. */
	memcpy(fr[3], fr[1], (size_t)frlen[1]);
	put64(fr[3] + 8, NENT + 1);
	recrc(fr[3], (size_t)frlen[1]);
	CHECK(!repl_layout_decode(fr[3], (size_t)frlen[1], BLOB, &f[1]), "the changed frame");
	CHECK(!repl_layout_list_add(&list, &f[0]) && repl_layout_list_add(&list, &f[1]) == -EPROTO,
	      "another count");
	repl_layout_list_fini(&list);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "a layout of 5000 entries over several frames round-trips", t_round_trip },
	{ "no layout (empty body) and a layout of no entries differ", t_none_and_empty },
	{ "each LAYOUT field out of range is refused", t_out_of_range },
	{ "the list refuses frames out of order, another count, names or extents across frames",
	  t_list_order },
};

TAP_MAIN(tests)
