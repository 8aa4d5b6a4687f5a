// SPDX-License-Identifier: Apache-2.0
/*
 * The JSON of delta coding (delta_json.h): the "delta" member of a
 * `pfs send/recv --mode delta` result and the "regions" member it shares
 * with delta replication's results (repl_delta.c). Pure writers over
 * finished results; no state.
 */
#include "delta_json.h"
#include "pfs/blob_manifest.h"

static void region_json(struct pfs_json *j, const char *key, uint64_t n, uint64_t bytes,
			const uint64_t *wire)
{
	pfs_json_obj(j, key);
	pfs_json_u64(j, "n", n);
	pfs_json_u64(j, "bytes", bytes);
	if (wire)
		pfs_json_u64(j, "wire", *wire);
	pfs_json_close(j);
}

void pfs_cli_delta_regions_json(struct pfs_json *j, const struct pfs_delta_stats *s)
{
	pfs_json_obj(j, "regions");
	region_json(j, "same", s->n[PFS_DELTA_COPY] - s->moved_n,
		    s->bytes[PFS_DELTA_COPY] - s->moved_bytes, NULL);
	region_json(j, "moved", s->moved_n, s->moved_bytes, NULL);
	region_json(j, "xor", s->n[PFS_DELTA_XOR], s->bytes[PFS_DELTA_XOR],
		    &s->wire[PFS_DELTA_XOR]);
	region_json(j, "zstd", s->n[PFS_DELTA_ZSTD], s->bytes[PFS_DELTA_ZSTD],
		    &s->wire[PFS_DELTA_ZSTD]);
	region_json(j, "zstd_ref", s->n[PFS_DELTA_ZREF], s->bytes[PFS_DELTA_ZREF],
		    &s->wire[PFS_DELTA_ZREF]);
	region_json(j, "raw", s->n[PFS_DELTA_RAW], s->bytes[PFS_DELTA_RAW], NULL);
	pfs_json_close(j);
}

void pfs_cli_delta_json(struct pfs_json *j, const struct pfs_delta_result *d,
			const struct pfs_xfer_result *r)
{
	const struct pfs_delta_stats *s = &d->st;
	char hex[65];

	pfs_json_obj(j, "delta");
	pfs_json_u64(j, "base_bytes", d->base_size);
	pfs_json_u64(j, "target_bytes", d->target_size);
	pfs_json_u64(j, "wire_bytes", r->wire_bytes);
	pfs_json_num(j, "ratio", r->wire_bytes ? (double)d->target_size / r->wire_bytes : 0, 3);
	pfs_json_bool(j, "full_copy", d->full_copy);
	if (d->sha_valid) {
		pfs_sha256_hex(d->sha256, hex);
		pfs_json_str(j, "sha256", hex, sizeof(hex));
	}
	pfs_cli_delta_regions_json(j, s);
	pfs_json_obj(j, "stages");
	pfs_json_num(j, "index_s", d->index_s, 6);
	pfs_json_num(j, "encode_s", d->encode_s, 6);
	pfs_json_num(j, "send_s", d->send_s, 6);
	pfs_json_num(j, "wait_s", d->recv_wait_s, 6);
	pfs_json_num(j, "apply_s", d->apply_s, 6);
	pfs_json_num(j, "verify_s", d->verify_s, 6);
	pfs_json_close(j);
	pfs_json_str(j, "bound", d->bound[0] ? d->bound : NULL, sizeof(d->bound));
	pfs_json_u64(j, "threads", (uint64_t)d->threads);
	pfs_json_close(j);
}
