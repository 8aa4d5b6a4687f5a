// SPDX-License-Identifier: Apache-2.0
/*
 * The XDP program's life cycle on one interface (see pfs/xdp.h). Control
 * thread only: attach before the queue workers start, counters read while
 * they run (per-CPU map, summed here), detach after they stopped. Owns the
 * libbpf skeleton (program, XSKMAP, counters map, .rodata with the port).
 *
 * Attachment is through netlink (bpf_xdp_attach), not a bpf_link, so the
 * program outlives a crashed process; the next run recognises it by its
 * name and replaces it. A program that is not ours is never replaced.
 * libbpf's messages go to our log at debug level; the last warning is kept
 * because it carries the kernel's extack reason for a failed attach.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "pfs/caps.h"
#include "pfs/log.h"
#include "pfs/xdp.h"
#include "pfs/xsk.h"
#include "pfs_xdp.skel.h"
#include "pfs_xdp_abi.h"
#include "xsk_err.h"

#define PFS_XDP_PROG_NAME "pfs_xdp"

struct pfs_xdp {
	struct pfs_xdp_bpf *skel;
	int ifindex;
	uint32_t flags; /* XDP_FLAGS_DRV_MODE or XDP_FLAGS_SKB_MODE */
	uint32_t prog_id;
	uint32_t replaced_id;
	uint16_t port;
	char ifname[IF_NAMESIZE];
	char fallback[400];
};

static _Thread_local char last_error[600];
static _Thread_local char libbpf_last[300];

void pfs_xsk_errorf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	pfs_err("%s", last_error);
}

void pfs_xsk_error_clear(void)
{
	last_error[0] = '\0';
}

const char *pfs_xsk_last_error(void)
{
	return last_error;
}

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char msg[16384]; /* the verifier log comes as one message */
	size_t n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && msg[n - 1] == '\n')
		msg[--n] = '\0';
	if (level == LIBBPF_WARN) {
		/* Only the head of a long warning (a verifier log) fits, and is
		 * what a user needs: copy that much on purpose. */
		size_t k = n < sizeof(libbpf_last) - 1 ? n : sizeof(libbpf_last) - 1;

		memcpy(libbpf_last, msg, k);
		libbpf_last[k] = '\0';
	}
	if (pfs_log_get_level() < PFS_LOG_DEBUG)
		return 0;
	for (char *line = msg, *nl; line && *line; line = nl) { /* the log line is 1 KiB */
		nl = strchr(line, '\n');
		if (nl)
			*nl++ = '\0';
		pfs_debug("libbpf: %s", line);
	}
	return 0;
}

static void libbpf_setup(void)
{
	libbpf_set_print(libbpf_log);
	libbpf_last[0] = '\0';
}

/* Open program @id and read its name into @name. The fd, or -errno: the
 * kernel hands out fds by id only to CAP_SYS_ADMIN (EPERM without it). */
static int prog_open(uint32_t id, char *name, size_t n)
{
	struct bpf_prog_info info;
	uint32_t len = sizeof(info);
	int fd = bpf_prog_get_fd_by_id(id);

	name[0] = '\0';
	if (fd < 0)
		return -errno;
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		int err = -errno;

		close(fd);
		return err;
	}
	snprintf(name, n, "%s", info.name);
	return fd;
}

/* The program attached to @ifindex: 1 with its id and attach flags, 0 none,
 * -EBUSY hw offload or several programs (reason set), -errno. */
static int link_prog(int ifindex, const char *ifname, uint32_t *id, uint32_t *flags)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	int rc = bpf_xdp_query(ifindex, 0, &q);

	if (rc)
		return rc;
	switch (q.attach_mode) {
	case XDP_ATTACHED_NONE:
		return 0;
	case XDP_ATTACHED_DRV:
		*id = q.drv_prog_id;
		*flags = XDP_FLAGS_DRV_MODE;
		return 1;
	case XDP_ATTACHED_SKB:
		*id = q.skb_prog_id;
		*flags = XDP_FLAGS_SKB_MODE;
		return 1;
	}
	pfs_xsk_errorf("%s has an XDP program in mode %u (hw or several); not ours to replace",
		       ifname, q.attach_mode);
	return -EBUSY;
}

