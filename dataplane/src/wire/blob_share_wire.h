/* SPDX-License-Identifier: Apache-2.0 */
/* Encoding of the blob-share request and reply (layout in pfs/share_wire.h).
 * Private to blob_share.c and blob_share_server.c; every decoder checks the
 * length it was given before reading, because both directions cross a trust
 * boundary. */
#ifndef PFS_BLOB_SHARE_WIRE_H
#define PFS_BLOB_SHARE_WIRE_H

#include <errno.h>
#include <string.h>

#include "pfs/share_wire.h"
#include "wire/wire_le.h"

#define SHARE_REQ_MAGIC "PFSQ"
#define SHARE_REPLY_MAGIC "PFSA"
#define SHARE_REQ_MAX (PFS_SHARE_REQ_HDR + PFS_SHARE_TOKEN_MAX)
#define SHARE_REPLY_MAX (PFS_SHARE_REPLY_HDR + PFS_SHARE_MSG_MAX)

/* Request into @buf (SHARE_REQ_MAX bytes); returns its length. */
static inline size_t share_req_encode(uint8_t *buf, uint16_t version, enum pfs_share_op op,
				      const char *token, size_t token_len)
{
	memcpy(buf, SHARE_REQ_MAGIC, 4);
	put16(buf + 4, version);
	put16(buf + 6, (uint16_t)op);
	put16(buf + 8, (uint16_t)token_len);
	put16(buf + 10, 0);
	if (token_len)
		memcpy(buf + PFS_SHARE_REQ_HDR, token, token_len);
	return PFS_SHARE_REQ_HDR + token_len;
}

/* A decoded request; token points into the buffer it was decoded from. */
struct share_req {
	uint16_t version;
	uint16_t op;
	uint16_t token_len;
	const uint8_t *token;
};

/* 0 for a well-formed request of this version; -EPROTO when @buf[0..len)
 * is not a request at all (length, magic), -EPROTONOSUPPORT for another
 * version (r->version says which), -EINVAL for an unknown op or a token
 * length that disagrees with @len or exceeds PFS_SHARE_TOKEN_MAX. */
static inline int share_req_decode(const uint8_t *buf, size_t len, struct share_req *r)
{
	memset(r, 0, sizeof(*r));
	if (len < PFS_SHARE_REQ_HDR || memcmp(buf, SHARE_REQ_MAGIC, 4))
		return -EPROTO;
	r->version = get16(buf + 4);
	r->op = get16(buf + 6);
	r->token_len = get16(buf + 8);
	if (r->version != PFS_SHARE_VERSION)
		return -EPROTONOSUPPORT;
	if ((r->op != PFS_SHARE_OP_GET && r->op != PFS_SHARE_OP_PING) ||
	    r->token_len > PFS_SHARE_TOKEN_MAX || len != PFS_SHARE_REQ_HDR + (size_t)r->token_len)
		return -EINVAL;
	r->token = buf + PFS_SHARE_REQ_HDR;
	return 0;
}

/* Reply into @buf (SHARE_REPLY_MAX bytes); returns its length. */
static inline size_t share_reply_encode(uint8_t *buf, const struct pfs_share_meta *m)
{
	size_t ml = strnlen(m->msg, PFS_SHARE_MSG_MAX);

	memcpy(buf, SHARE_REPLY_MAGIC, 4);
	put16(buf + 4, m->version);
	put16(buf + 6, (uint16_t)m->status);
	put64(buf + 8, m->size);
	put64(buf + 16, m->fingerprint);
	put32(buf + 24, (uint32_t)m->page);
	put32(buf + 28, m->flags);
	put64(buf + 32, m->accepted);
	put64(buf + 40, m->refused);
	put32(buf + 48, m->peer_pid);
	put32(buf + 52, m->peer_uid);
	put32(buf + 56, m->peer_gid);
	put32(buf + 60, (uint32_t)ml);
	memcpy(buf + PFS_SHARE_REPLY_HDR, m->msg, ml);
	return PFS_SHARE_REPLY_HDR + ml;
}

/* 0, or -EPROTO when @buf[0..len) is not exactly one well-formed reply. */
static inline int share_reply_decode(const uint8_t *buf, size_t len, struct pfs_share_meta *m)
{
	uint32_t ml, page;

	memset(m, 0, sizeof(*m));
	if (len < PFS_SHARE_REPLY_HDR || memcmp(buf, SHARE_REPLY_MAGIC, 4))
		return -EPROTO;
	ml = get32(buf + 60);
	page = get32(buf + 24);
	if (ml > PFS_SHARE_MSG_MAX || len != PFS_SHARE_REPLY_HDR + ml || page > PFS_PAGE_1G)
		return -EPROTO;
	m->version = get16(buf + 4);
	m->status = (enum pfs_share_status)get16(buf + 6);
	m->size = get64(buf + 8);
	m->fingerprint = get64(buf + 16);
	m->page = (enum pfs_page_kind)page;
	m->flags = get32(buf + 28);
	m->accepted = get64(buf + 32);
	m->refused = get64(buf + 40);
	m->peer_pid = get32(buf + 48);
	m->peer_uid = get32(buf + 52);
	m->peer_gid = get32(buf + 56);
	memcpy(m->msg, buf + PFS_SHARE_REPLY_HDR, ml);
	/* The message is shown to humans: keep it printable. */
	for (uint32_t i = 0; i < ml; i++)
		if (m->msg[i] < 0x20 || m->msg[i] > 0x7e)
			m->msg[i] = '?';
	m->msg[ml] = '\0';
	return 0;
}

#endif /* PFS_BLOB_SHARE_WIRE_H */
