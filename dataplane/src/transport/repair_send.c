// SPDX-License-Identifier: Apache-2.0
/*
 * Datagram transports (udp, afxdp), sender. One thread owns everything: the
 * TCP control connection, the datagram I/O (dgram_io.h: a connected UDP
 * socket, or AF_XDP sockets), UDP_WINDOW send slots, the repair queue and
 * the pacer. No locks.
 *
 * Why a TCP control connection (same port number as the data): the
 * handshake, END and the verdict must arrive exactly once and in order, and
 * the NAK/ACK stream is small (tens of bytes per tick), so TCP's head-of-line
 * blocking costs nothing there while it gives us reliability for free and,
 * above all, a dead receiver in one round trip: the kernel closes the
 * connection of a killed process, so the sender sees EOF/RST at once instead
 * of waiting out a timer. Data never waits behind control: it has its own
 * socket.
 *
 * Grams: the schedule fills slot seq % UDP_WINDOW with the encoded gram,
 * and in payload mode copies the referenced blob bytes behind the table, so
 * the slot holds the exact bytes of the gram (at most UDP_GRAM_PAYLOAD_MAX
 * of payload) and a repair is a plain re-send of a fragment from the slot.
 * Offset/arithmetic grams are tiny (a descriptor table); a repair re-sends
 * the missing part of that table. A slot is reused only after the receiver's
 * cumulative ACK has passed its gram (and, offset/arithmetic, after its
 * bytes were hashed: hashing runs after the gram's fragments went out, at
 * most HASH_STEP bytes per loop turn, so the receiver works meanwhile and
 * ACKs/NAKs are read promptly). Slots are faulted in during setup.
 *
 * Fragments: gram bytes are cut every cfg.frag bytes (MTU - IP/UDP headers -
 * 32-byte fragment header); one call of the io's send takes up to TX_BATCH
 * messages and at most TX_BYTES of new data (on veth the receiver's softirq
 * runs inside our call); a message is io->segs fragments at most (UDP GSO
 * on a socket, see dgram_sock.c; 1 over AF_XDP, see dgram_xsk.c).
 *
 * Pacing (rate-based AIMD): a token bucket at `rate` bytes/s, starting at
 * 128 MB/s (burst: 2 ms of rate or two GSO messages). Each ACK (every 1 ms)
 * either grows the rate (x1.25 until the first congestion signal, then
 * +4 MB/s per ACK, at most RATE_MAX) or, on a congestion signal, cuts it to
 * 0.7x at most once per RTT. The congestion signal is the receiver's socket
 * dropping datagrams (SO_RXQ_OVFL, carried in the ACK) or a NAKed share
 * above 25% of the last >= LOSS_SPAN datagrams sent. Random loss on the
 * path (netem 1-5%) is repaired but not read as congestion: halving on
 * every loss, as TCP Reno does, would collapse the rate on a lossy but idle
 * path, and a receiver too slow for us shows up first as its own socket
 * overflowing. The window (UDP_WINDOW grams, 64 MiB of payload) bounds what
 * a slow receiver can be owed; it is sized to keep sending while holes are
 * repaired, and the receiver's socket buffer is sized to hold it.
 *
 * Repairs: a NAK names missing fragments; each is queued unless it was sent
 * less than max(2 ms, 1.5 RTT + 1 ms) ago (the receiver re-asks a gram no
 * sooner than 4 ms, two of its NAK-to-repair times, or 1.5x the queueing
 * delay it sees + 2 ms; the RTT comes from the timestamps the ACKs echo).
 * Repairs go before fresh data and are paced like it. No ACK progress for
 * io_timeout_ms, or the control connection closing, ends the transfer with
 * an error.
 */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "pfs/dgram_auth.h"
#include "pfs/integrity.h"
#include "dgram_io.h"
#include "engine.h"
#include "pfs/log.h"
#include "pfs/wire.h"
#include "repair.h"

#define TX_BATCH 64
#define TX_BYTES (1u << 20) /* fresh bytes per sendmmsg call, at most */
#define RQ_CAP (1u << 16)
#define RATE_START 128e6
#define RATE_MIN 4e6
#define RATE_MAX 8e9
#define RATE_STEP 4e6
#define HASH_STEP (4u << 20)
#define LOSS_SPAN 1024 /* datagrams a loss share is measured over */

struct sslot {
	uint64_t seq;
	uint32_t len, nfrags, next_fresh, nd;
	uint8_t *buf;
	double *sent_at;
	struct pfs_desc *d;
};

struct rq_ent {
	uint64_t seq;
	uint32_t frag;
};

