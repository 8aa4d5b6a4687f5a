/* SPDX-License-Identifier: Apache-2.0 */
/* pcores: per-core descriptor rings executing byte ops over the blob.
 *
 * A producer cuts a blob range into descriptors (offset, length), groups
 * dpf of them into a frame and publishes each frame to one pcore's
 * single-producer single-consumer ring. Each pcore is a thread pinned to one
 * allowed CPU that executes the op over the bytes its descriptors name and
 * posts one result per frame; results are folded in frame order, so order-
 * dependent results (crc32c, fnv) are the same as a single-threaded run's. */
#ifndef PFS_PCORE_H
#define PFS_PCORE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pfs/ops.h"

#define PFS_PCORE_MAX 256 /* pcores per run */
#define PFS_CACHELINE 64

/* ------------------------------------------------------------------ ring */

/* One descriptor: @len bytes at blob offset @off, part of frame @frame
 * (the low 32 bits of the frame's sequence number). */
struct pfs_pcore_desc {
	uint64_t off;
	uint32_t len;
	uint32_t frame;
};

/*
 * Single-producer single-consumer descriptor ring. The producer owns tail
 * and its cached copy of head; the consumer owns head and its cached copy
 * of tail; each pair sits on its own cache line so neither side's stores
 * invalidate the line the other side polls more than once per batch.
 * Indices are free-running 64-bit counters (never wrap in practice); the
 * slot of index i is slots[i & mask].
 */
struct pfs_pcore_ring {
	_Alignas(PFS_CACHELINE) _Atomic uint64_t tail; /* producer writes */
	uint64_t head_cache; /* producer's view */
	_Alignas(PFS_CACHELINE) _Atomic uint64_t head; /* consumer writes */
	uint64_t tail_cache; /* consumer's view */
	_Alignas(PFS_CACHELINE) struct pfs_pcore_desc *slots;
	uint32_t size;
	uint32_t mask;
};

/* pfs_pcore_ring__init - @slots must be a power of two >= 1.
 * Returns 0, -EINVAL (not a power of two) or -ENOMEM. */
int pfs_pcore_ring__init(struct pfs_pcore_ring *r, uint32_t slots);
void pfs_pcore_ring__fini(struct pfs_pcore_ring *r);

static inline struct pfs_pcore_desc *pfs_pcore_ring__slot(struct pfs_pcore_ring *r, uint64_t idx)
{
	return &r->slots[idx & r->mask];
}

/* Producer: reserve @n free slots starting at *@idx; returns n or 0 (ring
 * too full). The slots may be written until pfs_pcore_ring__submit(). */
static inline uint32_t pfs_pcore_ring__reserve(struct pfs_pcore_ring *r, uint32_t n, uint64_t *idx)
{
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);

	if (tail + n - r->head_cache > r->size) {
		/* Acquire pairs with the consumer's release in __release():
		 * the consumer has finished reading the slots it gave back
		 * before we overwrite them. */
		r->head_cache = atomic_load_explicit(&r->head, memory_order_acquire);
		if (tail + n - r->head_cache > r->size)
			return 0;
	}
	*idx = tail;
	return n;
}

/* Producer: publish @n reserved slots. */
static inline void pfs_pcore_ring__submit(struct pfs_pcore_ring *r, uint32_t n)
{
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);

	/* Release orders the descriptor stores before the new tail: a
	 * consumer that sees the tail sees the whole frame. */
	atomic_store_explicit(&r->tail, tail + n, memory_order_release);
}

/* Consumer: number of published slots (up to @max) starting at *@idx. */
static inline uint32_t pfs_pcore_ring__peek(struct pfs_pcore_ring *r, uint32_t max, uint64_t *idx)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	uint64_t avail = r->tail_cache - head;

	if (!avail) {
		/* Acquire pairs with the producer's release in __submit():
		 * descriptor contents written before the tail are visible. */
		r->tail_cache = atomic_load_explicit(&r->tail, memory_order_acquire);
		avail = r->tail_cache - head;
	}
	*idx = head;
	return avail < max ? (uint32_t)avail : max;
}

/* Consumer: give @n consumed slots back to the producer. */
static inline void pfs_pcore_ring__release(struct pfs_pcore_ring *r, uint32_t n)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);

	/* Release orders our reads of the slots (and the work done on what
	 * they describe) before the producer may reuse them. */
	atomic_store_explicit(&r->head, head + n, memory_order_release);
}

/* Slots in use, as seen from the producer side (exact for the producer). */
static inline uint32_t pfs_pcore_ring__used(struct pfs_pcore_ring *r)
{
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);

	r->head_cache = atomic_load_explicit(&r->head, memory_order_acquire);
	return (uint32_t)(tail - r->head_cache);
}

/* ---------------------------------------------------------------- runner */

/* Options for pfs_pcore__run() and pfs_pcore__baseline(); zero-initialise
 * and set sz = sizeof(opts). */
