/* SPDX-License-Identifier: Apache-2.0 */
/* A small strict JSON reader (RFC 8259) for what registries send: OCI
 * manifests and indexes, token answers, and the docker config of a pull
 * secret. The text is tokenized once into an array of values (containers
 * know where their subtree ends), then read by schema-specific code with
 * json_get (an object's member), json_first/json_next (walking items) and
 * json_str/json_u64 (a value's content).
 *
 * Strict because every byte comes from a server or a user: no trailing
 * commas, no comments, no NaN, no leading zeros, no bytes after the
 * value, strings of valid UTF-8 without raw control bytes, \u escapes
 * that pair their surrogates, a nesting depth of JSON_DEPTH_MAX. A key
 * present twice in one object is reported by json_get (two readers could
 * otherwise see two different manifests in one text).
 *
 * Nothing is shared between threads; a document owns its token array and
 * borrows the text, which must outlive it. */
#ifndef PFS_REMOTE_JSON_H
#define PFS_REMOTE_JSON_H

#include <stddef.h>
#include <stdint.h>

#define JSON_DEPTH_MAX 64

enum json_type {
	JSON_NULL,
	JSON_FALSE,
	JSON_TRUE,
	JSON_NUM,
	JSON_STR,
	JSON_ARR,
	JSON_OBJ,
};

/* One value. An object's members are a key (a JSON_STR) followed by its
 * value; an array's items follow it; @next is the index just past the
 * value's subtree (its next sibling, if any). */
struct json_tok {
	uint8_t type;
	uint32_t start, end; /* its bytes in the text; a string's without quotes */
	uint32_t count; /* members of an object, items of an array */
	uint32_t next;
};

struct json_doc {
	const char *text;
	size_t len;
	struct json_tok *t;
	size_t n, cap;
};

/* json_parse - tokenize @len bytes at @text (one value, whitespace around
 * it) into @d, at most @max_tokens values. 0, or -errno with why naming
 * the byte offset: EBADMSG (not strict JSON), E2BIG (more values, or
 * deeper, than allowed; a text over 4 GiB), ENOMEM. */
int json_parse(struct json_doc *d, const char *text, size_t len, size_t max_tokens, char *why,
	       size_t n);
void json_free(struct json_doc *d);

/* json_get - the value of member @key of the object at @obj: its index,
 * -ENOENT (absent, or @obj is not an object), -EEXIST (the key twice). */
int json_get(const struct json_doc *d, int obj, const char *key);

/* json_first - the first item (array) or first key (object) of @i, or -1
 * when empty; json_next - the value after @i's subtree within @parent's
 * end, or -1. */
int json_first(const struct json_doc *d, int i);
int json_next(const struct json_doc *d, int parent, int i);

/* json_str - the string at @i, escapes decoded, into @out (@n bytes with
 * the NUL). Its length, or -EINVAL (not a string, or one holding \u0000,
 * which C strings cannot carry), -ENAMETOOLONG (does not fit). */
long json_str(const struct json_doc *d, int i, char *out, size_t n);

/* json_strdup - the same into a malloc'd string; NULL and errno. */
char *json_strdup(const struct json_doc *d, int i);

/* json_u64 - the number at @i when it is a non-negative integer (no
 * fraction, no exponent) that fits: 0, or -EINVAL / -ERANGE. */
int json_u64(const struct json_doc *d, int i, uint64_t *v);

#endif /* PFS_REMOTE_JSON_H */
