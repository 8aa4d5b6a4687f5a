/* SPDX-License-Identifier: Apache-2.0 */
/* The reference-rate measurements of `pfs pcore calibrate` (pcore_calib.c),
 * called by pcore.c. */
#ifndef PFS_TOOL_PCORE_CALIB_H
#define PFS_TOOL_PCORE_CALIB_H

#include <stdint.h>

/* Reference rates in MB/s (1e6 bytes per second), each measured over the
 * same range and CPUs a pcore run would use. */
/* Rates are the best pass of `passes` (MB/s = 1e6 B/s). */
struct pfs_pcore_calib {
	unsigned threads;
	double read_1t, read_nt; /* load-only sweep with read_impl */
	const char *read_impl; /* the best read kernel this CPU has */
	double memcpy_1t, memcpy_nt; /* best of the two copies below */
	double memcpy_glibc_1t, memcpy_glibc_nt; /* glibc memcpy, range -> private buffer */
	double memcpy_ntstore_1t, memcpy_ntstore_nt; /* AVX2 streaming stores; 0 without AVX2 */
	const char *memcpy_impl_1t, *memcpy_impl_nt; /* which of the two won */
	/* In-place load-xor(0)-store on all threads over a private copy of the
	 * range: the limit of the in-place ops; MB/s and MB per CPU-second. */
	double rmw_nt, rmw_nt_cpu;
	double crc32c_1core; /* pfs_crc32c, one thread */
	double fnv_naive_1core; /* byte-at-a-time FNV-1a 64, one stream */
	double fnv_multi_1core; /* the fnv kernel over 64 KiB descriptors */
	const char *memcpy_dst_page; /* page kind of the copy destination */
	/* The same seven rates in MB per CPU-second, in the order above. */
	double cpu[7];
};

/* A read kernel of the calibration: ORs every byte of [p, p + len). */
struct pfs_pcore_calib_read {
	const char *name;
	uint64_t (*fn)(const uint8_t *p, uint64_t len);
};

/* pfs_pcore_calib__read_kernel - the read kernel named @name ("avx2-8acc",
 * "avx2-4acc" (the kernel used before), "sse2-8acc", "portable"), or with
 * @name NULL the best one this CPU runs; NULL if unknown or not runnable
 * here. */
const struct pfs_pcore_calib_read *pfs_pcore_calib__read_kernel(const char *name);

/* pfs_pcore_calib__measure - measure every rate over [base, base + len) on
 * threads pinned to cpus[0..threads). Returns 0 or -errno (-ENOMEM: no
 * memory for the copy destination). */
int pfs_pcore_calib__measure(const uint8_t *base, uint64_t len, const int *cpus, unsigned threads,
			     unsigned passes, struct pfs_pcore_calib *out);

#endif /* PFS_TOOL_PCORE_CALIB_H */
