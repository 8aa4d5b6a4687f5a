/* SPDX-License-Identifier: Apache-2.0 */
/* A holder's `/metrics` endpoint (metrics.c): one thread serving HTTP GET
 * /metrics in the Prometheus text exposition format (version 0.0.4), and
 * the writers a command's collect callback builds the page with. The
 * operator reads a filling holder's progress from the same page Prometheus
 * scrapes, so status and PromQL cannot disagree. Internal to the tool. */
#ifndef PFS_TOOL_METRICS_H
#define PFS_TOOL_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A page being written: a fixed buffer; what does not fit is cut at a
 * line and counted in "truncated" (the page then ends with a comment). */
struct pfs_metrics_page {
	char *buf;
	size_t cap, len;
	bool truncated;
};

/* A family's HELP and TYPE lines ("counter" or "gauge"); its samples follow. */
void pfs_metrics_family(struct pfs_metrics_page *p, const char *name, const char *type,
			const char *help);
/* One sample: NAME{LABELS} VALUE; @labels is "" or `k="v",k2="v2"` (values
 * already escaped by the caller: the tool's label values are fixed words). */
void pfs_metrics_sample(struct pfs_metrics_page *p, const char *name, const char *labels, double v);
/* A family with one unlabelled sample. */
void pfs_metrics_one(struct pfs_metrics_page *p, const char *name, const char *type,
		     const char *help, double v);

/* Writes the page; called on the server's thread for every scrape. */
typedef void (*pfs_metrics_collect_fn)(void *ctx, struct pfs_metrics_page *p);

struct pfs_cli_metrics;

/* Listen on @listen ("ADDR:PORT", ":PORT" for every address, "[V6]:PORT")
 * and serve GET /metrics from a thread, @collect(@ctx) writing each page;
 * every page also carries process_cpu_seconds_total and
 * process_start_time_seconds. NULL and errno with @why. */
struct pfs_cli_metrics *pfs_cli_metrics_start(const char *listen, pfs_metrics_collect_fn collect,
					      void *ctx, char *why, size_t n);
/* 0 when @listen is an address pfs_cli_metrics_start takes (numeric host,
 * or none, and a port), -EINVAL otherwise; binds nothing. */
int pfs_cli_metrics_check(const char *listen);
/* "ADDR:PORT" it listens on (the kernel's port when @listen had port 0). */
const char *pfs_cli_metrics_addr(const struct pfs_cli_metrics *m);
/* Stop the thread, close the listener, free. NULL is a no-op. */
void pfs_cli_metrics_stop(struct pfs_cli_metrics *m);

/* The option both `blob create` and `blob serve` take. */
#define PFS_CLI_METRICS_HELP                                                                \
	"serve Prometheus metrics on http://ADDR:PORT/metrics (\":PORT\": every address;\n" \
	"progress, bytes in and out, clients, CPU; docs/guides/observability.md)"

#endif /* PFS_TOOL_METRICS_H */
