/* SPDX-License-Identifier: Apache-2.0 */
/* Blob replication ("fan-out"): a blob loaded on one node (the origin,
 * `pfs blob create --source`) reaches every other node's holder through a
 * chain or tree of relays, cut-through: the origin serves each part as soon
 * as it was read, a relay writes what it receives straight into its own
 * blob mapping and serves it further downstream at the same time, up to
 * what it holds contiguously. Why not one sender to every node: the
 * origin's NIC and disk would be the bottleneck; a chain moves each byte
 * over each link once and finishes in about the time of one hop.
 *
 * Three pieces:
 *   pfs_progress    the watermark of a blob being filled: bytes [0, mark)
 *                   are final. Advanced by whoever fills the blob (the
 *                   source loader's hashing thread, the fetch client),
 *                   waited on by the server's connections; a failed fill
 *                   carries its message to every waiting connection.
 *   pfs_repl_server serves [start, mark) of a blob over TCP to
 *                   authenticated clients, one thread per connection.
 *   pfs_repl_fetch  receives [have, size) from a list of upstreams,
 *                   resuming from its own watermark on another upstream
 *                   when one breaks.
 *
 * Wire (docs/design/wire-format.md, "Replication stream"): server HELLO (size,
 * 32-byte nonce) -> client AUTH (HMAC-SHA256(token, "pfs-repl-v1" ||
 * nonce || le64 size), start offset) -> ACCEPT or REFUSE(text) -> payload
 * grams of one descriptor each, in order, <= 1 MiB -> END or ERROR(text).
 * With a base (delta replication, docs/design/delta.md "Fan-out as a delta"): a
 * client holding an older version of the blob asks with AUTH's DELTA flag
 * and its base's size and fingerprint; a server holding the same base
 * sends delta grams (pfs/delta.h) of 4 MiB of the blob each instead of
 * the bytes, encoded as its watermark passes them, and the client
 * rebuilds the bytes over its own base; a server without that base
 * refuses (REFUSE 5) and the client fetches the bytes instead.
 * Nothing unauthenticated gets a blob byte; every blocking call has a
 * timeout; malformed input is counted and drops the connection, never the
 * process.
 *
 * The library reads no environment and installs no signal handlers: stop
 * flags and timeouts come in through the option structs. */
#ifndef PFS_BLOB_REPL_H
#define PFS_BLOB_REPL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pfs/blob_chunks.h"
#include "pfs/blob_files.h"
#include "pfs/delta.h"
#include "pfs/gram.h"
#include "pfs/repl_wire.h"
#include "pfs/xfer.h"

#define PFS_REPL_PORT 7470 /* the default port of the operator's pods */
#define PFS_REPL_GRAM_MAX (1u << 20) /* payload bytes per gram at most */
#define PFS_REPL_CLIENTS 32 /* default bound of concurrent connections */
#define PFS_REPL_UPSTREAMS 16 /* --fetch-from entries at most */
#define PFS_REPL_RESUMES 8 /* resume offsets kept in the result */
#define PFS_REPL_SKIPS 4 /* upstreams that stepped aside, kept in the result */
#define PFS_REPL_DELTA_UNIT (4u << 20) /* blob bytes per delta gram */

/* ---- progress: the watermark of a blob being filled ---- */

struct pfs_progress;

/* pfs_progress__new - a watermark at 0 of a blob of @size bytes. NULL and
 * errno ENOMEM. */
struct pfs_progress *pfs_progress__new(uint64_t size);
void pfs_progress__free(struct pfs_progress *p);

/* pfs_progress__advance - bytes [0, @mark) are final (written, and the
 * writes ordered before this call by its release). Never moves backwards;
 * @mark above the size is cut to it. Wakes every waiter. */
void pfs_progress__advance(struct pfs_progress *p, uint64_t mark);

/* pfs_progress_hook - pfs_progress__advance with the signature of
 * pfs_source_opts.progress (ctx is the struct pfs_progress). */
void pfs_progress_hook(void *ctx, uint64_t mark);

/* pfs_progress__fail - the fill failed: @msg (copied, cut to
 * PFS_REPL_MSG_MAX) is what every waiter and every later caller of
 * pfs_progress__wait gets. The first failure wins. */
