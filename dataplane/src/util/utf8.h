/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: UTF-8 validation of names (the manifest's decoder and writer,
 * the source scanner, which refuses names JSON cannot carry as they are,
 * and the replication wire's LAYOUT names). */
#ifndef PFS_UTIL_UTF8_H
#define PFS_UTIL_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* utf8_seq - the length (1-4) of the well-formed UTF-8 sequence at @p
 * (@avail bytes there), or 0 when it is not one (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF). */
static inline size_t utf8_seq(const uint8_t *p, size_t avail)
{
	uint8_t c = p[0], lo = 0x80, hi = 0xbf;
	size_t len;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	if (avail < len)
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return len;
}

/* utf8_valid - @len bytes at @s are well-formed UTF-8 without a NUL. */
static inline int utf8_valid(const char *s, size_t len)
{
	const uint8_t *p = (const uint8_t *)s;

	for (size_t i = 0, k; i < len; i += k) {
		if (!p[i])
			return 0;
		k = utf8_seq(p + i, len - i);
		if (!k)
			return 0;
	}
	return 1;
}

/* utf8_put - code point @cp (at most U+10FFFF) as UTF-8 into @o (room for
 * 4 bytes); its length. */
static inline size_t utf8_put(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

#endif /* PFS_UTIL_UTF8_H */
