// SPDX-License-Identifier: Apache-2.0
/*
 * Datagram transports (udp, afxdp), receiver. One thread owns everything:
 * the TCP control connection, the datagram I/O (dgram_io.h: a UDP socket
 * with recvmmsg/GRO, or one AF_XDP socket per queue, all polled by this
 * thread), UDP_WINDOW reassembly slots and the descriptor array. No locks.
 *
 * Data: the io hands over each datagram that arrived (place()); what its
 * device dropped for lack of room (SO_RXQ_OVFL on a socket, the XDP
 * socket's drop counters over AF_XDP) goes back to the sender in every ACK
 * as its congestion signal. PFS_TEST_RX_DROP_PPM (tests only) drops that
 * share of datagrams here on purpose, to exercise the repair plane where
 * no netem/netfilter can (AF_XDP bypasses both). Every fragment is checked
 * (pfs_udp_frag_decode, window, gram
 * length) and copied into the slot of its gram (slot = seq % UDP_WINDOW); a
 * bad one is dropped, counted in r->stats and logged (rate-limited).
 *
 * Grams execute strictly in seq order (the integrity CRC is defined over
 * the stream order): when the gram `cum` is complete it is decoded with
 * pfs_gram_decode, executed (at most EXEC_STEP referenced bytes per loop
 * turn, so an offset-mode gram of 100+ MiB never keeps the socket unread),
 * and its slot freed. A gram that fails to decode is counted and asked for
 * again; the fourth failure ends the transfer. Slots are faulted in during
 * setup.
 *
 * Repair: every UDP_TICK_S the receiver sends an ACK (grams executed,
 * datagrams received, socket drops, an echo of the newest sender timestamp
 * for the sender's RTT) and NAKs for holes older than `grace` ticks: a
 * fragment missing below the highest (gram, fragment) position seen `grace`
 * ticks ago, or anything missing once END has said how many grams there
 * are, `grace` ticks have passed and the socket has nothing left to read.
 * `grace` starts at 2 ticks (2-3 ms) and adapts like TCP RACK's reorder
 * window: a fresh fragment that arrives after the path had already passed
 * it for N ticks raises it to N + 1 (at most 63); it shrinks by one every
 * 250 ms. Reordering within the allowance costs no repair. A gram's holes
 * are asked for again at most every max(UDP_RENAK_S, 2 x the measured
 * NAK-to-repair time, 1.5 x the current queueing delay + 2 ms), the
 * queueing delay being the one-way delay of the newest datagram (tsval)
 * above the smallest seen, so a repair stuck behind a full socket is not
 * asked for twice; the sender also ignores asks within its own RTT. No
 * progress (no new fragment, no executed gram) for io_timeout_ms ends the
 * transfer with -ETIMEDOUT.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
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

#define NAK_BUF (64 << 10)
#define HW_HIST 64 /* ticks of history: reordering up to 63 ms tolerated */
#define GRACE_MIN 2
#define EXEC_STEP (4u << 20) /* referenced bytes executed per loop turn */

struct rslot {
	uint64_t seq;
	uint32_t len, nfrags, have;
	bool used;
	uint64_t *bits;
	uint8_t *buf;
	uint64_t nak_seq; /* the gram last_nak refers to */
	double last_nak;
};

struct rx {
	const struct pfs_xfer_opts *o;
	struct pfs_xfer_result *r;
	int cfd;
	struct pfs_dgram_io *io;
	struct pfs_dgram_auth *auth; /* this transfer's datagram key (rx_key) */
	struct pfs_udp_cfg cfg;
	uint32_t words; /* bitmap words per slot */
	struct rslot slots[UDP_WINDOW];
	uint64_t cum; /* grams executed = the next gram to execute */
	/* highest (gram, fragment) position seen, now and at each of the last
	 * HW_HIST ticks; holes older than `grace` ticks are NAKed */
	uint64_t hw_seq, prev_seq;
	uint32_t hw_frag, prev_frag;
	bool hw_any, prev_any;
	struct {
		uint64_t seq;
		uint32_t frag;
		bool any;
	} hist[HW_HIST];
	uint64_t ticks;
	uint32_t grace, grace_max;
	double grace_at;
	double nak_rtt; /* NAK -> first repair, smoothed: paces re-asking */
	/* One-way delay of the newest datagram relative to the smallest seen
	 * (clock offsets cancel): how long a repair will queue behind data. */
	uint32_t owd0;
	int32_t owd_min;
	bool owd_init;
	double qdelay;
	bool end_known;
	double end_at;
	struct pfs_ctl end;
	uint64_t bound;
	uint64_t planned; /* HELLO count: the effective bytes agreed */
	const uint8_t *base;
	struct pfs_desc *d; /* descriptors of gram `cum` while it executes */
	uint32_t cur_n, cur_i; /* its descriptor count + 1 (0: none decoded), next one */
	uint64_t cur_off, cur_at; /* bytes done of descriptor cur_i, of the slab */
	const uint8_t *cur_pl;
	uint32_t crc;
	int decode_fails;
	/* ACK state */
	uint32_t echo_ts;
	double echo_at;
	bool echo_valid;
	uint64_t ovfl, acked_cum, acked_rx;
	double last_ack, progress_at;
	struct pfs_udp_droplog dl;
	struct pfs_udp_droplog forgedlog; /* forged datagrams, logged apart */
	struct pfs_udp_ctlin *cin;
	uint8_t *nakbuf;
	double now; /* of the current rx_burst, for place() */
	uint32_t drop_ppm; /* o->link.test_rx_drop_ppm (tests only) */
	uint64_t drop_rng;
};