struct tx {
	const struct pfs_xfer_opts *o;
	struct pfs_xfer_result *r;
	int cfd;
	struct pfs_dgram_io *io;
	struct pfs_udp_cfg cfg;
	struct sslot slots[UDP_WINDOW];
	struct pfs_sched sched;
	bool sched_done, end_sent, got_result;
	bool src_wait; /* the next gram's bytes are not in the blob yet */
	double wait_sent; /* when the last WAIT went to the receiver */
	uint64_t acked, produced, fresh_seq, hashed;
	uint32_t hash_desc, hash_off; /* progress inside gram `hashed` */
	const uint8_t *base;
	uint32_t crc;
	struct pfs_ctl res;
	/* repair queue: ring of fragments to re-send */
	struct rq_ent *rq;
	uint32_t rq_head, rq_tail;
	/* pacing */
	double rate, rate_max, tokens, tok_at, last_dec, srtt;
	bool slow_start;
	uint64_t ovfl_seen, loss_sent, loss_naked;
	double progress_at;
	bool io_full; /* the last send left messages behind (device full) */
	uint64_t icmp_refused; /* sends the data socket's pending ICMP error failed */
	/* the batch for io->ops->send; also what to roll back after a partial send */
	struct pfs_dgram_msg what[TX_BATCH];
	uint32_t what_bytes[TX_BATCH];
	struct pfs_udp_ctlin *cin;
};

static struct sslot *slot_of(struct tx *t, uint64_t seq)
{
	return &t->slots[seq % UDP_WINDOW];
}

/* Tell the receiver why the transfer ends (ABORT: its errno and the text
 * @fmt makes), then fail with @err, the text behind @what if not NULL. */
