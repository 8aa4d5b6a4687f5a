// SPDX-License-Identifier: Apache-2.0
/*
 * CRC index (see crc_index.h). Built by one thread and read-only after, so
 * any number of threads may extend CRCs from it.
 *
 * Extending a CRC past a whole granule is crc' = M(crc) ^ table[g], where M
 * multiplies by x^(8 * 4096) mod P. M is linear over GF(2), so it is four
 * byte-indexed lookup tables (the products of M with each byte position),
 * four loads and three xors per granule: ~1 ns against ~250 ns to hash the
 * granule's bytes.
 */
#include <errno.h>
#include <stdlib.h>

#include "pfs/crc_index.h"
#include "pfs/integrity.h"
#include "pfs/ops.h"

struct pfs_crc_index {
	const uint8_t *data;
	uint64_t size;
	uint32_t shift[4][256]; /* M applied to byte b at position k */
	uint32_t crc[]; /* one per whole granule */
};

static inline uint32_t shift_granule(const struct pfs_crc_index *x, uint32_t c)
{
	return x->shift[0][c & 0xff] ^ x->shift[1][(c >> 8) & 0xff] ^
	       x->shift[2][(c >> 16) & 0xff] ^ x->shift[3][c >> 24];
}

struct pfs_crc_index *pfs_crc_index__build(const uint8_t *data, uint64_t size)
{
	uint64_t n = size / PFS_CRC_INDEX_GRANULE;
	struct pfs_crc32c_shift sh;
	struct pfs_crc_index *x;

	x = malloc(sizeof(*x) + n * sizeof(x->crc[0]));
	if (!x) {
		errno = ENOMEM;
		return NULL;
	}
	x->data = data;
	x->size = size;
	pfs_crc32c_shift__init(&sh, PFS_CRC_INDEX_GRANULE);
	for (int k = 0; k < 4; k++)
		for (uint32_t b = 0; b < 256; b++)
			x->shift[k][b] = pfs_crc32c_shift__combine(&sh, b << (8 * k), 0);
	for (uint64_t g = 0; g < n; g++)
		x->crc[g] = pfs_crc32c(0, data + g * PFS_CRC_INDEX_GRANULE, PFS_CRC_INDEX_GRANULE);
	return x;
}

void pfs_crc_index__free(struct pfs_crc_index *x)
{
	free(x);
}

uint32_t pfs_crc_index__extend(const struct pfs_crc_index *x, uint32_t crc, uint64_t off,
			       uint64_t len)
{
	const uint64_t G = PFS_CRC_INDEX_GRANULE;
	uint64_t end = off + len, first = (off + G - 1) / G * G, last = end / G * G;

	if (first >= last) /* no whole granule inside */
		return pfs_crc32c(crc, x->data + off, len);
	crc = pfs_crc32c(crc, x->data + off, first - off);
	for (uint64_t g = first / G; g < last / G; g++)
		crc = shift_granule(x, crc) ^ x->crc[g];
	return pfs_crc32c(crc, x->data + last, end - last);
}