static struct rslot *slot_of(struct rx *x, uint64_t seq)
{
	return &x->slots[seq % UDP_WINDOW];
}

static bool pos_lt(uint64_t s1, uint32_t f1, uint64_t s2, uint32_t f2)
{
	return s1 < s2 || (s1 == s2 && f1 < f2);
}

static void drop(struct rx *x, int err, const char *what)
{
	pfs_gram_stats_count(&x->r->stats, err);
	pfs_udp_drop(&x->dl, err, what);
}

/* One fragment (header + bytes) from the socket. */
static void place(struct rx *x, const uint8_t *p, size_t len, double now)
{
	struct pfs_udp_frag f;
	struct rslot *s;
	uint32_t idx;
	int err = pfs_udp_frag_decode(p, len, &f);

	x->r->dgrams.received++;
	if (err)
		return drop(x, err, "malformed");
	/* Nothing but our sender's datagrams may touch a slot, the stats of the
	 * path or the repair state: the tag first. */
	if (!pfs_dgram_auth__verify(x->auth, p, len)) {
		x->r->dgrams.forged++;
		pfs_udp_drop(&x->forgedlog, -EKEYREJECTED, "forged");
		return;
	}
	if (f.seq < x->cum || (f.seq == x->cum && x->cur_n)) {
		/* executed, or executing from its slot: complete already */
		x->r->dgrams.duplicates++;
		return;
	}
	if (f.seq >= x->cum + UDP_WINDOW || f.gram_len > x->cfg.max_gram ||
	    f.gram_len < PFS_GRAM_HDR_LEN || f.frag_off % x->cfg.frag ||
	    f.frag_len !=
		    (f.gram_len - f.frag_off < x->cfg.frag ? f.gram_len - f.frag_off : x->cfg.frag))
		return drop(x, -ERANGE, "out-of-window or mis-cut");
	s = slot_of(x, f.seq);
	if (!s->used) {
		s->used = true;
		s->seq = f.seq;
		s->len = f.gram_len;
		s->nfrags = pfs_udp_nfrags(&x->cfg, f.gram_len);
		s->have = 0;
		memset(s->bits, 0, x->words * sizeof(uint64_t));
	} else if (s->len != f.gram_len) {
		/* Authenticated, so from our sender: a bug, never to stall on.
		 * Neither length can be trusted: start the gram over, asked for
		 * whole by the next NAK scan. */
		x->r->dgrams.conflicts++;
		s->used = false;
		s->last_nak = 0;
		return drop(x, -EBADMSG, "gram-length-inconsistent (slot discarded)");
	}
	idx = f.frag_off / x->cfg.frag;
	if (s->bits[idx / 64] & (1ULL << (idx % 64))) {
		x->r->dgrams.duplicates++;
		return;
	}
	if ((f.flags & PFS_UDP_F_REPAIR) && s->nak_seq == f.seq && s->last_nak > 0) {
		double rtt = now - s->last_nak;

		x->nak_rtt = x->nak_rtt ? 0.875 * x->nak_rtt + 0.125 * rtt : rtt;
		s->last_nak = -s->last_nak; /* one sample per NAK */
	}
	s->bits[idx / 64] |= 1ULL << (idx % 64);
	memcpy(s->buf + f.frag_off, p + PFS_UDP_FRAG_LEN, f.frag_len);
	s->have++;
	{
		uint32_t raw = pfs_udp_usec32(now) - f.tsval;
		int32_t rel;

		if (!x->owd_init) {
			x->owd0 = raw;
			x->owd_init = true;
		}
		rel = (int32_t)(raw - x->owd0);
		if (rel < x->owd_min)
			x->owd_min = rel;
		x->qdelay = (rel - x->owd_min) * 1e-6;
	}
	x->progress_at = now;
	x->echo_ts = f.tsval;
	x->echo_at = now;
	x->echo_valid = true;
	if (!x->hw_any || pos_lt(x->hw_seq, x->hw_frag, f.seq, idx)) {
		x->hw_seq = f.seq;
		x->hw_frag = idx;
		x->hw_any = true;
	} else if (!(f.flags & PFS_UDP_F_REPAIR)) {
		uint32_t lag = 0;

		/* For how many ticks had the path already passed this fragment?
		 * Widen the NAK allowance past that (RACK-style reorder window). */
		x->r->dgrams.out_of_order++;
		while (lag + 1 < HW_HIST && lag < x->ticks) {
			typeof(x->hist[0]) *h = &x->hist[(x->ticks - lag) % HW_HIST];

			if (!h->any || !pos_lt(f.seq, idx, h->seq, h->frag))
				break;
			lag++;
		}
		if (lag + 1 > x->grace) {
			x->grace = lag + 1 < HW_HIST - 1 ? lag + 1 : HW_HIST - 1;
			x->grace_at = now;
			if (x->grace > x->grace_max)
				x->grace_max = x->grace;
		}
	}
}

