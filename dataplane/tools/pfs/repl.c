// SPDX-License-Identifier: Apache-2.0
/*
 * Blob replication in the CLI (library: blob_repl.h): the options of
 * `pfs blob create` that serve the blob to other nodes while it fills
 * (--replicate-listen, origin and relay) and that fill it from upstreams
 * instead of a source (--fetch-from, relay), their checks, the relay's
 * fetch + manifest verification, the linger before exit and the "fetch"
 * and "repl" members of the result. `pfs blob serve` uses the server part
 * (share.c). The library's threads (server, source readers) are started
 * and joined inside these calls; this file's state is the struct
 * pfs_cli_repl its caller owns.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "repl.h"
#include "holder_metrics.h"
#include "source.h"
#include "pfs/blob_manifest.h"
#include "pfs/blob_share.h"
#include "pfs/log.h"
#include "pfs/pcore.h"

/* PFS_OPT_FN: "3", "3s", "500ms", "2m", "1h", fractions allowed: int
 * milliseconds. */
static int parse_dur(const char *arg, void *field)
{
	static const struct {
		const char *unit;
		double ms;
	} units[] = { { "", 1000 }, { "s", 1000 }, { "ms", 1 }, { "m", 60000 }, { "h", 3600000 } };
	char *end;
	double v = strtod(arg, &end);

	if (end == arg || !(v >= 0))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].unit) && v * units[i].ms <= 86400000.0) {
			*(int *)field = (int)(v * units[i].ms + 0.5);
			return 0;
		}
	return -EINVAL;
}

static const struct pfs_opt_choice xport_choices[] = { { "tcp", PFS_CLI_FETCH_TCP },
						       { "udp", PFS_CLI_FETCH_UDP },
						       { "afxdp", PFS_CLI_FETCH_AFXDP },
						       { NULL } };

#define AT(f) PFS_OPT_AT(struct pfs_cli_repl, f)
const struct pfs_opt pfs_cli_repl_opts[] = {
	PFS_OPT_HEADING("\nReplication (create: fan a blob out to other nodes, cut-through):"),
	{ "replicate-listen", PFS_OPT_STR, AT(listen), "ADDR:PORT",
	  "serve the blob to relays while it fills (e.g. 0.0.0.0:7470), up to what is "
	  "contiguous; needs --token-file",
	  .flags = PFS_OPT_NONZERO },
	{ "fetch-from", PFS_OPT_STR, AT(fetch_from), "IP:PORT[,...]",
	  "fill the blob from these upstreams (first that answers; resume on the next), "
	  "then verify its manifest; excludes --source and --fill; needs --token-file",
	  .flags = PFS_OPT_NONZERO },
	{ "token-file", PFS_OPT_STR, AT(token_file), "PATH",
	  "the blob's token (its Secret): HMAC key of the replication handshake",
	  .flags = PFS_OPT_NONZERO },
	{ "replicate-linger", PFS_OPT_FN, AT(linger_ms), "DUR",
	  "after the blob is complete, serve until no client was incomplete this long "
	  "(default 3s; 500ms, 2m ...)",
	  .parse = parse_dur },
	{ "replicate-rate", PFS_OPT_SIZE, AT(rate), "BYTES_PER_S",
	  "pace each served connection to this many bytes/s (e.g. 50Mi; default unpaced)",
	  .min = 4096 },
	{ "fetch-timeout", PFS_OPT_FN, AT(fetch_timeout_ms), "DUR",
	  "give up the fetch after this long (default 600s)", .parse = parse_dur },
	{ "fetch-transport", PFS_OPT_CHOICE, AT(xport), "tcp|udp|afxdp",
	  "how the fetch receives: grams on the TCP connection (default), or UDP\n"
	  "datagrams, NAK-repaired, into a UDP socket or an AF_XDP socket (XDP program\n"
	  "on --fetch-if; needs CAP_NET_ADMIN, CAP_BPF, CAP_NET_RAW, CAP_IPC_LOCK)",
	  .choices = xport_choices },
	{ "fetch-data-port", PFS_OPT_U64, AT(data_port), "PORT",
	  "udp/afxdp: the UDP port datagrams arrive on (default: --replicate-listen's\n"
	  "port, else 7470)",
	  .min = 1, .max = 65535 },
	{ "fetch-tail", PFS_OPT_STR, AT(fetch_tail), "IP:PORT[,...]",
	  "relay over tcp: the chain's last holders, last first: where this relay's fetch "
	  "moves when it steps aside (it forwards slower than it receives, "
	  "--relay-lag-max)",
	  .flags = PFS_OPT_NONZERO },
	{ "relay-lag-max", PFS_OPT_SIZE, AT(lag_max), "BYTES",
	  "relay over tcp: step aside once a downstream's stream falls this much further "
	  "behind this relay's own fill (default 4Mi; 0: never): downstreams are told "
	  "to fetch from their next upstream, and this relay moves to --fetch-tail (no "
	  "tail, or a delta base: it never steps aside)" },
	{ "verify-threads", PFS_OPT_U64, AT(verify_threads), "N",
	  "relay: hash on this many threads as bytes arrive: each 4 MiB chunk (BLAKE3, "
	  "against the origin's list) or, with no list, each file (sha256). Default: "
	  "the online CPUs, at most 4; 0: after the last byte",
	  .min = 0, .max = 64 },
	{ "chunks-dir", PFS_OPT_STR, AT(chunks_dir), "DIR",
	  "flat blob: keep its chunk list in DIR/NAME.chunks for `pfs blob serve`, whose later "
	  "relays verify by it (default: beside the blob's file; a hugetlbfs directory "
	  "cannot hold it); with rm, remove it from there",
	  .flags = PFS_OPT_NONZERO },
	{ "fetch-if", PFS_OPT_STR, AT(fetch_if), "IFNAME",
	  "afxdp: the interface to receive on (default: the one the route towards\n"
	  "the upstream leaves by)",
	  .flags = PFS_OPT_NONZERO },
	{ 0 },
};
#undef AT

