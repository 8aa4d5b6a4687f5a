/* SPDX-License-Identifier: Apache-2.0 */
/* The JSON of delta coding (delta_json.c), shared by delta mode (delta.c)
 * and delta replication (repl_delta.c). */
#ifndef PFS_TOOL_DELTA_JSON_H
#define PFS_TOOL_DELTA_JSON_H

#include "pfs/delta.h"
#include "pfs/result.h"
#include "pfs/xfer.h"

/* The "regions" member: same, moved, xor, zstd, zstd_ref and raw regions,
 * each with its count and bytes (and wire bytes where coded). */
void pfs_cli_delta_regions_json(struct pfs_json *j, const struct pfs_delta_stats *s);

/* The "delta" member of a transfer result: sizes, ratio, SHA-256,
 * regions, stage times. */
void pfs_cli_delta_json(struct pfs_json *j, const struct pfs_delta_result *d,
			const struct pfs_xfer_result *r);

#endif /* PFS_TOOL_DELTA_JSON_H */
