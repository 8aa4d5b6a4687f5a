// SPDX-License-Identifier: Apache-2.0
/*
 * Replication server (blob_repl.h): serves [start, watermark) of a blob to
 * authenticated clients, cut-through while the blob is still being filled.
 *
 * Threads: one accept thread (poll on the listener, 200 ms ticks so a stop
 * is seen) and one thread per connection, at most max_clients; more are
 * answered REFUSE "busy" by the accept thread and closed. A connection
 * thread owns its socket until it sets done; the accept thread (or stop,
 * after joining the accept thread) joins it and closes the fd, so stop can
 * shutdown() an fd that is still open and a blocked send/recv returns.
 *
 * Memory: the blob is the caller's and is only read here, below the
 * watermark (pfs_progress__mark's acquire orders those reads after the
 * filler's writes). Counters and the connection list are under lock;
 * bytes_served is an atomic the connection threads add to.
 *
 * Hostile input: the only bytes a client sends are its AUTH frame, read
 * with a deadline and decoded by the checked decoder; anything else is
 * counted as refused, logged (at most REPL_LOG_PER_S lines a second, the
 * rest summed) and the connection closed. No blob byte leaves before the
 * MAC matched.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "repl/blob_repl_delta.h"
#include "repl/blob_repl_int.h"
#include "pfs/log.h"
#include "pfs/wire.h"
#include "wire/wire_le.h"

#define REPL_LOG_PER_S 10
#define REPL_WAIT_MS 200 /* progress waits and stop checks */

struct conn {
	struct pfs_repl_server *s;
	int fd;
	pthread_t tid;
	bool done; /* under s->lock: the thread has finished */
	char peer[64];
	struct conn *next;
};

struct pfs_repl_server {
	struct pfs_repl_server_opts o;
	char *token;
	char addr[64];
	int lfd;
	pthread_t accept_tid;
	atomic_bool stop;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC; active changed */
	struct conn *conns; /* under lock */
	int nconn; /* threads alive, under lock */
	int active; /* connections not complete, under lock */
	double idle_since; /* when active last became 0 */
	uint64_t clients, refused, completed, failed; /* under lock */
	_Atomic uint64_t served, resent;
	struct repl_layout lay; /* opts' layout, our copy; lay_ent NULL: none */
	struct repl_layout_ent *lay_ent;
	struct repl_base base; /* delta replication */
	uint64_t delta_clients, delta_refused; /* under lock */
	_Atomic uint64_t delta_wire, delta_bytes;
	double encode_s; /* under lock */
	atomic_bool stepped; /* this relay stepped aside (lag_max): set under lock, read without */
	uint64_t steps; /* under lock: clients sent STEP */
	struct pfs_repl_step step; /* under lock: the first STEP's numbers */
	double log_t0; /* refusal lines: REPL_LOG_PER_S per second */
	unsigned int log_n;
	uint64_t log_dropped;
};

/* A line about one client (a refusal, an aborted stream), at most
 * REPL_LOG_PER_S a second, then a count of what was left out (under lock):
 * a client loop must not flood the holder's log. */
static void conn_log(struct pfs_repl_server *s, const char *what, const char *peer, const char *why)
{
	double now = repl_now();

	if (now - s->log_t0 >= 1.0) {
		if (s->log_dropped)
			pfs_warn("repl serve: suppressed %" PRIu64 " similar messages",
				 s->log_dropped);
		s->log_t0 = now;
		s->log_n = 0;
		s->log_dropped = 0;
	}
	if (s->log_n++ < REPL_LOG_PER_S)
		pfs_warn("repl serve: %s%s: %s", what, peer, why);
	else
		s->log_dropped++;
}

/* A refusal line, rate-limited (under lock). */
static void refuse_log(struct pfs_repl_server *s, const char *peer, const char *why)
{
	conn_log(s, "refused ", peer, why);
}

static void refuse(struct conn *c, uint64_t code, const char *why)
{
	struct pfs_repl_server *s = c->s;

	repl_send_text(c->fd, REPL_REFUSE, s->o.size, code, why);
	pthread_mutex_lock(&s->lock);
	s->refused++;
	refuse_log(s, c->peer, why);
	pthread_mutex_unlock(&s->lock);
}

/* A DELTA request: this server holds the client's base, or refuses. */
static bool base_matches(struct conn *c, const struct repl_frame *a)
{
	struct pfs_repl_server *s = c->s;
	const struct repl_base *b = &s->base;
	char why[200];

	if (b->p && a->base_size == b->size && a->base_fp == b->fp)
		return true;
	if (!b->p)
		snprintf(why, sizeof(why), "this upstream holds no base to send a delta against");
	else
		snprintf(why, sizeof(why),
			 "this upstream's base is another (%" PRIu64
			 " bytes, fingerprint %016" PRIx64 "; the client's: %" PRIu64
			 " bytes, %016" PRIx64 ")",
			 b->size, b->fp, a->base_size, a->base_fp);
	refuse(c, REPL_REFUSE_BASE, why);
	pthread_mutex_lock(&s->lock);
	s->delta_refused++;
	pthread_mutex_unlock(&s->lock);
	return false;
}