/* The io's callback: one datagram. Test-only loss first (xorshift64, so a
 * run is repeatable). */
static void place_cb(void *ctx, const uint8_t *p, size_t len)
{
	struct rx *x = ctx;

	if (x->drop_ppm) {
		x->drop_rng ^= x->drop_rng << 13;
		x->drop_rng ^= x->drop_rng >> 7;
		x->drop_rng ^= x->drop_rng << 17;
		if (x->drop_rng % 1000000 < x->drop_ppm) {
			x->r->dgrams.test_dropped++;
			return;
		}
	}
	place(x, p, len, x->now);
}

/* Read what the io has. Returns buffers read, or -errno. */
static int rx_burst(struct rx *x, double now)
{
	x->now = now;
	return x->io->ops->recv(x->io, place_cb, x);
}

/* The sum of a decoded gram's descriptor lengths: what executing it costs. */
static uint64_t gram_effective(const struct pfs_desc *d, int n)
{
	uint64_t eff = 0;

	for (int i = 0; i < n; i++)
		eff += d[i].len;
	return eff;
}

/* Execute the complete grams at the front of the window, in order, at most
 * EXEC_STEP referenced bytes per call: an offset-mode gram can reference
 * 100+ MiB, and the socket must not go unread (nor ACKs unsent) that long. */
static int rx_exec(struct rx *x)
{
	struct pfs_xfer_result *r = x->r;
	uint64_t budget = EXEC_STEP;
	int err;

	while (budget) {
		struct rslot *s = slot_of(x, x->cum);

		if (!x->cur_n) {
			struct pfs_gram_hdr h;
			uint64_t eff = 0;
			bool over;
			int n;

			if (!s->used || s->seq != x->cum || s->have < s->nfrags)
				return 0;
			n = pfs_gram_decode(s->buf, s->len, x->bound, &h, x->d, PFS_GRAM_MAX_DESC,
					    &x->cur_pl);
			if (n >= 0 && (h.seq != s->seq || h.mode != x->o->mode))
				n = -EBADMSG;
			/* Work beyond what the HELLO announced, or over the
			 * per-gram cap, is what the sender meant (the CRCs held),
			 * not damage in transit: refused, not asked for again. */
			over = n >= 0 && (eff = gram_effective(x->d, n)) > x->planned - r->bytes;
			pfs_gram_stats_count(&r->stats, over ? -E2BIG : n);
			if (n == -E2BIG)
				return pfs_xfer_fail(r, -EPROTO,
						     "recv: gram %" PRIu64 " from %s refused: %s; "
						     "dropped",
						     s->seq, r->peer, pfs_wire_strerror(n));
			if (over) {
				return pfs_xfer_fail(
					r, -EPROTO,
					"recv: gram %" PRIu64 " from %s references %" PRIu64
					" bytes, past the %" PRIu64 " effective bytes its "
					"HELLO announced (%" PRIu64 " done); dropped",
					s->seq, r->peer, eff, x->planned, r->bytes);
			}
			if (n < 0) {
				s->used = false; /* asked for again by the next NAK scan */
				pfs_warn("recv: gram %" PRIu64
					 " reassembled but does not decode: %s "
					 "(attempt %d)",
					 s->seq, pfs_wire_strerror(n), x->decode_fails + 1);
				if (++x->decode_fails > 3)
					return pfs_xfer_fail(r, -EPROTO,
							     "recv: gram %" PRIu64 " from "
							     "%s failed to decode %d times: %s",
							     s->seq, r->peer, x->decode_fails,
							     pfs_wire_strerror(n));
				return 0;
			}
			x->decode_fails = 0;
			x->cur_n = n + 1; /* + 1: a gram of zero descriptors is still a gram */
			x->cur_i = 0;
			x->cur_off = 0;
			x->cur_at = 0;
		}
		while (x->cur_i < x->cur_n - 1 && budget) {
			const struct pfs_desc *d = &x->d[x->cur_i];
			uint64_t n = d->len - x->cur_off < budget ? d->len - x->cur_off : budget;
			const uint8_t *p = x->o->mode == PFS_MODE_PAYLOAD ?
						   x->cur_pl + x->cur_at :
						   x->base + d->off + x->cur_off;

			x->crc = pfs_crc32c(x->crc, p, n);
			if (x->o->recv.out_mem)
				memcpy(x->o->recv.out_mem + d->off + x->cur_off, p, n);
			if (x->o->recv.out_fd >= 0 &&
			    (err = pfs_xfer_out_write(x->o->recv.out_fd, p, n, d->off + x->cur_off,
						      r)))
				return err;
			pfs_xfer_add_bytes(r, n);
			x->cur_off += n;
			x->cur_at += n;
			budget -= n;
			if (x->cur_off == d->len) {
				if (x->o->recv.on_exec &&
				    (err = x->o->recv.on_exec(x->o->recv.exec_ctx, d->off, d->len)))
					return pfs_xfer_fail(r, err,
							     "recv: bytes at %" PRIu64
							     " from %s refused: %s",
							     d->off, r->peer, strerror(-err));
				x->cur_i++;
				x->cur_off = 0;
			}
		}
		if (x->cur_i < x->cur_n - 1)
			return 0;
		r->descs += x->cur_n - 1;
		r->grams++;
		x->cur_n = 0;
		s->used = false;
		x->cum++;
		x->progress_at = pfs_xfer_now();
	}
	return 0;
}

