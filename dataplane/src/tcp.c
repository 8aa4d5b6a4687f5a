// SPDX-License-Identifier: Apache-2.0
/*
 * TCP transport. One thread per side, one connection, blocking sockets with
 * SO_RCVTIMEO/SO_SNDTIMEO so no call waits longer than io_timeout_ms.
 *
 * Sender: the schedule produces descriptors, the codec encodes a gram into a
 * batch buffer owned by the sender; offset/arithmetic grams are written in
 * batches (one write per ~8 MiB of effective bytes or a full buffer), and the
 * sender's checksum over the referenced blob bytes is computed right after
 * each write so the receiver already works while the sender hashes. Payload
 * grams go out with writev: the header/table from the batch buffer, the
 * payload straight from the blob in pieces of at most 256 KiB, each piece
 * hashed just before its writev so the kernel copies bytes still in cache.
 *
 * Receiver: a 4 MiB receive buffer owned by the receiver thread; headers and
 * tables are decoded in place, payload is hashed in chunks of at most
 * 256 KiB as it arrives. A malformed gram ends the transfer with -EPROTO
 * (a byte stream cannot be resynchronised), counted in r->stats and logged.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "pfs/crc_index.h"
#include "pfs/integrity.h"
#include "pfs/log.h"
#include "pfs/tcp.h"

#define RX_BUF (4u << 20)
#ifndef RX_READ_MAX
#define RX_READ_MAX (256u << 10)
#endif
#define TX_BUF (1u << 20)
#define TX_FLUSH_EFFECTIVE (8ULL << 20)
#define TX_PIECE (256u << 10)
#define TX_IOV 64

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void cpu_s(double *user, double *sys)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	*user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6;
	*sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

__attribute__((format(printf, 3, 4)))
static int fail(struct pfs_xfer_result *r, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->error, sizeof(r->error), fmt, ap);
	va_end(ap);
	pfs_err("%s", r->error);
	return err;
}

static int parse_addr(const char *host, uint16_t port, struct sockaddr_storage *ss,
		      socklen_t *len)
{
	struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (!host || !*host)
		host = "0.0.0.0";
	if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons(port);
		*len = sizeof(*v4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons(port);
		*len = sizeof(*v6);
		return 0;
	}
	return -EINVAL;
}

static void addr_str(const struct sockaddr_storage *ss, char *out, size_t n)
{
	char a[INET6_ADDRSTRLEN] = "?";
	uint16_t port = 0;

	if (ss->ss_family == AF_INET) {
		inet_ntop(AF_INET, &((struct sockaddr_in *)ss)->sin_addr, a, sizeof(a));
		port = ntohs(((struct sockaddr_in *)ss)->sin_port);
		snprintf(out, n, "%s:%u", a, port);
	} else {
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)ss)->sin6_addr, a, sizeof(a));
		port = ntohs(((struct sockaddr_in6 *)ss)->sin6_port);
		snprintf(out, n, "[%s]:%u", a, port);
	}
}

static void sock_setup(int fd, int timeout_ms)
{
	struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
	int one = 1;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	/* We batch ourselves; Nagle would only delay END and RESULT. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int io_err(int e)
{
	if (e == EAGAIN || e == EWOULDBLOCK)
		return -ETIMEDOUT;
	if (e == EPIPE)
		return -ECONNRESET;
	return -e;
}

static int writev_full(int fd, struct iovec *iov, int cnt, uint64_t *wire)
{
	while (cnt) {
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = cnt };
		ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return io_err(errno);
		}
		*wire += n;
		while (cnt && (size_t)n >= iov->iov_len) {
			n -= iov->iov_len;
			iov++;
			cnt--;
		}
		if (cnt) {
			iov->iov_base = (uint8_t *)iov->iov_base + n;
			iov->iov_len -= n;
		}
	}
	return 0;
}

static int write_full(int fd, const void *buf, size_t len, uint64_t *wire)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return writev_full(fd, &iov, 1, wire);
}

/* Receive buffer: bytes [head, tail) are unread. Owned by one thread. */
struct rx {
	int fd;
	uint8_t *buf;
	size_t head, tail;
	uint64_t wire;
};

static int rx_read(struct rx *x, size_t max)
{
	for (;;) {
		ssize_t n = recv(x->fd, x->buf + x->tail, max, 0);

		if (n > 0) {
			x->tail += n;
			x->wire += n;
			return 0;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno != EINTR)
			return io_err(errno);
	}
}