/* Still filling (not complete), and stepped aside: new clients are
 * refused, streams get STEP. Once complete it serves everyone again. */
static bool stepped_aside(struct pfs_repl_server *s)
{
	return s->o.progress && pfs_progress__mark(s->o.progress) < s->o.size &&
	       atomic_load(&s->stepped);
}

/* HELLO, then the client's AUTH (into @a): its start offset, or -1 after
 * refusing. */
static int64_t handshake(struct conn *c, struct repl_frame *a_out)
{
	struct pfs_repl_server *s = c->s;
	struct repl_frame h = { .type = REPL_HELLO, .size = s->o.size, .body_len = REPL_NONCE };
	uint8_t hdr[REPL_HDR], mac[REPL_MAC];
	struct repl_frame a;
	char why[160];
	int err;

	if (repl_nonce(h.body) || repl_send_frame(c->fd, &h))
		return -1;
	err = repl_read_full(c->fd, hdr, sizeof(hdr));
	if (!err)
		err = repl_read_frame(c->fd, hdr, &a);
	if (!err && a.type != REPL_AUTH)
		err = -EPROTO;
	if (err) {
		snprintf(why, sizeof(why), "bad request: expected AUTH: %s",
			 pfs_wire_strerror(err));
		refuse(c, REPL_REFUSE_REQUEST, why);
		return -1;
	}
	if (repl_auth_mac(s->token, s->o.token_len, h.body, s->o.size, &a, mac) ||
	    CRYPTO_memcmp(mac, a.body, REPL_MAC)) {
		refuse(c, REPL_REFUSE_AUTH, "authentication failed: the token does not match");
		return -1;
	}
	if (a.size != s->o.size || a.offset > s->o.size) {
		snprintf(why, sizeof(why),
			 "blob size %" PRIu64 " offset %" PRIu64 ": this server holds %" PRIu64
			 " bytes",
			 a.size, a.offset, s->o.size);
		refuse(c, a.size != s->o.size ? REPL_REFUSE_SIZE : REPL_REFUSE_REQUEST, why);
		return -1;
	}
	if ((a.flags & REPL_FLAG_RANGE) && (a.offset >= a.end || a.end > s->o.size)) {
		snprintf(why, sizeof(why),
			 "range %" PRIu64 "..%" PRIu64 ": not inside this server's %" PRIu64
			 " bytes",
			 a.offset, a.end, s->o.size);
		refuse(c, REPL_REFUSE_REQUEST, why);
		return -1;
	}
	if ((a.flags & REPL_FLAG_DELTA) && !base_matches(c, &a))
		return -1;
	if (stepped_aside(s)) {
		refuse(c, REPL_REFUSE_STEPPED,
		       "this relay stepped aside (it forwards slower than it receives): "
		       "fetch from another upstream");
		return -1;
	}
	*a_out = a;
	return (int64_t)a.offset;
}

/* While a connection waits for the watermark: the client must stay silent
 * (it sends nothing after AUTH), so readable means it closed or broke the
 * protocol; either way the connection ends. A KEEPALIVE each second tells
 * it the server is alive. 0, or -ECONNRESET / -EPROTO / a send error. */
static int idle_check(struct conn *c, uint64_t mark, double *t_ka)
{
	struct repl_frame ka = { .type = REPL_KEEPALIVE, .size = c->s->o.size, .offset = mark };
	uint8_t b;
	ssize_t r = recv(c->fd, &b, 1, MSG_DONTWAIT | MSG_PEEK);

	if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
		return -ECONNRESET;
	if (r > 0)
		return -EPROTO;
	if (repl_now() - *t_ka < 1.0)
		return 0;
	*t_ka = repl_now();
	return repl_send_frame(c->fd, &ka);
}

/* The watermark above @off: 0, -ECANCELED (ERROR sent), -EINTR (stop), or
 * what idle_check found. */
struct lag_watch;
static int watch_lag(struct conn *c, struct lag_watch *w, uint64_t off);

