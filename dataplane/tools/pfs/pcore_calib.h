/* SPDX-License-Identifier: Apache-2.0 */
/* The reference-rate measurements of `pfs pcore calibrate` (pcore_calib.c),
 * called by pcore.c. */
#ifndef PFS_TOOL_PCORE_CALIB_H
#define PFS_TOOL_PCORE_CALIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a calibration kernel sweeps: a limit each. */
enum pfs_pcore_calib_what {
	PFS_CALIB_READ, /* loads only: the limit of counteq, crc32c, fnv */
	PFS_CALIB_COPY, /* range -> private buffer */
	PFS_CALIB_RMW, /* in-place load and store: the limit of xor, add */
	PFS_CALIB__COUNT,
};

/* The instruction set a kernel needs; the CPU is asked at run time. */
enum pfs_pcore_calib_isa {
	PFS_CALIB_ISA_ANY,
	PFS_CALIB_ISA_SSE2,
	PFS_CALIB_ISA_AVX2,
	PFS_CALIB_ISA_AVX512, /* AVX-512 F: 64-byte vectors */
	PFS_CALIB_ISA_NEON, /* aarch64's baseline */
};

/* A kernel of the calibration; the function of its table's kind is set. */
struct pfs_pcore_calib_kernel {
	const char *name; /* "avx512-8acc", "avx2-ntstore", "glibc", ... */
	enum pfs_pcore_calib_isa isa;
	unsigned width; /* bytes per load and store; 0: glibc memcpy's own choice */
	bool test_only; /* kept for the tests to compare with; never a limit */
	/* ORs every byte of [p, p + len) into a 64-bit word (so folding its
	 * eight bytes gives the OR of the range's bytes). */
	uint64_t (*read)(const uint8_t *p, uint64_t len);
	void (*copy)(uint8_t *dst, const uint8_t *src, uint64_t len);
	void (*rmw)(uint8_t *p, uint64_t len, uint8_t k); /* p[i] ^= k, in place */
};

/* pfs_pcore_calib__kernels - the table of @what in this build (every ISA
 * compiled in, runnable here or not), widest first; its length in *@n. */
const struct pfs_pcore_calib_kernel *pfs_pcore_calib__kernels(enum pfs_pcore_calib_what what,
							      size_t *n);

/* pfs_pcore_calib__runnable - this CPU (and OS) runs @k's instructions. */
bool pfs_pcore_calib__runnable(const struct pfs_pcore_calib_kernel *k);

/* pfs_pcore_calib__candidate - @k is one the measure of @what times: it
 * runs here, is not test_only, and is at least half as wide as the widest
 * kernel of @what that runs here (glibc's copy always). */
bool pfs_pcore_calib__candidate(enum pfs_pcore_calib_what what,
				const struct pfs_pcore_calib_kernel *k);

/* pfs_pcore_calib__widest - the widest kernel of @what this CPU runs
 * (never NULL: the portable loops run everywhere). */
const struct pfs_pcore_calib_kernel *pfs_pcore_calib__widest(enum pfs_pcore_calib_what what);

/* pfs_pcore_calib__read_kernel - the read kernel named @name ("avx512-8acc",
 * "avx2-8acc", "avx2-4acc" (the kernel used before), "sse2-8acc",
 * "portable"), or with @name NULL the widest one this CPU runs; NULL if
 * unknown or not runnable here. */
const struct pfs_pcore_calib_kernel *pfs_pcore_calib__read_kernel(const char *name);

const char *pfs_pcore_calib_isa_str(enum pfs_pcore_calib_isa isa);

#define PFS_PCORE_CALIB_KMAX 8

/* Every candidate a measure timed and its best pass (MB/s). */
struct pfs_pcore_calib_tried {
	unsigned n;
	const char *name[PFS_PCORE_CALIB_KMAX];
	double mbps[PFS_PCORE_CALIB_KMAX];
};

enum {
	PFS_CALIB_TRIED_READ_1T,
	PFS_CALIB_TRIED_READ_NT,
	PFS_CALIB_TRIED_COPY_1T,
	PFS_CALIB_TRIED_COPY_NT,
	PFS_CALIB_TRIED_RMW_NT,
	PFS_CALIB_TRIED_RMW_1T,
	PFS_CALIB_TRIED__COUNT,
};

/* Reference rates in MB/s (1e6 bytes per second), each measured over the
 * same range and CPUs a pcore run would use. Rates are the best pass of
 * `passes`; a limit (read, copy, rmw) is the best of every candidate
 * kernel, the passes of the candidates alternating. */
struct pfs_pcore_calib {
	unsigned threads;
	double read_1t, read_nt; /* load-only sweep, best kernel */
	const char *read_impl_1t, *read_impl_nt; /* which kernel won */
	double memcpy_1t, memcpy_nt; /* best copy kernel */
	double memcpy_glibc_1t, memcpy_glibc_nt; /* glibc memcpy, range -> private buffer */
	double memcpy_ntstore_1t, memcpy_ntstore_nt; /* AVX2 streaming stores; 0 without AVX2 */
	const char *memcpy_impl_1t, *memcpy_impl_nt; /* which copy won */
	/* In-place load-xor(0)-store on all threads over a private copy of the
	 * range: the limit of the in-place ops; MB/s and MB per CPU-second. */
	double rmw_nt, rmw_nt_cpu;
	const char *rmw_impl_nt;
	double rmw_1t, rmw_1t_cpu; /* the same on one thread */
	const char *rmw_impl_1t;
	double crc32c_1core; /* pfs_crc32c, one thread */
	double fnv_naive_1core; /* byte-at-a-time FNV-1a 64, one stream */
	double fnv_multi_1core; /* the fnv kernel over 64 KiB descriptors */
	const char *memcpy_dst_page; /* page kind of the copy destination */
	/* The same seven rates in MB per CPU-second, in the order above. */
	double cpu[7];
	struct pfs_pcore_calib_tried tried[PFS_CALIB_TRIED__COUNT];
};

/* pfs_pcore_calib__measure - measure every rate over [base, base + len) on
 * threads pinned to cpus[0..threads). Returns 0 or -errno (-ENOMEM: no
 * memory for the copy destination). */
int pfs_pcore_calib__measure(const uint8_t *base, uint64_t len, const int *cpus, unsigned threads,
			     unsigned passes, struct pfs_pcore_calib *out);

#endif /* PFS_TOOL_PCORE_CALIB_H */
