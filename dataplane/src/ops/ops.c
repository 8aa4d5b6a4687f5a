// SPDX-License-Identifier: Apache-2.0
/*
 * Op kernels: run-time dispatch, the portable (word-at-a-time) variant, the
 * FNV lane scheduler every variant shares, the FNV fold and the CRC32C shift
 * operator.
 *
 * Threads: every function here is reentrant; the dispatch decision is made
 * once (pthread_once) and read-only afterwards. Memory: kernels touch only
 * the bytes they are given.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>

#include "pfs/integrity.h"
#include "pfs/ops.h"
#include "ops_impl.h"

/* ---------------------------------------------------------------- names */

static const char *const op_names[PFS_OP__COUNT] = {
	[PFS_OP_XOR] = "xor", [PFS_OP_ADD] = "add",	  [PFS_OP_COUNTEQ] = "counteq",
	[PFS_OP_FNV] = "fnv", [PFS_OP_CRC32C] = "crc32c",
};

static const char *const isa_names[PFS_ISA__COUNT] = {
	[PFS_ISA_PORTABLE] = "portable",
	[PFS_ISA_SSE2] = "sse2",
	[PFS_ISA_AVX2] = "avx2",
	[PFS_ISA_NEON] = "neon",
};

const char *pfs_op_str(enum pfs_op op)
{
	return (unsigned)op < PFS_OP__COUNT ? op_names[op] : "?";
}

