// SPDX-License-Identifier: Apache-2.0
/*
 * Datagram authentication of the udp transport (issue 17, item 1): forged
 * or replayed datagrams must never execute, stall or abort a transfer, and
 * a tampered handshake must fail at once with a message.
 *
 * First the key agreement and the tag without a network (the tag is
 * AES-128-GCM's over the same bytes; any changed byte, another pn, another
 * pre-shared secret or transcript fails). Then, over a real veth pair
 * between two namespaces this test creates and removes (tests/netns.h), a
 * real `pfs send` -> `pfs recv` transfer while a hostile injector in the
 * sender's namespace sends datagrams to the receiver's data port with the
 * sender's own source address and port (raw IPv4 socket, the port read from
 * /proc/net/udp): a wrong gram length for every sequence the transfer will
 * reach, undecodable one-fragment grams, datagrams captured from an earlier
 * transfer, garbage. Each transfer must end OK with the forged datagrams
 * counted. The handshake: a man in the middle swapping the sender's public
 * key, an unusable public key, and a sender without authentication.
 *
 * Needs root (netns, veth, raw sockets); otherwise the network tests SKIP.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <openssl/evp.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pfs/dgram_auth.h"
#include "pfs/gram.h"
#include "pfs/udp.h"
#include "dgram_client.h"
#include "netns.h"

static int port = 7950;

/* ---- key agreement and tags (no network) ---- */

/* Both ends of one handshake; 0 or -1. */
static int agree(const void *psk_s, const void *psk_r, const char *tr_s, const char *tr_r,
		 struct pfs_dgram_auth **as, struct pfs_dgram_auth **ar, uint8_t *cs, uint8_t *cr)
{
	uint8_t ps[PFS_UDP_KEY_PUB], pr[PFS_UDP_KEY_PUB];
	struct pfs_dgram_kx *ks = pfs_dgram_kx__new(ps), *kr = pfs_dgram_kx__new(pr);
	struct pfs_dgram_kdf_in is = { .sender = true,
				       .peer_pub = pr,
				       .psk = psk_s,
				       .psk_len = psk_s ? strlen(psk_s) : 0,
				       .transcript = tr_s,
				       .transcript_len = strlen(tr_s) },
				ir = { .peer_pub = ps,
				       .psk = psk_r,
				       .psk_len = psk_r ? strlen(psk_r) : 0,
				       .transcript = tr_r,
				       .transcript_len = strlen(tr_r) };

	if (!ks || !kr)
		return -1;
	*as = pfs_dgram_kx__derive(ks, &is, cs);
	*ar = pfs_dgram_kx__derive(kr, &ir, cr);
	pfs_dgram_kx__free(ks);
	pfs_dgram_kx__free(kr);
	return *as && *ar ? 0 : -1;
}

static int t_agree(void)
{
	struct pfs_dgram_auth *as, *ar;
	uint8_t cs[PFS_UDP_KEY_CONFIRM], cr[PFS_UDP_KEY_CONFIRM], dg[PFS_UDP_FRAG_LEN + 300];
	struct pfs_udp_frag f = { .frag_len = 300, .seq = 5, .gram_len = 1000, .pn = 42 };

	CHECK(!agree("tok", "tok", "hello", "hello", &as, &ar, cs, cr), "derive");
	CHECK(pfs_dgram_confirm_equal(cs, cr), "the two ends' confirmations differ");
	pfs_udp_frag_encode(&f, dg);
	for (int i = 0; i < 300; i++)
		dg[PFS_UDP_FRAG_LEN + i] = (uint8_t)(i * 7);
	CHECK(!pfs_dgram_auth__seal(as, dg, dg + PFS_UDP_FRAG_LEN, 300), "seal");
	CHECK(pfs_dgram_auth__verify(ar, dg, sizeof(dg)), "the receiver rejects a sealed datagram");
	/* Every byte counts: header before the tag, the tag, the fragment. */
	for (size_t i = 0; i < sizeof(dg); i++) {
		dg[i] ^= 0x10;
		CHECK(!pfs_dgram_auth__verify(ar, dg, sizeof(dg)), "byte %zu not covered", i);
		dg[i] ^= 0x10;
	}
	CHECK(!pfs_dgram_auth__verify(ar, dg, sizeof(dg) - 1), "a shorter datagram verifies");
	pfs_dgram_auth__free(as);
	pfs_dgram_auth__free(ar);
	/* Another token or another transcript: another key, seen at once. */
	CHECK(!agree("tok", "other", "hello", "hello", &as, &ar, cs, cr), "derive (psk)");
	CHECK(!pfs_dgram_confirm_equal(cs, cr), "another pre-shared secret, same key");
	pfs_dgram_auth__free(as);
	pfs_dgram_auth__free(ar);
	CHECK(!agree(NULL, NULL, "hello", "hellp", &as, &ar, cs, cr), "derive (transcript)");
	CHECK(!pfs_dgram_confirm_equal(cs, cr), "another transcript, same key");
	pfs_dgram_auth__free(as);
	pfs_dgram_auth__free(ar);
	return TAP_PASS;
}

