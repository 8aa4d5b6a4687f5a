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
 * payload straight from the blob in pieces of at most 256 KiB. With CRC32C
 * every sender takes its checksum from a CRC index of its blob built at
 * setup (the receiver hashes every byte it got, so a byte changed after the
 * index, on the wire or in either copy, is a MISMATCH): payload senders
 * then read each byte once, in the kernel's copy, instead of twice, which
 * on a 2-vCPU machine leaves the receiver and the TCP stack the CPU.
 *
 * Receiver: a 4 MiB receive buffer owned by the receiver thread; headers and
 * tables are decoded in place, payload is hashed in chunks of at most
 * 256 KiB as it arrives. Into a blob (out_mem), payload beyond what is
 * already buffered is received straight into the blob's pages at its offset
 * and hashed there right after each piece lands, while it is in cache: no
 * bounce buffer, one copy (the kernel's). A malformed gram ends the transfer with -EPROTO
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
#include "engine.h"
#include "pfs/tcp.h"
#include "pfs/wire.h"
#include "xfer_ctl.h"

#define RX_BUF (4u << 20)
#ifndef RX_READ_MAX
#define RX_READ_MAX (256u << 10)
#endif
#define TX_BUF (1u << 20)
#define TX_FLUSH_EFFECTIVE (8ULL << 20)
#ifndef TX_PIECE
#define TX_PIECE (256u << 10)
#endif
#define TX_IOV 64
#define EXEC_STEP (4u << 20) /* referenced bytes executed between deadline checks */

/* Receive buffer: bytes [head, tail) are unread. Owned by one thread. */
struct rx {
	int fd;
	uint8_t *buf;
	size_t head, tail;
	uint64_t wire;
	double deadline; /* CLOCK_MONOTONIC s: the current record must be whole by then */
	double timeout_s; /* --timeout: how far each deadline lies */
};

/* Read what is there into @dst, up to @max bytes; wait for it no later
 * than x->deadline. The timeout is a deadline for a whole record, not one
 * per recv(): a peer sending a byte a second must not keep the receiver
 * alive. The happy path is one recv(); poll() only when the socket is
 * empty. The bytes read, or -errno. */
static ssize_t rx_recv(struct rx *x, uint8_t *dst, size_t max)
{
	for (;;) {
		ssize_t n = recv(x->fd, dst, max, MSG_DONTWAIT);
		struct pollfd pfd = { .fd = x->fd, .events = POLLIN };
		double left;

		if (n > 0) {
			x->wire += n;
			return n;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return pfs_xfer_io_err(errno);
		left = x->deadline - pfs_xfer_now();
		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, (int)(left * 1000) + 1) < 0 && errno != EINTR)
			return -errno;
	}
}

/* rx_recv into the buffer's tail. 0 or -errno. */
static int rx_read(struct rx *x, size_t max)
{
	ssize_t n = rx_recv(x, x->buf + x->tail, max);

	if (n < 0)
		return (int)n;
	x->tail += (size_t)n;
	return 0;
}

/* Words for a failed read of a record: a timeout is the deadline. */
static const char *rx_what(const struct rx *x, int err, char *buf, size_t n)
{
	if (err != -ETIMEDOUT)
		return pfs_xfer_io_what(err);
	snprintf(buf, n,
		 "timed out: not complete within %.1f s (--timeout: a gram must arrive whole "
		 "within it); dropped",
		 x->timeout_s);
	return buf;
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
							  RX_READ_MAX :
							  RX_BUF - x->tail :
							  want);

		if (err)
			return err;
	}
	return 0;
}

/* ---- receiver ---- */

/* The first connection that sends a whole HELLO within --timeout; its
 * HELLO is left in the receive buffer. */
