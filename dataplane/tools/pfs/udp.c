// SPDX-License-Identifier: Apache-2.0
/*
 * `pfs udp blast | sink`: the kernel UDP link alone, with no protocol work
 * (no grams, no repair, no integrity, no pacing): the datagram limit the
 * udp transport is measured against. `blast` sends unpaced datagrams of
 * --size bytes for --bytes or --time in sendmmsg batches of --batch
 * messages, with --gso each message a UDP_SEGMENT super-datagram of up to
 * 64 KiB; `sink` receives them in recvmmsg batches (with --gro, UDP_GRO
 * super-datagrams), checks each datagram's sequence number, counts losses
 * and reorders, and ends on the blaster's end marker or when idle. Both
 * print one JSON result. The sockets get the transport's buffer sizes
 * (PFS_UDP_SOCKBUF), so the limit and the transport share the kernel's
 * queueing.
 *
 * Each datagram starts with struct dgram_hdr: magic, kind (data or end),
 * and seq (data: its index from 0; end: how many data datagrams were sent).
 * The end marker is sent a few times, a little apart, so one lost copy does
 * not leave the sink waiting for its idle timeout.
 *
 * The sink naps (--nap) after a batch that drained the queue instead of
 * blocking on the socket: over veth the sender's CPU runs the receive path
 * too, and a sink asleep on the socket costs it a wake-up every datagram or
 * two. The socket buffer (64 MiB) absorbs the nap.
 *
 * Threads: one, which owns the socket and its buffers. SIGTERM/SIGINT end
 * the loop (the result is still printed).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "cli.h"
#include "commands.h"
#include "pfs/log.h"
#include "pfs/result.h"
#include "pfs/udp.h"
#include "pfs/xfer.h"

#define DG_MAGIC 0x55534650u /* "PFSU" little endian */
#define DG_DATA 0u
#define DG_END 1u
#define DG_HDR 16 /* sizeof(struct dgram_hdr) */
#define DG_MAX 65507 /* the largest IPv4 UDP payload */
#define RX_SLOT 65536 /* one receive buffer: a whole GRO super-datagram */
#define BATCH_MAX 1024 /* UIO_MAXIOV: sendmmsg/recvmmsg take at most this many */
#define GSO_SEGS_MAX 64 /* UDP_MAX_SEGMENTS of older kernels */
#define END_COPIES 5

struct dgram_hdr {
	uint32_t magic;
	uint32_t kind;
	uint64_t seq;
};

struct udp_args {
	const char *cmd, *connect, *listen, *result_file, *ready_file;
	uint64_t bytes;
	uint32_t size, batch, segs, nap_us;
	double secs, idle, timeout;
	bool gso, gro, spin;
};

/* A numeric ADDR:PORT ("10.0.0.2:7900", "[fd00::2]:7900") into @ss. */
static int parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *sl)
{
	const char *colon = strrchr(s, ':');
	char host[INET6_ADDRSTRLEN + 2];
	uint64_t port;
	size_t hl;

	if (!colon || pfs_parse_u64(colon + 1, &port) || !port || port > 65535)
		return -EINVAL;
	hl = (size_t)(colon - s);
	if (hl >= 2 && s[0] == '[' && s[hl - 1] == ']') {
		s++;
		hl -= 2;
	}
	if (hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, hl);
	host[hl] = '\0';
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &((struct sockaddr_in *)ss)->sin_addr) == 1) {
		((struct sockaddr_in *)ss)->sin_family = AF_INET;
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
		*sl = sizeof(struct sockaddr_in);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)ss)->sin6_addr) == 1) {
		((struct sockaddr_in6 *)ss)->sin6_family = AF_INET6;
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
		*sl = sizeof(struct sockaddr_in6);
		return 0;
	}
	return -EINVAL;
}

/* A UDP socket of @family with the transport's buffer sizes (FORCE needs
 * CAP_NET_ADMIN; without it net.core.rmem_max/wmem_max cap them). fd or
 * -errno. */
static int link_socket(int family)
{
	int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0), sz = PFS_UDP_SOCKBUF;

	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	return fd;
}

