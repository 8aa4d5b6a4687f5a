/* SPDX-License-Identifier: Apache-2.0 */
/* AF_XDP transport: the udp transport's fragments, repair plane and TCP
 * control connection, with the datagrams carried by AF_XDP sockets (one per
 * queue) instead of a UDP socket. docs/design/afxdp.md, "Transport", has the design;
 * src/transport/dgram_xsk.c the code. Not built with -DPFS_NO_AFXDP (no libbpf). */
#ifndef PFS_AFXDP_H
#define PFS_AFXDP_H

#include "pfs/xfer.h"

/* pfs_afxdp_send/pfs_afxdp_recv - one transfer (struct pfs_xfer_opts).
 * ifname: the interface (else AFXDP_DEVICES_* / PCIDEVICE_* from the
 * environment, pfs/netdev.h); queues: AF_XDP sockets on queues 0..N-1 (1
 * when 0; at most 16); peer_mac: the receiver's (or next hop's) MAC when the
 * neighbour table cannot give it; xdp_attach: the receiver's XDP mode.
 * Returns what pfs_udp_send/pfs_udp_recv return, plus: -EACCES a capability
 * is missing (named in r->error: the sender needs CAP_NET_RAW, the receiver
 * CAP_NET_ADMIN + CAP_NET_RAW + CAP_BPF, either CAP_IPC_LOCK for a UMEM over
 * RLIMIT_MEMLOCK), -EBUSY another XDP program is attached, -EINTR the
 * receiver was stopped by SIGTERM/SIGINT/SIGHUP (program detached). */
int pfs_afxdp_send(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r);
int pfs_afxdp_recv(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r);

#endif /* PFS_AFXDP_H */
