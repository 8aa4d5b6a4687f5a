/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to `pfs pcore`: shared between pcore.c (the commands),
 * pcore_json.c (the result writer) and pcore_calib.c (the reference-rate
 * measurements of `pfs pcore calibrate`). */
#ifndef PFS_TOOL_PCORE_H
#define PFS_TOOL_PCORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "pfs/pcore.h"

#define PFS_PCORE_JSON_MAX 4096 /* a Kubernetes termination message */
#define PFS_PCORE_MAX_ROUNDS 9

/* What `pfs pcore run|calibrate` was asked for. */
struct pfs_pcore_args {
	struct pfs_pcore_opts o;
	struct pfs_opt_range range;
	bool have_range, have_pcores; /* --range, --pcores given */
	bool baseline;
	int numa_node; /* --numa-node: CPUs and memory; -1 none */
	int blob_fd; /* --blob-fd: a holder's fd; -1 none */
	struct pfs_cli_blob cb; /* a blob of its own, or --blob-name */
	struct pfs_cli_share share; /* --blob-socket/--blob-token-file */
	const char *result_file;
	enum pfs_ops_isa isa;
	unsigned int rounds;
};

/* What one run measured, for the result. */
struct pfs_pcore_outcome {
	const struct pfs_pcore_args *a;
	const struct pfs_blob *blob;
	const int *cpus;
	const char *numa_note;
	int stop_signal; /* the signal that stopped the run, or 0 */
	struct pfs_pcore_result *pc; /* last round */
	struct pfs_pcore_result *bl; /* last round, or NULL */
	double pc_mbps[PFS_PCORE_MAX_ROUNDS], bl_mbps[PFS_PCORE_MAX_ROUNDS];
	unsigned int rounds, bl_rounds;
	double warmup_s;
	/* Over every round: bytes and thread CPU seconds, for MB/CPU-s. */
	double pc_bytes, pc_cpu, bl_bytes, bl_cpu;
	bool have_crc_after;
	uint32_t crc_after;
};

/* A bounded JSON text: writes past cap set overflow and are dropped. */
struct pfs_pcore_jbuf {
	char *p;
	size_t len, cap;
	bool overflow;
};

/* pfs_pcore_json - the result of @oc into @j: with per-core arrays when
 * @per_core, else their min/max (what 256 pcores need to fit 4 KiB). */
void pfs_pcore_json(struct pfs_pcore_jbuf *j, const struct pfs_pcore_outcome *oc, bool per_core);

/* pfs_pcore_output - the result on stdout and into --result-file, per core
 * if it fits PFS_PCORE_JSON_MAX, else summarised. 0, -E2BIG, -errno. */
int pfs_pcore_output(const struct pfs_pcore_outcome *oc);

static inline double pfs_pcore_mbps(uint64_t bytes, double s)
{
	return s > 0 ? bytes / s / 1e6 : 0;
}

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

#endif /* PFS_TOOL_PCORE_H */