void pfs_cli_repl_init(struct pfs_cli_repl *r)
{
	memset(r, 0, sizeof(*r));
	r->linger_ms = 3000;
	r->fetch_timeout_ms = 600000;
	r->lag_max = PFS_CLI_RELAY_LAG_MAX;
	r->lfd = -1;
}

/* Split a list of IP:PORT (--fetch-from, --fetch-tail) into @out, its
 * strings in @buf (4096 bytes). 0 or -EINVAL. */
static int split_addrs(const char *list, char *buf, char **out, int *n)
{
	char *save, *tok;

	if (strlen(list) >= 4096)
		return -EINVAL;
	strcpy(buf, list);
	*n = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (*n >= PFS_REPL_UPSTREAMS || !strchr(tok, ':'))
			return -EINVAL;
		out[(*n)++] = tok;
	}
	return *n ? 0 : -EINVAL;
}

int pfs_cli_repl_check(const struct pfs_cmdline *c, struct pfs_cli_repl *r,
		       const struct pfs_cli_source *s)
{
	static const char *const need[] = { "replicate-linger", "replicate-rate" };

	static const char *const need_fetch[] = { "fetch-timeout",   "fetch-transport",
						  "fetch-data-port", "fetch-if",
						  "verify-threads",  "fetch-tail",
						  "relay-lag-max" };

	if (!r->listen && !r->fetch_from) {
		if (pfs_cli_repl_delta_set(&r->delta))
			return pfs_opt_fail(c,
					    "the --delta-base options need --replicate-listen or "
					    "--fetch-from");
		for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
			if (pfs_opt_given(c, need[i]))
				return pfs_opt_fail(c, "--%s needs --replicate-listen", need[i]);
		for (size_t i = 0; i < sizeof(need_fetch) / sizeof(need_fetch[0]); i++)
			if (pfs_opt_given(c, need_fetch[i]))
				return pfs_opt_fail(c, "--%s needs --fetch-from", need_fetch[i]);
		return 0;
	}
#ifdef PFS_NO_SOURCE
	return pfs_opt_fail(c, "this pfs was built without replication (the arm64 cross build "
			       "has no libcrypto for HMAC-SHA256)");
#endif
	r->verify_threads_given = pfs_opt_given(c, "verify-threads");
	if (!r->token_file)
		return pfs_opt_fail(c, "--replicate-listen and --fetch-from need --token-file");
	if (r->fetch_from && s->path)
		return pfs_opt_fail(c, "--fetch-from and --source exclude each other (a relay "
				       "fills its blob from upstream, the origin from files)");
	if (r->fetch_from && (pfs_opt_given(c, "fill") || pfs_opt_given(c, "seed")))
		return pfs_opt_fail(c, "--fetch-from and --fill/--seed exclude each other");
	if (r->fetch_from && (pfs_opt_given(c, "blob-name") || !pfs_opt_given(c, "size")))
		return pfs_opt_fail(c, "--fetch-from needs --size (the origin's) and no "
				       "--blob-name");
	if (!r->fetch_from && pfs_opt_given(c, "fetch-timeout"))
		return pfs_opt_fail(c, "--fetch-timeout needs --fetch-from");
	if (r->xport != PFS_CLI_FETCH_AFXDP && pfs_opt_given(c, "fetch-if"))
		return pfs_opt_fail(c, "--fetch-if needs --fetch-transport afxdp");
	if (r->xport == PFS_CLI_FETCH_TCP && pfs_opt_given(c, "fetch-data-port"))
		return pfs_opt_fail(c, "--fetch-data-port needs --fetch-transport udp or afxdp");
	if (r->fetch_from && split_addrs(r->fetch_from, r->upbuf, r->ups, &r->nups))
		return pfs_opt_fail(c,
				    "invalid --fetch-from '%s' (IP:PORT[,IP:PORT...], at most "
				    "%d)",
				    r->fetch_from, PFS_REPL_UPSTREAMS);
	if (r->fetch_tail && split_addrs(r->fetch_tail, r->tailbuf, r->tail, &r->ntail))
		return pfs_opt_fail(c,
				    "invalid --fetch-tail '%s' (IP:PORT[,IP:PORT...], at most "
				    "%d)",
				    r->fetch_tail, PFS_REPL_UPSTREAMS);
	if (r->fetch_tail && r->xport != PFS_CLI_FETCH_TCP)
		return pfs_opt_fail(c, "--fetch-tail needs --fetch-transport tcp (a datagram "
				       "relay does not step aside)");
	if (r->listen && !strchr(r->listen, ':'))
		return pfs_opt_fail(c, "invalid --replicate-listen '%s' (ADDR:PORT)", r->listen);
	return pfs_cli_repl_delta_check(c, &r->delta, r->listen, r->fetch_from, r->xport);
}

