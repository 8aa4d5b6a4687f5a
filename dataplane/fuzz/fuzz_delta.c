// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer harness for delta grams: the decoder (header, table, whole
 * gram) and the applier over what it accepts, zstd frames included, into
 * bounded buffers. Input: le16 base size, le16 target size, le64 the
 * target offset the gram must start at, then the gram. ASan catches any
 * write past the target or read past the base or the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pfs/delta.h"

#define MAXB 65536

static struct pfs_delta_op ops[PFS_DELTA_MAX_OPS];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct pfs_delta_apply *ap;
	uint8_t *base, *target;
	struct pfs_delta_hdr h;
	const uint8_t *pl;
	uint64_t bs, ts, min_dst;
	int n;

	if (size < 12)
		return 0;
	bs = (uint64_t)data[0] | (uint64_t)data[1] << 8;
	ts = (uint64_t)data[2] | (uint64_t)data[3] << 8;
	memcpy(&min_dst, data + 4, 8);
	data += 12;
	size -= 12;
	if (!ap)
		ap = pfs_delta_apply__new();
	n = pfs_delta_decode(data, size, bs, ts, &h, ops, PFS_DELTA_MAX_OPS, &pl);
	if (n < 0)
		goto stream;
	/* Exactly sized buffers, so ASan sees a byte too far. */
	base = malloc(bs ? bs : 1);
	target = malloc(ts ? ts : 1);
	memset(base, 0xa5, bs);
	for (int i = 0; i < n; i++) {
		if (ops[i].dst > ts || ops[i].len > ts - ops[i].dst)
			__builtin_trap();
		if (i && ops[i].dst < ops[i - 1].dst + ops[i - 1].len)
			__builtin_trap();
	}
	(void)pfs_delta_apply__ops(ap, ops, (uint32_t)n, pl, base, target);
	free(base);
	free(target);
stream:
	/* The streaming path: header, then the table from the rest. */
	if (!pfs_delta_decode_hdr(data, size, &h) && size - PFS_DELTA_HDR_LEN >= h.table_len)
		(void)pfs_delta_decode_ops(&h, data + PFS_DELTA_HDR_LEN, h.table_len, bs, ts,
					   min_dst, ops, PFS_DELTA_MAX_OPS);
	return 0;
}