static int wait_mark(struct conn *c, uint64_t off, uint64_t *mark, struct lag_watch *w)
{
	struct pfs_repl_server *s = c->s;
	char msg[PFS_REPL_MSG_MAX + 1];
	double t_ka = repl_now();
	int err = 0;

	if (!s->o.progress) {
		*mark = s->o.size;
		return 0;
	}
	*mark = pfs_progress__mark(s->o.progress);
	while (*mark <= off && !err) {
		if (atomic_load(&s->stop))
			return -EINTR;
		err = pfs_progress__wait(s->o.progress, off, REPL_WAIT_MS, mark, msg, sizeof(msg));
		if (err == -ECANCELED) {
			repl_send_text(c->fd, REPL_ERROR, s->o.size, 0, msg);
			return err;
		}
		err = err == -ETIMEDOUT ? idle_check(c, *mark, &t_ka) : err;
		/* A stream caught up with a relay that stepped aside gets STEP
		 * too, before that relay's fetch waits on the tail. */
		if (!err && w)
			err = watch_lag(c, w, off);
	}
	return err;
}

/* Sleep until @sent bytes are due at the paced rate (from @t0). */
static void pace(struct pfs_repl_server *s, double t0, uint64_t sent)
{
	double due = t0 + (double)sent / (double)s->o.rate, now;

	while ((now = repl_now()) < due && !atomic_load(&s->stop)) {
		double d = due - now < 0.2 ? due - now : 0.2;
		struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)(d * 1e9) };

		nanosleep(&ts, NULL);
	}
}

static int send_gram(struct conn *c, uint64_t seq, uint64_t off, uint32_t len)
{
	struct pfs_desc d = { .off = off, .len = len };
	uint8_t hdr[PFS_GRAM_HDR_LEN + PFS_GRAM_OFFSET_DESC_LEN];
	ssize_t hl = pfs_gram_encode(PFS_MODE_PAYLOAD, seq, &d, 1, hdr, sizeof(hdr));
	struct iovec iov[2] = { { .iov_base = hdr },
				{ .iov_base = (void *)(c->s->o.blob + off), .iov_len = len } };

	if (hl < 0)
		return (int)hl;
	iov[0].iov_len = (size_t)hl;
	return repl_writev_full(c->fd, iov, 2);
}

/* The client asked for the chunk digests: once the list is complete,
 * every DIGESTS frame; nothing when there will be none. Keepalives while
 * it waits (an origin still hashing its last chunks). 0 or -errno. */
static int send_digests(struct conn *c)
{
	struct pfs_repl_server *s = c->s;
	struct pfs_chunks *ch = s->o.chunks;
	double t_ka = repl_now();
	const uint8_t *list;
	uint8_t *buf;
	uint32_t count, first = 0;
	int err;

	if (!ch)
		return 0;
	while ((err = pfs_chunks__list_wait(ch, REPL_WAIT_MS)) == -ETIMEDOUT) {
		if (atomic_load(&s->stop))
			return -EINTR;
		err = idle_check(c, s->o.size, &t_ka);
		if (err)
			return err;
	}
	if (err)
		return 0; /* -ENOENT: no list, END alone */
	list = pfs_chunks__list(ch);
	count = pfs_chunks__count(ch);
	buf = malloc(REPL_DIGESTS_FRAME_MAX);
	if (!buf)
		return -ENOMEM;
	while (!err && first < count) {
		uint32_t n = count - first < REPL_DIGESTS_MAX ? count - first : REPL_DIGESTS_MAX;
		int len = repl_digests_encode(s->o.size, first,
					      list + (size_t)first * PFS_CHUNK_DIGEST, n, buf);
		struct iovec iov = { .iov_base = buf, .iov_len = (size_t)(len > 0 ? len : 0) };

		err = len < 0 ? len : repl_writev_full(c->fd, &iov, 1);
		first += n;
	}
	free(buf);
	return err;
}

/* A stream's distance behind this relay's own fill, for lag_max
 * (docs/design/fanout.md "A slow relay"). Only its growth counts: a client
 * that joined late starts far behind and catches up; one this relay
 * forwards to slower than it receives falls further behind. A stall (a
 * busy core, a client descheduled) does that too, for a moment; so the
 * stream must also have run REPL_LAG_MIN_S and, over its whole life, have
 * carried less than half of what the fill added. */
struct lag_watch {
	bool on; /* a relay's plain TCP stream to a client that never stepped aside */
	bool started;
	uint64_t lag0, off0, mark0;
	double t0;
};

#define REPL_LAG_MIN_S 0.05

#define REPL_STEPPED 1 /* stream(): the client was sent STEP */

/* At most REPL_UNSENT_MAX bytes of a watched stream wait in its socket
 * unsent (TCP_NOTSENT_LOWAT). Why: a STEP queues behind every byte written
 * before it, and on the slow uplink the rule is for, a send buffer grown
 * to megabytes is tens of milliseconds the downstream waits before it
 * learns to move; what was written also stops counting as lag sooner.
 * Two grams keep a writer ahead of a fast link; what is in flight is not
 * bounded by it. Failing to set it changes only how soon STEP arrives. */
