// SPDX-License-Identifier: Apache-2.0
/*
 * Datagram I/O over a kernel UDP socket (transport "udp"): the device side
 * of the repair plane in repair_send.c / repair_recv.c. One socket, owned by the
 * transport's one thread.
 *
 * Sender: a connected socket; each message of a batch is a tagged
 * fragment header + the fragment bytes (two iovecs per datagram), and with
 * UDP GSO (UDP_SEGMENT, probed at open, dropped on the first EIO/EINVAL, or
 * off with o->link.udp_no_offload) one message carries up to UDP_MAX_SEGS datagrams;
 * sendmmsg sends the batch. A datagram our own host's firewall drops
 * (EPERM) counts as sent (lost on the path), not as an error.
 *
 * Receiver: recvmmsg batches of up to RX_BATCH buffers of 64 KiB; with
 * UDP_GRO one buffer holds several datagrams of the size its cmsg reports.
 * SO_RXQ_OVFL reports datagrams the kernel dropped because the socket
 * buffer was full: the congestion signal the ACK carries.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dgram_io.h"
#include "engine.h"
#include "pfs/log.h"
#include "repair.h"

#define TX_BATCH 64 /* = repair_send.c's batch */
#define RX_BATCH 32
#define RX_BUFSZ 65536

struct sock_io {
	struct pfs_dgram_io io;
	int fd;
	bool gso, gro;
	uint64_t ovfl;
	/* sender: the sendmmsg batch */
	struct mmsghdr msgs[TX_BATCH];
	struct iovec iov[TX_BATCH][2 * UDP_MAX_SEGS];
	uint8_t hdr[TX_BATCH][UDP_MAX_SEGS][PFS_UDP_FRAG_LEN];
	/* receiver: the recvmmsg batch */
	struct mmsghdr rmsgs[RX_BATCH];
	struct iovec riov[RX_BATCH];
	uint8_t ctl[RX_BATCH][64];
	uint8_t *rbuf;
};

static struct sock_io *sio(struct pfs_dgram_io *io)
{
	return (struct sock_io *)io;
}

static void tx_path(struct sock_io *s, const char *gso_note)
{
	snprintf(s->io.path, sizeof(s->io.path), "udp %uB, sendmmsg x%d, %.32s", s->io.payload,
		 TX_BATCH, gso_note);
}

static int sock_send(struct pfs_dgram_io *io, const struct pfs_dgram_msg *m, int n, uint32_t ts)
{
	struct sock_io *s = sio(io);
	int sent = 0;

	if (n > TX_BATCH)
		n = TX_BATCH;
	for (int i = 0; i < n; i++) {
		for (uint32_t k = 0; k < m[i].n; k++) {
			const uint8_t *frag;
			uint32_t fl;

			if (pfs_dgram_frag_hdr(io, &m[i], k, ts, s->hdr[i][k], &frag, &fl))
				return pfs_xfer_fail(io->r, -EIO,
						     "send: tagging a datagram failed");
			s->iov[i][2 * k] = (struct iovec){ s->hdr[i][k], PFS_UDP_FRAG_LEN };
			s->iov[i][2 * k + 1] = (struct iovec){ (void *)frag, fl };
		}
		s->msgs[i].msg_hdr =
			(struct msghdr){ .msg_iov = s->iov[i], .msg_iovlen = 2 * m[i].n };
	}
	while (sent < n) {
		int k = sendmmsg(s->fd, s->msgs + sent, n - sent, 0);

		if (k > 0) {
			sent += k;
			continue;
		}
		if (errno == EPERM) {
			/* A local firewall rule dropped it: as good as lost on the path. */
			sent++;
			continue;
		}
		if (s->gso && (errno == EIO || errno == EINVAL)) {
			int zero = 0;
			char note[48];

			/* The device cannot segment for us: one datagram per message. */
			snprintf(note, sizeof(note), "no gso (%s)", strerror(errno));
			pfs_warn("send: UDP GSO failed (%s); sending without it", strerror(errno));
			setsockopt(s->fd, SOL_UDP, UDP_SEGMENT, &zero, sizeof(zero));
			s->gso = false;
			io->segs = 1;
			tx_path(s, note);
			break;
		}
		if (errno == ECONNREFUSED) /* a pending ICMP error; what went out counts */
			return sent ? sent : -ECONNREFUSED;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ENOBUFS)
			return pfs_xfer_fail(io->r, -errno, "send: sendmmsg to %s: %s", io->r->peer,
					     strerror(errno));
		break;
	}
	return sent;
}

