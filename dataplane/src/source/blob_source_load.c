// SPDX-License-Identifier: Apache-2.0
/*
 * Loading a scanned source into a blob (pfs_source__load): the size check,
 * the reading pipeline (blob_source_read.c), the second listing, then the
 * manifest and, last, the footer, so a blob whose load failed anywhere has
 * no footer and so no manifest. The written manifest is decoded again
 * (pfs_manifest_parse) before the load reports success. Also the sha256
 * re-check of a decoded manifest (pfs_manifest_verify). Single-threaded
 * (the pipeline starts and joins its own readers); sha256 is OpenSSL's EVP,
 * initialised without reading openssl.cnf (a static pfs in a scratch image
 * must not depend on a config file or a provider module).
 */
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/blob_source_int.h"
#include "pfs/integrity.h"

static int sha256(const void *p, size_t len, uint8_t out[32])
{
	return EVP_Digest(p, len, out, NULL, EVP_sha256(), NULL) == 1 ? 0 : -EIO;
}

static void crypto_init(void)
{
	OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, NULL);
}

/* The manifest at mani_off, then the footer; decoded again as a check. */
static int write_manifest(struct pfs_source *s, uint8_t *blob, uint64_t size,
			  struct pfs_source_stats *st, char *why, size_t n)
{
	struct pfs_manifest m = { .version = PFS_MANIFEST_VERSION,
				  .kind = s->kind,
				  .bytes = s->bytes,
				  .nfiles = s->l.n };
	struct pfs_manifest *back = NULL;
	char *json = (char *)blob + s->mani_off;
	ssize_t len;
	int err = 0;

	m.files = calloc(s->l.n ? s->l.n : 1, sizeof(*m.files));
	if (!m.files) {
		snprintf(why, n, "no memory for the manifest");
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->l.n; i++)
		m.files[i] = (struct pfs_manifest_file){ .name = s->l.f[i].name,
							 .offset = s->l.f[i].offset,
							 .length = (uint64_t)s->l.f[i].st.st_size };
	for (size_t i = 0; i < s->l.n; i++)
		memcpy(m.files[i].sha256, s->l.f[i].sha256, 32);
	if (s->kind == PFS_MANIFEST_FILE)
		memcpy(m.sha256, m.files[0].sha256, 32);
	len = pfs_manifest_json(&m, json, s->mani_len);
	/* A directory's digest is the one of its "files" text as written. */
	if (len == (ssize_t)s->mani_len && s->kind == PFS_MANIFEST_DIR &&
	    !sha256(json + m.files_off, m.files_len, m.sha256))
		len = pfs_manifest_json(&m, json, s->mani_len);
	if (len != (ssize_t)s->mani_len) {
		snprintf(why, n, "the manifest came out %zd bytes, %llu were laid out", len,
			 (unsigned long long)s->mani_len);
		err = -EIO;
		goto out_free;
	}
	pfs_manifest_footer(blob + size - PFS_MANIFEST_FOOTER, s->mani_off, s->mani_len,
			    pfs_crc32c(0, json, s->mani_len));
	err = pfs_manifest_parse(blob, size, &back, why, n);
	if (!err && (back->nfiles != s->l.n || memcmp(back->sha256, m.sha256, 32))) {
		snprintf(why, n, "the manifest written does not decode to what was read");
		err = -EIO;
	}
	if (err)
		memset(blob + size - PFS_MANIFEST_FOOTER, 0, PFS_MANIFEST_FOOTER);
	pfs_sha256_hex(m.sha256, st->sha256);
out_free:
	pfs_manifest_free(back);
	free(m.files);
	return err;
}

int pfs_source__load(struct pfs_source *s, void *blob, uint64_t size, struct pfs_source_stats *st,
		     char *why, size_t n)
{
	double t0 = src_now();
	char need[32], have[32];
	int err;

	memset(st, 0, sizeof(*st));
	st->kind = s->kind;
	st->files = s->l.n;
	st->bytes = s->bytes;
	st->manifest_offset = s->mani_off;
	st->manifest_length = s->mani_len;
	st->scan_s = s->scan_s;
	st->chunk = s->o.chunk;
	if (s->loaded) {
		snprintf(why, n, "this source was loaded before");
		return -EALREADY;
	}
	s->loaded = true;
	if (!blob || size < s->needed) {
		snprintf(why, n, "source needs %s (%llu bytes) with its manifest, the blob is %s",
			 pfs_size_str(s->needed, need, sizeof(need)), (unsigned long long)s->needed,
			 pfs_size_str(size, have, sizeof(have)));
		return -ENOSPC;
	}
	crypto_init();
	err = src_read(s, blob, st, why, n);
	/* Files are listed again; a remote source's GETs were pinned to their
	 * ETags, and its store's checksums are compared instead. */
	if (!err)
		err = s->rem ? src_remote_check(s, why, n) : src_recheck(s, why, n);
	src_remote_stats(s, st);
	if (!err)
		err = write_manifest(s, blob, size, st, why, n);
	/* Only now is the tail (manifest, zeros, footer) final. */
	if (!err && s->o.progress)
		s->o.progress(s->o.progress_ctx, size);
	st->load_s = src_now() - t0;
	return err;
}

/* Every file inside the blob, then each digest in @sha against the
 * manifest's, then a "dir" manifest's own digest (of its "files" text). */
int pfs_manifest_check_digests(const struct pfs_manifest *m, uint64_t size,
			       const uint8_t (*sha)[32], char *why, size_t n)
{
	uint8_t own[32];

	crypto_init();
	for (size_t i = 0; i < m->nfiles; i++) {
		const struct pfs_manifest_file *f = &m->files[i];

		if (f->offset > size || f->length > size - f->offset) {
			snprintf(why, n, "'%s' lies outside the %llu-byte blob", f->name,
				 (unsigned long long)size);
			return -EBADMSG;
		}
		if (sha && memcmp(sha[i], f->sha256, 32)) {
			snprintf(why, n, "'%s': its bytes do not have the manifest's sha256",
				 f->name);
			return -EBADMSG;
		}
	}
	if (m->kind == PFS_MANIFEST_DIR &&
	    (sha256(m->json + m->files_off, m->files_len, own) || memcmp(own, m->sha256, 32))) {
		snprintf(why, n, "the manifest's sha256 is not the one of its \"files\" text");
		return -EBADMSG;
	}
	return 0;
}

int pfs_manifest_verify(const struct pfs_manifest *m, const void *blob, uint64_t size, char *why,
			size_t n)
{
	const uint8_t *b = blob;
	uint8_t(*sha)[32] = calloc(m->nfiles ? m->nfiles : 1, 32);
	int err = 0;

	if (!sha) {
		snprintf(why, n, "no memory");
		return -ENOMEM;
	}
	crypto_init();
	for (size_t i = 0; i < m->nfiles && !err; i++) {
		const struct pfs_manifest_file *f = &m->files[i];

		/* Outside the blob: hash nothing, pfs_manifest_check_digests says where. */
		if (f->offset > size || f->length > size - f->offset)
			break;
		if (sha256(b + f->offset, f->length, sha[i])) {
			snprintf(why, n, "sha256 failed");
			err = -EIO;
		}
	}
	if (!err)
		err = pfs_manifest_check_digests(m, size, (const uint8_t(*)[32])sha, why, n);
	free(sha);
	return err;
}