#define REPL_UNSENT_MAX (2 * PFS_REPL_GRAM_MAX)
static void bound_unsent(int fd)
{
	int v = REPL_UNSENT_MAX;

	(void)setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &v, sizeof(v));
}

/* Send STEP to @c (at @off) and record why; REPL_STEPPED, or -errno. */
static int step(struct conn *c, const struct lag_watch *w, uint64_t off, uint64_t mark)
{
	struct pfs_repl_server *s = c->s;
	char why[PFS_REPL_MSG_MAX + 1];
	bool first;

	snprintf(why, sizeof(why),
		 "this relay forwards slower than it receives: %" PRIu64 " MiB behind its "
		 "fill at offset %" PRIu64 " (%" PRIu64 " MiB when this stream began, limit "
		 "%" PRIu64 " MiB more; %" PRIu64 " of %" PRIu64 " MiB filled since were "
		 "sent); fetch from your next upstream",
		 (mark - off) >> 20, off, w->lag0 >> 20, s->o.lag_max >> 20, (off - w->off0) >> 20,
		 (mark - w->mark0) >> 20);
	pthread_mutex_lock(&s->lock);
	first = !atomic_load(&s->stepped);
	if (first) {
		atomic_store(&s->stepped, true);
		s->step = (struct pfs_repl_step){ .stepped = true,
						  .mark = mark,
						  .lag = mark - off,
						  .lag_start = w->lag0,
						  .seconds = repl_now() - w->t0 };
		snprintf(s->step.peer, sizeof(s->step.peer), "%s", c->peer);
	}
	s->steps++;
	pthread_mutex_unlock(&s->lock);
	if (first && s->o.step_aside)
		__atomic_store_n(s->o.step_aside, 1, __ATOMIC_RELEASE);
	pfs_warn("repl serve: %s: %s", c->peer, why);
	repl_send_text(c->fd, REPL_STEP, s->o.size, off, why);
	return REPL_STEPPED;
}

/* Has this stream (at @off) fallen lag_max further behind the fill, or has
 * another one (s->stepped)? Then STEP it: REPL_STEPPED. Else 0. */
static int watch_lag(struct conn *c, struct lag_watch *w, uint64_t off)
{
	struct pfs_repl_server *s = c->s;
	uint64_t mark;

	if (!w->on)
		return 0;
	mark = pfs_progress__mark(s->o.progress);
	if (s->o.size - mark <= s->o.lag_max) {
		w->on = false; /* (nearly) complete: nothing worth moving away from */
		return 0;
	}
	if (mark < off)
		mark = off;
	if (!w->started) {
		w->started = true;
		w->lag0 = mark - off;
		w->off0 = off;
		w->mark0 = mark;
		w->t0 = repl_now();
	}
	if (atomic_load(&s->stepped) ||
	    (mark - off > w->lag0 && mark - off - w->lag0 > s->o.lag_max &&
	     2 * (off - w->off0) < mark - w->mark0 && repl_now() - w->t0 >= REPL_LAG_MIN_S))
		return step(c, w, off, mark);
	return 0;
}

/* Grams from @off to @stop (the size, or a RANGE's end), then END at
 * @stop. 0, REPL_STEPPED (sent STEP instead) or -errno. */
static int stream(struct conn *c, uint64_t off, uint64_t stop, bool chunks, struct lag_watch *w)
{
	struct pfs_repl_server *s = c->s;
	uint64_t chunk = PFS_REPL_GRAM_MAX, sent = 0, seq = 0, mark;
	struct repl_frame end = { .type = REPL_END, .size = s->o.size, .offset = stop };
	double t0 = repl_now();
	int err = 0;

	if (s->o.rate && s->o.rate / 16 < chunk)
		chunk = s->o.rate / 16 > 4096 ? s->o.rate / 16 : 4096;
	while (off < stop && !err) {
		err = wait_mark(c, off, &mark, w);
		if (err)
			break;
		if (mark > stop)
			mark = stop;
		uint32_t len = (uint32_t)(mark - off < chunk ? mark - off : chunk);

		err = send_gram(c, seq++, off, len);
		off += len;
		sent += len;
		atomic_fetch_add(&s->served, len);
		if (!err && s->o.rate)
			pace(s, t0, sent);
		if (atomic_load(&s->stop))
			err = -EINTR;
		if (!err)
			err = watch_lag(c, w, off);
	}
	if (!err && chunks)
		err = send_digests(c);
	return err ? err : repl_send_frame(c->fd, &end);
}

/* Delta grams of PFS_REPL_DELTA_UNIT blob bytes from @off to the end, each
 * encoded once the watermark passed it, then the chunk digests if asked
 * (@chunks: the relay verifies the bytes it rebuilt by them), then END.
 * Paced by the bytes on the wire. 0 or -errno. */