void pfs_progress__fail(struct pfs_progress *p, const char *msg);

/* pfs_progress__mark - the watermark now (acquire: the bytes below it may
 * be read after this returns). */
uint64_t pfs_progress__mark(const struct pfs_progress *p);
uint64_t pfs_progress__size(const struct pfs_progress *p);

/* pfs_progress__wait - wait until the watermark is above @have, the fill
 * failed, or @timeout_ms passed. Returns 0 with *@mark set (> @have),
 * -ECANCELED when the fill failed (@msg, size @n, gets its message), or
 * -ETIMEDOUT. */
int pfs_progress__wait(struct pfs_progress *p, uint64_t have, int timeout_ms, uint64_t *mark,
		       char *msg, size_t n);

/* ---- streaming verification ---- */

/* The sha256 of every file of a relay's blob, hashed while its bytes
 * arrive: @threads workers each take the next file of @l (offset order)
 * and hash it as far as @p's watermark allows (bytes below it are final).
 * Compared with the manifest by pfs_verify_stream__finish once the fill
 * is complete, so after the last byte only the files the workers had not
 * reached are left. NULL with errno (ENOMEM; ENOTSUP without libcrypto).
 * @blob and @p must outlive it. */
struct pfs_verify_stream;
struct pfs_verify_stream_stats {
	double busy_s; /* seconds spent hashing, summed over the workers */
};
struct pfs_verify_stream *pfs_verify_stream__start(const uint8_t *blob,
						   const struct pfs_blob_layout *l,
						   struct pfs_progress *p, unsigned threads);
/* pfs_verify_stream__finish - wait for every file's digest (the fill must
 * be complete or failed), then check them against @m (bounds within
 * @size, the same files at the same extents as the layout, each sha256,
 * a "dir" manifest's own digest). 0, -EBADMSG with the first difference
 * in @why, -ECANCELED when the fill failed (its message), -EIO, -ENOMEM.
 * @st (may be NULL) gets the hashing time. Call once, then __free. */
struct pfs_manifest;
int pfs_verify_stream__finish(struct pfs_verify_stream *v, const struct pfs_manifest *m,
			      uint64_t size, struct pfs_verify_stream_stats *st, char *why,
			      size_t n);
/* pfs_verify_stream__hashed - how many files' digests are final so far. */
uint32_t pfs_verify_stream__hashed(struct pfs_verify_stream *v);
/* pfs_verify_stream__free - stop the workers (at their next look at the
 * watermark, within 200 ms), join them and free. NULL is a no-op. */
void pfs_verify_stream__free(struct pfs_verify_stream *v);

/* ---- server ---- */

