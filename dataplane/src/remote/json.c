// SPDX-License-Identifier: Apache-2.0
/*
 * The strict JSON reader of json.h: a recursive descent (depth bounded by
 * JSON_DEPTH_MAX, so the stack is too) that appends one token per value
 * to a growing array, then accessors over it. The text is only borrowed;
 * strings are decoded on demand (json_str), their escapes and UTF-8
 * checked once here, while tokenizing.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remote/json.h"
#include "util/json_esc.h"
#include "util/utf8.h"

struct jt {
	struct json_doc *d;
	const char *p, *end;
	size_t max;
	char *why;
	size_t n;
};

static int bad(struct jt *j, int err, const char *what)
{
	snprintf(j->why, j->n, "JSON byte %zu: %s", (size_t)(j->p - j->d->text), what);
	return -err;
}

static void ws(struct jt *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

/* A new token of @type starting here; its index, or -errno. */
static int tok(struct jt *j, enum json_type type)
{
	struct json_doc *d = j->d;

	if (d->n >= j->max)
		return bad(j, E2BIG, "more values than allowed");
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 64;
		struct json_tok *t = realloc(d->t, cap * sizeof(*t));

		if (!t)
			return bad(j, ENOMEM, "no memory");
		d->t = t;
		d->cap = cap;
	}
	d->t[d->n] =
		(struct json_tok){ .type = (uint8_t)type, .start = (uint32_t)(j->p - d->text) };
	return (int)d->n++;
}

static int string(struct jt *j)
{
	int i = tok(j, JSON_STR);

	if (i < 0)
		return i;
	j->p++;
	j->d->t[i].start++;
	while (j->p < j->end && *j->p != '"') {
		unsigned char c = (unsigned char)*j->p;
		char tmp[4];
		size_t k;

		if (c < 0x20)
			return bad(j, EBADMSG, "a control byte in a string");
		if (c == '\\') {
			j->p++;
			k = json_esc_decode(&j->p, j->end, tmp);
		} else {
			k = utf8_seq((const uint8_t *)j->p, (size_t)(j->end - j->p));
			j->p += k;
		}
		if (!k)
			return bad(j, EBADMSG, "a bad escape or bad UTF-8 in a string");
	}
	if (j->p >= j->end)
		return bad(j, EBADMSG, "an unterminated string");
	j->d->t[i].end = (uint32_t)(j->p - j->d->text);
	j->p++;
	return i;
}

static bool digit(struct jt *j)
{
	return j->p < j->end && *j->p >= '0' && *j->p <= '9';
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static int number(struct jt *j)
{
	int i = tok(j, JSON_NUM);

	if (i < 0)
		return i;
	if (*j->p == '-')
		j->p++;
	if (!digit(j))
		return bad(j, EBADMSG, "not a value");
	if (*j->p++ == '0' && digit(j))
		return bad(j, EBADMSG, "a number with a leading zero");
	while (digit(j))
		j->p++;
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (!digit(j))
			return bad(j, EBADMSG, "no digit after the decimal point");
		while (digit(j))
			j->p++;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (!digit(j))
			return bad(j, EBADMSG, "no digit in the exponent");
		while (digit(j))
			j->p++;
	}
	j->d->t[i].end = (uint32_t)(j->p - j->d->text);
	return i;
}

static int word(struct jt *j, const char *w, enum json_type type)
{
	size_t l = strlen(w);
	int i;

	if ((size_t)(j->end - j->p) < l || memcmp(j->p, w, l))
		return bad(j, EBADMSG, "not a value");
	i = tok(j, type);
	if (i < 0)
		return i;
	j->p += l;
	j->d->t[i].end = (uint32_t)(j->p - j->d->text);
	return i;
}

static int value(struct jt *j, int depth);

/* An array or object: items (or key: value members) separated by commas. */
static int container(struct jt *j, int depth, bool obj)
{
	int i = tok(j, obj ? JSON_OBJ : JSON_ARR), err;
	char close = obj ? '}' : ']';

	if (i < 0)
		return i;
	if (depth >= JSON_DEPTH_MAX)
		return bad(j, E2BIG, "nested too deep");
	j->p++;
	ws(j);
	if (j->p < j->end && *j->p == close) {
		j->p++;
		goto out;
	}
	for (;;) {
		if (obj) {
			ws(j);
			if (j->p >= j->end || *j->p != '"')
				return bad(j, EBADMSG, "a key must be a string");
			err = string(j);
			if (err < 0)
				return err;
			j->d->t[err].next = (uint32_t)j->d->n;
			ws(j);
			if (j->p >= j->end || *j->p != ':')
				return bad(j, EBADMSG, "expected ':'");
			j->p++;
		}
		err = value(j, depth + 1);
		if (err < 0)
			return err;
		j->d->t[i].count++;
		ws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p < j->end && *j->p == close) {
			j->p++;
			break;
		}
		return bad(j, EBADMSG, obj ? "expected ',' or '}'" : "expected ',' or ']'");
	}
