// SPDX-License-Identifier: Apache-2.0
/*
 * The transfer engine: the one entry of every gram transfer
 * (pfs_xfer_send, pfs_xfer_recv). It owns what all transports share: the
 * options are checked here, once, by one function for every transport
 * (pfs_xfer_check), the result is zeroed and its mode set here; the
 * control handshake (HELLO/ACCEPT judged by xfer_ctl.c), the readiness
 * file (pfs_xfer_ready, written by the shared accept) and the integrity
 * verdict follow the same code in every transport. The transports sit
 * behind a table of functions (engine.h): send and receive, and the
 * same in delta mode where the transport runs it (tcp, delta_xfer.c). No threads, no state:
 * the transport owns its threads for the transfer's duration.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pfs/delta.h"
#include "pfs/xfer.h"
#include "engine.h"
#include "xfer_ctl.h"

#ifdef PFS_NO_SOURCE
/* The arm64 cross build has no delta mode: the engine says so. */
static int no_delta(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r)
{
	(void)o;
	snprintf(r->error, sizeof(r->error),
		 "this pfs was built without delta mode: the arm64 cross build has no zstd "
		 "and no libcrypto");
	return -ENOTSUP;
}
#define pfs_delta_xfer_send no_delta
#define pfs_delta_xfer_recv no_delta
#endif

static const struct pfs_xfer_ops tcp_ops = { .send = pfs_tcp_send,
					     .recv = pfs_tcp_recv,
					     .send_delta = pfs_delta_xfer_send,
					     .recv_delta = pfs_delta_xfer_recv };
static const struct pfs_xfer_ops udp_ops = { .send = pfs_udp_send, .recv = pfs_udp_recv };
#ifndef PFS_NO_AFXDP
static const struct pfs_xfer_ops afxdp_ops = { .send = pfs_afxdp_send, .recv = pfs_afxdp_recv };
#endif

static const struct pfs_transport transports[] = {
	{ "tcp", "TCP", 1u << PFS_INTEGRITY_FNV1A64 | 1u << PFS_INTEGRITY_NONE, false, &tcp_ops },
	/* udp: CRC32C only (its receiver folds fragments into one CRC32C). */
	{ "udp", "UDP", 0, true, &udp_ops },
#ifndef PFS_NO_AFXDP
	/* afxdp: the udp repair plane over AF_XDP sockets; CRC32C only, like udp.
	 * The label suffix matches api/v1alpha1/labels.go. */
	{ "afxdp", "AF_XDP", 0, true, &afxdp_ops },
#endif
};

const struct pfs_transport *pfs_transport_find(const char *name)
{
	for (size_t i = 0; i < sizeof(transports) / sizeof(transports[0]); i++)
		if (!strcmp(transports[i].name, name))
			return &transports[i];
	return NULL;
}

bool pfs_transport_has_integrity(const struct pfs_transport *t, enum pfs_integrity k)
{
	return k == PFS_INTEGRITY_CRC32C || (t->integrity_mask & (1u << k));
}

const char *pfs_transport_names(void)
{
	static char names[64];

	if (!names[0])
		for (size_t i = 0; i < sizeof(transports) / sizeof(transports[0]); i++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 i ? " | " : "", transports[i].name);
	return names;
}

/* What only a datagram transport implements: a caller's control
 * connection, the sender's pacing cap and source watermark, the
 * receiver's per-descriptor hook. */
static bool wants_embedding(const struct pfs_xfer_opts *o)
{
	return o->embed.ctl_given || o->embed.psk || o->send.rate_max > 0 || o->send.src_ready ||
	       o->recv.on_exec;
}

/* Delta mode: its own inputs instead of a blob and a schedule. */
static int check_delta(const struct pfs_transport *t, const struct pfs_xfer_opts *o, bool sender,
		       struct pfs_xfer_result *r)
{
	const struct pfs_xfer_delta_opts *d = &o->delta;
	const char *side = sender ? "send" : "recv";

