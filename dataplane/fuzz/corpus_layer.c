// SPDX-License-Identifier: Apache-2.0
/* Writes a seed corpus for fuzz_layer into a directory: small archives of
 * the shapes image layers have (a ustar member with a prefix, a pax
 * header with path and size, a GNU long name, a directory, a symlink, a
 * whiteout), each plain (first byte 0x00) and gzip (0x01), and fed in
 * pieces of other sizes (first bytes 0x10, 0x11). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../tests/tar_util.h"

static int write_seed(const char *dir, int i, unsigned char first, const unsigned char *b,
		      size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/seed-%03d", dir, i);
	f = fopen(path, "wb");
	if (!f || fwrite(&first, 1, 1, f) != 1 || fwrite(b, 1, len, f) != len) {
		perror(path);
		return -1;
	}
	return fclose(f);
}

int main(int argc, char **argv)
{
	static unsigned char a[16384], z[20000];
	static const char pax[] = "27 path=models/config.json\n10 size=3\n";
	size_t o = 0, zl;
	z_stream s = { 0 };
	int k = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	o = tar_put(a, o, "model.safetensors", '0', "weights", 7, "models");
	o = tar_put(a, o, "PaxHeaders/x", 'x', pax, strlen(pax), NULL);
	o = tar_put(a, o, "short", '0', "abc", 3, NULL);
	o = tar_put(a, o, "././@LongLink", 'L', "models/a-long-name.json", 24, NULL);
	o = tar_put(a, o, "short2", '0', "{}", 2, NULL);
	o = tar_put(a, o, "./models/", '5', "", 0, NULL);
	o = tar_put(a, o, "models/link", '2', "", 0, NULL);
	o = tar_put(a, o, "models/.wh.old.bin", '0', "", 0, NULL);
	o = tar_end(a, o);
	if (deflateInit2(&s, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return 1;
	s.next_in = a;
	s.avail_in = (uInt)o;
	s.next_out = z;
	s.avail_out = sizeof(z);
	if (deflate(&s, Z_FINISH) != Z_STREAM_END)
		return 1;
	zl = sizeof(z) - s.avail_out;
	deflateEnd(&s);
	if (write_seed(argv[1], k++, 0x00, a, o) || write_seed(argv[1], k++, 0x01, z, zl) ||
	    write_seed(argv[1], k++, 0x10, a, o) || write_seed(argv[1], k++, 0x11, z, zl))
		return 1;
	return 0;
}
