// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer harness for the replication stream's control frames
 * (src/wire/blob_repl_wire.h): the header check a reader makes before it
 * trusts body_len, and the whole-frame decoder. Built with ASan/UBSan; a
 * decoded frame must survive an encode/decode round trip unchanged and
 * agree with the header check, or the run aborts.
 *
 * An input that starts with a DIGESTS header is one DIGESTS frame, which
 * must encode back into the same bytes. An input that starts with a
 * LAYOUT header is read as a run of LAYOUT
 * frames, each cut at the length its header announces, fed to the list
 * (src/wire/blob_repl_layout.c) as a client does; a list they complete
 * must encode into frames that decode into an equal list.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../src/wire/blob_repl_wire.h"

#define BLOB (1ULL << 40)

static uint8_t out[REPL_LAYOUT_FRAME_MAX];

/* A complete list, encoded again frame by frame, must come back equal. */
static void layout_round_trip(const struct repl_layout_list *l)
{
	struct repl_layout a = repl_layout_list_get(l), b;
	struct repl_layout_list back = { 0 };
	struct repl_layout_frame f;
	uint32_t first = 0, next;
	int rc = 0;

	while (rc != 1) {
		int n = repl_layout_encode(l->none ? NULL : &a, first, out, &next);

		if (n < 0 || repl_layout_decode(out, (size_t)n, BLOB, &f))
			abort();
		rc = repl_layout_list_add(&back, &f);
		if (rc < 0 || (rc == 0 && next == first))
			abort();
		first = next;
	}
	b = repl_layout_list_get(&back);
	if (back.none != l->none || !repl_layout_equal(&a, &b))
		abort();
	repl_layout_list_fini(&back);
}

static void layouts(const uint8_t *data, size_t size)
{
	struct repl_layout_list l = { 0 };
	struct repl_layout_frame f;
	int rc = 0;

	while (size >= REPL_HDR && rc == 0) {
		int bl = repl_layout_body_len(data, size);
		size_t len = REPL_HDR + (size_t)(bl < 0 ? 0 : bl);

		if (bl < 0 || len > size || repl_layout_decode(data, len, BLOB, &f))
			break;
		rc = repl_layout_list_add(&l, &f);
		data += len;
		size -= len;
	}
	if (rc == 1)
		layout_round_trip(&l);
	repl_layout_list_fini(&l);
}

/* A DIGESTS frame that decodes must encode back into the same bytes, and
 * stay within the blob's chunks. */
static void digests(const uint8_t *data, size_t size)
{
	struct repl_digests x;
	uint64_t count = (BLOB + PFS_CHUNK_SIZE - 1) / PFS_CHUNK_SIZE;
	int n;

	if (repl_digests_decode(data, size, BLOB, &x))
		return;
	if (!x.n || x.first + (uint64_t)x.n > count || x.d != data + REPL_HDR)
		abort();
	n = repl_digests_encode(BLOB, x.first, x.d, x.n, out);
	if (n != (int)size || memcmp(out, data, size))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct repl_frame f, g;
	uint8_t buf[REPL_FRAME_MAX];
	int bl, n;

	if (size >= REPL_HDR && data[5] == REPL_LAYOUT) {
		layouts(data, size);
		return 0;
	}
	if (size >= REPL_HDR && data[5] == REPL_DIGESTS) {
		digests(data, size);
		return 0;
	}
	bl = repl_frame_body_len(data, size);
	if (repl_frame_decode(data, size, &f))
		return 0;
	if (bl != f.body_len || size != REPL_HDR + (size_t)bl)
		abort();
	n = repl_frame_encode(&f, buf);
	if (n != (int)size || memcmp(buf, data, size) || repl_frame_decode(buf, (size_t)n, &g) ||
	    memcmp(&f, &g, sizeof(f)))
		abort();
	return 0;
}
