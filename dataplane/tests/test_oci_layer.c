// SPDX-License-Identifier: Apache-2.0
/*
 * The image layer parser on bytes (src/remote/oci_layer.c): archives
 * made here (tests/tar_util.h), plain and gzip (zlib), fed whole and one
 * byte at a time. Read: a ustar prefix, a pax path and size, a GNU long
 * name, a base-256 size, a symlink and a directory (skipped, counted),
 * leading "./" dropped, the members' bytes where the callback said.
 * Refused, each naming the digest and the byte: a bad checksum, a
 * malformed pax record, a pax header over its bound, a sparse member, a
 * header after the end, an archive cut inside a member or a header, a
 * gzip cut short or malformed, bytes that are not the digest. The HTTP
 * side is test_blob_source_oci's.
 */
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "remote/oci.h"
#include "tap.h"
#include "tar_util.h"

static unsigned char arc[1 << 17], gz[1 << 17];
static char names[8][OCI_NAME_MAX + 1];
static uint8_t bytes[8][64];
static uint64_t sizes[8];
static int nmem;

static int member(void *ctx, const char *name, uint64_t size, uint8_t **dst, char *why, size_t n)
{
	(void)ctx;
	if (nmem == 8) {
		snprintf(why, n, "too many members");
		return -E2BIG;
	}
	snprintf(names[nmem], sizeof(names[0]), "%s", name);
	sizes[nmem] = size;
	*dst = size <= sizeof(bytes[0]) ? bytes[nmem] : NULL;
	nmem++;
	return 0;
}

static void digest_of(const void *b, size_t len, char *out)
{
	unsigned char md[32];

	EVP_Digest(b, len, md, NULL, EVP_sha256(), NULL);
	strcpy(out, "sha256:");
	for (int i = 0; i < 32; i++)
		snprintf(out + 7 + 2 * i, 3, "%02x", md[i]);
}

/* @len bytes of @a as a layer of @kind whose digest they are (or
 * @digest), fed in pieces of @piece; 0 or the first error, why in @why. */
static int run(enum oci_layer_kind kind, const unsigned char *a, size_t len, size_t piece,
	       const char *digest, char *why, size_t n, uint64_t *skipped)
{
	char d[OCI_DIGEST_LEN + 1];
	struct oci_untar *u;
	int err = 0;

	digest_of(a, len, d);
	u = oci_untar_new(kind, digest ? digest : d, member, NULL);
	if (!u)
		return -errno;
	nmem = 0;
	memset(bytes, 0, sizeof(bytes));
	for (size_t o = 0; !err && o < len; o += piece)
		err = oci_untar_feed(u, a + o, len - o < piece ? len - o : piece, why, n);
	if (!err)
		err = oci_untar_end(u, why, n);
	if (skipped)
		*skipped = oci_untar_skipped(u);
	oci_untar_free(u);
	return err;
}

