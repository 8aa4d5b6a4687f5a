// SPDX-License-Identifier: Apache-2.0
/*
 * Delta replication (blob_repl.h): what the server and the client of the
 * replication stream need beyond the bytes. The server's base, indexed
 * once, the first time a delta client comes (a holder whose clients all
 * fetch whole never pays for it); and the client's side of a delta gram:
 * read, decode with the checked decoder, check that its operations rebuild
 * exactly the next bytes of the blob, apply over the client's own base.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "repl/blob_repl_delta.h"
#include "repl/blob_repl_int.h"
#include "pfs/log.h"

int repl_base_init(struct repl_base *b, const struct pfs_repl_server_opts *o)
{
	memset(b, 0, sizeof(*b));
	b->p = o->base;
	b->size = o->base ? o->base_size : 0;
	b->fp = o->base_fp;
	b->level = o->delta_level > 0 ? o->delta_level : 3;
	b->threads = o->index_threads > 0 ? o->index_threads : 1;
	return -pthread_mutex_init(&b->mu, NULL);
}

void repl_base_fini(struct repl_base *b)
{
	pfs_delta_index__free(b->idx);
	pthread_mutex_destroy(&b->mu);
}

const struct pfs_delta_index *repl_base_index(struct repl_base *b)
{
	pthread_mutex_lock(&b->mu);
	if (!b->idx && b->p) {
		double t0 = repl_now();

		b->idx = pfs_delta_index__build(b->p, b->size, b->threads);
		b->index_s = repl_now() - t0;
		if (b->idx)
			pfs_info("repl serve: indexed the base (%" PRIu64 " bytes, %" PRIu64
				 " chunks) in %.3f s",
				 b->size, pfs_delta_index__chunks(b->idx), b->index_s);
	}
	pthread_mutex_unlock(&b->mu);
	return b->idx;
}

int repl_delta_rx_init(struct repl_delta_rx *x)
{
	memset(x, 0, sizeof(*x));
	x->ops = malloc(PFS_DELTA_MAX_OPS * sizeof(*x->ops));
	x->ap = pfs_delta_apply__new();
	if (!x->ops || !x->ap) {
		repl_delta_rx_fini(x);
		return -ENOMEM;
	}
	return 0;
}

void repl_delta_rx_fini(struct repl_delta_rx *x)
{
	free(x->buf);
	free(x->ops);
	pfs_delta_apply__free(x->ap);
	memset(x, 0, sizeof(*x));
}

static int grow(struct repl_delta_rx *x, size_t need)
{
	uint8_t *b;

	if (need <= x->cap)
		return 0;
	b = realloc(x->buf, need);
	if (!b)
		return -ENOMEM;
	x->buf = b;
	x->cap = need;
	return 0;
}

/* The operations rebuild [have, end) with no gap: the client's watermark
 * moves only over bytes this gram wrote. */
static int64_t tiles(const struct pfs_delta_op *ops, int n, uint64_t have)
{
	uint64_t at = have;

	if (n < 1)
		return -EBADMSG;
	for (int i = 0; i < n; i++) {
		if (ops[i].dst != at)
			return -ERANGE;
		at += ops[i].len;
	}
	return (int64_t)(at - have);
}

int64_t repl_delta_rx_gram(struct repl_delta_rx *x, int fd, const uint8_t *head,
			   const struct repl_delta_in *in, struct pfs_repl_delta_fetch *d, bool *io)
{
	uint8_t h40[PFS_DELTA_HDR_LEN];
	struct pfs_delta_hdr h;
	size_t whole;
	int64_t got;
	int n, err;
	double t0;

	*io = true;
	memcpy(h40, head, REPL_HDR);
	err = repl_read_full(fd, h40 + REPL_HDR, PFS_DELTA_HDR_LEN - REPL_HDR);
	if (err)
		return err;
	*io = false;
	err = pfs_delta_decode_hdr(h40, sizeof(h40), &h);
	if (err)
		return err;
	if (h.seq != in->seq)
		return -EBADMSG;
	whole = PFS_DELTA_HDR_LEN + (size_t)h.table_len + h.payload_len;
	if (grow(x, whole))
		return -ENOMEM;
	memcpy(x->buf, h40, sizeof(h40));
	*io = true;
	err = repl_read_full(fd, x->buf + PFS_DELTA_HDR_LEN, whole - PFS_DELTA_HDR_LEN);
	if (err)
		return err;
	*io = false;
	n = pfs_delta_decode_ops(&h, x->buf + PFS_DELTA_HDR_LEN, h.table_len, in->base_size,
				 in->size, in->have, x->ops, PFS_DELTA_MAX_OPS);
	if (n < 0)
		return n;
	got = tiles(x->ops, n, in->have);
	if (got < 0)
		return got;
	t0 = repl_now();
	err = pfs_delta_apply__ops(x->ap, x->ops, (uint32_t)n,
				   x->buf + PFS_DELTA_HDR_LEN + h.table_len, in->base, in->blob);
	d->apply_s += repl_now() - t0;
	if (err)
		return err;
	pfs_delta_stats_ops(&d->st, x->ops, (uint32_t)n);
	d->wire += whole;
	d->bytes += (uint64_t)got;
	return got;
}
