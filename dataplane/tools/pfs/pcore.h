/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to the pcore CLI: shared between pcore_cli.c (the commands) and
 * pcore_calib.c (the reference-rate measurements of `pfs pcore calibrate`). */
#ifndef PFS_PCORE_CLI_H
#define PFS_PCORE_CLI_H

#include <stdint.h>

/* Parse "4096", "64K", "2M", "1G", "1GiB" (binary units). 0 or -EINVAL. */
int pfs_pcore_parse_size(const char *s, uint64_t *out);

/* Reference rates in MB/s (1e6 bytes per second), each measured over the
 * same range and CPUs a pcore run would use. */
struct pfs_pcore_calib {
	unsigned threads;
	double read_1t, read_nt;	/* AVX2/SSE2 load-only sweep */
	double memcpy_1t, memcpy_nt;	/* glibc memcpy, range -> private buffer */
	double crc32c_1core;		/* pfs_crc32c, one thread */
	double fnv_naive_1core;		/* byte-at-a-time FNV-1a 64, one stream */
	double fnv_multi_1core;		/* the fnv kernel over 64 KiB descriptors */
	const char *memcpy_dst_page;	/* page kind of the copy destination */
	/* The same seven rates in MB per CPU-second, in the order above. */
	double cpu[7];
};

/* pfs_pcore_calib__measure - measure every rate over [base, base + len) on
 * threads pinned to cpus[0..threads). Returns 0 or -errno (-ENOMEM: no
 * memory for the copy destination). */
int pfs_pcore_calib__measure(const uint8_t *base, uint64_t len, const int *cpus,
			     unsigned threads, unsigned passes,
			     struct pfs_pcore_calib *out);

#endif /* PFS_PCORE_CLI_H */
