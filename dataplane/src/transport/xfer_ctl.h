/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: what the tcp and udp transports share on their TCP control
 * connection (tcp carries the grams on it too; udp only the handshake, the
 * repair records and the verdict). Not a public API. */
#ifndef PFS_XFER_CTL_H
#define PFS_XFER_CTL_H

#include <signal.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "pfs/gram.h"
#include "pfs/xfer.h"

double pfs_xfer_now(void); /* CLOCK_MONOTONIC seconds */
void pfs_xfer_cpu(double *user, double *sys); /* getrusage(RUSAGE_SELF) */

/* Format @fmt into r->error, log it, return @err. */
int pfs_xfer_fail(struct pfs_xfer_result *r, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Numeric IPv4/IPv6 @host ("" or NULL: 0.0.0.0) and @port: 0 or -EINVAL. */
int pfs_xfer_parse_addr(const char *host, uint16_t port, struct sockaddr_storage *ss,
			socklen_t *len);
void pfs_xfer_addr_str(const struct sockaddr_storage *ss, char *out, size_t n);

/* errno of a socket call -> -errno (EAGAIN -> -ETIMEDOUT, EPIPE -> -ECONNRESET). */
int pfs_xfer_io_err(int e);
/* Text for an -errno from the calls below ("peer closed the connection"...). */
const char *pfs_xfer_io_what(int err);
const char *pfs_xfer_refuse_str(uint32_t code);

/* Blocking full writes; add what was written to *wire. 0 or -errno. */
int pfs_xfer_writev_full(int fd, struct iovec *iov, int cnt, uint64_t *wire);
int pfs_xfer_write_full(int fd, const void *buf, size_t len, uint64_t *wire);
/* Blocking full read of @len bytes: 0, -ECONNRESET on EOF, -ETIMEDOUT. */
int pfs_xfer_read_full(int fd, void *buf, size_t len, uint64_t *wire);
int pfs_xfer_send_ctl(int fd, const struct pfs_ctl *c, uint64_t *wire);
/* Receiver --out: pwrite @len bytes at @off, retrying short writes. 0 or
 * -errno with r->error set. */
int pfs_xfer_out_write(int fd, const uint8_t *p, size_t len, uint64_t off,
		       struct pfs_xfer_result *r);

/* Receiver: bind + listen on host:port (TCP). Returns the listening fd or
 * -errno (-EINVAL address, -EADDRINUSE, -EACCES) with r->error set. */
int pfs_xfer_listen(const char *host, uint16_t port, const char *who, struct pfs_xfer_result *r);
/* Receiver: how pfs_xfer_accept_hello waits. */
struct pfs_xfer_accept_opts {
	int accept_timeout_ms; /* for a connection that completes its HELLO */
	int hello_timeout_ms; /* each connection's whole HELLO must arrive within this */
	int io_timeout_ms; /* set on the chosen connection */
	const char *ready_file; /* NULL, or created before waiting */
	const volatile sig_atomic_t *stop; /* NULL, or non-zero: stop (-EINTR) */
	const struct pfs_xfer_auth_opts *auth; /* NULL or no token: no CHALLENGE */
};

/* Receiver: accept senders on @lfd until one has sent a whole HELLO (a
 * valid record, or one of another protocol version, to be refused), copied
 * to @hello (PFS_CTL_LEN bytes). Up to 8 connections wait for their HELLO
 * at once, each for hello_timeout_ms, so a silent or slow client cannot
 * hold the receiver while the real sender is refused; the others are
 * dropped (logged, then counted). Closes @lfd. Sets r->peer. The fd or
 * -errno: -ETIMEDOUT no HELLO within accept_timeout_ms, -EINTR stopped. */
int pfs_xfer_accept_hello(int lfd, const struct pfs_xfer_accept_opts *ao, uint8_t *hello,
			  struct pfs_xfer_result *r);

/* Receiver (xfer_auth.c): a fresh nonce into @nonce (PFS_CTL_NONCE_LEN
 * bytes) and the CHALLENGE carrying it sent on the new connection @fd
 * without blocking. 0 or -errno. */
int pfs_xfer_challenge(int fd, uint8_t *nonce);
/* Receiver: whether @recs (a HELLO then an AUTH, 2 * PFS_CTL_LEN bytes as
 * received) carry the MAC of @nonce and that HELLO under @auth's token:
 * NULL when they do, else why not. */
const char *pfs_xfer_auth_check(const struct pfs_xfer_auth_opts *auth, const uint8_t *nonce,
				const uint8_t *recs);

/* Sender: HELLO @h, and its AUTH when @auth has a token
 * (pfs_xfer_hello_auth). 0 or -errno with r->error set. */
int pfs_xfer_send_hello(int fd, const struct pfs_ctl *h, const struct pfs_xfer_auth_opts *auth,
			uint64_t *wire, struct pfs_xfer_result *r);

/* Sender: the AUTH that must follow HELLO @hello (its PFS_CTL_LEN bytes as
 * they will be sent) when @auth has a token: reads the receiver's
 * CHALLENGE from @fd (under the socket's timeout) and encodes the AUTH into
 * @rec. Returns the bytes of @rec to send after the HELLO (0 without a
 * token, PFS_CTL_LEN with one) or -errno with r->error set. */
int pfs_xfer_hello_auth(int fd, const struct pfs_xfer_auth_opts *auth, const uint8_t *hello,
			uint8_t *rec, struct pfs_xfer_result *r);

/* Blocking full read of @len bytes that gives up at @deadline
 * (pfs_xfer_now() seconds): 0, -ECONNRESET on EOF, -ETIMEDOUT. */
int pfs_xfer_read_by(int fd, void *buf, size_t len, double deadline, uint64_t *wire);

/* Sender: connect, retrying refused connects for @connect_timeout_ms.
 * Sets r->peer. fd or -errno. */
int pfs_xfer_connect(const char *host, uint16_t port, int connect_timeout_ms, int io_timeout_ms,
		     struct pfs_xfer_result *r);

/* Either side, pfs_xfer_opts.ctl_given: the caller's connected control
 * socket @fd; sets r->peer. Returns @fd. */
int pfs_xfer_given_ctl(int fd, struct pfs_xfer_result *r);

/* What a receiver accepts: its mode and checksum, its blob (payload mode:
 * none, blob_size and fp 0), its --out file (-1: none) and the largest blob
 * a payload sender may claim (0: PFS_XFER_MAX_SIZE_DEFAULT). */
struct pfs_xfer_terms {
	enum pfs_gram_mode mode;
	enum pfs_integrity integrity;
	uint64_t blob_size, fp;
	int out_fd;
	uint64_t max_size;
	uint64_t max_work; /* 0: no bound (pfs_xfer_recv_opts.max_work) */
	uint64_t out_mem_size; /* payload into the receiver's blob: its size, which the
				* sender's must equal; 0: none */
};

/* The HELLO a sender of @o sends (gram modes): its mode and checksum, its
 * blob's size and fingerprint @fp, the effective bytes it plans and its
 * descriptors per gram. The same bytes from every transport. */
struct pfs_ctl pfs_xfer_hello_of(const struct pfs_xfer_opts *o, uint64_t fp);
/* The terms a receiver of @o judges a HELLO by (pfs_xfer_hello_check),
 * its blob's fingerprint @fp (0 without a blob). */
struct pfs_xfer_terms pfs_xfer_terms_of(const struct pfs_xfer_opts *o, uint64_t fp);

/* The receiver's RESULT record for @r (gram modes): OK unless the verdict
 * is MISMATCH, its counts, its decode errors and its CRC32C. */
struct pfs_ctl pfs_xfer_result_of(const struct pfs_xfer_result *r);

/* What a receiver agreed to with an accepted HELLO. */
struct pfs_xfer_agreed {
	uint64_t bound; /* descriptors must lie inside [0, bound) */
	uint64_t planned; /* effective bytes the sender announced (HELLO count): the most
			   * the receiver executes; a gram past it ends the transfer */
};

/* Receiver: judge the sender's HELLO (@raw, PFS_CTL_LEN bytes) against @t.
 * Fills @ans with ACCEPT or REFUSE (the caller sends it) and @ag; sizes
 * t->out_fd to ag->bound. 0 accept, -EPERM refuse, -EPROTO not a HELLO;
 * r->error set. */
int pfs_xfer_hello_check(const uint8_t *raw, const struct pfs_xfer_terms *t,
			 struct pfs_xfer_agreed *ag, struct pfs_ctl *ans,
			 struct pfs_xfer_result *r);
/* Sender: judge the receiver's answer @raw to our HELLO @h. 0 accepted,
 * -EPERM refused, -EPROTO garbage; r->error set. */
int pfs_xfer_answer_check(const uint8_t *raw, const struct pfs_ctl *h, uint64_t fp,
			  struct pfs_xfer_result *r);

#endif /* PFS_XFER_CTL_H */
