// SPDX-License-Identifier: Apache-2.0
/*
 * Replication over the datagram transports (udp, afxdp): after the
 * replication handshake (HELLO, AUTH asking for datagrams to a port,
 * ACCEPT) the same TCP connection becomes the repair plane's control
 * connection (src/transport/repair_*.c, through the public transport table)
 * and the data travels as UDP datagrams, NAK-repaired.
 *
 * Server side: a payload sender over a view of the blob, one descriptor
 * per gram, sequential from the client's offset; a gram is built only when
 * its bytes are below the watermark (src_ready), so a relay forwards while
 * it receives, like the TCP stream. The upstream always sends through a
 * kernel UDP socket: an AF_XDP socket on the queue the relay's own receiver
 * is bound to would be a second socket on one queue, which the kernel
 * refuses without a shared UMEM. "afxdp" is how a client receives.
 *
 * Client side: a payload receiver writing straight into the blob mapping
 * (out_mem), checking through on_exec that bytes arrive in order from the
 * watermark, which it advances.
 *
 * Both sides give the blob's token as the datagram key's pre-shared secret
 * (pfs/dgram_auth.h): the AUTH exchange proves the token only to the
 * server, and the token in the key means that an active man in the middle
 * of the connection, who does not hold it, cannot learn the datagram key
 * by swapping public keys either (the key confirmation fails).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "repl/blob_repl_int.h"
#include "pfs/log.h"
#include "pfs/netdev.h"
#include "pfs/xfer.h"
#include "pfs/xsk.h"

/* Payload bytes per gram. Each side holds a window of 128 grams (the
 * receiver's reassembly slots, each sender connection's copies for repair):
 * 16 MiB at 128 KiB, which a holder pod's memory limit must cover, and far
 * above a LAN's bandwidth-delay product. */
#define DGRAM_GRAM (128u << 10)

const char *repl_xport_str(uint8_t xport)
{
	return xport == REPL_XPORT_UDP ? "udp" : xport == REPL_XPORT_AFXDP ? "afxdp" : "tcp";
}

int repl_xport_parse(const char *s, uint8_t *xport)
{
	if (!strcmp(s, "tcp"))
		*xport = REPL_XPORT_TCP;
	else if (!strcmp(s, "udp"))
		*xport = REPL_XPORT_UDP;
	else if (!strcmp(s, "afxdp"))
		*xport = REPL_XPORT_AFXDP;
	else
		return -EINVAL;
	return 0;
}

/* The path MTU the connection @fd learned (IP_MTU works on a connected
 * TCP socket too), so datagrams fit the path the control took. 0: unknown. */
static uint32_t path_mtu(int fd, int family)
{
	int mtu = 0;
	socklen_t l = sizeof(mtu);

	if (family == AF_INET6 ? getsockopt(fd, IPPROTO_IPV6, IPV6_MTU, &mtu, &l) :
				 getsockopt(fd, IPPROTO_IP, IP_MTU, &mtu, &l))
		return 0;
	return mtu >= 576 && mtu <= 65535 ? (uint32_t)mtu : 0;
}

static int peer_addr(int fd, bool local, char *host, size_t n, int *family)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	const void *a;

	if (local ? getsockname(fd, (struct sockaddr *)&ss, &sl) :
		    getpeername(fd, (struct sockaddr *)&ss, &sl))
		return -errno;
	*family = ss.ss_family;
	a = ss.ss_family == AF_INET6 ? (const void *)&((struct sockaddr_in6 *)&ss)->sin6_addr :
				       (const void *)&((struct sockaddr_in *)&ss)->sin_addr;
	return inet_ntop(ss.ss_family, a, host, (socklen_t)n) ? 0 : -errno;
}

/* ---- server ---- */

/* The sender's src_ready: below the watermark yet? The fill's failure
 * message is what the client reports (ABORT carries it). */
static int src_ready(void *ctx, uint64_t end, char *why, size_t n)
{
	struct repl_dgram_src *src = ctx;
	uint64_t mark;
	int err;

	if (atomic_load(src->stop)) {
		snprintf(why, n, "the upstream is stopping");
		return -EINTR; /* not ABORT: the client goes to another upstream */
	}
	if (!src->progress || pfs_progress__mark(src->progress) >= end)
		return 0;
	err = pfs_progress__wait(src->progress, end - 1, 0, &mark, why, n);
	return err == -ETIMEDOUT ? -EAGAIN : err;
}