/* Make @need bytes (<= RX_BUF) contiguous at head. */
static int rx_need(struct rx *x, size_t need)
{
	if (x->tail - x->head >= need)
		return 0;
	if (RX_BUF - x->head < need) {
		memmove(x->buf, x->buf + x->head, x->tail - x->head);
		x->tail -= x->head;
		x->head = 0;
	}
	while (x->tail - x->head < need) {
		/* Read what is needed but not much more than RX_READ_MAX, so the
		 * bytes land in the cache-hot start of the buffer. */
		size_t want = need - (x->tail - x->head);
		int err = rx_read(x, want < RX_READ_MAX ? RX_READ_MAX < RX_BUF - x->tail ?
					     RX_READ_MAX : RX_BUF - x->tail : want);

		if (err)
			return err;
	}
	return 0;
}

static int send_ctl(int fd, const struct pfs_ctl *c, uint64_t *wire)
{
	uint8_t rec[PFS_CTL_LEN];

	pfs_ctl_encode(c, rec);
	return write_full(fd, rec, sizeof(rec), wire);
}

/* A checksum wider than a control word goes ahead of END/RESULT. */
static int send_digest(int fd, enum pfs_integrity k, uint64_t sum, uint64_t *wire)
{
	struct pfs_ctl dg = { .type = PFS_CTL_DIGEST, .value = sum, .word = k };

	return k == PFS_INTEGRITY_FNV1A64 ? send_ctl(fd, &dg, wire) : 0;
}

static const char *io_what(int err)
{
	return err == -ECONNRESET ? "peer closed the connection" :
	       err == -ETIMEDOUT ? "timed out" : strerror(-err);
}

static const char *refuse_str(uint32_t code)
{
	switch (code) {
	case PFS_REFUSE_VERSION: return "protocol version mismatch";
	case PFS_REFUSE_MODE: return "mode mismatch";
	case PFS_REFUSE_FINGERPRINT: return "blob fingerprint mismatch";
	case PFS_REFUSE_SIZE: return "blob size mismatch";
	case PFS_REFUSE_INTEGRITY: return "integrity checksum mismatch";
	}
	return "unknown reason";
}

/* ---- receiver ---- */

static int recv_accept(const struct pfs_tcp_recv_opts *o, struct pfs_xfer_result *r)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	struct pollfd pfd;
	int lfd, fd, one = 1, pr;
	char where[80];

	if (parse_addr(o->host, o->port, &ss, &sl))
		return fail(r, -EINVAL, "recv: '%s' is not a numeric IPv4/IPv6 address", o->host);
	addr_str(&ss, where, sizeof(where));
	lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		return fail(r, -errno, "recv: socket: %s", strerror(errno));
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&ss, sl) || listen(lfd, 1)) {
		int e = errno;

		close(lfd);
		return fail(r, -e, "recv: listen on %s: %s%s", where, strerror(e),
			    e == EACCES && o->port < 1024 ?
			    " (ports below 1024 need CAP_NET_BIND_SERVICE)" : "");
	}
	pfs_info("recv: listening on %s, mode %s", where, pfs_mode_str(o->mode));
	pr = pfs_xfer_ready(o->ready_file);
	if (pr) {
		close(lfd);
		return fail(r, pr, "recv: cannot create the ready file %s: %s", o->ready_file,
			    strerror(-pr));
	}
	pfd = (struct pollfd){ .fd = lfd, .events = POLLIN };
	do
		pr = poll(&pfd, 1, o->accept_timeout_ms);
	while (pr < 0 && errno == EINTR);
	if (pr <= 0) {
		close(lfd);
		if (pr == 0)
			return fail(r, -ETIMEDOUT, "recv: no sender connected to %s within %.1f s",
				    where, o->accept_timeout_ms / 1000.0);
		return fail(r, -errno, "recv: poll: %s", strerror(errno));
	}
	sl = sizeof(ss);
	fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
	close(lfd);
	if (fd < 0)
		return fail(r, -errno, "recv: accept: %s", strerror(errno));
	addr_str(&ss, r->peer, sizeof(r->peer));
	sock_setup(fd, o->io_timeout_ms);
	return fd;
}

