/* SPDX-License-Identifier: Apache-2.0 */
/* What the `pfs` subcommands share: exit codes, --check-args, the commands'
 * entry points (one file each in tools/pfs/), and the blob options every
 * command that takes a blob accepts (blob_opts.c): a blob of its own
 * (--size, --page, ...), a named one (--blob-name) or one from a holder
 * (--blob-socket). Internal to the tool; the library knows nothing of it. */
#ifndef PFS_TOOL_CLI_H
#define PFS_TOOL_CLI_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opt.h"
#include "pfs/blob.h"
#include "pfs/blob_repl.h"
#include "pfs/blob_share.h"
#include "pfs/blob_source.h"
#include "pfs/result.h"

enum pfs_exit {
	PFS_EXIT_OK = 0,
	PFS_EXIT_ERROR = 1, /* runtime failure, see stderr and "error" */
	PFS_EXIT_USAGE = 2, /* bad command line */
	PFS_EXIT_MISMATCH = 3, /* transfer finished, integrity MISMATCH */
	PFS_EXIT_REFUSED = 4, /* peer refused: mode, version or blob */
	PFS_EXIT_TIMEOUT = 5, /* no peer / no data within the timeout */
};

/* The exit code of a command whose options did not parse: 0 after --help,
 * 2 otherwise. */
static inline int pfs_exit_parse(int err)
{
	return err > 0 ? PFS_EXIT_OK : PFS_EXIT_USAGE;
}

/* Each takes argv with argv[0] = its own name (blob serve/ping/attach: the
 * verb) and returns the process exit code. */
int pfs_cmd_blob(int argc, char **argv);
int pfs_cmd_blob_serve(int argc, char **argv);
int pfs_cmd_blob_ping(int argc, char **argv);
int pfs_cmd_blob_attach(int argc, char **argv);
int pfs_cmd_blob_manifest(int argc, char **argv);
int pfs_cmd_send(int argc, char **argv);
int pfs_cmd_recv(int argc, char **argv);
int pfs_cmd_bench(int argc, char **argv);
int pfs_cmd_pcore(int argc, char **argv);
int pfs_cmd_probe(int argc, char **argv);
int pfs_cmd_xsk(int argc, char **argv);

/* `pfs --check-args COMMAND ...`: every command parses and validates its
 * options as usual, then exits 0 before touching memory, sockets or files.
 * The operator's tests run the exact argument lists its pods get through
 * it, so a pod can never be built with an option the binary lacks. */
extern bool pfs_cli_check_args;

/* Blob options shared by blob, send, recv, bench and pcore. */
struct pfs_cli_blob {
	struct pfs_blob_opts opts; /* anonymous or named create */
	const char *open_name; /* --blob-name: open an existing blob */
	const char *open_dir;
};

/* The table over struct pfs_cli_blob: --size (alias --blob-size), --seed,
 * --page, --no-fallback, --fill, --numa, --mlock, --setup-threads,
 * --blob-name, --blob-dir. */
extern const struct pfs_opt pfs_cli_blob_opts[];

/* The defaults: 1 GiB on 2 MiB pages, seed fill with seed 1, no NUMA. */
void pfs_cli_blob_init(struct pfs_cli_blob *b);
/* Create or open; NULL with the reason logged and copied into @why. */
struct pfs_blob *pfs_cli_blob_get(const struct pfs_cli_blob *b, char *why, size_t n);
/* The "blob" member of a result. */
void pfs_cli_blob_json(struct pfs_json *j, const struct pfs_blob *blob, uint64_t fp);

/* `pfs blob create --source`: a blob loaded from files (source.c). */
struct pfs_source;
struct pfs_cli_source {
	const char *path; /* --source */
	const char *root; /* --source-root */
	int threads; /* --source-threads, 0: the library's default */
	uint64_t chunk; /* --source-chunk, 0: the library's default */
	bool no_direct; /* --source-no-direct */
	bool dry_run; /* --dry-run: plan only */
	struct pfs_source *src; /* after pfs_cli_source_scan */
	void (*progress)(void *ctx, uint64_t mark); /* the loader's hook */
	void *progress_ctx;
	double t0_unix, t1_unix; /* wall clock: load start and end */
	struct pfs_source_stats st; /* after pfs_cli_source_load */
};