/* Is there a gram to execute right now? */
static bool rx_runnable(struct rx *x)
{
	struct rslot *s = slot_of(x, x->cum);

	return x->cur_n || (s->used && s->seq == x->cum && s->have == s->nfrags);
}

/* ACK every tick when something changed (else every 50 ms), then NAK the
 * holes that were already there `grace` ticks ago. */
static int rx_tick(struct rx *x, double now)
{
	struct pfs_xfer_result *r = x->r;
	size_t fill = 0;
	/* After END everything missing is asked for, but only once the socket
	 * is drained: END overtakes data still queued in our socket, and a
	 * full window of it takes a while to read. */
	bool all = x->end_known && now - x->end_at >= x->grace * UDP_TICK_S &&
		   !x->io->ops->rx_pending(x->io);
	double renak = fmax(UDP_RENAK_S, fmax(2 * x->nak_rtt, 1.5 * x->qdelay + 0.002));
	uint64_t last;

	x->ovfl = x->io->ops->drops(x->io);
	r->dgrams.dropped = x->ovfl;
	if (x->cum != x->acked_cum || r->dgrams.received != x->acked_rx ||
	    now - x->last_ack > 0.05) {
		struct pfs_udp_rec a = {
			.type = PFS_UDP_ACK, .a = x->cum, .b = r->dgrams.received, .c = x->ovfl
		};

		if (x->echo_valid) {
			a.flags = PFS_UDP_F_ECHO;
			a.d = x->echo_ts;
			a.e = pfs_udp_usec32(now - x->echo_at);
			x->echo_valid = false;
		}
		fill += pfs_udp_rec_encode(&a, NULL, x->nakbuf);
		x->acked_cum = x->cum;
		x->acked_rx = r->dgrams.received;
		x->last_ack = now;
	}
	last = all ? x->end.count : x->prev_any ? x->prev_seq + 1 : x->cum;
	if (last > x->cum + UDP_WINDOW)
		last = x->cum + UDP_WINDOW;
	for (uint64_t seq = x->cum; seq < last; seq++) {
		struct rslot *s = slot_of(x, seq);
		struct pfs_udp_range rg[PFS_UDP_MAX_RANGES];
		struct pfs_udp_rec nak = { .type = PFS_UDP_NAK, .a = seq };
		bool used = s->used && s->seq == seq;
		uint32_t lim;

		if (used && s->have == s->nfrags)
			continue;
		if (s->nak_seq == seq && now - fabs(s->last_nak) < renak)
			continue;
		if (!used) {
			rg[nak.n++] = (struct pfs_udp_range){ 0, PFS_UDP_WHOLE_GRAM };
		} else {
			lim = all || seq < x->prev_seq ? s->nfrags :
			      x->prev_frag < s->nfrags ? x->prev_frag :
							 s->nfrags;
			for (uint32_t i = 0; i < lim && nak.n < PFS_UDP_MAX_RANGES; i++) {
				if (s->bits[i / 64] & (1ULL << (i % 64)))
					continue;
				if (nak.n && rg[nak.n - 1].first + rg[nak.n - 1].count == i)
					rg[nak.n - 1].count++;
				else
					rg[nak.n++] = (struct pfs_udp_range){ i, 1 };
			}
		}
		if (!nak.n)
			continue;
		if (fill + PFS_UDP_REC_LEN + 8 * nak.n > NAK_BUF)
			break;
		fill += pfs_udp_rec_encode(&nak, rg, x->nakbuf + fill);
		s->nak_seq = seq;
		s->last_nak = now;
		r->dgrams.naks++;
	}
	x->ticks++;
	x->hist[x->ticks % HW_HIST].seq = x->hw_seq;
	x->hist[x->ticks % HW_HIST].frag = x->hw_frag;
	x->hist[x->ticks % HW_HIST].any = x->hw_any;
	/* The reorder allowance shrinks back one tick every 250 ms it was not needed. */
	if (x->grace > GRACE_MIN && now - x->grace_at > 0.25) {
		x->grace--;
		x->grace_at = now;
	}
	if (x->ticks >= x->grace) {
		uint64_t k = (x->ticks - x->grace) % HW_HIST;

		x->prev_seq = x->hist[k].seq;
		x->prev_frag = x->hist[k].frag;
		x->prev_any = x->hist[k].any;
	}
	if (fill) {
		int err = pfs_xfer_write_full(x->cfd, x->nakbuf, fill, &r->wire_bytes);

		if (err)
			return pfs_xfer_fail(r, err, "recv: sending ACK/NAK to %s: %s", r->peer,
					     err == -ECONNRESET ?
						     "sender closed the control connection" :
						     pfs_xfer_io_what(err));
	}
	return 0;
}