/* Answer HELLO: 0 to go on, -errno after sending REFUSE. */
static int recv_handshake(const struct pfs_tcp_recv_opts *o, struct rx *x, uint64_t fp,
			  uint64_t *bound, struct pfs_xfer_result *r)
{
	struct pfs_ctl h, a = { .type = PFS_CTL_ACCEPT, .mode = o->mode,
			       .flags = PFS_CTL_F_INTEGRITY(o->integrity) };
	uint64_t size = o->blob ? pfs_blob__size(o->blob) : 0;
	int err = rx_need(x, PFS_CTL_LEN);

	if (err)
		return fail(r, err, "recv: waiting for HELLO from %s: %s", r->peer, io_what(err));
	err = pfs_ctl_decode(x->buf + x->head, PFS_CTL_LEN, &h);
	x->head += PFS_CTL_LEN;
	a.size = size;
	a.value = fp;
	if (err == -EPROTONOSUPPORT) {
		a.type = PFS_CTL_REFUSE;
		a.word = PFS_REFUSE_VERSION;
		send_ctl(x->fd, &a, &r->wire_bytes);
		return fail(r, -EPERM, "recv: refused %s: protocol version %u, this receiver "
			    "speaks %u", r->peer, x->buf[x->head - PFS_CTL_LEN + 4], PFS_GRAM_VERSION);
	}
	if (err || h.type != PFS_CTL_HELLO)
		return fail(r, -EPROTO, "recv: %s did not open with a valid HELLO (%s)", r->peer,
			    err ? strerror(-err) : "wrong record type");
	r->peer_blob_size = h.size;
	r->peer_fingerprint = h.value;
	if (h.mode != o->mode) {
		a.type = PFS_CTL_REFUSE;
		a.word = PFS_REFUSE_MODE;
		send_ctl(x->fd, &a, &r->wire_bytes);
		return fail(r, -EPERM, "recv: refused %s: mode mismatch: sender uses mode %s, this receiver runs "
			    "mode %s", r->peer, pfs_mode_str(h.mode), pfs_mode_str(o->mode));
	}
	if (PFS_CTL_INTEGRITY(h.flags) != o->integrity) {
		a.type = PFS_CTL_REFUSE;
		a.word = PFS_REFUSE_INTEGRITY;
		send_ctl(x->fd, &a, &r->wire_bytes);
		return fail(r, -EPERM, "recv: refused %s: integrity checksum mismatch: sender uses "
			    "%s, this receiver %s; start both with the same --integrity",
			    r->peer, pfs_integrity_str(PFS_CTL_INTEGRITY(h.flags)),
			    pfs_integrity_str(o->integrity));
	}
	if (o->mode != PFS_MODE_PAYLOAD && (h.size != size || h.value != fp)) {
		a.type = PFS_CTL_REFUSE;
		a.word = h.size != size ? PFS_REFUSE_SIZE : PFS_REFUSE_FINGERPRINT;
		send_ctl(x->fd, &a, &r->wire_bytes);
		return fail(r, -EPERM, "recv: refused %s: %s: sender blob %" PRIu64 " bytes "
			    "fingerprint 0x%016" PRIx64 ", receiver blob %" PRIu64 " bytes "
			    "fingerprint 0x%016" PRIx64 "; %s mode executes over the receiver's "
			    "own blob, so both ends need identical blobs (same size and seed)",
			    r->peer, refuse_str(a.word), h.size, h.value, size, fp,
			    pfs_mode_str(o->mode));
	}
	/* Payload mode needs no shared blob: bounds come from the sender's. */
	*bound = o->mode == PFS_MODE_PAYLOAD ? h.size : size;
	if (o->out_fd >= 0) {
		struct stat st;

		/* Size the output now, so a sender claiming an impossible blob is
		 * refused before any byte is written. */
		if (!fstat(o->out_fd, &st) && S_ISREG(st.st_mode) &&
		    (uint64_t)st.st_size < *bound && ftruncate(o->out_fd, *bound)) {
			int e = errno;

			a.type = PFS_CTL_REFUSE;
			a.word = PFS_REFUSE_SIZE;
			send_ctl(x->fd, &a, &r->wire_bytes);
			return fail(r, -EPERM, "recv: refused %s: cannot size the output to the "
				    "sender's blob size %" PRIu64 " bytes: %s", r->peer, *bound,
				    strerror(e));
		}
	}
	err = send_ctl(x->fd, &a, &r->wire_bytes);
	if (err)
		return fail(r, err, "recv: sending ACCEPT: %s", io_what(err));
	return 0;
}

static int out_write(int fd, const uint8_t *p, size_t len, uint64_t off,
		     struct pfs_xfer_result *r)
{
	while (len) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return fail(r, -errno, "recv: writing output at %" PRIu64 ": %s", off,
				    strerror(errno));
		}
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