/* The table over struct pfs_cli_source: --source, --source-root,
 * --source-threads, --source-chunk, --source-no-direct, --dry-run. */
extern const struct pfs_opt pfs_cli_source_opts[];

/* What the source options exclude, checked after parsing (the blob comes
 * from the source: no --blob-name, --fill or --seed; the --source-*
 * options need --source). 0 or -EINVAL after printing why. */
int pfs_cli_source_check(const struct pfs_cmdline *c, const struct pfs_cli_source *s);

/* Scan the source and size the blob options for it: --size when given
 * must hold it (else -ENOSPC, both sizes in @why), else the size it needs;
 * the fill becomes none (fresh memory is zero). 0 or -errno, @why set. */
int pfs_cli_source_scan(struct pfs_cli_source *s, struct pfs_cli_blob *b, bool size_given,
			char *why, size_t n);

/* Read the source into @blob (pfs_source__load), logging the rates. 0 or
 * -errno with @why; a named blob whose load failed is removed. */
int pfs_cli_source_load(struct pfs_cli_source *s, struct pfs_blob *blob, char *why, size_t n);

/* --dry-run: the result of a scanned source, its size and the blob's
 * (after pfs_cli_source_scan sized @b); the exit code. */
int pfs_cli_source_plan(const struct pfs_cli_source *s, const struct pfs_cli_blob *b,
			const char *result_file);

/* The "source" member of the create result. */
void pfs_cli_source_json(struct pfs_json *j, const struct pfs_cli_source *s);

void pfs_cli_source_free(struct pfs_cli_source *s);

/* `pfs blob create --replicate-listen / --fetch-from` and `pfs blob serve
 * --replicate-listen` (repl.c): serve a blob to other nodes' relays, or
 * fill one from upstreams. pfs_cli_repl_init first. */
enum pfs_cli_fetch_xport {
	PFS_CLI_FETCH_TCP = 0, /* index into repl.c's choice table too */
	PFS_CLI_FETCH_UDP,
	PFS_CLI_FETCH_AFXDP,
};

/* A regular file mapped read-only (pfs_cli_map_file); size 0 maps nothing. */
struct pfs_cli_mapped {
	uint8_t *p;
	uint64_t size;
};

/* Map @path read-only into @m: 0, or -errno with @why ("PATH: not a
 * regular file", "PATH: <strerror>"). pfs_cli_unmap undoes it. */
int pfs_cli_map_file(const char *path, struct pfs_cli_mapped *m, char *why, size_t n);
void pfs_cli_unmap(struct pfs_cli_mapped *m);

/* Delta replication's base (repl_delta.c): --delta-base FILE or the blob
 * of --delta-base-socket; zero-initialise. */
struct pfs_cli_repl_delta {
	const char *file; /* --delta-base */
	const char *socket; /* --delta-base-socket */
	const char *token_file; /* --delta-base-token-file */
	uint64_t level; /* --delta-zstd-level; 0: 3 */
	/* opened by pfs_cli_repl_delta_open */
	bool tried;
	struct pfs_blob *blob;
	struct pfs_cli_mapped map; /* --delta-base mapped */
	const uint8_t *p;
	uint64_t size, fp;
	double fp_s;
	char error[320]; /* why there is no base after all */
};

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
	char token[PFS_SHARE_TOKEN_MAX + 1];
	int token_len;
	struct pfs_progress *prog; /* the blob's watermark while it fills */
	struct pfs_repl_server *srv;
	bool serving; /* a server ran: "repl" in the result */
	struct pfs_repl_server_stats st; /* at its stop */
	bool fetched, verified;
	struct pfs_repl_fetch_result fr;
	double verify_s;
	struct pfs_cli_repl_delta delta;
};

/* The table over struct pfs_cli_repl_delta: --delta-base,
 * --delta-base-socket, --delta-base-token-file, --delta-zstd-level. */