bool pfs_cli_repl_set(const struct pfs_cli_repl *r)
{
	return r->listen || r->fetch_from;
}

void pfs_cli_repl_hook(void *ctx, uint64_t mark)
{
	struct pfs_cli_repl *r = ctx;

	if (r->prog)
		pfs_progress__advance(r->prog, mark);
}

/* The token of --token-file into r->token (once). 0 or -errno. */
static int read_token(struct pfs_cli_repl *r, char *why, size_t n)
{
	int tl = r->token_len ? r->token_len :
				pfs_share_token_read(r->token_file, r->token, sizeof(r->token));

	if (tl < 0) {
		snprintf(why, n, "--token-file %s: %s", r->token_file,
			 pfs_share_token_strerror(tl));
		pfs_err("%s", why);
		return tl;
	}
	r->token_len = tl;
	return 0;
}

/* Does this relay step aside when it forwards slower than it receives
 * (docs/design/fanout.md "A slow relay")? Over TCP, with a tail to move
 * to (without one its downstreams would go up the chain while it keeps
 * its place: in a tree that collapses towards a star), and without a
 * delta base (a delta stream is never stepped aside, so a move could wait
 * on a downstream that waits on it). An origin has nowhere to go. */
static bool steps_aside(const struct pfs_cli_repl *r)
{
	return r->fetch_from && r->xport == PFS_CLI_FETCH_TCP && r->ntail > 0 &&
	       !pfs_cli_repl_delta_set(&r->delta);
}

