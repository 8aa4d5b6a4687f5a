// SPDX-License-Identifier: Apache-2.0
/*
 * Datagram I/O over AF_XDP (transport "afxdp"): the same tagged
 * UDP fragments as the udp transport, carried in Ethernet/IPv4-or-IPv6/UDP
 * frames built in UMEM (pfs/xsk.h). The repair plane above it (repair_send.c,
 * repair_recv.c) and its TCP control connection are unchanged: control, ACKs
 * and NAKs go through the kernel stack on the same interface (our XDP
 * program passes everything but UDP to the data port).
 *
 * Threads and ownership: one io per transfer side, owned by the
 * transport's one thread; it owns N pfs_xsk (one per queue, --queues N) and,
 * on the receiver, the pfs_xdp program. No locks.
 *
 * Sender: TX-only sockets (no XDP program, so CAP_NET_RAW only). The flow
 * (MACs, IPs, ports) comes from pfs_netdev_* and the neighbour table, or
 * --peer-mac. A gram's fragments all go out on queue seq % N, so they stay
 * in order on one queue while grams spread over the queues; each fragment
 * is encoded straight into its UMEM frame (tx_reserve -> header + copy ->
 * tx_submit). A full TX ring or frame pool ends the send early (the repair
 * plane retries after full_wait_s). Before END every queue is drained.
 *
 * Receiver: our XDP program on the interface (native, else generic), one
 * socket per queue in its XSKMAP; this one thread polls all N sockets
 * (rx_burst -> place each datagram -> rx_release). Drops for lack of room
 * (the XDP sockets' rx_dropped + rx_ring_full, + fill_empty in zero-copy
 * mode) are the congestion signal in the ACKs. The UMEM (rx_frames()) is
 * sized so the fill ring rides out the thread being descheduled. The
 * caller's stop flag (o->link.stop; pfs routes SIGTERM/SIGINT/SIGHUP to it) is
 * turned into an error by recv, so the transport leaves through its
 * cleanup path: sockets closed, then the program detached.
 */
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>

#include "dgram_io.h"
#include "engine.h"
#include "pfs/afxdp.h"
#include "pfs/caps.h"
#include "pfs/log.h"
#include "pfs/netdev.h"
#include "pfs/xdp.h"
#include "pfs/xsk.h"
#include "repair.h"

#define XSK_IO_MAX_QUEUES 16
#define TX_FRAMES 1024 /* sender UMEM: 2 MiB at 2 KiB frames, all for TX */
#define RX_FRAMES_MIN 2048 /* receiver UMEM per queue: 4 MiB, half on the fill ring */
#define RX_FRAMES_ALL 8192 /* receiver UMEM frames over all queues, with CAP_IPC_LOCK */
#define RX_ROUNDS 8 /* bursts per queue per recv call, at most */

struct xsk_io {
	struct pfs_dgram_io io;
	struct pfs_xdp *xdp; /* receiver only */
	uint32_t nq;
	bool pending; /* the last recv left a full burst: more may be queued */
	struct pfs_xsk *q[XSK_IO_MAX_QUEUES];
	char ifname[IF_NAMESIZE];
};

static struct xsk_io *xio(struct pfs_dgram_io *io)
{
	return (struct xsk_io *)io;
}

