/* SPDX-License-Identifier: Apache-2.0 */
/* Our XDP program on one interface: load (embedded libbpf skeleton of
 * bpf/pfs_xdp.bpf.c), attach native or generic, register AF_XDP sockets in
 * its XSKMAP, read its counters, detach. One pfs_xdp per interface, owned by
 * the control thread; the program redirects UDP to one destination port and
 * passes everything else to the kernel. */
#ifndef PFS_XDP_H
#define PFS_XDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum pfs_xdp_attach {
	PFS_XDP_AUTO = 0, /* native, else generic (the reason is reported) */
	PFS_XDP_NATIVE, /* driver mode only */
	PFS_XDP_GENERIC, /* skb mode only */
};

/* "auto" | "native" | "generic" (the --attach values): 0 or -1. Inline so
 * builds without the XDP code (arm64 cross build) can still parse it. */
static inline int pfs_xdp_attach_parse(const char *s, enum pfs_xdp_attach *m)
{
	static const char *const names[] = { "auto", "native", "generic" };

	for (int i = 0; i < 3; i++)
		if (!strcmp(s, names[i])) {
			*m = (enum pfs_xdp_attach)i;
			return 0;
		}
	return -1;
}

struct pfs_xdp_opts {
	size_t sz; /* sizeof(struct pfs_xdp_opts) */
	const char *ifname;
	uint16_t port; /* UDP destination port to redirect, host order */
	enum pfs_xdp_attach attach;
};

struct pfs_xdp_counters {
	uint64_t redirected; /* to an AF_XDP socket */
	uint64_t passed; /* not ours, to the kernel */
	uint64_t malformed; /* truncated headers, to the kernel */
	uint64_t no_xsk; /* ours but no socket on that queue, to the kernel */
};

struct pfs_xdp;

/* pfs_xdp__attach - load and attach the program to @o->ifname. A program of
 * ours left attached by a crashed run is replaced (logged); a foreign program
 * is not touched. Returns NULL with errno and the reason in
 * pfs_xsk_last_error():
 *   EPERM   a capability is missing (CAP_BPF, CAP_NET_ADMIN, CAP_NET_RAW; named)
 *   ENODEV  no such interface
 *   EBUSY   another XDP program is attached
 *   EOPNOTSUPP / EINVAL / ERANGE  the mode asked for cannot attach (the
 *           kernel's reason, e.g. veth peer MTU too large for native XDP)
 *   EINVAL  bad options */
struct pfs_xdp *pfs_xdp__attach(const struct pfs_xdp_opts *o);

/* pfs_xdp__add_xsk - steer @queue's frames to socket @fd. 0 or -errno
 * (E2BIG queue >= PFS_XDP_MAX_QUEUES). */
int pfs_xdp__add_xsk(struct pfs_xdp *x, uint32_t queue, int fd);
/* pfs_xdp__del_xsk - stop steering @queue (frames pass to the kernel). */
int pfs_xdp__del_xsk(struct pfs_xdp *x, uint32_t queue);

/* pfs_xdp__counters - the program's counters summed over CPUs. 0 or -errno. */
int pfs_xdp__counters(const struct pfs_xdp *x, struct pfs_xdp_counters *c);

bool pfs_xdp__native(const struct pfs_xdp *x); /* driver mode obtained */
const char *pfs_xdp__mode_str(const struct pfs_xdp *x); /* "native" | "generic" */
/* Why native was not obtained (auto mode), NULL when it was. */
const char *pfs_xdp__fallback_reason(const struct pfs_xdp *x);
uint32_t pfs_xdp__prog_id(const struct pfs_xdp *x);
/* Program id of the stale program replaced at attach, 0 if none. */
uint32_t pfs_xdp__replaced_id(const struct pfs_xdp *x);
int pfs_xdp__ifindex(const struct pfs_xdp *x);
uint16_t pfs_xdp__port(const struct pfs_xdp *x);

/* pfs_xdp__close - detach (only if the attached program is still ours) and
 * free. NULL is a no-op. */
void pfs_xdp__close(struct pfs_xdp *x);

/* pfs_xdp_detach_stale - remove a program of ours from @ifname if one is
 * attached (what a crashed run left). 1 removed, 0 none, -errno (EBUSY: a
 * foreign program). */
int pfs_xdp_detach_stale(const char *ifname);

/* One link that had an XDP program when pfs_xdp_sweep looked. */
struct pfs_xdp_swept {
	char ifname[16]; /* IF_NAMESIZE */
	uint32_t id; /* the program's id */
	char name[16]; /* its name, "" when unreadable (no CAP_SYS_ADMIN) */
	const char *mode; /* "native" | "generic", NULL when not read */
	int result; /* 1 removed (ours); -EBUSY left (not ours, or name
			     * unreadable); other -errno a failed query or detach */
};

/* pfs_xdp_sweep - remove every program of ours (what crashed runs left) from
 * every link of this network namespace; other programs stay. Fills @out with
 * up to @max links that had a program, *@n the count (may exceed @max).
 * 0, or the first -errno of a link whose program could not be identified
 * or removed (the sweep still visits every link). */
int pfs_xdp_sweep(struct pfs_xdp_swept *out, size_t max, size_t *n);

#endif /* PFS_XDP_H */