static int recv_accept(const struct pfs_xfer_opts *o, struct rx *x, struct pfs_xfer_result *r)
{
	const struct pfs_xfer_accept_opts ao = { .accept_timeout_ms = o->recv.accept_timeout_ms,
						 .hello_timeout_ms = o->io_timeout_ms,
						 .io_timeout_ms = o->io_timeout_ms,
						 .ready_file = o->recv.ready_file,
						 .auth = &o->auth };
	int lfd = pfs_xfer_listen(o->host, o->port, "tcp", r), fd;

	if (lfd < 0)
		return lfd;
	fd = pfs_xfer_accept_hello(lfd, &ao, x->buf, r);
	if (fd >= 0) {
		x->head = 0;
		x->tail = PFS_CTL_LEN;
		x->wire += PFS_CTL_LEN;
	}
	return fd;
}

/* Answer HELLO: 0 to go on, -errno after sending REFUSE. */
static int recv_handshake(const struct pfs_xfer_opts *o, struct rx *x, uint64_t fp,
			  struct pfs_xfer_agreed *ag, struct pfs_xfer_result *r)
{
	const struct pfs_xfer_terms t = pfs_xfer_terms_of(o, fp);
	struct pfs_ctl a;
	int err;

	err = pfs_xfer_hello_check(x->buf + x->head, &t, ag, &a, r);
	x->head += PFS_CTL_LEN;
	if (err == -EPROTO)
		return err;
	if (err) {
		pfs_xfer_send_ctl(x->fd, &a, &r->wire_bytes);
		return err;
	}
	err = pfs_xfer_send_ctl(x->fd, &a, &r->wire_bytes);
	if (err)
		return pfs_xfer_fail(r, err, "recv: sending ACCEPT: %s", pfs_xfer_io_what(err));
	return 0;
}

/* Payload: hash (and copy out) the slab as it arrives, descriptor by descriptor. */
static int recv_payload(const struct pfs_xfer_opts *o, struct rx *x, const struct pfs_desc *d,
			int n, uint64_t *sum, struct pfs_xfer_result *r)
{
	char why[128];

	for (int i = 0; i < n; i++) {
		uint64_t done = 0;

		while (done < d[i].len) {
			size_t avail, take;
			int err;

			if (x->head == x->tail) {
				x->head = x->tail = 0;
				err = rx_read(x, RX_READ_MAX);
				if (err)
					return pfs_xfer_fail(r, err,
							     "recv: payload of gram %" PRIu64
							     " from %s: %s",
							     r->grams, r->peer,
							     rx_what(x, err, why, sizeof(why)));
			}
			avail = x->tail - x->head;
			take = d[i].len - done < avail ? d[i].len - done : avail;
			*sum = pfs_digest(o->integrity, *sum, x->buf + x->head, take);
			if (o->recv.out_fd >= 0 &&
			    (err = pfs_xfer_out_write(o->recv.out_fd, x->buf + x->head, take,
						      d[i].off + done, r)))
				return err;
			x->head += take;
			done += take;
		}
	}
	return 0;
}

/* Payload into o->recv.out_mem: see the file comment. */
static int recv_payload_mem(const struct pfs_xfer_opts *o, struct rx *x, const struct pfs_desc *d,
			    int n, uint64_t *sum, struct pfs_xfer_result *r)
{
	for (int i = 0; i < n; i++) {
		uint8_t *dst = o->recv.out_mem + d[i].off;
		uint64_t done = x->tail - x->head < d[i].len ? x->tail - x->head : d[i].len;

		memcpy(dst, x->buf + x->head, done);
		*sum = pfs_digest(o->integrity, *sum, dst, done);
		x->head += done;
		while (done < d[i].len) {
			size_t want = d[i].len - done < RX_READ_MAX ? d[i].len - done : RX_READ_MAX;
			ssize_t got = rx_recv(x, dst + done, want);
			char why[128];

			if (got < 0)
				return pfs_xfer_fail(
					r, (int)got,
					"recv: payload of gram %" PRIu64 " from %s: %s", r->grams,
					r->peer, rx_what(x, (int)got, why, sizeof(why)));
			*sum = pfs_digest(o->integrity, *sum, dst + done, (size_t)got);
			done += (uint64_t)got;
		}
	}
	if (x->head == x->tail)
		x->head = x->tail = 0;
	return 0;
}