static int xsk_send(struct pfs_dgram_io *io, const struct pfs_dgram_msg *m, int n, uint32_t ts)
{
	struct xsk_io *s = xio(io);
	struct pfs_xsk_txslot slot[PFS_XSK_BATCH];
	uint32_t lens[PFS_XSK_BATCH];
	int done = 0;

	while (done < n) {
		uint32_t qi = (uint32_t)(m[done].seq % s->nq);
		int run = 1, k;

		/* a run of messages for the same queue: one reservation */
		while (done + run < n && run < PFS_XSK_BATCH && m[done + run].seq % s->nq == qi)
			run++;
		k = pfs_xsk__tx_reserve(s->q[qi], slot, (unsigned int)run);
		if (k < 0)
			return pfs_xfer_fail(io->r, k, "send: AF_XDP queue %u: %s", qi,
					     strerror(-k));
		for (int i = 0; i < k; i++) {
			const uint8_t *frag;
			uint32_t fl;

			/* io->segs is 1: one fragment per message, one frame each; the
			 * tag is computed over the gram's bytes, then they are copied */
			if (pfs_dgram_frag_hdr(io, &m[done + i], 0, ts, slot[i].payload, &frag,
					       &fl))
				return pfs_xfer_fail(io->r, -EIO,
						     "send: tagging a datagram failed");
			memcpy(slot[i].payload + PFS_UDP_FRAG_LEN, frag, fl);
			lens[i] = PFS_UDP_FRAG_LEN + fl;
		}
		k = pfs_xsk__tx_submit(s->q[qi], lens, (unsigned int)k);
		if (k < 0)
			return pfs_xfer_fail(io->r, k, "send: AF_XDP queue %u submit: %s", qi,
					     strerror(-k));
		done += k;
		if (k < run)
			break; /* that queue is full: the caller retries */
	}
	return done;
}

static int xsk_flush(struct pfs_dgram_io *io)
{
	struct xsk_io *s = xio(io);

	for (uint32_t i = 0; i < s->nq; i++)
		if (pfs_xsk__tx_drain(s->q[i], 1000))
			pfs_warn("send: AF_XDP queue %u: TX not drained after 1 s (repairs will "
				 "follow if frames were lost)",
				 i);
	return 0;
}

static int xsk_recv(struct pfs_dgram_io *io, pfs_dgram_place_fn place, void *ctx)
{
	struct xsk_io *s = xio(io);
	struct pfs_dgram d[PFS_XSK_BATCH];
	int total = 0;

	if (io->stop && *io->stop)
		return pfs_xfer_fail(io->r, -EINTR,
				     "recv: stopped by a signal (SIGTERM/SIGINT/"
				     "SIGHUP); XDP program detached");
	s->pending = false;
	for (uint32_t qi = 0; qi < s->nq; qi++) {
		for (int round = 0; round < RX_ROUNDS; round++) {
			int k = pfs_xsk__rx_burst(s->q[qi], d, PFS_XSK_BATCH);

			if (k <= 0)
				break;
			for (int i = 0; i < k; i++) {
				io->r->wire_bytes += d[i].len + d[i].payload_off;
				place(ctx, d[i].data, d[i].len);
			}
			/* the fragments were copied into their grams: frames back to the fill ring */
			pfs_xsk__rx_release(s->q[qi], d, (unsigned int)k);
			total += k;
			if (k < PFS_XSK_BATCH)
				break;
			if (round == RX_ROUNDS - 1)
				s->pending = true;
		}
	}
	return total;
}

static bool xsk_rx_pending(struct pfs_dgram_io *io)
{
	return xio(io)->pending;
}

static uint64_t xsk_drops(struct pfs_dgram_io *io)
{
	struct xsk_io *s = xio(io);
	uint64_t n = 0;

	for (uint32_t i = 0; i < s->nq; i++) {
		struct pfs_xsk_stats st;

		pfs_xsk__stats(s->q[i], &st);
		/* In copy mode the kernel counts a frame dropped for an empty fill
		 * ring twice, in rx_dropped and in fill_empty (measured: equal);
		 * in zero-copy only fill_empty sees it. */
		n += st.k_rx_dropped + st.k_rx_ring_full +
		     (pfs_xsk__zerocopy(s->q[i]) ? st.k_fill_empty : 0);
	}
	return n;
}

static void xsk_wait(struct pfs_dgram_io *io, int ctl_fd, double w)
{
	struct xsk_io *s = xio(io);
	struct pollfd p[XSK_IO_MAX_QUEUES + 1];
	struct timespec ts = { 0, w > 0 ? (long)(w * 1e9) : 0 };

	for (uint32_t i = 0; i < s->nq; i++)
		p[i] = (struct pollfd){ .fd = pfs_xsk__fd(s->q[i]), .events = POLLIN };
	p[s->nq] = (struct pollfd){ .fd = ctl_fd, .events = POLLIN };
	ppoll(p, s->nq + 1, &ts, NULL);
}