static uint64_t sockopt_int(int fd, int level, int name)
{
	int v = 0;
	socklen_t l = sizeof(v);

	return getsockopt(fd, level, name, &v, &l) ? 0 : (uint64_t)v;
}

/* CPU seconds of this process so far: user into *u, system into *s. */
static void cpu_now(double *u, double *s)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	*u = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6;
	*s = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/* What a run measured; both commands fill the part that is theirs. */
struct udp_stats {
	uint64_t datagrams, bytes, calls, msgs;
	uint64_t lost, reordered, bad, sock_drops, sent; /* sink */
	uint64_t eperm, refused; /* blast */
	double first, last, u0, s0, u1, s1;
	const char *ended;
	bool end_marker;
	int err;
};

/* ---- blast ---- */

struct blaster {
	int fd;
	uint32_t size, segs, batch;
	uint8_t *buf; /* batch * segs datagrams, filled once, seq stamped per send */
	struct mmsghdr *msgs;
	struct iovec *iov;
};

/* Stamp @n messages of up to b->segs datagrams each, @left datagrams at
 * most, from sequence @seq on; how many datagrams they carry. */
static uint64_t blast_stamp(struct blaster *b, unsigned int n, uint64_t seq, uint64_t left)
{
	uint64_t total = 0;

	for (unsigned int i = 0; i < n; i++) {
		uint32_t k = left - total < b->segs ? (uint32_t)(left - total) : b->segs;
		uint8_t *m = b->buf + (size_t)i * b->segs * b->size;

		for (uint32_t d = 0; d < k; d++) {
			uint64_t s = seq + total + d;

			memcpy(m + (size_t)d * b->size + offsetof(struct dgram_hdr, seq), &s, 8);
		}
		b->iov[i].iov_len = (size_t)k * b->size;
		total += k;
	}
	return total;
}

/* sendmmsg of @n stamped messages until all left or an error that ends the
 * run; the datagrams of the messages the kernel took into *sent. */
static int blast_send(struct blaster *b, unsigned int n, struct udp_stats *st, uint64_t *sent)
{
	unsigned int done = 0;

	*sent = 0;
	while (done < n && !pfs_cli_stop) {
		int k = sendmmsg(b->fd, b->msgs + done, n - done, 0);

		st->calls++;
		if (k > 0) {
			for (int i = 0; i < k; i++)
				*sent += b->iov[done + (unsigned int)i].iov_len / b->size;
			done += (unsigned int)k;
			continue;
		}
		if (errno == EPERM) { /* a local firewall dropped it: sent, lost */
			st->eperm++;
			*sent += b->iov[done++].iov_len / b->size;
			continue;
		}
		if (errno == ECONNREFUSED) { /* an ICMP error of the sink's port: go on */
			st->refused++;
			continue;
		}
		if (errno == EINTR || errno == ENOBUFS || errno == EAGAIN)
			continue;
		return -errno;
	}
	return 0;
}

static void blast_end(struct blaster *b, uint64_t sent)
{
	struct dgram_hdr h = { DG_MAGIC, DG_END, sent };

	for (int i = 0; i < END_COPIES; i++) {
		if (send(b->fd, &h, sizeof(h), 0) < 0 && errno != ECONNREFUSED)
			pfs_warn("udp blast: end marker: %s", strerror(errno));
		usleep(2000);
	}
}

static int blast_loop(const struct udp_args *a, struct blaster *b, struct udp_stats *st)
{
	uint64_t total = a->bytes ? (a->bytes + a->size - 1) / a->size : UINT64_MAX, seq = 0;
	double end;

	cpu_now(&st->u0, &st->s0);
	st->first = pfs_cli_now();
	end = a->secs > 0 ? st->first + a->secs : 0;
	while (seq < total && !pfs_cli_stop) {
		uint64_t sent;
		unsigned int n = b->batch;
		int err;

		if (total - seq < (uint64_t)n * b->segs)
			n = (unsigned int)((total - seq + b->segs - 1) / b->segs);
		blast_stamp(b, n, seq, total - seq);
		err = blast_send(b, n, st, &sent);
		seq += sent;
		st->msgs += n;
		if (err) {
			st->err = err;
			break;
		}
		if (end && pfs_cli_now() >= end)
			break;
	}
	st->last = pfs_cli_now();
	cpu_now(&st->u1, &st->s1);
	st->datagrams = seq;
	st->bytes = seq * a->size;
	blast_end(b, seq);
	return st->err;
}

