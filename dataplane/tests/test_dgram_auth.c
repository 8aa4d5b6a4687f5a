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
 * sender's namespace sends frames to the receiver's data port with the
 * sender's own MAC, source address and port (tests/dgram_inject.h, shared
 * with test_afxdp_auth; the port read from /proc/net/udp): a wrong gram
 * length for every sequence the transfer will reach, undecodable
 * one-fragment grams, datagrams captured from an earlier transfer, garbage. Each transfer must end OK with the forged datagrams
 * counted. The handshake: a man in the middle swapping the sender's public
 * key, an unusable public key, and a sender without authentication.
 *
 * Needs root (netns, veth, packet sockets); otherwise the network tests SKIP.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pfs/dgram_auth.h"
#include "pfs/gram.h"
#include "pfs/udp.h"
#include "dgram_client.h"
#include "dgram_inject.h"
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
	int rc = netns_setup("d", 218);

	if (rc != TAP_PASS)
		return rc;
	return inject_setup();
}

/* A 1 GiB payload transfer over udp (tag @tag) with an injector of @kind
 * running beside it (the sender's MAC, address and ephemeral data port,
 * about 300k frames a second until the transfer ends): both ends must
 * finish OK and the receiver must count forged datagrams. */
static int attacked(const char *tag, enum attack kind)
{
	char addr[64], rt[48], st[48];
	char *rargs[] = { "recv",    "--transport",	 "udp", "--listen",  addr, "--mode",
			  "payload", "--accept-timeout", "20",	"--timeout", "5",  NULL };
	char *sargs[] = { "send",   "--transport", "udp",    "--connect", addr,
			  "--mode", "payload",	   "--size", "64M",	  "--page",
			  "4k",	    "--bytes",	   "1G",     NULL };
	struct inject in = { .kind = kind,
			     .cap = cap,
			     .ns = ns_a,
			     .ifname = veth_a,
			     .src_ip = ip_a,
			     .dst_ip = ip_b,
			     .max_s = 20,
			     .burst = 64,
			     .gap_us = 200,
			     .st = inj_st };
	const char *j;
	pid_t r, s, inj;
	int rrc, src;

	NEED_NET();
	memcpy(in.src_mac, mac_a, 6);
	memcpy(in.dst_mac, mac_b, 6);
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	snprintf(rt, sizeof(rt), "%s-recv", tag);
	snprintf(st, sizeof(st), "%s-send", tag);
	in.dport = (uint16_t)port;
	r = spawn(ns_b, rt, rargs);
	inj = inject_start(&in);
	s = spawn(ns_a, st, sargs);
	src = wait_rc(s, 60);
	rrc = wait_rc(r, 60);
	kill(inj, SIGKILL);
	waitpid(inj, NULL, 0);
	j = slurp(rt, "json");
	tap_diag("%s: injected %" PRIu64 " (%" PRIu64 " refused); %.300s", tag, inj_st->sent,
		 inj_st->refused, strstr(j, "\"datagrams\"") ?: j);
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
	int rrc, src;

	NEED_NET();
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	capture_xfer(rargs, sargs, (uint16_t)port, cap, &rrc, &src);
	CHECK(rrc == 0 && src == 0, "first transfer: recv %d send %d", rrc, src);
	tap_diag("captured %d datagrams of the first transfer", cap->n);
	CHECK(cap->n > 100, "captured only %d datagrams", cap->n);
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
	{ "create two netns joined by a veth pair", t_setup, .setup = true },
	{ "spoofed fragments with another gram length for every sequence: OK, counted",
	  t_gram_len },
	{ "spoofed undecodable whole grams at every sequence: OK, counted", t_undecodable },
	{ "spoofed flood of garbage and random tags: OK, counted", t_garbage },
	{ "datagrams replayed from the previous transfer: OK, counted", t_replay },
	{ "man in the middle swaps the sender's public key: both ends fail at once, said so",
	  t_mitm },
	{ "a zero public key: REFUSE (parameters), said so", t_zero_pub },
	{ "a sender without datagram authentication: REFUSE (version), said so", t_old_sender },
	{ "remove the namespaces and veth", netns_remove, .setup = true },
};

TAP_MAIN(tests)