/* Options for pfs_repl_server__start(); zero-initialise, set sz. */
struct pfs_repl_server_opts {
	size_t sz; /* sizeof(struct pfs_repl_server_opts), for growth */
	const char *listen; /* "ADDR:PORT", "[V6]:PORT"; numeric only */
	const uint8_t *blob; /* the bytes served; the caller's, outlives the server */
	uint64_t size;
	struct pfs_progress *progress; /* NULL: the blob is complete */
	const char *token; /* the shared secret (the blob's Secret) */
	size_t token_len;
	int max_clients; /* 0: PFS_REPL_CLIENTS */
	uint64_t rate; /* bytes/s per connection, 0: unpaced */
	int io_timeout_ms; /* each send/recv; 0: 30000 */
	int auth_timeout_ms; /* HELLO to AUTH; 0: 5000 */
	/* Delta replication: clients whose base has this size and fingerprint
	 * (pfs_delta_base_fp) get delta grams against it. NULL: DELTA requests
	 * are refused. The caller's, outlives the server; indexed once, when
	 * the first delta client comes. */
	const uint8_t *base;
	uint64_t base_size, base_fp;
	int delta_level; /* zstd level, 0: 3 */
	int index_threads; /* threads building the index, 0: 1 */
	/* The blob's file layout (pfs/blob_files.h; its size must be @size),
	 * sent as LAYOUT frames after ACCEPT to clients that ask for it
	 * (pfs_repl_fetch_opts.layout). Copied at start. NULL: a flat blob;
	 * clients that ask get "none" and fail with a message. */
	const struct pfs_blob_layout *layout;
	/* The blob's chunk digests (pfs/blob_chunks.h), sent as DIGESTS frames
	 * after the last byte to clients that ask (pfs_repl_fetch_opts.
	 * chunks), once the list is complete: an origin's once it hashed every
	 * chunk, a relay's once it received it. A list that will never be
	 * (pfs_chunks__list_none), or NULL: END alone, and the client verifies
	 * without. The caller's, outlives the server. */
	struct pfs_chunks *chunks;
	/* Step aside (docs/design/fanout.md "A slow relay"); a relay sets
	 * lag_max, an origin leaves it 0 (never). While the blob still fills,
	 * a TCP client whose stream falls lag_max bytes further behind the
	 * fill than it was when it began (this relay receives faster than it
	 * forwards) is sent STEP ("fetch from your next upstream") and closed;
	 * every other client then too, new ones are refused until the fill
	 * completes, and *step_aside is set (the relay's fetch moves to the
	 * chain's tail: pfs_repl_fetch_opts.tail). Never for a client that
	 * stepped aside itself, a RANGE or a delta client. */
	uint64_t lag_max;
	volatile sig_atomic_t *step_aside;
	/* > 0: a socket already listening on @listen (pfs_repl_listen), which
	 * the server serves from (a copy: the caller closes its own); 0: it
	 * binds @listen itself. */
	int listen_fd;
};

/* Why a relay stepped aside (its first STEP). */
struct pfs_repl_step {
	bool stepped;
	uint64_t mark; /* its own fill's watermark then */
	uint64_t lag; /* the client's stream that far behind it */
	uint64_t lag_start; /* ... and this far when it began */
	double seconds; /* since that stream began */
	char peer[64]; /* that client */
};

struct pfs_repl_server_stats {
	uint64_t clients; /* connections authenticated and accepted */
	uint64_t bytes_served; /* payload bytes sent, all connections */
	uint64_t refused; /* bad AUTH, busy, malformed handshake */
	uint64_t completed; /* connections that got END */
	uint64_t failed; /* connections ended with ERROR or broken */
	uint64_t retransmitted; /* datagram connections: datagrams sent again (NAKs) */
	int active; /* accepted connections not yet complete */
	uint64_t delta_clients; /* connections served delta grams */
	uint64_t delta_refused; /* DELTA requests refused: no base, or another */
	uint64_t delta_wire; /* bytes of delta grams sent (part of bytes_served) */
	uint64_t delta_bytes; /* blob bytes those grams rebuild */
	double index_s, encode_s; /* indexing the base; encoding, every connection */
	uint64_t steps; /* clients sent STEP */
	struct pfs_repl_step step;
};

struct pfs_repl_server;

/* pfs_repl_listen - a TCP socket bound and listening on @addr
 * ("ADDR:PORT"), for pfs_repl_server_opts.listen_fd: a relay listens
 * before its blob exists (a files relay creates it from its upstream's
 * layout), so downstreams that connect meanwhile wait in the backlog for
 * HELLO instead of polling a closed port. The fd, or -errno with @why. */
int pfs_repl_listen(const char *addr, char *why, size_t n);

/* pfs_repl_server__start - bind and listen on opts->listen and serve from
 * an accept thread (one more thread per connection). NULL and errno:
 * EINVAL options or address, EADDRINUSE, EACCES, ENOMEM, EAGAIN (threads);
 * the reason in @why (size @n). */
struct pfs_repl_server *pfs_repl_server__start(const struct pfs_repl_server_opts *opts, char *why,
					       size_t n);

/* pfs_repl_server__linger - return once no connection has been incomplete
 * for @linger_ms in a row (connections that arrive meanwhile restart the
 * clock), or when *@stop is set (may be NULL). */
void pfs_repl_server__linger(struct pfs_repl_server *s, int linger_ms,
			     const volatile sig_atomic_t *stop);

/* pfs_repl_server__drain - wait at most @timeout_ms until no connection is
 * active (after a failed fill: each has sent its ERROR). */
