// SPDX-License-Identifier: Apache-2.0
/*
 * A holder's /metrics page (holder_metrics.h). Everything here is read
 * from counters the fill and the servers keep anyway: the watermark (an
 * atomic), the replication server's stats (its own lock), the share
 * server's counts (atomics), and, once the fetch returned, its result.
 * The metrics lock orders those reads against the main thread stopping a
 * server or creating the watermark, so a scrape never sees freed memory.
 *
 * The operator reads packetfs_blob_filled_bytes, packetfs_blob_size_bytes,
 * packetfs_blob_fill_seconds and packetfs_blob_phase of a filling holder
 * into status.nodes[].progress; Prometheus scrapes the same page.
 */
#include <pthread.h>
#include <stdio.h>

#include "cli.h"
#include "holder_metrics.h"
#include "repl.h"
#include "pfs/blob_repl.h"
#include "pfs/blob_share.h"
#include "pfs/log.h"

static pthread_mutex_t metrics_mu = PTHREAD_MUTEX_INITIALIZER;

void pfs_cli_metrics_lock(void)
{
	pthread_mutex_lock(&metrics_mu);
}

void pfs_cli_metrics_unlock(void)
{
	pthread_mutex_unlock(&metrics_mu);
}

static const char *const phase_names[PFS_CLI_PHASE_N] = { "mapping", "filling", "ready", "failed" };

static void fill_metrics(const struct pfs_cli_holder_metrics *h, struct pfs_metrics_page *p)
{
	const struct pfs_cli_repl *r = h->repl;
	uint64_t size = h->size, mark = 0;
	double secs = 0;
	char l[64];

	if (r && r->prog) {
		size = pfs_progress__size(r->prog);
		mark = pfs_progress__mark(r->prog);
	}
	/* Held means verified: a relay's watermark stops short of the end
	 * until its manifest checked out; a seeded blob is whole once ready. */
	if (h->phase == PFS_CLI_PHASE_READY)
		mark = size;
	if (h->t0 > 0)
		secs = (h->t1 > 0 ? h->t1 : pfs_cli_now()) - h->t0;
	snprintf(l, sizeof(l), "process=\"%s\",role=\"%s\"", h->process, h->role);
	pfs_metrics_family(p, "packetfs_blob_info", "gauge",
			   "Always 1: which pfs process (fill: blob create, serve: blob serve) and "
			   "node role (origin, relay, seeded) serves this page.");
	pfs_metrics_sample(p, "packetfs_blob_info", l, 1);
	pfs_metrics_one(p, "packetfs_blob_size_bytes", "gauge",
			"The blob's size in bytes (0 until a relay received its layout).",
			(double)size);
	pfs_metrics_one(p, "packetfs_blob_filled_bytes", "gauge",
			"Bytes of the blob this node holds: the fill's watermark, the size once "
			"verified.",
			(double)mark);
	pfs_metrics_one(p, "packetfs_blob_fill_seconds", "gauge",
			"Seconds since the fill started (frozen when it ended).", secs);
	pfs_metrics_family(p, "packetfs_blob_phase", "gauge",
			   "1 for the phase this holder's fill is in, 0 for the others.");
	for (int i = 0; i < PFS_CLI_PHASE_N; i++) {
		snprintf(l, sizeof(l), "phase=\"%s\"", phase_names[i]);
		pfs_metrics_sample(p, "packetfs_blob_phase", l, i == h->phase);
	}
}

static void server_metrics(const struct pfs_cli_repl *r, struct pfs_metrics_page *p)
{
	struct pfs_repl_server_stats st = r->st;

	if (r->srv)
		pfs_repl_server__stats(r->srv, &st);
	pfs_metrics_one(p, "packetfs_served_bytes_total", "counter",
			"Blob bytes sent to relays (delta grams included).",
			(double)st.bytes_served);
	pfs_metrics_one(p, "packetfs_relay_connections_total", "counter",
			"Relay connections authenticated and accepted.", (double)st.clients);
	pfs_metrics_one(p, "packetfs_relay_connections_active", "gauge",
			"Relay connections being served now.", (double)st.active);
	pfs_metrics_one(p, "packetfs_relay_refused_total", "counter",
			"Relay connections refused (bad token, busy, malformed handshake).",
			(double)st.refused);
	pfs_metrics_one(p, "packetfs_relay_failed_total", "counter",
			"Relay connections that ended with an error or broke.", (double)st.failed);
	pfs_metrics_one(p, "packetfs_resent_datagrams_total", "counter",
			"Datagrams sent again after a NAK (UDP and AF_XDP relays).",
			(double)st.retransmitted);
}

/* The fetch's counters: connections and resumes live (the fetch stores
 * them atomically as they happen: a relay that moved to another upstream
 * shows it while it still fetches, not only in the seconds it lingers);
 * the others exact once pfs_repl_fetch returned (the phase left FILLING);
 * while it runs, the bytes received are the watermark. */