/* A public key of zeros (a low-order point: all-zero secret) is refused. */
static int t_bad_pub(void)
{
	uint8_t pub[PFS_UDP_KEY_PUB], zero[PFS_UDP_KEY_PUB] = { 0 }, c[PFS_UDP_KEY_CONFIRM];
	struct pfs_dgram_kx *kx = pfs_dgram_kx__new(pub);
	struct pfs_dgram_kdf_in in = { .peer_pub = zero, .transcript = "x", .transcript_len = 1 };
	struct pfs_dgram_auth *a;

	CHECK(kx, "key pair: %s", strerror(errno));
	errno = 0;
	a = pfs_dgram_kx__derive(kx, &in, c);
	CHECK(!a && errno == EINVAL, "derive from a zero key: %p errno %d", (void *)a, errno);
	pfs_dgram_kx__free(kx);
	return TAP_PASS;
}

/* The tag is AES-128-GCM's with an empty plaintext: same key, nonce
 * (le32 1 || le64 pn) and AAD (header before the tag, then the bytes). */
static int t_gmac_is_gcm(void)
{
	uint8_t key[16], dg[PFS_UDP_FRAG_LEN + 1440], iv[12] = { 1, 0, 0, 0 }, tag[16];
	struct pfs_udp_frag f = {
		.frag_len = 1440, .seq = 9, .gram_len = 5000, .pn = 0x1122334455
	};
	struct pfs_dgram_auth *a;
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	int n;

	for (int i = 0; i < 16; i++)
		key[i] = (uint8_t)(0xa0 + i);
	a = pfs_dgram_auth__from_key(key);
	CHECK(a && c, "setup");
	pfs_udp_frag_encode(&f, dg);
	memset(dg + PFS_UDP_FRAG_LEN, 0x3c, 1440);
	CHECK(!pfs_dgram_auth__seal(a, dg, dg + PFS_UDP_FRAG_LEN, 1440), "seal");
	memcpy(iv + 4, dg + 28, 8);
	CHECK(EVP_EncryptInit_ex(c, EVP_aes_128_gcm(), NULL, key, iv) == 1 &&
		      EVP_EncryptUpdate(c, NULL, &n, dg, PFS_UDP_TAG_OFF) == 1 &&
		      EVP_EncryptUpdate(c, NULL, &n, dg + PFS_UDP_FRAG_LEN, 1440) == 1 &&
		      EVP_EncryptFinal_ex(c, tag, &n) == 1 &&
		      EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16, tag) == 1,
	      "EVP AES-128-GCM");
	CHECK(!memcmp(tag, dg + PFS_UDP_TAG_OFF, 16), "the tag is not AES-128-GCM's");
	EVP_CIPHER_CTX_free(c);
	pfs_dgram_auth__free(a);
	return TAP_PASS;
}

