// SPDX-License-Identifier: Apache-2.0
/*
 * Replication client (blob_repl.h, pfs_repl_fetch): receives a blob from a
 * list of upstreams into the caller's mapping, resuming from its own
 * contiguous watermark on the next upstream when a connection breaks.
 *
 * One thread (the caller's). Payload bytes are received straight into the
 * blob at their offset (no bounce buffer); a gram is accepted only when its
 * header and descriptor decode (gram.h's checked decoders), it is a payload
 * gram of one descriptor of at most PFS_REPL_GRAM_MAX bytes, its sequence
 * number is the next one and its offset is exactly the watermark. Anything
 * else is counted (r->gram, r->rejected), logged and drops the connection;
 * the fetch goes on with the next upstream. Only an upstream's verdict on
 * us (token, size) or its own failure (ERROR) ends the fetch at once.
 *
 * The progress (if any) is advanced after each gram, so a server on the
 * same blob serves what arrived while the rest is still arriving; it stays
 * hold_back bytes below the end until the caller verified the content.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
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

struct fetch {
	const struct pfs_repl_fetch_opts *o;
	struct pfs_repl_fetch_result *r;
	const char *const *ups; /* the upstreams cycled: o->upstreams, or o->tail once moved */
	int nups;
	const char *up; /* the upstream of this attempt */
	uint64_t have; /* contiguous bytes received */
	uint64_t end; /* where the bytes asked for end: the size, or opts' end */
	uint64_t seq; /* the next gram's sequence number */
	double t_first; /* monotonic, first payload byte; 0 before */
	bool final; /* the last error ends the fetch: no other upstream */
	bool first_answered; /* upstreams[0] sent HELLO once */
	bool connected, hello; /* this attempt: connected; HELLO received */
	uint8_t xport; /* enum repl_xport */
	int cur; /* the index of f->up */
	bool delta; /* this attempt asks for delta grams */
	bool chunks; /* this attempt asks for the chunk digests */
	bool got_digests; /* ... and received some */
	bool no_delta[2 * PFS_REPL_UPSTREAMS]; /* refused our base: fetch whole */
	bool skip[2 * PFS_REPL_UPSTREAMS]; /* of ups: stepped aside (STEP), skipped from then on */
	const char *moved_ups[2 * PFS_REPL_UPSTREAMS]; /* once moved: the tail, then upstreams */
	bool moving; /* the last attempt ended to move to the tail */
	bool moved; /* ... and ups is o->tail now: AUTH says STEPPED */
	bool now; /* the next attempt without a backoff (a STEP or a move) */
	struct repl_delta_rx rx;
	uint8_t *blob; /* o->blob, or what on_layout created */
	struct repl_layout_list layout; /* with o->layout: the first one received */
	char layout_from[64]; /* the upstream that sent it */
};

static int fail(struct fetch *f, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct fetch *f, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f->r->error, sizeof(f->r->error), fmt, ap);
	va_end(ap);
	return err;
}

/* An error that no other upstream can fix: the token, the size, the
 * origin's own failure, a stop. */
static int final(struct fetch *f, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int final(struct fetch *f, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f->r->error, sizeof(f->r->error), fmt, ap);
	va_end(ap);
	f->final = true;
	return err;
}

static bool stopped(const struct fetch *f)
{
	return f->o->stop && *f->o->stop;
}

/* @up as an address: numeric, or a DNS name resolved now (every attempt:
 * a holder's name appears once its pod has an IP). A name that does not
 * resolve yet counts as a refused connection. 0 or -errno. */
static int resolve(struct fetch *f, struct sockaddr_storage *ss, socklen_t *sl)
{
	int err = repl_resolve_addr(f->up, ss, sl);

	if (err == -EINVAL)
		return final(f, err, "bad upstream address '%s' (HOST:PORT, [V6]:PORT)", f->up);
	if (err == -EAGAIN)
		return fail(f, -ECONNREFUSED, "upstream %s: the name does not resolve (yet)",
			    f->up);
	if (err)
		return fail(f, err, "upstream %s: resolving the name: %s", f->up, strerror(-err));
	return 0;
}

/* A connected socket to @up, or -errno. Non-blocking connect bounded by
 * connect_timeout_ms, then blocking with the I/O timeouts. */