int pfs_op_parse(const char *s, enum pfs_op *op)
{
	for (int i = 0; i < PFS_OP__COUNT; i++) {
		if (!strcasecmp(s, op_names[i])) {
			*op = i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *pfs_ops_isa_str(enum pfs_ops_isa isa)
{
	return (unsigned)isa < PFS_ISA__COUNT ? isa_names[isa] : "?";
}

int pfs_ops_isa_parse(const char *s, enum pfs_ops_isa *isa)
{
	if (!strcasecmp(s, "auto")) {
		*isa = pfs_ops__best()->isa;
		return 0;
	}
	for (int i = 0; i < PFS_ISA__COUNT; i++) {
		if (!strcasecmp(s, isa_names[i])) {
			*isa = i;
			return 0;
		}
	}
	return -EINVAL;
}

int pfs_op_is_inplace(enum pfs_op op)
{
	return op == PFS_OP_XOR || op == PFS_OP_ADD;
}

/* ------------------------------------------------------ portable kernels */

#define ONES 0x0101010101010101ULL
#define LOW7 0x7f7f7f7f7f7f7f7fULL
#define HIGH1 0x8080808080808080ULL

static inline uint64_t load64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline void store64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

static void xor_portable(uint8_t *p, size_t len, uint8_t imm)
{
	uint64_t k = ONES * imm;
	size_t i = 0;

	for (; i + 8 <= len; i += 8)
		store64(p + i, load64(p + i) ^ k);
	for (; i < len; i++)
		p[i] ^= imm;
}

/* Bytewise add without carries crossing bytes: add the low 7 bits of every
 * byte, then fix each top bit with an xor (SWAR). */
static void add_portable(uint8_t *p, size_t len, uint8_t imm)
{
	uint64_t k = ONES * imm;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t x = load64(p + i);

		store64(p + i, ((x & LOW7) + (k & LOW7)) ^ ((x ^ k) & HIGH1));
	}
	for (; i < len; i++)
		p[i] += imm;
}

/* Exact zero-byte mask: the top bit of each byte of the result is set iff
 * that byte of t is zero (no false positives, unlike the short trick). */
static inline uint64_t zero_bytes(uint64_t t)
{
	return ~(((t & LOW7) + LOW7) | t | LOW7);
}

static uint64_t counteq_portable(const uint8_t *p, size_t len, uint8_t val)
{
	uint64_t k = ONES * val, n = 0;
	size_t i = 0;

	for (; i + 8 <= len; i += 8)
		n += __builtin_popcountll(zero_bytes(load64(p + i) ^ k));
	for (; i < len; i++)
		n += p[i] == val;
	return n;
}

/* -------------------------------------------------- FNV lane scheduling */

#define FNV_STEP(h, b) ((h) = ((h) ^ (b)) * PFS_FNV1A64_PRIME)

/* Scalar interleave of k <= 4 lanes over m bytes each. Each lane is a
 * serial xor-multiply chain (4 cycles a byte on current x86); four chains
 * keep the multiplier busy every cycle. */
static void fnv_step_scalar(uint64_t *h, const uint8_t **p, unsigned k, size_t m)
{
	if (k == 4) {
		uint64_t h0 = h[0], h1 = h[1], h2 = h[2], h3 = h[3];
		const uint8_t *p0 = p[0], *p1 = p[1], *p2 = p[2], *p3 = p[3];

		for (size_t i = 0; i < m; i++) {
			FNV_STEP(h0, p0[i]);
			FNV_STEP(h1, p1[i]);
			FNV_STEP(h2, p2[i]);
			FNV_STEP(h3, p3[i]);
		}
		h[0] = h0, h[1] = h1, h[2] = h2, h[3] = h3;
	} else if (k >= 2) {
		for (unsigned j = 0; j + 2 <= k; j += 2) {
			uint64_t h0 = h[j], h1 = h[j + 1];
			const uint8_t *p0 = p[j], *p1 = p[j + 1];

			for (size_t i = 0; i < m; i++) {
				FNV_STEP(h0, p0[i]);
				FNV_STEP(h1, p1[i]);
			}
			h[j] = h0, h[j + 1] = h1;
		}
		if (k & 1)
			h[k - 1] = pfs_fnv1a64(h[k - 1], p[k - 1], m);
	} else {
		h[0] = pfs_fnv1a64(h[0], p[0], m);
	}
	for (unsigned j = 0; j < k; j++)
		p[j] += m;
}

void pfs_ops_fnv_step4(uint64_t *h, const uint8_t **p, size_t m)
{
	fnv_step_scalar(h, p, 4, m);
}

/*
 * Hash n descriptors with up to @wide lanes in flight. Each lane holds one
 * descriptor; all lanes advance by the shortest remaining length, a finished
 * lane takes the next descriptor, so unequal lengths never serialise the
 * batch. When fewer than @wide descriptors are left the tail runs on 4, 2
 * then 1 scalar lanes. @step_wide hashes @wide lanes at once (NULL: none).
 */
void pfs_ops_fnv_sched(const uint8_t *const *p, const size_t *len, size_t n, uint64_t *out,
		       unsigned wide, pfs_fnv_step_fn step_wide)
{
	uint64_t h[PFS_OPS_FNV_LANES];
	const uint8_t *ptr[PFS_OPS_FNV_LANES];
	size_t left[PFS_OPS_FNV_LANES], idx[PFS_OPS_FNV_LANES];
	unsigned act = 0;
	size_t next = 0;

	if (!step_wide || wide > PFS_OPS_FNV_LANES)
		wide = 4, step_wide = pfs_ops_fnv_step4;

	for (;;) {
		/* Refill lanes; empty descriptors finish immediately. */
		while (act < wide && next < n) {
			if (!len[next]) {
				out[next++] = PFS_FNV1A64_INIT;
				continue;
			}
			h[act] = PFS_FNV1A64_INIT;
			ptr[act] = p[next];
			left[act] = len[next];
			idx[act++] = next++;
		}
		if (!act)
			return;

		unsigned k = act >= wide ? wide : act >= 4 ? 4 : act;
		size_t m = left[0];

		for (unsigned j = 1; j < k; j++)
			if (left[j] < m)
				m = left[j];
		if (k == wide)
			step_wide(h, ptr, m);
		else
			fnv_step_scalar(h, ptr, k, m);

		/* Retire finished lanes, compacting the lane arrays. */
		unsigned w = 0;

		for (unsigned j = 0; j < act; j++) {
			if (j < k)
				left[j] -= m;
			if (!left[j]) {
				out[idx[j]] = h[j];
				continue;
			}
			h[w] = h[j], ptr[w] = ptr[j];
			left[w] = left[j], idx[w++] = idx[j];
		}
		act = w;
	}
}

static void fnv_multi_portable(const uint8_t *const *p, const size_t *len, size_t n, uint64_t *out)
{
	pfs_ops_fnv_sched(p, len, n, out, 4, pfs_ops_fnv_step4);
}

uint64_t pfs_ops_fnv_fold(uint64_t acc, const uint64_t *h, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t v = h[i];

		for (int b = 0; b < 8; b++, v >>= 8)
			acc = (acc ^ (v & 0xff)) * PFS_FNV1A64_PRIME;
	}
	return acc;
}

/* ----------------------------------------------------------- dispatch */

static const struct pfs_ops_kernels kernels_portable = {
	.isa = PFS_ISA_PORTABLE,
	.name = "portable",
	.xor_imm = xor_portable,
	.add_imm = add_portable,
	.counteq = counteq_portable,
	.fnv_multi = fnv_multi_portable,
};

const struct pfs_ops_kernels *pfs_ops__kernels(enum pfs_ops_isa isa)
{
	switch (isa) {
	case PFS_ISA_PORTABLE:
		return &kernels_portable;
	case PFS_ISA_SSE2:
		return pfs_ops__sse2();
	case PFS_ISA_AVX2:
		return pfs_ops__avx2();
	case PFS_ISA_NEON:
		return pfs_ops__neon();
	default:
		return NULL;
	}
}

static const struct pfs_ops_kernels *best;
static pthread_once_t best_once = PTHREAD_ONCE_INIT;

static void best_init(void)
{
	static const enum pfs_ops_isa order[] = {
		PFS_ISA_AVX2,
		PFS_ISA_NEON,
		PFS_ISA_SSE2,
		PFS_ISA_PORTABLE,
	};

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		best = pfs_ops__kernels(order[i]);
		if (best)
			return;
	}
}