static int t_key_codec(void)
{
	uint8_t b[PFS_UDP_REC_LEN + PFS_UDP_KEY_BODY], pub[32], conf[16], p2[32], c2[16];
	int len;

	memset(pub, 0x42, sizeof(pub));
	memset(conf, 0x17, sizeof(conf));
	len = pfs_udp_key_encode(pub, conf, b);
	CHECK(len == (int)sizeof(b), "length %d", len);
	CHECK(!pfs_udp_key_decode(b, sizeof(b), p2, c2) && !memcmp(p2, pub, 32) &&
		      !memcmp(c2, conf, 16),
	      "round trip");
	CHECK(pfs_udp_key_decode(b, sizeof(b) - 1, p2, c2) == -EMSGSIZE, "short body");
	b[PFS_UDP_REC_LEN + 3] ^= 1;
	CHECK(pfs_udp_key_decode(b, sizeof(b), p2, c2) == -EILSEQ, "body crc");
	b[PFS_UDP_REC_LEN + 3] ^= 1;
	b[8] = 2; /* suite 2 */
	CHECK(pfs_udp_key_decode(b, sizeof(b), p2, c2) == -EILSEQ, "header crc first");
	return TAP_PASS;
}

/* ---- network ---- */

static int t_setup(void)
{
	return netns_setup("d", 218);
}

/* In a child in ns_a: the local port of the udp socket connected to
 * ip_b:@dport (the real sender's data socket), waiting up to 10 s; 0 if none. */
static uint16_t sender_port(uint16_t dport)
{
	struct in_addr b;
	char want[32], line[512];

	inet_pton(AF_INET, ip_b, &b);
	snprintf(want, sizeof(want), "%08X:%04X", b.s_addr, dport);
	for (int i = 0; i < 1000; i++) {
		FILE *f = fopen("/proc/self/net/udp", "r");
		unsigned int lport = 0;

		while (f && fgets(line, sizeof(line), f)) {
			char loc[32], rem[32];

			if (sscanf(line, "%*d: %31s %31s", loc, rem) == 2 && !strcmp(rem, want) &&
			    sscanf(strchr(loc, ':') + 1, "%x", &lport) == 1)
				break;
			lport = 0;
		}
		if (f)
			fclose(f);
		if (lport)
			return (uint16_t)lport;
		usleep(10000);
	}
	return 0;
}

/* A raw IPv4 socket that sends UDP from ip_a:@sport to ip_b:@dport. */
struct spoof {
	int fd;
	struct sockaddr_in dst;
	uint16_t sport, dport;
	uint8_t pkt[20 + 8 + PFS_UDP_FRAG_LEN + 2048];
};

static int spoof_open(struct spoof *sp, uint16_t sport, uint16_t dport)
{
	sp->fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	sp->sport = sport;
	sp->dport = dport;
	sp->dst = (struct sockaddr_in){ .sin_family = AF_INET };
	inet_pton(AF_INET, ip_b, &sp->dst.sin_addr);
	return sp->fd < 0 ? -1 : 0;
}

/* Send @len bytes of UDP payload @p (the kernel fills the IP checksum and
 * length; UDP checksum 0: none). */
static void spoof_send(struct spoof *sp, const uint8_t *p, size_t len)
{
	struct iphdr *ip = (struct iphdr *)sp->pkt;
	struct udphdr *u = (struct udphdr *)(sp->pkt + 20);

	memset(sp->pkt, 0, 28);
	ip->version = 4;
	ip->ihl = 5;
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	inet_pton(AF_INET, ip_a, &ip->saddr);
	ip->daddr = sp->dst.sin_addr.s_addr;
	ip->tot_len = htons((uint16_t)(28 + len));
	u->source = htons(sp->sport);
	u->dest = htons(sp->dport);
	u->len = htons((uint16_t)(8 + len));
	memcpy(sp->pkt + 28, p, len);
	(void)!sendto(sp->fd, sp->pkt, 28 + len, 0, (struct sockaddr *)&sp->dst, sizeof(sp->dst));
}

enum attack {
	ATTACK_GRAM_LEN, /* one fragment per sequence, a gram length of its own */
	ATTACK_UNDECODABLE, /* whole one-fragment grams of junk, every sequence */
	ATTACK_GARBAGE, /* random bytes, and valid layouts with random tags */
	ATTACK_REPLAY, /* datagrams captured from an earlier transfer */
};

/* Captured datagrams (UDP payloads) of an earlier transfer. */
#define CAP_MAX 4096
static uint8_t (*cap_buf)[1500];
static uint16_t cap_len[CAP_MAX];
static int cap_n;