/* The sum of a decoded gram's descriptor lengths: what executing it costs. */
static uint64_t gram_effective(const struct pfs_desc *d, int n)
{
	uint64_t eff = 0;

	for (int i = 0; i < n; i++)
		eff += d[i].len;
	return eff;
}

/* Offset/arith: hash (and copy out) the receiver's own bytes the gram
 * references, EXEC_STEP at a time, so a gram of gigabytes still notices
 * the deadline it must complete by. */
static int recv_exec(const struct pfs_xfer_opts *o, const struct pfs_desc *d, int n,
		     double deadline, uint64_t *sum, struct pfs_xfer_result *r)
{
	const uint8_t *base = pfs_blob__data(o->blob);
	uint64_t budget = EXEC_STEP;
	int err;

	for (int i = 0; i < n; i++) {
		for (uint64_t done = 0; done < d[i].len;) {
			uint64_t take = d[i].len - done < budget ? d[i].len - done : budget;

			*sum = pfs_digest(o->integrity, *sum, base + d[i].off + done, take);
			if (o->recv.out_fd >= 0 &&
			    (err = pfs_xfer_out_write(o->recv.out_fd, base + d[i].off + done, take,
						      d[i].off + done, r)))
				return err;
			done += take;
			budget -= take;
			if (budget)
				continue;
			budget = EXEC_STEP;
			if (pfs_xfer_now() > deadline)
				return pfs_xfer_fail(r, -ETIMEDOUT,
						     "recv: gram %" PRIu64 " from %s not executed "
						     "within %.1f s (--timeout); dropped",
						     r->grams, r->peer, o->io_timeout_ms / 1000.0);
		}
		pfs_xfer_add_bytes(r, d[i].len);
	}
	return 0;
}

static int recv_stream(const struct pfs_xfer_opts *o, struct rx *x,
		       const struct pfs_xfer_agreed *ag, struct pfs_desc *d, struct pfs_ctl *end,
		       struct pfs_xfer_result *r)
{
	uint64_t sum = pfs_digest_init(o->integrity);
	char why[128];
	int err;

