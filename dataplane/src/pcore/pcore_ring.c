// SPDX-License-Identifier: Apache-2.0
/*
 * SPSC descriptor ring set-up. The hot-path operations (reserve, submit,
 * peek, release) are static inline in pfs/pcore.h so that producer and
 * consumer loops compile to a few loads and one release store per batch.
 * Memory: the slot array is cache-line aligned and owned by the ring; it is
 * allocated by the thread that creates the ring (the control thread, after
 * any NUMA policy is in place).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pfs/pcore.h"

int pfs_pcore_ring__init(struct pfs_pcore_ring *r, uint32_t slots)
{
	void *mem;

	if (!slots || (slots & (slots - 1)))
		return -EINVAL;
	if (posix_memalign(&mem, PFS_CACHELINE, (size_t)slots * sizeof(*r->slots)))
		return -ENOMEM;
	memset(r, 0, sizeof(*r));
	memset(mem, 0, (size_t)slots * sizeof(*r->slots));
	r->slots = mem;
	r->size = slots;
	r->mask = slots - 1;
	return 0;
}

void pfs_pcore_ring__fini(struct pfs_pcore_ring *r)
{
	free(r->slots);
	r->slots = NULL;
}
