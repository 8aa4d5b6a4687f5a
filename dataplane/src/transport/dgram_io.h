/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to the datagram transports (udp, afxdp): the seam between the
 * repair plane (repair_send.c, repair_recv.c: windows, ACK/NAK, pacing, the TCP
 * control connection) and the device that moves the data fragments.
 *
 *   dgram_sock.c  a kernel UDP socket: sendmmsg + UDP GSO, recvmmsg + GRO,
 *                 SO_RXQ_OVFL (transport "udp")
 *   dgram_xsk.c   AF_XDP sockets, one per queue, frames built in UMEM; the
 *                 receiver attaches our XDP program (transport "afxdp")
 *
 * One io object per transfer side, owned by the transport's one thread. */
#ifndef PFS_DGRAM_IO_H
#define PFS_DGRAM_IO_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "pfs/xfer.h"

/* @n consecutive fragments [frag, frag + n) of one encoded gram: what one
 * message carries (n > 1 only when the device segments for us: GSO). */
struct pfs_dgram_msg {
	const uint8_t *gram;
	uint64_t seq;
	uint32_t gram_len, frag, n;
	uint32_t frag_size; /* gram bytes per full fragment (cfg.frag) */
	bool repair;
};

/* Called by recv for every datagram that arrived (UDP payload). */
typedef void (*pfs_dgram_place_fn)(void *ctx, const uint8_t *p, size_t len);

struct pfs_dgram_io;

struct pfs_dgram_io_ops {
	/* Send @m[0..n) with fragment timestamp @ts. Returns how many messages
	 * went out (a prefix of @m; fewer, even 0, when the device is full:
	 * call again), -ECONNREFUSED (an ICMP port unreachable was pending and
	 * nothing went out: the caller decides what it means), or
	 * -errno with r->error set. */
	int (*send)(struct pfs_dgram_io *io, const struct pfs_dgram_msg *m, int n, uint32_t ts);
	/* Sender, before END: wait until every sent datagram left (0/-errno). */
	int (*flush)(struct pfs_dgram_io *io);
	/* Read what has arrived, calling @place per datagram. Returns the number
	 * of buffers read (0: nothing), or -errno with r->error set (-EINTR: a
	 * stop signal). */
	int (*recv)(struct pfs_dgram_io *io, pfs_dgram_place_fn place, void *ctx);
	/* Receiver: is data still queued (read on)? */
	bool (*rx_pending)(struct pfs_dgram_io *io);
	/* Receiver: datagrams the device/kernel dropped for lack of room so far
	 * (the sender's congestion signal). */
	uint64_t (*drops)(struct pfs_dgram_io *io);
	/* Receiver: accept data only from @sa (the sender's data port); may be
	 * NULL. */
	int (*connect)(struct pfs_dgram_io *io, const struct sockaddr *sa, socklen_t sl);
	/* Sleep until data or @ctl_fd is readable, at most @timeout_s. */
	void (*wait)(struct pfs_dgram_io *io, int ctl_fd, double timeout_s);
	void (*close)(struct pfs_dgram_io *io);
};

struct pfs_dgram_io {
	const struct pfs_dgram_io_ops *ops;
	struct pfs_xfer_result *r;
	uint32_t payload; /* UDP payload bytes one datagram may carry */
	int segs; /* fragments per message at most (GSO), >= 1; may drop to 1 */
	uint16_t src_port; /* sender: the data source port (PARAMS b) */
	uint64_t wire_hdr; /* link-level header bytes per datagram, for wire_bytes (0: socket) */
	double full_wait_s; /* sender: how long to wait after a send that found the device full */
	char path[72]; /* how the datagrams go, for r->path */
	char afxdp_mode[12]; /* "copy" | "zerocopy" (afxdp), else "" */
	/* Receiver: the caller's stop flag (struct pfs_xfer_opts.stop) when
	 * this device honours it (afxdp), else NULL. */
	const volatile sig_atomic_t *stop;
	/* Sender: the transfer's datagram key (set by the handshake, before
	 * the first send) and the number of the next datagram (its nonce). */
	struct pfs_dgram_auth *auth;
	uint64_t pn;
};

/* Sender, for the devices: the tagged header of fragment @m->frag + @k of
 * message @m into @hdr (PFS_UDP_FRAG_LEN bytes), with the next datagram
 * number; *frag and *len: the fragment's bytes in the gram. 0 or -EIO. */
int pfs_dgram_frag_hdr(struct pfs_dgram_io *io, const struct pfs_dgram_msg *m, uint32_t k,
		       uint32_t ts, uint8_t *hdr, const uint8_t **frag, uint32_t *len);

/* Open the data side of a transfer. @dst: the receiver (sender) or the
 * address to bind (receiver). @payload: the UDP payload the MTU allows; the
 * io may lower io->payload. 0 or -errno with r->error set. */
struct pfs_dgram_backend {
	const char *name; /* "udp" | "afxdp", in messages */
	int (*open_tx)(const struct pfs_xfer_opts *o, const struct sockaddr_storage *dst,
		       socklen_t sl, uint32_t payload, struct pfs_dgram_io **io,
		       struct pfs_xfer_result *r);
	int (*open_rx)(const struct pfs_xfer_opts *o, const struct sockaddr_storage *addr,
		       socklen_t sl, struct pfs_dgram_io **io, struct pfs_xfer_result *r);
};

extern const struct pfs_dgram_backend pfs_dgram_sock;
#ifndef PFS_NO_AFXDP
extern const struct pfs_dgram_backend pfs_dgram_xsk;
#endif

/* The repair plane over @be (repair_send.c, repair_recv.c). */
int pfs_dgram_send(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r,
		   const struct pfs_dgram_backend *be);
int pfs_dgram_recv(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r,
		   const struct pfs_dgram_backend *be);

#endif /* PFS_DGRAM_IO_H */
