// SPDX-License-Identifier: Apache-2.0
/*
 * The manifest decoder (pfs_manifest_parse) against damaged input. The
 * starting points are real: blobs loaded from an installed package's file
 * and directory tree. From there: every footer byte flipped, manifest
 * bytes flipped, truncation, footers re-written with valid CRCs but bad
 * fields, and manifest texts edited one defect at a time and laid out with
 * valid CRCs, so each check of the decoder is reached, not only the CRC.
 * Single-threaded, memory only.
 */
#include "pfs/integrity.h"
#include "pfs/log.h"
#include "source_util.h"
#include "tap.h"
#include "wire/wire_le.h"

static struct loaded one, tree; /* libcrypto.a; /usr/include/linux */
static uint8_t *work; /* a scratch copy of one blob */

static int t_setup(void)
{
	const char *f = real_file();

	pfs_log_set_level(PFS_LOG_ERROR);
	if (!f || access(REAL_TREE, R_OK))
		return tap_skip("no libcrypto.a or %s (hack/install-deps.sh installs them)",
				REAL_TREE);
	CHECK(!load(f, NULL, PFS_PAGE_4K, &one), "load %s: %s", f, one.why);
	CHECK(!load(REAL_TREE, NULL, PFS_PAGE_4K, &tree), "load %s: %s", REAL_TREE, tree.why);
	work = malloc(pfs_blob__size(one.blob) > pfs_blob__size(tree.blob) ?
			      pfs_blob__size(one.blob) :
			      pfs_blob__size(tree.blob));
	CHECK(work, "malloc");
	return TAP_PASS;
}

/* Parse @size bytes of @b; the error (0 on success), the reason in @why. */
static int parse(const uint8_t *b, size_t size, char *why, size_t n)
{
	struct pfs_manifest *m;
	int err = pfs_manifest_parse(b, size, &m, why, n);

	pfs_manifest_free(m);
	return err;
}

static int t_intact(void)
{
	char why[256];

	CHECK(one.m->nfiles == 1 && tree.m->nfiles > 100, "%zu, %zu files", one.m->nfiles,
	      tree.m->nfiles);
	CHECK(pfs_manifest_find(tree.m, "types.h") && !pfs_manifest_find(tree.m, "nope.h") &&
		      pfs_manifest_find(tree.m, tree.m->files[0].name) == &tree.m->files[0],
	      "find");
	memset(work, 0, 1 << 20);
	CHECK(parse(work, 1 << 20, why, sizeof(why)) == -ENOENT && strstr(why, "no manifest"),
	      "zeros: %s", why);
	CHECK(parse(work, 63, why, sizeof(why)) == -ENOENT, "63 bytes: %s", why);
	pfs_blob_fill_seed(work, 0, 1 << 20, 7);
	CHECK(parse(work, 1 << 20, why, sizeof(why)) == -ENOENT, "seeded: %s", why);
	return TAP_PASS;
}

/* A copy of @L's blob in work; its size. */
static size_t copy(const struct loaded *L)
{
	memcpy(work, pfs_blob__data(L->blob), pfs_blob__size(L->blob));
	return pfs_blob__size(L->blob);
}

static int t_footer_flips(void)
{
	size_t size = copy(&one);
	char why[256];

	for (size_t i = 0; i < PFS_MANIFEST_FOOTER; i++) {
		for (int bit = 0; bit < 8; bit++) {
			int err;

			work[size - PFS_MANIFEST_FOOTER + i] ^= (uint8_t)(1 << bit);
			err = parse(work, size, why, sizeof(why));
			work[size - PFS_MANIFEST_FOOTER + i] ^= (uint8_t)(1 << bit);
			CHECK(err == (i < 8 ? -ENOENT : -EBADMSG), "footer byte %zu bit %d: %d %s",
			      i, bit, err, why);
		}
	}
	return TAP_PASS;
}

static int t_manifest_flips(void)
{
	size_t size = copy(&tree);
	uint64_t off = tree.m->offset;
	char why[256];

	for (uint64_t i = 0; i < tree.m->length; i += 7) {
		int err;

		work[off + i] ^= 0x20;
		err = parse(work, size, why, sizeof(why));
		work[off + i] ^= 0x20;
		CHECK(err == -EBADMSG && strstr(why, "manifest CRC32C"), "byte %llu: %d %s",
		      (unsigned long long)i, err, why);
	}
	CHECK(!parse(work, size, why, sizeof(why)), "restored: %s", why);
	return TAP_PASS;
}