/* One forged datagram of @kind number @i into @dg; its length. */
static size_t forge(enum attack kind, uint64_t i, uint64_t *rng, uint8_t *dg)
{
	struct pfs_udp_frag f = { .seq = i % 2200, .pn = i };
	size_t len;

	*rng ^= *rng << 13;
	*rng ^= *rng >> 7;
	*rng ^= *rng << 17;
	switch (kind) {
	case ATTACK_GRAM_LEN:
		/* Fragment 0 of a 3-fragment gram of another length than the
		 * real one (the real grams are 512 KiB + 52 bytes) */
		f.gram_len = 3000 + (uint32_t)(i % 97);
		f.frag_len = 1400;
		break;
	case ATTACK_UNDECODABLE:
		f.gram_len = f.frag_len = 100;
		break;
	case ATTACK_GARBAGE:
		if (i % 2) {
			len = 1 + *rng % 1400;
			for (size_t k = 0; k < len; k++)
				dg[k] = (uint8_t)(*rng >> (k % 56));
			return len;
		}
		f.gram_len = 1u << 19;
		f.frag_off = (uint32_t)(*rng % 370) * 1420;
		f.frag_len = 1420;
		break;
	case ATTACK_REPLAY:
		len = cap_len[i % cap_n];
		memcpy(dg, cap_buf[i % cap_n], len);
		return len;
	}
	pfs_udp_frag_encode(&f, dg);
	for (int k = 0; k < PFS_UDP_TAG_LEN; k++)
		dg[PFS_UDP_TAG_OFF + k] = (uint8_t)(*rng >> (k * 3));
	memset(dg + PFS_UDP_FRAG_LEN, 0xa5, f.frag_len);
	return PFS_UDP_FRAG_LEN + f.frag_len;
}

/* In a child in ns_a: find the sender's data port, then send forged
 * datagrams of @kind from it until killed (at most 20 s). Exit 0 after at
 * least one was sent. */
static void injector(enum attack kind, uint16_t dport)
{
	struct spoof sp;
	uint8_t dg[PFS_UDP_FRAG_LEN + 2048];
	uint64_t rng = 0x2545f4914f6cdd1dULL, sent = 0;
	uint16_t sport;
	time_t end = time(NULL) + 20;

	if (netns_enter(ns_a))
		_exit(2);
	sport = sender_port(dport);
	if (!sport || spoof_open(&sp, sport, dport))
		_exit(3);
	while (time(NULL) < end) {
		spoof_send(&sp, dg, forge(kind, sent, &rng, dg));
		if (++sent % 64 == 0)
			usleep(200); /* about 300k a second: a flood, not a DoS of the CPU */
	}
	_exit(0);
}

/* A 1 GiB payload transfer over udp (tag @tag) with an injector of @kind
 * running beside it; both ends must finish OK and the receiver must count
 * forged datagrams. */
static int attacked(const char *tag, enum attack kind)
{
	char addr[64], rt[48], st[48];
	char *rargs[] = { "recv",    "--transport",	 "udp", "--listen",  addr, "--mode",
			  "payload", "--accept-timeout", "20",	"--timeout", "5",  NULL };
	char *sargs[] = { "send",   "--transport", "udp",    "--connect", addr,
			  "--mode", "payload",	   "--size", "64M",	  "--page",
			  "4k",	    "--bytes",	   "1G",     NULL };
	const char *j;
	pid_t r, s, inj;
	int rrc, src;

	NEED_NET();
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	snprintf(rt, sizeof(rt), "%s-recv", tag);
	snprintf(st, sizeof(st), "%s-send", tag);
	r = spawn(ns_b, rt, rargs);
	inj = fork();
	if (inj == 0)
		injector(kind, (uint16_t)port);
	s = spawn(ns_a, st, sargs);
	src = wait_rc(s, 60);
	rrc = wait_rc(r, 60);
	kill(inj, SIGKILL);
	waitpid(inj, NULL, 0);
	j = slurp(rt, "json");
	tap_diag("%s: %.300s", tag, strstr(j, "\"datagrams\"") ?: j);
	CHECK(rrc == 0 && src == 0, "recv %d send %d: %s / %s", rrc, src, slurp(rt, "err"),
	      slurp(st, "err"));
	CHECK(strstr(j, "\"integrity\":\"OK\""), "not OK: %s", j);
	CHECK(!strstr(j, "\"forged\":0,"), "no forged datagram counted: %s", j);
	CHECK(strstr(slurp(rt, "err"), "dropped a forged datagram"), "not logged: %s",
	      slurp(rt, "err"));
	return TAP_PASS;
}

