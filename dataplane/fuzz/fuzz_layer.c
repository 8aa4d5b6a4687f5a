// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer harness for an OCI image layer as a registry serves it
 * (src/remote/oci_layer.c): the first byte picks tar or tar+gzip and the
 * size of the pieces the rest is fed in (as the network cuts them); every
 * regular member of at most 64 KiB is copied into a buffer of exactly its
 * size, so ASan sees any write past it. Invariants checked (abort on
 * failure): a member's name is a C string within the name bound with no
 * leading '/' or "./", and the bytes fed are counted. Built with
 * ASan/UBSan.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "remote/oci.h"

#define E3 "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static uint8_t *last;

static int member(void *ctx, const char *name, uint64_t size, uint8_t **dst, char *why, size_t n)
{
	(void)ctx;
	(void)why;
	(void)n;
	if (strlen(name) > OCI_NAME_MAX || name[0] == '/' || !strncmp(name, "./", 2))
		abort();
	free(last);
	last = size <= (64u << 10) ? malloc(size ? size : 1) : NULL;
	*dst = last;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct oci_untar *u;
	char why[512];
	size_t piece, o = 1;
	int err = 0;

	if (!size)
		return 0;
	u = oci_untar_new(data[0] & 1 ? OCI_LAYER_GZIP : OCI_LAYER_TAR, E3, member, NULL);
	if (!u)
		return 0;
	piece = 1 + (size_t)(data[0] >> 1) * 37;
	while (!err && o < size) {
		size_t k = size - o < piece ? size - o : piece;

		err = oci_untar_feed(u, data + o, k, why, sizeof(why));
		o += k;
	}
	if (!err) {
		if (oci_untar_fed(u) != size - 1)
			abort();
		oci_untar_end(u, why, sizeof(why));
	}
	oci_untar_free(u);
	free(last);
	last = NULL;
	return 0;
}