static int blast_setup(const struct udp_args *a, struct blaster *b, char *why, size_t n)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	size_t bytes;

	if (parse_addr(a->connect, &ss, &sl)) {
		snprintf(why, n, "--connect '%s' is not a numeric ADDR:PORT", a->connect);
		return -EINVAL;
	}
	b->fd = link_socket(ss.ss_family);
	if (b->fd < 0) {
		snprintf(why, n, "udp socket: %s", strerror(-b->fd));
		return b->fd;
	}
	if (connect(b->fd, (struct sockaddr *)&ss, sl)) {
		snprintf(why, n, "connect %s: %s", a->connect, strerror(errno));
		return -errno;
	}
	b->size = a->size;
	b->batch = a->batch;
	b->segs = 1;
	if (a->gso) {
		int g = (int)a->size;

		b->segs = a->segs ? a->segs : DG_MAX / a->size;
		if (b->segs > GSO_SEGS_MAX)
			b->segs = GSO_SEGS_MAX;
		if ((uint64_t)b->segs * a->size > DG_MAX) {
			snprintf(why, n, "--segs %u x --size %u exceeds %u bytes", b->segs, a->size,
				 DG_MAX);
			return -EINVAL;
		}
		if (setsockopt(b->fd, SOL_UDP, UDP_SEGMENT, &g, sizeof(g))) {
			snprintf(why, n, "UDP_SEGMENT: %s", strerror(errno));
			return -errno;
		}
	}
	bytes = (size_t)b->batch * b->segs * b->size;
	b->buf = malloc(bytes);
	b->msgs = calloc(b->batch, sizeof(*b->msgs));
	b->iov = calloc(b->batch, sizeof(*b->iov));
	if (!b->buf || !b->msgs || !b->iov) {
		snprintf(why, n, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < bytes; i++)
		b->buf[i] = (uint8_t)(i * 13u + 1u);
	for (size_t d = 0; d < (size_t)b->batch * b->segs; d++) {
		struct dgram_hdr h = { DG_MAGIC, DG_DATA, 0 };

		memcpy(b->buf + d * b->size, &h, sizeof(h));
	}
	for (uint32_t i = 0; i < b->batch; i++) {
		b->iov[i].iov_base = b->buf + (size_t)i * b->segs * b->size;
		b->msgs[i].msg_hdr = (struct msghdr){ .msg_iov = &b->iov[i], .msg_iovlen = 1 };
	}
	return 0;
}

/* ---- sink ---- */

struct sink {
	int fd;
	uint32_t batch;
	bool gro;
	uint64_t next; /* the seq expected next */
	uint8_t *buf; /* batch slots of RX_SLOT bytes */
	struct mmsghdr *msgs;
	struct iovec *iov;
	uint8_t (*ctl)[64];
};

/* One datagram of @len bytes at @p. */
static void sink_one(struct sink *k, const uint8_t *p, size_t len, struct udp_stats *st)
{
	struct dgram_hdr h;

	if (len < DG_HDR) {
		st->bad++;
		return;
	}
	memcpy(&h, p, sizeof(h));
	if (h.magic != DG_MAGIC) {
		st->bad++;
		return;
	}
	if (h.kind == DG_END) {
		st->end_marker = true;
		st->sent = h.seq;
		return;
	}
	if (h.kind != DG_DATA) {
		st->bad++;
		return;
	}
	st->datagrams++;
	st->bytes += len;
	if (h.seq >= k->next)
		k->next = h.seq + 1; /* a gap: counted as lost at the end, less late ones */
	else
		st->reordered++;
}