/* Payload: hash (and copy out) the slab as it arrives, descriptor by descriptor. */
static int recv_payload(const struct pfs_tcp_recv_opts *o, struct rx *x,
			const struct pfs_desc *d, int n, uint64_t *sum, struct pfs_xfer_result *r)
{
	for (int i = 0; i < n; i++) {
		uint64_t done = 0;

		while (done < d[i].len) {
			size_t avail, take;
			int err;

			if (x->head == x->tail) {
				x->head = x->tail = 0;
				err = rx_read(x, RX_READ_MAX);
				if (err)
					return fail(r, err, "recv: payload of gram %" PRIu64 ": %s",
						    r->grams, io_what(err));
			}
			avail = x->tail - x->head;
			take = d[i].len - done < avail ? d[i].len - done : avail;
			*sum = pfs_digest(o->integrity, *sum, x->buf + x->head, take);
			if (o->out_fd >= 0 &&
			    (err = out_write(o->out_fd, x->buf + x->head, take, d[i].off + done, r)))
				return err;
			x->head += take;
			done += take;
		}
	}
	return 0;
}

static int recv_stream(const struct pfs_tcp_recv_opts *o, struct rx *x, uint64_t bound,
		       struct pfs_desc *d, struct pfs_ctl *end, struct pfs_xfer_result *r)
{
	const uint8_t *base = o->blob ? pfs_blob__data(o->blob) : NULL;
	uint64_t sum = pfs_digest_init(o->integrity);
	int err;

	for (;;) {
		struct pfs_gram_hdr h;
		int n;

		err = rx_need(x, PFS_GRAM_HDR_LEN);
		if (err)
			return fail(r, err, "recv: after %" PRIu64 " grams: %s", r->grams,
				    io_what(err));
		if (pfs_wire_magic(x->buf + x->head, PFS_GRAM_HDR_LEN) == PFS_CTL_MAGIC) {
			err = pfs_ctl_decode(x->buf + x->head, PFS_CTL_LEN, end);
			x->head += PFS_CTL_LEN;
			if (!err && end->type == PFS_CTL_DIGEST && !r->peer_crc_valid) {
				r->peer_crc = end->value;
				r->peer_crc_valid = true;
				continue;
			}
			if (err || end->type != PFS_CTL_END)
				return fail(r, -EPROTO, "recv: bad control record after gram %"
					    PRIu64, r->grams);
			break;
		}
		err = pfs_gram_decode_hdr(x->buf + x->head, PFS_GRAM_HDR_LEN, &h);
		if (!err && (h.seq != r->grams || h.mode != o->mode))
			err = -EBADMSG;
		if (!err) {
			x->head += PFS_GRAM_HDR_LEN;
			err = rx_need(x, h.desc_len);
			if (err)
				return fail(r, err, "recv: table of gram %" PRIu64 ": %s", h.seq,
					    io_what(err));
			n = pfs_gram_decode_desc(&h, x->buf + x->head, h.desc_len, bound, d,
						 PFS_GRAM_MAX_DESC);
			err = n < 0 ? n : 0;
		}
		pfs_gram_stats_count(&r->stats, err);
		if (err)
			return fail(r, -EPROTO, "recv: malformed gram %" PRIu64 " from %s: %s "
				    "(%" PRIu64 " decode errors)", r->grams, r->peer, strerror(-err),
				    r->stats.errors);
		x->head += h.desc_len;
		if (o->mode == PFS_MODE_PAYLOAD) {
			err = recv_payload(o, x, d, n, &sum, r);
			if (err)
				return err;
			r->bytes += h.payload_len;
		} else {
			for (int i = 0; i < n; i++) {
				sum = pfs_digest(o->integrity, sum, base + d[i].off, d[i].len);
				r->bytes += d[i].len;
			}
			if (o->out_fd >= 0)
				for (int i = 0; i < n; i++)
					if ((err = out_write(o->out_fd, base + d[i].off, d[i].len,
							     d[i].off, r)))
						return err;
		}
		r->descs += n;
		r->grams++;
	}
	r->crc = sum;
	return 0;
}

/* The receiver's verdict on END. A 64-bit checksum arrived in a DIGEST
 * record before END (r->peer_crc); CRC32C rides in END itself; with no
 * checksum only the counts can disagree. */
static enum pfs_verdict recv_verdict(const struct pfs_tcp_recv_opts *o, const struct pfs_ctl *end,
				     struct pfs_xfer_result *r)
{
	bool counts = end->size == r->bytes && end->value == r->descs && end->count == r->grams;