static int t_gram_len(void)
{
	return attacked("glen", ATTACK_GRAM_LEN);
}

static int t_undecodable(void)
{
	return attacked("undec", ATTACK_UNDECODABLE);
}

static int t_garbage(void)
{
	return attacked("garbage", ATTACK_GARBAGE);
}

/* In a child in ns_b: capture the udp payloads to @dport on veth_b until
 * CAP_MAX or killed, into the shared cap_buf (the count in its last slot,
 * each length in the last two bytes of its buffer). */
static void capture(uint16_t dport)
{
	int fd, ifi;
	struct sockaddr_ll ll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IP) };
	uint8_t fr[2048];

	if (netns_enter(ns_b))
		_exit(0);
	ifi = (int)if_nametoindex(veth_b);
	fd = socket(AF_PACKET, SOCK_DGRAM, htons(ETH_P_IP));
	ll.sll_ifindex = ifi;
	if (fd < 0 || bind(fd, (struct sockaddr *)&ll, sizeof(ll)))
		_exit(0);
	for (;;) {
		ssize_t n = recv(fd, fr, sizeof(fr), 0);
		const struct iphdr *ip = (const struct iphdr *)fr;
		const struct udphdr *u;
		size_t hl;

		if (n < 28 || ip->protocol != IPPROTO_UDP)
			continue;
		hl = ip->ihl * 4u;
		u = (const struct udphdr *)(fr + hl);
		if (ntohs(u->dest) != dport || (size_t)n < hl + 8 || n - hl - 8 > 1496)
			continue;
		/* cap_n lives in the shared mapping's last slot */
		{
			int *cnt = (int *)cap_buf[CAP_MAX];

			if (*cnt >= CAP_MAX)
				_exit(0);
			memcpy(cap_buf[*cnt], fr + hl + 8, n - hl - 8);
			memcpy(cap_buf[*cnt] + 1498, &(uint16_t){ (uint16_t)(n - hl - 8) }, 2);
			(*cnt)++;
		}
	}
}

/* Datagrams of a finished transfer, replayed into the next one (same
 * ports on the receiver, from the new sender's address and port): every
 * one fails its tag under the new key. */