static int stream_delta(struct conn *c, uint64_t off, bool chunks)
{
	struct pfs_repl_server *s = c->s;
	const struct pfs_delta_index *idx = repl_base_index(&s->base);
	struct pfs_delta_enc *e =
		idx ? pfs_delta_enc__new(idx, s->base.p, s->base.size, s->base.level) : NULL;
	struct repl_frame end = { .type = REPL_END, .size = s->o.size, .offset = s->o.size };
	struct pfs_delta_stats st = { 0 };
	uint64_t seq = 0, sent = 0, mark;
	double t0 = repl_now(), enc_s = 0;
	int err = 0;

	if (!e) {
		repl_send_text(c->fd, REPL_ERROR, s->o.size, 0, "no memory for the delta encoder");
		return -ENOMEM;
	}
	while (off < s->o.size && !err) {
		uint64_t want = s->o.size - off < PFS_REPL_DELTA_UNIT ? s->o.size :
									off + PFS_REPL_DELTA_UNIT;
		const uint8_t *g;
		double te;
		ssize_t n;

		err = wait_mark(c, want - 1, &mark, NULL);
		if (err)
			break;
		te = repl_now();
		n = pfs_delta_enc__gram(e, seq++, s->o.blob, off, (uint32_t)(want - off), &g, &st);
		enc_s += repl_now() - te;
		if (n < 0) {
			repl_send_text(c->fd, REPL_ERROR, s->o.size, 0, "the delta encoder failed");
			err = (int)n;
			break;
		}
		struct iovec iov = { .iov_base = (void *)g, .iov_len = (size_t)n };

		err = repl_writev_full(c->fd, &iov, 1);
		atomic_fetch_add(&s->served, (uint64_t)n);
		atomic_fetch_add(&s->delta_wire, (uint64_t)n);
		atomic_fetch_add(&s->delta_bytes, want - off);
		off = want;
		sent += (uint64_t)n;
		if (!err && s->o.rate)
			pace(s, t0, sent);
		if (atomic_load(&s->stop))
			err = -EINTR;
	}
	pfs_delta_enc__free(e);
	pthread_mutex_lock(&s->lock);
	s->encode_s += enc_s;
	pthread_mutex_unlock(&s->lock);
	if (!err && chunks)
		err = send_digests(c);
	return err ? err : repl_send_frame(c->fd, &end);
}

/* After END: wait for the client to close (it has everything then). */
static void await_close(struct conn *c)
{
	uint8_t b[64];

	shutdown(c->fd, SHUT_WR);
	while (!atomic_load(&c->s->stop) && recv(c->fd, b, sizeof(b), 0) > 0)
		;
}

/* The client asked for datagrams: the repair plane takes the connection. */
static int serve_dgram(struct conn *c, const struct repl_frame *auth)
{
	struct pfs_repl_server *s = c->s;
	struct repl_dgram_src src = { .blob = s->o.blob,
				      .size = s->o.size,
				      .progress = s->o.progress,
				      .stop = &s->stop,
				      .psk = s->o.token,
				      .psk_len = s->o.token_len };
	struct pfs_xfer_result r;
	int err = repl_dgram_serve(c->fd, auth, &src, s->o.rate, s->o.io_timeout_ms, &r);

	atomic_fetch_add(&s->served, r.bytes);
	atomic_fetch_add(&s->resent, r.dgrams.retransmitted);
	if (err && err != -ECANCELED) {
		pthread_mutex_lock(&s->lock);
		conn_log(s, auth->xport == REPL_XPORT_AFXDP ? "afxdp client " : "udp client ",
			 c->peer, r.error[0] ? r.error : strerror(-err));
		pthread_mutex_unlock(&s->lock);
	}
	return err;
}

/* A datagram client that asked for the chunk digests: them, then END. */
static int end_dgram(struct conn *c)
{
	struct repl_frame end = { .type = REPL_END, .size = c->s->o.size, .offset = c->s->o.size };
	int err = send_digests(c);

	return err ? err : repl_send_frame(c->fd, &end);
}

/* The client asked for the file layout: every LAYOUT frame of ours, or
 * the one that says there is none (a flat blob). 0 or -errno. */
