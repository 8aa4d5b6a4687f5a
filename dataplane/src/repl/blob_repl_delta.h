/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: delta replication's pieces (blob_repl_delta.c), shared by the
 * replication server and client. Not a public API. */
#ifndef PFS_BLOB_REPL_DELTA_H
#define PFS_BLOB_REPL_DELTA_H

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "pfs/blob_repl.h"

/* The server's base: NULL p refuses every DELTA request. */
struct repl_base {
	const uint8_t *p;
	uint64_t size, fp;
	int level, threads;
	pthread_mutex_t mu;
	struct pfs_delta_index *idx; /* under mu, built by the first delta client */
	double index_s;
};

int repl_base_init(struct repl_base *b, const struct pfs_repl_server_opts *o);
void repl_base_fini(struct repl_base *b);
/* The index, built now if it is not yet (the caller waits); NULL on no
 * memory. */
const struct pfs_delta_index *repl_base_index(struct repl_base *b);

/* The client's scratch: one gram, its decoded table, the applier. */
struct repl_delta_rx {
	uint8_t *buf;
	size_t cap;
	struct pfs_delta_op *ops;
	struct pfs_delta_apply *ap;
};

/* What a delta gram is checked against and applied to. */
struct repl_delta_in {
	const uint8_t *base;
	uint64_t base_size;
	uint8_t *blob;
	uint64_t size;
	uint64_t have; /* the watermark: the gram must start here */
	uint64_t seq; /* its expected sequence number */
};

int repl_delta_rx_init(struct repl_delta_rx *x);
void repl_delta_rx_fini(struct repl_delta_rx *x);

/* repl_delta_rx_gram - the delta gram whose first REPL_HDR bytes are in
 * @head: read the rest from @fd, decode, check that it rebuilds exactly
 * [have, have + n) for some n > 0, apply it into in->blob over in->base,
 * count it in @d. n, or -errno: *@io true for the socket's errors
 * (-ECONNRESET, -ETIMEDOUT), false for a malformed gram (the decoders'
 * errors, -ERANGE a gap, -EBADMSG a wrong sequence or a corrupt zstd
 * frame) or -ENOMEM. */
int64_t repl_delta_rx_gram(struct repl_delta_rx *x, int fd, const uint8_t *head,
			   const struct repl_delta_in *in, struct pfs_repl_delta_fetch *d,
			   bool *io);

#endif /* PFS_BLOB_REPL_DELTA_H */
