/* SPDX-License-Identifier: Apache-2.0 */
/* Byte-op kernels the pcores execute over blob ranges: xor/add with an
 * immediate (in place), count of bytes equal to a value, multi-stream
 * FNV-1a 64 and CRC32C. Each ISA variant (AVX2, SSE2, NEON, portable) is a
 * table of kernels with identical results; the best one the CPU supports is
 * chosen once at run time. Kernels never allocate and never fail. */
#ifndef PFS_OPS_H
#define PFS_OPS_H

#include <stddef.h>
#include <stdint.h>

enum pfs_op {
	PFS_OP_XOR = 0, /* p[i] ^= imm, in place */
	PFS_OP_ADD, /* p[i] += imm (mod 256), in place */
	PFS_OP_COUNTEQ, /* count of p[i] == imm */
	PFS_OP_FNV, /* FNV-1a 64 per descriptor, folded in order */
	PFS_OP_CRC32C, /* CRC32C of the concatenated descriptors */
	PFS_OP__COUNT,
};

enum pfs_ops_isa {
	PFS_ISA_PORTABLE = 0,
	PFS_ISA_SSE2,
	PFS_ISA_AVX2,
	PFS_ISA_NEON,
	PFS_ISA__COUNT,
};

/* Streams the FNV kernels hash side by side; callers batch at least this
 * many descriptors per call to get the interleaving benefit. */
#define PFS_OPS_FNV_LANES 8

struct pfs_ops_kernels {
	enum pfs_ops_isa isa;
	const char *name;
	void (*xor_imm)(uint8_t *p, size_t len, uint8_t imm);
	void (*add_imm)(uint8_t *p, size_t len, uint8_t imm);
	uint64_t (*counteq)(const uint8_t *p, size_t len, uint8_t val);
	/* out[i] = FNV-1a 64 (from PFS_FNV1A64_INIT) of p[i][0..len[i]),
	 * for i < n; independent streams are interleaved. */
	void (*fnv_multi)(const uint8_t *const *p, const size_t *len, size_t n, uint64_t *out);
};

/* pfs_ops__kernels - the kernel table of @isa, or NULL when this build or
 * this CPU cannot run it. */
const struct pfs_ops_kernels *pfs_ops__kernels(enum pfs_ops_isa isa);

/* pfs_ops__best - the fastest table this CPU supports (never NULL). */
const struct pfs_ops_kernels *pfs_ops__best(void);

const char *pfs_op_str(enum pfs_op op);
/* pfs_op_parse - returns 0 or -EINVAL for an unknown name. */
int pfs_op_parse(const char *s, enum pfs_op *op);
const char *pfs_ops_isa_str(enum pfs_ops_isa isa);
/* pfs_ops_isa_parse - "auto" maps to the best ISA; -EINVAL if unknown. */
int pfs_ops_isa_parse(const char *s, enum pfs_ops_isa *isa);
/* pfs_op_is_inplace - the op writes the blob (xor, add). */
int pfs_op_is_inplace(enum pfs_op op);

/* FNV fold: the defined result of the fnv op is FNV-1a 64 (from
 * PFS_FNV1A64_INIT) over the per-descriptor hashes in descriptor order, each
 * taken as 8 little-endian bytes. pfs_ops_fnv_fold extends @acc with @n
 * hashes. */
uint64_t pfs_ops_fnv_fold(uint64_t acc, const uint64_t *h, size_t n);

/* CRC32C shift operator: multiplying a CRC by x^(8*len) mod P moves it past
 * len zero bytes, so combine(a, b, len) = shift(a) ^ b. Precomputing the
 * operator for a fixed length makes each combine ~32 shifts and xors instead
 * of a log(len) matrix walk; the pcore fold combines every frame with it. */
struct pfs_crc32c_shift {
	uint64_t len;
	uint32_t op; /* x^(8*len) mod P, reflected */
};

void pfs_crc32c_shift__init(struct pfs_crc32c_shift *sh, uint64_t len);
/* crc(A||B) from crc(A), crc(B) with len(B) == sh->len. */
uint32_t pfs_crc32c_shift__combine(const struct pfs_crc32c_shift *sh, uint32_t crc_a,
				   uint32_t crc_b);
/* Same, for any length (computes the operator on the fly). */
uint32_t pfs_ops_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

#endif /* PFS_OPS_H */