static int dial(struct fetch *f)
{
	struct sockaddr_storage ss;
	struct pollfd p = { .events = POLLOUT };
	int fd, err = 0;
	socklen_t sl, el = sizeof(err);

	if ((err = resolve(f, &ss, &sl)))
		return err;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return fail(f, -errno, "socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&ss, sl) && errno != EINPROGRESS)
		err = -errno;
	p.fd = fd;
	if (!err && poll(&p, 1, f->o->connect_timeout_ms) != 1)
		err = -ETIMEDOUT;
	if (!err && (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) || err))
		err = -(err ? err : errno);
	if (!err && (fcntl(fd, F_SETFL, 0) || repl_set_timeout(fd, f->o->io_timeout_ms)))
		err = -errno;
	if (err) {
		close(fd);
		return fail(f, err, "connect %s: %s", f->up, strerror(-err));
	}
	return fd;
}

/* A REFUSE: final when it is about us (token, size), else retry; one
 * about our base makes the next attempt at that upstream fetch whole. */
static int refused(struct fetch *f, const struct repl_frame *x)
{
	if (x->offset == REPL_REFUSE_BASE && f->delta) {
		f->no_delta[f->cur] = true;
		f->r->delta.refused++;
		pfs_info("repl fetch: %s has not our base (%s): the bytes from it, whole", f->up,
			 (const char *)x->body);
		return fail(f, -EAGAIN, "upstream %s refused a delta: %s", f->up,
			    (const char *)x->body);
	}
	if (x->offset == REPL_REFUSE_AUTH)
		return final(f, -EACCES, "upstream %s refused: %s (check --token-file)", f->up,
			     (const char *)x->body);
	if (x->offset == REPL_REFUSE_SIZE)
		return final(f, -EMSGSIZE, "upstream %s refused: %s", f->up, (const char *)x->body);
	if (x->offset == REPL_REFUSE_STEPPED) { /* it stepped aside: the next, at once */
		f->skip[f->cur] = true;
		f->now = true;
	}
	return fail(f, -EAGAIN, "upstream %s refused: %s", f->up, (const char *)x->body);
}

/* A malformed stream: counted, and the connection is dropped. */
static int reject(struct fetch *f, int err, const char *what)
{
	f->r->rejected++;
	pfs_gram_stats_count(&f->r->gram, err);
	pfs_warn("repl fetch: %s sent a bad %s at %" PRIu64 ": %s; dropping it", f->up, what,
		 f->have, pfs_wire_strerror(err));
	return fail(f, -EPROTO, "upstream %s sent a bad %s at offset %" PRIu64 " (%s)", f->up, what,
		    f->have, pfs_wire_strerror(err));
}

/* The next frame, which must be @want (REFUSE is answered by refused()). */
static int expect(struct fetch *f, int fd, uint8_t want, struct repl_frame *x)
{
	uint8_t hdr[REPL_HDR];
	int err = repl_read_full(fd, hdr, sizeof(hdr));

	if (err)
		return fail(f, err, "upstream %s: %s during the handshake", f->up, strerror(-err));
	err = repl_read_frame(fd, hdr, x);
	if (err)
		return err == -ECONNRESET || err == -ETIMEDOUT ?
			       fail(f, err, "upstream %s: %s", f->up, strerror(-err)) :
			       reject(f, err, "handshake frame");
	if (x->type == REPL_REFUSE)
		return refused(f, x);
	if (x->type != want)
		return reject(f, -EPROTO, repl_type_str(x->type));
	return 0;
}

/* HELLO -> AUTH -> ACCEPT. 0 or -errno (f->final: no retry). */
static int handshake(struct fetch *f, int fd)
{
	struct repl_frame h,
		a = { .type = REPL_AUTH,
		      .xport = f->xport,
		      .data_port = f->xport == REPL_XPORT_TCP ? 0 : f->o->data_port,
		      .size = f->o->size,
		      .offset = f->have,
		      .body_len = f->delta	      ? REPL_AUTH_DELTA_BODY :
				  f->end < f->o->size ? REPL_AUTH_RANGE_BODY :
							REPL_MAC,
		      .flags = (uint8_t)((f->delta ? REPL_FLAG_DELTA : 0) |
					 (f->o->layout ? REPL_FLAG_LAYOUT : 0) |
					 (f->chunks ? REPL_FLAG_CHUNKS : 0) |
					 (f->end < f->o->size ? REPL_FLAG_RANGE : 0) |
					 (f->moved || f->r->n_skipped ? REPL_FLAG_STEPPED : 0)),
		      .end = f->end,
		      .base_size = f->delta ? f->o->base_size : 0,
		      .base_fp = f->delta ? f->o->base_fp : 0 };
	int err = expect(f, fd, REPL_HELLO, &h);

	if (err)
		return err;
	f->hello = true;
	if (f->up == f->o->upstreams[0])
		f->first_answered = true;
	if (h.size != f->o->size)
		return final(f, -EMSGSIZE,
			     "upstream %s holds a blob of %" PRIu64 " bytes, this one is %" PRIu64
			     " (--size must match the origin's)",
			     f->up, h.size, f->o->size);
	if (repl_auth_mac(f->o->token, f->o->token_len, h.body, h.size, &a, a.body))
		return final(f, -EIO, "HMAC-SHA256 failed");
	err = repl_send_frame(fd, &a);
	if (err)
		return fail(f, err, "upstream %s: %s", f->up, strerror(-err));
	err = expect(f, fd, REPL_ACCEPT, &h);
	if (!err && h.offset != f->have)
		err = reject(f, -ERANGE, "ACCEPT offset");
	return err;
}

