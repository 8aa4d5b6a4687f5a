// SPDX-License-Identifier: Apache-2.0
/* Writes a seed corpus for fuzz_repl into a directory: one well-formed
 * frame of every type (HELLO and AUTH with 32-byte bodies, AUTH once per
 * transport and once with DELTA and its base, ACCEPT, END and
 * KEEPALIVE without, REFUSE and ERROR with texts of several lengths). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/wire/blob_repl_wire.h"

static void emit(const char *dir, int idx, const struct repl_frame *f)
{
	uint8_t buf[REPL_FRAME_MAX];
	int len = repl_frame_encode(f, buf);
	char path[512];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/seed-%03d", dir, idx);
	fp = fopen(path, "wb");
	if (len < 0 || !fp || fwrite(buf, 1, (size_t)len, fp) != (size_t)len) {
		perror(path);
		exit(1);
	}
	fclose(fp);
}

int main(int argc, char **argv)
{
	static const char *const texts[] = {
		"x", "authentication failed: the token does not match",
		"source changed while it was read: 'a.bin' size 1 -> 2"
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
	return 0;
}
