// SPDX-License-Identifier: Apache-2.0
/*
 * The manifest decoder (layout in blob_manifest.h): footer, then the JSON.
 *
 * Input is untrusted and may be shared memory another process writes while
 * we read: the footer and the JSON are copied into private memory first,
 * and every check runs on the copies. The JSON parser is a strict
 * recursive-descent reader of exactly one shape (no generic JSON tree):
 * one pass, every read bounds-checked against the end of the copy, names
 * decoded into one pool as large as the text (a decoded string is never
 * longer than its JSON form), the file table grown by doubling. Pure: no
 * I/O, no globals; any thread. Fuzzed by fuzz/fuzz_manifest.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json_esc.h"
#include "util/utf8.h"
#include "pfs/blob_manifest.h"
#include "pfs/integrity.h"
#include "pfs/log.h"
#include "wire/wire_le.h"

#define KEY_MAX 16 /* the longest key is "version" */

/* The parser's state over the private copy of the JSON. */
struct jp {
	const char *base, *p, *end;
	char *why;
	size_t n;
	char *pool; /* decoded names, NUL-terminated, back to back */
	size_t pool_len;
};

#define bad(j, ...) pfs_why((j)->why, (j)->n, EBADMSG, __VA_ARGS__)

static void skip_ws(struct jp *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static int lit(struct jp *j, char c)
{
	skip_ws(j);
	if (j->p >= j->end || *j->p != c)
		return bad(j, "manifest byte %zu: expected '%c'", (size_t)(j->p - j->base), c);
	j->p++;
	return 0;
}

/* One escape after the backslash into @o; its length, or 0 if malformed. */
static size_t escape(struct jp *j, char *o)
{
	return json_esc_decode(&j->p, j->end, o);
}

/* A JSON string into @o (room for @cap bytes and a NUL): escapes decoded,
 * raw bytes checked as UTF-8, control characters and NUL refused. Its
 * decoded length, or -EBADMSG. */
static long str(struct jp *j, char *o, size_t cap)
{
	size_t len = 0, at;

	if (lit(j, '"'))
		return -EBADMSG;
	at = (size_t)(j->p - j->base);
	while (j->p < j->end && *j->p != '"') {
		uint8_t c = (uint8_t)*j->p;
		size_t k = 0;
		char tmp[4];

		if (c < 0x20)
			return bad(j, "manifest byte %zu: control byte 0x%02x in a string",
				   (size_t)(j->p - j->base), c);
		if (c == '\\') {
			j->p++;
			k = escape(j, tmp);
		} else {
			k = utf8_seq((const uint8_t *)j->p, (size_t)(j->end - j->p));
			if (k)
				memcpy(tmp, j->p, k);
			j->p += k;
		}
		if (!k)
			return bad(j, "manifest byte %zu: bad escape or UTF-8 in the string at %zu",
				   (size_t)(j->p - j->base), at);
		if (len + k > cap)
			return bad(j, "manifest byte %zu: string longer than %zu bytes", at, cap);
		memcpy(o + len, tmp, k);
		len += k;
	}
	if (j->p >= j->end)
		return bad(j, "manifest byte %zu: unterminated string", at);
	j->p++;
	o[len] = '\0';
	return (long)len;
}

/* "key": of the expected name. */
static int key(struct jp *j, const char *want)
{
	char k[KEY_MAX + 1];
	size_t at;

	skip_ws(j);
	at = (size_t)(j->p - j->base);
	if (str(j, k, KEY_MAX) < 0 || strcmp(k, want))
		return bad(j, "manifest byte %zu: expected the key \"%s\"", at, want);
	return lit(j, ':');
}

/* An unsigned integer: digits only, no leading zero, no fraction, < 2^64. */
static int u64(struct jp *j, const char *what, uint64_t *v)
{
	const char *s;

	skip_ws(j);
	s = j->p;
	*v = 0;
	while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
		unsigned d = (unsigned)(*j->p - '0');

		if (*v > (UINT64_MAX - d) / 10)
			return bad(j, "manifest byte %zu: %s does not fit 64 bits",
				   (size_t)(s - j->base), what);
		*v = *v * 10 + d;
		j->p++;
	}
	if (j->p == s || (s[0] == '0' && j->p - s > 1) ||
	    (j->p < j->end && (*j->p == '.' || *j->p == 'e' || *j->p == 'E')))
		return bad(j, "manifest byte %zu: %s is not an unsigned integer",
			   (size_t)(s - j->base), what);
	return 0;
}

