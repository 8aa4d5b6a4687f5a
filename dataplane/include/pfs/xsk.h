/* SPDX-License-Identifier: Apache-2.0 */
/* One AF_XDP socket on one queue of one interface, with its own UMEM: the
 * link layer of the AF_XDP gram transport. One pfs_xsk per queue, each owned
 * by one worker thread (nothing here locks); `--queues N` means N of them.
 *
 * Frames are Ethernet/IPv4-or-IPv6/UDP (pfs/frame.h): tx_burst stamps a
 * per-flow header template in front of each payload; rx_burst validates the
 * frames the XDP program redirected and hands out pointers to their UDP
 * payloads inside UMEM, valid until rx_release gives the frames back.
 *
 * UMEM: 2 MiB hugepages when the pool has them, else 4 KiB pages (the reason
 * is kept). Half the frames feed the fill ring (RX), half are the TX pool;
 * a TX-only socket (no pfs_xdp) puts all of them in the TX pool. */
#ifndef PFS_XSK_H
#define PFS_XSK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "pfs/frame.h"
#include "pfs/xdp.h"

/* Descriptors handled per ring operation in the workers' loops. */
#define PFS_XSK_BATCH 64

enum pfs_xsk_bind {
	PFS_XSK_BIND_AUTO = 0, /* XDP_ZEROCOPY, else XDP_COPY (veth: always copy) */
	PFS_XSK_BIND_COPY,
	PFS_XSK_BIND_ZEROCOPY, /* fail when the driver cannot */
};

enum pfs_xsk_page {
	PFS_XSK_PAGE_AUTO = 0, /* 2 MiB hugepages, else 4 KiB (reason kept) */
	PFS_XSK_PAGE_2M, /* fail without hugepages */
	PFS_XSK_PAGE_4K,
};

/* "auto" | "2m" | "4k" (the --umem-page / --page values): 0 or -1. */
static inline int pfs_xsk_page_parse(const char *s, enum pfs_xsk_page *p)
{
	static const char *const names[] = { "auto", "2m", "4k" };

	for (int i = 0; i < 3; i++)
		if (!strcmp(s, names[i])) {
			*p = (enum pfs_xsk_page)i;
			return 0;
		}
	return -1;
}

struct pfs_xsk_opts {
	size_t sz; /* sizeof(struct pfs_xsk_opts) */
	const char *ifname;
	uint32_t queue; /* NIC queue to bind */
	struct pfs_xdp *xdp; /* receive through this program; NULL: TX only */
	uint32_t frames; /* UMEM frames, power of 2 >= 64 (default 2048) */
	uint32_t frame_size; /* 2048 or 4096 (default: 2048, 4096 if MTU > 1500) */
	enum pfs_xsk_bind bind;
	enum pfs_xsk_page page;
	const struct pfs_frame_addr *peer; /* TX flow, or NULL: set later */
	uint32_t frame_flags; /* PFS_FRAME_NO_UDP_CSUM4 */
	bool verify_csum; /* RX: check IPv4 header + UDP checksums */
};

/* A received datagram: the UDP payload in a UMEM frame. */
struct pfs_dgram {
	const uint8_t *data; /* UDP payload */
	uint32_t len;
	uint16_t payload_off; /* data - payload_off = start of the Ethernet frame */
	uint16_t queue; /* the socket's queue */
	uint64_t frame; /* UMEM address of the frame, for rx_release */
};

struct pfs_xsk_stats {
	uint64_t rx_frames, rx_bytes; /* delivered by rx_burst (payload bytes) */
	uint64_t rx_bad; /* redirected frames that failed parsing */
	uint64_t tx_frames, tx_bytes; /* accepted by tx_burst (frame bytes) */
	uint64_t tx_completed;
	uint64_t tx_kicks, rx_kicks; /* syscalls made because needs_wakeup said so */
	uint64_t tx_ring_full; /* tx_burst calls that found no room */
	uint64_t fill_stashed; /* RX frames that waited for fill-ring room */
	/* from the kernel (XDP_STATISTICS) */
	uint64_t k_rx_dropped, k_rx_invalid, k_tx_invalid, k_rx_ring_full, k_fill_empty,
		k_tx_ring_empty;
};

struct pfs_xsk;

/* pfs_xsk__create - UMEM, rings, bind to @o->queue, register with @o->xdp.
 * NULL with errno and the reason in pfs_xsk_last_error():
 *   EPERM   CAP_NET_RAW missing, or CAP_IPC_LOCK for a UMEM over
 *           RLIMIT_MEMLOCK (named in the reason)
 *   ENOMEM  no hugepages with PFS_XSK_PAGE_2M, or no memory
 *   ENOBUFS the UMEM is over the memlock limit
 *   ENODEV  no such interface; EINVAL the queue does not exist, bad options
 *   EOPNOTSUPP  zero-copy asked for (PFS_XSK_BIND_ZEROCOPY) and unsupported
 *   EBUSY   the queue already has a socket */
