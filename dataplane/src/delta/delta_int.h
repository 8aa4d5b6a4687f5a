/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to src/delta: the content-defined chunker the index and the
 * encoder share, and the byte-plane transforms the encoder and the applier
 * share. Not a public API. */
#ifndef PFS_DELTA_INT_H
#define PFS_DELTA_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pfs/delta.h"

/* Chunk sizes: a boundary is never before MIN, rarely after AVG, always at
 * MAX. 8 KiB on average: fine enough that an unchanged tensor or file in a
 * tarball is found whole, coarse enough that the index of a 1 GiB base is
 * ~130 k entries. */
#define CDC_MIN (2u << 10)
#define CDC_AVG (8u << 10)
#define CDC_MAX (64u << 10)

/* The length of the chunk that starts at @p (@n bytes available): a gear
 * rolling hash with normalised chunking (a stricter mask before AVG, a
 * looser one after), so boundaries depend on content, not position, and
 * resynchronise after an insertion. */
size_t pfs_cdc_cut(const uint8_t *p, size_t n);

/* The base offset of a chunk of the base with this CRC32C and length, or
 * UINT64_MAX; the caller verifies the bytes. */
uint64_t pfs_delta_index__find(const struct pfs_delta_index *x, uint32_t crc, uint32_t len);

/* Byte-plane split of @n bytes into @out for elements of @e bytes: all
 * bytes 0 of the elements, then all bytes 1, ...; the n % e tail last, as
 * is. With @x (not NULL) the input is in[i] ^ x[i]. unsplit is the inverse,
 * XORing @x into the output when given. */
void pfs_plane_split(const uint8_t *in, const uint8_t *x, size_t n, unsigned int e, uint8_t *out);
void pfs_plane_unsplit(const uint8_t *in, const uint8_t *x, size_t n, unsigned int e, uint8_t *out);

#endif /* PFS_DELTA_INT_H */
