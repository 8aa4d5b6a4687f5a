// SPDX-License-Identifier: Apache-2.0
/*
 * Pieces both ends of the datagram repair plane (udp and afxdp) use: the
 * non-blocking reader of the TCP control connection (one per side, owned by
 * that side's only thread), UDP socket creation with large buffers (bound
 * to --ifname when given), the interface MTU, and rate-limited logging of
 * dropped datagrams (nothing is logged per packet after the first few).
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pfs/dgram_auth.h"
#include "pfs/log.h"
#include "pfs/wire.h"
#include "wire/wire_le.h"
#include "dgram_io.h"
#include "repair.h"

int pfs_udp_ctl_next(struct pfs_udp_ctlin *c, const uint8_t **rec, size_t *len)
{
	for (;;) {
		size_t have = c->tail - c->head;
		const uint8_t *p = c->buf + c->head;
		ssize_t n;

		if (have >= 4) {
			uint32_t magic = pfs_wire_magic(p, have);
			size_t need = 0;

			if (magic == PFS_CTL_MAGIC) {
				need = PFS_CTL_LEN;
				/* ABORT: its reason follows, count bytes. */
				if (have >= PFS_CTL_LEN && p[5] == PFS_CTL_ABORT) {
					uint64_t text = get64(p + 24);

					if (text > PFS_CTL_ABORT_TEXT_MAX)
						return -EPROTO;
					need += text;
				}
			} else if (magic == PFS_UDP_REC_MAGIC) {
				struct pfs_udp_rec r;
				int err;

				if (have >= PFS_UDP_REC_LEN) {
					err = pfs_udp_rec_decode_hdr(p, have, &r);
					if (err)
						return -EPROTO;
					need = PFS_UDP_REC_LEN + pfs_udp_rec_body_len(&r);
				} else {
					need = PFS_UDP_REC_LEN;
				}
			} else {
				return -EPROTO;
			}
			if (have >= need) {
				*rec = p;
				*len = need;
				c->head += need;
				return 1;
			}
		}
		if (c->head == c->tail) {
			c->head = c->tail = 0;
		} else if (c->head > sizeof(c->buf) / 2) {
			memmove(c->buf, c->buf + c->head, c->tail - c->head);
			c->tail -= c->head;
			c->head = 0;
		}
		n = recv(c->fd, c->buf + c->tail, sizeof(c->buf) - c->tail, MSG_DONTWAIT);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return errno == EPIPE ? -ECONNRESET : -errno;
		}
		c->tail += n;
		*c->wire += n;
	}
}

int pfs_dgram_frag_hdr(struct pfs_dgram_io *io, const struct pfs_dgram_msg *m, uint32_t k,
		       uint32_t ts, uint8_t *hdr, const uint8_t **frag, uint32_t *len)
{
	uint32_t off = (m->frag + k) * m->frag_size;
	uint32_t fl = m->gram_len - off < m->frag_size ? m->gram_len - off : m->frag_size;
	struct pfs_udp_frag f = { .flags = m->repair ? PFS_UDP_F_REPAIR : 0,
				  .frag_len = (uint16_t)fl,
				  .seq = m->seq,
				  .gram_len = m->gram_len,
				  .frag_off = off,
				  .tsval = ts,
				  .pn = io->pn++ };

	pfs_udp_frag_encode(&f, hdr);
	*frag = m->gram + off;
	*len = fl;
	return pfs_dgram_auth__seal(io->auth, hdr, *frag, fl);
}

int pfs_udp_socket(int family, const char *ifname, const char **why)
{
	int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0), sz = UDP_SOCKBUF, got;
	socklen_t sl = sizeof(got);

	*why = NULL;
	if (fd < 0)
		return -errno;
	if (ifname && setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifname, strlen(ifname) + 1)) {
		int e = errno;

		close(fd);
		return -e;
	}
	/* FORCE needs CAP_NET_ADMIN; without it the sysctl caps (rmem_max) apply. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	if (!getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &got, &sl) && got < sz)
		*why = "socket buffers capped by net.core.rmem_max/wmem_max";
	return fd;
}

void pfs_udp_drop(struct pfs_udp_droplog *dl, int err, const char *what)
{
	double now = pfs_xfer_now();

	dl->n++;
	if (dl->n <= 3)
		pfs_warn("udp: dropped a %s datagram: %s", what, pfs_wire_strerror(err));
	else if (now - dl->last >= 1.0)
		pfs_warn("udp: %lu datagrams dropped so far (latest: %s, %s)", (unsigned long)dl->n,
			 what, pfs_wire_strerror(err));
	else
		return;
	dl->last = now;
}

int pfs_udp_if_mtu(const char *ifname)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFMTU, &ifr))
		err = -errno;
	close(fd);
	return err ? err : ifr.ifr_mtu;
}