static int send_layout(struct conn *c)
{
	struct pfs_repl_server *s = c->s;
	const struct repl_layout *l = s->lay_ent ? &s->lay : NULL;
	uint8_t *buf = malloc(REPL_LAYOUT_FRAME_MAX);
	uint32_t first = 0, next;
	int err = buf ? 0 : -ENOMEM;

	while (!err) {
		int len = repl_layout_encode(l, first, buf, &next);
		struct iovec iov = { .iov_base = buf, .iov_len = (size_t)(len > 0 ? len : 0) };

		if (len < 0) {
			err = len;
			break;
		}
		err = repl_writev_full(c->fd, &iov, 1);
		if (!l || next == l->n)
			break;
		first = next;
	}
	free(buf);
	return err;
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	struct pfs_repl_server *s = c->s;
	struct repl_frame auth;
	bool stepped = false;
	int64_t start;
	int err = -EPROTO;

	repl_set_timeout(c->fd, s->o.auth_timeout_ms);
	start = handshake(c, &auth);
	if (start >= 0) {
		struct repl_frame ok = { .type = REPL_ACCEPT,
					 .size = s->o.size,
					 .offset = (uint64_t)start };

		bool delta = auth.flags & REPL_FLAG_DELTA, layout = auth.flags & REPL_FLAG_LAYOUT;

		pthread_mutex_lock(&s->lock);
		s->clients++;
		s->delta_clients += delta;
		pthread_mutex_unlock(&s->lock);
		pfs_info("repl serve: %s from offset %" PRId64 " over %s%s%s", c->peer, start,
			 repl_xport_str(auth.xport), delta ? ", as delta grams" : "",
			 !layout    ? "" :
			 s->lay_ent ? ", file layout first" :
				      ", asked for a file layout (none: a flat blob)");
		repl_set_timeout(c->fd, s->o.io_timeout_ms);
		err = repl_send_frame(c->fd, &ok);
		if (!err && layout)
			err = send_layout(c);
		if (!err && auth.xport != REPL_XPORT_TCP)
			err = serve_dgram(c, &auth);
		else if (!err && delta)
			err = stream_delta(c, (uint64_t)start, auth.flags & REPL_FLAG_CHUNKS);
		else if (!err) {
			struct lag_watch w = { .on = s->o.lag_max && s->o.progress &&
						     !(auth.flags &
						       (REPL_FLAG_STEPPED | REPL_FLAG_RANGE)) };

			if (w.on)
				bound_unsent(c->fd);
			err = stream(c, (uint64_t)start,
				     auth.flags & REPL_FLAG_RANGE ? auth.end : s->o.size,
				     auth.flags & REPL_FLAG_CHUNKS, &w);
		}
		if (err == REPL_STEPPED) {
			stepped = true; /* neither completed nor failed */
			err = 0;
			shutdown(c->fd, SHUT_WR);
		}
		/* After the datagrams (the repair plane ended with the client's
		 * RESULT), the chunk digests and END on the same connection. */
		if (!err && auth.xport != REPL_XPORT_TCP && (auth.flags & REPL_FLAG_CHUNKS))
			err = end_dgram(c);
		if (!stepped && !err &&
		    (auth.xport == REPL_XPORT_TCP || (auth.flags & REPL_FLAG_CHUNKS)))
			await_close(c);
		else if (!stepped && err != -ECANCELED && auth.xport == REPL_XPORT_TCP) {
			pthread_mutex_lock(&s->lock); /* dgram: logged by serve_dgram */
			conn_log(s, "", c->peer, pfs_wire_strerror(err));
			pthread_mutex_unlock(&s->lock);
		}
	}
	pthread_mutex_lock(&s->lock);
	if (start >= 0 && !stepped)
		err ? s->failed++ : s->completed++;
	if (--s->active == 0)
		s->idle_since = repl_now();
	c->done = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* Join and free the finished connections (@all: every one, after stop). */
static void reap(struct pfs_repl_server *s, bool all)
{
	struct conn **pp = &s->conns, *c;

	pthread_mutex_lock(&s->lock);
	while ((c = *pp)) {
		if (!c->done && !all) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		s->nconn--;
		pthread_mutex_unlock(&s->lock);
		pthread_join(c->tid, NULL);
		close(c->fd);
		free(c);
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
}

/* A new connection: a thread for it, or "busy". */
static void admit(struct pfs_repl_server *s, int fd, const struct sockaddr_storage *ss)
{
	struct conn *c = calloc(1, sizeof(*c));
	bool full;

	if (!c) {
		close(fd);
		return;
	}
	c->s = s;
	c->fd = fd;
	repl_addr_str(ss, c->peer, sizeof(c->peer));
	repl_set_timeout(fd, s->o.auth_timeout_ms);
	pthread_mutex_lock(&s->lock);
	full = s->nconn >= s->o.max_clients;
	if (!full) {
		c->next = s->conns;
		s->conns = c;
		s->nconn++;
		s->active++;
	}
	pthread_mutex_unlock(&s->lock);
	if (full) {
		refuse(c, REPL_REFUSE_BUSY, "busy: too many replication clients");
		close(fd);
		free(c);
	} else if (pthread_create(&c->tid, NULL, conn_main, c)) {
		/* Only this thread adds to the list: @c is still its head. */
		pthread_mutex_lock(&s->lock);
		s->conns = c->next;
		s->nconn--;
		if (--s->active == 0)
			s->idle_since = repl_now();
		pthread_mutex_unlock(&s->lock);
		pfs_warn("repl serve: no thread for %s", c->peer);
		close(fd);
		free(c);
	}
}

static void *accept_main(void *arg)
{
	struct pfs_repl_server *s = arg;

	while (!atomic_load(&s->stop)) {
		struct pollfd p = { .fd = s->lfd, .events = POLLIN };
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd;

		reap(s, false);
		if (poll(&p, 1, REPL_WAIT_MS) <= 0)
			continue;
		fd = accept4(s->lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
		if (fd >= 0)
			admit(s, fd, &ss);
	}
	return NULL;
}

int pfs_repl_listen(const char *addr, char *why, size_t n)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int one = 1, fd;

	if (repl_parse_addr(addr, &ss, &sl)) {
		snprintf(why, n, "bad listen address '%s' (want ADDR:PORT)", addr);
		return -EINVAL;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&ss, sl) || listen(fd, 64)) {
		int err = -errno;

		snprintf(why, n, "cannot listen on %s: %s", addr, strerror(errno));
		if (fd >= 0)
			close(fd);
		return err;
	}
	return fd;
}

/* The listener: a copy of opts' listen_fd (the caller closes its own), or
 * a new one on opts' listen. */
static int listen_on(struct pfs_repl_server *s, char *why, size_t n)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (s->o.listen_fd > 0) {
		s->lfd = fcntl(s->o.listen_fd, F_DUPFD_CLOEXEC, 0);
		if (s->lfd < 0) {
			int err = errno;

			snprintf(why, n, "cannot use the listening socket: %s", strerror(err));
			return -err;
		}
	} else {
		s->lfd = pfs_repl_listen(s->o.listen, why, n);
	}
	if (s->lfd < 0)
		return s->lfd;
	getsockname(s->lfd, (struct sockaddr *)&ss, &sl);
	repl_addr_str(&ss, s->addr, sizeof(s->addr));
	return 0;
}