	if (!(sender ? t->ops->send_delta : t->ops->recv_delta))
		return pfs_xfer_fail(r, -EINVAL, "%s: --mode delta runs over --transport tcp only",
				     side);
	if (!d->res || (!d->base && d->base_size) ||
	    (sender && ((!d->target && d->target_size) || d->level < 0 || d->level > 19)))
		return pfs_xfer_fail(r, -EINVAL, "%s: invalid delta options", side);
	return 0;
}

int pfs_xfer_check(const struct pfs_transport *t, const struct pfs_xfer_opts *o, bool sender,
		   struct pfs_xfer_result *r)
{
	const char *side = sender ? "send" : "recv";

	if (!t || !o || o->sz < sizeof(*o) || o->mode > PFS_MODE_DELTA ||
	    o->integrity > PFS_INTEGRITY_NONE)
		return pfs_xfer_fail(r, -EINVAL, "%s: invalid options", side);
	if (o->mode == PFS_MODE_DELTA)
		return check_delta(t, o, sender, r);
	if (!pfs_transport_has_integrity(t, o->integrity))
		return pfs_xfer_fail(r, -EINVAL, "%s: --transport %s runs only crc32c, not %s",
				     side, t->name, pfs_integrity_str(o->integrity));
	if (!t->embeddable && wants_embedding(o))
		return pfs_xfer_fail(r, -EINVAL,
				     "%s: --transport %s takes no caller's control connection, "
				     "pre-shared key, rate cap, source watermark or exec hook",
				     side, t->name);
	if (o->link.mtu && (o->link.mtu < 576 || o->link.mtu > 65535))
		return pfs_xfer_fail(r, -EINVAL, "%s: --mtu %u out of range 576..65535", side,
				     o->link.mtu);
	if (sender &&
	    (!o->blob || !o->send.desc_per_gram || o->send.desc_per_gram > PFS_GRAM_MAX_DESC ||
	     (o->mode == PFS_MODE_PAYLOAD &&
	      (!o->send.gram_bytes || o->send.gram_bytes > PFS_GRAM_MAX_PAYLOAD))))
		return pfs_xfer_fail(r, -EINVAL,
				     "send: invalid options (blob, descriptors per gram 1..%u, "
				     "gram bytes 1..%u)",
				     PFS_GRAM_MAX_DESC, PFS_GRAM_MAX_PAYLOAD);
	if (sender)
		return 0;
	if (o->recv.out_mem && o->mode != PFS_MODE_PAYLOAD)
		return pfs_xfer_fail(r, -EINVAL, "recv: out_mem is for payload mode");
	if (o->mode != PFS_MODE_PAYLOAD && !o->blob)
		return pfs_xfer_fail(r, -EINVAL,
				     "recv: %s mode executes over a local blob: give one",
				     pfs_mode_str(o->mode));
	return 0;
}

/* Zero the result, check, then hand over to the transport. */
static int run(const struct pfs_transport *t, const struct pfs_xfer_opts *o, bool sender,
	       struct pfs_xfer_result *r)
{
	int err;

	memset(r, 0, sizeof(*r));
	err = pfs_xfer_check(t, o, sender, r);
	if (err)
		return err;
	r->mode = o->mode;
	if (o->mode != PFS_MODE_DELTA)
		return sender ? t->ops->send(o, r) : t->ops->recv(o, r);
	memset(o->delta.res, 0, sizeof(*o->delta.res));
	return sender ? t->ops->send_delta(o, r) : t->ops->recv_delta(o, r);
}

int pfs_xfer_send(const struct pfs_transport *t, const struct pfs_xfer_opts *o,
		  struct pfs_xfer_result *r)
{
	return run(t, o, true, r);
}

int pfs_xfer_recv(const struct pfs_transport *t, const struct pfs_xfer_opts *o,
		  struct pfs_xfer_result *r)
{
	return run(t, o, false, r);
}

int pfs_xfer_ready(const char *path)
{
	char tmp[4096];
	int fd;

	if (!path)
		return 0;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, "ready\n", 6) != 6) {
		int e = errno ? errno : EIO;

		close(fd);
		unlink(tmp);
		return -e;
	}
	if (close(fd) || rename(tmp, path)) {
		int e = errno;

		unlink(tmp);
		return -e;
	}
	return 0;
}
