/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to src/transport/: what sits behind the engine (engine.c).
 *
 * A transport is a pair of functions in struct pfs_xfer_ops. The engine
 * (pfs_xfer_send/pfs_xfer_recv) calls them only with options that
 * pfs_xfer_check accepted, with the result zeroed and r->mode set, so a
 * transport checks nothing the engine checks; it reads the options it
 * uses and ignores the others. Each returns 0 when the transfer completed
 * (the verdict in r->verdict), else -errno with r->error set. */
#ifndef PFS_TRANSPORT_ENGINE_H
#define PFS_TRANSPORT_ENGINE_H

#include "pfs/xfer.h"

struct pfs_xfer_ops {
	int (*send)(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r);
	int (*recv)(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r);
	/* Delta mode (o->delta; o->delta.res zeroed too); NULL: not run here. */
	int (*send_delta)(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r);
	int (*recv_delta)(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r);
};

/* tcp.c (pfs/tcp.h has the protocol): one connection carries the grams. */
int pfs_tcp_send(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r);
int pfs_tcp_recv(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r);

/* repair_send.c, repair_recv.c over dgram_sock.c (pfs/udp.h has the
 * records): datagrams on a UDP socket. mtu 0 = the MTU of ifname, or 1500
 * without one; ifname binds the data socket to that device; io_timeout_ms
 * 0 = 5 s; queues is ignored: one socket, one thread. Besides what tcp
 * returns: -ENOMEM, -ENODEV no such ifname. Malformed datagrams are
 * dropped and counted in r->stats. */
int pfs_udp_send(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r);
int pfs_udp_recv(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r);

/* delta_xfer.c: delta mode over one TCP connection (pfs/delta.h has the
 * codec). Not built with -DPFS_NO_SOURCE (no zstd, no libcrypto). */
int pfs_delta_xfer_send(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r);
int pfs_delta_xfer_recv(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r);

#ifndef PFS_NO_AFXDP
/* The same over dgram_xsk.c (pfs/afxdp.h has the design): AF_XDP sockets. */
int pfs_afxdp_send(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r);
int pfs_afxdp_recv(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r);
#endif

#endif /* PFS_TRANSPORT_ENGINE_H */
