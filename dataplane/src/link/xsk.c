// SPDX-License-Identifier: Apache-2.0
/*
 * AF_XDP sockets over the raw kernel API (linux/if_xdp.h): no libxdp. One
 * struct pfs_xsk = one socket + one UMEM + four rings, owned by one worker
 * thread; nothing is shared between queues, so nothing locks.
 *
 * Rings (single producer, single consumer, shared with the kernel):
 *   fill  user -> kernel  empty UMEM frames for RX
 *   rx    kernel -> user  received frames
 *   tx    user -> kernel  frames to send
 *   comp  kernel -> user  sent frames, free again
 * Producer side: read the consumer index with acquire (the kernel is done
 * with the slots before we overwrite them), write descriptors, publish the
 * producer index with release (descriptors visible before the index).
 * Consumer side: read the producer index with acquire (descriptors visible
 * after it), read descriptors, publish the consumer index with release (our
 * reads done before the kernel reuses the slots). Cached copies of the far
 * index avoid touching the shared cache line on every call.
 *
 * Frame ownership: a UMEM frame is always in exactly one place: fill ring,
 * kernel RX, rx ring, the caller (between rx_burst and rx_release), the
 * fill stash, the TX free stack, tx ring/kernel TX, comp ring. The fill ring
 * is twice the RX frame count, because the kernel publishes its fill
 * consumer index lazily (a frame can already be in our hands while its old
 * fill slot still looks taken); if it still looks full, frames wait in the
 * stash and go in on the next rx_burst, so none is ever lost.
 *
 * Why not libxdp's xsk helpers: they are the same ~100 lines of ring code,
 * while linking libxdp pulls in its dispatcher and pinning logic, which does
 * not work on this kernel (MACHINE-NOTES) and that we do not want.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/capability.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "pfs/caps.h"
#include "pfs/log.h"
#include "pfs/xsk.h"
#include "xsk_err.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef SOL_XDP
#define SOL_XDP 283
#endif
#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB (21 << 26)
#endif
#define HUGE_2M (2UL << 20)
#define XDP_HEADROOM 256 /* XDP_PACKET_HEADROOM: what copy mode leaves in front */
#define PFS_XDP_MAX_TX_SKB_BUDGET 9 /* linux/if_xdp.h since 6.17 */
#ifndef PFS_XSK_TX_BUDGET
#define PFS_XSK_TX_BUDGET 256 /* frames per copy-mode sendto() we ask for */
#endif

struct ring {
	uint32_t *producer, *consumer, *flags;
	void *descs; /* struct xdp_desc[] (rx/tx) or __u64[] (fill/comp) */
	uint32_t mask, size;
	uint32_t cached_prod, cached_cons;
	void *map;
	size_t map_len;
};

struct pfs_xsk {
	struct ring fill, comp, rx, tx;
	int fd;
	uint32_t queue;
	int ifindex;
	uint32_t mtu;
	struct pfs_xdp *xdp;
	uint8_t *umem;
	size_t umem_len;
	uint32_t frame_size, nframes, rx_frames;
	uint64_t *free_tx; /* stack of free TX frame addresses */
	uint32_t nfree;
	uint64_t *stash; /* RX frames waiting for room in the fill ring */
	uint32_t nstash;
	uint64_t resv[PFS_XSK_BATCH]; /* TX frames between tx_reserve and tx_submit */
	uint32_t nresv;
	uint32_t tx_outstanding; /* in the tx ring, kernel or comp ring */
	uint32_t parse_flags;
	uint16_t rx_port;
	bool have_peer, zerocopy, huge, registered;
	uint32_t tx_budget; /* copy-mode frames per kick we got, 0: kernel default */
	struct pfs_frame_tmpl tmpl;
	struct pfs_xsk_stats st;
	char ifname[IF_NAMESIZE];
	char bind_reason[200];
	char page_reason[200];
} __attribute__((aligned(64)));

/* ---- rings ---- */

/* Free slots of a producer ring, refreshing the consumer if short. */
static inline uint32_t prod_free(struct ring *r, uint32_t want)
{
	uint32_t free = r->size - (r->cached_prod - r->cached_cons);

	if (free >= want)
		return free;
	/* acquire: the kernel finished reading the slots it consumed */
	r->cached_cons = __atomic_load_n(r->consumer, __ATOMIC_ACQUIRE);
	return r->size - (r->cached_prod - r->cached_cons);
}

