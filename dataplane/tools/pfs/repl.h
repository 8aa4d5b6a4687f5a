/* SPDX-License-Identifier: Apache-2.0 */
/* A replication session (repl.c over repl_delta.c): the options that serve
 * a blob to other nodes and fill one from upstreams, their checks, the
 * server, the relay's fetch, and the "fetch" and "repl" members of a
 * result. `pfs blob create` and `pfs blob serve` drive it; the delta base's
 * own options are declared here too, the rest of it is repl.c's business
 * (repl_delta.h). */
#ifndef PFS_TOOL_REPL_H
#define PFS_TOOL_REPL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "acquire.h"
#include "cli.h"
#include "repl_chunks.h"
#include "repl_delta.h"
#include "opt.h"
#include "pfs/blob.h"
#include "pfs/blob_files.h"
#include "pfs/blob_repl.h"
#include "pfs/blob_share.h"
#include "pfs/result.h"

struct pfs_cli_source;

/* `pfs blob create --replicate-listen / --fetch-from` and `pfs blob serve
 * --replicate-listen` (repl.c): serve a blob to other nodes' relays, or
 * fill one from upstreams. pfs_cli_repl_init first. */
enum pfs_cli_fetch_xport {
	PFS_CLI_FETCH_TCP = 0, /* index into repl.c's choice table too */
	PFS_CLI_FETCH_UDP,
	PFS_CLI_FETCH_AFXDP,
};

/* --relay-lag-max's default: a relay forwarding at a quarter of a 2 Gbit/s
 * fill falls this far behind in about 0.03 s, inside the rule's 0.05 s
 * (docs/design/fanout.md "A slow relay"). */
#define PFS_CLI_RELAY_LAG_MAX (4ull << 20)

struct pfs_cli_repl {
	const char *listen; /* --replicate-listen ADDR:PORT */
	const char *fetch_from; /* --fetch-from IP:PORT[,...] */
	const char *token_file; /* --token-file */
	int linger_ms; /* --replicate-linger, default 3 s */
	uint64_t rate; /* --replicate-rate, bytes/s per connection; 0: unpaced */
	int fetch_timeout_ms; /* --fetch-timeout, default 600 s */
	int xport; /* --fetch-transport: enum pfs_cli_fetch_xport */
	uint64_t data_port; /* --fetch-data-port; 0: see data_port() in repl.c */
	const char *fetch_if; /* --fetch-if (afxdp) */
	char *ups[PFS_REPL_UPSTREAMS]; /* --fetch-from split, into upbuf */
	int nups;
	char upbuf[4096];
	/* A slow relay steps aside (docs/design/fanout.md "A slow relay"):
	 * --fetch-tail split into tailbuf, --relay-lag-max (a relay's server
	 * sets step_aside, its fetch reads it). */
	const char *fetch_tail;
	char *tail[PFS_REPL_UPSTREAMS];
	int ntail;
	char tailbuf[4096];
	uint64_t lag_max;
	volatile sig_atomic_t step_aside;
	/* --chunks-dir: where a flat blob's chunk list is kept (DIR/NAME.chunks);
	 * NULL: beside the blob's file (repl_chunks.c). */
	const char *chunks_dir;
	int lfd; /* a files relay's listener before its server starts; -1: none */
	char token[PFS_SHARE_TOKEN_MAX + 1];
	int token_len;
	struct pfs_progress *prog; /* the blob's watermark while it fills */
	struct pfs_repl_server *srv;
	bool serving; /* a server ran: "repl" in the result */
	struct pfs_repl_server_stats st; /* at its stop */
	bool fetched, verified;
	bool verify_failed; /* the received bytes did not match the manifest */
	struct pfs_repl_fetch_result fr;
	double verify_s; /* from the last byte to verified */
	/* A files relay hashes while it receives (pfs_verify_stream): the
	 * streamer, whether it ran, its hashing time and --verify-threads. */
	struct pfs_verify_stream *vs;
	bool verify_streamed;
	double verify_busy_s;
	uint64_t verify_threads;
	bool verify_threads_given; /* 0 given: hash after the last byte */
	struct pfs_cli_repl_delta delta; /* --delta-base... (repl_delta.h) */
	struct pfs_cli_chunks ch; /* chunk digests (repl_chunks.h) */
	/* A files-layout relay (pfs_cli_repl_fetch_files): how its blob is
	 * created once the upstream's layout arrived (--name, --dir), and the
	 * blob. */
	const struct pfs_cli_blob *files_cb;
	struct pfs_blob *files_blob;
	double files_progress_at; /* its progress file's last rewrite */
};

