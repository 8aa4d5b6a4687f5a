// SPDX-License-Identifier: Apache-2.0
/*
 * Delta mode of the transfer engine, over TCP (`pfs send/recv --mode
 * delta`; engine.c checks the options and zeroes both results first).
 * The codec, encoders, index and appliers are src/delta/'s (pfs/delta.h);
 * this file is the protocol, its threads and the verdict.
 *
 *   sender                                receiver
 *   HELLO  mode delta, size = base bytes,
 *          value = base fingerprint,
 *          count = target bytes        ->
 *                                      <- ACCEPT (its base: size, fingerprint;
 *                                         0, 0 when it holds none: the sender
 *                                         then codes against no base) or REFUSE
 *   delta grams, in target order      ->  applied as they arrive
 *   DIGEST sha256 (+32 bytes), END    ->
 *                                      <- RESULT (OK when its sha256 of the
 *                                         rebuilt target equals the sender's)
 *
 * Sender: `threads` workers encode 4 MiB units of the target, each with its
 * own encoder, into a window of 2 x threads slots; the caller's thread
 * writes the slots in order, and one more thread hashes the target
 * (SHA-256) meanwhile. Receiver: one thread reads and decodes each gram
 * as it arrives, `threads` appliers apply them (delta_apply_pool.c); a gram
 * must start at or after the end of the one before, so with the byte count
 * checked at END every target byte was written exactly once. Both sides
 * time their stages and name the one that bounded them.
 */
#include <errno.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pfs/blob.h"
#include "pfs/delta.h"
#include "pfs/log.h"
#include "pfs/pcore.h"
#include "pfs/wire.h"
#include "engine.h"
#include "xfer_ctl.h"

#define UNIT (4u << 20)

static int sha256(const uint8_t *p, uint64_t n, uint8_t out[32])
{
	return EVP_Digest(p, n, out, NULL, EVP_sha256(), NULL) == 1 ? 0 : -EIO;
}

/* The first 8 bytes of a SHA-256, big-endian: the "checksum" of a result. */
static uint64_t sha_word(const uint8_t sha[32])
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | sha[i];
	return v;
}

static int default_threads(int want)
{
	int cpus[64], n;

	if (want > 0)
		return want > 64 ? 64 : want;
	n = pfs_pcore_allowed_cpus(cpus, 64);
	return n < 1 ? 1 : n;
}

static const char *bound_of(const char *const *names, const double *t, int n)
{
	int best = 0;

	for (int i = 1; i < n; i++)
		if (t[i] > t[best])
			best = i;
	return names[best];
}

/* ---- sender ---- */

struct slot {
	uint8_t *data;
	size_t len;
	bool ready;
};

struct enc_pool {
	const struct pfs_xfer_opts *o;
	const uint8_t *base; /* NULL: the receiver has none */
	uint64_t base_size;
	const struct pfs_delta_index *idx;
	uint64_t units, next, sent; /* next unit to take; units written */
	struct slot *slots;
	uint32_t window;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int err;
	bool stop;
	struct pfs_delta_stats st;
	double busy_s; /* sum over workers */
	/* the SHA-256 thread */
	uint8_t sha[32];
	int sha_err;
};

static void *enc_worker(void *arg)
{
	struct enc_pool *p = arg;
	struct pfs_delta_enc *e =
		pfs_delta_enc__new(p->idx, p->base, p->base_size, p->o->delta.level);
	struct pfs_delta_stats st = { 0 };
	double busy = 0;
	int err = e ? 0 : -ENOMEM;

	for (;;) {
		uint64_t u, off;
		const uint8_t *g = NULL;
		uint8_t *copy = NULL;
		ssize_t n = 0;
		double t0;

		pthread_mutex_lock(&p->mu);
		while (!err && !p->stop && p->next < p->units && p->next >= p->sent + p->window)
			pthread_cond_wait(&p->cv, &p->mu);
		if (err || p->stop || p->next >= p->units) {
			if (err && !p->err)
				p->err = err;
			p->stop = p->stop || err;
			pthread_cond_broadcast(&p->cv);
			pthread_mutex_unlock(&p->mu);
			break;
		}
		u = p->next++;
		pthread_mutex_unlock(&p->mu);

		t0 = pfs_xfer_now();
		off = u * UNIT;
		n = pfs_delta_enc__gram(e, u, p->o->delta.target, off,
					p->o->delta.target_size - off < UNIT ?
						(uint32_t)(p->o->delta.target_size - off) :
						UNIT,
					&g, &st);
		if (n > 0 && (copy = malloc((size_t)n)))
			memcpy(copy, g, (size_t)n);
		busy += pfs_xfer_now() - t0;
		err = n < 0 ? (int)n : !copy ? -ENOMEM : 0;

		pthread_mutex_lock(&p->mu);
		if (!err) {
			p->slots[u % p->window] = (struct slot){ copy, (size_t)n, true };
			pthread_cond_broadcast(&p->cv);
		}
		pthread_mutex_unlock(&p->mu);
	}
	pthread_mutex_lock(&p->mu);
	pfs_delta_stats_add(&p->st, &st);
	p->busy_s += busy;
	pthread_mutex_unlock(&p->mu);
	pfs_delta_enc__free(e);
	return NULL;
}

