/* SPDX-License-Identifier: Apache-2.0 */
/* Integrity checksums over blob bytes: CRC32C (Castagnoli, the iSCSI/ext4
 * polynomial) and FNV-1a 64. The CRC32C implementation is chosen once at run
 * time (SSE4.2 crc32 instruction, ARMv8 CRC, or a portable table). */
#ifndef PFS_INTEGRITY_H
#define PFS_INTEGRITY_H

#include <stddef.h>
#include <stdint.h>

#define PFS_FNV1A64_INIT 0xcbf29ce484222325ULL
#define PFS_FNV1A64_PRIME 0x00000100000001b3ULL

/* pfs_crc32c - extend @crc (0 for a fresh checksum) with @len bytes of @buf.
 * Standard semantics: pfs_crc32c(0, "123456789", 9) == 0xe3069283, and
 * pfs_crc32c(pfs_crc32c(0, a, n), b, m) equals the CRC of a||b. */
uint32_t pfs_crc32c(uint32_t crc, const void *buf, size_t len);

/* pfs_crc32c_select - the implementation pfs_crc32c uses: "auto" (the best
 * this CPU has; the default) or "portable" (the table, for comparisons and
 * tests). Call it before other threads compute CRCs. 0, or -EINVAL for
 * another name (the choice is unchanged). The pfs CLI calls it with
 * "portable" when its environment has PFS_CRC32C_IMPL=portable. */
int pfs_crc32c_select(const char *name);

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

/* The checksum a transfer runs end to end (`--integrity`). The value is the
 * wire code carried in the HELLO flags, so it must not be renumbered. */
enum pfs_integrity {
	PFS_INTEGRITY_CRC32C = 0, /* default */
	PFS_INTEGRITY_FNV1A64 = 1, /* the seeds' checksum: serial, ~10x slower */
	PFS_INTEGRITY_NONE = 2, /* no checksum: only counts are compared */
};

/* "crc32c", "fnv1a64", "none" (any case): 0 or -EINVAL. */
int pfs_integrity_parse(const char *s, enum pfs_integrity *k);
const char *pfs_integrity_str(enum pfs_integrity k);

/* A running digest of kind @k: start from pfs_digest_init(), extend with
 * pfs_digest(). CRC32C values fit the low 32 bits; NONE stays 0. */
static inline uint64_t pfs_digest_init(enum pfs_integrity k)
{
	return k == PFS_INTEGRITY_FNV1A64 ? PFS_FNV1A64_INIT : 0;
}

static inline uint64_t pfs_digest(enum pfs_integrity k, uint64_t acc, const void *buf, size_t len)
{
	if (k == PFS_INTEGRITY_CRC32C)
		return pfs_crc32c((uint32_t)acc, buf, len);
	if (k == PFS_INTEGRITY_FNV1A64)
		return pfs_fnv1a64(acc, buf, len);
	return 0;
}

#endif /* PFS_INTEGRITY_H */