	for (;;) {
		struct pfs_gram_hdr h;
		uint64_t eff = 0;
		int n;

		/* Each gram (or the END after the last) must be whole, and an
		 * offset/arith gram executed, within --timeout of the one before. */
		x->deadline = pfs_xfer_now() + o->io_timeout_ms / 1000.0;
		err = rx_need(x, PFS_GRAM_HDR_LEN);
		if (err)
			return pfs_xfer_fail(r, err,
					     "recv: gram %" PRIu64
					     " (or END) from %s: %s (%zu of its "
					     "%u header bytes arrived)",
					     r->grams, r->peer, rx_what(x, err, why, sizeof(why)),
					     x->tail - x->head, PFS_GRAM_HDR_LEN);
		if (pfs_wire_magic(x->buf + x->head, PFS_GRAM_HDR_LEN) == PFS_CTL_MAGIC) {
			err = pfs_ctl_decode(x->buf + x->head, PFS_CTL_LEN, end);
			x->head += PFS_CTL_LEN;
			if (!err && end->type == PFS_CTL_DIGEST && !r->peer_crc_valid) {
				r->peer_crc = end->value;
				r->peer_crc_valid = true;
				continue;
			}
			if (err || end->type != PFS_CTL_END)
				return pfs_xfer_fail(r, -EPROTO,
						     "recv: bad control record after gram %" PRIu64,
						     r->grams);
			break;
		}
		err = pfs_gram_decode_hdr(x->buf + x->head, PFS_GRAM_HDR_LEN, &h);
		if (!err && (h.seq != r->grams || h.mode != o->mode))
			err = -EBADMSG;
		if (!err) {
			x->head += PFS_GRAM_HDR_LEN;
			err = rx_need(x, h.desc_len);
			if (err)
				return pfs_xfer_fail(
					r, err, "recv: table of gram %" PRIu64 " from %s: %s",
					h.seq, r->peer, rx_what(x, err, why, sizeof(why)));
			n = pfs_gram_decode_desc(&h, x->buf + x->head, h.desc_len, ag->bound, d,
						 PFS_GRAM_MAX_DESC);
			err = n < 0 ? n : 0;
		}
		/* Work beyond what the HELLO announced is refused, like a
		 * malformed gram, before any of it is done. */
		if (!err && (eff = gram_effective(d, n)) > ag->planned - r->bytes) {
			pfs_gram_stats_count(&r->stats, -E2BIG);
			return pfs_xfer_fail(r, -EPROTO,
					     "recv: gram %" PRIu64 " from %s references %" PRIu64
					     " bytes, past the %" PRIu64 " effective bytes its "
					     "HELLO announced (%" PRIu64 " done); dropped",
					     r->grams, r->peer, eff, ag->planned, r->bytes);
		}
		pfs_gram_stats_count(&r->stats, err);
		if (err)
			return pfs_xfer_fail(r, -EPROTO,
					     "recv: malformed gram %" PRIu64 " from %s: %s "
					     "(%" PRIu64 " decode errors)",
					     r->grams, r->peer, pfs_wire_strerror(err),
					     r->stats.errors);
		x->head += h.desc_len;
		if (o->mode == PFS_MODE_PAYLOAD) {
			err = o->recv.out_mem ? recv_payload_mem(o, x, d, n, &sum, r) :
						recv_payload(o, x, d, n, &sum, r);
			if (err)
				return err;
			pfs_xfer_add_bytes(r, h.payload_len);
		} else {
			err = recv_exec(o, d, n, x->deadline, &sum, r);
			if (err)
				return err;
		}
		r->descs += n;
		r->grams++;
	}
	r->crc = sum;
	return 0;
}

/* A checksum wider than a control word goes ahead of END/RESULT. */
static int send_digest(int fd, enum pfs_integrity k, uint64_t sum, uint64_t *wire)
{
	struct pfs_ctl dg = { .type = PFS_CTL_DIGEST, .value = sum, .word = k };

	return k == PFS_INTEGRITY_FNV1A64 ? pfs_xfer_send_ctl(fd, &dg, wire) : 0;
}

/* The receiver's verdict on END. A 64-bit checksum arrived in a DIGEST
 * record before END (r->peer_crc); CRC32C rides in END itself; with no
 * checksum only the counts can disagree. */
static enum pfs_verdict recv_verdict(const struct pfs_xfer_opts *o, const struct pfs_ctl *end,
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
		return counts && r->peer_crc_valid && r->peer_crc == r->crc ? PFS_VERDICT_OK :
									      PFS_VERDICT_MISMATCH;
	default:
		r->peer_crc = end->word;
		r->peer_crc_valid = true;
		return counts && end->word == r->crc ? PFS_VERDICT_OK : PFS_VERDICT_MISMATCH;
	}
}