static int t_truncated(void)
{
	size_t size = copy(&one);
	char why[256];

	for (size_t cut = 1; cut <= 4096; cut = cut < 128 ? cut + 1 : cut * 2)
		CHECK(parse(work, size - cut, why, sizeof(why)) == -ENOENT, "cut %zu: %s", cut,
		      why);
	CHECK(parse(work, one.m->offset + one.m->length, why, sizeof(why)) == -ENOENT,
	      "cut at the manifest's end: %s", why);
	return TAP_PASS;
}

/* Footer of work (@size) with fields set and both CRCs right. */
static int refooter(size_t size, uint32_t version, uint32_t flags, uint64_t off, uint64_t len,
		    int reserved, char *why, size_t n)
{
	uint8_t *f = work + size - PFS_MANIFEST_FOOTER;
	int err;

	pfs_manifest_footer(f, off, len,
			    pfs_crc32c(0, work + (off < size ? off : 0),
				       off < size ? (len < size - off ? len : size - off) : 0));
	put32(f + 8, version);
	put32(f + 12, flags);
	f[40] = (uint8_t)reserved;
	put32(f + 60, pfs_crc32c(0, f, 60));
	err = parse(work, size, why, n);
	tap_diag("footer v%u flags %u at %llu+%llu: %d %s", version, flags, (unsigned long long)off,
		 (unsigned long long)len, err, err ? why : "");
	return err;
}

static int t_footer_fields(void)
{
	size_t size = copy(&one);
	uint64_t off = one.m->offset, len = one.m->length;
	char why[256];

	CHECK(!refooter(size, 1, 0, off, len, 0, why, sizeof(why)), "intact");
	CHECK(refooter(size, 2, 0, off, len, 0, why, sizeof(why)) == -EPROTONOSUPPORT, "v2");
	CHECK(refooter(size, 1, 1, off, len, 0, why, sizeof(why)) == -EBADMSG, "flags");
	CHECK(refooter(size, 1, 0, off, len, 1, why, sizeof(why)) == -EBADMSG, "reserved");
	CHECK(refooter(size, 1, 0, off + 1, len, 0, why, sizeof(why)) == -EBADMSG, "unaligned");
	CHECK(refooter(size, 1, 0, off, 0, 0, why, sizeof(why)) == -EBADMSG, "empty");
	CHECK(refooter(size, 1, 0, off, len - 1, 0, why, sizeof(why)) == -EBADMSG, "short");
	CHECK(refooter(size, 1, 0, size - 4096, 8192, 0, why, sizeof(why)) == -EBADMSG, "past");
	CHECK(refooter(size, 1, 0, UINT64_MAX - 4095, 8192, 0, why, sizeof(why)) == -EBADMSG,
	      "wraps");
	return TAP_PASS;
}

/* @L's manifest text with @from (first match) replaced by @to, laid out
 * with valid CRCs in work; the decoder's error and reason. */
static int edited(const struct loaded *L, const char *from, const char *to, char *why, size_t n)
{
	const char *at = strstr(L->m->json, from);
	size_t size = copy(L), len;
	char *t;
	int err;

	if (!at) {
		snprintf(why, n, "test bug: '%s' not in the manifest", from);
		return 1;
	}
	len = L->m->length - strlen(from) + strlen(to);
	t = (char *)work + L->m->offset;
	memset(t, 0, size - PFS_MANIFEST_FOOTER - L->m->offset);
	memcpy(t, L->m->json, (size_t)(at - L->m->json));
	memcpy(t + (at - L->m->json), to, strlen(to));
	strcpy(t + (at - L->m->json) + strlen(to), at + strlen(from));
	pfs_manifest_footer(work + size - PFS_MANIFEST_FOOTER, L->m->offset, len,
			    pfs_crc32c(0, t, len));
	err = parse(work, size, why, n);
	return err;
}

