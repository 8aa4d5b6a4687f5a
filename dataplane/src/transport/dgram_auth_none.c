// SPDX-License-Identifier: Apache-2.0
/*
 * Datagram authentication in a build without libcrypto (the arm64 cross
 * build, -DPFS_NO_SOURCE; the Makefile leaves dgram_auth.c out there): the
 * same API failing with ENOTSUP, so a udp/afxdp transfer is refused with a
 * message instead of running unauthenticated. Empty in every other build.
 */
#ifdef PFS_NO_SOURCE
#include <errno.h>
#include <stddef.h>

#include "pfs/dgram_auth.h"

struct pfs_dgram_kx *pfs_dgram_kx__new(uint8_t *pub)
{
	(void)pub;
	errno = ENOTSUP;
	return NULL;
}

void pfs_dgram_kx__free(struct pfs_dgram_kx *kx)
{
	(void)kx;
}

struct pfs_dgram_auth *pfs_dgram_kx__derive(const struct pfs_dgram_kx *kx,
					    const struct pfs_dgram_kdf_in *in, uint8_t *confirm)
{
	(void)kx;
	(void)in;
	(void)confirm;
	errno = ENOTSUP;
	return NULL;
}

struct pfs_dgram_auth *pfs_dgram_auth__from_key(const uint8_t *key)
{
	(void)key;
	errno = ENOTSUP;
	return NULL;
}

int pfs_dgram_auth__seal(struct pfs_dgram_auth *a, uint8_t *hdr, const uint8_t *frag, size_t len)
{
	(void)a;
	(void)hdr;
	(void)frag;
	(void)len;
	return -ENOTSUP;
}

bool pfs_dgram_auth__verify(struct pfs_dgram_auth *a, const uint8_t *p, size_t len)
{
	(void)a;
	(void)p;
	(void)len;
	return false;
}

void pfs_dgram_auth__free(struct pfs_dgram_auth *a)
{
	(void)a;
}

int pfs_ctl_auth_mac(const void *token, size_t token_len, const uint8_t *nonce,
		     const uint8_t *hello, uint8_t *mac)
{
	(void)token;
	(void)token_len;
	(void)nonce;
	(void)hello;
	(void)mac;
	return -ENOTSUP;
}

bool pfs_dgram_confirm_equal(const uint8_t *a, const uint8_t *b)
{
	(void)a;
	(void)b;
	return false;
}
#endif /* PFS_NO_SOURCE */
