/* SPDX-License-Identifier: Apache-2.0 */
/* Blob sharing: one holder process keeps a named blob and hands its file
 * descriptor to consumers on the same node over a Unix socket (SCM_RIGHTS),
 * so consumers map the very same pages: no setup paid again, no hugepages
 * counted twice. Kubernetes has no cross-pod shared-memory object; a socket
 * in a per-namespace host directory plus a token from a Secret is the
 * narrowest channel that carries an fd between pods. The messages and
 * their layout are pfs/share_wire.h, which this header includes. */
#ifndef PFS_BLOB_SHARE_H
#define PFS_BLOB_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pfs/blob.h"
#include "pfs/share_wire.h"

const char *pfs_share_status_str(enum pfs_share_status s);

/* pfs_share_token_read - read a token file (a Kubernetes Secret key), cut
 * trailing whitespace. A token is text: it is passed on as a C string.
 * Returns the token length, or -errno: ENOENT/EACCES (open), EINVAL
 * (empty), E2BIG (over PFS_SHARE_TOKEN_MAX), EILSEQ (a NUL byte in the
 * token). @buf holds at least PFS_SHARE_TOKEN_MAX + 1 bytes and is
 * NUL-terminated. */
int pfs_share_token_read(const char *path, char *buf, size_t n);

/* pfs_share_token_strerror - what a pfs_share_token_read() error means, for
 * messages ("empty", "contains a NUL byte ...", else strerror). */
const char *pfs_share_token_strerror(int err);

/* pfs_share_token_equal - compare in time that depends only on the
 * lengths' upper bound (PFS_SHARE_TOKEN_MAX), never on where they differ. */
bool pfs_share_token_equal(const char *a, size_t alen, const char *b, size_t blen);

/* ---- consumer side ---- */

/* Options for pfs_blob__from_socket(); NULL means all defaults. */
struct pfs_share_client_opts {
	size_t sz; /* sizeof(struct pfs_share_client_opts) */
	int timeout_ms; /* connect + reply; 0: 5000 */
	bool no_verify; /* skip recomputing the fingerprint */
	bool no_prefault; /* skip MADV_POPULATE on the new mapping */
	struct pfs_share_meta *meta; /* out, optional: the holder's reply */
	double *attach_s; /* out, optional: seconds from connect to verified */
};

/* pfs_share_fetch - ask the holder at @path for its fd. On 0, *fd is the
 * received descriptor (O_CLOEXEC; caller closes). Errors (-errno):
 * ENOENT/ECONNREFUSED no holder, EACCES socket permission or token/uid
 * refused (meta->msg says which), EBUSY holder full, ETIMEDOUT, EPROTO
 * malformed reply or a refusal of our request, ENAMETOOLONG path. @meta is
 * filled whenever a reply arrived. */
int pfs_share_fetch(const char *path, const char *token, int timeout_ms, int *fd,
		    struct pfs_share_meta *meta);

/* pfs_share_ping - the holder answers (metadata only); with @token (may be
 * NULL) it must also accept that token. 0 or -errno as pfs_share_fetch. */
int pfs_share_ping(const char *path, const char *token, int timeout_ms,
		   struct pfs_share_meta *meta);

/* pfs_blob__from_socket - receive the holder's blob fd, map it MAP_SHARED
 * (read-only when the holder shares it read-only), check the size and the
 * fingerprint against the holder's record. A reply with PFS_SHARE_F_DIR
 * carries the N.d directory of a files-layout blob instead: the region is
 * built from the files beneath it (pfs_blob__open_files_at, read-only; the
 * blob's pfs_blob__layout is set). NULL + errno: as pfs_share_fetch, plus
 * EINVAL size differs from the record, EIO fingerprint differs (the blob
 * was modified after the holder started), ENOMEM mapping, and for a
 * directory the errors of pfs_blob__open_files_at (ELOOP a symlink,
 * EBADMSG a file of the wrong length or a bad manifest, ENOENT). The
 * reason is logged. */
struct pfs_blob *pfs_blob__from_socket(const char *path, const char *token,
				       const struct pfs_share_client_opts *opts);

/* ---- holder side ---- */

struct pfs_share_server_opts {
	size_t sz; /* sizeof(struct pfs_share_server_opts) */
	const char *socket_path; /* required; parent dirs created 0755 */
	const char *token_file; /* required; re-read for every client */
	const uid_t *allow_uids; /* NULL: any uid the socket mode lets in */
	int n_allow_uids;
	unsigned int socket_mode; /* 0: 0660 */
	gid_t socket_gid; /* (gid_t)-1: leave the holder's gid */
	int client_timeout_ms; /* 0: 5000 */
	int max_clients; /* 0: 64 */
	bool read_only; /* hand out an O_RDONLY fd */
	const char *ready_file; /* touched once listening, removed on exit */
};

struct pfs_share_server;

/* pfs_share_server__new - bind the socket for @blob (fingerprint @fp, as
 * computed by the caller). A socket file left by a dead holder is replaced;
 * a live holder on the path is not (EADDRINUSE); a non-socket file there is
 * never removed (EEXIST). NULL + errno: EINVAL options, EADDRINUSE, EEXIST,
 * EACCES, ENAMETOOLONG, ENOENT token file, ENOMEM. */
struct pfs_share_server *pfs_share_server__new(const struct pfs_blob *blob, uint64_t fp,
					       const struct pfs_share_server_opts *opts);

/* pfs_share_server__run - single-threaded poll loop; returns 0 once
 * @stop_fd is readable (the caller's signalfd of SIGTERM/SIGINT, an
 * eventfd...; it is not read: the caller may read why), -ENOMEM, or -errno
 * on a fatal error of the listening socket. @stop_fd < 0: run until such
 * an error. The server takes no signals itself. */
int pfs_share_server__run(struct pfs_share_server *s, int stop_fd);

/* Consumers given the fd and refused so far; safe from another thread
 * while pfs_share_server__run runs (a /metrics endpoint). */
void pfs_share_server__counts(const struct pfs_share_server *s, uint64_t *accepted,
			      uint64_t *refused);

/* Unlinks the socket (and ready file) and frees. */
void pfs_share_server__free(struct pfs_share_server *s);

#endif /* PFS_BLOB_SHARE_H */
