// SPDX-License-Identifier: Apache-2.0
/*
 * The token handshake of one transfer (pfs_xfer_auth_opts, pfs/gram.h
 * CHALLENGE and AUTH): the receiver's challenge, its check of a sender's
 * AUTH, and the sender's answer. Without a token none of this runs and the
 * handshake is the plain HELLO it always was. The MAC is libcrypto's
 * (pfs_ctl_auth_mac in dgram_auth.c); the nonce is the kernel's.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "pfs/dgram_auth.h"
#include "pfs/wire.h"
#include "util/random.h"
#include "wire/wire_le.h"
#include "xfer_ctl.h"

int pfs_xfer_challenge(int fd, uint8_t *nonce)
{
	struct pfs_ctl c = { .type = PFS_CTL_CHALLENGE };
	uint8_t rec[PFS_CTL_LEN];
	int err = pfs_random_fill(nonce, PFS_CTL_NONCE_LEN);

	if (err)
		return err;
	c.size = get64(nonce);
	c.value = get64(nonce + 8);
	pfs_ctl_encode(&c, rec);
	/* A fresh connection's send buffer always takes 40 bytes: never block
	 * the accept loop on one client. */
	if (send(fd, rec, sizeof(rec), MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(rec))
		return errno ? -errno : -EIO;
	return 0;
}

const char *pfs_xfer_auth_check(const struct pfs_xfer_auth_opts *auth, const uint8_t *nonce,
				const uint8_t *recs)
{
	uint8_t want[PFS_CTL_MAC_LEN], got[PFS_CTL_MAC_LEN];
	struct pfs_ctl a;
	unsigned int diff = 0;

	if (pfs_ctl_decode(recs + PFS_CTL_LEN, PFS_CTL_LEN, &a) || a.type != PFS_CTL_AUTH)
		return "its HELLO is not followed by an AUTH (a sender without the "
		       "transfer's token, or not a sender)";
	if (pfs_ctl_auth_mac(auth->token, auth->token_len, nonce, recs, want))
		return "cannot compute the MAC (this pfs has no libcrypto)";
	put64(got, a.size);
	put64(got + 8, a.value);
	put64(got + 16, a.count);
	/* Constant time: where a forged MAC differs must not show. */
	for (size_t i = 0; i < sizeof(want); i++)
		diff |= want[i] ^ got[i];
	return diff ? "its AUTH does not verify (another token)" : NULL;
}

int pfs_xfer_hello_auth(int fd, const struct pfs_xfer_auth_opts *auth, const uint8_t *hello,
			uint8_t *rec, struct pfs_xfer_result *r)
{
	uint8_t ch[PFS_CTL_LEN], nonce[PFS_CTL_NONCE_LEN], mac[PFS_CTL_MAC_LEN];
	struct pfs_ctl c;
	int err;

	if (!auth || !auth->token)
		return 0;
	err = pfs_xfer_read_full(fd, ch, sizeof(ch), &r->wire_bytes);
	if (err)
		return pfs_xfer_fail(r, err,
				     "send: waiting for %s's CHALLENGE: %s (a sender with "
				     "--token-file needs a receiver started with one)",
				     r->peer, pfs_xfer_io_what(err));
	if (pfs_ctl_decode(ch, sizeof(ch), &c) || c.type != PFS_CTL_CHALLENGE)
		return pfs_xfer_fail(r, -EPROTO,
				     "send: %s did not open with a CHALLENGE: it is not a "
				     "receiver started with --token-file",
				     r->peer);
	put64(nonce, c.size);
	put64(nonce + 8, c.value);
	err = pfs_ctl_auth_mac(auth->token, auth->token_len, nonce, hello, mac);
	if (err)
		return pfs_xfer_fail(r, err, "send: cannot compute the AUTH MAC: %s",
				     err == -ENOTSUP ? "this pfs was built without libcrypto" :
						       "libcrypto failed");
	c = (struct pfs_ctl){ .type = PFS_CTL_AUTH,
			      .size = get64(mac),
			      .value = get64(mac + 8),
			      .count = get64(mac + 16) };
	pfs_ctl_encode(&c, rec);
	return PFS_CTL_LEN;
}