void pfs_repl_server__drain(struct pfs_repl_server *s, int timeout_ms);

void pfs_repl_server__stats(struct pfs_repl_server *s, struct pfs_repl_server_stats *st);

/* The address it listens on, "ADDR:PORT" (the port the kernel chose when
 * opts->listen had port 0). */
const char *pfs_repl_server__addr(const struct pfs_repl_server *s);

/* pfs_repl_server__stop - close the listener, end every connection (they
 * see their timeouts or the closed socket), join the threads, free. */
void pfs_repl_server__stop(struct pfs_repl_server *s);

/* ---- client ---- */

/* Options for pfs_repl_fetch(); zero-initialise, set sz. */
struct pfs_repl_fetch_opts {
	size_t sz; /* sizeof(struct pfs_repl_fetch_opts), for growth */
	const char *const *upstreams; /* "IP:PORT" each, tried in order, cycled */
	int n_upstreams; /* 1..PFS_REPL_UPSTREAMS */
	uint8_t *blob; /* received bytes are written here, at their offset */
	uint64_t size; /* the blob's size; an upstream with another is refused */
	struct pfs_progress *progress; /* advanced as bytes arrive, or NULL */
	uint64_t hold_back; /* the progress stays this many bytes below the
			     * end until the caller advances it (verify first) */
	const char *token;
	size_t token_len;
	int timeout_ms; /* the whole fetch; 0: 600000 */
	int io_timeout_ms; /* a silent upstream is dropped after this; 0: 10000 */
	int connect_timeout_ms; /* 0: 2000 */
	/* The first upstream is the nearest one (the previous node of a chain),
	 * which may not listen yet: it is still mapping and prefaulting its
	 * blob. A refused connect to it is retried for this long before the
	 * next upstream is tried, so a chain does not collapse into every
	 * node pulling from the origin; once it has answered, a failure moves
	 * on at once (route around). 0: 60000; < 0: no wait. At most half of
	 * timeout_ms: one that died before it ever answered is refused the
	 * same way, and the next upstreams keep the other half. */
	int prefer_wait_ms;
	const volatile sig_atomic_t *stop; /* set: give up (-EINTR), may be NULL */
	/* How the data comes: "tcp" (NULL: the default; grams on the
	 * connection), "udp" or "afxdp" (datagrams to data_port, NAK-repaired,
	 * the connection carrying the repair plane's control records; afxdp
	 * attaches an XDP program to ifname, NULL: the interface the route
	 * towards the upstream leaves by). */
	const char *transport;
	uint16_t data_port; /* udp, afxdp: required */
	const char *ifname;
	char *const *env; /* afxdp: AFXDP_DEVICES_* / PCIDEVICE_* (pfs/netdev.h) */
	/* tcp: ask each upstream for delta grams against this base (size and
	 * pfs_delta_base_fp fingerprint); one that holds another base, or
	 * none, is asked for the bytes instead. NULL: bytes from every one. */
	const uint8_t *base;
	uint64_t base_size, base_fp;
	/* Files layout: ask every upstream for the blob's file layout (LAYOUT
	 * frames after ACCEPT, before any byte) and call on_layout once, with
	 * the first complete one: it creates the blob from it
	 * (pfs_blob__create_files) and sets *@blob to its bytes; @blob above
	 * is NULL then. Returns 0 or -errno with @why, which ends the fetch.
	 * Every later upstream (a resume) must send an equal layout. */
	bool layout;
	int (*on_layout)(void *ctx, const struct pfs_blob_layout *l, uint8_t **blob, char *why,
			 size_t n);
	void *layout_ctx;
	/* Called on the caller's thread after each gram with the contiguous
	 * bytes held (a holder's progress file), or NULL. */
	void (*on_bytes)(void *ctx, uint64_t have);
	void *bytes_ctx;
	/* Ask every upstream for the blob's chunk digests (DIGESTS frames
	 * before END, after whole or delta grams; after the datagrams over
	 * udp/afxdp) into this list
	 * (pfs_chunks__list_put; a partial one is reset at each attempt). An
	 * upstream that has none ends with END alone: the list is then marked
	 * none (pfs_chunks__list_none). NULL: not asked. */
	struct pfs_chunks *chunks;
	/* Receive [start, end) only: the rest is held already (a chunk fetched
	 * again after it failed its digest). start 0: from the first byte; end
	 * 0: to the last. An end below the size asks the upstream for that
	 * range alone (AUTH's RANGE flag): TCP only, without layout, chunks or
	 * a base. */
	uint64_t start, end;
	/* Where the fetch moves once *step_aside is set (its own server
	 * stepped aside, pfs_repl_server_opts.lag_max): the chain's last
	 * holders, last first, asked with the STEPPED flag so none of them
	 * sends it STEP. NULL or n_tail 0: it stays with its upstream. */
	const char *const *tail;
	int n_tail; /* 0..PFS_REPL_UPSTREAMS */
	const volatile sig_atomic_t *step_aside;
};

