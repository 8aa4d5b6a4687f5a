/* SPDX-License-Identifier: Apache-2.0 */
/* What the XDP program (pfs_xdp.bpf.c) and user space (src/link/xdp.c) share:
 * the slots of the per-CPU counters map and the XSKMAP size. Plain C with
 * no includes so both the BPF and the host compiler can read it. */
#ifndef PFS_XDP_ABI_H
#define PFS_XDP_ABI_H

/* Slots of the `counters` PERCPU_ARRAY; user space sums over CPUs. */
enum pfs_xdp_counter {
	PFS_XDP_REDIRECTED = 0, /* UDP to our port, handed to the queue's XSK */
	PFS_XDP_PASSED, /* not ours (ARP, ND, ICMP, other ports...) */
	PFS_XDP_MALFORMED, /* truncated or inconsistent L2/L3/L4 header; passed */
	PFS_XDP_NO_XSK, /* ours, but no socket on that queue; passed */
	PFS_XDP_NCOUNTERS,
};

/* XSKMAP entries: one per RX queue index. */
#define PFS_XDP_MAX_QUEUES 64

#endif /* PFS_XDP_ABI_H */