/* The socket a relay listened on before its blob existed: the server
 * serves from its own copy. */
static void close_early_listener(struct pfs_cli_repl *r)
{
	if (r->lfd >= 0)
		close(r->lfd);
	r->lfd = -1;
}

int pfs_cli_repl_serve(struct pfs_cli_repl *r, const struct pfs_blob *blob,
		       struct pfs_progress *prog, char *why, size_t n)
{
	/* A files-layout blob sends its layout to the relays that ask (NULL:
	 * flat), and its chunk digests. A relay over TCP steps aside when it
	 * forwards slower than it receives; an origin has nowhere to go. A
	 * relay that listened before its blob existed serves from that socket. */
	struct pfs_repl_server_opts o = {
		.sz = sizeof(o),
		.listen = r->listen,
		.blob = pfs_blob__data(blob),
		.size = pfs_blob__size(blob),
		.progress = prog,
		.token = r->token,
		.rate = r->rate,
		.layout = pfs_blob__layout(blob),
		.chunks = r->ch.c,
		.lag_max = steps_aside(r) ? r->lag_max : 0,
		.step_aside = &r->step_aside,
		.listen_fd = r->lfd > 0 ? r->lfd : 0,
	};
	int err;

	int cpus[64];

	if (!r->listen)
		return 0;
	err = read_token(r, why, n);
	if (err)
		return err;
	o.token_len = (size_t)r->token_len;
	pfs_cli_repl_delta_open(&r->delta);
	o.base = r->delta.p;
	o.base_size = r->delta.size;
	o.base_fp = r->delta.fp;
	o.delta_level = (int)r->delta.level;
	o.index_threads = pfs_pcore_allowed_cpus(cpus, 8);
	r->srv = pfs_repl_server__start(&o, why, n);
	close_early_listener(r);
	if (!r->srv) {
		err = -errno;
		pfs_err("--replicate-listen: %s", why);
		return err;
	}
	r->serving = true;
	return 0;
}

int pfs_cli_repl_start(struct pfs_cli_repl *r, const struct pfs_blob *blob, char *why, size_t n)
{
	int err = read_token(r, why, n);

	if (err)
		return err;
	pfs_cli_metrics_lock();
	r->prog = pfs_progress__new(pfs_blob__size(blob));
	pfs_cli_metrics_unlock();
	if (!r->prog) {
		snprintf(why, n, "no memory");
		return -ENOMEM;
	}
	pfs_cli_chunks_start(r, pfs_blob__data(blob), pfs_blob__size(blob));
	return pfs_cli_repl_serve(r, blob, r->prog, why, n);
}

static void fetch_opts(struct pfs_cli_repl *r, struct pfs_repl_fetch_opts *o);

/* The received blob by its chunk digests, or without them against its
 * manifest (parse + every file's sha256). */
