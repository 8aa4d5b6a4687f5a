// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer harness for the blob manifest decoder (pfs_manifest_parse),
 * which reads bytes any process holding a writable fd of the blob may have
 * written. Input: one selector byte, then
 *   even: the blob itself (footer at its end), as a reader gets it;
 *   odd:  one byte P (P & 63 pages of 4 KiB in front), then the manifest
 *         JSON: the harness lays the blob out around it with a valid
 *         footer (both CRCs right), so the fuzzer reaches the JSON parser
 *         instead of stopping at the CRC.
 * A manifest that decodes must also survive the writer: its canonical
 * JSON is never longer than the input's and decodes to the same manifest,
 * or the run aborts. The same bytes go through pfs_manifest_parse_tail
 * (a files-layout tail); a blob laid out by the harness gives the same
 * manifest from its tail alone, and the layout of a decoded manifest goes
 * through pfs_blob_layout_check. Built with ASan/UBSan.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pfs/blob_manifest.h"
#include "pfs/integrity.h"

#define PAGE 4096

/* A blob of @pages zero pages, @json at their end, zeros, the footer. */
static uint8_t *lay_out(size_t pages, const void *json, size_t len, size_t *size)
{
	uint8_t *b;

	*size = pages * PAGE + len + PFS_MANIFEST_FOOTER;
	b = calloc(1, *size);
	if (!b)
		abort();
	memcpy(b + pages * PAGE, json, len);
	pfs_manifest_footer(b + *size - PFS_MANIFEST_FOOTER, pages * PAGE, len,
			    pfs_crc32c(0, json, len));
	return b;
}

static void same(const struct pfs_manifest *a, const struct pfs_manifest *b)
{
	if (a->version != b->version || a->kind != b->kind || a->bytes != b->bytes ||
	    a->nfiles != b->nfiles || memcmp(a->sha256, b->sha256, 32))
		abort();
	for (size_t i = 0; i < a->nfiles; i++) {
		const struct pfs_manifest_file *x = &a->files[i], *y = &b->files[i];

		if (strcmp(x->name, y->name) || x->offset != y->offset || x->length != y->length ||
		    memcmp(x->sha256, y->sha256, 32) || pfs_manifest_find(a, x->name) != x)
			abort();
	}
}

static void round_trip(struct pfs_manifest *m)
{
	struct pfs_manifest *m2;
	ssize_t len = pfs_manifest_json(m, NULL, 0);
	size_t size;
	char *json;
	uint8_t *b;

	if (len <= 0 || (uint64_t)len > m->length)
		abort();
	json = malloc((size_t)len);
	if (!json || pfs_manifest_json(m, json, (size_t)len) != len)
		abort();
	b = lay_out(m->offset / PAGE, json, (size_t)len, &size);
	if (pfs_manifest_parse(b, size, &m2, NULL, 0))
		abort();
	same(m, m2);
	pfs_manifest_free(m2);
	free(b);
	free(json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pfs_manifest *m;
	char why[256];
	uint8_t *blob = NULL;

	if (size < 2)
		return 0;
	if (data[0] & 1)
		blob = lay_out(data[1] & 63, data + 2, size - 2, &size);
	if (!pfs_manifest_parse(blob ? blob : data + 1, blob ? size : size - 1, &m, why,
				sizeof(why))) {
		struct pfs_blob_layout *l;
		struct pfs_manifest *t;

		round_trip(m);
		if (!pfs_manifest_layout(m, (size + PAGE - 1) / PAGE * PAGE, &l)) {
			pfs_blob_layout_check(l, why, sizeof(why));
			free(l);
		}
		/* The tail alone (from the manifest on) decodes the same. */
		if (blob) {
			if (pfs_manifest_parse_tail(blob + m->offset, size - m->offset, &t, why,
						    sizeof(why)))
				abort();
			same(m, t);
			pfs_manifest_free(t);
		}
		pfs_manifest_free(m);
	} else if (pfs_manifest_parse_tail(data + 1, size - 1, &m, why, sizeof(why)) == 0) {
		pfs_manifest_free(m);
	}
	free(blob);
	return 0;
}