out:
	j->d->t[i].end = (uint32_t)(j->p - j->d->text);
	return i;
}

static int value(struct jt *j, int depth)
{
	int i;

	ws(j);
	if (j->p >= j->end)
		return bad(j, EBADMSG, "a value is missing");
	switch (*j->p) {
	case '{':
		i = container(j, depth, true);
		break;
	case '[':
		i = container(j, depth, false);
		break;
	case '"':
		i = string(j);
		break;
	case 't':
		i = word(j, "true", JSON_TRUE);
		break;
	case 'f':
		i = word(j, "false", JSON_FALSE);
		break;
	case 'n':
		i = word(j, "null", JSON_NULL);
		break;
	default:
		i = number(j);
	}
	if (i >= 0)
		j->d->t[i].next = (uint32_t)j->d->n;
	return i;
}

int json_parse(struct json_doc *d, const char *text, size_t len, size_t max_tokens, char *why,
	       size_t n)
{
	struct jt j = {
		.d = d, .p = text, .end = text + len, .max = max_tokens, .why = why, .n = n
	};
	int err;

	*d = (struct json_doc){ .text = text, .len = len };
	if (len > UINT32_MAX)
		return bad(&j, E2BIG, "a text over 4 GiB");
	err = value(&j, 0);
	if (err >= 0) {
		ws(&j);
		err = j.p == j.end ? 0 : bad(&j, EBADMSG, "bytes after the value");
	}
	if (err < 0)
		json_free(d);
	return err < 0 ? err : 0;
}

void json_free(struct json_doc *d)
{
	free(d->t);
	d->t = NULL;
	d->n = d->cap = 0;
}

int json_first(const struct json_doc *d, int i)
{
	if (i < 0 || (size_t)i >= d->n || d->t[i].type < JSON_ARR || !d->t[i].count)
		return -1;
	return i + 1;
}

int json_next(const struct json_doc *d, int parent, int i)
{
	if (parent < 0 || i < 0 || (size_t)i >= d->n)
		return -1;
	return d->t[i].next < d->t[parent].next ? (int)d->t[i].next : -1;
}

static bool key_is(const struct json_doc *d, int k, const char *key)
{
	const struct json_tok *t = &d->t[k];
	size_t kl = strlen(key);

	/* Keys the readers ask for have no escapes; an escaped key is
	 * compared decoded. */
	if (!memchr(d->text + t->start, '\\', t->end - t->start))
		return t->end - t->start == kl && !memcmp(d->text + t->start, key, kl);
	{
		char buf[256];
		long l = json_str(d, k, buf, sizeof(buf));

		return l == (long)kl && !memcmp(buf, key, kl);
	}
}

int json_get(const struct json_doc *d, int obj, const char *key)
{
	int found = -ENOENT;

	if (obj < 0 || (size_t)obj >= d->n || d->t[obj].type != JSON_OBJ)
		return -ENOENT;
	for (int k = json_first(d, obj); k >= 0; k = json_next(d, obj, k + 1)) {
		if (!key_is(d, k, key))
			continue;
		if (found >= 0)
			return -EEXIST;
		found = k + 1;
	}
	return found;
}

long json_str(const struct json_doc *d, int i, char *out, size_t n)
{
	const char *p, *end;
	size_t o = 0;

	if (i < 0 || (size_t)i >= d->n || d->t[i].type != JSON_STR || !n)
		return -EINVAL;
	p = d->text + d->t[i].start;
	end = d->text + d->t[i].end;
	while (p < end) {
		char tmp[4];
		size_t k = 1;

		if (*p == '\\') {
			p++;
			k = json_esc_decode(&p, end, tmp);
			if (!k)
				return -EINVAL;
		} else {
			tmp[0] = *p++;
		}
		if (o + k >= n)
			return -ENAMETOOLONG;
		memcpy(out + o, tmp, k);
		o += k;
	}
	out[o] = '\0';
	return (long)o;
}

char *json_strdup(const struct json_doc *d, int i)
{
	size_t n;
	char *s;
	long l;

	if (i < 0 || (size_t)i >= d->n || d->t[i].type != JSON_STR) {
		errno = EINVAL;
		return NULL;
	}
	/* Decoding never lengthens a string. */
	n = d->t[i].end - d->t[i].start + 1;
	s = malloc(n);
	if (!s)
		return NULL;
	l = json_str(d, i, s, n);
	if (l < 0) {
		free(s);
		errno = (int)-l;
		return NULL;
	}
	return s;
}

int json_u64(const struct json_doc *d, int i, uint64_t *v)
{
	const char *p, *end;
	uint64_t x = 0;

	if (i < 0 || (size_t)i >= d->n || d->t[i].type != JSON_NUM)
		return -EINVAL;
	p = d->text + d->t[i].start;
	end = d->text + d->t[i].end;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL; /* a sign, a fraction, an exponent */
		if (x > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -ERANGE;
		x = x * 10 + (uint64_t)(*p - '0');
	}
	*v = x;
	return 0;
}