/* The LAYOUT frames after ACCEPT, into @l: 0 once complete (or none). */
static int read_layout(struct fetch *f, int fd, uint8_t *buf, struct repl_layout_list *l)
{
	struct repl_layout_frame x;
	int rc = 0, bl, err;

	while (rc == 0) {
		err = repl_read_full(fd, buf, REPL_HDR);
		if (err)
			return fail(f, err, "upstream %s: %s reading the layout", f->up,
				    strerror(-err));
		if (get32(buf) == REPL_MAGIC && buf[5] != REPL_LAYOUT)
			return reject(f, -EPROTO, "frame (expected LAYOUT)");
		bl = repl_layout_body_len(buf, REPL_HDR);
		if (bl < 0)
			return reject(f, bl,
				      bl == -ERANGE ? "LAYOUT header (count or first index)" :
						      "LAYOUT header");
		err = repl_read_full(fd, buf + REPL_HDR, (size_t)bl);
		if (err)
			return fail(f, err, "upstream %s: %s reading the layout", f->up,
				    strerror(-err));
		err = repl_layout_decode(buf, REPL_HDR + (size_t)bl, f->o->size, &x);
		if (err) {
			char what[96];

			snprintf(what, sizeof(what), "LAYOUT frame (%s)", x.why);
			return reject(f, err, what);
		}
		f->r->layout_frames++;
		rc = repl_layout_list_add(l, &x);
		if (rc == -ENOMEM)
			return final(f, rc, "no memory for the layout");
		if (rc < 0)
			return reject(f, rc, "LAYOUT frame (order or count)");
	}
	return 0;
}

/* A resume's upstream sent another layout than the blob's: say where. */
static int layout_differs(struct fetch *f, const struct repl_layout *held,
			  const struct repl_layout *got)
{
	uint32_t i = 0;
	char what[200];

	while (i < held->n && i < got->n && !strcmp(held->ent[i].name, got->ent[i].name) &&
	       held->ent[i].offset == got->ent[i].offset &&
	       held->ent[i].length == got->ent[i].length)
		i++;
	if (i < held->n && i < got->n)
		snprintf(what, sizeof(what),
			 "file %u is '%.60s' of %" PRIu64 " bytes there, '%.60s' of %" PRIu64
			 " bytes here",
			 i, got->ent[i].name, got->ent[i].length, held->ent[i].name,
			 held->ent[i].length);
	else if (held->n != got->n)
		snprintf(what, sizeof(what), "%u files there, %u here", got->n, held->n);
	else
		snprintf(what, sizeof(what), "the manifest at %" PRIu64 " there, %" PRIu64 " here",
			 got->tail_off, held->tail_off);
	return final(f, -ESTALE,
		     "upstream %s holds another file layout than the one this blob was created "
		     "from (from %s): %s; the upstreams hold different blobs: point "
		     "--fetch-from at holders of one blob",
		     f->up, f->layout_from, what);
}

/* Asked for the layout: receive it; the first one creates the blob
 * (on_layout), every later one must be equal. 0 or -errno. */