extern const struct pfs_opt pfs_cli_repl_delta_opts[];
bool pfs_cli_repl_delta_set(const struct pfs_cli_repl_delta *d);
/* After parsing: what needs what (@serving, @fetching: the command serves
 * or fetches the blob; @xport the fetch transport). 0 or -EINVAL, printed. */
int pfs_cli_repl_delta_check(const struct pfs_cmdline *c, const struct pfs_cli_repl_delta *d,
			     bool serving, bool fetching, int xport);
/* Map the base once (later calls return at once). A base that cannot be
 * had is not an error: it is logged, kept in d->error, and the blob is
 * served and fetched whole. */
void pfs_cli_repl_delta_open(struct pfs_cli_repl_delta *d);
void pfs_cli_repl_delta_close(struct pfs_cli_repl_delta *d);
/* The "delta" member of "fetch" (@f) or of "repl" (@st), when a base was
 * asked for. */
void pfs_cli_repl_delta_fetch_json(struct pfs_json *j, const struct pfs_cli_repl_delta *d,
				   const struct pfs_repl_fetch_result *f);
void pfs_cli_repl_delta_serve_json(struct pfs_json *j, const struct pfs_cli_repl_delta *d,
				   const struct pfs_repl_server_stats *st);
/* The "regions" member of a delta result (delta.c). */
void pfs_cli_delta_regions_json(struct pfs_json *j, const struct pfs_delta_stats *s);

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
int pfs_cli_repl_fetch(struct pfs_cli_repl *r, const struct pfs_blob *blob, char *why, size_t n);
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
/* PFS_OPT_FN: a duration ("3", "3s", "500ms", "2m", "1h") into int ms. */
int pfs_cli_parse_dur(const char *arg, void *field);

/* The "manifest" member of a result (blob.c): kind, files, bytes, sha256,
 * offset, length of the blob's manifest, or null and why. */
void pfs_cli_manifest_json(struct pfs_json *j, const struct pfs_blob *blob);

/* The blob from a holder (`pfs blob serve`) instead of one's own;
 * zero-initialise. */
struct pfs_cli_share {
	const char *socket; /* --blob-socket: take the blob from this holder */
	const char *token_file; /* --blob-token-file */
};

/* The table over struct pfs_cli_share: --blob-socket, --blob-token-file. */
extern const struct pfs_opt pfs_cli_share_opts[];

/* Either share option given: the blob must come from a holder. */
static inline bool pfs_cli_share_set(const struct pfs_cli_share *s)
{
	return s->socket || s->token_file;
}

/* The blob from the holder (fetched, mapped, size and fingerprint checked);
 * NULL with errno, the reason logged and copied into @why (may be NULL).
 * EINVAL: one of the two options missing. */
struct pfs_blob *pfs_cli_share_get(const struct pfs_cli_share *s, char *why, size_t n);

/* PFS_OPT_FN parsers of the AF_XDP link options that send, recv and xsk
 * share: --attach (enum pfs_xdp_attach), --umem-page/--page (enum
 * pfs_xsk_page). */
int pfs_cli_parse_xdp_attach(const char *arg, void *field);
int pfs_cli_parse_umem_page(const char *arg, void *field);

/* Signals are the tool's, not the library's: the commands that must leave
 * through their cleanup path (an afxdp receiver and `pfs xsk` detach their
 * XDP program) call pfs_cli_catch_stop(), which routes SIGTERM, SIGINT and
 * SIGHUP to pfs_cli_stop (without SA_RESTART, so a blocking call returns
 * EINTR), and hand &pfs_cli_stop to the library as its stop flag. The
 * others keep the default actions. */
extern volatile sig_atomic_t pfs_cli_stop;
void pfs_cli_catch_stop(void);

/* CLOCK_MONOTONIC in seconds. */
double pfs_cli_now(void);
/* CLOCK_REALTIME in seconds (timestamps other nodes compare). */
double pfs_cli_wall(void);

#endif /* PFS_TOOL_CLI_H */
