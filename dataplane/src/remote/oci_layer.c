// SPDX-License-Identifier: Apache-2.0
/*
 * Reading an image layer (tar or tar+gzip) as it streams (oci.h): a push
 * parser, fed the layer's bytes in whatever pieces the network gives. No
 * HTTP here (src/source/blob_source_oci_layer.c fetches), so it is tested
 * and fuzzed on bytes.
 *
 * Each piece is hashed (sha256 of the bytes as served: the layer digest),
 * inflated through a 64 KiB buffer when gzip (zlib's gzip wrapper;
 * concatenated gzip members are read on), and walked by the tar state
 * machine: a 512-byte header, then the member's data (copied where the
 * callback said, or dropped), then its padding to 512. Pax extended
 * headers ('x': "path", "size") and GNU long names ('L') are collected
 * into a buffer bounded by OCI_LAYER_EXT_MAX and apply to the next
 * member; global pax headers ('g') are read past. Every header's checksum
 * is checked. One thread owns a parser; it allocates at creation only
 * (plus the bounded extension buffer).
 */
#include <errno.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "remote/oci.h"

#define BLOCK 512
#define INFLATE_BUF (64u << 10)

enum state { S_HEADER, S_DATA, S_EXT, S_PAD, S_END };

struct oci_untar {
	enum oci_layer_kind kind;
	char digest[OCI_DIGEST_LEN + 1];
	oci_member_fn fn;
	void *ctx;
	EVP_MD_CTX *sha;
	z_stream z;
	bool z_open, z_done; /* a gzip member begun / the last one ended */
	uint8_t *out; /* INFLATE_BUF: what gzip inflated */
	uint64_t fed; /* compressed bytes in */
	uint64_t pos; /* tar bytes consumed */
	uint64_t at; /* the offset in messages: the header at fault, or the end */
	enum state st;
	uint8_t hdr[BLOCK];
	size_t hfill;
	int zeros; /* all-zero blocks in a row */
	uint64_t left; /* of the member's data, or of the extension */
	size_t pad;
	uint8_t *dst; /* the member's bytes go here; NULL: dropped */
	char ext_type; /* 'x', 'g', 'L' while collecting */
	char *ext; /* OCI_LAYER_EXT_MAX + 1 */
	size_t ext_len;
	/* What the last pax header or GNU long name says of the next member. */
	char name[OCI_NAME_MAX + 1];
	bool has_name, has_size;
	uint64_t size;
	uint64_t headers, skipped;
	bool failed;
};

enum oci_layer_kind oci_layer_kind(const char *mt)
{
	if (!strcmp(mt, OCI_MT_LAYER_TAR))
		return OCI_LAYER_TAR;
	if (!strcmp(mt, OCI_MT_LAYER_GZIP) || !strcmp(mt, OCI_MT_DOCKER_LAYER))
		return OCI_LAYER_GZIP;
	return OCI_LAYER_NONE;
}