static void *sha_worker(void *arg)
{
	struct enc_pool *p = arg;

	p->sha_err = sha256(p->o->delta.target, p->o->delta.target_size, p->sha);
	return NULL;
}

/* Write every unit's gram in order as the workers finish them. */
static int send_grams(struct enc_pool *p, int fd, struct pfs_xfer_result *r, double *wait_s,
		      double *write_s)
{
	int err = 0;

	for (uint64_t u = 0; u < p->units && !err; u++) {
		struct slot *s = &p->slots[u % p->window];
		struct slot got;
		double t0 = pfs_xfer_now();

		pthread_mutex_lock(&p->mu);
		while (!s->ready && !p->err)
			pthread_cond_wait(&p->cv, &p->mu);
		err = s->ready ? 0 : p->err;
		got = *s;
		*s = (struct slot){ 0 };
		pthread_mutex_unlock(&p->mu);
		*wait_s += pfs_xfer_now() - t0;
		if (err)
			return pfs_xfer_fail(r, err, "send: encoding unit %" PRIu64 ": %s", u,
					     strerror(-err));
		t0 = pfs_xfer_now();
		err = pfs_xfer_write_full(fd, got.data, got.len, &r->wire_bytes);
		*write_s += pfs_xfer_now() - t0;
		free(got.data);
		if (err)
			return pfs_xfer_fail(r, err,
					     "send: writing delta gram %" PRIu64 " to %s: %s", u,
					     r->peer, pfs_xfer_io_what(err));
		pthread_mutex_lock(&p->mu);
		p->sent = u + 1;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
		r->grams++;
	}
	return err;
}

/* HELLO, and what the receiver holds: 0 (d->full_copy set when it has no
 * base), -EPERM refused, other -errno. */
static int send_hello(const struct pfs_xfer_opts *o, int fd, uint64_t fp, struct pfs_xfer_result *r,
		      struct pfs_delta_result *d)
{
	struct pfs_ctl h = { .type = PFS_CTL_HELLO,
			     .mode = PFS_MODE_DELTA,
			     .size = o->delta.base_size,
			     .value = fp,
			     .count = o->delta.target_size };
	uint8_t rec[PFS_CTL_LEN];
	int err = pfs_xfer_send_hello(fd, &h, &o->auth, &r->wire_bytes, r);

	if (err)
		return err;
	err = pfs_xfer_read_full(fd, rec, sizeof(rec), &r->wire_bytes);
	if (err)
		return pfs_xfer_fail(r, err, "send: HELLO to %s: %s", r->peer,
				     pfs_xfer_io_what(err));
	err = pfs_xfer_answer_check(rec, &h, fp, r);
	if (err)
		return err;
	d->full_copy = !r->peer_blob_size && !r->peer_fingerprint;
	if (!d->full_copy && (r->peer_blob_size != o->delta.base_size || r->peer_fingerprint != fp))
		return pfs_xfer_fail(r, -EPROTO, "send: %s accepted another base than ours",
				     r->peer);
	if (d->full_copy && o->delta.base_size)
		pfs_info("send: %s holds no base: sending a compressed full copy", r->peer);
	return 0;
}

