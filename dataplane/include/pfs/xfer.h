/* SPDX-License-Identifier: Apache-2.0 */
/* The transfer engine: the options of one transfer (nested per concern),
 * the result one side measured, the table `pfs send/recv --transport`
 * picks from, and the one entry that checks and runs a transfer over any
 * of them (pfs_xfer_send, pfs_xfer_recv). A transport reads the options it
 * uses and ignores the others. */
#ifndef PFS_XFER_H
#define PFS_XFER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pfs/blob.h"
#include "pfs/gram.h"
#include "pfs/integrity.h"
#include "pfs/schedule.h"

enum pfs_verdict {
	PFS_VERDICT_NA = 0, /* no verdict: the transfer did not finish */
	PFS_VERDICT_OK,
	PFS_VERDICT_MISMATCH,
};

/* Datagram transports (udp, afxdp): what the repair plane saw. */
struct pfs_dgram_stats {
	uint64_t sent; /* data datagrams/frames sent, repairs included */
	uint64_t received;
	uint64_t retransmitted; /* sent again after a NAK or a timeout */
	uint64_t naks; /* NAKs sent (receiver) or received (sender) */
	uint64_t duplicates; /* received more than once, dropped */
	uint64_t out_of_order; /* received ahead of a gap */
	uint64_t dropped; /* receiver: packets its kernel dropped, socket full (SO_RXQ_OVFL;
				 * a GRO burst of datagrams counts once); afxdp: the XDP socket
				 * statistics' rx_dropped + fill_empty + rx_ring_full */
	uint64_t test_dropped; /* receiver: dropped on purpose (test_rx_drop_ppm, tests only) */
	uint64_t forged; /* receiver: datagrams whose tag did not verify under this transfer's
			  * key (forged, from another transfer, or damaged), dropped */
	uint64_t conflicts; /* receiver: authenticated fragments that disagreed with their
			     * gram's slot; the slot was discarded and asked for again */
};

/* What one side measured; filled as far as the transfer got. */
struct pfs_xfer_result {
	/* effective bytes (sum of descriptor lengths); a receiver advances it
	 * with pfs_xfer_add_bytes as grams execute, so another thread (a
	 * /metrics page) may read it with a relaxed atomic load meanwhile */
	uint64_t bytes;
	/* receiver: the effective bytes its sender announced (HELLO count),
	 * stored (relaxed atomic) once the HELLO was taken; 0 before */
	uint64_t planned;
	uint64_t descs;
	uint64_t grams;
	uint64_t wire_bytes; /* bytes this side wrote/read on the socket */
	uint64_t crc; /* this side's checksum (CRC32C in the low 32 bits) */
	uint64_t peer_crc; /* the other side's, when it arrived */
	bool peer_crc_valid;
	enum pfs_verdict verdict;
	double elapsed_s; /* transfer phase only, setup excluded */
	double user_s, sys_s; /* getrusage over the transfer phase */
	uint64_t peer_blob_size, peer_fingerprint;
	enum pfs_gram_mode mode;
	struct pfs_gram_stats stats;
	struct pfs_dgram_stats dgrams; /* datagram transports; all 0 for tcp */
	char path[128]; /* how the bytes went, e.g. "afxdp native, copy, 4 queues, ..." */
	char afxdp_mode[12]; /* afxdp: the bind mode obtained, "copy" | "zerocopy"; else "" */
	char peer[64];
	char error[700]; /* why it failed, for the result JSON */
	/* The failure is the transport's own setup on this host (an AF_XDP
	 * socket or the XDP program refused: capability, driver, interface),
	 * not the peer or the data: another attempt here fails the same way. */
	bool transport_unavailable;
	/* Receiver: connections dropped before its sender's HELLO was taken
	 * (no whole HELLO in time, not a HELLO, not authenticated). */
	uint32_t dropped;
};

/* pfs_xfer_add_bytes - r->bytes += @n by its one writer, as a relaxed
 * atomic store: a plain store on the machines we build for, and a reader
 * on another thread (__atomic_load_n relaxed) sees a whole value. */