struct oci_untar *oci_untar_new(enum oci_layer_kind kind, const char *digest, oci_member_fn fn,
				void *ctx)
{
	struct oci_untar *u;

	if (kind == OCI_LAYER_NONE || !oci_digest_valid(digest) || !fn) {
		errno = EINVAL;
		return NULL;
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		goto out_oom;
	u->kind = kind;
	snprintf(u->digest, sizeof(u->digest), "%s", digest);
	u->fn = fn;
	u->ctx = ctx;
	u->sha = EVP_MD_CTX_new();
	u->ext = malloc(OCI_LAYER_EXT_MAX + 1);
	u->out = kind == OCI_LAYER_GZIP ? malloc(INFLATE_BUF) : NULL;
	if (!u->sha || !u->ext || (kind == OCI_LAYER_GZIP && !u->out) ||
	    EVP_DigestInit_ex(u->sha, EVP_sha256(), NULL) != 1)
		goto out_free;
	return u;
out_free:
	oci_untar_free(u);
out_oom:
	errno = ENOMEM;
	return NULL;
}

void oci_untar_free(struct oci_untar *u)
{
	if (!u)
		return;
	if (u->z_open)
		inflateEnd(&u->z);
	EVP_MD_CTX_free(u->sha);
	free(u->ext);
	free(u->out);
	free(u);
}

uint64_t oci_untar_fed(const struct oci_untar *u)
{
	return u->fed;
}

uint64_t oci_untar_skipped(const struct oci_untar *u)
{
	return u->skipped;
}

/* -EBADMSG (or @err) with "layer DIGEST: tar byte POS: ..." */
__attribute__((format(printf, 5, 6))) static int bad(struct oci_untar *u, int err, char *why,
						     size_t n, const char *fmt, ...)
{
	int o = snprintf(why, n, "layer %s: tar byte %llu: ", u->digest, (unsigned long long)u->at);
	va_list ap;

	va_start(ap, fmt);
	if (o >= 0 && (size_t)o < n)
		vsnprintf(why + o, n - (size_t)o, fmt, ap);
	va_end(ap);
	u->failed = true;
	return err;
}

/* ---- tar headers ---- */

/* An octal field (leading spaces, digits, then NUL or space to its end),
 * or GNU's base-256 (the first byte's high bit set). -1: malformed. */
static int number(const uint8_t *f, size_t len, uint64_t *v)
{
	size_t i = 0;

	*v = 0;
	if (f[0] & 0x80) {
		if (f[0] != 0x80)
			return -1; /* negative, or over 2^63 */
		for (i = 1; i < len; i++) {
			if (*v >> 55)
				return -1;
			*v = *v << 8 | f[i];
		}
		return 0;
	}
	while (i < len && f[i] == ' ')
		i++;
	for (; i < len && f[i] >= '0' && f[i] <= '7'; i++) {
		if (*v >> 60)
			return -1;
		*v = *v << 3 | (uint64_t)(f[i] - '0');
	}
	for (; i < len; i++)
		if (f[i] != ' ' && f[i] != '\0')
			return -1;
	return 0;
}

static bool checksum_ok(const uint8_t *h)
{
	uint64_t want;
	unsigned long us = 0;
	long ss = 0;

	if (number(h + 148, 8, &want))
		return false;
	for (int i = 0; i < BLOCK; i++) {
		uint8_t b = i >= 148 && i < 156 ? ' ' : h[i];

		us += b;
		ss += (signed char)b; /* some old tars summed signed bytes */
	}
	return want == us || (long)want == ss;
}

/* A field of at most @len bytes, NUL-terminated or full. */
static size_t field_len(const uint8_t *f, size_t len)
{
	const uint8_t *z = memchr(f, '\0', len);

	return z ? (size_t)(z - f) : len;
}

/* The member's name, its leading "./" and "/" dropped. */
static const char *clean_name(const char *s)
{
	for (;;) {
		if (s[0] == '/')
			s++;
		else if (s[0] == '.' && s[1] == '/')
			s += 2;
		else
			return s;
	}
}

/* The records of a pax header: "LEN key=value\n" each. */
static int pax(struct oci_untar *u, char *why, size_t n)
{
	size_t o = 0;

	while (o < u->ext_len) {
		const char *r = u->ext + o, *eq, *end;
		size_t len = 0, i = 0;

		while (o + i < u->ext_len && r[i] >= '0' && r[i] <= '9' && i < 8)
			len = len * 10 + (size_t)(r[i++] - '0');
		if (!i || r[i] != ' ' || len <= i + 1 || len > u->ext_len - o || r[len - 1] != '\n')
			return bad(u, -EBADMSG, why, n, "a malformed pax record at its byte %zu",
				   o);
		end = r + len - 1;
		eq = memchr(r + i + 1, '=', (size_t)(end - (r + i + 1)));
		if (!eq)
			return bad(u, -EBADMSG, why, n, "a pax record without '=' at its byte %zu",
				   o);
		if ((size_t)(eq - (r + i + 1)) == 4 && !memcmp(r + i + 1, "path", 4)) {
			size_t vl = (size_t)(end - eq - 1);

			if (vl > OCI_NAME_MAX || memchr(eq + 1, '\0', vl))
				return bad(u, -EBADMSG, why, n,
					   "a pax path over %d bytes or with a NUL", OCI_NAME_MAX);
			memcpy(u->name, eq + 1, vl);
			u->name[vl] = '\0';
			u->has_name = true;
		} else if ((size_t)(eq - (r + i + 1)) == 4 && !memcmp(r + i + 1, "size", 4)) {
			char *e;

			u->size = strtoull(eq + 1, &e, 10);
			if (e != end || eq + 1 == end || eq[1] == '-' || u->size >> 62)
				return bad(u, -EBADMSG, why, n, "a pax size that is not a number");
			u->has_size = true;
		}
		o += len;
	}
	return 0;
}

/* The extension collected: what it says of the next member. */
static int ext_done(struct oci_untar *u, char *why, size_t n)
{
	if (u->ext_type == 'x')
		return pax(u, why, n);
	if (u->ext_type == 'L') {
		size_t l = strnlen(u->ext, u->ext_len);

		if (l > OCI_NAME_MAX)
			return bad(u, -EBADMSG, why, n, "a GNU long name over %d bytes",
				   OCI_NAME_MAX);
		memcpy(u->name, u->ext, l);
		u->name[l] = '\0';
		u->has_name = true;
	}
	return 0; /* 'g', 'K': read past */
}

/* A member's data of @size bytes (or an extension's) follows the header. */
static void expect(struct oci_untar *u, enum state st, uint64_t size)
{
	u->left = size;
	u->pad = (size_t)((BLOCK - size % BLOCK) % BLOCK);
	u->st = size ? st : u->pad ? S_PAD : S_HEADER;
}

static int header(struct oci_untar *u, char *why, size_t n)
{
	const uint8_t *h = u->hdr;
	char type = (char)h[156], full[OCI_NAME_MAX + 1];
	uint64_t size;
	size_t nl, pl = 0;
	int err;

	for (nl = 0; nl < BLOCK && !h[nl]; nl++)
		;
	if (nl == BLOCK) {
		/* Two zero blocks end the archive; what follows is padding. */
		if (++u->zeros == 2)
			u->st = S_END;
		return 0;
	}
	if (u->zeros)
		return bad(u, -EBADMSG, why, n, "a header after an end-of-archive block");
	if (++u->headers > OCI_LAYER_HEADERS_MAX)
		return bad(u, -EBADMSG, why, n, "over %u tar headers", OCI_LAYER_HEADERS_MAX);
	if (!checksum_ok(h) || number(h + 124, 12, &size))
		return bad(u, -EBADMSG, why, n, "a malformed tar header (checksum or size)");
	switch (type) {
	case 'x':
	case 'g':
	case 'L':
	case 'K':
		if (size > OCI_LAYER_EXT_MAX)
			return bad(u, -EBADMSG, why, n,
				   "a '%c' extension of %llu bytes (at most %u are read)", type,
				   (unsigned long long)size, OCI_LAYER_EXT_MAX);
		u->ext_type = type;
		u->ext_len = 0;
		expect(u, S_EXT, size);
		if (!size)
			return ext_done(u, why, n);
		return 0;
	case '0':
	case '\0':
	case '7':
		break;
	case '1':
	case '2':
	case '3':
	case '4':
	case '5':
	case '6':
		/* Links, devices, directories, FIFOs: no data whatever the
		 * size field says (as GNU tar and Go's archive/tar read them). */
		u->skipped += type != '5';
		u->has_name = u->has_size = false;
		return 0;
	default:
		return bad(u, -ENOTSUP, why, n, "a member of type '%c' (sparse, ...): not read",
			   type >= 0x20 && type < 0x7f ? type : '?');
	}
	if (u->has_size)
		size = u->size;
	if (u->has_name) {
		memcpy(full, u->name, strlen(u->name) + 1);
	} else {
		/* POSIX ustar: prefix "/" name; GNU's "ustar  " has no prefix. */
		if (!memcmp(h + 257, "ustar\0", 6)) {
			pl = field_len(h + 345, 155);
			memcpy(full, h + 345, pl);
			if (pl)
				full[pl++] = '/';
		}
		nl = field_len(h, 100);
		memcpy(full + pl, h, nl);
		full[pl + nl] = '\0';
	}
	u->has_name = u->has_size = false;
	u->dst = NULL;
	err = u->fn(u->ctx, clean_name(full), size, &u->dst, why, n);
	if (err) {
		u->failed = true;
		return err;
	}
	expect(u, S_DATA, size);
	return 0;
}

/* ---- the tar stream ---- */

static int tar_feed(struct oci_untar *u, const uint8_t *p, size_t len, char *why, size_t n)
{
	while (len) {
		size_t k;
		int err = 0;

		switch (u->st) {
		case S_HEADER:
			if (!u->hfill)
				u->at = u->pos;
			k = BLOCK - u->hfill < len ? BLOCK - u->hfill : len;
			memcpy(u->hdr + u->hfill, p, k);
			u->hfill += k;
			if (u->hfill == BLOCK) {
				u->hfill = 0;
				err = header(u, why, n);
			}
			break;
		case S_DATA:
		case S_EXT:
			k = u->left < len ? (size_t)u->left : len;
			if (u->st == S_EXT) {
				memcpy(u->ext + u->ext_len, p, k);
				u->ext_len += k;
			} else if (u->dst) {
				memcpy(u->dst, p, k);
				u->dst += k;
			}
			u->left -= k;
			if (!u->left) {
				if (u->st == S_EXT)
					err = ext_done(u, why, n);
				u->st = u->pad ? S_PAD : S_HEADER;
			}
			break;
		case S_PAD:
			k = u->pad < len ? u->pad : len;
			u->pad -= k;
			if (!u->pad)
				u->st = S_HEADER;
			break;
		default:
			k = len; /* after the end: padding, not read */
		}
		u->pos += k;
		p += k;
		len -= k;
		if (err)
			return err;
	}
	return 0;
}

/* ---- the layer's bytes ---- */

static int gz_bad(struct oci_untar *u, const char *what, char *why, size_t n)
{
	snprintf(why, n, "layer %s: gzip byte %llu: %s", u->digest,
		 (unsigned long long)(u->fed - u->z.avail_in), what);
	u->failed = true;
	return -EBADMSG;
}

int oci_untar_feed(struct oci_untar *u, const uint8_t *p, size_t len, char *why, size_t n)
{
	if (u->failed) {
		snprintf(why, n, "layer %s: the parser failed before", u->digest);
		return -EINVAL;
	}
	EVP_DigestUpdate(u->sha, p, len);
	u->fed += len;
	if (u->kind == OCI_LAYER_TAR)
		return tar_feed(u, p, len, why, n);
	u->z.next_in = (uint8_t *)p;
	u->z.avail_in = (uInt)len;
	while (u->z.avail_in) {
		int zr, err;

		if (!u->z_open) {
			/* 16 + 15: the gzip wrapper, a 32 KiB window. */
			if (inflateInit2(&u->z, 16 + MAX_WBITS) != Z_OK)
				return gz_bad(u, "zlib failed to start", why, n);
			u->z_open = true;
			u->z_done = false;
		}
		u->z.next_out = u->out;
		u->z.avail_out = INFLATE_BUF;
		zr = inflate(&u->z, Z_NO_FLUSH);
		if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
			return gz_bad(u, u->z.msg ? u->z.msg : "malformed", why, n);
		err = tar_feed(u, u->out, INFLATE_BUF - u->z.avail_out, why, n);
		if (err)
			return err;
		if (zr == Z_STREAM_END) {
			/* Another gzip member may follow (gzip files concatenate). */
			inflateEnd(&u->z);
			u->z_open = false;
			u->z_done = true;
		} else if (zr == Z_BUF_ERROR && u->z.avail_out) {
			return gz_bad(u, "no progress", why, n);
		}
	}
	return 0;
}

int oci_untar_end(struct oci_untar *u, char *why, size_t n)
{
	unsigned char md[32];
	char hex[65];

	if (u->failed) {
		snprintf(why, n, "layer %s: the parser failed before", u->digest);
		return -EINVAL;
	}
	if (u->kind == OCI_LAYER_GZIP && (u->z_open || !u->z_done)) {
		snprintf(why, n, "layer %s: truncated gzip: its %llu bytes end inside the stream",
			 u->digest, (unsigned long long)u->fed);
		return -EBADMSG;
	}
	/* The end-of-archive blocks may be missing (as GNU tar and Go's
	 * archive/tar allow); an archive cut inside a header or a member
	 * may not. */
	u->at = u->pos;
	if (u->st == S_DATA || u->st == S_EXT || u->st == S_PAD || u->hfill)
		return bad(u, -EBADMSG, why, n, "truncated tar: the layer ends inside %s",
			   u->hfill ? "a header" : "a member");
	EVP_DigestFinal_ex(u->sha, md, NULL);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	if (strcmp(hex, u->digest + 7)) {
		snprintf(why, n,
			 "layer %s: its %llu bytes' sha256 is %s, not its digest: the registry "
			 "served other bytes than the manifest names",
			 u->digest, (unsigned long long)u->fed, hex);
		return -EBADMSG;
	}
	return 0;
}