static int t_edited_texts(void)
{
	const struct pfs_manifest_file *f0 = &tree.m->files[0], *f1 = &tree.m->files[1];
	char a[256], b[256], c[256], why[300];
	const struct {
		const struct loaded *L;
		const char *from, *to, *want;
	} cases[] = {
		{ &one, "\"libcrypto.a\"", "\"../libcrypto.a\"", "empty, absolute or has" },
		{ &one, "\"libcrypto.a\"", "\"/etc/passwd\"", "empty, absolute" },
		{ &one, "\"libcrypto.a\"", "\"\"", "empty, absolute" },
		{ &tree, a, "\"name\":\"a//b\"", "empty, absolute" },
		{ &tree, a, "\"name\":\"./a\"", "empty, absolute" },
		{ &tree, a, "\"name\":\"a/\"", "empty, absolute" },
		{ &one, "\"libcrypto.a\"", "\"lib\\u0000.a\"", "bad escape" },
		{ &one, "\"libcrypto.a\"", "\"lib\\ud800.a\"", "bad escape" },
		{ &one, "\"libcrypto.a\"", "\"lib\\x.a\"", "bad escape" },
		{ &one, "\"libcrypto.a\"", "\"lib\xc3(.a\"", "UTF-8" },
		{ &one, "\"libcrypto.a\"", "\"lib\x01.a\"", "control byte" },
		{ &one, "\"libcrypto.a\"", "\"libcrypto.a", "expected" },
		{ &one, "\"offset\":0", "\"offset\":1", "not a multiple of 4096" },
		{ &one, "\"offset\":0", "\"offset\":00", "not an unsigned integer" },
		{ &one, "\"offset\":0", "\"offset\":-0", "not an unsigned integer" },
		{ &one, "\"offset\":0", "\"offset\":0.0", "not an unsigned integer" },
		{ &one, "\"offset\":0", "\"offset\":18446744073709551616", "does not fit 64 bits" },
		{ &one, "\"offset\":0", "\"offset\":99999997952", "runs past the manifest" },
		{ &one, "\"offset\":0", "\"offst\":0", "expected the key \"offset\"" },
		{ &one, "{\"version\":1,", "{\"version\":2,", "differs from the footer's" },
		{ &one, "\"kind\":\"file\"", "\"kind\":\"blob\"", "neither" },
		{ &one, "\"kind\":\"file\"", "\"kind\":\"dir\",\"x\":1", "expected the key" },
		{ &one, "\"bytes\":", "\"bytes\":1", "not the sum of the lengths" },
		{ &one, "\"sha256\":\"f", "\"sha256\":\"F", "not lowercase hex" },
		{ &one, "\"sha256\":\"f", "\"sha256\":\"", "not 64 hex digits" },
		{ &one, "\"sha256\":\"f", "\"sha256\":\"0", "its sha256" },
		{ &one, "\"libcrypto.a\"", "\"lib/crypto.a\"", "a base name" },
		{ &one, "}]}", "}]}x", "bytes after the object" },
		{ &one, "}]}", "}]", "expected '}'" },
		{ &tree, b, c, "overlaps" },
		{ &tree, a, "\"name\":\"zzz\"", "is not after" },
		{ &tree, "{\"version\"", " {\n\t\"version\" ", NULL },
	};

	snprintf(a, sizeof(a), "\"name\":\"%s\"", f0->name);
	snprintf(b, sizeof(b), "\"name\":\"%s\",\"offset\":%llu", f1->name,
		 (unsigned long long)f1->offset);
	snprintf(c, sizeof(c), "\"name\":\"%s\",\"offset\":%llu", f1->name,
		 (unsigned long long)f0->offset);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int err = edited(cases[i].L, cases[i].from, cases[i].to, why, sizeof(why));

		if (!cases[i].want) {
			CHECK(!err, "case %zu (accepted): %s", i, why);
			continue;
		}
		CHECK(err == -EBADMSG && strstr(why, cases[i].want),
		      "case %zu (%s -> %s): %d \"%s\", want \"%s\"", i, cases[i].from, cases[i].to,
		      err, why, cases[i].want);
	}
	return TAP_PASS;
}

static int t_cleanup(void)
{
	unload(&one);
	unload(&tree);
	free(work);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "setup: blobs loaded from an installed file and tree", t_setup, .setup = true },
	{ "intact manifests decode; zero, short and seeded blobs have none", t_intact },
	{ "every bit of the footer flipped: refused", t_footer_flips },
	{ "manifest bytes flipped: refused by the CRC", t_manifest_flips },
	{ "truncated blobs: no footer", t_truncated },
	{ "footers with valid CRCs and bad fields: refused", t_footer_fields },
	{ "manifest texts with one defect and valid CRCs: refused, each named", t_edited_texts },
	{ "cleanup", t_cleanup, .setup = true },
};

TAP_MAIN(tests)