static inline void prod_submit(struct ring *r, uint32_t n)
{
	r->cached_prod += n;
	/* release: descriptors written before the kernel sees the new index */
	__atomic_store_n(r->producer, r->cached_prod, __ATOMIC_RELEASE);
}

/* Entries ready in a consumer ring (up to @want), refreshing if empty. */
static inline uint32_t cons_peek(struct ring *r, uint32_t want)
{
	uint32_t avail = r->cached_prod - r->cached_cons;

	if (!avail) {
		/* acquire: the kernel's descriptor writes are visible after this */
		r->cached_prod = __atomic_load_n(r->producer, __ATOMIC_ACQUIRE);
		avail = r->cached_prod - r->cached_cons;
	}
	return avail < want ? avail : want;
}

static inline void cons_release(struct ring *r, uint32_t n)
{
	r->cached_cons += n;
	/* release: our reads of the descriptors happen before the slots are reused */
	__atomic_store_n(r->consumer, r->cached_cons, __ATOMIC_RELEASE);
}

static inline bool needs_wakeup(const struct ring *r)
{
	return __atomic_load_n(r->flags, __ATOMIC_RELAXED) & XDP_RING_NEED_WAKEUP;
}

static int ring_map(int fd, struct ring *r, const struct xdp_ring_offset *off, uint32_t size,
		    size_t desc_sz, off_t pgoff)
{
	r->map_len = off->desc + size * desc_sz;
	r->map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
		      pgoff);
	if (r->map == MAP_FAILED) {
		r->map = NULL;
		return -errno;
	}
	r->producer = (uint32_t *)((uint8_t *)r->map + off->producer);
	r->consumer = (uint32_t *)((uint8_t *)r->map + off->consumer);
	r->flags = (uint32_t *)((uint8_t *)r->map + off->flags);
	r->descs = (uint8_t *)r->map + off->desc;
	r->size = size;
	r->mask = size - 1;
	r->cached_prod = *r->producer;
	r->cached_cons = *r->consumer;
	return 0;
}

static void ring_unmap(struct ring *r)
{
	if (r->map)
		munmap(r->map, r->map_len);
	memset(r, 0, sizeof(*r));
}

/* ---- UMEM memory ---- */

static uint64_t hugepages_free(void)
{
	char line[128];
	uint64_t v = 0;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "HugePages_Free: %lu", &v) == 1)
			break;
	fclose(f);
	return v;
}

static int umem_alloc(struct pfs_xsk *x, size_t len, enum pfs_xsk_page page)
{
	if (page != PFS_XSK_PAGE_4K) {
		size_t hl = (len + HUGE_2M - 1) & ~(HUGE_2M - 1);

		x->umem = mmap(NULL, hl, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_HUGE_2MB |
				       MAP_POPULATE,
			       -1, 0);
		if (x->umem != MAP_FAILED) {
			x->umem_len = hl;
			x->huge = true;
			return 0;
		}
		snprintf(x->page_reason, sizeof(x->page_reason),
			 "no 2 MiB hugepages for a %zu KiB UMEM (HugePages_Free=%lu: %s); "
			 "reserve vm.nr_hugepages or the pod's hugepages-2Mi",
			 hl >> 10, (unsigned long)hugepages_free(), strerror(errno));
		if (page == PFS_XSK_PAGE_2M) {
			pfs_xsk_errorf("%s", x->page_reason);
			x->umem = NULL;
			return -ENOMEM;
		}
		pfs_info("queue %u: %s; UMEM on 4 KiB pages", x->queue, x->page_reason);
	}
	x->umem = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (x->umem == MAP_FAILED) {
		x->umem = NULL;
		pfs_xsk_errorf("cannot map a %zu-byte UMEM: %s", len, strerror(errno));
		return -ENOMEM;
	}
	x->umem_len = len;
	return 0;
}

/* ---- socket ---- */

static void socket_close(struct pfs_xsk *x)
{
	ring_unmap(&x->rx);
	ring_unmap(&x->tx);
	ring_unmap(&x->fill);
	ring_unmap(&x->comp);
	if (x->fd >= 0)
		close(x->fd);
	x->fd = -1;
}

