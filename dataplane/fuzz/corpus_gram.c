// SPDX-License-Identifier: Apache-2.0
/* Writes a seed corpus for fuzz_gram into a directory: valid grams of every
 * mode and size class plus control records, each prefixed by a blob size, so
 * the fuzzer starts from inputs that reach the table parsers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfs/gram.h"
#include "pfs/udp_wire.h"

static uint8_t buf[8 + PFS_GRAM_HDR_LEN + 64 * PFS_GRAM_ARITH_DESC_MAX + 64 * 64];

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
	struct pfs_desc d[64];
	uint64_t blob = 1 << 20;
	int idx = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	memcpy(buf, &blob, 8);
	for (int m = 0; m <= PFS_MODE_ARITH; m++) {
		for (int n = 0; n <= 64; n = n ? n * 4 : 1) {
			size_t len, pay = 0;

			for (int i = 0; i < n; i++) {
				d[i].len = (i * 37) % 64;
				d[i].off = (i % 3 == 2) ? blob - d[i].len : (uint64_t)i * 1000;
				pay += d[i].len;
			}
			len = pfs_gram_encode(m, n, d, n, buf + 8, sizeof(buf) - 8);
			if (m != PFS_MODE_PAYLOAD)
				pay = 0;
			memset(buf + 8 + len, 0x5a, pay);
			emit(argv[1], idx++, 8 + len + pay);
		}
	}
	for (int t = PFS_CTL_HELLO; t <= PFS_CTL_DIGEST; t++) {
		struct pfs_ctl c = { .type = t, .size = blob, .value = 1, .count = 2, .word = 3 };

		pfs_ctl_encode(&c, buf + 8);
		emit(argv[1], idx++, 8 + PFS_CTL_LEN);
	}
	/* udp: a fragment header with its bytes, and repair records. */
	{
		struct pfs_udp_frag f = {
			.frag_len = 64, .seq = 3, .gram_len = 200, .frag_off = 128
		};
		struct pfs_udp_range rg[3] = { { 0, 1 }, { 5, 2 }, { 0, PFS_UDP_WHOLE_GRAM } };
		struct pfs_udp_rec r = { .type = PFS_UDP_NAK, .a = 7, .n = 3 };

		pfs_udp_frag_encode(&f, buf + 8);
		memset(buf + 8 + PFS_UDP_FRAG_LEN, 0x11, 64);
		emit(argv[1], idx++, 8 + PFS_UDP_FRAG_LEN + 64);
		emit(argv[1], idx++, 8 + pfs_udp_rec_encode(&r, rg, buf + 8));
		r = (struct pfs_udp_rec){ .type = PFS_UDP_ACK, .a = 9, .b = 100, .c = 1 };
		emit(argv[1], idx++, 8 + pfs_udp_rec_encode(&r, NULL, buf + 8));
	}
	/* The handshake's KEY records: the sender's (no confirmation) and the
	 * receiver's. */
	{
		uint8_t pub[PFS_UDP_KEY_PUB], confirm[PFS_UDP_KEY_CONFIRM];

		memset(pub, 0x42, sizeof(pub));
		memset(confirm, 0x17, sizeof(confirm));
		emit(argv[1], idx++, 8 + pfs_udp_key_encode(pub, NULL, buf + 8));
		emit(argv[1], idx++, 8 + pfs_udp_key_encode(pub, confirm, buf + 8));
	}
	return 0;
}