static inline void pfs_xfer_add_bytes(struct pfs_xfer_result *r, uint64_t n)
{
	__atomic_store_n(&r->bytes, r->bytes + n, __ATOMIC_RELAXED);
}

/* The sender's options (ignored by a receiver). */
struct pfs_xfer_send_opts {
	struct pfs_sched_opts sched; /* total_bytes set; blob_size from the blob */
	uint32_t desc_per_gram; /* 1..PFS_GRAM_MAX_DESC */
	uint32_t gram_bytes; /* payload mode: payload bytes per gram cap,
			      * 1..PFS_GRAM_MAX_PAYLOAD */
	int connect_timeout_ms; /* retry refused connects this long */
	double rate_max; /* datagram transports: bytes/s the pacing never
			  * exceeds; 0: no cap */
	/* Datagram transports: the blob may still be filling. Before a gram
	 * is built from bytes below @end the sender asks src_ready(src_ctx,
	 * end, why, n): 0 ready, -EAGAIN not yet (asked again within a few ms;
	 * the receiver is kept alive meanwhile), -ECANCELED (the source failed)
	 * aborts the transfer and the receiver gets the reason written to @why
	 * (ABORT: it fails for good), any other -errno just ends it (the
	 * receiver sees the connection close and may try elsewhere). NULL: the
	 * whole blob is ready. */
	int (*src_ready)(void *ctx, uint64_t end, char *why, size_t n);
	void *src_ctx;
};

/* The receiver's options (ignored by a sender). */
struct pfs_xfer_recv_opts {
	int out_fd; /* -1, or a file to pwrite referenced bytes into */
	int accept_timeout_ms;
	const char *ready_file; /* NULL, or created once senders can start */
	uint64_t max_size; /* payload mode: the largest blob a sender may claim
			    * (out_fd is sized to it); a HELLO above is refused.
			    * 0: PFS_XFER_MAX_SIZE_DEFAULT */
	/* The most effective bytes a sender may announce (HELLO count), in
	 * every gram mode: the work this receiver agrees to do. In offset and
	 * arithmetic modes a few bytes on the wire name gigabytes of the
	 * receiver's own blob, so without a bound a stranger's 32 KB keep a
	 * core busy for seconds. A HELLO above is refused. 0: no bound. */
	uint64_t max_work;
	/* Payload mode: write each byte into out_mem at its offset (the
	 * receiver's blob; a sender of another blob size is refused), or NULL.
	 * Datagram transports then call on_exec(exec_ctx, off, len) once per
	 * descriptor executed, in order (NULL: none); a non-zero return aborts
	 * the transfer with that error. */
	uint8_t *out_mem;
	uint64_t out_mem_size;
	int (*on_exec)(void *ctx, uint64_t off, uint64_t len);
	void *exec_ctx;
};

/* Link-level transports (udp, afxdp); 0/NULL = the transport's default.
 * What the library takes from its caller rather than from the process
 * (signals, environment) is here too. */
struct pfs_xfer_link_opts {
	const char *ifname; /* interface to bind/attach */
	uint32_t queues; /* NIC queues (one socket and thread each) */
	const char *peer_mac; /* "aa:bb:cc:dd:ee:ff" when there is no ARP */
	int xdp_attach; /* afxdp receiver: enum pfs_xdp_attach (0 auto) */
	int umem_page; /* afxdp: enum pfs_xsk_page (0 auto) */
	uint32_t mtu; /* path MTU the datagrams must fit: 0, or 576..65535 */
	bool udp_no_offload; /* udp: no UDP GSO/GRO (pfs: PFS_UDP_OFFLOAD=off) */
	/* afxdp receiver: non-zero ends the transfer (-EINTR, program
	 * detached); the caller routes SIGTERM/SIGINT/SIGHUP here, without
	 * SA_RESTART. NULL: never stops */
	const volatile sig_atomic_t *stop;
	/* afxdp: "NAME=value" strings the interface may come from
	 * (AFXDP_DEVICES_*, PCIDEVICE_*: pfs/netdev.h); NULL: none */
	char *const *env;
	/* tests only: receivers (udp, afxdp) drop this many data datagrams per
	 * million on purpose, <= 1000000 (pfs: PFS_TEST_RX_DROP_PPM) */
	uint32_t test_rx_drop_ppm;
};