/* Our copy of the blob's layout, in the codec's terms (the caller's may
 * go before a connection thread is done with it). 0 or -EINVAL/-ENOMEM. */
static int copy_layout(struct pfs_repl_server *s, const struct pfs_blob_layout *l, char *why,
		       size_t n)
{
	if (l->size != s->o.size || l->n > REPL_LAYOUT_ENT_MAX) {
		snprintf(why, n,
			 "the layout is of a blob of %" PRIu64 " bytes with %u files, "
			 "the served one has %" PRIu64 " (at most %u files)",
			 l->size, l->n, s->o.size, REPL_LAYOUT_ENT_MAX);
		return -EINVAL;
	}
	s->lay_ent = calloc(l->n ? l->n : 1, sizeof(*s->lay_ent));
	if (!s->lay_ent)
		goto out_nomem;
	s->lay.ent = s->lay_ent;
	s->lay.tail_off = l->tail_off;
	for (; s->lay.n < l->n; s->lay.n++) {
		struct repl_layout_ent *e = &s->lay_ent[s->lay.n];

		e->name = strdup(l->ent[s->lay.n].name);
		if (!e->name)
			goto out_nomem;
		e->offset = l->ent[s->lay.n].offset;
		e->length = l->ent[s->lay.n].length;
	}
	return 0;
out_nomem:
	snprintf(why, n, "no memory for the layout");
	return -ENOMEM;
}

static void free_layout(struct pfs_repl_server *s)
{
	for (uint32_t i = 0; s->lay_ent && i < s->lay.n; i++)
		free((void *)s->lay_ent[i].name);
	free(s->lay_ent);
	s->lay_ent = NULL;
}

static int check_opts(struct pfs_repl_server *s, const struct pfs_repl_server_opts *o, char *why,
		      size_t n)
{
	if (!o || !o->sz) {
		snprintf(why, n, "no options");
		return -EINVAL;
	}
	memcpy(&s->o, o, o->sz < sizeof(s->o) ? o->sz : sizeof(s->o));
	if (!s->o.listen || !s->o.blob || !s->o.token || !s->o.token_len) {
		snprintf(why, n, "listen address, blob and token are required");
		return -EINVAL;
	}
	if (s->o.progress && pfs_progress__size(s->o.progress) != s->o.size) {
		snprintf(why, n, "the progress is of another size than the blob");
		return -EINVAL;
	}
	s->o.max_clients = s->o.max_clients > 0 ? s->o.max_clients : PFS_REPL_CLIENTS;
	s->o.io_timeout_ms = s->o.io_timeout_ms > 0 ? s->o.io_timeout_ms : 30000;
	s->o.auth_timeout_ms = s->o.auth_timeout_ms > 0 ? s->o.auth_timeout_ms : 5000;
	if (s->o.base && !s->o.base_size) {
		snprintf(why, n, "a base of 0 bytes");
		return -EINVAL;
	}
	if (s->o.layout) {
		int err = copy_layout(s, s->o.layout, why, n);

		if (err)
			return err;
		s->o.layout = NULL; /* the caller's: ours is s->lay */
	}
	s->token = malloc(s->o.token_len);
	if (!s->token) {
		snprintf(why, n, "no memory");
		return -ENOMEM;
	}
	memcpy(s->token, s->o.token, s->o.token_len);
	s->o.token = s->token;
	return 0;
}

