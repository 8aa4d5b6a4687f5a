/* SPDX-License-Identifier: Apache-2.0 */
/* Tar archives made in memory for the image layer tests (test_oci_layer,
 * test_blob_source_oci) and the fuzz_layer seeds: one ustar header and
 * its data, padded to 512. */
#ifndef PFS_TESTS_TAR_UTIL_H
#define PFS_TESTS_TAR_UTIL_H

#include <stdio.h>
#include <string.h>

/* tar_put - a member @name (@prefix: the ustar prefix, or NULL) of @type
 * holding @len bytes of @data at @a + @o; the offset after it. */
__attribute__((unused)) static size_t tar_put(unsigned char *a, size_t o, const char *name,
					      char type, const void *data, size_t len,
					      const char *prefix)
{
	unsigned char *h = a + o;
	unsigned sum = 0;

	memset(h, 0, 512);
	snprintf((char *)h, 100, "%s", name);
	memcpy(h + 100, "0000644", 8);
	memcpy(h + 108, "0000000", 8);
	memcpy(h + 116, "0000000", 8);
	snprintf((char *)h + 124, 12, "%011zo", len);
	memcpy(h + 136, "00000000000", 12);
	memset(h + 148, ' ', 8);
	h[156] = (unsigned char)type;
	memcpy(h + 257, "ustar", 6); /* with its NUL */
	memcpy(h + 263, "00", 2);
	if (prefix)
		snprintf((char *)h + 345, 155, "%s", prefix);
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	memcpy(h + 512, data, len);
	memset(h + 512 + len, 0, (512 - len % 512) % 512);
	return o + 512 + (len + 511) / 512 * 512;
}

/* tar_end - the two end-of-archive blocks at @a + @o; the offset after. */
__attribute__((unused)) static size_t tar_end(unsigned char *a, size_t o)
{
	memset(a + o, 0, 1024);
	return o + 1024;
}

#endif /* PFS_TESTS_TAR_UTIL_H */