static const char *mode_word(uint32_t flags)
{
	return flags == XDP_FLAGS_DRV_MODE ? "native" : "generic";
}

/* The `ip link set dev X <word> off` that detaches a program in this mode. */
static const char *ip_word(uint32_t flags)
{
	return flags == XDP_FLAGS_DRV_MODE ? "xdpdrv" : "xdpgeneric";
}

/* Detach program @id (mode @flags) from @ifindex if it is ours, and only
 * that program (XDP_FLAGS_REPLACE with its fd: one attached meanwhile
 * stays). Its name goes to @name ("" when unreadable). Another's program is
 * an error for a run that wants the link, an expected find for the sweep
 * (@foreign_ok: logged at info). 1 removed, -EBUSY foreign or unreadable
 * (reason set), -errno. */
static int detach_if_ours(int ifindex, const char *ifname, uint32_t id, uint32_t flags,
			  char name[BPF_OBJ_NAME_LEN], bool foreign_ok)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, opts);
	int fd = prog_open(id, name, BPF_OBJ_NAME_LEN), rc;

	if (fd < 0) {
		pfs_xsk_errorf(
			"%s runs XDP program id %u (%s mode) whose name cannot be read (%s; "
			"the kernel needs CAP_SYS_ADMIN for it), so pfs cannot tell whether it "
			"is its own; if a crashed pfs left it, detach it: ip link set dev %s "
			"%s off",
			ifname, id, mode_word(flags), strerror(-fd), ifname, ip_word(flags));
		return -EBUSY;
	}
	if (strcmp(name, PFS_XDP_PROG_NAME)) {
		if (foreign_ok)
			pfs_info("%s: XDP program id %u '%s' is not pfs's: left attached", ifname,
				 id, name);
		else
			pfs_xsk_errorf("%s already runs XDP program id %u '%s' (%s mode); pfs does "
				       "not replace a program it does not own (detach it: ip link "
				       "set dev %s %s off)",
				       ifname, id, name, mode_word(flags), ifname, ip_word(flags));
		close(fd);
		return -EBUSY;
	}
	opts.old_prog_fd = fd;
	rc = bpf_xdp_detach(ifindex, flags | XDP_FLAGS_REPLACE, &opts);
	close(fd);
	if (rc)
		return rc;
	pfs_warn("%s: removed a stale pfs XDP program (id %u, %s mode) left by an earlier run",
		 ifname, id, mode_word(flags));
	return 1;
}

/* Remove our program from @ifindex if attached. 1 removed, 0 nothing
 * attached, -EBUSY foreign program (reason set), -errno. @id_out: its id. */
static int detach_stale(int ifindex, const char *ifname, uint32_t *id_out)
{
	char name[BPF_OBJ_NAME_LEN];
	uint32_t id, flags;
	int rc = link_prog(ifindex, ifname, &id, &flags);

	if (rc <= 0)
		return rc;
	rc = detach_if_ours(ifindex, ifname, id, flags, name, false);
	if (rc == 1 && id_out)
		*id_out = id;
	return rc;
}

int pfs_xdp_detach_stale(const char *ifname)
{
	int ifindex = (int)if_nametoindex(ifname);

	if (!ifindex)
		return -ENODEV;
	libbpf_setup();
	return detach_stale(ifindex, ifname, NULL);
}