/* Embedding a datagram transfer (udp, afxdp) in another protocol, as blob
 * replication does (blob_repl.h); all zero for pfs send/recv. */
struct pfs_xfer_embed_opts {
	bool ctl_given; /* ctl_fd is the control connection, connected (and
			 * authenticated) by the caller: the sender does not
			 * connect, the receiver neither listens nor accepts;
			 * the caller keeps the fd (not closed), its timeouts set */
	int ctl_fd;
	/* Both: a secret the two ends share already (blob replication: the
	 * blob's token), mixed into the datagram key (pfs/dgram_auth.h), so a
	 * man in the middle of the control connection without it cannot learn
	 * the key either. NULL: none (the key is then as strong as the control
	 * connection is unaltered). */
	const void *psk;
	size_t psk_len;
};

/* A secret the two ends of one transfer share (the operator makes one per
 * PfsTransfer; pfs send/recv --token-file). With it the receiver speaks
 * first on every connection (CHALLENGE, a fresh nonce) and takes only a
 * HELLO followed by an AUTH whose MAC of the nonce and the HELLO verifies
 * (pfs/gram.h): anyone else who reaches its port is dropped, counted
 * (pfs_xfer_result.dropped) and logged, and the receiver keeps waiting for
 * its sender until its accept deadline. The datagram transports also mix
 * it into their key (as embed.psk). Both ends need it, or neither. */
struct pfs_xfer_auth_opts {
	const char *token; /* NULL: none (the handshake is as before) */
	size_t token_len;
};

struct pfs_delta_index;
struct pfs_delta_result;

/* Delta mode (mode PFS_MODE_DELTA; tcp only): a new version of some data
 * (the target) to a receiver that holds an older one (the base), as
 * operations over the base (pfs/delta.h). blob, fingerprint, integrity
 * and the gram options are not used: the verdict is the rebuilt target's
 * SHA-256 against the sender's. */
struct pfs_xfer_delta_opts {
	const uint8_t *base; /* NULL with base_size 0: none (receiver: --no-base) */
	uint64_t base_size;
	int threads; /* encode/apply threads, 0: the CPUs this process may use */
	/* sender */
	const uint8_t *target;
	uint64_t target_size;
	int level; /* zstd level 0..19, 0: 3 */
	const struct pfs_delta_index *index; /* of base; NULL: built at setup */
	/* receiver: where the target is rebuilt. out_map(ctx, size) returns
	 * writable memory of @size bytes (NULL + errno: refused), called once
	 * the sender's size is known; NULL: malloc'd and freed. */
	uint8_t *(*out_map)(void *ctx, uint64_t size);
	void *out_ctx;
	struct pfs_delta_result *res; /* required: what the delta mode measured */
};

/* One transfer, either side: what both sides share, then one nested
 * struct per concern. host/port: where the sender connects or the
 * receiver binds (numeric IPv4/IPv6; "" binds any). */
struct pfs_xfer_opts {
	size_t sz; /* sizeof(struct pfs_xfer_opts) */
	const char *host;
	uint16_t port;
	enum pfs_gram_mode mode;
	const struct pfs_blob *blob; /* sender always; receiver for offset/arith */
	uint64_t fingerprint; /* of blob if already known, 0: compute it */
	int io_timeout_ms; /* no progress for this long is an error */
	enum pfs_integrity integrity; /* end-to-end checksum (CRC32C default) */
	struct pfs_xfer_send_opts send;
	struct pfs_xfer_recv_opts recv;
	struct pfs_xfer_link_opts link;
	struct pfs_xfer_embed_opts embed;
	struct pfs_xfer_delta_opts delta;
	struct pfs_xfer_auth_opts auth;
};