static int send_stream(const struct pfs_xfer_opts *o, struct enc_pool *p, int fd,
		       struct pfs_xfer_result *r, struct pfs_delta_result *d)
{
	pthread_t th[64], sha_th;
	int nt = d->threads, started = 0, err;
	bool sha_started;
	double wait_s = 0, write_s = 0;
	uint8_t rec[PFS_CTL_LEN + 32];
	struct pfs_ctl dg = { .type = PFS_CTL_DIGEST,
			      .mode = PFS_MODE_DELTA,
			      .count = 32,
			      .word = PFS_DIGEST_SHA256 };
	struct pfs_ctl end = { .type = PFS_CTL_END, .mode = PFS_MODE_DELTA };

	sha_started = !pthread_create(&sha_th, NULL, sha_worker, p);
	for (int i = 0; i < nt; i++)
		if (!pthread_create(&th[i], NULL, enc_worker, p))
			started++;
	if (!started) {
		p->err = -EAGAIN;
		err = pfs_xfer_fail(r, -EAGAIN, "send: cannot start an encoder thread");
	} else {
		err = send_grams(p, fd, r, &wait_s, &write_s);
	}
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	if (sha_started)
		pthread_join(sha_th, NULL);
	else
		sha_worker(p);
	d->st = p->st;
	d->encode_s = p->busy_s / (started ? started : 1);
	d->send_s = write_s;
	snprintf(d->bound, sizeof(d->bound), "%s",
		 bound_of((const char *const[]){ "encode", "wire" }, (double[]){ wait_s, write_s },
			  2));
	if (err)
		return err;
	if (p->sha_err)
		return pfs_xfer_fail(r, p->sha_err, "send: SHA-256 of the target failed");
	memcpy(d->sha256, p->sha, 32);
	d->sha_valid = true;
	r->crc = sha_word(p->sha);
	for (int k = 0; k < PFS_DELTA_KINDS; k++)
		r->descs += d->st.n[k];
	r->bytes = o->delta.target_size;
	end.size = r->bytes;
	end.value = r->descs;
	end.count = r->grams;
	pfs_ctl_encode(&dg, rec);
	memcpy(rec + PFS_CTL_LEN, p->sha, 32);
	err = pfs_xfer_write_full(fd, rec, sizeof(rec), &r->wire_bytes);
	if (!err)
		err = pfs_xfer_send_ctl(fd, &end, &r->wire_bytes);
	if (err)
		return pfs_xfer_fail(r, err, "send: END to %s: %s", r->peer, pfs_xfer_io_what(err));
	return 0;
}

static int send_result(int fd, struct pfs_xfer_result *r)
{
	uint8_t rec[PFS_CTL_LEN];
	struct pfs_ctl res;
	int err = pfs_xfer_read_full(fd, rec, sizeof(rec), &r->wire_bytes);

	if (err)
		return pfs_xfer_fail(r, err, "send: waiting for the receiver's RESULT: %s",
				     pfs_xfer_io_what(err));
	if (pfs_ctl_decode(rec, sizeof(rec), &res) || res.type != PFS_CTL_RESULT)
		return pfs_xfer_fail(r, -EPROTO, "send: bad RESULT record from %s", r->peer);
	r->verdict = (res.flags & PFS_CTL_F_OK) && res.size == r->bytes ? PFS_VERDICT_OK :
									  PFS_VERDICT_MISMATCH;
	r->peer_crc = r->crc;
	r->peer_crc_valid = r->verdict == PFS_VERDICT_OK;
	if (r->verdict == PFS_VERDICT_MISMATCH)
		pfs_err("send: %s rebuilt %" PRIu64 " of %" PRIu64
			" bytes and its SHA-256 %s ours: MISMATCH",
			r->peer, res.size, r->bytes,
			res.flags & PFS_CTL_F_OK ? "equals" : "differs from");
	return 0;
}