int pfs_tcp_recv(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r)
{
	struct rx x = { .fd = -1 };
	struct pfs_ctl end, res;
	struct pfs_desc *d = NULL;
	double t0, u0, s0, u1, s1;
	struct pfs_xfer_agreed ag = { 0 };
	uint64_t fp = 0;
	int err;

	/* Setup, excluded from the transfer metrics. */
	if (o->blob)
		fp = o->fingerprint ? o->fingerprint : pfs_blob__fingerprint(o->blob);
	x.buf = malloc(RX_BUF);
	d = malloc(PFS_GRAM_MAX_DESC * sizeof(*d));
	if (!x.buf || !d) {
		err = pfs_xfer_fail(r, -ENOMEM, "recv: out of memory");
		goto out_free;
	}
	x.timeout_s = o->io_timeout_ms / 1000.0;
	x.fd = recv_accept(o, &x, r);
	if (x.fd < 0) {
		err = x.fd;
		goto out_free;
	}
	err = recv_handshake(o, &x, fp, &ag, r);
	if (err)
		goto out_close;
	pfs_info("recv: %s connected, mode %s, blob %" PRIu64 " bytes", r->peer,
		 pfs_mode_str(o->mode), ag.bound);

	t0 = pfs_xfer_now();
	pfs_xfer_cpu(&u0, &s0);
	err = recv_stream(o, &x, &ag, d, &end, r);
	pfs_xfer_cpu(&u1, &s1);
	r->elapsed_s = pfs_xfer_now() - t0;
	r->user_s = u1 - u0;
	r->sys_s = s1 - s0;
	if (err)
		goto out_close;

	r->verdict = recv_verdict(o, &end, r);
	if (r->verdict == PFS_VERDICT_MISMATCH)
		pfs_err("recv: integrity MISMATCH: sender %s 0x%" PRIx64 " over %" PRIu64
			" bytes in "
			"%" PRIu64 " grams, receiver 0x%" PRIx64 " over %" PRIu64
			" bytes in %" PRIu64 " grams",
			pfs_integrity_str(o->integrity), r->peer_crc, end.size, end.count, r->crc,
			r->bytes, r->grams);
	res = pfs_xfer_result_of(r);
	err = send_digest(x.fd, o->integrity, r->crc, &r->wire_bytes);
	if (!err)
		err = pfs_xfer_send_ctl(x.fd, &res, &r->wire_bytes);
	if (err)
		pfs_warn("recv: sending RESULT: %s (the verdict stands)", pfs_xfer_io_what(err));
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

static int send_handshake(const struct pfs_xfer_opts *o, int fd, uint64_t fp,
			  struct pfs_xfer_result *r)
{
	struct pfs_ctl h = pfs_xfer_hello_of(o, fp);
	uint8_t rec[PFS_CTL_LEN];
	int err = pfs_xfer_send_hello(fd, &h, &o->auth, &r->wire_bytes, r);

	if (err)
		return err;
	err = pfs_xfer_read_full(fd, rec, sizeof(rec), &r->wire_bytes);
	if (err)
		return pfs_xfer_fail(r, err, "send: waiting for the receiver's answer: %s",
				     pfs_xfer_io_what(err));
	return pfs_xfer_answer_check(rec, &h, fp, r);
}

/* The sender's checksum over a descriptor: from the index when there is one. */
static uint64_t send_sum(const struct pfs_crc_index *idx, enum pfs_integrity k, uint64_t sum,
			 const uint8_t *base, const struct pfs_desc *d)
{
	return idx ? pfs_crc_index__extend(idx, (uint32_t)sum, d->off, d->len) :
		     pfs_digest(k, sum, base + d->off, d->len);
}

/* Payload gram: header/table, then the referenced bytes, by writev. Without
 * an index each piece is hashed just before its writev, so the kernel copies
 * bytes still in cache. */
static int send_payload_gram(int fd, const uint8_t *hdr, size_t hlen, const uint8_t *base,
			     const struct pfs_desc *d, uint32_t n, enum pfs_integrity k,
			     const struct pfs_crc_index *idx, uint64_t *sum,
			     struct pfs_xfer_result *r)
{
	struct iovec iov[TX_IOV];
	int cnt = 1, err;
	size_t batch = hlen;

	iov[0] = (struct iovec){ .iov_base = (void *)hdr, .iov_len = hlen };
	for (uint32_t i = 0; i < n; i++) {
		uint64_t done = 0;

		if (idx)
			*sum = send_sum(idx, k, *sum, base, &d[i]);
		while (done < d[i].len) {
			size_t take = d[i].len - done < TX_PIECE ? d[i].len - done : TX_PIECE;
			const uint8_t *p = base + d[i].off + done;

			if (!idx)
				*sum = pfs_digest(k, *sum, p, take);
			iov[cnt++] = (struct iovec){ .iov_base = (void *)p, .iov_len = take };
			batch += take;
			done += take;
			if (cnt == TX_IOV || batch >= TX_PIECE) {
				err = pfs_xfer_writev_full(fd, iov, cnt, &r->wire_bytes);
				if (err)
					return err;
				cnt = 0;
				batch = 0;
			}
		}
	}
	return cnt ? pfs_xfer_writev_full(fd, iov, cnt, &r->wire_bytes) : 0;
}

static int send_stream(const struct pfs_xfer_opts *o, int fd, struct pfs_desc *d, uint8_t *buf,
		       size_t cap, const struct pfs_crc_index *idx, struct pfs_xfer_result *r)
{
	const uint8_t *base = pfs_blob__data(o->blob);
	size_t need = PFS_GRAM_HDR_LEN + pfs_gram_desc_len_max(o->mode, o->send.desc_per_gram);
	uint64_t pending = 0;
	struct pfs_sched s;
	size_t fill = 0;
	uint64_t sum = pfs_digest_init(o->integrity);
	uint32_t n;
	int err;

	struct pfs_sched_opts so = o->send.sched;

	so.blob_size = pfs_blob__size(o->blob);
	if (pfs_sched_init(&s, &so))
		return pfs_xfer_fail(r, -EINVAL,
				     "send: invalid schedule (align %u must be a power of 2, "
				     "min %u <= max %u, range %" PRIu64 ":%" PRIu64
				     " inside the %" PRIu64 "-byte blob and >= align)",
				     so.align, so.min_len, so.max_len, so.range_off, so.range_len,
				     so.blob_size);
	while ((n = pfs_sched_next(&s, d, o->send.desc_per_gram,
				   o->mode == PFS_MODE_PAYLOAD ? o->send.gram_bytes :
								 PFS_GRAM_MAX_EFFECTIVE))) {
		ssize_t len;

		if (cap - fill < need) {
			err = pfs_xfer_write_full(fd, buf, fill, &r->wire_bytes);
			if (err)
				goto out_io;
			fill = 0;
		}
		len = pfs_gram_encode(o->mode, r->grams, d, n, buf + fill, cap - fill);
		if (len < 0)
			return pfs_xfer_fail(r, (int)len, "send: encoding gram %" PRIu64 ": %s",
					     r->grams, strerror((int)-len));
		if (o->mode == PFS_MODE_PAYLOAD) {
			err = send_payload_gram(fd, buf, len, base, d, n, o->integrity, idx, &sum,
						r);
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
				err = pfs_xfer_write_full(fd, buf, fill, &r->wire_bytes);
				if (err)
					goto out_io;
				fill = 0;
				pending = 0;
			}
			for (uint32_t i = 0; i < n; i++)
				sum = send_sum(idx, o->integrity, sum, base, &d[i]);
			r->bytes += eff;
		}
		r->descs += n;
		r->grams++;
	}
	if (fill && (err = pfs_xfer_write_full(fd, buf, fill, &r->wire_bytes)))
		goto out_io;
	r->crc = sum;
	return 0;
out_io:
	return pfs_xfer_fail(r, err, "send: writing gram %" PRIu64 " to %s: %s", r->grams, r->peer,
			     pfs_xfer_io_what(err));
}