static int t_replay(void)
{
	char addr[64];
	char *rargs[] = { "recv",    "--transport",	 "udp", "--listen",  addr, "--mode",
			  "payload", "--accept-timeout", "20",	"--timeout", "5",  NULL };
	char *sargs[] = { "send",   "--transport", "udp",    "--connect", addr,
			  "--mode", "payload",	   "--size", "16M",	  "--page",
			  "4k",	    "--bytes",	   "16M",    NULL };
	pid_t c;
	int rrc, src, *cnt;

	NEED_NET();
	cap_buf = mmap(NULL, (CAP_MAX + 1) * sizeof(*cap_buf), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(cap_buf != MAP_FAILED, "mmap");
	cnt = (int *)cap_buf[CAP_MAX];
	*cnt = 0;
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	c = fork();
	if (c == 0)
		capture((uint16_t)port);
	usleep(200000);
	/* One datagram per packet (no GSO/GRO), so the capture sees each. */
	setenv("PFS_UDP_OFFLOAD", "off", 1);
	xfer("first", rargs, sargs, &rrc, &src);
	unsetenv("PFS_UDP_OFFLOAD");
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	CHECK(rrc == 0 && src == 0, "first transfer: recv %d send %d", rrc, src);
	cap_n = *cnt;
	for (int i = 0; i < cap_n; i++)
		memcpy(&cap_len[i], cap_buf[i] + 1498, 2);
	tap_diag("captured %d datagrams of the first transfer", cap_n);
	CHECK(cap_n > 100, "captured only %d datagrams", cap_n);
	port--; /* the same receiver port */
	return attacked("replay", ATTACK_REPLAY);
}

/* ---- the handshake ---- */

/* A man in the middle of the control connection (in ns_b, listening on
 * @lport, forwarding to the receiver on @rport) that replaces the
 * sender's public key in its KEY record with its own. */
static void mitm(uint16_t lport, uint16_t rport)
{
	struct sockaddr_in la = { .sin_family = AF_INET, .sin_port = htons(lport) },
			   ra = { .sin_family = AF_INET, .sin_port = htons(rport) };
	int l, a, b, one = 1;
	uint8_t buf[65536], pub[PFS_UDP_KEY_PUB];
	struct pfs_dgram_kx *kx = pfs_dgram_kx__new(pub);
	size_t seen = 0;
	const size_t key_at = PFS_CTL_LEN + PFS_UDP_REC_LEN;

	if (!kx || netns_enter(ns_b))
		_exit(2);
	inet_pton(AF_INET, ip_b, &la.sin_addr);
	ra.sin_addr = la.sin_addr;
	l = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&la, sizeof(la)) || listen(l, 1))
		_exit(3);
	a = accept(l, NULL, NULL);
	b = socket(AF_INET, SOCK_STREAM, 0);
	if (a < 0 || connect(b, (struct sockaddr *)&ra, sizeof(ra)))
		_exit(4);
	for (;;) {
		struct pollfd p[2] = { { .fd = a, .events = POLLIN },
				       { .fd = b, .events = POLLIN } };
		ssize_t n;

		if (poll(p, 2, 10000) <= 0)
			_exit(5);
		if (p[0].revents) {
			n = read(a, buf, sizeof(buf));
			if (n <= 0)
				_exit(0);
			/* the sender's first bytes: HELLO, PARAMS, KEY */
			if (seen < key_at + PFS_UDP_REC_LEN + PFS_UDP_KEY_BODY &&
			    seen + n >= key_at + PFS_UDP_REC_LEN + PFS_UDP_KEY_BODY &&
			    seen <= key_at)
				pfs_udp_key_encode(pub, NULL, buf + key_at - seen);
			seen += n;
			(void)!write(b, buf, n);
		}
		if (p[1].revents) {
			n = read(b, buf, sizeof(buf));
			if (n <= 0)
				_exit(0);
			(void)!write(a, buf, n);
		}
	}
}

static int t_mitm(void)
{
	char addr[64], via[64];
	char *rargs[] = { "recv",    "--transport",	 "udp", "--listen",  addr, "--mode",
			  "payload", "--accept-timeout", "20",	"--timeout", "5",  NULL };
	char *sargs[] = { "send",    "--transport", "udp", "--connect", via,  "--mode",
			  "payload", "--size",	    "16M", "--page",	"4k", NULL };
	pid_t m, r, s;
	int rrc, src;
	time_t t0;

	NEED_NET();
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	snprintf(via, sizeof(via), "%s:%d", ip_b, port + 1);
	r = spawn(ns_b, "mitm-recv", rargs);
	usleep(200000);
	m = fork();
	if (m == 0)
		mitm((uint16_t)(port + 1), (uint16_t)port);
	usleep(100000);
	t0 = time(NULL);
	s = spawn(ns_a, "mitm-send", sargs);
	src = wait_rc(s, 20);
	rrc = wait_rc(r, 20);
	kill(m, SIGKILL);
	waitpid(m, NULL, 0);
	port++;
	tap_diag("send: %.200s", slurp("mitm-send", "err"));
	tap_diag("recv: %.300s", slurp("mitm-recv", "err"));
	CHECK(src == 1 && rrc == 1, "send %d recv %d (want 1, 1)", src, rrc);
	CHECK(time(NULL) - t0 < 4, "took %ld s: not at once", (long)(time(NULL) - t0));
	CHECK(strstr(slurp("mitm-send", "err"), "key confirmation failed"), "sender: %s",
	      slurp("mitm-send", "err"));
	CHECK(strstr(slurp("mitm-recv", "err"), "key confirmation failed"), "receiver: %s",
	      slurp("mitm-recv", "err"));
	return TAP_PASS;
}