int pfs_delta_xfer_send(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r)
{
	struct pfs_delta_result *d = o->delta.res;
	struct enc_pool p = { .o = o };
	struct pfs_delta_index *own = NULL;
	double t0, u0, s0, u1, s1;
	uint64_t fp;
	int fd, err;

	d->base_size = o->delta.base_size;
	d->target_size = o->delta.target_size;
	d->threads = default_threads(o->delta.threads);
	/* Setup, excluded from the transfer's time: fingerprint and index. */
	t0 = pfs_xfer_now();
	fp = pfs_delta_base_fp(o->delta.base, o->delta.base_size);
	p.idx = o->delta.index;
	if (!p.idx && o->delta.base_size) {
		p.idx = own = pfs_delta_index__build(o->delta.base, o->delta.base_size, d->threads);
		if (!own)
			return pfs_xfer_fail(r, -ENOMEM, "send: no memory for the base's index");
	}
	d->index_s = pfs_xfer_now() - t0;
	fd = pfs_xfer_connect(o->host, o->port, o->send.connect_timeout_ms, o->io_timeout_ms, r);
	if (fd < 0) {
		pfs_delta_index__free(own);
		return fd;
	}
	err = send_hello(o, fd, fp, r, d);
	if (err)
		goto out;
	p.base = d->full_copy ? NULL : o->delta.base;
	p.idx = d->full_copy ? NULL : p.idx;
	p.base_size = d->full_copy ? 0 : o->delta.base_size;
	p.units = (o->delta.target_size + UNIT - 1) / UNIT;
	p.window = 2 * (uint32_t)d->threads;
	p.slots = calloc(p.window, sizeof(*p.slots));
	pthread_mutex_init(&p.mu, NULL);
	pthread_cond_init(&p.cv, NULL);
	t0 = pfs_xfer_now();
	pfs_xfer_cpu(&u0, &s0);
	err = p.slots ? send_stream(o, &p, fd, r, d) :
			pfs_xfer_fail(r, -ENOMEM, "send: out of memory");
	if (!err)
		err = send_result(fd, r);
	pfs_xfer_cpu(&u1, &s1);
	r->elapsed_s = pfs_xfer_now() - t0;
	r->user_s = u1 - u0;
	r->sys_s = s1 - s0;
	for (uint32_t i = 0; p.slots && i < p.window; i++)
		free(p.slots[i].data);
	free(p.slots);
	pthread_mutex_destroy(&p.mu);
	pthread_cond_destroy(&p.cv);
out:
	close(fd);
	pfs_delta_index__free(own);
	return err;
}

/* ---- receiver ---- */

struct rcv {
	int fd;
	uint8_t hdr[PFS_DELTA_HDR_LEN + 32]; /* a gram's header, or a control record */
	struct pfs_delta_apply_pool *pool;
	int threads;
	uint8_t *target;
	uint64_t target_size, base_size, done; /* done: target bytes decoded */
	const uint8_t *base;
	double wait_s, slot_wait_s; /* reading the socket; waiting for a free job */
	struct pfs_delta_stats st;
	uint8_t peer_sha[32];
	bool peer_sha_valid;
};

static int rcv_read(struct rcv *c, void *p, size_t n, double deadline, struct pfs_xfer_result *r)
{
	double t0 = pfs_xfer_now();
	int err = pfs_xfer_read_by(c->fd, p, n, deadline, &r->wire_bytes);

	c->wait_s += pfs_xfer_now() - t0;
	return err;
}

/* Room in @j for a gram of @whole bytes and @ops operations. */
static int job_grow(struct pfs_delta_apply_job *j, size_t whole, uint32_t ops)
{
	if (whole > j->cap) {
		uint8_t *b = realloc(j->buf, whole);

		if (!b)
			return -ENOMEM;
		j->buf = b;
		j->cap = whole;
	}
	if (ops > j->ops_cap) {
		struct pfs_delta_op *o = realloc(j->ops, ops * sizeof(*o));

		if (!o)
			return -ENOMEM;
		j->ops = o;
		j->ops_cap = ops;
	}
	return 0;
}

/* A gram that failed to apply (an applier found it). */
static int apply_failed(struct pfs_xfer_result *r, int err, uint64_t seq)
{
	pfs_gram_stats_count(&r->stats, err);
	return pfs_xfer_fail(r, -EPROTO,
			     "recv: delta gram %" PRIu64 " from %s does not decompress to what "
			     "its table says (%s); dropped",
			     seq, r->peer, err == -ENOMEM ? "out of memory" : "corrupt zstd frame");
}

/* One delta gram whose header is in c->hdr: its table and payload into a
 * free job, decoded here (in order: each gram is checked against the end
 * of the one before), then handed to the appliers. A malformed gram ends
 * the transfer (a stream cannot resync). */