static void xsk_close(struct pfs_dgram_io *io)
{
	struct xsk_io *s = xio(io);

	if (!s)
		return;
	for (uint32_t i = 0; i < s->nq; i++)
		pfs_xsk__close(s->q[i]); /* sockets first: they are in the XSKMAP */
	pfs_xdp__close(s->xdp); /* then detach, only if still ours */
	free(s);
}

static const struct pfs_dgram_io_ops xsk_ops = {
	.send = xsk_send,
	.flush = xsk_flush,
	.recv = xsk_recv,
	.rx_pending = xsk_rx_pending,
	.drops = xsk_drops,
	.wait = xsk_wait,
	.close = xsk_close,
};

/* RX queues of @ifname (ETHTOOL_GCHANNELS: rx + combined), or -errno. Not
 * sysfs: `nsenter --net` keeps the sysfs of another namespace. */
static int rx_queue_count(const char *ifname)
{
	struct ethtool_channels ch = { .cmd = ETHTOOL_GCHANNELS };
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc;

	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (void *)&ch;
	rc = ioctl(fd, SIOCETHTOOL, &ifr) ? -errno : (int)(ch.rx_count + ch.combined_count);
	close(fd);
	return rc;
}

/* Allocate, resolve the interface (--ifname, AFXDP_DEVICES_*, PCIDEVICE_*). */
static struct xsk_io *xsk_new(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r,
			      const char *side, int *err)
{
	struct xsk_io *s;
	char how[300];
	int rc;

	if (o->link.queues > XSK_IO_MAX_QUEUES) {
		*err = pfs_xfer_fail(r, -EINVAL, "%s: --queues %u: at most %d", side,
				     o->link.queues, XSK_IO_MAX_QUEUES);
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		*err = pfs_xfer_fail(r, -ENOMEM, "%s: out of memory", side);
		return NULL;
	}
	s->io.ops = &xsk_ops;
	s->io.r = r;
	s->io.segs = 1;
	s->io.full_wait_s = 50e-6;
	s->nq = o->link.queues ? o->link.queues : 1;
	s->io.stop = o->link.stop;
	rc = pfs_netdev_resolve(o->link.ifname, o->link.env, "/sys", s->ifname, sizeof(s->ifname),
				how, sizeof(how));
	if (rc) {
		r->transport_unavailable = true; /* no AF_XDP interface given to this pod */
		*err = pfs_xfer_fail(r, rc == -ENOENT ? -EINVAL : rc,
				     "%s: afxdp needs an interface: "
				     "%s",
				     side, how);
		free(s);
		return NULL;
	}
	if (!strcmp(side, "recv")) {
		int k = rx_queue_count(s->ifname);

		/* The NIC (RSS) may put our one flow on any RX queue: by default
		 * listen on all of them. */
		if (!o->link.queues && k > 1)
			s->nq = k < XSK_IO_MAX_QUEUES ? (uint32_t)k : XSK_IO_MAX_QUEUES;
		if (k > (int)s->nq)
			pfs_warn("recv: %s has %d RX queues, sockets on %u: frames landing on the "
				 "others pass to the kernel and are lost",
				 s->ifname, k, s->nq);
	}
	pfs_info("%s: afxdp on %s (%s), %u queue(s)", side, s->ifname, how, s->nq);
	return s;
}

static void xsk_describe(struct xsk_io *s, const char *xdp_mode)
{
	snprintf(s->io.afxdp_mode, sizeof(s->io.afxdp_mode), "%s",
		 pfs_xsk__zerocopy(s->q[0]) ? "zerocopy" : "copy");
	snprintf(s->io.path, sizeof(s->io.path), "%s, %s, %u queue%s, umem %s %u MiB/queue",
		 xdp_mode, s->io.afxdp_mode, s->nq, s->nq > 1 ? "s" : "",
		 pfs_xsk__hugepages(s->q[0]) ? "2m" : "4k",
		 (unsigned)(pfs_xsk__umem_bytes(s->q[0]) >> 20));
}

