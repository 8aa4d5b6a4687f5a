/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: what the replication server and client share (blob_repl_io.c):
 * addresses, blocking socket I/O with timeouts, frames on a socket, the
 * AUTH MAC and the nonce. Not a public API. */
#ifndef PFS_BLOB_REPL_INT_H
#define PFS_BLOB_REPL_INT_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "pfs/blob_repl.h"
#include "wire/blob_repl_wire.h"
#include "pfs/xfer.h"

/* Why a server refused (REFUSE's offset field). */
enum repl_refuse {
	REPL_REFUSE_AUTH = 1, /* the MAC does not match: another token */
	REPL_REFUSE_SIZE = 2, /* the client's blob has another size */
	REPL_REFUSE_BUSY = 3, /* too many connections */
	REPL_REFUSE_REQUEST = 4, /* malformed AUTH, offset past the end */
	REPL_REFUSE_BASE = 5, /* DELTA asked, but this server holds no such base */
	REPL_REFUSE_STEPPED = 6, /* a relay that stepped aside serves no one until complete */
};

double repl_now(void); /* CLOCK_MONOTONIC seconds */
double repl_wall(void); /* CLOCK_REALTIME seconds */

/* "A.B.C.D:PORT" or "[V6]:PORT", numeric: 0 or -EINVAL. */
int repl_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len);
void repl_addr_str(const struct sockaddr_storage *ss, char *out, size_t n);
/* repl_parse_addr, else "NAME:PORT" resolved by DNS or /etc/hosts (the
 * first address). 0; -EINVAL malformed; -EAGAIN the name does not resolve
 * (not there yet, or the DNS server did not answer); -errno otherwise. */
int repl_resolve_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len);

/* SO_RCVTIMEO and SO_SNDTIMEO of @fd; 0 or -errno. */
int repl_set_timeout(int fd, int ms);

/* Blocking full read/write under the socket's timeouts: 0, -ECONNRESET
 * (EOF or reset), -ETIMEDOUT, -errno. */
int repl_read_full(int fd, void *buf, size_t len);
int repl_writev_full(int fd, struct iovec *iov, int cnt);

/* Encode and send @f: 0 or -errno. */
int repl_send_frame(int fd, const struct repl_frame *f);
/* A text frame (REFUSE, ERROR) with @code in its offset field; best effort. */
void repl_send_text(int fd, uint8_t type, uint64_t size, uint64_t code, const char *text);
/* The rest of a frame whose 32-byte header is in @hdr: read the body and
 * decode. 0 or -errno (the decoder's, or the socket's). */
int repl_read_frame(int fd, const uint8_t *hdr, struct repl_frame *f);

/* HMAC-SHA256(token, REPL_LABEL || nonce || le64 size [|| le32 @xport])
 * into @mac; @xport (repl_xport_word of the AUTH) only when not 0. 0 or
 * -EIO. */
int repl_mac(const char *token, size_t token_len, const uint8_t *nonce, uint64_t size,
	     uint32_t xport, uint8_t *mac);

static inline uint32_t repl_xport_word(const struct repl_frame *a)
{
	return (uint32_t)a->xport | (uint32_t)a->flags << 8 | (uint32_t)a->data_port << 16;
}

/* The MAC of AUTH @a answering a HELLO of @nonce and @size: repl_mac
 * with its xport word, the base too with DELTA (nobody on the path makes
 * a client ask for another base). */
int repl_auth_mac(const char *token, size_t token_len, const uint8_t *nonce, uint64_t size,
		  const struct repl_frame *a, uint8_t *mac);
/* 32 random bytes (getrandom): 0 or -errno. */
int repl_nonce(uint8_t *nonce);

/* ---- datagram replication (blob_repl_dgram.c) ---- */

const char *repl_xport_str(uint8_t xport); /* "tcp" | "udp" | "afxdp" */
int repl_xport_parse(const char *s, uint8_t *xport); /* 0 or -EINVAL */

/* What a server streams from. */
struct repl_dgram_src {
	const uint8_t *blob;
	uint64_t size;
	struct pfs_progress *progress; /* NULL: complete */
	atomic_bool *stop;
	const char *psk; /* the blob's token: mixed into the datagram key */
	size_t psk_len;
};

/* Server, after ACCEPT: send [auth->offset, size) to the client's data port
 * over the repair plane, @fd its control connection. 0 when the client
 * reported every byte with our checksum; else -errno (-ECANCELED: the fill
 * failed, the client was told; -EINTR: stopped), r->error says why. */
int repl_dgram_serve(int fd, const struct repl_frame *auth, struct repl_dgram_src *src,
		     uint64_t rate, int io_timeout_ms, struct pfs_xfer_result *r);

/* Where a client receives. */
struct repl_dgram_sink {
	uint8_t xport; /* REPL_XPORT_UDP | REPL_XPORT_AFXDP */
	uint16_t data_port;
	const char *ifname; /* afxdp; NULL: the interface of the local address */
	uint8_t *blob;
	uint64_t size;
	int (*on_exec)(void *ctx, uint64_t off, uint64_t len); /* in order */
	void *exec_ctx;
	int io_timeout_ms;
	const volatile sig_atomic_t *stop;
	char *const *env;
	const char *psk; /* the blob's token: mixed into the datagram key */
	size_t psk_len;
};

/* Client, after ACCEPT: receive into k->blob over the repair plane, @fd
 * its control connection. 0 or -errno with r->error (-ECANCELED: the
 * upstream's own fill failed). */
int repl_dgram_fetch(int fd, const struct repl_dgram_sink *k, struct pfs_xfer_result *r);

#endif /* PFS_BLOB_REPL_INT_H */
