// SPDX-License-Identifier: Apache-2.0
/*
 * CRC index: the CRC of any range computed from the index equals the CRC of
 * the bytes, for ranges inside one granule, across many, unaligned at either
 * end, touching the blob end (a partial last granule), and chained.
 */
#include <stdlib.h>

#include "pfs/crc_index.h"
#include "pfs/integrity.h"
#include "tap.h"

#define SIZE ((8u << 20) + 1000) /* not a multiple of the granule */

static uint8_t *buf;
static struct pfs_crc_index *idx;

static int t_build(void)
{
	uint64_t s = 12345;

	buf = malloc(SIZE);
	CHECK(buf, "malloc");
	for (uint32_t i = 0; i < SIZE; i++) {
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		buf[i] = (uint8_t)(s >> 56);
	}
	idx = pfs_crc_index__build(buf, SIZE);
	CHECK(idx, "build");
	return TAP_PASS;
}

static int t_edges(void)
{
	const uint64_t G = PFS_CRC_INDEX_GRANULE;
	const uint64_t cases[][2] = {
		{ 0, 0 },
		{ 0, 1 },
		{ 0, G },
		{ 0, G - 1 },
		{ 0, G + 1 },
		{ 1, G },
		{ G - 1, 2 },
		{ G, G },
		{ G, 5 * G },
		{ 7, 10 * G + 13 },
		{ 3 * G + 64, 64 * 1024 },
		{ 0, SIZE },
		{ SIZE - 1, 1 },
		{ SIZE - 1000, 1000 },
		{ SIZE - G - 1000, G + 1000 },
		{ SIZE / G * G - 1, 1001 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t off = cases[i][0], len = cases[i][1];

		CHECK(pfs_crc_index__extend(idx, 0, off, len) == pfs_crc32c(0, buf + off, len),
		      "range %llu+%llu", (unsigned long long)off, (unsigned long long)len);
	}
	return TAP_PASS;
}

static int t_random_chained(void)
{
	uint32_t a = 0, b = 0;
	uint64_t s = 99;

	for (int i = 0; i < 20000; i++) {
		uint64_t off, len;

		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		off = (s >> 20) % SIZE;
		len = (s >> 5) % (300 * 1024);
		if (len > SIZE - off)
			len = SIZE - off;
		a = pfs_crc_index__extend(idx, a, off, len);
		b = pfs_crc32c(b, buf + off, len);
		CHECK(a == b, "step %d: %llu+%llu", i, (unsigned long long)off,
		      (unsigned long long)len);
	}
	pfs_crc_index__free(idx);
	free(buf);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "build an index over a blob with a partial last granule", t_build },
	{ "edge ranges: empty, one byte, granule edges, blob end", t_edges },
	{ "20000 random ranges chained into one CRC equal the bytes' CRC", t_random_chained },
};

TAP_MAIN(tests)
