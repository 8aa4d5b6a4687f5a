/* SPDX-License-Identifier: Apache-2.0 */
/* The one-core copy limit of `pfs bench` (bench_copy.c), called by bench.c:
 * what one core can copy out of an out-of-cache source into a small
 * cache-resident buffer, the copy every payload byte of a same-host TCP
 * transfer pays at least once. */
#ifndef PFS_TOOL_BENCH_COPY_H
#define PFS_TOOL_BENCH_COPY_H

#include <stddef.h>
#include <stdint.h>

/* A copy kernel: copies @len bytes from @src to @dst (no overlap). */
struct pfs_bench_copy_kernel {
	const char *name; /* "glibc", "avx2", "avx512" */
	void (*fn)(uint8_t *dst, const uint8_t *src, uint64_t len);
};

#define PFS_BENCH_COPY_KERNELS 3

/* What one measurement found; rates in MB/s (1e6 B/s), each the best pass. */
struct pfs_bench_copy {
	uint64_t chunk; /* bytes per copy: the destination buffer's size */
	unsigned passes; /* passes per kernel over the whole source */
	unsigned n; /* kernels this CPU ran, in the order of kernel[] */
	const char *kernel[PFS_BENCH_COPY_KERNELS];
	double mb_s[PFS_BENCH_COPY_KERNELS]; /* source out of cache */
	const char *impl; /* the kernel of the best rate */
	double best_mb_s; /* the limit: max of mb_s[] */
	double incache_mb_s; /* the same kernel with a source of @chunk bytes, in cache */
};

/* pfs_bench_copy__kernels - the copy kernels this CPU can run (glibc
 * memcpy first, then the vector copies it supports, widest last), their
 * count in *@n. Vector support is detected at run time. */
const struct pfs_bench_copy_kernel *pfs_bench_copy__kernels(size_t *n);

/* pfs_bench_copy__measure - copy [@src, @src + @len) @chunk bytes at a time
 * into one @chunk-byte buffer, @passes times with every kernel (passes
 * interleaved across kernels, so a drift in load falls on all), and keep
 * each kernel's best pass. @src should be larger than the last-level cache
 * (it is then read from memory on every pass). Returns 0, -EINVAL (@chunk
 * 0 or above @len, @passes 0) or -ENOMEM. */
int pfs_bench_copy__measure(const uint8_t *src, uint64_t len, uint64_t chunk, unsigned passes,
			    struct pfs_bench_copy *out);

#endif