int pfs_xdp_sweep(struct pfs_xdp_swept *out, size_t max, size_t *n)
{
	struct if_nameindex *ifs = if_nameindex();
	int first = 0;

	*n = 0;
	if (!ifs)
		return -errno;
	libbpf_setup();
	for (struct if_nameindex *i = ifs; i->if_index; i++) {
		struct pfs_xdp_swept e = { .id = 0 };
		uint32_t flags;
		int rc = link_prog((int)i->if_index, i->if_name, &e.id, &flags);

		if (rc == 0)
			continue;
		snprintf(e.ifname, sizeof(e.ifname), "%s", i->if_name);
		if (rc > 0) {
			e.mode = mode_word(flags);
			/* The name goes in the result, so it says whose program stayed. */
			rc = detach_if_ours((int)i->if_index, i->if_name, e.id, flags, e.name,
					    true);
		}
		e.result = rc;
		if (rc < 0 && !(rc == -EBUSY && e.name[0]) && !first)
			first = rc; /* a foreign program is no failure; anything else is */
		if (*n < max)
			out[*n] = e;
		(*n)++;
	}
	if_freenameindex(ifs);
	return first;
}

static int try_attach(struct pfs_xdp *x, uint32_t mode_flag, char *why, size_t n)
{
	int rc;

	libbpf_last[0] = '\0';
	rc = bpf_xdp_attach(x->ifindex, bpf_program__fd(x->skel->progs.pfs_xdp),
			    mode_flag | XDP_FLAGS_UPDATE_IF_NOEXIST, NULL);
	if (rc)
		snprintf(why, n, "%s XDP on %s: %s%s%s",
			 mode_flag == XDP_FLAGS_DRV_MODE ? "native" : "generic", x->ifname,
			 strerror(-rc), libbpf_last[0] ? "; " : "", libbpf_last);
	else
		x->flags = mode_flag;
	return rc;
}

struct pfs_xdp *pfs_xdp__attach(const struct pfs_xdp_opts *o)
{
	struct pfs_xdp *x;
	char why[400];
	int rc;