/* Socket, UMEM registration, rings. 0 or -errno with the reason set. */
static int socket_open(struct pfs_xsk *x)
{
	uint32_t rx_n = x->rx_frames ? 2 * x->rx_frames : 64; /* fill ring, see top */
	uint32_t tx_n = x->nframes - x->rx_frames;
	struct xdp_umem_reg reg;
	struct xdp_mmap_offsets off;
	socklen_t ol = sizeof(off);
	int rc;

	x->fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (x->fd < 0) {
		rc = -errno;
		if (rc == -EPERM)
			pfs_xsk_errorf(
				"creating an AF_XDP socket was refused: missing CAP_NET_RAW");
		else
			pfs_xsk_errorf("cannot create an AF_XDP socket: %s", strerror(-rc));
		return rc;
	}
	memset(&reg, 0, sizeof(reg));
	reg.addr = (uintptr_t)x->umem;
	reg.len = (uint64_t)x->nframes * x->frame_size;
	reg.chunk_size = x->frame_size;
	if (setsockopt(x->fd, SOL_XDP, XDP_UMEM_REG, &reg, sizeof(reg))) {
		rc = -errno;
		if (rc == -ENOBUFS || rc == -EPERM || rc == -ENOMEM)
			pfs_xsk_errorf("registering a %llu KiB UMEM failed (%s): it is over the "
				       "memlock limit (RLIMIT_MEMLOCK, summed over this user); "
				       "add CAP_IPC_LOCK or use fewer --frames/--queues",
				       (unsigned long long)reg.len >> 10, strerror(-rc));
		else
			pfs_xsk_errorf("XDP_UMEM_REG: %s", strerror(-rc));
		goto out_close;
	}
	if (setsockopt(x->fd, SOL_XDP, XDP_UMEM_FILL_RING, &rx_n, sizeof(rx_n)) ||
	    setsockopt(x->fd, SOL_XDP, XDP_UMEM_COMPLETION_RING, &tx_n, sizeof(tx_n)) ||
	    setsockopt(x->fd, SOL_XDP, XDP_TX_RING, &tx_n, sizeof(tx_n)) ||
	    (x->rx_frames &&
	     setsockopt(x->fd, SOL_XDP, XDP_RX_RING, &x->rx_frames, sizeof(x->rx_frames)))) {
		rc = -errno;
		pfs_xsk_errorf("AF_XDP ring setup: %s", strerror(-rc));
		goto out_close;
	}
	/* Copy mode sends at most this many frames per sendto() (32 by
	 * default); kernels >= 6.17 let a socket raise it once its TX ring
	 * exists. Older kernels refuse the option: harmless. */
	{
		uint32_t budget = PFS_XSK_TX_BUDGET < tx_n ? PFS_XSK_TX_BUDGET : tx_n;

		x->tx_budget = setsockopt(x->fd, SOL_XDP, PFS_XDP_MAX_TX_SKB_BUDGET, &budget,
					  sizeof(budget)) ?
				       0 :
				       budget;
	}
	if (getsockopt(x->fd, SOL_XDP, XDP_MMAP_OFFSETS, &off, &ol)) {
		rc = -errno;
		pfs_xsk_errorf("XDP_MMAP_OFFSETS: %s", strerror(-rc));
		goto out_close;
	}
	rc = ring_map(x->fd, &x->fill, &off.fr, rx_n, sizeof(uint64_t), XDP_UMEM_PGOFF_FILL_RING);
	if (!rc)
		rc = ring_map(x->fd, &x->comp, &off.cr, tx_n, sizeof(uint64_t),
			      XDP_UMEM_PGOFF_COMPLETION_RING);
	if (!rc)
		rc = ring_map(x->fd, &x->tx, &off.tx, tx_n, sizeof(struct xdp_desc),
			      XDP_PGOFF_TX_RING);
	if (!rc && x->rx_frames)
		rc = ring_map(x->fd, &x->rx, &off.rx, x->rx_frames, sizeof(struct xdp_desc),
			      XDP_PGOFF_RX_RING);
	if (rc) {
		pfs_xsk_errorf("mapping the AF_XDP rings: %s", strerror(-rc));
		goto out_close;
	}
	return 0;

out_close:
	socket_close(x);
	return rc;
}

