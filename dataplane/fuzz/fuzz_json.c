// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer harness for what a registry or a pull secret sends
 * (src/remote/json.c, oci_manifest.c, oci_auth.c): the same bytes go
 * through the strict JSON tokenizer (every token then read back through
 * every accessor), the manifest/index parser, the index picker, the
 * token-answer parser, the docker-config lookup, and, as a C string, the
 * WWW-Authenticate and reference parsers. Invariants checked (abort on
 * failure): tokens lie inside the text and nest, a decoded string is
 * never longer than its source, a parsed manifest's digests are valid.
 * Built with ASan/UBSan.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "remote/json.h"
#include "remote/oci.h"

static void walk(const struct json_doc *d)
{
	char s[512];
	uint64_t v;

	for (size_t i = 0; i < d->n; i++) {
		const struct json_tok *t = &d->t[i];
		long l;

		if (t->start > t->end || t->end > d->len || t->next <= i || t->next > d->n)
			abort();
		l = json_str(d, (int)i, s, sizeof(s));
		if (l >= 0 && (size_t)l > t->end - t->start)
			abort();
		json_u64(d, (int)i, &v);
		free(json_strdup(d, (int)i));
		json_get(d, (int)i, "layers");
		for (int k = json_first(d, (int)i); k >= 0; k = json_next(d, (int)i, k))
			if ((size_t)k >= t->next)
				abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	char why[512], out[2048], *z;
	struct oci_manifest m;
	struct oci_challenge ch;
	struct oci_ref ref;
	struct json_doc d;

	if (!json_parse(&d, text, size, 1u << 16, why, sizeof(why))) {
		walk(&d);
		json_free(&d);
	}
	if (!oci_manifest_parse(text, size, "", &m, why, sizeof(why))) {
		for (size_t i = 0; i < m.n; i++)
			if (!oci_digest_valid(m.d[i].digest))
				abort();
		if (m.index)
			oci_index_pick(&m, why, sizeof(why));
		oci_manifest_free(&m);
	}
	oci_token_parse(text, size, out, sizeof(out));
	oci_auth_lookup(text, size, "127.0.0.1:5000", out, sizeof(out), why, sizeof(why));
	z = malloc(size + 1);
	if (!z)
		return 0;
	memcpy(z, data, size);
	z[size] = '\0';
	oci_challenge_parse(z, &ch);
	oci_ref_parse(z, &ref, why, sizeof(why));
	free(z);
	return 0;
}