static int verify(struct pfs_cli_repl *r, struct pfs_blob *blob, char *why, size_t n)
{
	const uint8_t *b = pfs_blob__data(blob);
	uint64_t size = pfs_blob__size(blob);
	struct pfs_manifest *m = NULL;
	double t0 = pfs_cli_now();
	struct pfs_verify_stream_stats st = { 0 };
	char msg[400];
	struct pfs_repl_fetch_opts base;
	int err;

	fetch_opts(r, &base);
	err = pfs_cli_chunks_verify(r, blob, &base, msg, sizeof(msg));

	if (err != -ENOENT) {
		r->verify_s = pfs_cli_now() - t0;
		if (err)
			snprintf(why, n,
				 "received bytes do not match the origin's chunk digests: %s", msg);
		goto out;
	}
	err = pfs_manifest_parse(b, size, &m, msg, sizeof(msg));

	/* Streamed: most files were hashed while they arrived; this waits for
	 * the rest. Otherwise (a flat relay: no layout came first) all now. */
	r->verify_streamed = r->vs != NULL;
	if (!err && r->vs)
		err = pfs_verify_stream__finish(r->vs, m, size, &st, msg, sizeof(msg));
	else if (!err)
		err = pfs_manifest_verify(m, b, size, msg, sizeof(msg));
	r->verify_s = pfs_cli_now() - t0;
	r->verify_busy_s = st.busy_s;
	pfs_verify_stream__free(r->vs);
	r->vs = NULL;
	pfs_manifest_free(m);
	if (err)
		snprintf(why, n, "received bytes do not match the manifest: %s", msg);
out:
	if (err) {
		pfs_err("%s", why);
		r->verify_failed = true;
		return err;
	}
	r->verified = true;
	return 0;
}

extern char **environ;

/* --fetch-data-port, else the port we serve on (a free one by then: TCP
 * and UDP ports are separate), else the default. */
static uint16_t data_port(const struct pfs_cli_repl *r)
{
	const char *colon = r->listen ? strrchr(r->listen, ':') : NULL;
	long p = colon ? strtol(colon + 1, NULL, 10) : 0;

	if (r->data_port)
		return (uint16_t)r->data_port;
	return p > 0 && p < 65536 ? (uint16_t)p : PFS_REPL_PORT;
}

/* The fetch options every relay uses (upstreams, token, transport, the
 * watermark, the delta base, the chunk list); the blob and size are the
 * caller's to set. */
static void fetch_opts(struct pfs_cli_repl *r, struct pfs_repl_fetch_opts *o)
{
	*o = (struct pfs_repl_fetch_opts){ .sz = sizeof(*o),
					   .upstreams = (const char *const *)r->ups,
					   .n_upstreams = r->nups,
					   .progress = r->prog,
					   /* Downstream gets every byte as it arrives:
					    * each node verifies its own copy at the same
					    * time as the others, and the operator checks
					    * every node's digest against the origin's. A
					    * hold-back until this verify made the chain
					    * pay one sha256 pass per hop, in series. */
					   .hold_back = 0,
					   .token = r->token,
					   .token_len = (size_t)r->token_len,
					   .timeout_ms = r->fetch_timeout_ms,
					   .stop = &pfs_cli_stop,
					   .transport = xport_choices[r->xport].name,
					   .data_port = data_port(r),
					   .ifname = r->fetch_if,
					   .env = environ,
					   .tail = (const char *const *)r->tail,
					   .n_tail = r->ntail,
					   .step_aside = &r->step_aside };
	pfs_cli_repl_delta_open(&r->delta);
	o->base = r->delta.p;
	o->base_size = r->delta.size;
	o->base_fp = r->delta.fp;
	o->chunks = r->ch.c; /* NULL unless this relay verifies by chunks */
}

/* After every byte arrived: verify, then let the server hand out the end. */
static int fetched(struct pfs_cli_repl *r, struct pfs_blob *blob, char *why, size_t n)
{
	int err;

	pfs_info("repl fetch: %" PRIu64 " bytes from %s in %.3f s (%.0f MB/s, %" PRIu64
		 " connections)",
		 r->fr.bytes, r->fr.from, r->fr.seconds,
		 r->fr.seconds > 0 ? (double)r->fr.bytes / 1e6 / r->fr.seconds : 0.0,
		 r->fr.attempts);
	err = verify(r, blob, why, n);
	if (err) {
		pfs_progress__fail(r->prog, why);
		return err;
	}
	pfs_progress__advance(r->prog, pfs_blob__size(blob));
	return 0;
}