/* Bind with @flags. A failed bind leaves the socket (and its registered
 * UMEM) ready for another try, so zero-copy falls back to copy on the same
 * socket: closing it and registering a second UMEM would charge the memlock
 * budget twice until the kernel's deferred release of the first (seen here:
 * a second process of the same user then failed with ENOBUFS).
 * The kernel also releases a closed socket's buffer pool from its queue in
 * a workqueue, so a run that starts right after another one closed (or
 * failed) can find the queue still taken: EBUSY for a few ms (seen here
 * after a run that failed half-way). Retried for up to 2 s. */
static int do_bind(struct pfs_xsk *x, uint16_t flags)
{
	struct sockaddr_xdp sa;
	int rc = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sxdp_family = AF_XDP;
	sa.sxdp_ifindex = (uint32_t)x->ifindex;
	sa.sxdp_queue_id = x->queue;
	sa.sxdp_flags = flags | XDP_USE_NEED_WAKEUP;
	for (int i = 0; i < 100; i++) {
		rc = bind(x->fd, (struct sockaddr *)&sa, sizeof(sa)) ? -errno : 0;
		if (rc != -EBUSY)
			break;
		usleep(20000);
	}
	return rc;
}

static void bind_error(struct pfs_xsk *x, int rc, const char *mode)
{
	if (rc == -EINVAL)
		pfs_xsk_errorf("binding an AF_XDP socket (%s) to %s queue %u: %s (does the queue "
			       "exist? see ethtool -l %s)",
			       mode, x->ifname, x->queue, strerror(-rc), x->ifname);
	else if (rc == -EBUSY)
		pfs_xsk_errorf("%s queue %u already has an AF_XDP socket (EBUSY for 2 s: another "
			       "process uses it)",
			       x->ifname, x->queue);
	else if (rc == -EPERM)
		pfs_xsk_errorf("binding an AF_XDP socket was refused: missing CAP_NET_RAW");
	else
		pfs_xsk_errorf("binding an AF_XDP socket (%s) to %s queue %u: %s", mode, x->ifname,
			       x->queue, strerror(-rc));
}

static uint32_t get_mtu(const char *ifname)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	uint32_t mtu = 1500;

	if (fd < 0)
		return mtu;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (!ioctl(fd, SIOCGIFMTU, &ifr))
		mtu = (uint32_t)ifr.ifr_mtu;
	close(fd);
	return mtu;
}

struct pfs_xsk *pfs_xsk__create(const struct pfs_xsk_opts *o)
{
	struct xdp_options xo;
	socklen_t xol = sizeof(xo);
	struct pfs_xsk *x;
	uint64_t caps;
	struct rlimit rl;
	char why[300];
	int rc;

	pfs_xsk_error_clear();
	if (!o || o->sz < sizeof(*o) || !o->ifname) {
		pfs_xsk_errorf("xsk: bad options");
		errno = EINVAL;
		return NULL;
	}
	if (pfs_caps_require(PFS_CAP(CAP_NET_RAW), "open AF_XDP sockets", why, sizeof(why))) {
		pfs_xsk_errorf("%s", why);
		errno = EPERM;
		return NULL;
	}
	x = aligned_alloc(64, sizeof(*x));
	if (!x) {
		errno = ENOMEM;
		return NULL;
	}
	memset(x, 0, sizeof(*x));
	x->fd = -1;
	snprintf(x->ifname, sizeof(x->ifname), "%s", o->ifname);
	x->queue = o->queue;
	x->xdp = o->xdp;
	x->ifindex = (int)if_nametoindex(o->ifname);
	if (!x->ifindex) {
		pfs_xsk_errorf("no interface '%s' in this network namespace", o->ifname);
		rc = -ENODEV;
		goto out_free;
	}
	x->mtu = get_mtu(o->ifname);
	x->nframes = o->frames ? o->frames : 2048;
	x->frame_size = o->frame_size ? o->frame_size : (x->mtu > 1500 ? 4096 : 2048);
	if (x->nframes < 64 || (x->nframes & (x->nframes - 1)) ||
	    (x->frame_size != 2048 && x->frame_size != 4096)) {
		pfs_xsk_errorf(
			"xsk: frames must be a power of 2 >= 64 and frame size 2048 or 4096");
		rc = -EINVAL;
		goto out_free;
	}
	x->rx_frames = o->xdp ? x->nframes / 2 : 0;
	x->parse_flags = o->verify_csum ? PFS_FRAME_VERIFY_CSUM : 0;
	x->rx_port = o->xdp ? pfs_xdp__port(o->xdp) : 0;