static void server_free(struct pfs_repl_server *s)
{
	repl_base_fini(&s->base);
	free_layout(s);
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->token)
		OPENSSL_cleanse(s->token, s->o.token_len);
	free(s->token);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

struct pfs_repl_server *pfs_repl_server__start(const struct pfs_repl_server_opts *opts, char *why,
					       size_t n)
{
	struct pfs_repl_server *s = calloc(1, sizeof(*s));
	pthread_condattr_t ca;
	int err;

	if (!s) {
		snprintf(why, n, "no memory");
		errno = ENOMEM;
		return NULL;
	}
	s->lfd = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);
	s->idle_since = repl_now();
	err = check_opts(s, opts, why, n);
	if (!err)
		err = repl_base_init(&s->base, &s->o);
	if (!err)
		err = listen_on(s, why, n);
	if (!err) {
		err = -pthread_create(&s->accept_tid, NULL, accept_main, s);
		if (err)
			snprintf(why, n, "cannot start the accept thread: %s", strerror(-err));
	}
	if (err) {
		server_free(s);
		errno = -err;
		return NULL;
	}
	pfs_info("repl serve: listening on %s (%" PRIu64 " bytes%s)", s->addr, s->o.size,
		 s->o.progress ? ", cut-through while filling" : "");
	return s;
}

static void timed_wait(struct pfs_repl_server *s, int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += (long)ms * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	pthread_cond_timedwait(&s->cond, &s->lock, &ts);
}

void pfs_repl_server__linger(struct pfs_repl_server *s, int linger_ms,
			     const volatile sig_atomic_t *stop)
{
	double t_call = repl_now();

	pthread_mutex_lock(&s->lock);
	while (!(stop && *stop)) {
		double since = s->idle_since > t_call ? s->idle_since : t_call;

		if (!s->active && repl_now() - since >= linger_ms / 1000.0)
			break;
		timed_wait(s, 100);
	}
	pthread_mutex_unlock(&s->lock);
}

void pfs_repl_server__drain(struct pfs_repl_server *s, int timeout_ms)
{
	double end = repl_now() + timeout_ms / 1000.0;

	pthread_mutex_lock(&s->lock);
	while (s->active && repl_now() < end)
		timed_wait(s, 50);
	pthread_mutex_unlock(&s->lock);
}

void pfs_repl_server__stats(struct pfs_repl_server *s, struct pfs_repl_server_stats *st)
{
	pthread_mutex_lock(&s->lock);
	st->clients = s->clients;
	st->refused = s->refused;
	st->completed = s->completed;
	st->failed = s->failed;
	st->active = s->active;
	st->delta_clients = s->delta_clients;
	st->delta_refused = s->delta_refused;
	st->encode_s = s->encode_s;
	st->steps = s->steps;
	st->step = s->step;
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_lock(&s->base.mu);
	st->index_s = s->base.index_s;
	pthread_mutex_unlock(&s->base.mu);
	st->delta_wire = atomic_load(&s->delta_wire);
	st->delta_bytes = atomic_load(&s->delta_bytes);
	st->bytes_served = atomic_load(&s->served);
	st->retransmitted = atomic_load(&s->resent);
}

const char *pfs_repl_server__addr(const struct pfs_repl_server *s)
{
	return s->addr;
}

void pfs_repl_server__stop(struct pfs_repl_server *s)
{
	if (!s)
		return;
	atomic_store(&s->stop, true);
	pthread_join(s->accept_tid, NULL);
	pthread_mutex_lock(&s->lock);
	for (struct conn *c = s->conns; c; c = c->next)
		if (!c->done)
			shutdown(c->fd, SHUT_RDWR);
	pthread_mutex_unlock(&s->lock);
	reap(s, true);
	if (s->log_dropped) /* the last window's count, which no later line flushed */
		pfs_warn("repl serve: suppressed %" PRIu64 " similar messages", s->log_dropped);
	server_free(s);
}