static void fetch_metrics(const struct pfs_cli_holder_metrics *h, struct pfs_metrics_page *p)
{
	const struct pfs_cli_repl *r = h->repl;
	const struct pfs_repl_fetch_result *f = &r->fr;
	bool done = h->phase >= PFS_CLI_PHASE_READY && r->fetched;
	uint64_t got = done ? f->bytes : (r->prog ? pfs_progress__mark(r->prog) : 0);

	pfs_metrics_one(p, "packetfs_received_bytes_total", "counter",
			"Blob bytes received from upstreams, every attempt (re-received bytes "
			"counted again).",
			(double)got);
	pfs_metrics_one(p, "packetfs_fetch_connections_total", "counter",
			"Connections made to upstreams; more than 1 means the relay reconnected "
			"or moved to another upstream.",
			(double)__atomic_load_n(&f->attempts, __ATOMIC_RELAXED));
	pfs_metrics_one(p, "packetfs_fetch_resumes_total", "counter",
			"Times the fetch resumed after a break instead of starting over.",
			(double)__atomic_load_n(&f->n_resumed, __ATOMIC_RELAXED));
	pfs_metrics_one(p, "packetfs_fetch_rejected_total", "counter",
			"Malformed frames or grams received; each dropped its connection.",
			done ? (double)f->rejected : 0);
	pfs_metrics_one(p, "packetfs_fetch_naks_total", "counter",
			"NAKs sent for missing datagrams (UDP and AF_XDP relays).",
			done ? (double)f->dgrams.naks : 0);
	pfs_metrics_one(p, "packetfs_fetch_forged_datagrams_total", "counter",
			"Datagrams whose authentication tag did not verify, dropped.",
			done ? (double)f->dgrams.forged : 0);
	pfs_metrics_one(p, "packetfs_verify_failures_total", "counter",
			"Fills whose received bytes did not match the manifest's digests.",
			r->verify_failed);
}

/* The chunk digests: hashed as they land (live), then verified or failed
 * against the origin's list (a relay), fetched again when one failed. */
static void chunk_metrics(const struct pfs_cli_chunks *ch, struct pfs_metrics_page *p)
{
	struct pfs_chunks_stats st;

	pfs_chunks__stats(ch->c, &st);
	pfs_metrics_one(p, "packetfs_chunks", "gauge",
			"Chunks of the blob (BLAKE3 digests, 4 MiB each).", st.count);
	pfs_metrics_one(p, "packetfs_chunks_hashed_total", "counter",
			"Chunks hashed by this node so far (as their bytes landed).", st.hashed);
	pfs_metrics_one(p, "packetfs_chunks_verified_total", "counter",
			"Relay: chunks verified against the origin's list.", st.verified);
	pfs_metrics_one(p, "packetfs_chunks_failed_total", "counter",
			"Relay: chunk comparisons that failed (each chunk was fetched again).",
			st.failed);
	pfs_metrics_one(p, "packetfs_chunks_refetched_bytes_total", "counter",
			"Relay: bytes received again for chunks that failed.",
			(double)__atomic_load_n(&ch->refetched, __ATOMIC_RELAXED));
	pfs_metrics_one(p, "packetfs_chunks_hash_seconds_total", "counter",
			"CPU seconds spent hashing chunks, summed over the hashing threads.",
			st.busy_s);
}

static void collect(void *ctx, struct pfs_metrics_page *p)
{
	const struct pfs_cli_holder_metrics *h = ctx;

	pfs_cli_metrics_lock();
	fill_metrics(h, p);
	if (h->repl && h->repl->serving)
		server_metrics(h->repl, p);
	if (h->repl && h->repl->fetch_from)
		fetch_metrics(h, p);
	if (h->repl && h->repl->ch.c)
		chunk_metrics(&h->repl->ch, p);
	if (h->share) {
		uint64_t acc, ref;

		pfs_share_server__counts(h->share, &acc, &ref);
		pfs_metrics_one(
			p, "packetfs_consumers_accepted_total", "counter",
			"Consumers on this node given the blob's pages (fd over the socket).",
			(double)acc);
		pfs_metrics_one(
			p, "packetfs_consumers_refused_total", "counter",
			"Consumers refused (bad token, uid not allowed, malformed request).",
			(double)ref);
	}
	pfs_cli_metrics_unlock();
}

void pfs_cli_holder_metrics_start(struct pfs_cli_holder_metrics *h)
{
	char why[160];

	if (!h->listen)
		return;
	h->srv = pfs_cli_metrics_start(h->listen, collect, h, why, sizeof(why));
	/* The page is never why a copy fails: the holder goes on without it
	 * (the operator then shows no progress for this node). */
	if (!h->srv)
		pfs_warn("no /metrics page: %s; the holder goes on without it", why);
}

void pfs_cli_holder_metrics_set(struct pfs_cli_holder_metrics *h, enum pfs_cli_phase phase)
{
	double now = pfs_cli_now();

	pfs_cli_metrics_lock();
	h->phase = phase;
	if (phase == PFS_CLI_PHASE_FILLING && h->t0 == 0)
		h->t0 = now;
	if ((phase == PFS_CLI_PHASE_READY || phase == PFS_CLI_PHASE_FAILED) && h->t0 > 0 &&
	    h->t1 == 0)
		h->t1 = now;
	pfs_cli_metrics_unlock();
}

void pfs_cli_holder_metrics_stop(struct pfs_cli_holder_metrics *h)
{
	pfs_cli_metrics_stop(h->srv);
	h->srv = NULL;
}
