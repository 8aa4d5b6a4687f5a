/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to the op kernels: the per-ISA tables and the FNV lane scheduler
 * they share. Not installed; only src/ops/ops*.c include it. */
#ifndef PFS_OPS_IMPL_H
#define PFS_OPS_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "pfs/ops.h"

/* Hash m bytes on every lane of h/p (the lane count is the scheduler's
 * "wide"), advancing each p[j] by m. */
typedef void (*pfs_fnv_step_fn)(uint64_t *h, const uint8_t **p, size_t m);

void pfs_ops_fnv_step4(uint64_t *h, const uint8_t **p, size_t m);
void pfs_ops_fnv_sched(const uint8_t *const *p, const size_t *len, size_t n, uint64_t *out,
		       unsigned wide, pfs_fnv_step_fn step_wide);

/* NULL when the build or the CPU lacks the ISA. */
const struct pfs_ops_kernels *pfs_ops__sse2(void);
const struct pfs_ops_kernels *pfs_ops__avx2(void);
const struct pfs_ops_kernels *pfs_ops__neon(void);

#endif /* PFS_OPS_IMPL_H */