/* A payload receiver trusts the sender's blob size only this far unless told
 * otherwise (pfs recv --max-size): a fixed number, not the free space of the
 * file system, so whether a transfer is accepted does not depend on what
 * else the node holds at that moment. */
#define PFS_XFER_MAX_SIZE_DEFAULT (64ULL << 30)

struct pfs_xfer_ops; /* the transport's functions, internal to the engine */

/* One entry of the transport table (pfs_transport_find). */
struct pfs_transport {
	const char *name; /* --transport value: "tcp" */
	const char *label; /* label suffix: "TCP" */
	/* checksums besides CRC32C it runs: bit (1 << enum pfs_integrity) */
	unsigned int integrity_mask;
	/* takes the embed options, send.rate_max/src_ready and recv.on_exec
	 * (the datagram transports) */
	bool embeddable;
	const struct pfs_xfer_ops *ops;
};

/* pfs_transport_find - the transport called @name, or NULL. */
const struct pfs_transport *pfs_transport_find(const char *name);
/* pfs_transport_has_integrity - whether @t runs checksum @k (all run CRC32C). */
bool pfs_transport_has_integrity(const struct pfs_transport *t, enum pfs_integrity k);
/* pfs_transport_names - "tcp | udp | afxdp", for usage messages. */
const char *pfs_transport_names(void);

/* pfs_xfer_check - whether @o describes a transfer @t can run as the
 * sender (@sender) or the receiver; the one check of every transport's
 * options, which pfs_xfer_send/pfs_xfer_recv apply before anything else.
 * 0, or -EINVAL with r->error set: a bad @o (size, mode, integrity out of
 * range), a checksum @t does not run, an option only a datagram transport
 * takes (embed, rate_max, src_ready, on_exec) given to tcp, link.mtu
 * outside 576..65535; sender: no blob, desc_per_gram outside
 * 1..PFS_GRAM_MAX_DESC, payload gram_bytes outside 1..PFS_GRAM_MAX_PAYLOAD;
 * receiver: out_mem outside payload mode, offset/arith without a blob;
 * delta mode: a transport without it (all but tcp), no delta.res, a base
 * or target size without its bytes, a zstd level outside 0..19. */
int pfs_xfer_check(const struct pfs_transport *t, const struct pfs_xfer_opts *o, bool sender,
		   struct pfs_xfer_result *r);

/* pfs_xfer_send/pfs_xfer_recv - run one transfer over @t: zero @r (and,
 * delta mode, o->delta.res), check @o (pfs_xfer_check), then the
 * transport, or its delta mode. 0 when the transfer completed
 * (check r->verdict), else -errno with r->error set:
 * -ECONNREFUSED/-ETIMEDOUT/-EHOSTUNREACH connecting, -EPERM refused by the
 * peer (mode/fingerprint/version/params/limit; r->error says which),
 * -EPROTO malformed stream (decode errors are in r->stats), -ECONNRESET
 * peer vanished, -ETIMEDOUT no progress within io_timeout_ms, -EINVAL bad
 * options, -ENOMEM, -EADDRINUSE/-EACCES binding; udp and afxdp: -ENODEV no
 * such ifname; afxdp (pfs/afxdp.h): -EACCES a missing capability, -EBUSY
 * another XDP program, -EINTR stopped by link.stop; datagram senders:
 * -ECANCELED the source failed (src_ready). */
int pfs_xfer_send(const struct pfs_transport *t, const struct pfs_xfer_opts *o,
		  struct pfs_xfer_result *r);
int pfs_xfer_recv(const struct pfs_transport *t, const struct pfs_xfer_opts *o,
		  struct pfs_xfer_result *r);

/* pfs_xfer_ready - create @path (if not NULL) to tell a readiness probe the
 * receiver accepts senders now. Atomic (write + rename); 0 or -errno. */
int pfs_xfer_ready(const char *path);

#endif /* PFS_XFER_H */