	/* The kernel charges the UMEM to RLIMIT_MEMLOCK unless CAP_IPC_LOCK. */
	caps = pfs_caps_effective();
	if (!(caps & PFS_CAP(CAP_IPC_LOCK)) && !getrlimit(RLIMIT_MEMLOCK, &rl) &&
	    rl.rlim_cur != RLIM_INFINITY &&
	    (uint64_t)x->nframes * x->frame_size > (uint64_t)rl.rlim_cur) {
		pfs_xsk_errorf("missing CAP_IPC_LOCK: a %u KiB UMEM (%u frames of %u) is over the "
			       "memlock limit of %llu KiB; add CAP_IPC_LOCK or use fewer --frames",
			       (x->nframes * x->frame_size) >> 10, x->nframes, x->frame_size,
			       (unsigned long long)rl.rlim_cur >> 10);
		rc = -EPERM;
		goto out_free;
	}
	rc = umem_alloc(x, (size_t)x->nframes * x->frame_size, o->page);
	if (rc)
		goto out_free;
	if (o->page == PFS_XSK_PAGE_4K)
		x->page_reason[0] = '\0';

	rc = socket_open(x);
	if (rc)
		goto out_unmap;
	if (o->bind == PFS_XSK_BIND_COPY) {
		rc = do_bind(x, XDP_COPY);
		if (rc)
			bind_error(x, rc, "copy");
	} else {
		rc = do_bind(x, XDP_ZEROCOPY);
		if (rc == -EOPNOTSUPP || rc == -EINVAL || rc == -EPROTONOSUPPORT) {
			snprintf(x->bind_reason, sizeof(x->bind_reason),
				 "zero-copy bind on %s queue %u: %s", x->ifname, x->queue,
				 strerror(-rc));
			if (o->bind == PFS_XSK_BIND_ZEROCOPY) {
				pfs_xsk_errorf("%s (the driver does not support AF_XDP zero-copy)",
					       x->bind_reason);
				rc = -EOPNOTSUPP;
				goto out_close;
			}
			pfs_debug("%s; using copy mode", x->bind_reason);
			rc = do_bind(x, XDP_COPY);
			if (rc)
				bind_error(x, rc, "copy");
		} else if (rc) {
			bind_error(x, rc, "zero-copy");
		}
	}
	if (rc)
		goto out_close;
	if (!getsockopt(x->fd, SOL_XDP, XDP_OPTIONS, &xo, &xol))
		x->zerocopy = xo.flags & XDP_OPTIONS_ZEROCOPY;

	/* Frames [0, rx_frames) to the fill ring, the rest to the TX pool. */
	x->free_tx = calloc(x->nframes - x->rx_frames, sizeof(*x->free_tx));
	x->stash = calloc(x->rx_frames ? x->rx_frames : 1, sizeof(*x->stash));
	if (!x->free_tx || !x->stash) {
		rc = -ENOMEM;
		goto out_close;
	}
	for (uint32_t i = x->nframes; i-- > x->rx_frames;)
		x->free_tx[x->nfree++] = (uint64_t)i * x->frame_size;
	if (x->rx_frames) {
		uint64_t *fq = x->fill.descs;

		/* the ring is empty and twice rx_frames big: no need to check room */
		for (uint32_t i = 0; i < x->rx_frames; i++)
			fq[(x->fill.cached_prod + i) & x->fill.mask] = (uint64_t)i * x->frame_size;
		prod_submit(&x->fill, x->rx_frames);
	}
	x->tmpl.flags = o->frame_flags; /* kept by set_peer */
	if (o->peer) {
		rc = pfs_xsk__set_peer(x, o->peer);
		if (rc) {
			pfs_xsk_errorf("xsk: bad peer address");
			goto out_free_tx;
		}
	}
	if (x->xdp) {
		rc = pfs_xdp__add_xsk(x->xdp, x->queue, x->fd);
		if (rc) {
			pfs_xsk_errorf("registering queue %u in the XSKMAP: %s", x->queue,
				       strerror(-rc));
			goto out_free_tx;
		}
		x->registered = true;
	}
	pfs_debug("%s queue %u: AF_XDP %s, %u frames of %u on %s pages", x->ifname, x->queue,
		  x->zerocopy ? "zero-copy" : "copy", x->nframes, x->frame_size,
		  x->huge ? "2 MiB" : "4 KiB");
	return x;

out_free_tx:
	free(x->free_tx);
	free(x->stash);
out_close:
	socket_close(x);
out_unmap:
	munmap(x->umem, x->umem_len);
out_free:
	free(x);
	errno = -rc;
	return NULL;
}