/* The sender's ABORT (@c): its reason, printable bytes only, into r->error. */
static int rx_aborted(struct rx *x, const struct pfs_ctl *c, const uint8_t *text, size_t n)
{
	char why[PFS_CTL_ABORT_TEXT_MAX + 1];

	for (size_t i = 0; i < n; i++)
		why[i] = text[i] >= 0x20 && text[i] != 0x7f ? (char)text[i] : '?';
	why[n] = '\0';
	/* The handshake's key check failed on the sender: say so as ours
	 * (another sender may do); anything else is its source failing. */
	if (c->word == EKEYREJECTED)
		return pfs_xfer_fail(x->r, -EKEYREJECTED, "recv: sender %s: %s", x->r->peer, why);
	return pfs_xfer_fail(x->r, -ECANCELED, "%s", why);
}

/* Read the sender's records after PARAMS: END, and WAIT / ABORT from a
 * sender whose blob is still filling. */
static int rx_ctl(struct rx *x, double now)
{
	const uint8_t *rec;
	size_t len;
	int err;

	while ((err = pfs_udp_ctl_next(x->cin, &rec, &len)) == 1) {
		struct pfs_ctl c;

		if ((len != PFS_CTL_LEN && rec[5] != PFS_CTL_ABORT) ||
		    pfs_ctl_decode(rec, PFS_CTL_LEN, &c) || x->end_known ||
		    (c.type != PFS_CTL_END && c.type != PFS_CTL_WAIT && c.type != PFS_CTL_ABORT) ||
		    (c.type == PFS_CTL_END && c.count < x->cum))
			return pfs_xfer_fail(x->r, -EPROTO,
					     "recv: unexpected control record from "
					     "%s after %" PRIu64 " grams",
					     x->r->peer, x->cum);
		x->progress_at = now;
		if (c.type == PFS_CTL_ABORT)
			return rx_aborted(x, &c, rec + PFS_CTL_LEN, len - PFS_CTL_LEN);
		if (c.type == PFS_CTL_END) {
			x->end = c;
			x->end_known = true;
			x->end_at = now;
		}
	}
	if (err == -ECONNRESET)
		return pfs_xfer_fail(x->r, err,
				     "recv: sender %s closed the control connection "
				     "after %" PRIu64 " grams, before END (sender killed?)",
				     x->r->peer, x->cum);
	if (err)
		return pfs_xfer_fail(x->r, err, "recv: control connection from %s: %s", x->r->peer,
				     err == -EPROTO ? "malformed record" : pfs_wire_strerror(err));
	return 0;
}

static int rx_loop(struct rx *x)
{
	const struct pfs_xfer_opts *o = x->o;
	int io_ms = o->io_timeout_ms > 0 ? o->io_timeout_ms : UDP_DEFAULT_TIMEOUT_MS;
	double next_tick = pfs_xfer_now() + UDP_TICK_S;
	int err;

	x->progress_at = pfs_xfer_now();
	for (;;) {
		double now = pfs_xfer_now();
		int n = rx_burst(x, now);

		if (n < 0)
			return n;
		/* The control connection only carries END (and EOF): read it when
		 * idle or once per tick, not after every burst (a recv(2) each). */
		if ((err = rx_exec(x)) || ((n == 0 || now >= next_tick) && (err = rx_ctl(x, now))))
			return err;
		if (x->end_known && x->cum == x->end.count)
			return 0;
		now = pfs_xfer_now();
		if (now >= next_tick) {
			if ((err = rx_tick(x, now)))
				return err;
			next_tick = now + UDP_TICK_S;
		}
		if (now - x->progress_at > io_ms / 1000.0) {
			struct rslot *s = slot_of(x, x->cum);
			bool used = s->used && s->seq == x->cum;

			return pfs_xfer_fail(x->r, -ETIMEDOUT,
					     "recv: no progress for %.1f s: %" PRIu64
					     " grams executed%s; gram %" PRIu64 " has %u of %u "
					     "fragments; %" PRIu64 " datagrams received, %" PRIu64
					     " NAKs sent (sender gone or path dead)",
					     io_ms / 1000.0, x->cum,
					     x->end_known ? " (END seen)" : "", x->cum,
					     used ? s->have : 0, used ? s->nfrags : 0,
					     x->r->dgrams.received, x->r->dgrams.naks);
		}
		if (n == 0 && !rx_runnable(x))
			x->io->ops->wait(x->io, x->cfd, next_tick - now);
	}
}

/* The sender's KEY (by @deadline) -> the datagram key, and our KEY with
 * the key confirmation into @key. @tr: HELLO and PARAMS as received. 0,
 * -EPERM with @a made a REFUSE, or -errno; r->error set. */
static int rx_key(struct rx *x, const uint8_t *tr, size_t tr_len, double deadline,
		  struct pfs_ctl *a, uint8_t *key)
{
	struct pfs_xfer_result *r = x->r;
	uint8_t rec[PFS_UDP_REC_LEN + PFS_UDP_KEY_BODY], peer[PFS_UDP_KEY_PUB];
	uint8_t pub[PFS_UDP_KEY_PUB], confirm[PFS_UDP_KEY_CONFIRM];
	struct pfs_dgram_kdf_in in = { .peer_pub = peer,
				       .psk = x->o->embed.psk ? x->o->embed.psk : x->o->auth.token,
				       .psk_len = x->o->embed.psk ? x->o->embed.psk_len :
								    x->o->auth.token_len,
				       .transcript = tr,
				       .transcript_len = tr_len };
	struct pfs_dgram_kx *kx;
	int e = 0, err = pfs_xfer_read_by(x->cfd, rec, sizeof(rec), deadline, &r->wire_bytes);