int repl_dgram_serve(int fd, const struct repl_frame *auth, struct repl_dgram_src *src,
		     uint64_t rate, int io_timeout_ms, struct pfs_xfer_result *r)
{
	const struct pfs_transport *t = pfs_transport_find("udp");
	struct pfs_blob *view = pfs_blob__view((uint8_t *)src->blob, src->size);
	char host[INET6_ADDRSTRLEN];
	int family, err;

	memset(r, 0, sizeof(*r));
	if (!view)
		return -ENOMEM;
	err = peer_addr(fd, false, host, sizeof(host), &family);
	if (!err && !t)
		err = -ENOTSUP;
	if (!err) {
		struct pfs_xfer_opts o = {
			.sz = sizeof(o),
			.host = host,
			.port = auth->data_port,
			.mode = PFS_MODE_PAYLOAD,
			.blob = view,
			/* Payload-mode receivers check no fingerprint, and computing
			 * one would read pages not filled yet. */
			.fingerprint = 1,
			.io_timeout_ms = io_timeout_ms,
			.send = { .sched = { .total_bytes = src->size - auth->offset,
					     .min_len = DGRAM_GRAM,
					     .max_len = DGRAM_GRAM,
					     .align = 1,
					     .pattern = PFS_PATTERN_SEQ,
					     .range_off = auth->offset,
					     .range_len = src->size - auth->offset },
				  .desc_per_gram = 1,
				  .gram_bytes = DGRAM_GRAM,
				  .rate_max = (double)rate,
				  .src_ready = src_ready,
				  .src_ctx = src },
			.recv = { .out_fd = -1 },
			.link = { .mtu = path_mtu(fd, family) },
			.embed = { .ctl_given = true,
				   .ctl_fd = fd,
				   .psk = src->psk,
				   .psk_len = src->psk_len },
		};

		err = pfs_xfer_send(t, &o, r);
		if (!err && r->verdict != PFS_VERDICT_OK)
			err = -EBADMSG;
	}
	pfs_blob__close(view);
	return err;
}

/* ---- client ---- */

/* The interface the kernel routes towards the upstream (@fd's peer): where
 * its datagrams come in, as the control connection's did. */
static int upstream_ifname(int fd, char *ifname)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	uint8_t hop[16];
	const void *a;
	int oif = 0, err;

	if (getpeername(fd, (struct sockaddr *)&ss, &sl))
		return -errno;
	a = ss.ss_family == AF_INET6 ? (const void *)&((struct sockaddr_in6 *)&ss)->sin6_addr :
				       (const void *)&((struct sockaddr_in *)&ss)->sin_addr;
	err = pfs_netdev_next_hop(ss.ss_family, a, hop, &oif);
	if (err)
		return err;
	return oif > 0 && if_indextoname((unsigned int)oif, ifname) ? 0 : -ENODEV;
}

int repl_dgram_fetch(int fd, const struct repl_dgram_sink *k, struct pfs_xfer_result *r)
{
	const struct pfs_transport *t =
		pfs_transport_find(k->xport == REPL_XPORT_AFXDP ? "afxdp" : "udp");
	char host[INET6_ADDRSTRLEN], ifname[IF_NAMESIZE] = "";
	int family, err;

	memset(r, 0, sizeof(*r));
	if (!t) {
		snprintf(r->error, sizeof(r->error), "this pfs was built without %s",
			 repl_xport_str(k->xport));
		return -ENOTSUP;
	}
	err = peer_addr(fd, true, host, sizeof(host), &family);
	if (err) {
		snprintf(r->error, sizeof(r->error), "getsockname: %s", strerror(-err));
		return err;
	}
	if (k->xport == REPL_XPORT_AFXDP && !k->ifname && (err = upstream_ifname(fd, ifname))) {
		snprintf(r->error, sizeof(r->error),
			 "no route towards the upstream names an interface (%s): give --fetch-if",
			 strerror(-err));
		return err;
	}
	struct pfs_xfer_opts o = {
		.sz = sizeof(o),
		.host = host,
		.port = k->data_port,
		.mode = PFS_MODE_PAYLOAD,
		.io_timeout_ms = k->io_timeout_ms,
		.recv = { .out_fd = -1,
			  .out_mem = k->blob,
			  .out_mem_size = k->size,
			  /* the destination decides, not the 64 GiB default */
			  .max_size = k->size,
			  .on_exec = k->on_exec,
			  .exec_ctx = k->exec_ctx },
		.link = { .ifname = k->xport == REPL_XPORT_AFXDP ?
					    (k->ifname ? k->ifname : ifname) :
					    NULL,
			  /* A holder's hugepage limit covers its blob only: no UMEM there. */
			  .umem_page = PFS_XSK_PAGE_4K,
			  .stop = k->stop,
			  .env = k->env },
		.embed = { .ctl_given = true, .ctl_fd = fd, .psk = k->psk, .psk_len = k->psk_len },
	};

	err = pfs_xfer_recv(t, &o, r);
	if (!err && r->verdict != PFS_VERDICT_OK) {
		snprintf(r->error, sizeof(r->error),
			 "integrity mismatch: upstream crc32c 0x%08x, received 0x%08x",
			 (uint32_t)r->peer_crc, (uint32_t)r->crc);
		err = -EBADMSG;
	}
	return err;
}
