/* SPDX-License-Identifier: Apache-2.0 */
/* TCP transport: one sender, one receiver, one connection.
 *
 * Protocol (docs/design/wire-format.md): sender HELLO (version, mode, blob size and
 * fingerprint) -> receiver ACCEPT or REFUSE -> grams -> END (sender's totals
 * and checksum) -> receiver RESULT (its checksum and verdict).
 *
 * Integrity, identical on both ends: the checksum (CRC32C by default,
 * FNV-1a 64, or none) over the bytes the descriptors
 * reference, concatenated in stream order (gram by gram, descriptor by
 * descriptor). The sender reads them from its blob, the receiver from its own
 * blob (offset, arithmetic) or from the payload slab (payload). */
#ifndef PFS_TCP_H
#define PFS_TCP_H

#include <stdbool.h>
#include <stdint.h>

#include "pfs/blob.h"
#include "pfs/gram.h"
#include "pfs/integrity.h"
#include "pfs/schedule.h"
#include "pfs/xfer.h"

struct pfs_tcp_send_opts {
	size_t sz; /* sizeof(struct pfs_tcp_send_opts) */
	const char *host; /* numeric IPv4/IPv6 address */
	uint16_t port;
	enum pfs_gram_mode mode;
	const struct pfs_blob *blob;
	uint64_t fingerprint; /* of blob if already known, 0: compute it */
	struct pfs_sched_opts sched; /* blob_size is taken from the blob */
	uint32_t desc_per_gram; /* <= PFS_GRAM_MAX_DESC */
	uint32_t gram_bytes; /* payload bytes per gram cap (payload mode) */
	int connect_timeout_ms; /* retry refused connects this long */
	int io_timeout_ms; /* per send/recv call */
	enum pfs_integrity integrity; /* checksum; the receiver must run the same */
};

struct pfs_tcp_recv_opts {
	size_t sz; /* sizeof(struct pfs_tcp_recv_opts) */
	const char *host; /* numeric address to bind, "" or NULL = any */
	uint16_t port;
	enum pfs_gram_mode mode; /* the mode this receiver accepts */
	const struct pfs_blob *blob; /* required for offset/arith, unused for payload */
	uint64_t fingerprint; /* of blob if already known, 0: compute it */
	int out_fd; /* -1, or a file to pwrite referenced bytes into */
	int accept_timeout_ms;
	int io_timeout_ms;
	const char *ready_file; /* NULL, or created once listening */
	uint64_t max_size; /* payload mode: largest blob a sender may claim; 0: default */
	enum pfs_integrity integrity; /* checksum; a sender running another is refused */
	/* payload: receive each byte straight into out_mem at its offset (the
	 * receiver's blob; a sender of another blob size is refused), or NULL */
	uint8_t *out_mem;
	uint64_t out_mem_size;
};

/* pfs_tcp_send/pfs_tcp_recv - run one transfer. Return 0 when the transfer
 * completed (check r->verdict), else -errno with r->error set:
 * -ECONNREFUSED/-ETIMEDOUT/-EHOSTUNREACH connecting, -EPERM refused by the
 * peer (mode/fingerprint/version; r->error says which), -EPROTO malformed
 * stream (decode errors are in r->stats), -ECONNRESET peer vanished,
 * -ETIMEDOUT no data within io_timeout_ms, -EINVAL bad options,
 * -EADDRINUSE/-EACCES binding. */
int pfs_tcp_send(const struct pfs_tcp_send_opts *o, struct pfs_xfer_result *r);
int pfs_tcp_recv(const struct pfs_tcp_recv_opts *o, struct pfs_xfer_result *r);

#endif /* PFS_TCP_H */