/* The datagrams of message @i (several with GRO: its cmsg gives their size). */
static void sink_msg(struct sink *k, unsigned int i, struct udp_stats *st)
{
	struct msghdr *mh = &k->msgs[i].msg_hdr;
	size_t len = k->msgs[i].msg_len, seg = len;
	const uint8_t *p = k->buf + (size_t)i * RX_SLOT;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
			int g;

			memcpy(&g, CMSG_DATA(c), sizeof(g));
			if (g > 0)
				seg = (size_t)g;
		} else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) {
			uint32_t d;

			memcpy(&d, CMSG_DATA(c), sizeof(d));
			if (d > st->sock_drops)
				st->sock_drops = d;
		}
	}
	if (mh->msg_flags & MSG_TRUNC) {
		st->bad++;
		return;
	}
	for (size_t off = 0; off < len; off += seg)
		sink_one(k, p + off, len - off < seg ? len - off : seg, st);
}

/* Re-arm the batch's headers (recvmmsg writes back lengths and flags). */
static void sink_arm(struct sink *k)
{
	for (uint32_t i = 0; i < k->batch; i++)
		k->msgs[i].msg_hdr = (struct msghdr){ .msg_iov = &k->iov[i],
						      .msg_iovlen = 1,
						      .msg_control = k->ctl[i],
						      .msg_controllen = sizeof(k->ctl[i]) };
}

static int sink_loop(const struct udp_args *a, struct sink *k, struct udp_stats *st)
{
	double start = pfs_cli_now(), now;
	int flags = a->spin ? MSG_DONTWAIT : MSG_WAITFORONE;

	st->ended = "signal";
	while (!pfs_cli_stop) {
		int n;

		sink_arm(k);
		n = recvmmsg(k->fd, k->msgs, k->batch, flags, NULL);
		now = pfs_cli_now();
		if (n > 0) {
			if (!st->datagrams && !st->end_marker) {
				st->first = now;
				cpu_now(&st->u0, &st->s0);
			}
			st->calls++;
			st->msgs += (uint64_t)n;
			for (int i = 0; i < n; i++)
				sink_msg(k, (unsigned int)i, st);
			if (st->datagrams)
				st->last = now;
			if (st->end_marker) {
				st->ended = "end-marker";
				break;
			}
			/* A short batch: the queue is drained. Nap so that the next
			 * call finds a full batch waiting, instead of sleeping on the
			 * socket, where every datagram or two would cost the sender
			 * (whose CPU runs the veth's receive path) a wake-up. */
			if (a->nap_us && (uint32_t)n < k->batch) {
				struct timespec ts = { 0, (long)a->nap_us * 1000 };

				nanosleep(&ts, NULL);
			}
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
		    errno != ECONNREFUSED) {
			st->err = -errno;
			st->ended = "error";
			break;
		}
		if (st->datagrams && now - st->last > a->idle) {
			st->ended = "idle";
			break;
		}
		if (!st->datagrams && now - start > a->timeout) {
			st->ended = "timeout";
			break;
		}
	}
	cpu_now(&st->u1, &st->s1);
	if (!st->datagrams)
		st->u0 = st->u1, st->s0 = st->s1;
	/* Lost: what the blaster says it sent (the end marker), else the highest
	 * seq seen plus one, less what arrived (late datagrams arrived too). */
	if (!st->end_marker)
		st->sent = k->next;
	st->lost = st->sent > st->datagrams ? st->sent - st->datagrams : 0;
	return st->err;
}

