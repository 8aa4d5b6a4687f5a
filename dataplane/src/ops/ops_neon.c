// SPDX-License-Identifier: Apache-2.0
/*
 * NEON op kernels (AArch64, where Advanced SIMD is architectural, so no
 * run-time check is needed). Empty in the x86-64 build; on x86 hosts
 * `make test` cross-builds it into build/arm64/ and runs test_ops and
 * test_pcore under qemu-aarch64 (tests/arm64.sh). FNV uses the shared
 * scalar 4-lane interleave (NEON has no 64-bit multiply either).
 */
#if defined(__aarch64__)
#include <arm_neon.h>
#endif
#include <stdint.h>

#include "ops_impl.h"

#if defined(__aarch64__)

#define INPLACE_KERNEL(name, vop, sop)                            \
	static void name(uint8_t *p, size_t len, uint8_t imm)     \
	{                                                         \
		const uint8x16_t k = vdupq_n_u8(imm);             \
		size_t i = 0;                                     \
                                                                  \
		for (; i + 64 <= len; i += 64) {                  \
			uint8x16x4_t v = vld1q_u8_x4(p + i);      \
			v.val[0] = vop(v.val[0], k);              \
			v.val[1] = vop(v.val[1], k);              \
			v.val[2] = vop(v.val[2], k);              \
			v.val[3] = vop(v.val[3], k);              \
			vst1q_u8_x4(p + i, v);                    \
		}                                                 \
		for (; i + 16 <= len; i += 16)                    \
			vst1q_u8(p + i, vop(vld1q_u8(p + i), k)); \
		for (; i < len; i++)                              \
			p[i] = sop(p[i], imm);                    \
	}

#define SXOR(a, b) ((uint8_t)((a) ^ (b)))
#define SADD(a, b) ((uint8_t)((a) + (b)))

INPLACE_KERNEL(xor_neon, veorq_u8, SXOR)
INPLACE_KERNEL(add_neon, vaddq_u8, SADD)

/* vceqq gives 0xff per match; subtracting adds one to a byte counter,
 * drained by a widening add every 255 iterations. */
static uint64_t counteq_neon(const uint8_t *p, size_t len, uint8_t val)
{
	const uint8x16_t k = vdupq_n_u8(val);
	uint64_t n = 0;
	size_t i = 0;

	while (i + 16 <= len) {
		uint8x16_t c = vdupq_n_u8(0);
		size_t blocks = (len - i) / 16;

		if (blocks > 255)
			blocks = 255;
		for (size_t b = 0; b < blocks; b++, i += 16)
			c = vsubq_u8(c, vceqq_u8(vld1q_u8(p + i), k));
		n += vaddlvq_u8(c);
	}
	for (; i < len; i++)
		n += p[i] == val;
	return n;
}

static void fnv_multi_neon(const uint8_t *const *p, const size_t *len, size_t n, uint64_t *out)
{
	pfs_ops_fnv_sched(p, len, n, out, 4, pfs_ops_fnv_step4);
}

static const struct pfs_ops_kernels kernels_neon = {
	.isa = PFS_ISA_NEON,
	.name = "neon",
	.xor_imm = xor_neon,
	.add_imm = add_neon,
	.counteq = counteq_neon,
	.fnv_multi = fnv_multi_neon,
};

const struct pfs_ops_kernels *pfs_ops__neon(void)
{
	return &kernels_neon;
}

#else

const struct pfs_ops_kernels *pfs_ops__neon(void)
{
	return NULL;
}

#endif
