// SPDX-License-Identifier: Apache-2.0
/* Writes a seed corpus for fuzz_manifest into a directory: whole blobs laid
 * out by the writer (a file, a directory with nested, escaped and non-ASCII
 * names, an empty directory) and manifest texts for the harness to lay out
 * (whitespace, \u escapes, a surrogate pair, the largest numbers). The
 * digests are sha256 of the empty string and of "abc"; the decoder does
 * not hash, so they only need the right shape. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfs/blob_manifest.h"
#include "pfs/integrity.h"

#define E3 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define BA "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

static int idx;

static void emit(const char *dir, const void *buf, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/seed-%03d", dir, idx++);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len) {
		perror(path);
		exit(1);
	}
	fclose(f);
}

/* Selector 0 and a whole blob: @n files of @len bytes each. */
static void blob(const char *dir, enum pfs_manifest_kind kind, const char *const *names, size_t n,
		 uint64_t len)
{
	struct pfs_manifest m = { .version = 1, .kind = kind, .nfiles = n };
	struct pfs_manifest_file f[8];
	uint64_t at = 0;
	uint8_t *b;
	ssize_t jl;
	size_t size;

	for (size_t i = 0; i < n; i++) {
		f[i] = (struct pfs_manifest_file){ .name = names[i], .offset = at, .length = len };
		memset(f[i].sha256, (int)i, 32);
		at += (len + 4095) / 4096 * 4096;
		m.bytes += len;
	}
	m.files = f;
	if (kind == PFS_MANIFEST_FILE)
		memcpy(m.sha256, f[0].sha256, 32);
	jl = pfs_manifest_json(&m, NULL, 0);
	size = 1 + at + (size_t)jl + PFS_MANIFEST_FOOTER;
	b = calloc(1, size);
	if (!b || pfs_manifest_json(&m, (char *)b + 1 + at, (size_t)jl) != jl)
		exit(1);
	pfs_manifest_footer(b + size - PFS_MANIFEST_FOOTER, at, (uint64_t)jl,
			    pfs_crc32c(0, b + 1 + at, (size_t)jl));
	emit(dir, b, size);
	free(b);
}

/* Selector 1, @pages, then the text. */
static void text(const char *dir, int pages, const char *json)
{
	size_t len = strlen(json);
	char *b = malloc(len + 2);

	if (!b)
		exit(1);
	b[0] = 1;
	b[1] = (char)pages;
	memcpy(b + 2, json, len);
	emit(dir, b, len + 2);
	free(b);
}

int main(int argc, char **argv)
{
	static const char *const one[] = { "model.safetensors" };
	static const char *const tree[] = { "a/b.bin", "a/c \"q\"\\.txt", "b/\xc3\xa9t\xc3\xa9",
					    "z\tab" };

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	blob(argv[1], PFS_MANIFEST_FILE, one, 1, 100);
	blob(argv[1], PFS_MANIFEST_DIR, tree, 4, 5000);
	blob(argv[1], PFS_MANIFEST_DIR, NULL, 0, 0);
	text(argv[1], 0,
	     "{\"version\":1,\"kind\":\"file\",\"sha256\":\"" E3 "\",\"bytes\":0,\"files\":"
	     "[{\"name\":\"empty\",\"offset\":0,\"length\":0,\"sha256\":\"" E3 "\"}]}");
	text(argv[1], 2,
	     " { \"version\" : 1 , \"kind\" : \"dir\" , \"sha256\" : \"" BA "\" ,\n\"bytes\" : 3 ,"
	     " \"files\" : [ { \"name\" : \"d/\\u00e9\\ud83d\\ude00\\n\" , \"offset\" : 4096 ,"
	     " \"length\" : 3 , \"sha256\" : \"" BA "\" } ] }\r\n");
	text(argv[1], 1,
	     "{\"version\":1,\"kind\":\"dir\",\"sha256\":\"" E3 "\",\"bytes\":0,\"files\":[]}");
	text(argv[1], 63,
	     "{\"version\":1,\"kind\":\"dir\",\"sha256\":\"" E3 "\",\"bytes\":18446744073709551615,"
	     "\"files\":[{\"name\":\"x\\/y\",\"offset\":0,\"length\":18446744073709551615,"
	     "\"sha256\":\"" E3 "\"}]}");
	return 0;
}