/* The table over struct pfs_cli_repl_delta: --delta-base,
 * --delta-base-socket, --delta-base-token-file, --delta-zstd-level. */
extern const struct pfs_opt pfs_cli_repl_delta_opts[];
/* After parsing: what needs what (@serving, @fetching: the command serves
 * or fetches the blob; @xport the fetch transport). 0 or -EINVAL, printed. */
int pfs_cli_repl_delta_check(const struct pfs_cmdline *c, const struct pfs_cli_repl_delta *d,
			     bool serving, bool fetching, int xport);

/* The table over struct pfs_cli_repl: --replicate-listen, --fetch-from,
 * --token-file, --replicate-linger, --replicate-rate, --fetch-timeout,
 * --fetch-transport, --fetch-data-port, --fetch-if. */
extern const struct pfs_opt pfs_cli_repl_opts[];
void pfs_cli_repl_init(struct pfs_cli_repl *r);
/* After parsing: what excludes what (--fetch-from vs --source/--fill),
 * what needs what (--token-file). 0 or -EINVAL after printing why. */
int pfs_cli_repl_check(const struct pfs_cmdline *c, struct pfs_cli_repl *r,
		       const struct pfs_cli_source *s);
bool pfs_cli_repl_set(const struct pfs_cli_repl *r);
/* pfs_source_opts.progress for the origin: ctx is the struct pfs_cli_repl. */
void pfs_cli_repl_hook(void *ctx, uint64_t mark);
/* The watermark for @blob and, with --replicate-listen, the server on it.
 * 0 or -errno with @why. */
int pfs_cli_repl_start(struct pfs_cli_repl *r, const struct pfs_blob *blob, char *why, size_t n);
/* The server alone (r->token_file, r->listen) over @blob as it fills
 * (@prog) or complete (NULL); nothing without r->listen. 0 or -errno. */
int pfs_cli_repl_serve(struct pfs_cli_repl *r, const struct pfs_blob *blob,
		       struct pfs_progress *prog, char *why, size_t n);
/* Relay: fetch the blob from --fetch-from, verify its manifest, then let
 * the server hand out the last bytes. 0 or -errno with @why. */
int pfs_cli_repl_fetch(struct pfs_cli_repl *r, struct pfs_blob *blob, char *why, size_t n);
/* Relay with --layout files: fetch the blob's file layout from
 * --fetch-from, create the blob DIR/NAME.d of @cb from it
 * (pfs_cli_blob_create_files: files, tail, the region over them), serve
 * it (--replicate-listen) as it fills, receive, verify. *@out is the blob
 * once created (also on a later failure: the caller closes it and removes
 * the files). 0 or -errno with @why. */
int pfs_cli_repl_fetch_files(struct pfs_cli_repl *r, const struct pfs_cli_blob *cb,
			     struct pfs_blob **out, char *why, size_t n);
/* The fill failed with @msg: clients connected or connecting within
 * --replicate-linger get it as ERROR; then the server stops. */
void pfs_cli_repl_abort(struct pfs_cli_repl *r, const char *msg);
/* The blob is complete: serve until --replicate-linger passed idle, then
 * pfs_cli_repl_stop. */
void pfs_cli_repl_finish(struct pfs_cli_repl *r);
/* Stop the server now, keeping its counters for the result. */
void pfs_cli_repl_stop(struct pfs_cli_repl *r);
/* "fetch" and "repl" members of a result, when they apply. */
void pfs_cli_repl_json(struct pfs_json *j, const struct pfs_cli_repl *r);
void pfs_cli_repl_free(struct pfs_cli_repl *r);

#endif /* PFS_TOOL_REPL_H */