static int sha(struct jp *j, uint8_t out[32])
{
	char hex[65];
	size_t at;

	skip_ws(j);
	at = (size_t)(j->p - j->base);
	if (str(j, hex, 64) != 64)
		return bad(j, "manifest byte %zu: sha256 is not 64 hex digits", at);
	for (int i = 0; i < 64; i++)
		if (!((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f')))
			return bad(j, "manifest byte %zu: sha256 is not lowercase hex", at);
	for (int i = 0; i < 32; i++)
		out[i] = (uint8_t)(json_hexval(hex[2 * i]) << 4 | json_hexval(hex[2 * i + 1]));
	return 0;
}

/* A relative name: not empty, not absolute, no "", "." or ".." part. */
static int name_ok(const char *s)
{
	if (!*s || *s == '/')
		return 0;
	for (const char *c = s; *c;) {
		size_t l = strcspn(c, "/");

		if (!l || (l == 1 && c[0] == '.') || (l == 2 && c[0] == '.' && c[1] == '.'))
			return 0;
		c += l;
		if (*c == '/' && !*++c)
			return 0;
	}
	return 1;
}

/* One {"name":..,"offset":..,"length":..,"sha256":..} into @f; @prev is
 * the entry before it (NULL for the first), @limit the manifest offset. */
static int file_entry(struct jp *j, struct pfs_manifest_file *f,
		      const struct pfs_manifest_file *prev, uint64_t limit)
{
	char *name = j->pool + j->pool_len;
	size_t at = (size_t)(j->p - j->base);
	long len;

	if (lit(j, '{') || key(j, "name"))
		return -EBADMSG;
	len = str(j, name, PFS_MANIFEST_NAME_MAX);
	if (len < 0)
		return -EBADMSG;
	j->pool_len += (size_t)len + 1;
	f->name = name;
	if (lit(j, ',') || key(j, "offset") || u64(j, "offset", &f->offset) || lit(j, ',') ||
	    key(j, "length") || u64(j, "length", &f->length) || lit(j, ',') || key(j, "sha256") ||
	    sha(j, f->sha256) || lit(j, '}'))
		return -EBADMSG;
	if (!name_ok(name))
		return bad(j,
			   "manifest byte %zu: name \"%.200s\" is empty, absolute or has an "
			   "empty, '.' or '..' part",
			   at, name);
	if (prev && strcmp(prev->name, name) >= 0)
		return bad(j, "manifest byte %zu: name \"%.200s\" is not after \"%.200s\"", at,
			   name, prev->name);
	if (f->offset % PFS_MANIFEST_ALIGN)
		return bad(j, "manifest byte %zu: \"%.200s\" offset %llu is not a multiple of %llu",
			   at, name, (unsigned long long)f->offset, PFS_MANIFEST_ALIGN);
	if (prev && f->offset < prev->offset + prev->length)
		return bad(j, "manifest byte %zu: \"%.200s\" overlaps \"%.200s\"", at, name,
			   prev->name);
	if (f->offset > limit || f->length > limit - f->offset)
		return bad(j,
			   "manifest byte %zu: \"%.200s\" (offset %llu, length %llu) runs "
			   "past the manifest at %llu",
			   at, name, (unsigned long long)f->offset, (unsigned long long)f->length,
			   (unsigned long long)limit);
	return 0;
}

static int files_array(struct jp *j, struct pfs_manifest *m)
{
	size_t cap = 0;

	skip_ws(j);
	m->files_off = (uint64_t)(j->p - j->base);
	if (lit(j, '['))
		return -EBADMSG;
	skip_ws(j);
	if (j->p < j->end && *j->p == ']') {
		j->p++;
		m->files_len = (uint64_t)(j->p - j->base) - m->files_off;
		return 0;
	}
	for (;;) {
		int err;

		if (m->nfiles == cap) {
			size_t ncap = cap ? 2 * cap : 16;
			void *nf = realloc(m->files, ncap * sizeof(*m->files));

			if (!nf)
				return pfs_why(j->why, j->n, ENOMEM, "no memory for %zu entries",
					       ncap);
			m->files = nf;
			cap = ncap;
		}
		err = file_entry(j, &m->files[m->nfiles],
				 m->nfiles ? &m->files[m->nfiles - 1] : NULL, m->offset);
		if (err)
			return err;
		m->nfiles++;
		skip_ws(j);
		if (j->p < j->end && *j->p == ']')
			break;
		if (lit(j, ','))
			return -EBADMSG;
	}
	j->p++;
	m->files_len = (uint64_t)(j->p - j->base) - m->files_off;
	return 0;
}

/* The whole object, then the cross-field checks. */
static int json(struct jp *j, struct pfs_manifest *m)
{
	char kind[8];
	uint64_t v, sum = 0;
	int err;

	if (lit(j, '{') || key(j, "version") || u64(j, "version", &v))
		return -EBADMSG;
	if (v != m->version)
		return bad(j, "manifest version %llu differs from the footer's %u",
			   (unsigned long long)v, m->version);
	if (lit(j, ',') || key(j, "kind") || str(j, kind, sizeof(kind) - 1) < 0)
		return -EBADMSG;
	if (strcmp(kind, "file") && strcmp(kind, "dir"))
		return bad(j, "manifest kind \"%s\" is neither \"file\" nor \"dir\"", kind);
	m->kind = strcmp(kind, "file") ? PFS_MANIFEST_DIR : PFS_MANIFEST_FILE;
	if (lit(j, ',') || key(j, "sha256") || sha(j, m->sha256) || lit(j, ',') ||
	    key(j, "bytes") || u64(j, "bytes", &m->bytes) || lit(j, ',') || key(j, "files"))
		return -EBADMSG;
	err = files_array(j, m);
	if (err)
		return err;
	if (lit(j, '}'))
		return -EBADMSG;
	skip_ws(j);
	if (j->p != j->end)
		return bad(j, "manifest byte %zu: bytes after the object",
			   (size_t)(j->p - j->base));
	for (size_t i = 0; i < m->nfiles; i++)
		sum += m->files[i].length; /* no overflow: files do not overlap */
	if (sum != m->bytes)
		return bad(j, "manifest bytes %llu is not the sum of the lengths, %llu",
			   (unsigned long long)m->bytes, (unsigned long long)sum);
	if (m->kind == PFS_MANIFEST_FILE && (m->nfiles != 1 || strchr(m->files[0].name, '/') ||
					     memcmp(m->sha256, m->files[0].sha256, 32)))
		return bad(j,
			   "a \"file\" manifest must have one entry, a base name, and its sha256");
	return 0;
}

/* The footer in its last 64 bytes of @blob (@size bytes): fills
 * m->version/offset/length/crc32c; the caller checks where it points. */
static int footer(const uint8_t *blob, size_t size, struct pfs_manifest *m, char *why, size_t n)
{
	uint8_t f[PFS_MANIFEST_FOOTER];
	uint32_t crc;

	if (size < PFS_MANIFEST_FOOTER)
		return pfs_why(why, n, ENOENT,
			       "no manifest: the blob (%zu bytes) is smaller than a "
			       "footer",
			       size);
	memcpy(f, blob + size - PFS_MANIFEST_FOOTER, sizeof(f));
	if (memcmp(f, PFS_MANIFEST_MAGIC, 8))
		return pfs_why(why, n, ENOENT,
			       "no manifest: the blob does not end with a "
			       "PFSMANIF footer (a seeded or zero blob has none)");
	crc = pfs_crc32c(0, f, 60);
	if (crc != get32(f + 60))
		return pfs_why(why, n, EBADMSG, "manifest footer CRC32C 0x%08x, computed 0x%08x",
			       get32(f + 60), crc);
	m->version = get32(f + 8);
	if (m->version != PFS_MANIFEST_VERSION)
		return pfs_why(why, n, EPROTONOSUPPORT,
			       "manifest footer version %u (this reader knows version %d)",
			       m->version, PFS_MANIFEST_VERSION);
	for (int i = 36; i < 60; i++)
		if (f[i])
			return pfs_why(why, n, EBADMSG, "manifest footer byte %d is not zero", i);
	if (get32(f + 12))
		return pfs_why(why, n, EBADMSG, "manifest footer flags 0x%x (version 1 has none)",
			       get32(f + 12));
	m->offset = get64(f + 16);
	m->length = get64(f + 24);
	m->crc32c = get32(f + 32);
	if (m->offset % PFS_MANIFEST_ALIGN || !m->length || m->length > PFS_MANIFEST_MAX)
		return pfs_why(why, n, EBADMSG,
			       "manifest at %llu, %llu bytes: not aligned, empty or too large",
			       (unsigned long long)m->offset, (unsigned long long)m->length);
	return 0;
}

/* Decode the footer of the @size bytes at @bytes, which are the blob bytes
 * from @base on (0: the whole blob; PFS_TAIL: a files-layout tail, which
 * starts at the manifest), copy the JSON out and decode it. */
#define PFS_TAIL UINT64_MAX
static int parse(const uint8_t *bytes, size_t size, uint64_t base, struct pfs_manifest **out,
		 char *why, size_t n)
{
	struct pfs_manifest *m = calloc(1, sizeof(*m));
	struct jp j = { .why = why, .n = n };
	uint32_t crc;
	int err;

	*out = NULL;
	if (!m)
		return pfs_why(why, n, ENOMEM, "no memory");
	err = footer(bytes, size, m, why, n);
	if (err)
		goto out_free;
	if (base == PFS_TAIL)
		base = m->offset;
	if (m->offset < base || m->offset - base > size - PFS_MANIFEST_FOOTER ||
	    m->length > size - PFS_MANIFEST_FOOTER - (m->offset - base) ||
	    m->offset > UINT64_MAX - size) {
		err = pfs_why(why, n, EBADMSG,
			      "manifest at %llu, %llu bytes: not inside the %zu bytes at %llu",
			      (unsigned long long)m->offset, (unsigned long long)m->length, size,
			      (unsigned long long)base);
		goto out_free;
	}
	m->json = malloc(m->length + 1);
	m->names = j.pool = malloc(m->length + 1);
	if (!m->json || !m->names) {
		err = pfs_why(why, n, ENOMEM, "no memory for a %llu-byte manifest",
			      (unsigned long long)m->length);
		goto out_free;
	}
	memcpy(m->json, bytes + (m->offset - base), m->length);
	m->json[m->length] = '\0';
	crc = pfs_crc32c(0, m->json, m->length);
	if (crc != m->crc32c) {
		err = pfs_why(why, n, EBADMSG, "manifest CRC32C 0x%08x, the footer says 0x%08x",
			      crc, m->crc32c);
		goto out_free;
	}
	j.base = j.p = m->json;
	j.end = m->json + m->length;
	err = json(&j, m);
	if (err)
		goto out_free;
	*out = m;
	return 0;
out_free:
	pfs_manifest_free(m);
	return err;
}

int pfs_manifest_parse(const void *blob, size_t size, struct pfs_manifest **out, char *why,
		       size_t n)
{
	return parse(blob, size, 0, out, why, n);
}

int pfs_manifest_parse_tail(const void *tail, size_t len, struct pfs_manifest **out, char *why,
			    size_t n)
{
	return parse(tail, len, PFS_TAIL, out, why, n);
}

void pfs_manifest_free(struct pfs_manifest *m)
{
	if (!m)
		return;
	free(m->names);
	free(m->files);
	free(m->json);
	free(m);
}

const struct pfs_manifest_file *pfs_manifest_find(const struct pfs_manifest *m, const char *name)
{
	size_t lo = 0, hi = m->nfiles;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(m->files[mid].name, name);

		if (!c)
			return &m->files[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const char *pfs_manifest_kind_str(enum pfs_manifest_kind kind)
{
	return kind == PFS_MANIFEST_DIR ? "dir" : "file";
}

int pfs_manifest_layout(const struct pfs_manifest *m, uint64_t size, struct pfs_blob_layout **out)
{
	struct pfs_blob_layout *l;

	/* One block: the struct and the table (names stay in @m). */
	l = malloc(sizeof(*l) + (m->nfiles ? m->nfiles : 1) * sizeof(*l->ent));
	if (!l)
		return -ENOMEM;
	l->n = (uint32_t)m->nfiles;
	l->ent = (struct pfs_blob_layout_ent *)(l + 1);
	l->tail_off = m->offset;
	l->size = size;
	for (size_t i = 0; i < m->nfiles; i++)
		l->ent[i] = (struct pfs_blob_layout_ent){ .name = m->files[i].name,
							  .offset = m->files[i].offset,
							  .length = m->files[i].length };
	*out = l;
	return 0;
}
