/* SPDX-License-Identifier: Apache-2.0 */
/* UDP transport: grams cut into datagrams on a UDP socket, with a TCP
 * control connection (same port number) for the handshake, the repair plane
 * (cumulative ACKs, selective NAKs) and the verdict. docs/design/wire-format.md,
 * "UDP", describes the bytes; src/transport/repair_send.c and
 * repair_recv.c the design.
 *
 * The records it sends (fragment header, ACK/NAK/KEY) and their codec are
 * pfs/udp_wire.h. */
#ifndef PFS_UDP_H
#define PFS_UDP_H

#include "pfs/udp_wire.h"
#include "pfs/xfer.h"

/* The UDP link's sizes, shared by the transport (src/transport/) and by
 * `pfs udp blast|sink` (the link alone, the limit the transport is measured
 * against), so both ask the kernel for the same socket. */
#define PFS_UDP_SOCKBUF (64 << 20) /* SO_SNDBUF/SO_RCVBUF asked for */
#define PFS_UDP_GSO_SEGS_MAX 44 /* GSO segments per send (<= 64 KiB of payload) */

/* Socket options older libc headers lack (linux/udp.h has them since 4.18
 * and 5.0; the build must run on the kernels that do). */
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

/* Run through the engine: pfs_xfer_send/pfs_xfer_recv (pfs/xfer.h) with
 * pfs_transport_find("udp"); src/transport/engine.h lists the options it
 * reads and what it returns. */

#endif /* PFS_UDP_H */