static int layout(struct fetch *f, int fd)
{
	const struct pfs_repl_fetch_opts *o = f->o;
	struct repl_layout_list l = { 0 };
	struct repl_layout got, held;
	struct pfs_blob_layout pl = { .size = o->size };
	uint8_t *buf = malloc(REPL_LAYOUT_FRAME_MAX);
	char why[400] = "";
	int err = buf ? read_layout(f, fd, buf, &l) : final(f, -ENOMEM, "no memory");

	free(buf);
	if (err)
		goto out;
	if (l.none) {
		err = final(
			f, -ENODATA,
			"upstream %s holds a blob without a file layout (flat or seeded), so it "
			"cannot serve --layout files: load the origin with --source and "
			"--layout files, or fetch without --layout files",
			f->up);
		goto out;
	}
	got = repl_layout_list_get(&l);
	if (f->layout.done) {
		held = repl_layout_list_get(&f->layout);
		if (!repl_layout_equal(&held, &got))
			err = layout_differs(f, &held, &got);
		goto out;
	}
	pl.n = got.n;
	pl.tail_off = got.tail_off;
	pl.ent = calloc(got.n ? got.n : 1, sizeof(*pl.ent));
	if (!pl.ent) {
		err = final(f, -ENOMEM, "no memory for the layout");
		goto out;
	}
	for (uint32_t i = 0; i < got.n; i++)
		pl.ent[i] = (struct pfs_blob_layout_ent){ .name = got.ent[i].name,
							  .offset = got.ent[i].offset,
							  .length = got.ent[i].length };
	err = o->on_layout(o->layout_ctx, &pl, &f->blob, why, sizeof(why));
	free(pl.ent);
	if (!err && !f->blob)
		err = -EINVAL;
	if (err) {
		err = final(f, err, "creating the blob from the layout of %s: %s", f->up,
			    why[0] ? why : strerror(-err));
		goto out;
	}
	pfs_info("repl fetch: %s sent a layout of %u files (tail at %" PRIu64
		 "): the blob is created from it",
		 f->up, got.n, got.tail_off);
	f->r->layout_files = got.n;
	snprintf(f->layout_from, sizeof(f->layout_from), "%s", f->up);
	f->layout = l; /* kept: what every resume must match */
	return 0;
out:
	repl_layout_list_fini(&l);
	return err;
}

static void first_byte(struct fetch *f)
{
	if (!f->t_first) {
		f->t_first = repl_now();
		f->r->t0_unix = repl_wall();
	}
}

/* @len more bytes at the watermark are in the blob: count them (what
 * arrived counts as received even when the rest does not) and let the
 * server on this blob serve them on. */
static void arrived(struct fetch *f, uint64_t len)
{
	const struct pfs_repl_fetch_opts *o = f->o;

	first_byte(f);
	f->r->bytes += len;
	f->have += len;
	f->r->t1_unix = repl_wall();
	f->r->seconds = repl_now() - f->t_first;
	if (o->progress)
		pfs_progress__advance(o->progress, f->have < o->size - o->hold_back ?
							   f->have :
							   o->size - o->hold_back);
	if (o->on_bytes)
		o->on_bytes(o->bytes_ctx, f->have);
}

/* The datagram receiver's on_exec: bytes must come in order. */
static int dgram_exec(void *ctx, uint64_t off, uint64_t len)
{
	struct fetch *f = ctx;

	if (off != f->have) {
		f->r->rejected++;
		return -ERANGE;
	}
	arrived(f, len);
	return 0;
}

/* Errors of the datagram receiver that another upstream would not cure:
 * this node cannot receive that way (no such interface, no capability, a
 * build without AF_XDP), or the upstream's own fill failed. */
static bool dgram_final(int err)
{
	switch (-err) {
	case ENOTSUP:
	case ENODEV:
	case EPERM:
	case EACCES:
	case ENOMEM:
	case EMSGSIZE:
	case EADDRINUSE:
	case EINVAL:
	case ECANCELED:
	case EINTR:
		return true;
	}
	return false;
}

static void dgram_count(struct pfs_dgram_stats *a, const struct pfs_dgram_stats *b)
{
	a->sent += b->sent;
	a->received += b->received;
	a->retransmitted += b->retransmitted;
	a->naks += b->naks;
	a->duplicates += b->duplicates;
	a->out_of_order += b->out_of_order;
	a->dropped += b->dropped;
	a->test_dropped += b->test_dropped;
	a->forged += b->forged;
	a->conflicts += b->conflicts;
}

static int receive(struct fetch *f, int fd);

/* After ACCEPT, datagrams: 0 when complete, else -errno. */
static int dgram(struct fetch *f, int fd)
{
	const struct pfs_repl_fetch_opts *o = f->o;
	struct repl_dgram_sink k = { .xport = f->xport,
				     .data_port = o->data_port,
				     .ifname = o->ifname,
				     .blob = f->blob,
				     .size = o->size,
				     .on_exec = dgram_exec,
				     .exec_ctx = f,
				     .io_timeout_ms = o->io_timeout_ms,
				     .stop = o->stop,
				     .env = o->env,
				     .psk = o->token,
				     .psk_len = o->token_len };
	struct pfs_xfer_result x;
	int err = repl_dgram_fetch(fd, &k, &x);

	dgram_count(&f->r->dgrams, &x.dgrams);
	if (x.path[0])
		snprintf(f->r->path, sizeof(f->r->path), "%s", x.path);
	if (!err && f->have != o->size)
		return reject(f, -ERANGE, "END (before the last byte)");
	if (!err && f->chunks)
		return receive(f, fd); /* the chunk digests, then END */
	if (!err)
		return 0;
	if (err == -ECANCELED)
		return final(f, err, "upstream %s failed: %s", f->up, x.error);
	if (dgram_final(err))
		return final(f, err, "receiving over %s from %s: %s", repl_xport_str(f->xport),
			     f->up, x.error);
	return fail(f, err, "upstream %s over %s: %s", f->up, repl_xport_str(f->xport), x.error);
}

