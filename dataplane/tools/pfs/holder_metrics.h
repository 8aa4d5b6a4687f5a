/* SPDX-License-Identifier: Apache-2.0 */
/* What a holder's /metrics page says (holder_metrics.c): the blob's fill
 * (phase, bytes held, seconds), the replication server's bytes and
 * connections, the fetch's reconnects, resumes and NAKs, verification,
 * and the consumers served. `blob create` (the init container that fills
 * and relays) and `blob serve` (the long-running holder) each keep one;
 * the names are listed in docs/guides/observability.md. */
#ifndef PFS_TOOL_HOLDER_METRICS_H
#define PFS_TOOL_HOLDER_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "metrics.h"

struct pfs_cli_repl;
struct pfs_share_server;

enum pfs_cli_phase {
	PFS_CLI_PHASE_MAPPING = 0, /* creating and prefaulting the pages */
	PFS_CLI_PHASE_FILLING, /* loading the source, or fetching from upstreams */
	PFS_CLI_PHASE_READY, /* every byte held and verified */
	PFS_CLI_PHASE_FAILED,
	PFS_CLI_PHASE_N,
};

struct pfs_cli_holder_metrics {
	const char *listen; /* --metrics-listen ADDR:PORT; NULL: no endpoint */
	const char *process; /* "fill" (blob create) | "serve" (blob serve) */
	const char *role; /* "origin" | "relay" | "seeded"; "holder" for serve */
	uint64_t size; /* the blob's bytes once known (a files relay: its layout) */
	/* Under the metrics lock (pfs_cli_holder_metrics_set): */
	int phase; /* enum pfs_cli_phase */
	double t0, t1; /* monotonic: the fill's start and end (0: not yet) */
	bool verify_failed; /* the fill failed on a digest */
	uint32_t verified_files;
	struct pfs_cli_repl *repl; /* the replication session, or NULL */
	const struct pfs_share_server *share; /* serve: the consumers' server */
	struct pfs_cli_metrics *srv;
};

/* The metrics lock: the collect runs under it on the endpoint's thread;
 * the main thread takes it around what the collect reads that is not
 * atomic (a server being stopped, a result being written). */
void pfs_cli_metrics_lock(void);
void pfs_cli_metrics_unlock(void);

/* Start the endpoint over @h when h->listen is set. When it cannot listen
 * it says why (a warning) and the holder goes on without a page. */
void pfs_cli_holder_metrics_start(struct pfs_cli_holder_metrics *h);
/* Move to @phase (the fill's clock starts at FILLING, stops at READY or
 * FAILED), under the lock. */
void pfs_cli_holder_metrics_set(struct pfs_cli_holder_metrics *h, enum pfs_cli_phase phase);
void pfs_cli_holder_metrics_stop(struct pfs_cli_holder_metrics *h);

#endif /* PFS_TOOL_HOLDER_METRICS_H */
