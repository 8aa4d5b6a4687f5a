/* SPDX-License-Identifier: Apache-2.0 */
/* The messages of a blob holder's socket (pfs/blob_share.h): their sizes,
 * ops, statuses and the metadata a reply carries. The codec is
 * src/wire/blob_share_wire.h.
 *
 * Wire protocol (AF_UNIX SOCK_SEQPACKET: one request, one reply, each one
 * message; integers little-endian):
 *   request  "PFSQ" u16 version u16 op u16 token_len u16 0  token[token_len]
 *   reply    "PFSA" u16 version u16 status u64 size u64 fingerprint
 *            u32 page_kind u32 flags u64 accepted u64 refused
 *            u32 peer_pid u32 peer_uid u32 peer_gid u32 msg_len  msg[msg_len]
 * op GET with a valid token gets status OK and the blob fd as SCM_RIGHTS;
 * op PING gets the metadata but never an fd; a PING that carries a token
 * is refused unless the token is valid (an authenticated readiness check),
 * one without a token is answered regardless. Any other
 * request gets a non-zero status and a human-readable msg, then the holder
 * closes the connection. */
#ifndef PFS_SHARE_WIRE_H
#define PFS_SHARE_WIRE_H

#include <stdint.h>

#include "pfs/blob.h"

#define PFS_SHARE_VERSION 1
#define PFS_SHARE_TOKEN_MAX 1024 /* bytes, after trailing whitespace is cut */
#define PFS_SHARE_MSG_MAX 192
#define PFS_SHARE_REQ_HDR 12
#define PFS_SHARE_REPLY_HDR 64

enum pfs_share_op {
	PFS_SHARE_OP_GET = 1,
	PFS_SHARE_OP_PING = 2,
};

enum pfs_share_status {
	PFS_SHARE_OK = 0,
	PFS_SHARE_BAD_REQUEST, /* malformed, truncated or oversized */
	PFS_SHARE_BAD_VERSION,
	PFS_SHARE_BAD_TOKEN,
	PFS_SHARE_UID_DENIED, /* peer uid not in --allow-uid */
	PFS_SHARE_BUSY, /* too many clients at once */
	PFS_SHARE_TIMEOUT, /* no request within the client timeout */
	PFS_SHARE_INTERNAL, /* holder-side failure (token file, sendmsg) */
};

#define PFS_SHARE_F_READ_ONLY 0x1 /* the fd is O_RDONLY: map PROT_READ */
#define PFS_SHARE_F_FD 0x2 /* an fd rides with this reply */
/* The fd is of the blob's directory N.d (files layout, pfs/blob_files.h),
 * O_RDONLY|O_DIRECTORY: open tail and files/<name> beneath it and map them
 * back to back (pfs_blob__open_files_at). Without it the fd is the blob. */
#define PFS_SHARE_F_DIR 0x4

/* What the holder says about its blob (and what it saw of the caller). */
struct pfs_share_meta {
	uint16_t version;
	enum pfs_share_status status;
	uint64_t size;
	uint64_t fingerprint;
	enum pfs_page_kind page;
	uint32_t flags;
	uint64_t accepted, refused; /* holder counters at reply time */
	uint32_t peer_pid, peer_uid, peer_gid; /* SO_PEERCRED as the holder saw it */
	char msg[PFS_SHARE_MSG_MAX + 1];
};

#endif /* PFS_SHARE_WIRE_H */