/* Receiver UMEM frames per queue. The fill ring is what absorbs the time
 * this thread is not running (2 shared vCPUs: several ms at a time): 4096
 * fill entries hold ~10 ms at 400k frames/s, 1024 about 2.5 ms, and the
 * measured frame rate was ~12% higher with the bigger ring (median of 5
 * interleaved runs, 419k vs 373k). RX_FRAMES_ALL frames are shared out
 * over the queues (a flow lands on one queue of a NIC) but never fewer
 * than RX_FRAMES_MIN per queue; without CAP_IPC_LOCK the UMEM must fit
 * RLIMIT_MEMLOCK (8 MiB, with the sender's if it runs as the same user),
 * so RX_FRAMES_MIN. */
static uint32_t rx_frames(uint32_t nq)
{
	uint32_t f = RX_FRAMES_ALL;

	if (!(pfs_caps_effective() & PFS_CAP(CAP_IPC_LOCK)))
		return RX_FRAMES_MIN;
	while (f > RX_FRAMES_MIN && f * nq > RX_FRAMES_ALL)
		f /= 2;
	return f;
}

static int xsk_open_queues(struct xsk_io *s, const struct pfs_xfer_opts *o,
			   const struct pfs_frame_addr *peer, struct pfs_xfer_result *r,
			   const char *side)
{
	uint32_t frames = peer ? TX_FRAMES : rx_frames(s->nq);

	for (uint32_t i = 0; i < s->nq; i++) {
		struct pfs_xsk_opts so = { .sz = sizeof(so),
					   .ifname = s->ifname,
					   .queue = i,
					   .xdp = s->xdp,
					   .frames = frames,
					   .peer = peer,
					   .page = (enum pfs_xsk_page)o->link.umem_page };

		s->q[i] = pfs_xsk__create(&so);
		if (!s->q[i]) {
			/* EPERM is "refused by the peer" to the CLI (exit 4): a missing
			 * local capability is a plain error */
			int e = errno == EPERM ? EACCES : errno ? errno : EINVAL;

			s->nq = i; /* close what was opened */
			r->transport_unavailable = true;
			return pfs_xfer_fail(r, -e, "%s: AF_XDP socket on %s queue %u: %s", side,
					     s->ifname, i, pfs_xsk_last_error());
		}
	}
	return 0;
}

static int xsk_open_tx(const struct pfs_xfer_opts *o, const struct sockaddr_storage *dst,
		       socklen_t sl, uint32_t payload, struct pfs_dgram_io **io,
		       struct pfs_xfer_result *r)
{
	struct pfs_frame_addr peer = { 0 };
	int err = 0, ifindex;
	struct xsk_io *s = xsk_new(o, r, "send", &err);