struct pfs_pcore_opts {
	size_t sz;
	enum pfs_op op;
	uint8_t imm;
	uint64_t range_off; /* bytes into the region */
	uint64_t range_len; /* > 0 */
	uint32_t desc_len; /* descriptor length, multiple of align */
	uint32_t align; /* power of two; interior descriptor
					 * boundaries are multiples of it */
	uint32_t dpf; /* descriptors per frame, >= 1 */
	uint32_t ring_slots; /* power of two, >= dpf */
	unsigned pcores; /* 1..PFS_PCORE_MAX */
	const int *cpus; /* pcores CPU ids to pin to; NULL: none */
	double duration_s; /* > 0: run this long ... */
	uint64_t passes; /* ... else this many passes (>= 1) */
	const struct pfs_ops_kernels *kernels; /* NULL: pfs_ops__best() */
	const atomic_int *stop; /* set non-zero to stop early */
};

struct pfs_pcore_core_stats {
	int cpu; /* pinned CPU or -1 */
	uint64_t bytes;
	uint64_t frames;
	uint64_t empty_waits; /* times the ring was found empty */
	double wait_s; /* wall time spent waiting on it */
	double cpu_s; /* thread CPU time */
};

struct pfs_pcore_result {
	uint64_t bytes; /* bytes the op was applied to */
	uint64_t descs;
	uint64_t frames;
	double seconds; /* workers released .. last frame folded */
	uint64_t passes_done; /* complete passes */
	bool complete; /* all requested work done */
	bool stopped; /* stopped early by opts->stop */
	/* xor/add: bytes modified; counteq: count; fnv: fold of hashes;
	 * crc32c: CRC of the range (low 32 bits). Per complete pass; valid
	 * when passes_done >= 1 (always for xor/add). */
	uint64_t value;
	bool value_valid;
	bool passes_agree; /* every complete pass gave value */
	uint64_t window_full_waits; /* producer held back: fold behind, or
					 * an in-place frame waiting for the
					 * previous pass over its bytes */
	unsigned ncores;
	struct pfs_pcore_core_stats core[PFS_PCORE_MAX];
};

/* pfs_pcore__run - run the op over [range_off, range_off + range_len) of
 * @base (@size bytes) on opts->pcores pinned threads fed by rings.
 * Returns 0 (also when stopped early: see res->stopped), -EINVAL bad
 * options, -ENOMEM, or -errno from thread creation or pinning. */
int pfs_pcore__run(const struct pfs_pcore_opts *opts, uint8_t *base, uint64_t size,
		   struct pfs_pcore_result *res);

/* pfs_pcore__baseline - the same op, range, thread count, CPUs and kernels
 * without rings: each thread takes one contiguous share of the descriptors
 * (static partition) and runs the kernels over it directly. Same results
 * and errors as pfs_pcore__run(). */
int pfs_pcore__baseline(const struct pfs_pcore_opts *opts, uint8_t *base, uint64_t size,
			struct pfs_pcore_result *res);

/* pfs_pcore__check_opts - validate options against a region of @size bytes.
 * Returns 0 or -EINVAL with a reason in @why. */
int pfs_pcore__check_opts(const struct pfs_pcore_opts *opts, uint64_t size, const char **why);

/* Descriptor schedule of a pass: boundaries at range start, at every
 * multiple of desc_len counted from align_down(range_off, align), and at
 * range end. */
uint64_t pfs_pcore__ndescs(const struct pfs_pcore_opts *opts);
void pfs_pcore__desc(const struct pfs_pcore_opts *opts, uint64_t i, uint64_t *off, uint32_t *len);

/* ------------------------------------------------------ system placement */

/* pfs_pcore_allowed_cpus - CPUs this process may run on (sched_getaffinity),
 * ascending, at most @max. Returns the count or -errno. */
int pfs_pcore_allowed_cpus(int *cpus, int max);

/* pfs_pcore_numa_nodes - online NUMA nodes (1 on a non-NUMA machine). */
int pfs_pcore_numa_nodes(void);

/* pfs_pcore_node_filter - keep only the CPUs of @cpus that belong to NUMA
 * @node; returns the new count or -errno (-EINVAL: node not online). */
int pfs_pcore_node_filter(int node, int *cpus, int n);

/* pfs_pcore_cpus_node - the NUMA node holding every CPU of @cpus (0 on a
 * machine without NUMA sysfs), or -1 when they span nodes or none is given. */
int pfs_pcore_cpus_node(const int *cpus, int n);

/* pfs_pcore_numa_bind - bind this thread's future allocations and the pages
 * of [addr, addr + len) to @node (set_mempolicy + mbind, pages moved).
 * On a single-node machine binding node 0 is a no-op and @note says so.
 * Returns 0, -EINVAL (node not online) or -errno from the syscalls. */
int pfs_pcore_numa_bind(int node, void *addr, size_t len, char *note, size_t note_len);

/* pfs_pcore_pin - pin the calling thread to @cpu. Returns 0 or -errno. */
int pfs_pcore_pin(int cpu);

#endif /* PFS_PCORE_H */