static int rcv_gram(struct rcv *c, double deadline, struct pfs_xfer_result *r)
{
	struct pfs_delta_apply_job *j;
	struct pfs_delta_hdr h;
	uint64_t bad_seq;
	size_t whole;
	int n = pfs_delta_decode_hdr(c->hdr, PFS_DELTA_HDR_LEN, &h), err;

	if (!n && h.seq != r->grams)
		n = -EBADMSG;
	if (n) {
		pfs_gram_stats_count(&r->stats, n);
		return pfs_xfer_fail(r, -EPROTO,
				     "recv: malformed delta gram %" PRIu64 " from %s: %s; dropped",
				     r->grams, r->peer, pfs_wire_strerror(n));
	}
	j = pfs_delta_apply_pool__take(c->pool, &c->slot_wait_s, &err, &bad_seq);
	if (!j)
		return apply_failed(r, err, bad_seq);
	whole = PFS_DELTA_HDR_LEN + (size_t)h.table_len + h.payload_len;
	if ((err = job_grow(j, whole, h.nops ? h.nops : 1))) {
		pfs_delta_apply_pool__give_back(c->pool, j);
		return pfs_xfer_fail(r, err, "recv: out of memory for a %zu-byte gram", whole);
	}
	memcpy(j->buf, c->hdr, PFS_DELTA_HDR_LEN);
	err = rcv_read(c, j->buf + PFS_DELTA_HDR_LEN, whole - PFS_DELTA_HDR_LEN, deadline, r);
	if (err) {
		pfs_delta_apply_pool__give_back(c->pool, j);
		return pfs_xfer_fail(r, err, "recv: delta gram %" PRIu64 " from %s: %s", r->grams,
				     r->peer, pfs_xfer_io_what(err));
	}
	n = pfs_delta_decode_ops(&h, j->buf + PFS_DELTA_HDR_LEN, h.table_len, c->base_size,
				 c->target_size, c->done, j->ops, j->ops_cap);
	pfs_gram_stats_count(&r->stats, n < 0 ? n : 0);
	if (n < 0) {
		pfs_delta_apply_pool__give_back(c->pool, j);
		return pfs_xfer_fail(r, -EPROTO,
				     "recv: malformed delta gram %" PRIu64 " from %s: %s; dropped",
				     r->grams, r->peer, pfs_wire_strerror(n));
	}
	j->n = (uint32_t)n;
	j->payload = j->buf + PFS_DELTA_HDR_LEN + h.table_len;
	j->seq = r->grams;
	pfs_delta_stats_ops(&c->st, j->ops, (uint32_t)n);
	for (int i = 0; i < n; i++)
		r->bytes += j->ops[i].len;
	if (n)
		c->done = j->ops[n - 1].dst + j->ops[n - 1].len;
	r->descs += (uint64_t)n;
	r->grams++;
	pfs_delta_apply_pool__submit(c->pool, j);
	return 0;
}

/* Grams until END; the sender's SHA-256 arrives in a DIGEST before it. */
static int rcv_stream(const struct pfs_xfer_opts *o, struct rcv *c, struct pfs_ctl *end,
		      struct pfs_xfer_result *r)
{
	for (;;) {
		double deadline = pfs_xfer_now() + o->io_timeout_ms / 1000.0;
		struct pfs_ctl ctl;
		int err = rcv_read(c, c->hdr, PFS_DELTA_HDR_LEN, deadline, r);

		if (err)
			return pfs_xfer_fail(r, err,
					     "recv: delta gram %" PRIu64 " (or END) from %s: %s",
					     r->grams, r->peer, pfs_xfer_io_what(err));
		if (pfs_wire_magic(c->hdr, PFS_CTL_LEN) != PFS_CTL_MAGIC) {
			err = rcv_gram(c, deadline, r);
			if (err)
				return err;
			continue;
		}
		err = pfs_ctl_decode(c->hdr, PFS_CTL_LEN, &ctl);
		if (!err && ctl.type == PFS_CTL_DIGEST && ctl.word == PFS_DIGEST_SHA256 &&
		    ctl.count == 32 && !c->peer_sha_valid) {
			err = rcv_read(c, c->peer_sha, 32, deadline, r);
			if (err)
				return pfs_xfer_fail(r, err, "recv: the sender's SHA-256: %s",
						     pfs_xfer_io_what(err));
			c->peer_sha_valid = true;
			continue;
		}
		if (err || ctl.type != PFS_CTL_END)
			return pfs_xfer_fail(r, -EPROTO,
					     "recv: bad control record after delta gram %" PRIu64,
					     r->grams);
		*end = ctl;
		return 0;
	}
}