	(void)sl;
	if (!s)
		return err;
	ifindex = (int)if_nametoindex(s->ifname);
	if (!ifindex) {
		r->transport_unavailable = true;
		err = pfs_xfer_fail(r, -ENODEV, "send: no interface '%s' in this network namespace",
				    s->ifname);
		goto out_free;
	}
	peer.family = dst->ss_family;
	if (peer.family == AF_INET)
		memcpy(peer.dst_ip, &((const struct sockaddr_in *)dst)->sin_addr, 4);
	else
		memcpy(peer.dst_ip, &((const struct sockaddr_in6 *)dst)->sin6_addr, 16);
	peer.dst_port = o->port;
	peer.src_port = o->port; /* no socket owns it: any port will do */
	err = pfs_netdev_hwaddr(s->ifname, peer.src_mac);
	if (!err)
		err = pfs_netdev_src_ip(s->ifname, peer.family, peer.dst_ip, peer.src_ip);
	if (err) {
		err = pfs_xfer_fail(r, err, "send: no route/address toward %s on %s: %s", o->host,
				    s->ifname, strerror(-err));
		goto out_free;
	}
	if (o->link.peer_mac) {
		if (pfs_mac_parse(o->link.peer_mac, peer.dst_mac)) {
			err = pfs_xfer_fail(r, -EINVAL, "send: invalid --peer-mac '%s'",
					    o->link.peer_mac);
			goto out_free;
		}
	} else {
		uint8_t hop[16];
		char hs[INET6_ADDRSTRLEN] = "";
		int oif = 0;

		/* off-link receivers: the gateway's MAC */
		if (pfs_netdev_next_hop(peer.family, peer.dst_ip, hop, &oif))
			memcpy(hop, peer.dst_ip, sizeof(hop));
		inet_ntop(peer.family, hop, hs, sizeof(hs));
		err = pfs_neigh_resolve(ifindex, s->ifname, peer.family, hop, peer.dst_mac, 3000);
		if (err) {
			err = pfs_xfer_fail(r, err,
					    "send: cannot resolve the MAC of %s (next hop to "
					    "%s) on %s (%s); pass --peer-mac",
					    hs, o->host, s->ifname, strerror(-err));
			goto out_free;
		}
	}
	err = xsk_open_queues(s, o, &peer, r, "send");
	if (err)
		goto out_close;
	s->io.payload =
		payload < pfs_xsk__max_payload(s->q[0]) ? payload : pfs_xsk__max_payload(s->q[0]);
	s->io.src_port = o->port;
	s->io.wire_hdr = 14 + (peer.family == AF_INET6 ? 48 : 28);
	{
		char what[40];

		snprintf(what, sizeof(what), "afxdp %uB, tx-only", s->io.payload);
		xsk_describe(s, what);
	}
	*io = &s->io;
	return 0;
out_close:
	xsk_close(&s->io);
	return err;
out_free:
	free(s);
	return err;
}

static int xsk_open_rx(const struct pfs_xfer_opts *o, const struct sockaddr_storage *addr,
		       socklen_t sl, struct pfs_dgram_io **io, struct pfs_xfer_result *r)
{
	struct pfs_xdp_opts xo = { .sz = sizeof(xo),
				   .port = o->port,
				   .attach = (enum pfs_xdp_attach)o->link.xdp_attach };
	int err = 0;
	struct xsk_io *s = xsk_new(o, r, "recv", &err);
	const char *fb;

	(void)addr;
	(void)sl;
	if (!s)
		return err;
	xo.ifname = s->ifname;
	s->xdp = pfs_xdp__attach(&xo);
	if (!s->xdp) {
		int e = errno == EPERM ? EACCES : errno ? errno : EINVAL;

		r->transport_unavailable = true;
		err = pfs_xfer_fail(r, -e, "recv: attaching the XDP program to %s: %s", s->ifname,
				    pfs_xsk_last_error());
		free(s);
		return err;
	}
	fb = pfs_xdp__fallback_reason(s->xdp);
	if (fb)
		pfs_info("recv: generic XDP on %s: %s", s->ifname, fb);
	if (pfs_xdp__replaced_id(s->xdp))
		pfs_warn("recv: replaced a stale pfs XDP program (id %u) on %s",
			 pfs_xdp__replaced_id(s->xdp), s->ifname);
	err = xsk_open_queues(s, o, NULL, r, "recv");
	if (err) {
		xsk_close(&s->io);
		return err;
	}
	xsk_describe(s, pfs_xdp__native(s->xdp) ? "native xdp" : "generic xdp");
	*io = &s->io;
	return 0;
}

const struct pfs_dgram_backend pfs_dgram_xsk = { "afxdp", xsk_open_tx, xsk_open_rx };

int pfs_afxdp_send(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r)
{
	return pfs_dgram_send(o, r, &pfs_dgram_xsk);
}

int pfs_afxdp_recv(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r)
{
	return pfs_dgram_recv(o, r, &pfs_dgram_xsk);
}