static int sock_recv(struct pfs_dgram_io *io, pfs_dgram_place_fn place, void *ctx)
{
	struct sock_io *s = sio(io);
	int total = 0;

	for (int round = 0; round < 8; round++) {
		int n;

		for (int i = 0; i < RX_BATCH; i++) {
			s->riov[i] = (struct iovec){ s->rbuf + (size_t)i * RX_BUFSZ, RX_BUFSZ };
			s->rmsgs[i].msg_hdr =
				(struct msghdr){ .msg_iov = &s->riov[i],
						 .msg_iovlen = 1,
						 .msg_control = s->ctl[i],
						 .msg_controllen = sizeof(s->ctl[i]) };
		}
		n = recvmmsg(s->fd, s->rmsgs, RX_BATCH, MSG_DONTWAIT, NULL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				break;
			if (errno == ECONNREFUSED) /* an ICMP error for our late repairs ask */
				continue;
			return pfs_xfer_fail(io->r, -errno, "recv: recvmmsg: %s", strerror(errno));
		}
		for (int i = 0; i < n; i++) {
			struct msghdr *mh = &s->rmsgs[i].msg_hdr;
			size_t len = s->rmsgs[i].msg_len, seg = len;
			const uint8_t *p = mh->msg_iov->iov_base;

			for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
				if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
					int g;

					memcpy(&g, CMSG_DATA(c), sizeof(g));
					if (g > 0)
						seg = g;
				} else if (c->cmsg_level == SOL_SOCKET &&
					   c->cmsg_type == SO_RXQ_OVFL) {
					uint32_t d;

					memcpy(&d, CMSG_DATA(c), sizeof(d));
					if (d > s->ovfl)
						s->ovfl = d;
				}
			}
			io->r->wire_bytes += len;
			if (mh->msg_flags & MSG_TRUNC) {
				place(ctx, p, 0); /* counted as malformed (too short) */
				continue;
			}
			for (size_t off = 0; off < len; off += seg)
				place(ctx, p + off, len - off < seg ? len - off : seg);
		}
		total += n;
		if (n < RX_BATCH)
			break;
	}
	return total;
}

static bool sock_rx_pending(struct pfs_dgram_io *io)
{
	int queued = 0;

	return ioctl(sio(io)->fd, FIONREAD, &queued) || queued;
}

static uint64_t sock_drops(struct pfs_dgram_io *io)
{
	return sio(io)->ovfl;
}

static int sock_connect(struct pfs_dgram_io *io, const struct sockaddr *sa, socklen_t sl)
{
	return connect(sio(io)->fd, sa, sl) ? -errno : 0;
}

static void sock_wait(struct pfs_dgram_io *io, int ctl_fd, double w)
{
	struct pollfd p[2] = { { .fd = sio(io)->fd, .events = POLLIN },
			       { .fd = ctl_fd, .events = POLLIN } };
	struct timespec ts = { 0, w > 0 ? (long)(w * 1e9) : 0 };

	ppoll(p, 2, &ts, NULL);
}

static void sock_close(struct pfs_dgram_io *io)
{
	struct sock_io *s = sio(io);

	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	free(s->rbuf);
	free(s);
}

static const struct pfs_dgram_io_ops sock_ops = {
	.send = sock_send,
	.recv = sock_recv,
	.rx_pending = sock_rx_pending,
	.drops = sock_drops,
	.connect = sock_connect,
	.wait = sock_wait,
	.close = sock_close,
};

static struct sock_io *sock_new(int family, const struct pfs_xfer_opts *o,
				struct pfs_xfer_result *r, const char *side, int *err)
{
	struct sock_io *s = calloc(1, sizeof(*s));
	const char *why;

