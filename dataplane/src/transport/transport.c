// SPDX-License-Identifier: Apache-2.0
/*
 * The gram transports `pfs send/recv --transport` chooses from, and the
 * readiness file every receiver writes once a sender may start.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef PFS_NO_AFXDP
#include "pfs/afxdp.h"
#endif
#include "pfs/tcp.h"
#include "pfs/udp.h"
#include "pfs/xfer.h"

static int tcp_send(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r)
{
	struct pfs_tcp_send_opts so = {
		.sz = sizeof(so),
		.host = o->host,
		.port = o->port,
		.mode = o->mode,
		.blob = o->blob,
		.fingerprint = o->fingerprint,
		.sched = o->sched,
		.desc_per_gram = o->desc_per_gram,
		.gram_bytes = o->gram_bytes,
		.connect_timeout_ms = o->connect_timeout_ms,
		.io_timeout_ms = o->io_timeout_ms,
		.integrity = o->integrity,
	};

	return pfs_tcp_send(&so, r);
}

static int tcp_recv(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r)
{
	struct pfs_tcp_recv_opts ro = {
		.sz = sizeof(ro),
		.host = o->host,
		.port = o->port,
		.mode = o->mode,
		.blob = o->blob,
		.fingerprint = o->fingerprint,
		.out_fd = o->out_fd,
		.accept_timeout_ms = o->accept_timeout_ms,
		.io_timeout_ms = o->io_timeout_ms,
		.ready_file = o->ready_file,
		.max_size = o->max_size,
		.integrity = o->integrity,
		.out_mem = o->out_mem,
		.out_mem_size = o->out_mem_size,
	};

	return pfs_tcp_recv(&ro, r);
}

static const struct pfs_transport transports[] = {
	{ "tcp", "TCP", tcp_send, tcp_recv,
	  1u << PFS_INTEGRITY_FNV1A64 | 1u << PFS_INTEGRITY_NONE },
	/* udp: CRC32C only (its receiver folds fragments into one CRC32C). */
	{ "udp", "UDP", pfs_udp_send, pfs_udp_recv, 0 },
#ifndef PFS_NO_AFXDP
	/* afxdp: the udp repair plane over AF_XDP sockets; CRC32C only, like udp.
	 * The label suffix matches api/v1alpha1/labels.go. */
	{ "afxdp", "AF_XDP", pfs_afxdp_send, pfs_afxdp_recv, 0 },
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
