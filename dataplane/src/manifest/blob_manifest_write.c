// SPDX-License-Identifier: Apache-2.0
/*
 * The manifest writer (layout in blob_manifest.h): the JSON text in its one
 * canonical form (keys in order, no whitespace, names as UTF-8 with only
 * '"', '\\' and control bytes escaped, the short escapes where JSON has
 * them) and the 64-byte footer. The canonical form is never longer than
 * any other spelling the decoder accepts of the same manifest (the fuzzer
 * relies on that). Pure: writes only into the caller's buffer; any thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "util/utf8.h"
#include "pfs/blob_manifest.h"
#include "pfs/integrity.h"
#include "wire/wire_le.h"

/* An output that only counts once @buf is full (or NULL). */
struct out {
	char *buf;
	size_t n, len;
};

static void put(struct out *o, const char *s, size_t len)
{
	if (o->buf && o->len + len <= o->n)
		memcpy(o->buf + o->len, s, len);
	o->len += len;
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static void put_u64(struct out *o, uint64_t v)
{
	char b[24];

	put(o, b, (size_t)snprintf(b, sizeof(b), "%" PRIu64, v));
}

static void put_sha(struct out *o, const uint8_t sha[32])
{
	char hex[65];

	pfs_sha256_hex(sha, hex);
	put(o, "\"", 1);
	put(o, hex, 64);
	put(o, "\"", 1);
}

static void put_name(struct out *o, const char *s)
{
	static const char from[] = "\"\\\b\f\n\r\t", to[] = "\"\\bfnrt";

	put(o, "\"", 1);
	for (; *s; s++) {
		const char *k = strchr(from, *s);
		char esc[8];

		if (k) {
			esc[0] = '\\';
			esc[1] = to[k - from];
			put(o, esc, 2);
		} else if ((uint8_t)*s < 0x20) {
			put(o, esc, (size_t)snprintf(esc, sizeof(esc), "\\u%04x", (uint8_t)*s));
		} else {
			put(o, s, 1);
		}
	}
	put(o, "\"", 1);
}

void pfs_sha256_hex(const uint8_t sha[32], char out[65])
{
	static const char digits[] = "0123456789abcdef";

	for (int i = 0; i < 32; i++) {
		out[2 * i] = digits[sha[i] >> 4];
		out[2 * i + 1] = digits[sha[i] & 15];
	}
	out[64] = '\0';
}

ssize_t pfs_manifest_json(struct pfs_manifest *m, char *buf, size_t n)
{
	struct out o = { .buf = buf, .n = n };

	for (size_t i = 0; i < m->nfiles; i++)
		if (!utf8_valid(m->files[i].name, strlen(m->files[i].name)))
			return -EILSEQ;
	puts_(&o, "{\"version\":");
	put_u64(&o, m->version);
	puts_(&o, m->kind == PFS_MANIFEST_DIR ? ",\"kind\":\"dir\"" : ",\"kind\":\"file\"");
	puts_(&o, ",\"sha256\":");
	put_sha(&o, m->sha256);
	puts_(&o, ",\"bytes\":");
	put_u64(&o, m->bytes);
	puts_(&o, ",\"files\":");
	m->files_off = o.len;
	put(&o, "[", 1);
	for (size_t i = 0; i < m->nfiles; i++) {
		const struct pfs_manifest_file *f = &m->files[i];

		puts_(&o, i ? ",{\"name\":" : "{\"name\":");
		put_name(&o, f->name);
		puts_(&o, ",\"offset\":");
		put_u64(&o, f->offset);
		puts_(&o, ",\"length\":");
		put_u64(&o, f->length);
		puts_(&o, ",\"sha256\":");
		put_sha(&o, f->sha256);
		put(&o, "}", 1);
	}
	put(&o, "]", 1);
	m->files_len = o.len - m->files_off;
	put(&o, "}", 1);
	if (buf && o.len > n)
		return -ENOSPC;
	return (ssize_t)o.len;
}

void pfs_manifest_footer(uint8_t out[PFS_MANIFEST_FOOTER], uint64_t off, uint64_t len, uint32_t crc)
{
	memset(out, 0, PFS_MANIFEST_FOOTER);
	memcpy(out, PFS_MANIFEST_MAGIC, 8);
	put32(out + 8, PFS_MANIFEST_VERSION);
	put32(out + 12, 0);
	put64(out + 16, off);
	put64(out + 24, len);
	put32(out + 32, crc);
	put32(out + 60, pfs_crc32c(0, out, 60));
}