static int sink_setup(const struct udp_args *a, struct sink *k, char *why, size_t n)
{
	struct sockaddr_storage ss;
	struct timeval tv = { 0, 50000 }; /* wake to check idle and the stop flag */
	socklen_t sl;
	int one = 1;

	if (parse_addr(a->listen, &ss, &sl)) {
		snprintf(why, n, "--listen '%s' is not a numeric ADDR:PORT", a->listen);
		return -EINVAL;
	}
	k->fd = link_socket(ss.ss_family);
	if (k->fd < 0) {
		snprintf(why, n, "udp socket: %s", strerror(-k->fd));
		return k->fd;
	}
	if (bind(k->fd, (struct sockaddr *)&ss, sl)) {
		snprintf(why, n, "bind %s: %s", a->listen, strerror(errno));
		return -errno;
	}
	setsockopt(k->fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one));
	setsockopt(k->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (a->gro && setsockopt(k->fd, SOL_UDP, UDP_GRO, &one, sizeof(one))) {
		snprintf(why, n, "UDP_GRO: %s", strerror(errno));
		return -errno;
	}
	k->gro = a->gro;
	k->batch = a->batch;
	k->buf = malloc((size_t)k->batch * RX_SLOT);
	k->msgs = calloc(k->batch, sizeof(*k->msgs));
	k->iov = calloc(k->batch, sizeof(*k->iov));
	k->ctl = calloc(k->batch, sizeof(*k->ctl));
	if (!k->buf || !k->msgs || !k->iov || !k->ctl) {
		snprintf(why, n, "out of memory");
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < k->batch; i++)
		k->iov[i] = (struct iovec){ k->buf + (size_t)i * RX_SLOT, RX_SLOT };
	return 0;
}

/* ---- options and result ---- */

static const char udp_usage[] =
	"usage: pfs udp blast --connect ADDR:PORT [options]\n"
	"       pfs udp sink --listen ADDR:PORT [options]\n"
	"\n"
	"The kernel UDP link alone, no protocol work: the datagram limit the udp\n"
	"transport is measured against. `blast` sends unpaced --size datagrams in\n"
	"sendmmsg batches (--gso: UDP GSO super-datagrams) for --bytes or --time and\n"
	"ends with an end marker; `sink` receives in recvmmsg batches (--gro: UDP\n"
	"GRO), checks each datagram's sequence number and prints bytes, datagrams,\n"
	"lost and reordered datagrams, the seconds from first to last datagram and\n"
	"its own CPU time. Sockets get the transport's buffer sizes (64 MiB).\n"
	"\n";

static const char udp_footer[] =
	"\nExit: 0 OK, 1 error, 2 usage, 5 timeout (sink: nothing arrived).\n";

#define AT(f) PFS_OPT_AT(struct udp_args, f)
static const struct pfs_opt udp_opts[] = {
	{ "batch", PFS_OPT_U64, AT(batch), "N",
	  "messages per sendmmsg/recvmmsg call (default 64, max 1024)", .min = 1,
	  .max = BATCH_MAX },
	{ "result-file", PFS_OPT_STR, AT(result_file), "PATH", "also write the JSON there" },
	PFS_OPT_HEADING("\nblast:"),
	{ "connect", PFS_OPT_STR, AT(connect), "ADDR:PORT", "the sink (numeric address)" },
	{ "size", PFS_OPT_SIZE, AT(size), "N", "UDP payload bytes, 16..65507 (default 1472)",
	  .min = DG_HDR, .max = DG_MAX },
	{ "bytes", PFS_OPT_SIZE, AT(bytes), "N",
	  "send N bytes (whole datagrams; default 1G unless --time)" },
	{ "time", PFS_OPT_SECS, AT(secs), "S",
	  "send for S seconds (with --bytes: whichever first)" },
	{ "gso", PFS_OPT_FLAG, AT(gso), NULL,
	  "UDP GSO: each message carries --segs datagrams (UDP_SEGMENT)" },
	{ "segs", PFS_OPT_U64, AT(segs), "N",
	  "datagrams per GSO message (default: as many as fit 65507 bytes, max 64)", .min = 1,
	  .max = GSO_SEGS_MAX },
	PFS_OPT_HEADING("\nsink:"),
	{ "listen", PFS_OPT_STR, AT(listen), "ADDR:PORT", "bind here (numeric address)" },
	{ "gro", PFS_OPT_FLAG, AT(gro), NULL, "UDP GRO: one buffer takes a super-datagram" },
	{ "spin", PFS_OPT_FLAG, AT(spin), NULL,
	  "busy-poll the socket (recvmmsg MSG_DONTWAIT) instead of blocking" },
	{ "nap", PFS_OPT_U64, AT(nap_us), "USEC",
	  "after a short batch, sleep USEC microseconds before the next call instead of\n"
	  "blocking on the socket (default 200; 0: block)",
	  .max = 100000 },
	{ "idle", PFS_OPT_SECS, AT(idle), "S",
	  "end S seconds after the last datagram when no end marker came (default 1)" },
	{ "timeout", PFS_OPT_SECS, AT(timeout), "S",
	  "give up when nothing arrived within S seconds (default 30)" },
	{ "ready-file", PFS_OPT_STR, AT(ready_file), "PATH", "create PATH once bound" },
	{ 0 },
};
#undef AT