static size_t gzip_of(const unsigned char *a, size_t len)
{
	z_stream s = { 0 };
	size_t out;

	if (deflateInit2(&s, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return 0;
	s.next_in = (unsigned char *)a;
	s.avail_in = (uInt)len;
	s.next_out = gz;
	s.avail_out = sizeof(gz);
	out = deflate(&s, Z_FINISH) == Z_STREAM_END ? sizeof(gz) - s.avail_out : 0;
	deflateEnd(&s);
	return out;
}

/* The archive every read test uses. */
static size_t good(void)
{
	static const char pax[] = "27 path=models/config.json\n10 size=3\n";
	char lng[301];
	size_t o = 0;

	memset(lng, 'n', 300);
	lng[300] = '\0';
	o = tar_put(arc, o, "model.safetensors", '0', "weights", 7, "models");
	o = tar_put(arc, o, "PaxHeaders/x", 'x', pax, strlen(pax), NULL);
	o = tar_put(arc, o, "short", '0', "abc", 3, NULL);
	o = tar_put(arc, o, "././@LongLink", 'L', lng, 301, NULL);
	o = tar_put(arc, o, "cut-name", '0', "{}", 2, NULL);
	o = tar_put(arc, o, "./models/", '5', "", 0, NULL);
	o = tar_put(arc, o, "models/link", '2', "", 0, NULL);
	o = tar_put(arc, o, "./big.bin", '0', "0123456789", 10, NULL);
	/* big.bin's size in base-256, its checksum again */
	memset(arc + o - 1024 + 124, 0, 12);
	arc[o - 1024 + 124] = 0x80;
	arc[o - 1024 + 135] = 10;
	{
		unsigned char *h = arc + o - 1024;
		unsigned sum = 0;

		memset(h + 148, ' ', 8);
		for (int i = 0; i < 512; i++)
			sum += h[i];
		snprintf((char *)h + 148, 8, "%06o", sum);
	}
	return tar_end(arc, o);
}

static bool read_right(uint64_t skipped)
{
	char lng[301];

	memset(lng, 'n', 300);
	lng[300] = '\0';
	return nmem == 4 && !strcmp(names[0], "models/model.safetensors") && sizes[0] == 7 &&
	       !memcmp(bytes[0], "weights", 7) && !strcmp(names[1], "models/config.json") &&
	       sizes[1] == 3 && !memcmp(bytes[1], "abc", 3) && !strcmp(names[2], lng) &&
	       sizes[2] == 2 && !strcmp(names[3], "big.bin") && sizes[3] == 10 &&
	       !memcmp(bytes[3], "0123456789", 10) && skipped == 1;
}

static int t_read(void)
{
	size_t len = good(), zl = gzip_of(arc, len);
	const size_t pieces[] = { 1, 509, len };
	uint64_t skipped;
	char why[512] = "";

	CHECK(zl, "gzip");
	for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++) {
		CHECK(!run(OCI_LAYER_TAR, arc, len, pieces[i], NULL, why, sizeof(why), &skipped) &&
			      read_right(skipped),
		      "tar in pieces of %zu: %s (%d members)", pieces[i], why, nmem);
		CHECK(!run(OCI_LAYER_GZIP, gz, zl, pieces[i], NULL, why, sizeof(why), &skipped) &&
			      read_right(skipped),
		      "gzip in pieces of %zu: %s (%d members)", pieces[i], why, nmem);
	}
	/* Two gzip members one after the other read as one stream; no
	 * end-of-archive blocks is allowed. */
	zl = gzip_of(arc, len - 1024);
	memcpy(gz + zl, gz, zl);
	CHECK(!run(OCI_LAYER_GZIP, gz, zl, zl, NULL, why, sizeof(why), &skipped) &&
		      read_right(skipped),
	      "one gzip member, no end blocks: %s", why);
	CHECK(run(OCI_LAYER_GZIP, gz, 2 * zl, 7, NULL, why, sizeof(why), &skipped) == 0 &&
		      nmem == 8,
	      "two gzip members: %s (%d members)", why, nmem);
	CHECK(oci_layer_kind(OCI_MT_DOCKER_LAYER) == OCI_LAYER_GZIP &&
		      oci_layer_kind(OCI_MT_LAYER_TAR) == OCI_LAYER_TAR &&
		      oci_layer_kind("application/vnd.oci.image.layer.v1.tar+zstd") ==
			      OCI_LAYER_NONE,
	      "media types");
	return TAP_PASS;
}

/* @len bytes of arc refused (fed in 1 and in 4096-byte pieces) with @err
 * and @msg in why. */
static int refused(enum oci_layer_kind kind, const unsigned char *a, size_t len, int err,
		   const char *msg)
{
	char why[512];

	for (size_t piece = 1; piece <= 4096; piece *= 4096) {
		int e = run(kind, a, len, piece, NULL, why, sizeof(why), NULL);

		CHECK(e == err && strstr(why, msg) && strstr(why, "layer sha256:"),
		      "pieces of %zu: %d (%s), wanted %d '%s'", piece, e, why, err, msg);
	}
	tap_diag("%s", why);
	return TAP_PASS;
}

static int t_refused(void)
{
	size_t len = good(), o;
	char why[512];

	arc[100] ^= 1; /* the mode: the checksum no longer adds up */
	CHECK(refused(OCI_LAYER_TAR, arc, len, -EBADMSG,
		      "tar byte 0: a malformed tar header (checksum or size)") == TAP_PASS,
	      "checksum");
	o = tar_end(arc, tar_put(arc, 0, "PaxHeaders/x", 'x', "5 x\n", 4, NULL));
	CHECK(refused(OCI_LAYER_TAR, arc, o, -EBADMSG, "a malformed pax record at its byte 0") ==
		      TAP_PASS,
	      "pax record");
	o = tar_put(arc, 0, "PaxHeaders/x", 'x', gz, OCI_LAYER_EXT_MAX + 1, NULL);
	CHECK(refused(OCI_LAYER_TAR, arc, o, -EBADMSG,
		      "tar byte 0: a 'x' extension of 65537 bytes") == TAP_PASS,
	      "pax bound");
	o = tar_end(arc, tar_put(arc, 0, "sparse", 'S', "", 0, NULL));
	CHECK(refused(OCI_LAYER_TAR, arc, o, -ENOTSUP, "a member of type 'S'") == TAP_PASS,
	      "sparse");
	o = tar_put(arc, 512, "late", '0', "x", 1, NULL);
	memset(arc, 0, 512);
	CHECK(refused(OCI_LAYER_TAR, arc, o, -EBADMSG,
		      "tar byte 512: a header after an end-of-archive block") == TAP_PASS,
	      "after the end");
	o = tar_put(arc, 0, "m", '0', "0123456789", 10, NULL);
	CHECK(refused(OCI_LAYER_TAR, arc, 515, -EBADMSG,
		      "tar byte 515: truncated tar: the layer ends inside a member") == TAP_PASS,
	      "cut in a member");
	CHECK(refused(OCI_LAYER_TAR, arc, o + 100, -EBADMSG, "ends inside a header") == TAP_PASS,
	      "cut in a header");
	len = good();
	o = gzip_of(arc, len);
	memcpy(arc, gz, o);
	CHECK(refused(OCI_LAYER_GZIP, arc, o - 9, -EBADMSG, "truncated gzip: its") == TAP_PASS,
	      "gzip cut");
	arc[0] ^= 0xff; /* not gzip's magic */
	CHECK(refused(OCI_LAYER_GZIP, arc, o, -EBADMSG, ": gzip byte ") == TAP_PASS,
	      "gzip malformed");
	len = good();
	CHECK(run(OCI_LAYER_TAR, arc, len, 100,
		  "sha256:0000000000000000000000000000000000000000000000000000000000000000", why,
		  sizeof(why), NULL) == -EBADMSG &&
		      strstr(why, "not its digest"),
	      "digest: %s", why);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "read: ustar prefix, pax path and size, GNU long name, base-256; tar and gzip", t_read },
	{ "refused: checksum, pax, bounds, sparse, cut tar, cut or bad gzip, digest", t_refused },
};

TAP_MAIN(tests)