int pfs_cli_repl_fetch(struct pfs_cli_repl *r, struct pfs_blob *blob, char *why, size_t n)
{
	struct pfs_repl_fetch_opts o;
	int err;

	fetch_opts(r, &o);
	o.blob = pfs_blob__data(blob);
	o.size = pfs_blob__size(blob);
	err = pfs_repl_fetch(&o, &r->fr);
	r->fetched = true;
	if (err) {
		snprintf(why, n, "%s", r->fr.error);
		return err;
	}
	return fetched(r, blob, why, n);
}

/* --verify-threads (0: after the last byte), else the online CPUs up to
 * 4: hashing a file is serial, so more threads only help a model of
 * several large files. */
static unsigned verify_threads(const struct pfs_cli_repl *r)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (r->verify_threads_given)
		return (unsigned)r->verify_threads;
	return cpus < 1 ? 1 : cpus > 4 ? 4 : (unsigned)cpus;
}

/* pfs_repl_fetch_opts.on_layout of a files relay: the blob from the
 * upstream's layout, and the server on it (it sends the same layout on). */
static int files_create(void *ctx, const struct pfs_blob_layout *l, uint8_t **bytes, char *why,
			size_t n)
{
	struct pfs_cli_repl *r = ctx;
	unsigned threads;

	r->files_blob = pfs_cli_blob_create_files(r->files_cb, l, why, n);
	if (!r->files_blob)
		return errno ? -errno : -EIO;
	*bytes = pfs_blob__data(r->files_blob);
	pfs_info("repl fetch: created %s/%s%s from the upstream's layout (%u files)",
		 pfs_cli_files_dir(r->files_cb), r->files_cb->opts.name, PFS_BLOB_FILES_SUFFIX,
		 l->n);
	/* With 0 threads the files are hashed after the last byte, as a flat
	 * relay does: a receive that shares no core with hashing (what a
	 * benchmark's limit needs). */
	threads = verify_threads(r);
	/* Chunk digests verify every byte on their own threads: no sha256
	 * streaming beside them (it runs if no list comes, after the end). */
	pfs_cli_chunks_start(r, *bytes, l->size);
	if (r->ch.hashing)
		threads = 0;
	r->vs = threads ? pfs_verify_stream__start(*bytes, l, r->prog, threads) : NULL;
	if (threads && !r->vs)
		pfs_warn("repl fetch: no streaming verify (%s): every file is hashed after "
			 "the last byte",
			 strerror(errno));
	return pfs_cli_repl_serve(r, r->files_blob, r->prog, why, n);
}

/* pfs_repl_fetch_opts.on_bytes of a files relay: its progress file (what
 * the CSI plugin shows as a percent), about once a second. */
static void files_bytes(void *ctx, uint64_t have)
{
	struct pfs_cli_repl *r = ctx;
	double now = pfs_cli_now();

	if (!r->files_blob || now - r->files_progress_at < 1.0)
		return;
	r->files_progress_at = now;
	pfs_blob_files_progress(r->files_blob, have, "fetching");
}

int pfs_cli_repl_fetch_files(struct pfs_cli_repl *r, const struct pfs_cli_blob *cb,
			     struct pfs_blob **out, char *why, size_t n)
{
	/* Rounded as every blob's --size is (flat relays round in
	 * pfs_blob__create): the origin's HELLO carries its rounded size. */
	uint64_t size = (cb->opts.size + PFS_BLOB_ALIGN - 1) & ~(PFS_BLOB_ALIGN - 1);
	struct pfs_repl_fetch_opts o;
	int err = read_token(r, why, n);