	switch (o->integrity) {
	case PFS_INTEGRITY_NONE:
		r->peer_crc_valid = false;
		return counts ? PFS_VERDICT_NA : PFS_VERDICT_MISMATCH;
	case PFS_INTEGRITY_FNV1A64:
		if (!r->peer_crc_valid)
			pfs_err("recv: the sender's END came without its 64-bit digest");
		return counts && r->peer_crc_valid && r->peer_crc == r->crc ?
			       PFS_VERDICT_OK : PFS_VERDICT_MISMATCH;
	default:
		r->peer_crc = end->word;
		r->peer_crc_valid = true;
		return counts && end->word == r->crc ? PFS_VERDICT_OK : PFS_VERDICT_MISMATCH;
	}
}

int pfs_tcp_recv(const struct pfs_tcp_recv_opts *o, struct pfs_xfer_result *r)
{
	struct rx x = { .fd = -1 };
	struct pfs_ctl end, res = { .type = PFS_CTL_RESULT };
	struct pfs_desc *d = NULL;
	double t0, u0, s0, u1, s1;
	uint64_t fp = 0, bound = 0;
	int err;

	memset(r, 0, sizeof(*r));
	if (!o || o->sz < sizeof(*o) || o->mode > PFS_MODE_ARITH || o->integrity > PFS_INTEGRITY_NONE)
		return fail(r, -EINVAL, "recv: invalid options");
	r->mode = o->mode;
	if (o->mode != PFS_MODE_PAYLOAD && !o->blob)
		return fail(r, -EINVAL, "recv: %s mode executes over a local blob: give one",
			    pfs_mode_str(o->mode));
	/* Setup, excluded from the transfer metrics. */
	if (o->blob)
		fp = o->fingerprint ? o->fingerprint : pfs_blob__fingerprint(o->blob);
	x.buf = malloc(RX_BUF);
	d = malloc(PFS_GRAM_MAX_DESC * sizeof(*d));
	if (!x.buf || !d) {
		err = fail(r, -ENOMEM, "recv: out of memory");
		goto out_free;
	}
	x.fd = recv_accept(o, r);
	if (x.fd < 0) {
		err = x.fd;
		goto out_free;
	}
	err = recv_handshake(o, &x, fp, &bound, r);
	if (err)
		goto out_close;
	pfs_info("recv: %s connected, mode %s, blob %" PRIu64 " bytes", r->peer,
		 pfs_mode_str(o->mode), bound);

	t0 = now_s();
	cpu_s(&u0, &s0);
	err = recv_stream(o, &x, bound, d, &end, r);
	cpu_s(&u1, &s1);
	r->elapsed_s = now_s() - t0;
	r->user_s = u1 - u0;
	r->sys_s = s1 - s0;
	if (err)
		goto out_close;

	r->verdict = recv_verdict(o, &end, r);
	if (r->verdict == PFS_VERDICT_MISMATCH)
		pfs_err("recv: integrity MISMATCH: sender %s 0x%" PRIx64 " over %" PRIu64 " bytes in "
			"%" PRIu64 " grams, receiver 0x%" PRIx64 " over %" PRIu64 " bytes in %" PRIu64
			" grams", pfs_integrity_str(o->integrity), r->peer_crc, end.size, end.count,
			r->crc, r->bytes, r->grams);
	res.mode = o->mode;
	res.flags = r->verdict != PFS_VERDICT_MISMATCH ? PFS_CTL_F_OK : 0;
	res.size = r->bytes;
	res.value = r->descs;
	res.count = r->stats.errors;
	res.word = (uint32_t)r->crc;
	err = send_digest(x.fd, o->integrity, r->crc, &r->wire_bytes);
	if (!err)
		err = send_ctl(x.fd, &res, &r->wire_bytes);
	if (err)
		pfs_warn("recv: sending RESULT: %s (the verdict stands)", io_what(err));
	err = 0;
out_close:
	r->wire_bytes += x.wire;
	close(x.fd);
out_free:
	free(d);
	free(x.buf);
	return err;
}

/* ---- sender ---- */

static int send_connect(const struct pfs_tcp_send_opts *o, struct pfs_xfer_result *r)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	double deadline = now_s() + o->connect_timeout_ms / 1000.0;
	int fd, e;

	if (parse_addr(o->host, o->port, &ss, &sl) || !o->host || !*o->host)
		return fail(r, -EINVAL, "send: '%s' is not a numeric IPv4/IPv6 address",
			    o->host ? o->host : "");
	addr_str(&ss, r->peer, sizeof(r->peer));
	for (;;) {
		fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return fail(r, -errno, "send: socket: %s", strerror(errno));
		sock_setup(fd, o->io_timeout_ms);
		if (!connect(fd, (struct sockaddr *)&ss, sl))
			return fd;
		e = errno;
		close(fd);
		/* The receiver may not be listening yet: retry until the deadline. */
		if ((e != ECONNREFUSED && e != ENETUNREACH && e != EHOSTUNREACH &&
		     e != EINPROGRESS && e != EAGAIN && e != ETIMEDOUT) || now_s() >= deadline)
			return fail(r, -e, "send: connect to %s: %s (tried for %.1f s)", r->peer,
				    e == EINPROGRESS ? "timed out" : strerror(e),
				    o->connect_timeout_ms / 1000.0);
		usleep(50000);
	}
}

