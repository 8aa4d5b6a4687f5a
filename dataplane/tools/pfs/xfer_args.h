/* SPDX-License-Identifier: Apache-2.0 */
/* `pfs send` / `pfs recv`: the parsed command line (xfer.c), shared with
 * delta mode (delta.c), which takes the same options plus its own, and with
 * the report writer (xfer_report.c), which a mode extends through a hook.
 * Arrows: xfer.c -> delta.c -> xfer_report.c, xfer.c -> xfer_report.c. */
#ifndef PFS_TOOL_XFER_ARGS_H
#define PFS_TOOL_XFER_ARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "acquire.h"
#include "cli.h"
#include "pfs/delta.h"
#include "pfs/integrity.h"
#include "pfs/schedule.h"
#include "pfs/xdp.h"
#include "pfs/blob_share.h"
#include "pfs/xfer.h"
#include "pfs/xsk.h"

/* --mode delta: the base, the source, how to code. */
struct pfs_cli_delta {
	const char *base_file; /* --base FILE, instead of the blob options */
	const char *src_file; /* --src FILE */
	struct pfs_cli_share src_share; /* --src-blob-socket, --src-blob-token-file */
	bool no_base; /* recv --no-base */
	uint64_t level; /* --zstd-level */
	uint64_t threads; /* --delta-threads */
};

/* What a mode adds to the transfer report: delta mode (delta.c) registers
 * one, the other modes none. Each gets @ctx, the mode's own result. */
struct pfs_cli_xfer_hook {
	/* The integrity members, in place of integrity_alg, the checksums and
	 * crc32c_impl. */
	void (*integrity)(struct pfs_json *j, const void *ctx, const struct pfs_xfer_result *r);
	/* The mode's own member, after the placement. */
	void (*member)(struct pfs_json *j, const void *ctx, const struct pfs_xfer_result *r);
	const void *ctx;
};

struct xfer_args {
	bool sender;
	bool into_blob; /* --into-blob */
	const char *connect, *listen;
	const struct pfs_transport *transport;
	enum pfs_gram_mode mode;
	struct pfs_cli_blob cb;
	struct pfs_cli_share share; /* --blob-socket: the blob from a holder */
	struct pfs_sched_opts sched;
	struct pfs_opt_range range;
	uint64_t bytes, max_size, max_work;
	uint32_t desc_per_gram, gram_bytes;
	double connect_timeout, accept_timeout, timeout;
	const char *out, *result_file, *csv, *notes, *ready_file;
	const char *metrics_listen; /* recv --metrics-listen */
	const char *ifname, *peer_mac;
	uint32_t queues, mtu;
	enum pfs_xdp_attach xdp_attach;
	enum pfs_xsk_page umem_page;
	enum pfs_integrity integrity;
	struct pfs_cli_delta delta; /* --mode delta (delta.c) */
	const char *token_file; /* --token-file */
	struct pfs_xfer_auth_opts auth; /* its token, once read (main) */
	char token[PFS_SHARE_TOKEN_MAX + 1];
	struct pfs_cli_xfer_hook report_hook; /* the mode's, set before reporting */
};

/* recv --metrics-listen (xfer_metrics.c): a receiver's /metrics page over
 * @r while pfs_xfer_recv fills it (the bytes it executed, the bytes its
 * sender announced). NULL when @listen is NULL or it cannot listen (then
 * logged: the page is never why a transfer fails). */
struct pfs_cli_metrics *pfs_cli_xfer_metrics_start(const char *listen,
						   const struct pfs_xfer_result *r);

/* The table over struct pfs_cli_delta (delta.c). */
extern const struct pfs_opt pfs_cli_delta_opts[];

/* After parsing, --mode delta: what needs what. 0 or -EINVAL (printed). */
int pfs_cli_delta_check(const struct pfs_cmdline *c, const struct xfer_args *a);

/* Run `pfs send/recv --mode delta` (host:port parsed); the exit code. */
int pfs_cli_delta_run(struct xfer_args *a, const char *host, uint16_t port);

/* The result of a transfer of any mode (xfer_report.c): JSON on stdout and
 * --result-file, a CSV row with --csv; a->report_hook adds the mode's. */
void pfs_cli_xfer_report(const struct xfer_args *a, const struct pfs_blob *blob, uint64_t fp,
			 const struct pfs_xfer_result *r, int err, int rc);
/* The exit code of a finished transfer (xfer_report.c). */
int pfs_cli_xfer_exit(int err, const struct pfs_xfer_result *r);

#endif /* PFS_TOOL_XFER_ARGS_H */