/* The gram whose first 32 header bytes are in @b: check, then receive its
 * payload into the blob. 0 or -errno. */
static int gram(struct fetch *f, int fd, uint8_t *b)
{
	const struct pfs_repl_fetch_opts *o = f->o;
	struct pfs_gram_hdr h;
	struct pfs_desc d;
	int err = repl_read_full(fd, b + REPL_HDR, PFS_GRAM_HDR_LEN - REPL_HDR);

	if (!err)
		err = pfs_gram_decode_hdr(b, PFS_GRAM_HDR_LEN, &h);
	if (err == -ECONNRESET || err == -ETIMEDOUT)
		return fail(f, err, "upstream %s: %s", f->up, strerror(-err));
	if (err)
		return reject(f, err, "gram header");
	if (h.mode != PFS_MODE_PAYLOAD || h.ndesc != 1 || h.payload_len > PFS_REPL_GRAM_MAX ||
	    !h.payload_len || h.seq != f->seq)
		return reject(f, -EPROTO, "gram (mode, count, length or sequence)");
	err = repl_read_full(fd, b + PFS_GRAM_HDR_LEN, h.desc_len);
	if (err)
		return fail(f, err, "upstream %s: %s", f->up, strerror(-err));
	err = pfs_gram_decode_desc(&h, b + PFS_GRAM_HDR_LEN, h.desc_len, o->size, &d, 1);
	if (err < 0)
		return reject(f, err, "gram descriptor");
	if (d.off != f->have)
		return reject(f, -ERANGE, "gram offset (not the next byte)");
	if (d.len > f->end - d.off)
		return reject(f, -ERANGE, "gram (past the end of the range asked for)");
	pfs_gram_stats_count(&f->r->gram, 0);
	first_byte(f);
	err = repl_read_full(fd, f->blob + d.off, d.len);
	if (err)
		return fail(f, err, "upstream %s: %s at offset %" PRIu64, f->up, strerror(-err),
			    f->have);
	arrived(f, d.len);
	f->seq++;
	return 0;
}

/* A delta gram (its first 32 bytes in @b): rebuild the next bytes. */
static int delta_gram(struct fetch *f, int fd, const uint8_t *b)
{
	const struct pfs_repl_fetch_opts *o = f->o;
	struct repl_delta_in in = { .base = o->base,
				    .base_size = o->base_size,
				    .blob = f->blob,
				    .size = o->size,
				    .have = f->have,
				    .seq = f->seq };
	bool io;
	int64_t n;

	first_byte(f);
	n = repl_delta_rx_gram(&f->rx, fd, b, &in, &f->r->delta, &io);
	if (n < 0 && io)
		return fail(f, (int)n, "upstream %s: %s at offset %" PRIu64, f->up,
			    strerror((int)-n), f->have);
	if (n == -ENOMEM)
		return final(f, -ENOMEM, "no memory for a delta gram");
	if (n < 0)
		return reject(f, (int)n, "delta gram");
	pfs_gram_stats_count(&f->r->gram, 0);
	arrived(f, (uint64_t)n);
	f->seq++;
	return 0;
}

/* A DIGESTS frame (its header in @b): the next digests of the list. */
static int digests(struct fetch *f, int fd, uint8_t *b)
{
	struct repl_digests x;
	uint8_t *buf;
	int bl = repl_digests_body_len(b, REPL_HDR), err;

	if (!f->chunks)
		return reject(f, -EPROTO, "DIGESTS frame (not asked for)");
	if (bl < 0)
		return reject(f, bl, "DIGESTS header");
	buf = malloc(REPL_HDR + (size_t)bl);
	if (!buf)
		return final(f, -ENOMEM, "no memory for a DIGESTS frame");
	memcpy(buf, b, REPL_HDR);
	err = repl_read_full(fd, buf + REPL_HDR, (size_t)bl);
	if (err) {
		free(buf);
		return fail(f, err, "upstream %s: %s reading the chunk digests", f->up,
			    strerror(-err));
	}
	err = repl_digests_decode(buf, REPL_HDR + (size_t)bl, f->o->size, &x);
	if (!err && f->have != f->o->size)
		err = -EPROTO; /* digests come after the last byte */
	if (!err)
		err = pfs_chunks__list_put(f->o->chunks, x.first, x.d, x.n);
	free(buf);
	if (err)
		return reject(f, err, "DIGESTS frame (range or order)");
	f->r->digest_frames++;
	f->got_digests = true;
	return 0;
}

