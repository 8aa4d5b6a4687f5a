/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: one JSON string escape decoded (RFC 8259 7), shared by the
 * blob manifest's decoder and the registry JSON reader (remote/json.c):
 * the short escapes, \uXXXX with surrogates paired, \u0000 refused (C
 * strings cannot carry it). */
#ifndef PFS_UTIL_JSON_ESC_H
#define PFS_UTIL_JSON_ESC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util/utf8.h"

static inline int json_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Four hex digits at *@p (before @end) into @cp; 0 or -1. */
static inline int json_hex4(const char **p, const char *end, uint32_t *cp)
{
	*cp = 0;
	if (end - *p < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		int v = json_hexval(*(*p)++);

		if (v < 0)
			return -1;
		*cp = *cp << 4 | (uint32_t)v;
	}
	return 0;
}

/* json_esc_decode - the escape after a backslash at *@p (before @end) as
 * UTF-8 into @o (4 bytes), *@p moved past it; its length, or 0 if
 * malformed. */
static inline size_t json_esc_decode(const char **p, const char *end, char *o)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *k;
	uint32_t cp, lo;

	if (*p >= end)
		return 0;
	k = strchr(from, **p);
	if (**p != 'u') {
		if (!**p || !k)
			return 0;
		(*p)++;
		*o = to[k - from];
		return 1;
	}
	(*p)++;
	if (json_hex4(p, end, &cp) || !cp || (cp >= 0xdc00 && cp <= 0xdfff))
		return 0;
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (end - *p < 2 || (*p)[0] != '\\' || (*p)[1] != 'u')
			return 0;
		*p += 2;
		if (json_hex4(p, end, &lo) || lo < 0xdc00 || lo > 0xdfff)
			return 0;
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	return utf8_put(o, cp);
}

#endif /* PFS_UTIL_JSON_ESC_H */
