// SPDX-License-Identifier: Apache-2.0
/*
 * Integrity checksums. Placeholder portable implementation (byte table);
 * the accelerated CRC32C paths replace pfs_crc32c() behind the same API.
 * The table is built once on first use; it is read-only afterwards.
 */
#include <pthread.h>

#include "pfs/integrity.h"

#define CRC32C_POLY_REFLECTED 0x82f63b78u

static uint32_t crc_table[256];
static pthread_once_t crc_table_once = PTHREAD_ONCE_INIT;

static void crc_table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (CRC32C_POLY_REFLECTED & -(c & 1));
		crc_table[i] = c;
	}
}

uint32_t pfs_crc32c_portable(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	pthread_once(&crc_table_once, crc_table_init);
	crc = ~crc;
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

uint32_t pfs_crc32c(uint32_t crc, const void *buf, size_t len)
{
	return pfs_crc32c_portable(crc, buf, len);
}

/* Shift crc_a over len_b zero bytes by brute force; replaced by the
 * GF(2) matrix method in the accelerated implementation. */
uint32_t pfs_crc32c_combine(uint32_t crc_a, uint32_t crc_b, size_t len_b)
{
	static const uint8_t zero[4096];
	uint32_t c = crc_a;

	pthread_once(&crc_table_once, crc_table_init);
	while (len_b) {
		size_t n = len_b < sizeof(zero) ? len_b : sizeof(zero);

		for (size_t i = 0; i < n; i++)
			c = crc_table[c & 0xff] ^ (c >> 8);
		len_b -= n;
	}
	return c ^ crc_b;
}

const char *pfs_crc32c_impl(void)
{
	return "portable";
}

uint64_t pfs_fnv1a64(uint64_t h, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len--)
		h = (h ^ *p++) * PFS_FNV1A64_PRIME;
	return h;
}