	if (err)
		return pfs_xfer_fail(
			r, err, "recv: waiting for the datagram key from %s: %s", r->peer,
			err == -ETIMEDOUT ? "HELLO, PARAMS and KEY not complete within "
					    "--timeout; dropped" :
					    pfs_xfer_io_what(err));
	err = pfs_udp_key_decode(rec, sizeof(rec), peer, confirm);
	kx = err ? NULL : pfs_dgram_kx__new(pub);
	if (!err && !kx)
		return pfs_xfer_fail(r, -errno, "recv: no datagram key pair: %s",
				     errno == ENOTSUP ? "this pfs was built without libcrypto, "
							"and every udp/afxdp datagram is "
							"authenticated" :
							strerror(errno));
	if (kx) {
		x->auth = pfs_dgram_kx__derive(kx, &in, confirm);
		e = x->auth ? 0 : errno;
		pfs_dgram_kx__free(kx);
	}
	if (err || !x->auth) {
		a->type = PFS_CTL_REFUSE;
		a->word = PFS_REFUSE_PARAMS;
		return pfs_xfer_fail(r, -EPERM, "recv: refused %s: its datagram key %s: %s",
				     r->peer, err ? "record is malformed" : "is unusable",
				     err	 ? pfs_wire_strerror(err) :
				     e == EINVAL ? "not a usable X25519 public key" :
						   strerror(e));
	}
	pfs_udp_key_encode(pub, confirm, key);
	return 0;
}

/* HELLO -> judge; PARAMS -> judge; KEY -> the datagram key; ACCEPT + our
 * KEY, or REFUSE. @raw holds the HELLO when the accept already read it;
 * else it is read here. All three records must be whole within --timeout
 * of @t0 (the connection's start). */
static int rx_handshake(struct rx *x, uint64_t fp, const char *tname, uint8_t *raw, bool have,
			double t0)
{
	struct pfs_xfer_result *r = x->r;
	const struct pfs_xfer_opts *o = x->o;
	/* HELLO and PARAMS as received (the key's transcript), then the answer:
	 * ACCEPT and our KEY */
	uint8_t tr[PFS_CTL_LEN + PFS_UDP_REC_LEN];
	uint8_t *prm = tr + PFS_CTL_LEN;
	uint8_t ans[PFS_CTL_LEN + PFS_UDP_REC_LEN + PFS_UDP_KEY_BODY];
	int io_ms = o->io_timeout_ms > 0 ? o->io_timeout_ms : UDP_DEFAULT_TIMEOUT_MS;
	double deadline = t0 + io_ms / 1000.0;
	const struct pfs_xfer_terms t = pfs_xfer_terms_of(o, fp);
	struct pfs_xfer_agreed ag = { 0 };
	struct pfs_udp_rec p;
	struct pfs_ctl a;
	int err = have ? 0 : pfs_xfer_read_by(x->cfd, raw, PFS_CTL_LEN, deadline, &r->wire_bytes);

	if (err)
		return pfs_xfer_fail(r, err, "recv: waiting for HELLO from %s: %s", r->peer,
				     err == -ETIMEDOUT ? "not complete within --timeout; dropped" :
							 pfs_xfer_io_what(err));
	if (have)
		r->wire_bytes += PFS_CTL_LEN;
	memcpy(tr, raw, PFS_CTL_LEN);
	err = pfs_xfer_hello_check(raw, &t, &ag, &a, r);
	x->bound = ag.bound;
	x->planned = ag.planned;
	if (err == -EPROTO)
		return err;
	if (!err) {
		err = pfs_xfer_read_by(x->cfd, prm, PFS_UDP_REC_LEN, deadline, &r->wire_bytes);
		if (err)
			return pfs_xfer_fail(r, err,
					     "recv: waiting for PARAMS from %s: %s (is the "
					     "sender running --transport %s?)",
					     r->peer,
					     err == -ETIMEDOUT ? "HELLO and PARAMS not complete "
								 "within --timeout; dropped" :
								 pfs_xfer_io_what(err),
					     tname);
		if (pfs_udp_rec_decode_hdr(prm, PFS_UDP_REC_LEN, &p) || p.type != PFS_UDP_PARAMS)
			return pfs_xfer_fail(r, -EPROTO,
					     "recv: %s sent no valid PARAMS after HELLO "
					     "(is it a %s sender?)",
					     r->peer, tname);
		x->cfg = (struct pfs_udp_cfg){ .payload = p.d + PFS_UDP_FRAG_LEN,
					       .frag = p.d,
					       .window = p.e,
					       .max_gram = (uint32_t)p.a };
		if (p.c != PFS_UDP_SUITE_X25519_GMAC) {
			/* An older sender: its datagrams carry no tag. */
			a.type = PFS_CTL_REFUSE;
			a.word = PFS_REFUSE_VERSION;
			err = pfs_xfer_fail(r, -EPERM,
					    "recv: refused %s: it does not authenticate its "
					    "datagrams (PARAMS suite %" PRIu64 ", this receiver "
					    "needs %u): a pfs from before datagram authentication; "
					    "run the same pfs on both ends",
					    r->peer, p.c, PFS_UDP_SUITE_X25519_GMAC);
		} else if (p.d < 64 || p.d > 65507 - PFS_UDP_FRAG_LEN || !p.e || p.e > UDP_WINDOW ||
			   p.a < PFS_GRAM_HDR_LEN || p.a > UDP_MAX_GRAM || p.b == 0 ||
			   p.b > 65535) {
			a.type = PFS_CTL_REFUSE;
			a.word = PFS_REFUSE_PARAMS;
			err = pfs_xfer_fail(
				r, -EPERM,
				"recv: refused %s: transport parameters not "
				"acceptable: fragment %" PRIu32 " bytes (64..%u), window "
				"%" PRIu32 " (this receiver: 1..%u), max gram %" PRIu64 " bytes "
				"(<= %u)",
				r->peer, p.d, 65507 - PFS_UDP_FRAG_LEN, p.e, UDP_WINDOW, p.a,
				UDP_MAX_GRAM);
		} else if (!(err = rx_key(x, tr, sizeof(tr), deadline, &a, ans + PFS_CTL_LEN))) {
			/* Only the sender's data socket may feed ours. */
			struct sockaddr_storage ss;
			socklen_t sl = sizeof(ss);

			getpeername(x->cfd, (struct sockaddr *)&ss, &sl);
			if (ss.ss_family == AF_INET)
				((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)p.b);
			else
				((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)p.b);
			if (x->io->ops->connect &&
			    (err = x->io->ops->connect(x->io, (struct sockaddr *)&ss, sl)))
				pfs_warn("recv: cannot connect the data socket to the sender: %s",
					 strerror(-err));
			err = 0;
		} else if (err != -EPERM) {
			return err;
		}
	}
	if (err) {
		pfs_xfer_send_ctl(x->cfd, &a, &r->wire_bytes);
		return err;
	}
	pfs_ctl_encode(&a, ans);
	err = pfs_xfer_write_full(x->cfd, ans, sizeof(ans), &r->wire_bytes);
	if (err)
		return pfs_xfer_fail(r, err, "recv: sending ACCEPT: %s", pfs_xfer_io_what(err));
	return 0;
}