/* 0, PFS_OPT_HELP (help printed), or -EINVAL (reported). */
static int parse_args(int argc, char **argv, struct udp_args *a)
{
	char cmd[16];
	struct pfs_cmdline c = {
		.cmd = cmd,
		.usage = udp_usage,
		.footer = udp_footer,
		.group = { { udp_opts, a } },
	};
	bool blast;
	int err;

	memset(a, 0, sizeof(*a));
	a->size = 1472;
	a->batch = 64;
	a->idle = 1;
	a->timeout = 30;
	a->nap_us = 200;
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		pfs_opt_usage(&c, argc < 2 ? stderr : stdout);
		return argc < 2 ? -EINVAL : PFS_OPT_HELP;
	}
	a->cmd = argv[1];
	if (strcmp(a->cmd, "blast") && strcmp(a->cmd, "sink")) {
		fprintf(stderr, "pfs udp: unknown subcommand '%s'\n\n", a->cmd);
		pfs_opt_usage(&c, stderr);
		return -EINVAL;
	}
	snprintf(cmd, sizeof(cmd), "udp %s", a->cmd);
	err = pfs_opt_parse(&c, argc - 1, argv + 1);
	if (err)
		return err;
	blast = !strcmp(a->cmd, "blast");
	if (blast && (!a->connect || pfs_opt_given(&c, "listen") || pfs_opt_given(&c, "gro") ||
		      pfs_opt_given(&c, "spin") || pfs_opt_given(&c, "idle") ||
		      pfs_opt_given(&c, "nap") || pfs_opt_given(&c, "ready-file")))
		return pfs_opt_fail(&c, "blast takes --connect and the blast options only");
	if (!blast && (!a->listen || pfs_opt_given(&c, "connect") || pfs_opt_given(&c, "gso") ||
		       pfs_opt_given(&c, "bytes") || pfs_opt_given(&c, "time") ||
		       pfs_opt_given(&c, "segs") || pfs_opt_given(&c, "size")))
		return pfs_opt_fail(&c, "sink takes --listen and the sink options only");
	if (pfs_opt_given(&c, "segs") && !a->gso)
		return pfs_opt_fail(&c, "--segs needs --gso");
	if (blast && !a->bytes && a->secs <= 0)
		a->bytes = 1ull << 30;
	return 0;
}

static void stats_json(struct pfs_json *j, const struct udp_stats *st, bool blast)
{
	double el = st->last > st->first ? st->last - st->first : 0;
	double u = st->u1 - st->u0, s = st->s1 - st->s0;

	pfs_json_u64(j, "bytes", st->bytes);
	pfs_json_u64(j, "datagrams", st->datagrams);
	if (!blast) {
		pfs_json_u64(j, "sent", st->sent);
		pfs_json_bool(j, "end_marker", st->end_marker);
		pfs_json_u64(j, "lost", st->lost);
		pfs_json_u64(j, "reordered", st->reordered);
		pfs_json_u64(j, "bad", st->bad);
		pfs_json_u64(j, "sock_drops", st->sock_drops);
		pfs_json_str(j, "ended", st->ended, 16);
	} else {
		pfs_json_u64(j, "eperm", st->eperm);
		pfs_json_u64(j, "refused", st->refused);
	}
	pfs_json_u64(j, "calls", st->calls);
	pfs_json_u64(j, "messages", st->msgs);
	pfs_json_num(j, "elapsed_s", el, 6);
	pfs_json_num(j, "mb_s", el > 0 ? (double)st->bytes / 1e6 / el : 0, 1);
	pfs_json_num(j, "user_s", u > 0 ? u : 0, 3);
	pfs_json_num(j, "sys_s", s > 0 ? s : 0, 3);
	if (pfs_cli_stop)
		pfs_json_bool(j, "stopped_by_signal", true);
}