static int send_handshake(const struct pfs_tcp_send_opts *o, int fd, uint64_t fp,
			  struct pfs_xfer_result *r)
{
	struct pfs_ctl h = { .type = PFS_CTL_HELLO, .mode = o->mode,
			     .flags = PFS_CTL_F_INTEGRITY(o->integrity),
			     .size = pfs_blob__size(o->blob), .value = fp,
			     .count = o->sched.total_bytes, .word = o->desc_per_gram }, a;
	uint8_t rec[PFS_CTL_LEN];
	size_t got = 0;
	int err = send_ctl(fd, &h, &r->wire_bytes);

	if (err)
		return fail(r, err, "send: HELLO to %s: %s", r->peer, io_what(err));
	while (got < sizeof(rec)) {
		ssize_t n = recv(fd, rec + got, sizeof(rec) - got, 0);

		if (n <= 0) {
			err = n == 0 ? -ECONNRESET : io_err(errno);
			if (n < 0 && errno == EINTR)
				continue;
			return fail(r, err, "send: waiting for the receiver's answer: %s",
				    io_what(err));
		}
		got += n;
	}
	err = pfs_ctl_decode(rec, sizeof(rec), &a);
	if (err == -EPROTONOSUPPORT)
		return fail(r, -EPERM, "send: receiver %s speaks protocol version %u, this sender "
			    "%u", r->peer, rec[4], PFS_GRAM_VERSION);
	if (err || (a.type != PFS_CTL_ACCEPT && a.type != PFS_CTL_REFUSE))
		return fail(r, -EPROTO, "send: bad answer to HELLO from %s", r->peer);
	r->peer_blob_size = a.size;
	r->peer_fingerprint = a.value;
	if (a.type == PFS_CTL_REFUSE)
		return fail(r, -EPERM, "send: receiver %s refused: %s (sender: mode %s, blob %"
			    PRIu64 " bytes fingerprint 0x%016" PRIx64 "; receiver: mode %s, blob %"
			    PRIu64 " bytes fingerprint 0x%016" PRIx64 ")%s", r->peer,
			    refuse_str(a.word), pfs_mode_str(o->mode), h.size, fp,
			    pfs_mode_str(a.mode), a.size, a.value,
			    a.word == PFS_REFUSE_FINGERPRINT || a.word == PFS_REFUSE_SIZE ?
			    "; offset and arithmetic modes need the same blob on both ends" :
			    a.word == PFS_REFUSE_INTEGRITY ?
			    "; start both ends with the same --integrity" : "");
	return 0;
}

/* Payload gram: header/table, then the referenced bytes, by writev. */
static int send_payload_gram(int fd, const uint8_t *hdr, size_t hlen, const uint8_t *base,
			     const struct pfs_desc *d, uint32_t n, enum pfs_integrity k,
			     uint64_t *sum, struct pfs_xfer_result *r)
{
	struct iovec iov[TX_IOV];
	int cnt = 1, err;
	size_t batch = hlen;

	iov[0] = (struct iovec){ .iov_base = (void *)hdr, .iov_len = hlen };
	for (uint32_t i = 0; i < n; i++) {
		uint64_t done = 0;

		while (done < d[i].len) {
			size_t take = d[i].len - done < TX_PIECE ? d[i].len - done : TX_PIECE;
			const uint8_t *p = base + d[i].off + done;

			*sum = pfs_digest(k, *sum, p, take);
			iov[cnt++] = (struct iovec){ .iov_base = (void *)p, .iov_len = take };
			batch += take;
			done += take;
			if (cnt == TX_IOV || batch >= TX_PIECE) {
				err = writev_full(fd, iov, cnt, &r->wire_bytes);
				if (err)
					return err;
				cnt = 0;
				batch = 0;
			}
		}
	}
	return cnt ? writev_full(fd, iov, cnt, &r->wire_bytes) : 0;
}