/* The upstream stepped aside (docs/design/fanout.md "A slow relay"): on
 * to the next one at once, and never back to it while others are left. */
static int stepped(struct fetch *f, const struct repl_frame *x)
{
	struct pfs_repl_fetch_result *r = f->r;

	f->skip[f->cur] = true;
	f->now = true;
	if (r->n_skipped < PFS_REPL_SKIPS) {
		snprintf(r->skipped[r->n_skipped], sizeof(r->skipped[0]), "%s", f->up);
		r->skipped_at[r->n_skipped++] = f->have;
	}
	pfs_info("repl fetch: %s stepped aside at offset %" PRIu64 ": %s", f->up, f->have,
		 (const char *)x->body);
	return fail(f, -EAGAIN, "upstream %s stepped aside at offset %" PRIu64, f->up, f->have);
}

/* Our own server stepped aside: leave the upstream for the chain's tail
 * (once). */
static bool move_now(const struct fetch *f)
{
	/* Not once every byte is in (the list and END are all that is left),
	 * nor for a RANGE (a chunk fetched again). */
	return !f->moved && f->o->n_tail > 0 && f->o->step_aside && f->have < f->end &&
	       f->end == f->o->size && !f->got_digests &&
	       __atomic_load_n(f->o->step_aside, __ATOMIC_ACQUIRE);
}

/* A control frame inside the stream: END (1: done), KEEPALIVE (0),
 * STEP (on to the next upstream) or ERROR (final). */
static int control(struct fetch *f, int fd, const uint8_t *b)
{
	struct repl_frame x;
	int err = repl_read_frame(fd, b, &x);

	if (err == -ECONNRESET || err == -ETIMEDOUT)
		return fail(f, err, "upstream %s: %s", f->up, strerror(-err));
	if (err)
		return reject(f, err, "control frame");
	if (x.type == REPL_KEEPALIVE)
		return 0;
	if (x.type == REPL_ERROR)
		return final(f, -ECANCELED, "upstream %s failed: %s", f->up, (const char *)x.body);
	if (x.type == REPL_STEP)
		return stepped(f, &x);
	if (x.type != REPL_END)
		return reject(f, -EPROTO, repl_type_str(x.type));
	if (x.offset != f->end || f->have != f->end)
		return reject(f, -ERANGE, "END (before the last byte)");
	if (f->chunks && !pfs_chunks__list_done(f->o->chunks)) {
		/* The upstream has no list, or sent part of one. */
		if (f->got_digests)
			return reject(f, -EPROTO, "END (the chunk digests incomplete)");
		pfs_chunks__list_none(f->o->chunks);
	}
	return 1;
}

/* Grams until END. 0 when complete, else -errno (f->final: no retry). */
static int receive(struct fetch *f, int fd)
{
	uint8_t b[PFS_GRAM_HDR_LEN + PFS_GRAM_OFFSET_DESC_LEN * 2];
	int err = 0;

	while (!err) {
		if (stopped(f))
			return final(f, -EINTR, "stopped");
		if (move_now(f)) {
			f->moving = true;
			return fail(f, -EAGAIN, "this relay stepped aside at offset %" PRIu64,
				    f->have);
		}
		err = repl_read_full(fd, b, REPL_HDR);
		if (err)
			return fail(f, err, "upstream %s: %s at offset %" PRIu64, f->up,
				    strerror(-err), f->have);
		if (get32(b) == PFS_GRAM_MAGIC && !f->delta)
			err = gram(f, fd, b);
		else if (get32(b) == REPL_MAGIC && b[5] == REPL_DIGESTS)
			err = digests(f, fd, b);
		else if (get32(b) == PFS_DELTA_MAGIC && f->delta)
			err = delta_gram(f, fd, b);
		else if (get32(b) == REPL_MAGIC)
			err = control(f, fd, b);
		else
			err = reject(f, -EBADMSG, "record (unknown magic)");
	}
	return err == 1 ? 0 : err;
}

