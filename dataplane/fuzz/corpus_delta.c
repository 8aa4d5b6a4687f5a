// SPDX-License-Identifier: Apache-2.0
/* Writes a seed corpus for fuzz_delta into a directory: delta grams the
 * encoder made from small bases and targets (every operation kind, plane
 * splits of 1, 2 and 4 bytes), each prefixed as fuzz_delta reads it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfs/delta.h"

#define N 40000

static uint8_t base[N], target[N + 4096];

static void emit(const char *dir, int idx, const uint8_t *g, size_t len, uint32_t bs, uint32_t ts)
{
	uint8_t pre[12] = { (uint8_t)bs, (uint8_t)(bs >> 8), (uint8_t)ts, (uint8_t)(ts >> 8) };
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/seed-%03d", dir, idx);
	f = fopen(path, "wb");
	if (!f || fwrite(pre, 1, sizeof(pre), f) != sizeof(pre) || fwrite(g, 1, len, f) != len) {
		perror(path);
		exit(1);
	}
	fclose(f);
}

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

int main(int argc, char **argv)
{
	struct pfs_delta_stats st = { 0 };
	uint32_t s = 12345;
	int idx = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	/* Floats that drift a little (XOR, plane split), text (ZSTD), noise (RAW). */
	for (int i = 0; i < N / 4; i++) {
		float v = (float)(rnd(&s) % 1000) / 1000.0f;

		memcpy(base + 4 * i, &v, 4);
	}
	for (int variant = 0; variant < 4; variant++) {
		uint32_t ts = N;
		const uint8_t *g;
		struct pfs_delta_enc *e;
		ssize_t len;

		memcpy(target, base, N);
		if (variant == 1)
			for (int i = 0; i < N; i += 4)
				target[i] ^= (uint8_t)(rnd(&s) & 3);
		if (variant == 2)
			for (int i = 0; i < N; i++)
				target[i] = "the quick brown fox "[i % 20];
		if (variant == 3) {
			memmove(target + 3000, target, N - 3000);
			for (int i = 0; i < 3000; i++)
				target[i] = (uint8_t)rnd(&s);
		}
		e = pfs_delta_enc__new(NULL, base, N, 3);
		if (!e)
			return 1;
		len = pfs_delta_enc__gram(e, 0, target, 0, ts, &g, &st);
		if (len < 0)
			return 1;
		emit(argv[1], idx++, g, (size_t)len, N, ts);
		pfs_delta_enc__free(e);
	}
	return 0;
}