/* What a fetch with a base got as delta grams. */
struct pfs_repl_delta_fetch {
	uint64_t wire; /* bytes of delta grams received */
	uint64_t bytes; /* blob bytes rebuilt from them (the rest came whole) */
	uint64_t refused; /* upstreams that refused: no such base */
	struct pfs_delta_stats st; /* operations applied, by kind */
	double apply_s;
};

struct pfs_repl_fetch_result {
	char from[64]; /* the upstream that delivered the last byte */
	uint64_t bytes; /* blob bytes received (whole or rebuilt), every attempt */
	/* connections made (TCP connected) and resumes: stored by the fetch
	 * (relaxed atomic) as they happen, so a /metrics page on another
	 * thread reads them live with __atomic_load_n */
	uint64_t attempts;
	uint64_t resumed_at[PFS_REPL_RESUMES]; /* offsets resumed from after a break */
	int n_resumed;
	double t0_unix, t1_unix; /* wall clock: first and last payload byte */
	double seconds; /* monotonic, first to last payload byte */
	uint64_t rejected; /* malformed frames or grams, each dropped a connection */
	struct pfs_gram_stats gram; /* decode results of the grams */
	char transport[8]; /* "tcp" | "udp" | "afxdp" */
	char path[128]; /* datagram transports: how the bytes came in */
	struct pfs_dgram_stats dgrams; /* datagram transports, every attempt */
	struct pfs_repl_delta_fetch delta; /* with a base */
	uint32_t layout_files; /* with layout: the entries of the layout */
	uint64_t layout_frames; /* LAYOUT frames received, every attempt */
	uint64_t digest_frames; /* DIGESTS frames received, every attempt */
	/* Upstreams that stepped aside (sent STEP), in order, and the offset
	 * this fetch had then; the fetch went on from its next upstream. */
	char skipped[PFS_REPL_SKIPS][64];
	uint64_t skipped_at[PFS_REPL_SKIPS];
	int n_skipped;
	/* This relay stepped aside: the offset its fetch had and the tail
	 * holder it moved to. moved_to "": it did not move. */
	uint64_t moved_at;
	char moved_to[64];
	char error[512];
};

/* pfs_repl_fetch - receive [0, size) into opts->blob from the upstreams.
 * 0 when every byte arrived (the caller verifies the content). Else -errno
 * with r->error: EACCES an upstream refused our token, EMSGSIZE an upstream
 * holds a blob of another size, ECANCELED an upstream's own fill failed
 * ("upstream IP:PORT failed: ..."), ETIMEDOUT nothing complete within
 * timeout_ms, EINTR stopped, EINVAL options; with opts->layout also
 * ENODATA an upstream holds a blob without a file layout (flat, seeded),
 * ESTALE an upstream (a resume) holds another layout than the one the
 * blob was created from, or on_layout's error. Broken connections, timeouts,
 * busy upstreams and malformed streams are retried on the next upstream
 * with a backoff of 100 ms doubling to 2 s; on failure the progress (if
 * any) is failed with r->error. */
int pfs_repl_fetch(const struct pfs_repl_fetch_opts *opts, struct pfs_repl_fetch_result *r);

#endif /* PFS_BLOB_REPL_H */