static int send_stream(const struct pfs_tcp_send_opts *o, int fd, struct pfs_desc *d,
		       uint8_t *buf, size_t cap, const struct pfs_crc_index *idx,
		       struct pfs_xfer_result *r)
{
	const uint8_t *base = pfs_blob__data(o->blob);
	size_t need = PFS_GRAM_HDR_LEN + pfs_gram_desc_len_max(o->mode, o->desc_per_gram);
	uint64_t pending = 0;
	struct pfs_sched s;
	size_t fill = 0;
	uint64_t sum = pfs_digest_init(o->integrity);
	uint32_t n;
	int err;

	struct pfs_sched_opts so = o->sched;

	so.blob_size = pfs_blob__size(o->blob);
	if (pfs_sched_init(&s, &so))
		return fail(r, -EINVAL, "send: invalid schedule (align %u must be a power of 2, "
			    "min %u <= max %u, range %" PRIu64 ":%" PRIu64 " inside the %" PRIu64
			    "-byte blob and >= align)", so.align, so.min_len, so.max_len,
			    so.range_off, so.range_len, so.blob_size);
	while ((n = pfs_sched_next(&s, d, o->desc_per_gram,
				   o->mode == PFS_MODE_PAYLOAD ? o->gram_bytes : UINT64_MAX))) {
		ssize_t len;

		if (cap - fill < need) {
			err = write_full(fd, buf, fill, &r->wire_bytes);
			if (err)
				goto out_io;
			fill = 0;
		}
		len = pfs_gram_encode(o->mode, r->grams, d, n, buf + fill, cap - fill);
		if (len < 0)
			return fail(r, (int)len, "send: encoding gram %" PRIu64 ": %s", r->grams,
				    strerror((int)-len));
		if (o->mode == PFS_MODE_PAYLOAD) {
			err = send_payload_gram(fd, buf, len, base, d, n, o->integrity, &sum, r);
			if (err)
				goto out_io;
			for (uint32_t i = 0; i < n; i++)
				r->bytes += d[i].len;
		} else {
			uint64_t eff = 0;

			fill += len;
			for (uint32_t i = 0; i < n; i++)
				eff += d[i].len;
			pending += eff;
			/* Ship before hashing so the receiver executes in parallel. */
			if (pending >= TX_FLUSH_EFFECTIVE) {
				err = write_full(fd, buf, fill, &r->wire_bytes);
				if (err)
					goto out_io;
				fill = 0;
				pending = 0;
			}
			if (idx)
				for (uint32_t i = 0; i < n; i++)
					sum = pfs_crc_index__extend(idx, (uint32_t)sum, d[i].off, d[i].len);
			else
				for (uint32_t i = 0; i < n; i++)
					sum = pfs_digest(o->integrity, sum, base + d[i].off, d[i].len);
			r->bytes += eff;
		}
		r->descs += n;
		r->grams++;
	}
	if (fill && (err = write_full(fd, buf, fill, &r->wire_bytes)))
		goto out_io;
	r->crc = sum;
	return 0;
out_io:
	return fail(r, err, "send: writing gram %" PRIu64 " to %s: %s", r->grams, r->peer,
		    io_what(err));
}

/* The sender's verdict: the receiver's OK flag, and its checksum equal to ours. */
static void send_verdict(enum pfs_integrity k, const struct pfs_ctl *res,
			 struct pfs_xfer_result *r)
{
	bool ok = (res->flags & PFS_CTL_F_OK) && res->size == r->bytes;

	if (k == PFS_INTEGRITY_CRC32C) {
		r->peer_crc = res->word;
		r->peer_crc_valid = true;
	}
	if (k == PFS_INTEGRITY_NONE)
		r->verdict = ok ? PFS_VERDICT_NA : PFS_VERDICT_MISMATCH;
	else
		r->verdict = ok && r->peer_crc_valid && r->peer_crc == r->crc ?
				     PFS_VERDICT_OK : PFS_VERDICT_MISMATCH;
	if (r->verdict == PFS_VERDICT_MISMATCH)
		pfs_err("send: integrity MISMATCH reported by %s: sender %s 0x%" PRIx64 " over %"
			PRIu64 " bytes, receiver 0x%" PRIx64 " over %" PRIu64 " bytes", r->peer,
			pfs_integrity_str(k), r->crc, r->bytes, r->peer_crc, res->size);
}

