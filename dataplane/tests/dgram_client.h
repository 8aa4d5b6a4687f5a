/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the datagram tests: a hand-made udp sender speaking the real
 * handshake with the library's own codec and key agreement (HELLO, PARAMS,
 * KEY -> ACCEPT, KEY), so a test can send whatever datagrams it likes with a
 * valid tag, or a wrong one. Runs in a forked child (blocking sockets). */
#ifndef PFS_TESTS_DGRAM_CLIENT_H
#define PFS_TESTS_DGRAM_CLIENT_H

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pfs/dgram_auth.h"
#include "pfs/gram.h"
#include "pfs/udp.h"

struct dclient {
	int s; /* control connection */
	int u; /* data socket, connected to the receiver */
	struct pfs_dgram_auth *auth;
	uint64_t pn;
	struct pfs_ctl answer; /* ACCEPT or REFUSE */
};

/* Connect @c to the receiver at @ip:@port (after joining the sender's
 * namespace): the data socket, then the control connection, retried while
 * the receiver starts listening. 0 or -1. */
__attribute__((unused)) static int dclient_connect(struct dclient *c, const char *ip, uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };

	c->s = -1;
	inet_pton(AF_INET, ip, &sa.sin_addr);
	c->u = socket(AF_INET, SOCK_DGRAM, 0);
	if (c->u < 0 || connect(c->u, (struct sockaddr *)&sa, sizeof(sa)))
		return -1;
	for (int i = 0; i < 100 && c->s < 0; i++) {
		c->s = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(c->s, (struct sockaddr *)&sa, sizeof(sa))) {
			close(c->s);
			c->s = -1;
			usleep(50000);
		}
	}
	return c->s < 0 ? -1 : 0;
}

/* HELLO @h, PARAMS @p (its b and c are set here), KEY (our public key, or
 * @bad_pub when not NULL); then the answer and, on ACCEPT, the receiver's
 * KEY and the datagram key. 0 accepted (c->auth set), 1 refused
 * (c->answer), -1 anything else. */
__attribute__((unused)) static int dclient_handshake(struct dclient *c, const struct pfs_ctl *h,
						     struct pfs_udp_rec *p, const uint8_t *bad_pub)
{
	uint8_t out[PFS_CTL_LEN + 2 * PFS_UDP_REC_LEN + PFS_UDP_KEY_BODY];
	uint8_t in[PFS_CTL_LEN + PFS_UDP_REC_LEN + PFS_UDP_KEY_BODY];
	uint8_t pub[PFS_UDP_KEY_PUB], peer[PFS_UDP_KEY_PUB], confirm[PFS_UDP_KEY_CONFIRM],
		mine[PFS_UDP_KEY_CONFIRM];
	struct sockaddr_storage la;
	socklen_t ll = sizeof(la);
	struct pfs_dgram_kx *kx = pfs_dgram_kx__new(pub);
	struct pfs_dgram_kdf_in kin = { .sender = true,
					.peer_pub = peer,
					.transcript = out,
					.transcript_len = PFS_CTL_LEN + PFS_UDP_REC_LEN };
	ssize_t got = 0;

	if (!kx || getsockname(c->u, (struct sockaddr *)&la, &ll))
		return -1;
	p->type = PFS_UDP_PARAMS;
	p->b = ntohs(((struct sockaddr_in *)&la)->sin_port);
	if (!p->c)
		p->c = PFS_UDP_SUITE_X25519_GMAC;
	pfs_ctl_encode(h, out);
	pfs_udp_rec_encode(p, NULL, out + PFS_CTL_LEN);
	pfs_udp_key_encode(bad_pub ? bad_pub : pub, NULL, out + PFS_CTL_LEN + PFS_UDP_REC_LEN);
	if (write(c->s, out, sizeof(out)) != (ssize_t)sizeof(out))
		return -1;
	while (got < PFS_CTL_LEN) {
		ssize_t n = read(c->s, in + got, PFS_CTL_LEN - got);

		if (n <= 0)
			return -1;
		got += n;
	}
	if (pfs_ctl_decode(in, PFS_CTL_LEN, &c->answer))
		return -1;
	if (c->answer.type != PFS_CTL_ACCEPT)
		return 1;
	while (got < (ssize_t)sizeof(in)) {
		ssize_t n = read(c->s, in + got, sizeof(in) - got);

		if (n <= 0)
			return -1;
		got += n;
	}
	if (pfs_udp_key_decode(in + PFS_CTL_LEN, sizeof(in) - PFS_CTL_LEN, peer, confirm))
		return -1;
	c->auth = pfs_dgram_kx__derive(kx, &kin, mine);
	pfs_dgram_kx__free(kx);
	return c->auth && pfs_dgram_confirm_equal(confirm, mine) ? 0 : -1;
}

/* One datagram: header @f (pn set here) + @bytes (f->frag_len of them),
 * tagged with our key when @seal, else with a tag of 0x5a bytes. */
__attribute__((unused)) static void dclient_frag(struct dclient *c, struct pfs_udp_frag *f,
						 const uint8_t *bytes, bool seal)
{
	uint8_t dg[PFS_UDP_FRAG_LEN + 65536];

	f->pn = c->pn++;
	pfs_udp_frag_encode(f, dg);
	memcpy(dg + PFS_UDP_FRAG_LEN, bytes, f->frag_len);
	if (seal)
		pfs_dgram_auth__seal(c->auth, dg, bytes, f->frag_len);
	else
		memset(dg + PFS_UDP_TAG_OFF, 0x5a, PFS_UDP_TAG_LEN);
	(void)!send(c->u, dg, PFS_UDP_FRAG_LEN + f->frag_len, 0);
}

#endif /* PFS_TESTS_DGRAM_CLIENT_H */