void pfs_xsk__close(struct pfs_xsk *x)
{
	if (!x)
		return;
	if (x->registered)
		pfs_xdp__del_xsk(x->xdp, x->queue);
	socket_close(x);
	munmap(x->umem, x->umem_len);
	free(x->free_tx);
	free(x->stash);
	free(x);
}

int pfs_xsk__set_peer(struct pfs_xsk *x, const struct pfs_frame_addr *peer)
{
	struct pfs_frame_tmpl t;
	int rc;

	if (x->nresv)
		return -EBUSY; /* reserved payloads sit behind the old header */
	rc = pfs_frame_tmpl_init(&t, peer, x->tmpl.flags);
	if (rc)
		return rc;
	x->tmpl = t;
	x->have_peer = true;
	return 0;
}

/* ---- TX ---- */

/* Move completed TX frames back to the free stack. */
static void tx_reclaim(struct pfs_xsk *x)
{
	uint32_t n = cons_peek(&x->comp, x->tx_outstanding);
	const uint64_t *cq = x->comp.descs;

	for (uint32_t i = 0; i < n; i++)
		x->free_tx[x->nfree++] = cq[(x->comp.cached_cons + i) & x->comp.mask];
	if (n) {
		cons_release(&x->comp, n);
		x->tx_outstanding -= n;
		x->st.tx_completed += n;
	}
}

static void tx_kick(struct pfs_xsk *x)
{
	/* Copy mode always asks for a wakeup: sendto() is what transmits. */
	if (!needs_wakeup(&x->tx))
		return;
	x->st.tx_kicks++;
	if (sendto(x->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0 && errno != EAGAIN &&
	    errno != EBUSY && errno != ENOBUFS && errno != ENETDOWN)
		pfs_debug("queue %u: TX kick: %s", x->queue, strerror(errno));
}

int pfs_xsk__tx_reserve(struct pfs_xsk *x, struct pfs_xsk_txslot *slots, unsigned int n)
{
	uint32_t cap = pfs_xsk__max_payload(x), room;

	if (!x->have_peer)
		return -ENOTCONN;
	if (x->nresv)
		return -EBUSY;
	if (x->tx_outstanding)
		tx_reclaim(x);
	/* peek (free frames) -> reserve (tx slots); process and submit follow
	 * in pfs_xsk__tx_submit */
	if (n > PFS_XSK_BATCH)
		n = PFS_XSK_BATCH;
	if (n > x->nfree)
		n = x->nfree;
	room = prod_free(&x->tx, n);
	if (n > room)
		n = room;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t addr = x->free_tx[--x->nfree];

		x->resv[i] = addr;
		slots[i] = (struct pfs_xsk_txslot){ x->umem + addr + x->tmpl.hlen, cap };
	}
	x->nresv = n;
	if (!n) {
		x->st.tx_ring_full++;
		tx_kick(x); /* a full ring drains only by kicks (copy mode) */
	}
	return (int)n;
}

int pfs_xsk__tx_submit(struct pfs_xsk *x, const uint32_t *lens, unsigned int m)
{
	struct xdp_desc *d = x->tx.descs;
	uint32_t cap = pfs_xsk__max_payload(x);

	if (m > x->nresv)
		return -EINVAL;
	for (uint32_t i = 0; i < m; i++)
		if (lens[i] > cap)
			return -EMSGSIZE; /* nothing submitted, reservation kept */
	for (uint32_t i = 0; i < m; i++) {
		uint64_t addr = x->resv[i];
		/* the payload is in place: only the header is written */
		int len = pfs_frame_build(&x->tmpl, x->umem + addr, x->frame_size, NULL, lens[i]);

		d[(x->tx.cached_prod + i) & x->tx.mask] =
			(struct xdp_desc){ .addr = addr, .len = (uint32_t)len, .options = 0 };
		x->st.tx_bytes += (uint64_t)len;
	}
	for (uint32_t i = x->nresv; i-- > m;) /* unused: back on the free stack */
		x->free_tx[x->nfree++] = x->resv[i];
	x->nresv = 0;
	if (m) {
		prod_submit(&x->tx, m);
		x->tx_outstanding += m;
		x->st.tx_frames += m;
	}
	tx_kick(x);
	return (int)m;
}