/* HELLO from the sender: ACCEPT with our base (0, 0 for none) or REFUSE. */
static int rcv_hello(const struct pfs_xfer_opts *o, struct rcv *c, uint64_t fp,
		     struct pfs_xfer_result *r, struct pfs_delta_result *d)
{
	uint64_t max = o->recv.max_size ? o->recv.max_size : PFS_XFER_MAX_SIZE_DEFAULT;
	struct pfs_ctl h, a = { .type = PFS_CTL_ACCEPT, .mode = PFS_MODE_DELTA };
	int err = pfs_ctl_decode(c->hdr, PFS_CTL_LEN, &h), refuse = 0;

	if (err == -EPROTONOSUPPORT)
		refuse = PFS_REFUSE_VERSION;
	else if (err || h.type != PFS_CTL_HELLO)
		return pfs_xfer_fail(r, -EPROTO, "recv: %s sent no HELLO", r->peer);
	else if (h.mode != PFS_MODE_DELTA)
		refuse = PFS_REFUSE_MODE;
	else if (o->delta.base_size && (h.size != o->delta.base_size || h.value != fp))
		refuse = PFS_REFUSE_FINGERPRINT;
	else if (h.count > max)
		refuse = PFS_REFUSE_LIMIT;
	a.size = refuse == PFS_REFUSE_LIMIT ? max : o->delta.base_size;
	a.value = fp;
	r->peer_blob_size = h.size;
	r->peer_fingerprint = h.value;
	d->base_size = o->delta.base_size;
	d->target_size = h.count;
	d->full_copy = !o->delta.base_size;
	if (refuse) {
		a.type = PFS_CTL_REFUSE;
		a.word = (uint32_t)refuse;
		pfs_xfer_send_ctl(c->fd, &a, &r->wire_bytes);
		return pfs_xfer_fail(
			r, -EPERM,
			"recv: refused %s: %s (sender: mode %s, base %" PRIu64
			" bytes fingerprint 0x%016" PRIx64 ", target %" PRIu64 " bytes; "
			"receiver: base %" PRIu64 " bytes fingerprint 0x%016" PRIx64
			", --max-size %" PRIu64 ")",
			r->peer, pfs_xfer_refuse_str((uint32_t)refuse), pfs_mode_str(h.mode),
			h.size, h.value, h.count, o->delta.base_size, fp, max);
	}
	err = pfs_xfer_send_ctl(c->fd, &a, &r->wire_bytes);
	if (err)
		return pfs_xfer_fail(r, err, "recv: sending ACCEPT: %s", pfs_xfer_io_what(err));
	return 0;
}

static int rcv_verdict(struct rcv *c, const struct pfs_ctl *end, struct pfs_xfer_result *r,
		       struct pfs_delta_result *d)
{
	double t0 = pfs_xfer_now();
	bool whole = c->done == c->target_size && r->bytes == c->target_size &&
		     end->size == c->target_size && end->count == r->grams;
	int err = sha256(c->target, c->target_size, d->sha256);

	d->verify_s = pfs_xfer_now() - t0;
	if (err)
		return pfs_xfer_fail(r, err, "recv: SHA-256 of the rebuilt target failed");
	d->sha_valid = true;
	r->verdict = whole && c->peer_sha_valid && !memcmp(d->sha256, c->peer_sha, 32) ?
			     PFS_VERDICT_OK :
			     PFS_VERDICT_MISMATCH;
	if (r->verdict == PFS_VERDICT_MISMATCH)
		pfs_err("recv: MISMATCH: rebuilt %" PRIu64 " of %" PRIu64 " bytes in %" PRIu64
			" grams (sender: %" PRIu64 "), SHA-256 %s",
			r->bytes, c->target_size, r->grams, end->count,
			!c->peer_sha_valid		   ? "never sent" :
			memcmp(d->sha256, c->peer_sha, 32) ? "differs from the sender's" :
							     "equal");
	return 0;
}