static int rx_alloc(struct rx *x)
{
	uint32_t maxf = pfs_udp_nfrags(&x->cfg, x->cfg.max_gram);

	x->words = (maxf + 63) / 64;
	for (int i = 0; i < UDP_WINDOW; i++) {
		x->slots[i].buf = malloc(x->cfg.max_gram);
		x->slots[i].bits = calloc(x->words, sizeof(uint64_t));
		x->slots[i].nak_seq = UINT64_MAX;
		if (!x->slots[i].buf || !x->slots[i].bits)
			return -ENOMEM;
		/* Fault the slots in now: setup, not transfer time. */
		memset(x->slots[i].buf, 0, x->cfg.max_gram);
	}
	return 0;
}

/* The control connection: the caller's (embed.ctl_given), or the first
 * sender's that sent a whole HELLO (into @hello, *have set), the ready
 * file written once the data side and the listener exist. fd or -errno. */
static int rx_accept(struct rx *x, const char *tname, uint8_t *hello, bool *have)
{
	const struct pfs_xfer_opts *o = x->o;
	struct pfs_xfer_accept_opts ao = {
		.accept_timeout_ms = o->recv.accept_timeout_ms,
		.hello_timeout_ms =
			o->io_timeout_ms > 0 ? o->io_timeout_ms : UDP_DEFAULT_TIMEOUT_MS,
		.ready_file = o->recv.ready_file,
		.stop = x->io->stop,
		.auth = &o->auth,
	};
	int lfd;

	if (o->embed.ctl_given)
		return pfs_xfer_given_ctl(o->embed.ctl_fd, x->r);
	ao.io_timeout_ms = ao.hello_timeout_ms;
	lfd = pfs_xfer_listen(o->host, o->port,
			      !strcmp(tname, "udp") ? "udp (control on tcp, same port)" :
						      "afxdp (control on tcp, same port)",
			      x->r);
	if (lfd < 0)
		return lfd;
	*have = true;
	return pfs_xfer_accept_hello(lfd, &ao, hello, x->r);
}

/* After END and the last gram: the verdict against the sender's END, and
 * our RESULT (a RESULT that cannot be sent leaves the verdict standing). */
static void rx_verdict(struct rx *x)
{
	struct pfs_xfer_result *r = x->r;
	struct pfs_ctl res;
	int err;

	r->peer_crc = x->end.word;
	r->peer_crc_valid = true;
	r->verdict = x->end.word == r->crc && x->end.size == r->bytes && x->end.value == r->descs &&
				     x->end.count == r->grams ?
			     PFS_VERDICT_OK :
			     PFS_VERDICT_MISMATCH;
	if (r->verdict != PFS_VERDICT_OK)
		pfs_err("recv: integrity MISMATCH: sender crc32c 0x%08x over %" PRIu64 " bytes, "
			"receiver 0x%08x over %" PRIu64 " bytes",
			x->end.word, x->end.size, (uint32_t)r->crc, r->bytes);
	res = pfs_xfer_result_of(r);
	err = pfs_xfer_send_ctl(x->cfd, &res, &r->wire_bytes);
	if (err)
		pfs_warn("recv: sending RESULT: %s (the verdict stands)", pfs_xfer_io_what(err));
}