int pfs_tcp_send(const struct pfs_tcp_send_opts *o, struct pfs_xfer_result *r)
{
	struct pfs_ctl end = { .type = PFS_CTL_END }, res;
	struct pfs_crc_index *idx = NULL;
	struct pfs_desc *d = NULL;
	uint8_t *buf = NULL, rec[PFS_CTL_LEN];
	double t0, u0, s0, u1, s1;
	size_t cap, got = 0;
	uint64_t fp;
	int fd, err;

	memset(r, 0, sizeof(*r));
	if (!o || o->sz < sizeof(*o) || o->mode > PFS_MODE_ARITH || !o->blob ||
	    o->integrity > PFS_INTEGRITY_NONE ||
	    !o->desc_per_gram || o->desc_per_gram > PFS_GRAM_MAX_DESC ||
	    (o->mode == PFS_MODE_PAYLOAD && (!o->gram_bytes || o->gram_bytes > PFS_GRAM_MAX_PAYLOAD)))
		return fail(r, -EINVAL, "send: invalid options (blob, descriptors per gram 1..%u, "
			    "gram bytes 1..%u)", PFS_GRAM_MAX_DESC, PFS_GRAM_MAX_PAYLOAD);
	r->mode = o->mode;
	fp = o->fingerprint ? o->fingerprint : pfs_blob__fingerprint(o->blob);
	cap = TX_BUF + PFS_GRAM_HDR_LEN + pfs_gram_desc_len_max(o->mode, o->desc_per_gram);
	buf = malloc(cap);
	d = malloc(o->desc_per_gram * sizeof(*d));
	if (!buf || !d) {
		err = fail(r, -ENOMEM, "send: out of memory");
		goto out_free;
	}
	/* Offset/arith senders reference bytes without sending them: their
	 * CRC32C comes from an index of the blob built here, during setup (before
	 * connecting, so the receiver's clock does not run meanwhile), so
	 * the sender reads 2 partial granules per descriptor instead of all of
	 * its bytes. The receiver still hashes every byte of its own copy. */
	if (o->mode != PFS_MODE_PAYLOAD && o->integrity == PFS_INTEGRITY_CRC32C) {
		double b0 = now_s();

		idx = pfs_crc_index__build(pfs_blob__data(o->blob), pfs_blob__size(o->blob));
		if (idx) {
			snprintf(r->path, sizeof(r->path), "tcp; sender CRC32C from a %u-byte-granule "
				 "CRC index of its blob", PFS_CRC_INDEX_GRANULE);
			pfs_info("send: CRC index of the blob built in %.3f s (setup)", now_s() - b0);
		} else {
			pfs_warn("send: no memory for the blob's CRC index; hashing the bytes instead");
		}
	}
	fd = send_connect(o, r);
	if (fd < 0) {
		err = fd;
		goto out_free;
	}
	err = send_handshake(o, fd, fp, r);
	if (err)
		goto out_close;

	t0 = now_s();
	cpu_s(&u0, &s0);
	err = send_stream(o, fd, d, buf, cap, idx, r);
	if (err)
		goto out_close;
	end.mode = o->mode;
	end.size = r->bytes;
	end.value = r->descs;
	end.count = r->grams;
	end.word = (uint32_t)r->crc;
	err = send_digest(fd, o->integrity, r->crc, &r->wire_bytes);
	if (!err)
		err = send_ctl(fd, &end, &r->wire_bytes);
	if (err) {
		err = fail(r, err, "send: END to %s: %s", r->peer, io_what(err));
		goto out_close;
	}
	/* RESULT, after a DIGEST when the checksum is 64 bits wide. */
	for (;;) {
		while (got < sizeof(rec)) {
			ssize_t n = recv(fd, rec + got, sizeof(rec) - got, 0);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				err = n == 0 ? -ECONNRESET : io_err(errno);
				err = fail(r, err, "send: waiting for the receiver's RESULT: %s",
					   io_what(err));
				goto out_close;
			}
			got += n;
		}
		got = 0;
		if (pfs_ctl_decode(rec, sizeof(rec), &res) ||
		    (res.type != PFS_CTL_RESULT && (res.type != PFS_CTL_DIGEST || r->peer_crc_valid))) {
			err = fail(r, -EPROTO, "send: bad RESULT record from %s", r->peer);
			goto out_close;
		}
		if (res.type == PFS_CTL_RESULT)
			break;
		r->peer_crc = res.value;
		r->peer_crc_valid = true;
	}
	cpu_s(&u1, &s1);
	r->elapsed_s = now_s() - t0;
	r->user_s = u1 - u0;
	r->sys_s = s1 - s0;
	send_verdict(o->integrity, &res, r);
out_close:
	close(fd);
out_free:
	pfs_crc_index__free(idx);
	free(d);
	free(buf);
	return err;
}