/* The sender's verdict: the receiver's OK flag, and its checksum equal to ours. */
static void send_verdict(enum pfs_integrity k, const struct pfs_ctl *res, struct pfs_xfer_result *r)
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
				     PFS_VERDICT_OK :
				     PFS_VERDICT_MISMATCH;
	if (r->verdict == PFS_VERDICT_MISMATCH)
		pfs_err("send: integrity MISMATCH reported by %s: sender %s 0x%" PRIx64
			" over %" PRIu64 " bytes, receiver 0x%" PRIx64 " over %" PRIu64 " bytes",
			r->peer, pfs_integrity_str(k), r->crc, r->bytes, r->peer_crc, res->size);
}

int pfs_tcp_send(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r)
{
	struct pfs_ctl end = { .type = PFS_CTL_END }, res;
	struct pfs_crc_index *idx = NULL;
	struct pfs_desc *d = NULL;
	uint8_t *buf = NULL, rec[PFS_CTL_LEN];
	double t0, u0, s0, u1, s1;
	size_t cap;
	uint64_t fp;
	int fd, err;

	fp = o->fingerprint ? o->fingerprint : pfs_blob__fingerprint(o->blob);
	cap = TX_BUF + PFS_GRAM_HDR_LEN + pfs_gram_desc_len_max(o->mode, o->send.desc_per_gram);
	buf = malloc(cap);
	d = malloc(o->send.desc_per_gram * sizeof(*d));
	if (!buf || !d) {
		err = pfs_xfer_fail(r, -ENOMEM, "send: out of memory");
		goto out_free;
	}
	/* The sender's CRC32C comes from an index of the blob built here, during
	 * setup (before connecting, so the receiver's clock does not run
	 * meanwhile): offset/arith senders reference bytes without reading them,
	 * payload senders let the kernel's copy be the only read, and each reads
	 * 2 partial granules per descriptor for its checksum. The receiver still
	 * hashes every byte it executes or receives. Building the index reads the
	 * whole blob, so a payload sender moving less than the blob's size hashes
	 * the bytes it sends instead. */
	if (o->integrity == PFS_INTEGRITY_CRC32C &&
	    (o->mode != PFS_MODE_PAYLOAD || o->send.sched.total_bytes >= pfs_blob__size(o->blob))) {
		double b0 = pfs_xfer_now();

		idx = pfs_crc_index__build(pfs_blob__data(o->blob), pfs_blob__size(o->blob));
		if (idx) {
			snprintf(r->path, sizeof(r->path),
				 "tcp; sender CRC32C from a %u-byte-granule "
				 "CRC index of its blob",
				 PFS_CRC_INDEX_GRANULE);
			pfs_info("send: CRC index of the blob built in %.3f s (setup)",
				 pfs_xfer_now() - b0);
		} else {
			pfs_warn(
				"send: no memory for the blob's CRC index; hashing the bytes instead");
		}
	}
	fd = pfs_xfer_connect(o->host, o->port, o->send.connect_timeout_ms, o->io_timeout_ms, r);
	if (fd < 0) {
		err = fd;
		goto out_free;
	}
	err = send_handshake(o, fd, fp, r);
	if (err)
		goto out_close;

	t0 = pfs_xfer_now();
	pfs_xfer_cpu(&u0, &s0);
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
		err = pfs_xfer_send_ctl(fd, &end, &r->wire_bytes);
	if (err) {
		err = pfs_xfer_fail(r, err, "send: END to %s: %s", r->peer, pfs_xfer_io_what(err));
		goto out_close;
	}
	/* RESULT, after a DIGEST when the checksum is 64 bits wide. */
	for (;;) {
		err = pfs_xfer_read_full(fd, rec, sizeof(rec), &r->wire_bytes);
		if (err) {
			err = pfs_xfer_fail(r, err, "send: waiting for the receiver's RESULT: %s",
					    pfs_xfer_io_what(err));
			goto out_close;
		}
		if (pfs_ctl_decode(rec, sizeof(rec), &res) ||
		    (res.type != PFS_CTL_RESULT &&
		     (res.type != PFS_CTL_DIGEST || r->peer_crc_valid))) {
			err = pfs_xfer_fail(r, -EPROTO, "send: bad RESULT record from %s", r->peer);
			goto out_close;
		}
		if (res.type == PFS_CTL_RESULT)
			break;
		r->peer_crc = res.value;
		r->peer_crc_valid = true;
	}
	pfs_xfer_cpu(&u1, &s1);
	r->elapsed_s = pfs_xfer_now() - t0;
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
