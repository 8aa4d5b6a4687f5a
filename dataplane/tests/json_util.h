/* SPDX-License-Identifier: Apache-2.0 */
/* Reading values out of the one-line JSON results pfs writes, for the TAP
 * tests: a key's first occurrence, optionally within a section. Enough for
 * the result shapes pfs prints (keys unique per section), not a parser. */
#ifndef PFS_TESTS_JSON_UTIL_H
#define PFS_TESTS_JSON_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The string value of "@key" in a JSON text into @out ("" if absent). */
__attribute__((unused)) static const char *jstr(const char *json, const char *key, char *out,
						size_t n)
{
	char pat[64];
	const char *p;
	size_t i = 0;

	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	p = json ? strstr(json, pat) : NULL;
	if (p)
		for (p += strlen(pat); *p && *p != '"' && i + 1 < n; p++)
			out[i++] = *p;
	out[i] = '\0';
	return out;
}

/* @json from the first @after on (a result's section, e.g. "\"fetch\""),
 * or all of it when @after is NULL; NULL when @after is absent. */
__attribute__((unused)) static const char *jsect(const char *json, const char *after)
{
	return json && after ? strstr(json, after) : json;
}

/* The number value of "@key" as a double (timestamps, rates), or -1. */
__attribute__((unused)) static double jreal(const char *json, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = json ? strstr(json, pat) : NULL;
	return p && p[strlen(pat)] >= '0' && p[strlen(pat)] <= '9' ? atof(p + strlen(pat)) : -1;
}

/* The unsigned number value of "@key", or -1. */
__attribute__((unused)) static long long jnum(const char *json, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = json ? strstr(json, pat) : NULL;
	return p && p[strlen(pat)] >= '0' && p[strlen(pat)] <= '9' ? atoll(p + strlen(pat)) : -1;
}

#endif /* PFS_TESTS_JSON_UTIL_H */
