/* SPDX-License-Identifier: Apache-2.0 */
/* Integrity checksums over blob bytes: CRC32C (Castagnoli, the iSCSI/ext4
 * polynomial) and FNV-1a 64. The CRC32C implementation is chosen once at run
 * time (SSE4.2 crc32 instruction, ARMv8 CRC, or a portable table). */
#ifndef PFS_INTEGRITY_H
#define PFS_INTEGRITY_H

#include <stddef.h>
#include <stdint.h>

#define PFS_FNV1A64_INIT  0xcbf29ce484222325ULL
#define PFS_FNV1A64_PRIME 0x00000100000001b3ULL

/* pfs_crc32c - extend @crc (0 for a fresh checksum) with @len bytes of @buf.
 * Standard semantics: pfs_crc32c(0, "123456789", 9) == 0xe3069283, and
 * pfs_crc32c(pfs_crc32c(0, a, n), b, m) equals the CRC of a||b.
 * The environment variable PFS_CRC32C_IMPL=portable forces the portable
 * path (read once, on the first call). */
uint32_t pfs_crc32c(uint32_t crc, const void *buf, size_t len);

/* pfs_crc32c_combine - CRC of A||B given crc(A), crc(B) and len(B).
 * O(log len_b): multiplies crc(A) by x^(8*len_b) mod P in GF(2). */
uint32_t pfs_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

/* pfs_crc32c_impl - name of the implementation in use ("sse4.2-3way",
 * "armv8-crc-3way" or "portable-slice8"). */
const char *pfs_crc32c_impl(void);

/* pfs_crc32c_portable - the table implementation (slicing-by-8), always
 * available; the reference the accelerated paths are tested against. */
uint32_t pfs_crc32c_portable(uint32_t crc, const void *buf, size_t len);

/* pfs_fnv1a64 - extend hash @h (PFS_FNV1A64_INIT for a fresh one). */
uint64_t pfs_fnv1a64(uint64_t h, const void *buf, size_t len);

#endif /* PFS_INTEGRITY_H */