struct pfs_xsk *pfs_xsk__create(const struct pfs_xsk_opts *o);

/* pfs_xsk__close - unregister, close, unmap. NULL is a no-op. */
void pfs_xsk__close(struct pfs_xsk *x);

/* pfs_xsk__set_peer - (re)set the TX flow. 0, -EINVAL (bad address; the
 * old flow stays), -EBUSY (between tx_reserve and tx_submit). */
int pfs_xsk__set_peer(struct pfs_xsk *x, const struct pfs_frame_addr *peer);

/* pfs_xsk__tx_burst - queue up to @n payloads (at most PFS_XSK_BATCH per
 * call) as frames, copying each into a UMEM frame behind the flow's header,
 * then kick the kernel if it needs_wakeup. Reclaims completed frames first.
 * Returns how many were queued (0 when the TX ring or frame pool is full:
 * call again; fewer than @n when a later payload is too big), or -ENOTCONN
 * (no peer set), -EMSGSIZE (the first payload exceeds
 * pfs_xsk__max_payload). */
int pfs_xsk__tx_burst(struct pfs_xsk *x, const struct iovec *payloads, unsigned int n);

/* Building frames in place, without the copy of tx_burst: reserve frames,
 * write each payload (e.g. encode a gram) at slot.payload, then submit the
 * lengths. The header is written at submit. */
struct pfs_xsk_txslot {
	uint8_t *payload; /* in UMEM, behind the Ethernet/IP/UDP header */
	uint32_t cap; /* bytes that fit (pfs_xsk__max_payload) */
};

/* pfs_xsk__tx_reserve - up to @n (<= PFS_XSK_BATCH) frames for in-place
 * building. Returns how many (0: ring/pool full, call again), -ENOTCONN (no
 * peer), -EBUSY (the previous reservation was not submitted). */
int pfs_xsk__tx_reserve(struct pfs_xsk *x, struct pfs_xsk_txslot *slots, unsigned int n);

/* pfs_xsk__tx_submit - send the first @m reserved frames with payload
 * lengths @lens; reserved frames beyond @m go back to the pool. Kicks if
 * needs_wakeup. Returns @m, or -EINVAL (@m > reserved), -EMSGSIZE (a length
 * over cap: nothing sent, the reservation stays). */
int pfs_xsk__tx_submit(struct pfs_xsk *x, const uint32_t *lens, unsigned int m);

/* pfs_xsk__tx_drain - kick and reclaim until every queued frame completed
 * or @timeout_ms passed. 0 or -ETIMEDOUT. */
int pfs_xsk__tx_drain(struct pfs_xsk *x, int timeout_ms);

/* pfs_xsk__rx_burst - up to @n received datagrams into @out; frames that do
 * not parse are counted (rx_bad) and recycled. Returns the count (0: none
 * ready). Each one holds its frame until pfs_xsk__rx_release. */
int pfs_xsk__rx_burst(struct pfs_xsk *x, struct pfs_dgram *out, unsigned int n);

/* pfs_xsk__rx_release - give @n frames from rx_burst back to the fill ring. */
void pfs_xsk__rx_release(struct pfs_xsk *x, const struct pfs_dgram *d, unsigned int n);

/* pfs_xsk__wait - poll(2) the socket for RX for up to @timeout_ms. 1 ready,
 * 0 timeout, -EINTR (a signal: check the caller's stop flag), -errno. */
int pfs_xsk__wait(struct pfs_xsk *x, int timeout_ms);

/* pfs_xsk__reply_addr - the flow that answers the sender of @d (MACs, IPs,
 * ports swapped), for the repair plane's NAKs. 0 or -EINVAL. */
int pfs_xsk__reply_addr(const struct pfs_dgram *d, struct pfs_frame_addr *a);

int pfs_xsk__fd(const struct pfs_xsk *x);
uint32_t pfs_xsk__queue(const struct pfs_xsk *x);
bool pfs_xsk__zerocopy(const struct pfs_xsk *x);
/* Why zero-copy was not obtained (auto), NULL when it was. */
const char *pfs_xsk__bind_reason(const struct pfs_xsk *x);
bool pfs_xsk__hugepages(const struct pfs_xsk *x);
/* Why the UMEM is not on hugepages, NULL when it is (or 4k was asked). */
const char *pfs_xsk__page_reason(const struct pfs_xsk *x);
uint64_t pfs_xsk__umem_bytes(const struct pfs_xsk *x);
/* Largest payload a frame of the current flow can carry (MTU and frame size). */
uint32_t pfs_xsk__max_payload(const struct pfs_xsk *x);
/* Counters (user space and the kernel's XDP_STATISTICS). */
void pfs_xsk__stats(const struct pfs_xsk *x, struct pfs_xsk_stats *s);

/* Why the last pfs_xsk__create/pfs_xdp__attach on this thread failed. */
const char *pfs_xsk_last_error(void);

#endif /* PFS_XSK_H */
