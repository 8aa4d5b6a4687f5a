/* SPDX-License-Identifier: Apache-2.0 */
/* AF_XDP transport: the udp transport's fragments, repair plane and TCP
 * control connection, with the datagrams carried by AF_XDP sockets (one per
 * queue) instead of a UDP socket. docs/design/afxdp.md, "Transport", has the design;
 * src/transport/dgram_xsk.c the code. Not built with -DPFS_NO_AFXDP (no libbpf). */
#ifndef PFS_AFXDP_H
#define PFS_AFXDP_H

#include "pfs/xfer.h"

/* Run through the engine: pfs_xfer_send/pfs_xfer_recv with
 * pfs_transport_find("afxdp"), options struct pfs_xfer_opts:
 * link.ifname: the interface (else AFXDP_DEVICES_* / PCIDEVICE_* from
 * link.env, pfs/netdev.h); link.queues: AF_XDP sockets on queues 0..N-1 (1
 * when 0; at most 16); link.peer_mac: the receiver's (or next hop's) MAC
 * when the neighbour table cannot give it; link.xdp_attach: the receiver's
 * XDP mode. Returns what udp returns, plus: -EACCES a capability is missing
 * (named in r->error: the sender needs CAP_NET_RAW, the receiver
 * CAP_NET_ADMIN + CAP_NET_RAW + CAP_BPF, either CAP_IPC_LOCK for a UMEM over
 * RLIMIT_MEMLOCK), -EBUSY another XDP program is attached, -EINTR the
 * receiver was stopped by SIGTERM/SIGINT/SIGHUP (link.stop; program
 * detached). */

#endif /* PFS_AFXDP_H */
