// SPDX-License-Identifier: Apache-2.0
/* Writes a seed corpus for fuzz_repl into a directory: one well-formed
 * frame of every type (HELLO and AUTH with 32-byte bodies, AUTH once per
 * transport and once with DELTA and its base, ACCEPT, END and
 * KEEPALIVE without, REFUSE and ERROR with texts of several lengths),
 * AUTH with the LAYOUT flag, and LAYOUT runs: "no layout", a layout of
 * no entries, one of three entries in one frame and one of 3000 entries
 * over several frames, written back to back as a client reads them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/wire/blob_repl_wire.h"

static void write_seed(const char *dir, int idx, const uint8_t *buf, size_t len)
{
	char path[512];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/seed-%03d", dir, idx);
	fp = fopen(path, "wb");
	if (!fp || fwrite(buf, 1, len, fp) != len) {
		perror(path);
		exit(1);
	}
	fclose(fp);
}

/* Every LAYOUT frame of @l (NULL: none), back to back, as one seed. */
static void emit_layout(const char *dir, int idx, const struct repl_layout *l)
{
	static uint8_t run[8 * REPL_LAYOUT_FRAME_MAX];
	size_t at = 0;
	uint32_t first = 0, next;

	do {
		int n = repl_layout_encode(l, first, run + at, &next);

		if (n < 0 || at + (size_t)n + REPL_LAYOUT_FRAME_MAX > sizeof(run)) {
			fprintf(stderr, "layout seed %d: %d\n", idx, n);
			exit(1);
		}
		at += (size_t)n;
		first = next;
	} while (l && first < l->n);
	write_seed(dir, idx, run, at);
}

static void layout_seeds(const char *dir, int idx)
{
	static struct repl_layout_ent e[3000];
	static char names[3000][48];
	struct repl_layout l = { 0 };
	uint64_t at = 0;

	emit_layout(dir, idx++, NULL);
	emit_layout(dir, idx++, &l);
	for (int i = 0; i < 3000; i++) {
		snprintf(names[i], sizeof(names[i]), "%s/part-%04d.bin", i < 3 ? "a" : "b", i);
		e[i].name = names[i];
		e[i].offset = at;
		e[i].length = (uint64_t)i * 4099 % 100000;
		at = (at + e[i].length + 4095) & ~4095ULL;
		if (i == 2) {
			l = (struct repl_layout){ .n = 3, .ent = e, .tail_off = at };
			emit_layout(dir, idx++, &l);
		}
	}
	l = (struct repl_layout){ .n = 3000, .ent = e, .tail_off = at };
	emit_layout(dir, idx, &l);
}

/* DIGESTS frames of a 1 GiB blob (256 chunks): one digest, a full frame,
 * the last ones. Returns the next index. */
static int digests_seeds(const char *dir, int idx)
{
	static uint8_t d[REPL_DIGESTS_MAX * 32], buf[REPL_DIGESTS_FRAME_MAX];
	static const uint32_t first[] = { 0, 0, 250 }, n[] = { 1, 256, 6 };

	for (size_t i = 0; i < sizeof(d); i++)
		d[i] = (uint8_t)(i * 131);
	for (int k = 0; k < 3; k++) {
		int len = repl_digests_encode(1ULL << 30, first[k], d, n[k], buf);

		if (len < 0) {
			fprintf(stderr, "digests seed %d: %d\n", idx, len);
			exit(1);
		}
		write_seed(dir, idx++, buf, (size_t)len);
	}
	return idx;
}

static void emit(const char *dir, int idx, const struct repl_frame *f)
{
	uint8_t buf[REPL_FRAME_MAX];
	int len = repl_frame_encode(f, buf);

	if (len < 0) {
		fprintf(stderr, "seed %d: %d\n", idx, len);
		exit(1);
	}
	write_seed(dir, idx, buf, (size_t)len);
}

int main(int argc, char **argv)
{
	static const char *const texts[] = {
		"x", "authentication failed: the token does not match",
		"source changed while it was read: 'a.bin' size 1 -> 2",
		"this relay forwards slower than it receives: 17 MiB behind its fill"
	};
	struct repl_frame f = { .size = 1ULL << 30, .offset = 4096 };
	int idx = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	for (uint8_t t = REPL_HELLO; t <= REPL_KEEPALIVE; t++) {
		f.type = t;
		f.body_len = t == REPL_HELLO || t == REPL_AUTH ? REPL_NONCE : 0;
		memset(f.body, 0xa5, REPL_NONCE);
		if (t == REPL_AUTH) { /* TCP, then each datagram transport */
			for (uint8_t x = REPL_XPORT_TCP; x <= REPL_XPORT_AFXDP; x++) {
				f.xport = x;
				f.data_port = x == REPL_XPORT_TCP ? 0 : 7470;
				emit(argv[1], idx++, &f);
			}
			f.xport = 0;
			f.data_port = 0;
			f.flags = REPL_FLAG_LAYOUT;
			emit(argv[1], idx++, &f);
			f.flags = REPL_FLAG_LAYOUT | REPL_FLAG_CHUNKS;
			emit(argv[1], idx++, &f);
			f.flags = REPL_FLAG_RANGE; /* a chunk again: its end */
			f.body_len = REPL_AUTH_RANGE_BODY;
			f.end = 3 * 4096;
			emit(argv[1], idx++, &f);
			f.flags = REPL_FLAG_RANGE | REPL_FLAG_STEPPED; /* from a relay that moved */
			emit(argv[1], idx++, &f);
			f.body_len = REPL_NONCE;
			f.flags = REPL_FLAG_DELTA; /* with the base's size and fingerprint */
			f.body_len = REPL_AUTH_DELTA_BODY;
			f.base_size = 1ULL << 29;
			f.base_fp = 0x0e83cf15511808efULL;
			emit(argv[1], idx++, &f);
			f.flags = 0;
			continue;
		}
		if (t != REPL_REFUSE && t != REPL_ERROR) {
			emit(argv[1], idx++, &f);
			continue;
		}
		for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
			f.body_len = (uint16_t)strlen(texts[i]);
			memcpy(f.body, texts[i], f.body_len);
			emit(argv[1], idx++, &f);
		}
	}
	f.type = REPL_STEP; /* a relay stepping aside: text, like REFUSE */
	f.body_len = (uint16_t)strlen(texts[3]);
	memcpy(f.body, texts[3], f.body_len);
	emit(argv[1], idx++, &f);
	idx = digests_seeds(argv[1], idx);
	layout_seeds(argv[1], idx);
	return 0;
}