	if (!s) {
		*err = pfs_xfer_fail(r, -ENOMEM, "%s: out of memory", side);
		return NULL;
	}
	s->io.ops = &sock_ops;
	s->io.r = r;
	s->io.segs = 1;
	s->fd = pfs_udp_socket(family, o->link.ifname, &why);
	if (s->fd < 0) {
		*err = pfs_xfer_fail(r, s->fd, "%s: udp socket%s%s: %s", side,
				     o->link.ifname ? " on " : "",
				     o->link.ifname ? o->link.ifname : "", strerror(-s->fd));
		free(s);
		return NULL;
	}
	if (o->link.queues > 1)
		pfs_warn("%s: udp uses one socket and thread; --queues %u ignored", side,
			 o->link.queues);
	if (why)
		pfs_warn("%s: %s", side, why);
	return s;
}

static int sock_open_tx(const struct pfs_xfer_opts *o, const struct sockaddr_storage *dst,
			socklen_t sl, uint32_t payload, struct pfs_dgram_io **io,
			struct pfs_xfer_result *r)
{
	struct sockaddr_storage ls;
	socklen_t lsl = sizeof(ls);
	char note[48];
	int err = 0;
	struct sock_io *s = sock_new(dst->ss_family, o, r, "send", &err);

	if (!s)
		return err;
	s->io.payload = payload;
	if (connect(s->fd, (const struct sockaddr *)dst, sl) ||
	    getsockname(s->fd, (struct sockaddr *)&ls, &lsl)) {
		err = pfs_xfer_fail(r, -errno, "send: udp connect to %s: %s", o->host,
				    strerror(errno));
		sock_close(&s->io);
		return err;
	}
	s->io.src_port = ntohs(ls.ss_family == AF_INET ? ((struct sockaddr_in *)&ls)->sin_port :
							 ((struct sockaddr_in6 *)&ls)->sin6_port);
	/* GSO: probe with the socket option; the first send confirms it. */
	snprintf(note, sizeof(note), "no gso (%s)",
		 o->link.udp_no_offload ? "PFS_UDP_OFFLOAD=off" : "unsupported");
	if (!o->link.udp_no_offload) {
		int g = (int)payload;

		if (!setsockopt(s->fd, SOL_UDP, UDP_SEGMENT, &g, sizeof(g))) {
			s->gso = true;
			s->io.segs =
				65507 / payload < UDP_MAX_SEGS ? 65507 / payload : UDP_MAX_SEGS;
			if (s->io.segs < 1)
				s->io.segs = 1;
			snprintf(note, sizeof(note), "gso x%d", s->io.segs);
		}
	}
	tx_path(s, note);
	*io = &s->io;
	return 0;
}

static int sock_open_rx(const struct pfs_xfer_opts *o, const struct sockaddr_storage *addr,
			socklen_t sl, struct pfs_dgram_io **io, struct pfs_xfer_result *r)
{
	int one = 1, err = 0;
	struct sock_io *s = sock_new(addr->ss_family, o, r, "recv", &err);

	if (!s)
		return err;
	s->rbuf = malloc((size_t)RX_BATCH * RX_BUFSZ);
	if (!s->rbuf) {
		sock_close(&s->io);
		return pfs_xfer_fail(r, -ENOMEM, "recv: out of memory");
	}
	if (bind(s->fd, (const struct sockaddr *)addr, sl)) {
		err = pfs_xfer_fail(r, -errno, "recv: bind udp port %u: %s", o->port,
				    strerror(errno));
		sock_close(&s->io);
		return err;
	}
	setsockopt(s->fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one));
	s->gro = !o->link.udp_no_offload && !setsockopt(s->fd, SOL_UDP, UDP_GRO, &one, sizeof(one));
	snprintf(s->io.path, sizeof(s->io.path), "recvmmsg x%d, %s", RX_BATCH,
		 s->gro ? "gro" : "no gro");
	*io = &s->io;
	return 0;
}

const struct pfs_dgram_backend pfs_dgram_sock = { "udp", sock_open_tx, sock_open_rx };
