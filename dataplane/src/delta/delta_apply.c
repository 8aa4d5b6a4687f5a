// SPDX-License-Identifier: Apache-2.0
/*
 * The applier: decoded delta operations over the receiver's own base into
 * the target. Operations were bounds-checked by the decoder; what is left
 * to check here is the compressed payload, which must decompress to
 * exactly the operation's length (zstd never writes past the capacity it
 * is given, so a hostile frame cannot overrun, only fail).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "delta_int.h"

struct pfs_delta_apply {
	ZSTD_DCtx *zd;
	uint8_t *scratch; /* a plane-split residual, up to PFS_DELTA_OP_MAX */
	size_t scratch_cap;
};

struct pfs_delta_apply *pfs_delta_apply__new(void)
{
	struct pfs_delta_apply *a = calloc(1, sizeof(*a));

	if (a && !(a->zd = ZSTD_createDCtx())) {
		free(a);
		a = NULL;
	}
	if (!a)
		errno = ENOMEM;
	return a;
}

void pfs_delta_apply__free(struct pfs_delta_apply *a)
{
	if (!a)
		return;
	ZSTD_freeDCtx(a->zd);
	free(a->scratch);
	free(a);
}

static uint8_t *scratch(struct pfs_delta_apply *a, size_t n)
{
	if (n > a->scratch_cap) {
		uint8_t *s = realloc(a->scratch, n);

		if (!s)
			return NULL;
		a->scratch = s;
		a->scratch_cap = n;
	}
	return a->scratch;
}

/* XOR/ZSTD: decompress, then undo the plane split and the XOR. */
static int apply_coded(struct pfs_delta_apply *a, const struct pfs_delta_op *op, const uint8_t *p,
		       const uint8_t *base, uint8_t *dst)
{
	const uint8_t *x = op->kind == PFS_DELTA_XOR ? base + op->dst : NULL;
	bool direct = op->elem == 1; /* decompress straight into the target */
	uint8_t *into = direct ? dst : scratch(a, op->len);
	size_t z;

	if (!into)
		return -ENOMEM;
	z = ZSTD_decompressDCtx(a->zd, into, op->len, p, op->clen);
	if (ZSTD_isError(z) || z != op->len)
		return -EBADMSG;
	if (!direct)
		pfs_plane_unsplit(into, x, op->len, op->elem, dst);
	else if (x)
		for (size_t i = 0; i < op->len; i++)
			dst[i] ^= x[i];
	return 0;
}

int pfs_delta_apply__ops(struct pfs_delta_apply *a, const struct pfs_delta_op *ops, uint32_t n,
			 const uint8_t *payload, const uint8_t *base, uint8_t *target)
{
	size_t at = 0; /* offset into the payload: it is NULL when there is none */

	for (uint32_t i = 0; i < n; i++) {
		const struct pfs_delta_op *op = &ops[i];
		uint8_t *dst = target + op->dst;
		int err;

		switch (op->kind) {
		case PFS_DELTA_COPY:
			memcpy(dst, base + op->src, op->len);
			break;
		case PFS_DELTA_RAW:
			memcpy(dst, payload + at, op->len);
			break;
		case PFS_DELTA_ZREF: {
			/* The window is the frame's prefix: its matches may point there. */
			size_t z = ZSTD_DCtx_refPrefix(a->zd, base + op->src, op->wlen);

			if (!ZSTD_isError(z))
				z = ZSTD_decompressDCtx(a->zd, dst, op->len, payload + at,
							op->clen);
			if (ZSTD_isError(z) || z != op->len)
				return -EBADMSG;
			break;
		}
		default:
			err = apply_coded(a, op, payload + at, base, dst);
			if (err)
				return err;
			break;
		}
		at += op->clen;
	}
	return 0;
}
