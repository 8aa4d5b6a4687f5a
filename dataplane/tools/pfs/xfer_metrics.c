// SPDX-License-Identifier: Apache-2.0
/*
 * A receiver's /metrics page (`pfs recv --metrics-listen`, xfer_args.h):
 * how far the transfer got, read from the result the engine fills. The
 * engine's receiving thread is the only writer of r->bytes and r->planned
 * and stores them with relaxed atomics (pfs_xfer_add_bytes); this thread
 * loads them the same way, so a scrape sees whole values, at most one gram
 * behind. The operator reads a Running transfer's progress from it.
 */
#include "metrics.h"
#include "xfer_args.h"
#include "pfs/log.h"
#include "pfs/xfer.h"

static void collect(void *ctx, struct pfs_metrics_page *p)
{
	const struct pfs_xfer_result *r = ctx;
	uint64_t planned = __atomic_load_n(&r->planned, __ATOMIC_RELAXED);
	uint64_t done = __atomic_load_n(&r->bytes, __ATOMIC_RELAXED);

	pfs_metrics_one(p, "packetfs_transfer_planned_bytes", "gauge",
			"Effective bytes the sender announced (0 until its HELLO was taken).",
			(double)planned);
	pfs_metrics_one(p, "packetfs_transfer_effective_bytes_total", "counter",
			"Effective bytes this receiver has received and executed so far.",
			(double)done);
}

struct pfs_cli_metrics *pfs_cli_xfer_metrics_start(const char *listen,
						   const struct pfs_xfer_result *r)
{
	struct pfs_cli_metrics *m;
	char why[160];

	if (!listen)
		return NULL;
	m = pfs_cli_metrics_start(listen, collect, (void *)r, why, sizeof(why));
	if (!m)
		pfs_warn("recv: no /metrics page: %s; the transfer goes on without it", why);
	return m;
}