/* One connection to f->up: 0 when the blob is complete. */
static int attempt(struct fetch *f)
{
	int fd, err;

	f->connected = f->hello = false;
	fd = dial(f);
	if (fd < 0)
		return fd;
	f->connected = true;
	__atomic_store_n(&f->r->attempts, f->r->attempts + 1, __ATOMIC_RELAXED);
	f->delta = f->o->base && f->xport == REPL_XPORT_TCP && !f->no_delta[f->cur];
	/* Delta grams too: the relay hashes the bytes it rebuilt. */
	f->chunks = f->o->chunks != NULL;
	f->got_digests = false;
	if (f->chunks)
		pfs_chunks__list_reset(f->o->chunks);
	err = handshake(f, fd);
	if (!err) {
		if (f->have && f->r->n_resumed < PFS_REPL_RESUMES) {
			f->r->resumed_at[f->r->n_resumed] = f->have;
			__atomic_store_n(&f->r->n_resumed, f->r->n_resumed + 1, __ATOMIC_RELAXED);
		}
		if (f->have)
			pfs_info("repl fetch: resuming at %" PRIu64 " from %s", f->have, f->up);
		f->seq = 0;
		if (f->o->layout)
			err = layout(f, fd);
		if (!err)
			err = f->xport == REPL_XPORT_TCP ? receive(f, fd) : dgram(f, fd);
	}
	close(fd);
	return err;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int check_opts(const struct pfs_repl_fetch_opts *o, struct pfs_repl_fetch_opts *c,
		      struct pfs_repl_fetch_result *r)
{
	memset(r, 0, sizeof(*r));
	memset(c, 0, sizeof(*c));
	if (o && o->sz)
		memcpy(c, o, o->sz < sizeof(*c) ? o->sz : sizeof(*c));
	if (!o || !o->sz || c->n_upstreams < 1 || c->n_upstreams > PFS_REPL_UPSTREAMS ||
	    !c->upstreams || c->n_tail < 0 || c->n_tail > PFS_REPL_UPSTREAMS ||
	    (c->n_tail && !c->tail) || (c->layout ? c->blob || !c->on_layout : !c->blob) ||
	    !c->size || !c->token || !c->token_len || c->hold_back > c->size ||
	    c->start >= c->size || (c->start && c->layout) || c->end > c->size ||
	    (c->end && c->end <= c->start) ||
	    (c->end && c->end < c->size &&
	     (c->layout || c->chunks || c->base ||
	      (c->transport && strcmp(c->transport, "tcp"))))) {
		snprintf(r->error, sizeof(r->error), "bad fetch options");
		return -EINVAL;
	}
	c->timeout_ms = c->timeout_ms > 0 ? c->timeout_ms : 600000;
	c->io_timeout_ms = c->io_timeout_ms > 0 ? c->io_timeout_ms : 10000;
	c->connect_timeout_ms = c->connect_timeout_ms > 0 ? c->connect_timeout_ms : 2000;
	c->prefer_wait_ms = c->prefer_wait_ms ? c->prefer_wait_ms : 60000;
	/* A nearest upstream that died before it ever answered is refused
	 * like one that does not listen yet: waiting for it the whole fetch
	 * would never try the next upstream. Half is theirs. */
	if (c->prefer_wait_ms > c->timeout_ms / 2)
		c->prefer_wait_ms = c->timeout_ms / 2;
	if (c->base && !c->base_size) {
		snprintf(r->error, sizeof(r->error), "bad fetch options: a base of 0 bytes");
		return -EINVAL;
	}
	return 0;
}

static int check_xport(struct fetch *f)
{
	const struct pfs_repl_fetch_opts *o = f->o;

	if (repl_xport_parse(o->transport ? o->transport : "tcp", &f->xport))
		return final(f, -EINVAL, "unknown transport '%s' (tcp, udp or afxdp)",
			     o->transport);
	if (f->xport != REPL_XPORT_TCP && !o->data_port)
		return final(f, -EINVAL, "a %s fetch needs a data port", o->transport);
	if (f->xport != REPL_XPORT_TCP && o->n_tail)
		return final(f, -EINVAL, "a %s fetch does not step aside: no tail", o->transport);
	snprintf(f->r->transport, sizeof(f->r->transport), "%s", repl_xport_str(f->xport));
	return 0;
}

/* Wait for the nearest upstream to listen? (see prefer_wait_ms) Not yet
 * listening, or listening before its blob exists (a files relay waiting for
 * its own upstream's layout: the connection waits in its backlog, and no
 * HELLO came within the I/O timeout). */
static bool wait_for_first(const struct fetch *f, int i, int err, double start)
{
	bool not_yet = err == -ECONNREFUSED || (f->connected && !f->hello && err == -ETIMEDOUT);

	return i == 0 && not_yet && !f->first_answered && f->o->prefer_wait_ms > 0 &&
	       repl_now() < start + f->o->prefer_wait_ms / 1000.0;
}

/* The next upstream after @i: skipping those that stepped aside, unless
 * every one did. */
static int next_up(const struct fetch *f, int i)
{
	for (int k = 1; k <= f->nups; k++) {
		int j = (i + k) % f->nups;

		if (!f->skip[j])
			return j;
	}
	return (i + 1) % f->nups;
}

/* Our own server stepped aside: from now on the chain's tail holders,
 * asked with STEPPED. The next attempt is the tail's first. */
static void move_to_tail(struct fetch *f)
{
	f->moving = false;
	f->moved = true;
	/* The tail first, then the upstreams as before, in case the tail
	 * holders are gone: every one asked with STEPPED, and this relay
	 * serves no one until complete, so no cycle forms through it. */
	f->nups = 0;
	for (int i = 0; i < f->o->n_tail && f->nups < 2 * PFS_REPL_UPSTREAMS; i++)
		f->moved_ups[f->nups++] = f->o->tail[i];
	for (int i = 0; i < f->o->n_upstreams && f->nups < 2 * PFS_REPL_UPSTREAMS; i++)
		f->moved_ups[f->nups++] = f->o->upstreams[i];
	f->ups = f->moved_ups;
	memset(f->skip, 0, sizeof(f->skip));
	memset(f->no_delta, 0, sizeof(f->no_delta));
	f->r->moved_at = f->have;
	snprintf(f->r->moved_to, sizeof(f->r->moved_to), "%s", f->ups[0]);
	pfs_info("repl fetch: this relay stepped aside at offset %" PRIu64
		 ": fetching from the chain's tail, %s",
		 f->have, f->ups[0]);
}

/* Attempts over the upstreams, cycling with backoff. 0 or -errno. */
static int cycle(struct fetch *f)
{
	double start = repl_now(), end = start + f->o->timeout_ms / 1000.0;
	int backoff = 100, err;
	/* Waiting for the nearest upstream to listen: 5 ms doubling to 100, as
	 * it usually binds within milliseconds of this process (the chain's
	 * relays start together), and a long wait should not poll hard. */
	int first_wait = 5;

	for (int i = 0;; i = next_up(f, i)) {
		uint64_t had = f->have;

		f->up = f->ups[i];
		f->cur = i;
		err = attempt(f);
		if (!err) {
			snprintf(f->r->from, sizeof(f->r->from), "%s", f->up);
			return 0;
		}
		if (f->final)
			return err;
		if (f->moving) {
			move_to_tail(f);
			i = f->nups - 1; /* the loop's step makes it 0 */
			continue;
		}
		if (f->now) { /* a STEP: its next upstream, at once */
			f->now = false;
			continue;
		}
		if (wait_for_first(f, i, err, start)) {
			sleep_ms(first_wait);
			first_wait = first_wait * 2 > 100 ? 100 : first_wait * 2;
			if (stopped(f))
				return fail(f, -EINTR, "stopped");
			i = -1; /* the loop's step makes it 0 again */
			continue;
		}
		pfs_warn("repl fetch: %s; trying the next upstream", f->r->error);
		if (repl_now() + backoff / 1000.0 > end) {
			char last[sizeof(f->r->error)];

			snprintf(last, sizeof(last), "%s", f->r->error);
			return fail(f, -ETIMEDOUT,
				    "no upstream completed the blob in %d s (last: %.400s)",
				    f->o->timeout_ms / 1000, last);
		}
		if (f->have > had)
			backoff = 100;
		sleep_ms(backoff);
		backoff = backoff * 2 > 2000 ? 2000 : backoff * 2;
		if (stopped(f))
			return fail(f, -EINTR, "stopped");
	}
}

int pfs_repl_fetch(const struct pfs_repl_fetch_opts *opts, struct pfs_repl_fetch_result *r)
{
	struct pfs_repl_fetch_opts o;
	struct fetch f = { .o = &o, .r = r };
	int err = check_opts(opts, &o, r);

	f.ups = o.upstreams;
	f.nups = o.n_upstreams;
	f.blob = o.blob;
	f.have = o.start;
	f.end = o.end ? o.end : o.size;
	if (!err)
		err = check_xport(&f);
	if (!err && o.base && f.xport == REPL_XPORT_TCP && repl_delta_rx_init(&f.rx))
		err = final(&f, -ENOMEM, "no memory for the delta applier");
	if (!err)
		err = cycle(&f);
	repl_delta_rx_fini(&f.rx);
	repl_layout_list_fini(&f.layout);
	if (err) {
		pfs_err("repl fetch: %s", r->error);
		if (o.progress)
			pfs_progress__fail(o.progress, r->error);
	}
	return err;
}
