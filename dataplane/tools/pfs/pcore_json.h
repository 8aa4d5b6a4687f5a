/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to `pfs pcore`: what pcore.c (the commands) hands to
 * pcore_json.c (the result writer). The reference-rate measurements of
 * `pfs pcore calibrate` are in pcore_calib.h. Named apart from the
 * library's pfs/pcore.h, which this includes. */
#ifndef PFS_TOOL_PCORE_JSON_H
#define PFS_TOOL_PCORE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "acquire.h"
#include "opt.h"
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

#endif /* PFS_TOOL_PCORE_JSON_H */
