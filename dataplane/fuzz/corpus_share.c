// SPDX-License-Identifier: Apache-2.0
/* Writes a seed corpus for fuzz_share into a directory: well-formed
 * requests (GET with tokens of several lengths, PING with and without one)
 * and replies (OK, refusals with messages), each behind its selector byte. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/wire/blob_share_wire.h"

static uint8_t buf[1 + SHARE_REQ_MAX + SHARE_REPLY_MAX];

static void emit(const char *dir, int idx, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/seed-%03d", dir, idx);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len) {
		perror(path);
		exit(1);
	}
	fclose(f);
}

int main(int argc, char **argv)
{
	static const size_t tlens[] = { 0, 1, 16, 32, 64, PFS_SHARE_TOKEN_MAX };
	static const char *const msgs[] = { "", "token rejected", "holder busy: 64 clients" };
	char tok[PFS_SHARE_TOKEN_MAX];
	int idx = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	memset(tok, 'k', sizeof(tok));
	for (int op = PFS_SHARE_OP_GET; op <= PFS_SHARE_OP_PING; op++) {
		for (size_t i = 0; i < sizeof(tlens) / sizeof(tlens[0]); i++) {
			buf[0] = 0;
			emit(argv[1], idx++,
			     1 + share_req_encode(buf + 1, PFS_SHARE_VERSION, op, tok, tlens[i]));
		}
	}
	for (int st = PFS_SHARE_OK; st <= PFS_SHARE_INTERNAL; st++) {
		struct pfs_share_meta m = { .version = PFS_SHARE_VERSION,
					    .status = (enum pfs_share_status)st,
					    .size = 1ULL << 30,
					    .fingerprint = 0x0123456789abcdefULL,
					    .page = PFS_PAGE_2M,
					    .flags = st ? 0 : PFS_SHARE_F_FD };

		snprintf(m.msg, sizeof(m.msg), "%s", msgs[st % 3]);
		buf[0] = 1;
		emit(argv[1], idx++, 1 + share_reply_encode(buf + 1, &m));
	}
	return 0;
}