int pfs_xsk__tx_burst(struct pfs_xsk *x, const struct iovec *p, unsigned int n)
{
	struct pfs_xsk_txslot slot[PFS_XSK_BATCH];
	uint32_t lens[PFS_XSK_BATCH];
	unsigned int m = 0;
	int k;

	if (n && p[0].iov_len > pfs_xsk__max_payload(x))
		return x->have_peer ? -EMSGSIZE : -ENOTCONN;
	k = pfs_xsk__tx_reserve(x, slot, n);
	if (k <= 0)
		return k;
	for (; m < (unsigned int)k && p[m].iov_len <= slot[m].cap; m++) {
		memcpy(slot[m].payload, p[m].iov_base, p[m].iov_len);
		lens[m] = (uint32_t)p[m].iov_len;
	}
	return pfs_xsk__tx_submit(x, lens, m);
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int pfs_xsk__tx_drain(struct pfs_xsk *x, int timeout_ms)
{
	double end = now_ms() + timeout_ms;

	while (x->tx_outstanding) {
		tx_reclaim(x);
		if (!x->tx_outstanding)
			break;
		if (now_ms() > end)
			return -ETIMEDOUT;
		x->st.tx_kicks++;
		(void)sendto(x->fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
		usleep(100);
	}
	return 0;
}

/* ---- RX ---- */

/* Put up to @n frames in the fill ring (peek room -> write -> submit);
 * returns how many went in. */
static uint32_t fill_put(struct pfs_xsk *x, const uint64_t *addr, uint32_t n)
{
	uint64_t *fq = x->fill.descs;
	uint32_t room = prod_free(&x->fill, n);

	if (n > room)
		n = room;
	for (uint32_t i = 0; i < n; i++)
		fq[(x->fill.cached_prod + i) & x->fill.mask] = addr[i];
	if (n)
		prod_submit(&x->fill, n);
	return n;
}

/* Give frames back: the stash first (oldest), then @addr; whatever finds
 * no room waits in the stash (it holds every RX frame, so it cannot
 * overflow). */
static void fill_frames(struct pfs_xsk *x, const uint64_t *addr, uint32_t n)
{
	uint32_t k;

	if (x->nstash) {
		k = fill_put(x, x->stash, x->nstash);
		memmove(x->stash, x->stash + k, (x->nstash - k) * sizeof(*x->stash));
		x->nstash -= k;
	}
	if (!n)
		return;
	k = x->nstash ? 0 : fill_put(x, addr, n);
	memcpy(x->stash + x->nstash, addr + k, (n - k) * sizeof(*addr));
	x->nstash += n - k;
	x->st.fill_stashed += n - k;
}

int pfs_xsk__rx_burst(struct pfs_xsk *x, struct pfs_dgram *out, unsigned int n)
{
	const struct xdp_desc *d = x->rx.descs;
	uint64_t bad[PFS_XSK_BATCH];
	uint32_t got, k = 0, nbad = 0;

	if (!x->rx_frames)
		return 0;
	if (n > PFS_XSK_BATCH)
		n = PFS_XSK_BATCH;
	if (x->nstash)
		fill_frames(x, NULL, 0);
	got = cons_peek(&x->rx, n);
	if (!got) {
		/* The driver may wait for a syscall before it uses new fill entries. */
		if (needs_wakeup(&x->fill)) {
			x->st.rx_kicks++;
			(void)recvfrom(x->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
		}
		return 0;
	}
	for (uint32_t i = 0; i < got; i++) {
		const struct xdp_desc *e = &d[(x->rx.cached_cons + i) & x->rx.mask];
		uint64_t base = e->addr & ~(uint64_t)(x->frame_size - 1);
		const uint8_t *f = x->umem + e->addr;
		struct pfs_frame_info fi;

		if (e->addr + e->len > x->umem_len ||
		    pfs_frame_parse(f, e->len, x->rx_port, x->parse_flags, &fi)) {
			bad[nbad++] = base;
			continue;
		}
		out[k] = (struct pfs_dgram){ .data = f + fi.payload_off,
					     .len = fi.payload_len,
					     .payload_off = fi.payload_off,
					     .queue = (uint16_t)x->queue,
					     .frame = base };
		x->st.rx_bytes += fi.payload_len;
		k++;
	}
	if (nbad) {
		fill_frames(x, bad, nbad);
		x->st.rx_bad += nbad;
	}
	cons_release(&x->rx, got);
	x->st.rx_frames += k;
	return (int)k;
}

void pfs_xsk__rx_release(struct pfs_xsk *x, const struct pfs_dgram *d, unsigned int n)
{
	uint64_t a[PFS_XSK_BATCH];

	while (n) {
		uint32_t m = n > PFS_XSK_BATCH ? PFS_XSK_BATCH : n;

		for (uint32_t i = 0; i < m; i++)
			a[i] = d[i].frame;
		fill_frames(x, a, m);
		d += m;
		n -= m;
	}
}

int pfs_xsk__wait(struct pfs_xsk *x, int timeout_ms)
{
	struct pollfd p = { .fd = x->fd, .events = POLLIN };
	int rc = poll(&p, 1, timeout_ms);

	if (rc < 0)
		return -errno;
	return rc > 0;
}

int pfs_xsk__reply_addr(const struct pfs_dgram *d, struct pfs_frame_addr *a)
{
	struct pfs_frame_info fi;
	const uint8_t *f = d->data - d->payload_off;

	if (pfs_frame_parse(f, (size_t)d->payload_off + d->len, 0, 0, &fi))
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	memcpy(a->src_mac, fi.dst_mac, 6);
	memcpy(a->dst_mac, fi.src_mac, 6);
	a->vlan = fi.vlan;
	a->family = fi.family;
	memcpy(a->src_ip, fi.dst_ip, 16);
	memcpy(a->dst_ip, fi.src_ip, 16);
	a->src_port = fi.dst_port;
	a->dst_port = fi.src_port;
	return 0;
}

/* ---- accessors ---- */

int pfs_xsk__fd(const struct pfs_xsk *x)
{
	return x->fd;
}
uint32_t pfs_xsk__queue(const struct pfs_xsk *x)
{
	return x->queue;
}
bool pfs_xsk__zerocopy(const struct pfs_xsk *x)
{
	return x->zerocopy;
}
bool pfs_xsk__hugepages(const struct pfs_xsk *x)
{
	return x->huge;
}
uint64_t pfs_xsk__umem_bytes(const struct pfs_xsk *x)
{
	return x->umem_len;
}

const char *pfs_xsk__bind_reason(const struct pfs_xsk *x)
{
	return x->zerocopy || !x->bind_reason[0] ? NULL : x->bind_reason;
}

const char *pfs_xsk__page_reason(const struct pfs_xsk *x)
{
	return x->huge || !x->page_reason[0] ? NULL : x->page_reason;
}

uint32_t pfs_xsk__max_payload(const struct pfs_xsk *x)
{
	uint32_t l3 = x->tmpl.l3 ? x->tmpl.l3 : PFS_ETH_HLEN;
	uint32_t ipudp = x->tmpl.hlen ? x->tmpl.hlen - l3 : 48; /* IPv6 + UDP until known */
	uint32_t by_mtu = x->mtu > ipudp ? x->mtu - ipudp : 0;
	uint32_t by_frame = x->frame_size - XDP_HEADROOM - l3 - ipudp;

	return by_mtu < by_frame ? by_mtu : by_frame;
}

void pfs_xsk__stats(const struct pfs_xsk *x, struct pfs_xsk_stats *s)
{
	struct xdp_statistics ks;
	socklen_t l = sizeof(ks);

	*s = x->st;
	memset(&ks, 0, sizeof(ks));
	if (!getsockopt(x->fd, SOL_XDP, XDP_STATISTICS, &ks, &l)) {
		s->k_rx_dropped = ks.rx_dropped;
		s->k_rx_invalid = ks.rx_invalid_descs;
		s->k_tx_invalid = ks.tx_invalid_descs;
		s->k_rx_ring_full = ks.rx_ring_full;
		s->k_fill_empty = ks.rx_fill_ring_empty_descs;
		s->k_tx_ring_empty = ks.tx_ring_empty_descs;
	}
}
