// SPDX-License-Identifier: Apache-2.0
/*
 * Byte-plane split and its inverse (delta_int.h), for the encoder and the
 * applier: the bytes of a tensor's elements regrouped by position, so the
 * sign and exponent bytes of near-identical values (and of their XOR with
 * the base, mostly zero) sit together where zstd finds them.
 */
#include "delta_int.h"

void pfs_plane_split(const uint8_t *in, const uint8_t *x, size_t n, unsigned int e, uint8_t *out)
{
	size_t m = n / e, tail = n - m * e;

	for (unsigned int p = 0; p < e; p++) {
		uint8_t *o = out + p * m;

		if (x)
			for (size_t i = 0; i < m; i++)
				o[i] = in[i * e + p] ^ x[i * e + p];
		else
			for (size_t i = 0; i < m; i++)
				o[i] = in[i * e + p];
	}
	for (size_t i = 0; i < tail; i++)
		out[m * e + i] = in[m * e + i] ^ (x ? x[m * e + i] : 0);
}

void pfs_plane_unsplit(const uint8_t *in, const uint8_t *x, size_t n, unsigned int e, uint8_t *out)
{
	size_t m = n / e, tail = n - m * e;

	for (unsigned int p = 0; p < e; p++) {
		const uint8_t *s = in + p * m;

		if (x)
			for (size_t i = 0; i < m; i++)
				out[i * e + p] = s[i] ^ x[i * e + p];
		else
			for (size_t i = 0; i < m; i++)
				out[i * e + p] = s[i];
	}
	for (size_t i = 0; i < tail; i++)
		out[m * e + i] = in[m * e + i] ^ (x ? x[m * e + i] : 0);
}