static int tx_abort(struct tx *t, int err, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int tx_abort(struct tx *t, int err, const char *what, const char *fmt, ...)
{
	char why[PFS_CTL_ABORT_TEXT_MAX + 1];
	size_t n;
	struct pfs_ctl a = { .type = PFS_CTL_ABORT, .mode = t->o->mode, .word = (uint32_t)-err };
	uint8_t rec[PFS_CTL_LEN];
	struct iovec iov[2] = { { rec, sizeof(rec) }, { why, 0 } };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	n = strnlen(why, PFS_CTL_ABORT_TEXT_MAX);
	a.count = n;
	iov[1].iov_len = n;
	pfs_ctl_encode(&a, rec);
	pfs_xfer_writev_full(t->cfd, iov, 2, &t->r->wire_bytes);
	return pfs_xfer_fail(t->r, err, "send: %s%s%s", what ? what : "", what ? ": " : "", why);
}

/* Are the bytes of @d[0..n) in the blob yet (o->send.src_ready)? 0 yes, 1 not
 * yet, or -errno after telling the receiver (ABORT). */
static int tx_src_ready(struct tx *t, const struct pfs_desc *d, uint32_t n)
{
	char why[PFS_CTL_ABORT_TEXT_MAX + 1] = "";
	uint64_t end = 0;
	int err;

	if (!t->o->send.src_ready)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		if (d[i].off + d[i].len > end)
			end = d[i].off + d[i].len;
	err = t->o->send.src_ready(t->o->send.src_ctx, end, why, sizeof(why));
	t->src_wait = err == -EAGAIN;
	if (err == -EAGAIN)
		return 1;
	if (err && !why[0])
		snprintf(why, sizeof(why), "%s", strerror(-err));
	if (err == -ECANCELED)
		return tx_abort(t, err, "the source failed", "%s", why);
	return err ? pfs_xfer_fail(t->r, err, "send: stopped: %s", why) : 0;
}

/* Fill the next slot from the schedule. 0, 1 when the schedule is done, 2
 * when its bytes are not in the blob yet (o->send.src_ready), or -errno. */
static int tx_produce(struct tx *t)
{
	const struct pfs_xfer_opts *o = t->o;
	struct sslot *s = slot_of(t, t->produced);
	uint64_t cap = o->mode == PFS_MODE_PAYLOAD ?
			       (o->send.gram_bytes < UDP_GRAM_PAYLOAD_MAX ? o->send.gram_bytes :
									    UDP_GRAM_PAYLOAD_MAX) :
			       PFS_GRAM_MAX_EFFECTIVE;
	struct pfs_sched next = t->sched; /* committed once the bytes are there */
	uint32_t n = pfs_sched_next(&next, s->d, o->send.desc_per_gram, cap);
	ssize_t len;
	uint64_t eff = 0;
	int err;

	if (!n) {
		t->sched_done = true;
		return 1;
	}
	err = tx_src_ready(t, s->d, n);
	if (err)
		return err < 0 ? err : 2;
	t->sched = next;
	len = pfs_gram_encode(o->mode, t->produced, s->d, n, s->buf, t->cfg.max_gram);
	if (len < 0)
		return pfs_xfer_fail(t->r, (int)len, "send: encoding gram %" PRIu64 ": %s",
				     t->produced, strerror((int)-len));
	for (uint32_t i = 0; i < n; i++) {
		if (o->mode == PFS_MODE_PAYLOAD) {
			const uint8_t *p = t->base + s->d[i].off;

			/* Hash from the blob while copying: the stream-order CRC. */
			t->crc = pfs_crc32c(t->crc, p, s->d[i].len);
			memcpy(s->buf + len, p, s->d[i].len);
			len += s->d[i].len;
		}
		eff += s->d[i].len;
	}
	s->seq = t->produced;
	s->len = (uint32_t)len;
	s->nd = n;
	s->nfrags = pfs_udp_nfrags(&t->cfg, s->len);
	s->next_fresh = 0;
	memset(s->sent_at, 0, s->nfrags * sizeof(double));
	t->r->bytes += eff;
	t->r->descs += n;
	t->r->grams++;
	t->produced++;
	if (o->mode == PFS_MODE_PAYLOAD)
		t->hashed = t->produced;
	return 0;
}

/* Offset/arithmetic: hash the referenced bytes of grams already sent, at
 * most HASH_STEP bytes per call, so ACKs and NAKs are never kept waiting
 * behind a 100 MiB gram (that would also inflate the measured RTT). */
static void tx_hash(struct tx *t)
{
	uint64_t budget = HASH_STEP;

	while (t->hashed < t->fresh_seq && budget) {
		struct sslot *s = slot_of(t, t->hashed);

		while (t->hash_desc < s->nd && budget) {
			const struct pfs_desc *d = &s->d[t->hash_desc];
			uint64_t n = d->len - t->hash_off < budget ? d->len - t->hash_off : budget;

			t->crc = pfs_crc32c(t->crc, t->base + d->off + t->hash_off, n);
			t->hash_off += n;
			budget -= n;
			if (t->hash_off == d->len) {
				t->hash_desc++;
				t->hash_off = 0;
			}
		}
		if (t->hash_desc == s->nd) {
			t->hashed++;
			t->hash_desc = 0;
		}
	}
}

/* Add datagrams [frag, frag+n) of slot @s as one message of the batch. */
static void add_msg(struct tx *t, int m, struct sslot *s, uint32_t frag, uint32_t n, bool repair,
		    double now)
{
	uint32_t bytes = 0;

	for (uint32_t k = 0; k < n; k++) {
		uint32_t off = (frag + k) * t->cfg.frag;
		uint32_t fl = s->len - off < t->cfg.frag ? s->len - off : t->cfg.frag;

		s->sent_at[frag + k] = now;
		bytes += PFS_UDP_FRAG_LEN + fl;
	}
	t->what[m] = (struct pfs_dgram_msg){ .gram = s->buf,
					     .seq = s->seq,
					     .gram_len = s->len,
					     .frag = frag,
					     .n = n,
					     .frag_size = t->cfg.frag,
					     .repair = repair };
	t->what_bytes[m] = bytes;
	t->tokens -= bytes;
}

/* Build and send one batch: repairs first, then fresh fragments, within
 * the token budget. Returns datagrams sent, or -errno. */
static int tx_send(struct tx *t, double now)
{
	struct pfs_xfer_result *r = t->r;
	int m = 0, sent, dgrams = 0;

	while (m < TX_BATCH && t->tokens > 0 && t->rq_head != t->rq_tail) {
		struct rq_ent e = t->rq[t->rq_head++ % RQ_CAP];

		if (e.seq < t->acked)
			continue;
		add_msg(t, m++, slot_of(t, e.seq), e.frag, 1, true, now);
	}
	/* At most TX_BYTES per call: on veth the receive path runs inside our
	 * sendmmsg, and NAKs wait until it returns. */
	while (m < TX_BATCH && t->tokens > 0 && t->fresh_seq < t->produced &&
	       (m + 1) * t->io->segs * t->cfg.payload <= TX_BYTES) {
		struct sslot *s = slot_of(t, t->fresh_seq);
		uint32_t n = s->nfrags - s->next_fresh;

		if (n > (uint32_t)t->io->segs)
			n = t->io->segs;
		add_msg(t, m++, s, s->next_fresh, n, false, now);
		s->next_fresh += n;
		if (s->next_fresh == s->nfrags)
			t->fresh_seq++;
	}
	t->io_full = false;
	if (!m)
		return 0;
	sent = t->io->ops->send(t->io, t->what, m, pfs_udp_usec32(now));
	if (sent == -ECONNREFUSED) {
		/* An ICMP port unreachable, which anyone can forge: not a reason to
		 * stop. A receiver that is gone closes the control connection (tx_ctl
		 * sees it), a dead path stops the ACKs (no-progress timeout). */
		if (!t->icmp_refused++)
			pfs_warn("send: ICMP port unreachable from %s's data port; ignored "
				 "(the control connection says whether the receiver is gone)",
				 r->peer);
		sent = 0; /* nothing went out: fresh data goes back to the cursor */
	}
	if (sent < 0)
		return sent;
	t->io_full = sent < m;
	for (int i = 0; i < m; i++) {
		if (i < sent) {
			uint32_t n = t->what[i].n;

			dgrams += n;
			r->dgrams.sent += n;
			if (t->what[i].repair)
				r->dgrams.retransmitted += n;
			r->wire_bytes += t->what_bytes[i] + (uint64_t)n * t->io->wire_hdr;
			continue;
		}
		/* Not sent: fresh data goes back to the cursor, repairs are asked
		 * again by the receiver. */
		if (!t->what[i].repair &&
		    (t->what[i].seq < t->fresh_seq ||
		     (t->what[i].seq == t->fresh_seq &&
		      t->what[i].frag < slot_of(t, t->fresh_seq)->next_fresh))) {
			t->fresh_seq = t->what[i].seq;
			slot_of(t, t->fresh_seq)->next_fresh = t->what[i].frag;
			for (int j = i + 1; j < m; j++)
				if (!t->what[j].repair && t->what[j].seq != t->fresh_seq)
					slot_of(t, t->what[j].seq)->next_fresh = 0;
			break;
		}
	}
	t->loss_sent += dgrams;
	return dgrams;
}

static void tx_rate_on_ack(struct tx *t, const struct pfs_udp_rec *a, double now)
{
	bool cong = false;

	if (a->flags & PFS_UDP_F_ECHO) {
		uint32_t rtt_us = pfs_udp_usec32(now) - a->d - a->e;

		if (rtt_us < 10u * 1000 * 1000)
			t->srtt = t->srtt ? 0.875 * t->srtt + 0.125 * rtt_us * 1e-6 : rtt_us * 1e-6;
	}
	if (a->c > t->ovfl_seen) {
		cong = true;
		t->ovfl_seen = a->c;
	}
	/* Loss share over at least LOSS_SPAN datagrams: counted per ACK, a
	 * window stall (little sent while a hole is repaired) would look like
	 * heavy loss. */
	if (t->loss_sent >= LOSS_SPAN) {
		if (t->loss_naked * 4 > t->loss_sent)
			cong = true;
		t->loss_sent = t->loss_naked = 0;
	}
	if (cong) {
		if (now - t->last_dec > (t->srtt > 0.005 ? t->srtt : 0.005)) {
			t->rate = t->rate * 0.7 > RATE_MIN ? t->rate * 0.7 : RATE_MIN;
			if (t->rate > t->rate_max)
				t->rate = t->rate_max;
			t->last_dec = now;
			t->slow_start = false;
		}
	} else {
		t->rate = t->slow_start ? t->rate * 1.25 : t->rate + RATE_STEP;
		if (t->rate > t->rate_max)
			t->rate = t->rate_max;
	}
}

static void tx_on_nak(struct tx *t, const struct pfs_udp_rec *n, const struct pfs_udp_range *rg,
		      double now)
{
	struct sslot *s;
	double guard = 1.5 * t->srtt + 0.001;

	t->r->dgrams.naks++;
	if (n->a < t->acked || n->a > t->fresh_seq || n->a >= t->produced)
		return; /* executed already, or never sent: stale or bogus */
	s = slot_of(t, n->a);
	if (guard < 0.002)
		guard = 0.002;
	for (uint16_t i = 0; i < n->n; i++) {
		uint32_t first = rg[i].first, end;

		if (first >= s->nfrags)
			continue;
		end = rg[i].count == PFS_UDP_WHOLE_GRAM || rg[i].count > s->nfrags - first ?
			      s->nfrags :
			      first + rg[i].count;
		/* Not sent yet at all: the fresh cursor will get there. */
		if (s->seq == t->fresh_seq && end > s->next_fresh)
			end = s->next_fresh;
		for (uint32_t f = first; f < end; f++) {
			if (now - s->sent_at[f] < guard || t->rq_tail - t->rq_head >= RQ_CAP)
				continue;
			s->sent_at[f] = now;
			t->rq[t->rq_tail++ % RQ_CAP] = (struct rq_ent){ s->seq, f };
			t->loss_naked++;
		}
	}
}

/* Handle every control record that has arrived. */
static int tx_ctl(struct tx *t, double now)
{
	struct pfs_xfer_result *r = t->r;
	struct pfs_udp_range rg[PFS_UDP_MAX_RANGES];
	const uint8_t *rec;
	size_t len;
	int err;

	while ((err = pfs_udp_ctl_next(t->cin, &rec, &len)) == 1) {
		struct pfs_udp_rec u;

		if (pfs_wire_magic(rec, len) == PFS_CTL_MAGIC) {
			if (pfs_ctl_decode(rec, len, &t->res) || t->res.type != PFS_CTL_RESULT ||
			    !t->end_sent)
				return pfs_xfer_fail(r, -EPROTO,
						     "send: unexpected control record "
						     "from %s",
						     r->peer);
			t->got_result = true;
			return 0;
		}
		if (pfs_udp_rec_decode_hdr(rec, len, &u) ||
		    pfs_udp_rec_decode_ranges(rec, len, &u, rg) || u.type == PFS_UDP_PARAMS ||
		    (u.type == PFS_UDP_ACK && u.a > t->produced))
			return pfs_xfer_fail(r, -EPROTO, "send: malformed repair record from %s",
					     r->peer);
		if (u.type == PFS_UDP_ACK) {
			if (u.a > t->acked) {
				t->acked = u.a;
				t->progress_at = now;
			}
			tx_rate_on_ack(t, &u, now);
		} else {
			tx_on_nak(t, &u, rg, now);
		}
	}
	if (err == -ECONNRESET)
		return pfs_xfer_fail(r, -ECONNRESET,
				     "send: receiver %s closed the control "
				     "connection after acknowledging %" PRIu64 " of %" PRIu64
				     " grams (receiver killed or gone)",
				     r->peer, t->acked, t->produced);
	if (err)
		return pfs_xfer_fail(r, err, "send: control connection to %s: %s", r->peer,
				     err == -EPROTO ? "malformed record" : pfs_wire_strerror(err));
	return 0;
}

/* Waiting for the source with everything acknowledged: neither side is
 * stuck, so keep both clocks going (a WAIT a second for the receiver). */
static int tx_keepalive(struct tx *t, double now)
{
	struct pfs_ctl w = { .type = PFS_CTL_WAIT, .mode = t->o->mode };
	int err;

	if (t->acked < t->produced)
		return 0;
	t->progress_at = now;
	if (now - t->wait_sent < 1.0)
		return 0;
	t->wait_sent = now;
	err = pfs_xfer_send_ctl(t->cfd, &w, &t->r->wire_bytes);
	return err ? pfs_xfer_fail(t->r, err, "send: WAIT to %s: %s", t->r->peer,
				   pfs_xfer_io_what(err)) :
		     0;
}

static int tx_loop(struct tx *t)
{
	const struct pfs_xfer_opts *o = t->o;
	struct pfs_xfer_result *r = t->r;
	int io_ms = o->io_timeout_ms > 0 ? o->io_timeout_ms : UDP_DEFAULT_TIMEOUT_MS;
	int err;

	t->tok_at = t->progress_at = pfs_xfer_now();
	for (;;) {
		double now = pfs_xfer_now(), burst, wait;
		int n;

		if ((err = tx_ctl(t, now)))
			return err;
		if (t->got_result)
			return 0;
		t->tokens += t->rate * (now - t->tok_at);
		t->tok_at = now;
		burst = t->rate * 0.002;
		if (burst < 2.0 * t->io->segs * t->cfg.payload)
			burst = 2.0 * t->io->segs * t->cfg.payload;
		if (t->tokens > burst)
			t->tokens = burst;
		while (!t->sched_done && t->produced < t->acked + UDP_WINDOW &&
		       t->produced < t->hashed + UDP_WINDOW)
			if ((err = tx_produce(t)) < 0)
				return err;
			else if (err == 2)
				break;
		if (t->src_wait && (err = tx_keepalive(t, now)))
			return err;
		n = tx_send(t, now);
		if (n < 0)
			return n;
		tx_hash(t);
		if (t->sched_done && !t->end_sent && t->fresh_seq == t->produced &&
		    t->hashed == t->produced) {
			if (t->io->ops->flush && (err = t->io->ops->flush(t->io)))
				return err;
			struct pfs_ctl end = { .type = PFS_CTL_END,
					       .mode = o->mode,
					       .size = r->bytes,
					       .value = r->descs,
					       .count = r->grams,
					       .word = t->crc };

			err = pfs_xfer_send_ctl(t->cfd, &end, &r->wire_bytes);
			if (err)
				return pfs_xfer_fail(r, err, "send: END to %s: %s", r->peer,
						     pfs_xfer_io_what(err));
			t->end_sent = true;
			t->progress_at = now;
		}
		if (now - t->progress_at > io_ms / 1000.0)
			return pfs_xfer_fail(
				r, -ETIMEDOUT,
				"send: receiver %s made no progress for "
				"%.1f s: %" PRIu64 " of %" PRIu64 " grams acknowledged%s, "
				"%" PRIu64 " NAKs, %" PRIu64 " datagrams re-sent (path "
				"dead or receiver stuck)",
				r->peer, io_ms / 1000.0, t->acked, t->produced,
				t->end_sent ? ", END sent" : "", r->dgrams.naks,
				r->dgrams.retransmitted);
		if (n > 0 || t->hashed < t->fresh_seq)
			continue;
		/* Nothing went out: wait for tokens, or for the receiver. */
		wait = 0.005;
		if (t->tokens <= 0 && (t->rq_head != t->rq_tail || t->fresh_seq < t->produced))
			wait = (1.0 - t->tokens) / t->rate;
		else if (t->io_full && t->io->full_wait_s < wait)
			wait = t->io->full_wait_s; /* the device drains in microseconds */
		{
			struct pollfd p = { .fd = t->cfd, .events = POLLIN };
			struct timespec ts = { (time_t)wait, (long)((wait - (time_t)wait) * 1e9) };

			ppoll(&p, 1, &ts, NULL);
		}
	}
}

/* The UDP payload the MTU allows: IPv4 20 / IPv6 40 bytes, UDP 8 bytes.
 * --mtu, else the MTU of --ifname, else 1500. 0 when out of range. */
static uint32_t tx_payload(const struct pfs_xfer_opts *o, int family)
{
	int ifmtu = !o->link.mtu && o->link.ifname ? pfs_udp_if_mtu(o->link.ifname) : 0;
	uint32_t mtu = o->link.mtu ? o->link.mtu :
		       ifmtu > 0   ? (uint32_t)ifmtu :
				     PFS_UDP_DEFAULT_MTU;
	uint32_t ip = family == AF_INET6 ? 48 : 28;

	if (mtu < 576 || mtu > 65535)
		return 0;
	return mtu - ip > 65507 ? 65507 : mtu - ip;
}

/* Fragment size from the payload the io carries; the send slots. */
static int tx_cfg(struct tx *t, uint32_t payload)
{
	const struct pfs_xfer_opts *o = t->o;
	uint64_t cap = o->mode == PFS_MODE_PAYLOAD ?
			       (o->send.gram_bytes < UDP_GRAM_PAYLOAD_MAX ? o->send.gram_bytes :
									    UDP_GRAM_PAYLOAD_MAX) :
			       0;
	uint32_t maxf;

	t->cfg.payload = payload;
	t->cfg.frag = t->cfg.payload - PFS_UDP_FRAG_LEN;
	t->cfg.window = UDP_WINDOW;
	t->cfg.max_gram = (uint32_t)(PFS_GRAM_HDR_LEN +
				     pfs_gram_desc_len_max(o->mode, o->send.desc_per_gram) + cap);
	maxf = pfs_udp_nfrags(&t->cfg, t->cfg.max_gram);
	for (int i = 0; i < UDP_WINDOW; i++) {
		struct sslot *s = &t->slots[i];

		s->buf = malloc(t->cfg.max_gram);
		s->sent_at = calloc(maxf, sizeof(double));
		s->d = malloc(o->send.desc_per_gram * sizeof(*s->d));
		if (!s->buf || !s->sent_at || !s->d)
			return -ENOMEM;
		/* Fault the slots in now: setup, not transfer time. */
		memset(s->buf, 0, t->cfg.max_gram);
	}
	t->rq = malloc(RQ_CAP * sizeof(*t->rq));
	return t->rq ? 0 : -ENOMEM;
}

/* After ACCEPT: the receiver's KEY, the datagram key, and the check that
 * both ends derived the same one (a public key changed on the path fails
 * here, with a message, instead of every datagram failing its tag). @tr:
 * HELLO and PARAMS as sent. 0 or -errno with r->error set. */
static int tx_key(struct tx *t, struct pfs_dgram_kx *kx, const uint8_t *tr, size_t tr_len)
{
	struct pfs_xfer_result *r = t->r;
	uint8_t rec[PFS_UDP_REC_LEN + PFS_UDP_KEY_BODY], peer[PFS_UDP_KEY_PUB];
	uint8_t confirm[PFS_UDP_KEY_CONFIRM], mine[PFS_UDP_KEY_CONFIRM];
	struct pfs_dgram_kdf_in in = { .sender = true,
				       .peer_pub = peer,
				       .psk = t->o->embed.psk ? t->o->embed.psk : t->o->auth.token,
				       .psk_len = t->o->embed.psk ? t->o->embed.psk_len :
								    t->o->auth.token_len,
				       .transcript = tr,
				       .transcript_len = tr_len };
	int err = pfs_xfer_read_full(t->cfd, rec, PFS_UDP_REC_LEN, &r->wire_bytes);

	if (!err && pfs_wire_magic(rec, PFS_UDP_REC_LEN) == PFS_UDP_REC_MAGIC &&
	    rec[4] == PFS_UDP_KEY)
		err = pfs_xfer_read_full(t->cfd, rec + PFS_UDP_REC_LEN, PFS_UDP_KEY_BODY,
					 &r->wire_bytes);
	if (err)
		return pfs_xfer_fail(r, err, "send: waiting for the receiver's datagram key: %s",
				     pfs_xfer_io_what(err));
	err = pfs_udp_key_decode(rec, sizeof(rec), peer, confirm);
	if (err)
		return pfs_xfer_fail(r, -EPROTO,
				     "send: receiver %s accepted but sent no valid datagram key "
				     "(%s): a pfs without datagram authentication? Both ends "
				     "need it",
				     r->peer, pfs_wire_strerror(err));
	t->io->auth = pfs_dgram_kx__derive(kx, &in, mine);
	if (!t->io->auth)
		return pfs_xfer_fail(r, -errno, "send: datagram key with %s: %s", r->peer,
				     errno == EINVAL ? "its public key is not a usable X25519 key" :
						       strerror(errno));
	if (!pfs_dgram_confirm_equal(confirm, mine)) {
		err = tx_abort(t, -EKEYREJECTED, NULL,
			       "datagram key confirmation failed: the two ends derived "
			       "different keys (a public key or PARAMS changed on the path"
			       "%s); nothing was sent",
			       t->o->embed.psk ? ", or another token" : "");
		return err;
	}
	return 0;
}

static int tx_handshake(struct tx *t, uint64_t fp, uint16_t uport, const char *tname)
{
	const struct pfs_xfer_opts *o = t->o;
	struct pfs_xfer_result *r = t->r;
	/* integrity: CRC32C here (pfs_xfer_check), flags 0 as ever */
	struct pfs_ctl h = pfs_xfer_hello_of(o, fp);
	struct pfs_udp_rec p = { .type = PFS_UDP_PARAMS,
				 .flags = t->io->segs > 1,
				 .a = t->cfg.max_gram,
				 .b = uport,
				 .c = PFS_UDP_SUITE_X25519_GMAC,
				 .d = t->cfg.frag,
				 .e = t->cfg.window };
	uint8_t out[PFS_CTL_LEN + 2 * PFS_UDP_REC_LEN + PFS_UDP_KEY_BODY], ans[PFS_CTL_LEN];
	uint8_t auth[PFS_CTL_LEN];
	uint8_t pub[PFS_UDP_KEY_PUB];
	struct pfs_dgram_kx *kx = pfs_dgram_kx__new(pub);
	int err;

	if (!kx)
		return pfs_xfer_fail(r, -errno, "send: no datagram key pair: %s",
				     errno == ENOTSUP ? "this pfs was built without libcrypto, "
							"and every udp/afxdp datagram is "
							"authenticated" :
							strerror(errno));
	pfs_ctl_encode(&h, out);
	pfs_udp_rec_encode(&p, NULL, out + PFS_CTL_LEN);
	pfs_udp_key_encode(pub, NULL, out + PFS_CTL_LEN + PFS_UDP_REC_LEN);
	/* HELLO [AUTH] PARAMS KEY: the AUTH (with a token) is not part of the
	 * transcript the key derivation hashes. */
	err = pfs_xfer_hello_auth(t->cfd, &o->auth, out, auth, r);
	if (err < 0)
		goto out_free_kx;
	struct iovec iov[] = { { out, PFS_CTL_LEN },
			       { auth, (size_t)err },
			       { out + PFS_CTL_LEN, sizeof(out) - PFS_CTL_LEN } };
	err = pfs_xfer_writev_full(t->cfd, iov, 3, &r->wire_bytes);
	if (err) {
		err = pfs_xfer_fail(r, err, "send: HELLO to %s: %s", r->peer,
				    pfs_xfer_io_what(err));
		goto out_free_kx;
	}
	err = pfs_xfer_read_full(t->cfd, ans, sizeof(ans), &r->wire_bytes);
	if (err) {
		err = pfs_xfer_fail(
			r, err, "send: waiting for the receiver's answer: %s%s%s%s",
			pfs_xfer_io_what(err),
			err == -ECONNRESET ? " (is the receiver running --transport " : "",
			err == -ECONNRESET ? tname : "", err == -ECONNRESET ? "?)" : "");
		goto out_free_kx;
	}
	err = pfs_xfer_answer_check(ans, &h, fp, r);
	if (!err)
		err = tx_key(t, kx, out, PFS_CTL_LEN + PFS_UDP_REC_LEN);
out_free_kx:
	pfs_dgram_kx__free(kx);
	return err;
}

int pfs_dgram_send(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r,
		   const struct pfs_dgram_backend *be)
{
	struct tx *t = NULL;
	struct sockaddr_storage ss;
	socklen_t sl;
	double t0, u0, s0, u1, s1;
	uint32_t payload;
	uint64_t fp;
	int err;

	if (pfs_xfer_parse_addr(o->host, o->port, &ss, &sl) || !o->host || !*o->host)
		return pfs_xfer_fail(r, -EINVAL, "send: '%s' is not a numeric IPv4/IPv6 address",
				     o->host ? o->host : "");
	payload = tx_payload(o, ss.ss_family);
	if (!payload)
		return pfs_xfer_fail(r, -EINVAL, "send: --mtu %u out of range 576..65535",
				     o->link.mtu);
	fp = o->fingerprint ? o->fingerprint : pfs_blob__fingerprint(o->blob);
	t = calloc(1, sizeof(*t));
	if (!t)
		return pfs_xfer_fail(r, -ENOMEM, "send: out of memory");
	t->o = o;
	t->r = r;
	t->cfd = -1;
	t->base = pfs_blob__data(o->blob);
	t->rate_max =
		o->send.rate_max > 0 && o->send.rate_max < RATE_MAX ? o->send.rate_max : RATE_MAX;
	t->rate = RATE_START < t->rate_max ? RATE_START : t->rate_max;
	t->slow_start = true;
	{
		struct pfs_sched_opts so = o->send.sched;

		so.blob_size = pfs_blob__size(o->blob);
		if (pfs_sched_init(&t->sched, &so)) {
			err = pfs_xfer_fail(r, -EINVAL,
					    "send: invalid schedule (align %u must be a "
					    "power of 2, min %u <= max %u, blob >= align)",
					    so.align, so.min_len, so.max_len);
			goto out_free;
		}
	}
	err = be->open_tx(o, &ss, sl, payload, &t->io, r);
	if (err)
		goto out_free;
	t->cin = malloc(sizeof(*t->cin));
	err = t->cin ? tx_cfg(t, t->io->payload) : -ENOMEM;
	if (err) {
		err = pfs_xfer_fail(r, err, "send: out of memory (mtu %u)", o->link.mtu);
		goto out_close_io;
	}
	t->cfd = o->embed.ctl_given ?
			 pfs_xfer_given_ctl(o->embed.ctl_fd, r) :
			 pfs_xfer_connect(o->host, o->port, o->send.connect_timeout_ms,
					  o->io_timeout_ms > 0 ? o->io_timeout_ms :
								 UDP_DEFAULT_TIMEOUT_MS,
					  r);
	if (t->cfd < 0) {
		err = t->cfd;
		goto out_close_io;
	}
	*t->cin = (struct pfs_udp_ctlin){ .fd = t->cfd, .wire = &r->wire_bytes };
	err = tx_handshake(t, fp, t->io->src_port, be->name);
	if (err)
		goto out_close_ctl;

	t0 = pfs_xfer_now();
	pfs_xfer_cpu(&u0, &s0);
	err = tx_loop(t);
	pfs_xfer_cpu(&u1, &s1);
	r->elapsed_s = pfs_xfer_now() - t0;
	r->user_s = u1 - u0;
	r->sys_s = s1 - s0;
	r->crc = t->crc;
	snprintf(r->path, sizeof(r->path), "%s, aimd end %u MB/s, rtt %u us", t->io->path,
		 (unsigned)(t->rate / 1e6), (unsigned)(t->srtt * 1e6));
	snprintf(r->afxdp_mode, sizeof(r->afxdp_mode), "%s", t->io->afxdp_mode);
	if (err)
		goto out_close_ctl;
	r->peer_crc = t->res.word;
	r->peer_crc_valid = true;
	r->verdict =
		(t->res.flags & PFS_CTL_F_OK) && t->res.word == r->crc && t->res.size == r->bytes ?
			PFS_VERDICT_OK :
			PFS_VERDICT_MISMATCH;
	if (r->verdict != PFS_VERDICT_OK)
		pfs_err("send: integrity MISMATCH reported by %s: sender crc32c 0x%08x, receiver "
			"0x%08x",
			r->peer, (uint32_t)r->crc, t->res.word);
out_close_ctl:
	if (!o->embed.ctl_given)
		close(t->cfd);
out_close_io:
	pfs_dgram_auth__free(t->io->auth);
	t->io->ops->close(t->io);
out_free:
	for (int i = 0; i < UDP_WINDOW; i++) {
		free(t->slots[i].buf);
		free(t->slots[i].sent_at);
		free(t->slots[i].d);
	}
	free(t->rq);
	free(t->cin);
	free(t);
	return err;
}

int pfs_udp_send(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r)
{
	return pfs_dgram_send(o, r, &pfs_dgram_sock);
}