	*out = NULL;
	if (err)
		return err;
	pfs_cli_metrics_lock();
	r->prog = pfs_progress__new(size);
	pfs_cli_metrics_unlock();
	if (!r->prog) {
		snprintf(why, n, "no memory");
		return -ENOMEM;
	}
	r->files_cb = cb;
	/* Listen now: the blob and its server come with the upstream's layout,
	 * and a downstream that connects meanwhile waits in the backlog for
	 * HELLO instead of polling a closed port (each poll cost a hop up to
	 * 100 ms of the chain's start). */
	if (r->listen) {
		r->lfd = pfs_repl_listen(r->listen, why, n);
		if (r->lfd < 0) {
			err = r->lfd;
			r->lfd = -1;
			pfs_err("--replicate-listen: %s", why);
			return err;
		}
	}
	pfs_cli_chunks_start(r, NULL, size); /* the list is asked for before the layout */
	fetch_opts(r, &o);
	o.size = size;
	o.layout = true;
	o.on_layout = files_create;
	o.layout_ctx = r;
	o.on_bytes = files_bytes;
	o.bytes_ctx = r;
	err = pfs_repl_fetch(&o, &r->fr);
	r->fetched = true;
	*out = r->files_blob;
	if (err) {
		pfs_verify_stream__free(r->vs);
		r->vs = NULL;
		snprintf(why, n, "%s", r->fr.error);
		if (r->files_blob)
			pfs_blob_files_progress(r->files_blob, r->fr.bytes, "failed");
		return err;
	}
	pfs_blob_files_progress(r->files_blob, size, "verifying");
	err = fetched(r, r->files_blob, why, n);
	pfs_blob_files_progress(r->files_blob, size, err ? "failed" : "verified");
	return err;
}

void pfs_cli_repl_abort(struct pfs_cli_repl *r, const char *msg)
{
	if (r->prog)
		pfs_progress__fail(r->prog, msg);
	/* Clients connected now, and relays that connect within the linger,
	 * get the message as an ERROR frame instead of a refused connect they
	 * would retry until their --fetch-timeout. */
	pfs_cli_repl_finish(r);
}

void pfs_cli_repl_stop(struct pfs_cli_repl *r)
{
	if (!r->srv)
		return;
	/* Under the metrics lock: a /metrics scrape reads the server until
	 * r->srv is NULL, then r->st. */
	pfs_cli_metrics_lock();
	pfs_repl_server__stats(r->srv, &r->st);
	pfs_repl_server__stop(r->srv);
	r->srv = NULL;
	pfs_cli_metrics_unlock();
	pfs_info("repl serve: %" PRIu64 " clients, %" PRIu64 " bytes served, %" PRIu64 " refused",
		 r->st.clients, r->st.bytes_served, r->st.refused);
}

void pfs_cli_repl_finish(struct pfs_cli_repl *r)
{
	if (r->srv)
		pfs_repl_server__linger(r->srv, r->linger_ms, &pfs_cli_stop);
	pfs_cli_repl_stop(r);
}

/* The upstreams that stepped aside on this fetch, comma-separated, and
 * the offset it had at each. */
static void skipped_json(struct pfs_json *j, const struct pfs_repl_fetch_result *f)
{
	char ups[PFS_REPL_SKIPS * 65] = "";
	size_t len = 0;

	for (int i = 0; i < f->n_skipped; i++)
		len += (size_t)snprintf(ups + len, sizeof(ups) - len, "%s%s", i ? "," : "",
					f->skipped[i]);
	pfs_json_str(j, "skipped", ups, sizeof(ups));
	pfs_json_u64s(j, "skipped_at", f->skipped_at, f->n_skipped);
}

