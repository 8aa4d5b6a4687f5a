/* SPDX-License-Identifier: Apache-2.0 */
/* Datagram authentication of the datagram transports (udp, afxdp): a key
 * agreed per transfer on the TCP control connection, and a tag on every data
 * datagram that the receiver checks before the datagram touches any state.
 * docs/design/wire-format.md ("Datagram authentication") has the bytes,
 * docs/design/security.md the threat model.
 *
 *   sender                                 receiver
 *   HELLO, PARAMS (c: suite), KEY(pub_s) ->
 *                                        <- ACCEPT, KEY(pub_r, confirm)
 *
 * Each side makes an ephemeral X25519 key pair (pfs_dgram_kx__new). From the
 * shared secret, HKDF-SHA256 (salt: a label and the caller's pre-shared
 * secret, if any; info: the label, the HELLO and PARAMS bytes and both
 * public keys) gives 32 bytes: the AES-128 datagram key and a 16-byte key
 * confirmation that the receiver sends and the sender compares, so a public
 * key changed on the path fails the handshake at once, with a message,
 * instead of every datagram failing its tag. A fresh key per transfer makes
 * every datagram of an earlier transfer fail.
 *
 * The tag: AES-128-GCM with no plaintext (GMAC) over the fragment header
 * before the tag and the fragment bytes, nonce = le32 direction (1: sender
 * to receiver) || le64 pn, pn the datagram number in the header, which the
 * sender never repeats within a transfer.
 *
 * Objects are owned by one thread (the transport's). A build without
 * libcrypto (the arm64 cross build) has the same API failing with ENOTSUP. */
#ifndef PFS_DGRAM_AUTH_H
#define PFS_DGRAM_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pfs/udp.h"

struct pfs_dgram_kx; /* one side's ephemeral key pair */
struct pfs_dgram_auth; /* the datagram key of one transfer */

/* pfs_dgram_kx__new - a fresh X25519 key pair; its public key into @pub
 * (PFS_UDP_KEY_PUB bytes). NULL with errno ENOTSUP (no libcrypto in this
 * build), ENOMEM, or EIO (libcrypto failed). */
struct pfs_dgram_kx *pfs_dgram_kx__new(uint8_t *pub);
void pfs_dgram_kx__free(struct pfs_dgram_kx *kx);

/* What both ends feed the key derivation. */
struct pfs_dgram_kdf_in {
	bool sender; /* which end calls: orders the two public keys */
	const uint8_t *peer_pub; /* PFS_UDP_KEY_PUB bytes */
	const void *psk; /* a secret both ends hold already (blob replication:
			  * the blob's token), or NULL: an active man in the
			  * middle without it cannot learn the key either */
	size_t psk_len;
	const void *transcript; /* the HELLO and PARAMS records as sent */
	size_t transcript_len;
};

/* pfs_dgram_kx__derive - the transfer's datagram key from @kx and @in, and
 * the key confirmation into @confirm (PFS_UDP_KEY_CONFIRM bytes). NULL with
 * errno EINVAL (the peer's public key is not a usable X25519 key: a low-order
 * point gives an all-zero secret), ENOMEM, EIO, ENOTSUP. */
struct pfs_dgram_auth *pfs_dgram_kx__derive(const struct pfs_dgram_kx *kx,
					    const struct pfs_dgram_kdf_in *in, uint8_t *confirm);

/* pfs_dgram_auth__from_key - the tagger of a raw 16-byte AES key (what
 * derive makes; tests check the tags against AES-128-GCM with it). NULL
 * with errno ENOMEM, EIO, ENOTSUP. */
struct pfs_dgram_auth *pfs_dgram_auth__from_key(const uint8_t *key);

/* pfs_dgram_auth__seal - write the tag of the datagram whose header is @hdr
 * (PFS_UDP_FRAG_LEN bytes, pn and everything but the tag filled) and whose
 * fragment bytes are @frag[0..len). 0, or -EIO. */
int pfs_dgram_auth__seal(struct pfs_dgram_auth *a, uint8_t *hdr, const uint8_t *frag, size_t len);

/* pfs_dgram_auth__verify - whether the datagram @p of @len bytes (at least
 * PFS_UDP_FRAG_LEN) carries the tag of this transfer's key. Constant time
 * in the tag. */
bool pfs_dgram_auth__verify(struct pfs_dgram_auth *a, const uint8_t *p, size_t len);

void pfs_dgram_auth__free(struct pfs_dgram_auth *a);

/* pfs_ctl_auth_mac - the MAC of a transfer's HELLO (PFS_CTL_AUTH):
 * HMAC-SHA256(token, "pfs-xfer-v1" || @nonce (PFS_CTL_NONCE_LEN bytes) ||
 * @hello (the PFS_CTL_LEN bytes as sent)), its first PFS_CTL_MAC_LEN bytes
 * into @mac. 0, -ENOTSUP (no libcrypto in this build) or -EIO. */
int pfs_ctl_auth_mac(const void *token, size_t token_len, const uint8_t *nonce,
		     const uint8_t *hello, uint8_t *mac);

/* pfs_dgram_confirm_equal - compare two key confirmations in constant time. */
bool pfs_dgram_confirm_equal(const uint8_t *a, const uint8_t *b);

#endif /* PFS_DGRAM_AUTH_H */