	last_error[0] = '\0';
	if (!o || o->sz < sizeof(*o) || !o->ifname || !o->port) {
		pfs_xsk_errorf("xdp: bad options (interface and port are required)");
		errno = EINVAL;
		return NULL;
	}
	rc = pfs_caps_require(PFS_CAP(CAP_BPF) | PFS_CAP(CAP_NET_ADMIN) | PFS_CAP(CAP_NET_RAW),
			      "load and attach the XDP program that feeds AF_XDP sockets", why,
			      sizeof(why));
	if (rc) {
		pfs_xsk_errorf("%s", why);
		errno = EPERM;
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	snprintf(x->ifname, sizeof(x->ifname), "%s", o->ifname);
	x->port = o->port;
	libbpf_setup();
	x->ifindex = (int)if_nametoindex(o->ifname);
	if (!x->ifindex) {
		pfs_xsk_errorf("no interface '%s' in this network namespace", o->ifname);
		rc = -ENODEV;
		goto out_free;
	}
	rc = detach_stale(x->ifindex, x->ifname, &x->replaced_id);
	if (rc < 0) {
		if (rc != -EBUSY)
			pfs_xsk_errorf("cannot query/replace the XDP program on %s: %s", x->ifname,
				       strerror(-rc));
		goto out_free;
	}
	x->skel = pfs_xdp_bpf__open();
	if (!x->skel) {
		rc = -errno;
		pfs_xsk_errorf("cannot open the embedded XDP object: %s", strerror(-rc));
		goto out_free;
	}
	x->skel->rodata->pfs_port = htons(o->port);
	rc = pfs_xdp_bpf__load(x->skel);
	if (rc) {
		if (rc == -EPERM)
			pfs_xsk_errorf("loading the XDP program was refused (EPERM): it needs "
				       "CAP_BPF and CAP_NET_ADMIN%s%s",
				       libbpf_last[0] ? "; " : "", libbpf_last);
		else
			pfs_xsk_errorf("cannot load the XDP program: %s%s%s", strerror(-rc),
				       libbpf_last[0] ? "; " : "", libbpf_last);
		goto out_destroy;
	}
	if (o->attach == PFS_XDP_GENERIC) {
		rc = try_attach(x, XDP_FLAGS_SKB_MODE, why, sizeof(why));
	} else {
		rc = try_attach(x, XDP_FLAGS_DRV_MODE, why, sizeof(why));
		if (rc && o->attach == PFS_XDP_AUTO) {
			snprintf(x->fallback, sizeof(x->fallback), "%s", why);
			pfs_warn("%s; falling back to generic XDP", why);
			rc = try_attach(x, XDP_FLAGS_SKB_MODE, why, sizeof(why));
		}
	}
	if (rc) {
		if (rc == -EPERM)
			pfs_xsk_errorf("%s: attaching needs CAP_NET_ADMIN", why);
		else
			pfs_xsk_errorf("%s", why);
		goto out_destroy;
	}
	bpf_xdp_query_id(x->ifindex, (int)x->flags, &x->prog_id);
	pfs_info("%s: XDP program id %u attached (%s), redirecting UDP port %u", x->ifname,
		 x->prog_id, pfs_xdp__mode_str(x), o->port);
	return x;

out_destroy:
	pfs_xdp_bpf__destroy(x->skel);
out_free:
	free(x);
	errno = -rc;
	return NULL;
}

int pfs_xdp__add_xsk(struct pfs_xdp *x, uint32_t queue, int fd)
{
	if (queue >= PFS_XDP_MAX_QUEUES)
		return -E2BIG;
	return bpf_map_update_elem(bpf_map__fd(x->skel->maps.xsks), &queue, &fd, BPF_ANY) ? -errno :
											    0;
}

int pfs_xdp__del_xsk(struct pfs_xdp *x, uint32_t queue)
{
	if (queue >= PFS_XDP_MAX_QUEUES)
		return -E2BIG;
	return bpf_map_delete_elem(bpf_map__fd(x->skel->maps.xsks), &queue) ? -errno : 0;
}

int pfs_xdp__counters(const struct pfs_xdp *x, struct pfs_xdp_counters *c)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t sum[PFS_XDP_NCOUNTERS] = { 0 };
	uint64_t *v;

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	v = calloc((size_t)ncpu, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (uint32_t k = 0; k < PFS_XDP_NCOUNTERS; k++) {
		if (bpf_map_lookup_elem(bpf_map__fd(x->skel->maps.counters), &k, v)) {
			int e = -errno;

			free(v);
			return e;
		}
		for (int i = 0; i < ncpu; i++)
			sum[k] += v[i];
	}
	free(v);
	c->redirected = sum[PFS_XDP_REDIRECTED];
	c->passed = sum[PFS_XDP_PASSED];
	c->malformed = sum[PFS_XDP_MALFORMED];
	c->no_xsk = sum[PFS_XDP_NO_XSK];
	return 0;
}

bool pfs_xdp__native(const struct pfs_xdp *x)
{
	return x->flags == XDP_FLAGS_DRV_MODE;
}

const char *pfs_xdp__mode_str(const struct pfs_xdp *x)
{
	return pfs_xdp__native(x) ? "native" : "generic";
}

const char *pfs_xdp__fallback_reason(const struct pfs_xdp *x)
{
	return x->fallback[0] ? x->fallback : NULL;
}

uint32_t pfs_xdp__prog_id(const struct pfs_xdp *x)
{
	return x->prog_id;
}

uint32_t pfs_xdp__replaced_id(const struct pfs_xdp *x)
{
	return x->replaced_id;
}

int pfs_xdp__ifindex(const struct pfs_xdp *x)
{
	return x->ifindex;
}

uint16_t pfs_xdp__port(const struct pfs_xdp *x)
{
	return x->port;
}

void pfs_xdp__close(struct pfs_xdp *x)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, opts);
	int rc;

	if (!x)
		return;
	/* Only if the attached program is still ours (another run may have
	 * replaced it meanwhile): the kernel compares old_prog_fd. */
	opts.old_prog_fd = bpf_program__fd(x->skel->progs.pfs_xdp);
	rc = bpf_xdp_detach(x->ifindex, x->flags | XDP_FLAGS_REPLACE, &opts);
	if (rc)
		pfs_warn("%s: detaching XDP program %u: %s", x->ifname, x->prog_id, strerror(-rc));
	else
		pfs_info("%s: XDP program %u detached", x->ifname, x->prog_id);
	pfs_xdp_bpf__destroy(x->skel);
	free(x);
}