static int rcv_run(const struct pfs_xfer_opts *o, struct rcv *c, struct pfs_xfer_result *r,
		   struct pfs_delta_result *d)
{
	struct pfs_ctl end = { 0 }, res = { .type = PFS_CTL_RESULT, .mode = PFS_MODE_DELTA };
	double t0, u0, s0, u1, s1, apply_busy = 0;
	int err;

	c->target_size = d->target_size;
	if (o->delta.out_map && c->target_size)
		c->target = o->delta.out_map(o->delta.out_ctx, c->target_size);
	else if (c->target_size)
		c->target = malloc(c->target_size);
	if (c->target_size && !c->target)
		return pfs_xfer_fail(r, -ENOMEM, "recv: no memory for the %" PRIu64 "-byte target",
				     c->target_size);
	c->pool = pfs_delta_apply_pool__new(c->threads, c->base, c->target);
	if (!c->pool)
		return pfs_xfer_fail(r, -ENOMEM, "recv: cannot start the appliers");
	t0 = pfs_xfer_now();
	pfs_xfer_cpu(&u0, &s0);
	err = rcv_stream(o, c, &end, r);
	if (!err) {
		uint64_t bad_seq;
		int aerr = pfs_delta_apply_pool__drain(c->pool, &c->slot_wait_s, &bad_seq);

		err = aerr ? apply_failed(r, aerr, bad_seq) : 0;
	}
	pfs_delta_apply_pool__free(c->pool, &apply_busy, &d->threads);
	c->pool = NULL;
	if (!err)
		err = rcv_verdict(c, &end, r, d);
	pfs_xfer_cpu(&u1, &s1);
	r->elapsed_s = pfs_xfer_now() - t0;
	r->user_s = u1 - u0;
	r->sys_s = s1 - s0;
	/* Per applier, as the sender's encode_s; the reader waiting for a
	 * free job is the appliers bounding it. */
	d->apply_s = apply_busy / (d->threads ? d->threads : 1);
	d->st = c->st;
	d->recv_wait_s = c->wait_s;
	snprintf(d->bound, sizeof(d->bound), "%s",
		 bound_of((const char *const[]){ "sender", "apply", "verify" },
			  (double[]){ c->wait_s, c->slot_wait_s, d->verify_s }, 3));
	if (err)
		return err;
	r->crc = sha_word(d->sha256);
	res.flags = r->verdict == PFS_VERDICT_OK ? PFS_CTL_F_OK : 0;
	res.size = r->bytes;
	res.value = r->descs;
	res.count = r->stats.errors;
	err = pfs_xfer_send_ctl(c->fd, &res, &r->wire_bytes);
	if (err)
		pfs_warn("recv: sending RESULT: %s (the verdict stands)", pfs_xfer_io_what(err));
	return 0;
}

int pfs_delta_xfer_recv(const struct pfs_xfer_opts *o, struct pfs_xfer_result *r)
{
	struct pfs_delta_result *d = o->delta.res;
	struct pfs_xfer_accept_opts ao;
	struct rcv c = { .fd = -1 };
	uint64_t fp;
	int lfd, err;

	c.threads = default_threads(o->delta.threads);
	fp = pfs_delta_base_fp(o->delta.base, o->delta.base_size);
	c.base = o->delta.base;
	c.base_size = o->delta.base_size;
	ao = (struct pfs_xfer_accept_opts){ .accept_timeout_ms = o->recv.accept_timeout_ms,
					    .hello_timeout_ms = o->io_timeout_ms,
					    .io_timeout_ms = o->io_timeout_ms,
					    .ready_file = o->recv.ready_file,
					    .auth = &o->auth };
	lfd = pfs_xfer_listen(o->host, o->port, "tcp", r);
	if (lfd < 0) {
		err = lfd;
		goto out;
	}
	c.fd = pfs_xfer_accept_hello(lfd, &ao, c.hdr, r);
	if (c.fd < 0) {
		err = c.fd;
		goto out;
	}
	r->wire_bytes += PFS_CTL_LEN;
	err = rcv_hello(o, &c, fp, r, d);
	if (!err) {
		pfs_info("recv: %s connected, delta of %" PRIu64 " bytes over a %s", r->peer,
			 d->target_size, o->delta.base_size ? "base" : "missing base (full copy)");
		err = rcv_run(o, &c, r, d);
	}
	close(c.fd);
out:
	if (!o->delta.out_map)
		free(c.target);
	return err;
}
