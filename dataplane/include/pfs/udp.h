/* SPDX-License-Identifier: Apache-2.0 */
/* UDP transport: grams cut into datagrams on a UDP socket, with a TCP
 * control connection (same port number) for the handshake, the repair plane
 * (cumulative ACKs, selective NAKs) and the verdict. docs/wire-format.md,
 * "UDP", describes the bytes; src/transport/repair_send.c and
 * repair_recv.c the design.
 *
 * The records it sends (fragment header, ACK/NAK/KEY) and their codec are
 * pfs/udp_wire.h. */
#ifndef PFS_UDP_H
#define PFS_UDP_H

#include "pfs/udp_wire.h"
#include "pfs/xfer.h"

/* pfs_udp_send/pfs_udp_recv - one transfer (options: struct pfs_xfer_opts;
 * mtu 0 = the MTU of ifname, or 1500 without one; ifname binds the data
 * socket to that device; io_timeout_ms 0 = 5 s; queues is ignored: one
 * socket, one thread). Return 0 when the transfer
 * completed (check r->verdict), else -errno with r->error set:
 * -ECONNREFUSED/-ETIMEDOUT/-EHOSTUNREACH connecting, -EPERM refused by the
 * peer (mode/fingerprint/version/params), -EPROTO malformed control stream or
 * a gram that keeps failing to decode, -ECONNRESET peer vanished (control
 * connection closed or the data port unreachable), -ETIMEDOUT no progress
 * within io_timeout_ms, -EINVAL bad options, -ENOMEM, -EADDRINUSE/-EACCES
 * binding, -ENODEV no such --ifname. Malformed datagrams are dropped and
 * counted in r->stats. */
int pfs_udp_send(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r);
int pfs_udp_recv(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r);

#endif /* PFS_UDP_H */
