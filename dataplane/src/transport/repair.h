/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to the datagram repair plane (repair_common.c, repair_send.c,
 * repair_recv.c), which carries both datagram transports (udp, afxdp) over
 * the I/O seam of dgram_io.h: the sizes both ends agree on, the
 * control-connection reader, UDP socket setup and rate-limited logging of
 * dropped datagrams. */
#ifndef PFS_REPAIR_H
#define PFS_REPAIR_H

#include <stdbool.h>
#include <stdint.h>

#include "pfs/udp.h"
#include "xfer_ctl.h"

#define UDP_WINDOW 128 /* grams in flight (sender) = reassembly slots (receiver) */
#define UDP_GRAM_PAYLOAD_MAX (512u << 10) /* payload bytes per gram over udp */
#define UDP_MAX_GRAM (2u << 20) /* receiver refuses bigger grams: 128 slots <= 256 MiB */
#define UDP_MAX_SEGS PFS_UDP_GSO_SEGS_MAX
#define UDP_TICK_S 0.001 /* receiver: ACK/NAK scan period */
#define UDP_RENAK_S 0.004 /* receiver: re-ask a gram's holes at most this often */
#define UDP_SOCKBUF PFS_UDP_SOCKBUF /* >= the window */
#define UDP_DEFAULT_TIMEOUT_MS 5000

/* What PARAMS carries. */
struct pfs_udp_cfg {
	uint32_t payload; /* UDP payload bytes per full datagram */
	uint32_t frag; /* gram bytes per datagram: payload - PFS_UDP_FRAG_LEN */
	uint32_t window; /* grams */
	uint32_t max_gram; /* bytes of the biggest encoded gram */
};

static inline uint32_t pfs_udp_nfrags(const struct pfs_udp_cfg *c, uint32_t gram_len)
{
	return (gram_len + c->frag - 1) / c->frag;
}

/* Buffered reader of the control connection (non-blocking reads). */
struct pfs_udp_ctlin {
	int fd;
	size_t head, tail;
	uint64_t *wire;
	uint8_t buf[64 << 10];
};

/* pfs_udp_ctl_next - the next whole record (a 40-byte PFSC control record or
 * a PFSR repair record with its ranges) at *rec, *len bytes, valid until the
 * next call. 1 record, 0 none yet, -ECONNRESET peer closed, -EPROTO an
 * unknown or malformed record, -errno from recv. Never blocks. */
int pfs_udp_ctl_next(struct pfs_udp_ctlin *c, const uint8_t **rec, size_t *len);

/* UDP socket of @family with big buffers, bound to device @ifname when not
 * NULL (SO_BINDTODEVICE); *why gets a note when the buffers were capped.
 * fd or -errno (-ENODEV: no such interface, -EPERM: binding needs
 * CAP_NET_RAW). */
int pfs_udp_socket(int family, const char *ifname, const char **why);

/* MTU of interface @ifname, or -errno. */
int pfs_udp_if_mtu(const char *ifname);

/* Log a dropped datagram: the first few with detail, then a summary at most
 * once a second. */
struct pfs_udp_droplog {
	uint64_t n;
	double last;
};
void pfs_udp_drop(struct pfs_udp_droplog *dl, int err, const char *what);

static inline uint32_t pfs_udp_usec32(double t)
{
	return (uint32_t)(uint64_t)(t * 1e6);
}

#endif /* PFS_REPAIR_H */