const struct pfs_ops_kernels *pfs_ops__best(void)
{
	pthread_once(&best_once, best_init);
	return best;
}

/* ------------------------------------------------- CRC32C shift operator */

#define CRC32C_POLY 0x82f63b78u /* reflected Castagnoli */

/* a * b mod P in the reflected bit order CRCs use (x^0 is the top bit). */
static uint32_t gf2_mulmod(uint32_t a, uint32_t b)
{
	uint32_t m = 1u << 31, p = 0;

	if (!a)
		return 0;
	for (;;) {
		if (a & m) {
			p ^= b;
			if (!(a & (m - 1)))
				break;
		}
		m >>= 1;
		b = b & 1 ? (b >> 1) ^ CRC32C_POLY : b >> 1;
	}
	return p;
}

/* x^(8*len) mod P by squaring: x^(2^k) for k = 3.. are the squares of the
 * previous power, starting from x^8. */
static uint32_t x_pow_8n(uint64_t len)
{
	uint32_t acc = 1u << 31; /* x^0 */
	uint32_t sq = 1u << 23; /* x^8 */

	while (len) {
		if (len & 1)
			acc = gf2_mulmod(acc, sq);
		sq = gf2_mulmod(sq, sq);
		len >>= 1;
	}
	return acc;
}

void pfs_crc32c_shift__init(struct pfs_crc32c_shift *sh, uint64_t len)
{
	sh->len = len;
	sh->op = x_pow_8n(len);
}

uint32_t pfs_crc32c_shift__combine(const struct pfs_crc32c_shift *sh, uint32_t crc_a,
				   uint32_t crc_b)
{
	return gf2_mulmod(sh->op, crc_a) ^ crc_b;
}

uint32_t pfs_ops_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
	return gf2_mulmod(x_pow_8n(len_b), crc_a) ^ crc_b;
}