/* A hand-made sender's handshake against a pfs recv: @bad_pub instead of
 * its key, @suite in PARAMS. Returns the answer's REFUSE word, 0 when
 * accepted, -1 on other failures; the receiver's exit code in *rrc. */
static int handshake_with(const uint8_t *bad_pub, uint64_t suite, const char *tag, int *rrc)
{
	char addr[64];
	char *rargs[] = { "recv",    "--transport",	 "udp", "--listen",  addr, "--mode",
			  "payload", "--accept-timeout", "20",	"--timeout", "5",  NULL };
	pid_t r, c;
	int crc;

	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	r = spawn(ns_b, tag, rargs);
	c = fork();
	if (c == 0) {
		struct pfs_ctl h = { .type = PFS_CTL_HELLO,
				     .mode = PFS_MODE_PAYLOAD,
				     .size = 1 << 20,
				     .count = 100,
				     .word = 1 };
		struct pfs_udp_rec p = { .a = 4096, .c = suite, .d = 1440, .e = 32 };
		struct dclient dc;
		int rc;

		if (netns_enter(ns_a) || dclient_connect(&dc, ip_b, (uint16_t)port))
			_exit(200);
		rc = dclient_handshake(&dc, &h, &p, bad_pub);
		_exit(rc == 1 && dc.answer.type == PFS_CTL_REFUSE ? (int)dc.answer.word :
		      rc == 0					  ? 0 :
								    202);
	}
	crc = wait_rc(c, 20);
	*rrc = wait_rc(r, 20);
	return crc >= 200 ? -1 : crc;
}

/* A hand-made sender with @bad_pub or an unknown @suite: REFUSE @want
 * (receiver exit 4) and the receiver says @msg. */
static int refused(const uint8_t *bad_pub, uint64_t suite, const char *tag, int want,
		   const char *msg)
{
	int rrc, w;

	NEED_NET();
	w = handshake_with(bad_pub, suite, tag, &rrc);
	CHECK(w == want, "answer %d (want REFUSE %d)", w, want);
	CHECK(rrc == 4, "receiver exit %d (want 4)", rrc);
	CHECK(strstr(slurp(tag, "err"), msg), "message: %s", slurp(tag, "err"));
	return TAP_PASS;
}

static int t_zero_pub(void)
{
	static const uint8_t zero[PFS_UDP_KEY_PUB];

	return refused(zero, 0, "zeropub", PFS_REFUSE_PARAMS, "not a usable X25519 public key");
}

/* A suite this receiver does not know, as the 0 of a sender from before
 * authentication is (dgram_client.h turns 0 into the real one). */
static int t_old_sender(void)
{
	return refused(NULL, 7, "oldsend", PFS_REFUSE_VERSION,
		       "does not authenticate its datagrams");
}

static const struct tap_test tests[] = {
	{ "key agreement: both ends agree; every byte of a datagram is covered by its tag",
	  t_agree },
	{ "key agreement: a zero public key (all-zero secret) is refused", t_bad_pub },
	{ "the tag is AES-128-GCM's (empty plaintext) over the header and the bytes",
	  t_gmac_is_gcm },
	{ "KEY record: round trip, short body, CRCs", t_key_codec },
	{ "create two netns joined by a veth pair", t_setup },
	{ "spoofed fragments with another gram length for every sequence: OK, counted",
	  t_gram_len },
	{ "spoofed undecodable whole grams at every sequence: OK, counted", t_undecodable },
	{ "spoofed flood of garbage and random tags: OK, counted", t_garbage },
	{ "datagrams replayed from the previous transfer: OK, counted", t_replay },
	{ "man in the middle swaps the sender's public key: both ends fail at once, said so",
	  t_mitm },
	{ "a zero public key: REFUSE (parameters), said so", t_zero_pub },
	{ "a sender without datagram authentication: REFUSE (version), said so", t_old_sender },
	{ "remove the namespaces and veth", netns_remove },
};

TAP_MAIN(tests)