static void fetch_json(struct pfs_json *j, const struct pfs_cli_repl *r)
{
	const struct pfs_repl_fetch_result *f = &r->fr;

	pfs_json_obj(j, "fetch");
	pfs_json_str(j, "from", f->from, 64);
	pfs_json_u64(j, "bytes", f->bytes);
	pfs_json_num(j, "seconds", f->seconds, 4);
	pfs_json_num(j, "mbps", f->seconds > 0 ? (double)f->bytes / 1e6 / f->seconds : 0, 1);
	pfs_json_u64(j, "attempts", f->attempts);
	pfs_json_u64s(j, "resumed_at", f->resumed_at, f->n_resumed);
	pfs_json_num(j, "t0_unix", f->t0_unix, 3);
	pfs_json_num(j, "t1_unix", f->t1_unix, 3);
	pfs_json_bool(j, "verified", r->verified);
	/* How: "chunks" (every chunk against the origin's BLAKE3 list, see
	 * "chunks"), or "files" (every file's sha256 against the manifest). */
	pfs_json_str(j, "verified_by", r->ch.by_chunks ? "chunks" : "files", 8);
	pfs_json_num(j, "verify_seconds", r->verify_s, 4);
	pfs_json_bool(j, "verify_streamed", r->verify_streamed);
	pfs_json_num(j, "verify_busy_seconds", r->verify_busy_s, 4);
	pfs_json_u64(j, "rejected", f->rejected);
	pfs_json_str(j, "transport", f->transport, sizeof(f->transport));
	skipped_json(j, f);
	pfs_json_str(j, "moved_to", f->moved_to, sizeof(f->moved_to));
	pfs_json_u64(j, "moved_at", f->moved_at);
	if (r->files_cb) {
		pfs_json_obj(j, "layout");
		pfs_json_u64(j, "files", f->layout_files);
		pfs_json_u64(j, "frames", f->layout_frames);
		pfs_json_close(j);
	}
	if (r->xport != PFS_CLI_FETCH_TCP) {
		pfs_json_str(j, "path", f->path, sizeof(f->path));
		pfs_json_obj(j, "dgrams");
		pfs_json_u64(j, "received", f->dgrams.received);
		pfs_json_u64(j, "naks", f->dgrams.naks);
		pfs_json_u64(j, "duplicates", f->dgrams.duplicates);
		pfs_json_u64(j, "dropped", f->dgrams.dropped);
		pfs_json_u64(j, "forged", f->dgrams.forged);
		pfs_json_close(j);
	}
	pfs_cli_repl_delta_fetch_json(j, &r->delta, f);
	pfs_json_close(j);
}

void pfs_cli_repl_json(struct pfs_json *j, const struct pfs_cli_repl *r)
{
	if (r->fetched)
		fetch_json(j, r);
	pfs_cli_chunks_json(j, &r->ch);
	if (!r->serving)
		return;
	pfs_json_obj(j, "repl");
	pfs_json_str(j, "listen", r->listen, 64);
	pfs_json_u64(j, "clients", r->st.clients);
	pfs_json_u64(j, "bytes_served", r->st.bytes_served);
	pfs_json_u64(j, "refused", r->st.refused);
	pfs_json_u64(j, "retransmitted", r->st.retransmitted);
	pfs_json_u64(j, "steps", r->st.steps);
	if (r->st.step.stepped) {
		const struct pfs_repl_step *st = &r->st.step;

		pfs_json_obj(j, "stepped_aside");
		pfs_json_u64(j, "mark", st->mark);
		pfs_json_u64(j, "lag", st->lag);
		pfs_json_u64(j, "lag_start", st->lag_start);
		pfs_json_num(j, "seconds", st->seconds, 3);
		pfs_json_str(j, "downstream", st->peer, sizeof(st->peer));
		pfs_json_close(j);
	}
	pfs_cli_repl_delta_serve_json(j, &r->delta, &r->st);
	pfs_json_close(j);
}

void pfs_cli_repl_free(struct pfs_cli_repl *r)
{
	close_early_listener(r);
	pfs_cli_metrics_lock();
	if (r->srv)
		pfs_repl_server__stop(r->srv);
	r->srv = NULL;
	/* After the server that sent from them, and before the progress their
	 * workers wait on: a worker not yet back from a wait when a fetch
	 * failed would otherwise wake on a freed condition (an ASan report
	 * under load: the relay's bad-token test). */
	pfs_cli_chunks_free(&r->ch);
	pfs_progress__free(r->prog);
	r->prog = NULL;
	pfs_cli_metrics_unlock();
	pfs_cli_repl_delta_close(&r->delta);
	memset(r->token, 0, sizeof(r->token));
}
