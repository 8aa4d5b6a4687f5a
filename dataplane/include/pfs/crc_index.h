/* SPDX-License-Identifier: Apache-2.0 */
/* CRC index of a blob: the CRC32C of every aligned 4 KiB granule, taken once
 * at setup, so the CRC of any byte range can be computed later from the
 * table instead of the bytes (only the partial granules at the two ends
 * are hashed). The offset-only and arithmetic senders use it: they send
 * descriptors and need the checksum of the referenced bytes, which the
 * receiver computes from its own copy of the blob.
 *
 * The index describes the blob as it was when built: bytes changed later
 * make the sender's checksum stale, which the receiver reports as MISMATCH.
 */
#ifndef PFS_CRC_INDEX_H
#define PFS_CRC_INDEX_H

#include <stdint.h>

#define PFS_CRC_INDEX_GRANULE 4096u

struct pfs_crc_index;

/* pfs_crc_index__build - hash @size bytes at @data into a new index
 * (size / 4096 * 4 bytes of table). NULL with errno ENOMEM. */
struct pfs_crc_index *pfs_crc_index__build(const uint8_t *data, uint64_t size);
void pfs_crc_index__free(struct pfs_crc_index *x);

/* pfs_crc_index__extend - pfs_crc32c(@crc, data + @off, @len), from the
 * table for whole granules and from the bytes for the partial ones.
 * off + len must not exceed the indexed size. */
uint32_t pfs_crc_index__extend(const struct pfs_crc_index *x, uint32_t crc, uint64_t off,
			       uint64_t len);

#endif /* PFS_CRC_INDEX_H */