int pfs_dgram_recv(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r,
		   const struct pfs_dgram_backend *be)
{
	struct rx *x = NULL;
	struct sockaddr_storage ss;
	socklen_t sl;
	double t0, u0, s0, u1, s1;
	uint8_t hello[PFS_CTL_LEN];
	bool have_hello = false;
	double t_conn;
	uint64_t fp = 0;
	int err;

	if (pfs_xfer_parse_addr(o->host, o->port, &ss, &sl))
		return pfs_xfer_fail(r, -EINVAL, "recv: '%s' is not a numeric IPv4/IPv6 address",
				     o->host);
	if (o->blob)
		fp = o->fingerprint ? o->fingerprint : pfs_blob__fingerprint(o->blob);
	x = calloc(1, sizeof(*x));
	if (!x)
		return pfs_xfer_fail(r, -ENOMEM, "recv: out of memory");
	x->o = o;
	x->r = r;
	x->cfd = -1;
	x->base = o->blob ? pfs_blob__data(o->blob) : NULL;
	x->grace = GRACE_MIN;
	x->drop_ppm = o->link.test_rx_drop_ppm > 1000000 ? 1000000 : o->link.test_rx_drop_ppm;
	x->drop_rng = 0x9e3779b97f4a7c15ULL;
	if (x->drop_ppm)
		pfs_warn("recv: PFS_TEST_RX_DROP_PPM=%u: dropping that share of data datagrams on "
			 "purpose (test only)",
			 x->drop_ppm);
	x->cin = malloc(sizeof(*x->cin));
	x->nakbuf = malloc(NAK_BUF);
	x->d = malloc(PFS_GRAM_MAX_DESC * sizeof(*x->d));
	if (!x->cin || !x->nakbuf || !x->d) {
		err = pfs_xfer_fail(r, -ENOMEM, "recv: out of memory");
		goto out_free;
	}
	/* The data side first, so it exists before a sender can connect. */
	err = be->open_rx(o, &ss, sl, &x->io, r);
	if (err)
		goto out_free;
	x->cfd = rx_accept(x, be->name, hello, &have_hello);
	t_conn = pfs_xfer_now();
	if (x->cfd < 0) {
		err = x->cfd;
		goto out_close_io;
	}
	*x->cin = (struct pfs_udp_ctlin){ .fd = x->cfd, .wire = &r->wire_bytes };
	err = rx_handshake(x, fp, be->name, hello, have_hello, t_conn);
	if (err)
		goto out_close_ctl;
	err = rx_alloc(x);
	if (err) {
		err = pfs_xfer_fail(r, err, "recv: out of memory for %u slots of %u bytes",
				    UDP_WINDOW, x->cfg.max_gram);
		goto out_close_ctl;
	}
	snprintf(r->path, sizeof(r->path), "%s %uB datagrams, %s", be->name, x->cfg.payload,
		 x->io->path);
	snprintf(r->afxdp_mode, sizeof(r->afxdp_mode), "%s", x->io->afxdp_mode);
	pfs_info("recv: %s connected, mode %s, blob %" PRIu64 " bytes, %s", r->peer,
		 pfs_mode_str(o->mode), x->bound, r->path);

	t0 = pfs_xfer_now();
	pfs_xfer_cpu(&u0, &s0);
	err = rx_loop(x);
	pfs_xfer_cpu(&u1, &s1);
	r->elapsed_s = pfs_xfer_now() - t0;
	r->user_s = u1 - u0;
	r->sys_s = s1 - s0;
	r->crc = x->crc;
	r->dgrams.dropped = x->io->ops->drops(x->io);
	pfs_info("recv: %" PRIu64 " datagrams, %" PRIu64 " duplicates, %" PRIu64 " out of order, "
		 "%" PRIu64 " NAKs, %" PRIu64
		 " socket drops; reorder allowance %.0f ms (widest %.0f ms)",
		 r->dgrams.received, r->dgrams.duplicates, r->dgrams.out_of_order, r->dgrams.naks,
		 r->dgrams.dropped, x->grace * UDP_TICK_S * 1e3, x->grace_max * UDP_TICK_S * 1e3);
	if (!err)
		rx_verdict(x);
out_close_ctl:
	if (!o->embed.ctl_given)
		close(x->cfd);
out_close_io:
	x->io->ops->close(x->io); /* afxdp: sockets, then the program is detached */
	pfs_dgram_auth__free(x->auth);
out_free:
	for (int i = 0; i < UDP_WINDOW; i++) {
		free(x->slots[i].buf);
		free(x->slots[i].bits);
	}
	free(x->d);
	free(x->nakbuf);
	free(x->cin);
	free(x);
	return err;
}

int pfs_udp_recv(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r)
{
	return pfs_dgram_recv(o, r, &pfs_dgram_sock);
}