static int run_blast(const struct udp_args *a, struct pfs_json *j)
{
	struct blaster b = { .fd = -1 };
	struct udp_stats st = { 0 };
	char why[300] = "";
	int err = blast_setup(a, &b, why, sizeof(why)), code = PFS_EXIT_OK;

	pfs_json_str(j, "variant", a->gso ? "sendmmsg+gso" : "sendmmsg", 16);
	pfs_json_u64(j, "size", a->size);
	pfs_json_u64(j, "batch", a->batch);
	pfs_json_u64(j, "segs", b.segs);
	if (!err) {
		pfs_json_u64(j, "sndbuf", sockopt_int(b.fd, SOL_SOCKET, SO_SNDBUF));
		err = blast_loop(a, &b, &st);
		if (err)
			snprintf(why, sizeof(why), "sendmmsg: %s", strerror(-err));
		stats_json(j, &st, true);
	}
	if (err) {
		pfs_json_str(j, "error", why, sizeof(why));
		code = PFS_EXIT_ERROR;
	}
	pfs_json_str(j, "verdict", code ? "ERROR" : "OK", 16);
	if (b.fd >= 0)
		close(b.fd);
	free(b.buf);
	free(b.msgs);
	free(b.iov);
	pfs_result_emit(pfs_json_end(j), a->result_file);
	return code;
}

static int run_sink(const struct udp_args *a, struct pfs_json *j)
{
	struct sink k = { .fd = -1 };
	struct udp_stats st = { 0 };
	char why[300] = "";
	int err = sink_setup(a, &k, why, sizeof(why)), code = PFS_EXIT_OK;

	pfs_json_str(j, "variant", a->gro ? "recvmmsg+gro" : "recvmmsg", 16);
	pfs_json_u64(j, "batch", a->batch);
	if (!err) {
		pfs_json_u64(j, "rcvbuf", sockopt_int(k.fd, SOL_SOCKET, SO_RCVBUF));
		if (a->ready_file && pfs_xfer_ready(a->ready_file))
			pfs_warn("cannot create ready file %s", a->ready_file);
		err = sink_loop(a, &k, &st);
		if (err)
			snprintf(why, sizeof(why), "recvmmsg: %s", strerror(-err));
		stats_json(j, &st, false);
	}
	if (err) {
		pfs_json_str(j, "error", why, sizeof(why));
		code = PFS_EXIT_ERROR;
	} else if (!st.datagrams) {
		code = PFS_EXIT_TIMEOUT;
	}
	pfs_json_str(j, "verdict",
		     code == PFS_EXIT_OK      ? "OK" :
		     code == PFS_EXIT_TIMEOUT ? "TIMEOUT" :
						"ERROR",
		     16);
	if (k.fd >= 0)
		close(k.fd);
	free(k.buf);
	free(k.msgs);
	free(k.iov);
	free(k.ctl);
	pfs_result_emit(pfs_json_end(j), a->result_file);
	return code;
}

int pfs_cmd_udp(int argc, char **argv)
{
	struct udp_args a;
	struct pfs_json j;
	int rc = parse_args(argc, argv, &a);

	if (rc)
		return pfs_exit_parse(rc);
	if (pfs_cli_check_args) /* options valid; touch nothing */
		return PFS_EXIT_OK;
	pfs_cli_catch_stop();
	pfs_json_begin(&j);
	if (!strcmp(a.cmd, "blast")) {
		pfs_json_str(&j, "cmd", "udp blast", 16);
		return run_blast(&a, &j);
	}
	pfs_json_str(&j, "cmd", "udp sink", 16);
	return run_sink(&a, &j);
}
