// SPDX-License-Identifier: Apache-2.0
/*
 * Datagram authentication of the afxdp transport (issue 17, item 1): the
 * hostile cases of test_dgram_auth against a receiver running `--transport
 * afxdp`, whose datagrams arrive through our XDP program and an AF_XDP
 * socket instead of a UDP socket, and so skip everything the kernel's UDP
 * path would check (there is no connect() filter on an XSK either).
 *
 * Over a veth pair between two namespaces this test creates and removes
 * (tests/netns.h): a real `pfs send --transport afxdp` -> `pfs recv
 * --transport afxdp` 4 GiB payload transfer while the injector of
 * tests/dgram_inject.h, on the sender's veth end, writes frames with the
 * sender's MAC, IPv4 address and data port (the afxdp sender's data source
 * port is its destination port: no socket owns it, dgram_xsk.c) to the
 * receiver's MAC, address and data port. The XDP program (bpf/pfs_xdp.bpf.c)
 * redirects every IPv4/IPv6 UDP frame to that port whatever its source, so
 * these land in the XSK like the real ones; the proof is in the receiver's
 * result: `datagrams.forged` >= the frames injected with a valid layout
 * minus the XSK's drops (`socket_drops`, the real sender's frames' drops
 * included), which only the tag check behind the XSK can count. The
 * injection sends a fixed number of frames, all of them while both ends
 * are still running (checked), and the transfer must still end OK on both
 * sides with the same checksum.
 *
 * Replay: the datagrams of an earlier transfer from an afxdp sender. A frame
 * the XDP program redirects never reaches a packet socket (on either veth
 * end: the XSK's copy-mode TX skips the taps too), so that earlier
 * transfer goes to a kernel UDP receiver, which takes the afxdp sender's
 * frames unchanged (the same tagged fragments on the wire), and is
 * captured there.
 *
 * The sender: its AF_XDP sockets are TX-only and no XDP program is attached
 * on its side; ACKs and NAKs come over the TCP control connection, so
 * nothing an attacker sends to its data port reaches it. Checked: no XDP
 * program on the sender's interface during a transfer, and a flood to its
 * data port from the receiver's MAC, address and port changes nothing.
 *
 * Needs root and AF_XDP; what the machine lacks is a SKIP.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "dgram_inject.h"
#include "json_util.h"
#include "netns.h"

/* Forged frames per attacked transfer, and their pace: at most ~160k a
 * second (32 per 200 us), about a third of what copy-mode AF_XDP on veth
 * carries here, so the real transfer goes on beside them. */
#define INJECT_COUNT 100000
#define INJECT_BURST 32
#define INJECT_GAP_US 200

static int port = 7990;

static int t_setup(void)
{
	int rc = netns_setup("x", 221);

	if (rc != TAP_PASS)
		return rc;
	rc = netns_need_afxdp();
	if (rc != TAP_PASS)
		return rc;
	return inject_setup();
}

/* Has @pid ended? Without reaping it, so wait_rc still gets its status. */
static bool ended(pid_t pid)
{
	siginfo_t si = { 0 };

	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid;
}

static bool xdp_on(const char *ns, const char *ifname)
{
	return sh("ip -n %s link show dev %s | grep -q ' xdp'", ns, ifname) == 0;
}

/* Until tmpdir/@tag.err says @what or @pid ended (at most 10 s). */
static bool wait_log_pid(const char *tag, const char *what, pid_t pid)
{
	for (int i = 0; i < 500; i++) {
		if (strstr(slurp(tag, "err"), what))
			return true;
		if (ended(pid))
			return false;
		usleep(20000);
	}
	return false;
}

/* Wait for the injector @inj to send its count, then: were the receiver
 * @r and the sender @s both still running a moment after the last frame
 * left (what is in the XSK's ring by then is placed before END's verdict),
 * so that the whole injection fell inside the transfer? Reaps @inj. */
static bool inject_within(pid_t inj, pid_t r, pid_t s)
{
	bool inside;

	while (!__atomic_load_n(&inj_st->done, __ATOMIC_ACQUIRE) && !ended(inj))
		usleep(5000);
	usleep(20000);
	inside = !ended(s) && !ended(r);
	wait_rc(inj, 5);
	return inside;
}

/* Start a 4 GiB afxdp payload transfer to port @p: the receiver (XDP
 * program attached once its ready file exists), then the sender; returns
 * once the receiver logged the connection. TAP_PASS, or TAP_FAIL with
 * both ends reaped. */
static int start_afxdp(const char *tag, int p, pid_t *r, pid_t *s)
{
	char addr[64], rt[48], st[48], ready[128];
	char *rargs[] = {
		"recv", "--transport",	    "afxdp",   "--ifname",    veth_b, "--listen",
		addr,	"--mode",	    "payload", "--umem-page", "4k",   "--ready-file",
		ready,	"--accept-timeout", "20",      "--timeout",   "5",    NULL
	};
	char *sargs[] = { "send", "--transport", "afxdp",   "--ifname",	   veth_a, "--connect",
			  addr,	  "--mode",	 "payload", "--umem-page", "4k",   "--size",
			  "64M",  "--page",	 "4k",	    "--bytes",	   "4G",   NULL };

	snprintf(addr, sizeof(addr), "%s:%d", ip_b, p);
	snprintf(rt, sizeof(rt), "%s-recv", tag);
	snprintf(st, sizeof(st), "%s-send", tag);
	snprintf(ready, sizeof(ready), "%s/%s.ready", tmpdir, tag);
	*r = spawn(ns_b, rt, rargs);
	for (int i = 0; i < 500 && access(ready, F_OK) && !ended(*r); i++)
		usleep(20000);
	if (access(ready, F_OK)) {
		wait_rc(*r, 5);
		CHECK(0, "receiver did not start: %s", slurp(rt, "err"));
	}
	*s = spawn(ns_a, st, sargs);
	/* Frames that reach the XSK before the handshake wait in its ring or
	 * are dropped there; once connected, every one is placed. */
	if (!wait_log_pid(rt, "connected", *r)) {
		wait_rc(*s, 5);
		wait_rc(*r, 5);
		CHECK(0, "the sender never connected: %s / %s", slurp(rt, "err"), slurp(st, "err"));
	}
	return TAP_PASS;
}

/* INJECT_COUNT frames of @kind to port @p: from the sender's veth end with
 * its MAC, address and port to the receiver's (@at_receiver), or the other
 * way round. */
static struct inject flood(enum attack kind, bool at_receiver, int p)
{
	struct inject in = { .kind = kind,
			     .cap = cap,
			     .ns = at_receiver ? ns_a : ns_b,
			     .ifname = at_receiver ? veth_a : veth_b,
			     .src_ip = at_receiver ? ip_a : ip_b,
			     .dst_ip = at_receiver ? ip_b : ip_a,
			     .sport = (uint16_t)p,
			     .dport = (uint16_t)p,
			     .count = INJECT_COUNT,
			     .max_s = 20,
			     .burst = INJECT_BURST,
			     .gap_us = INJECT_GAP_US,
			     .st = inj_st };

	memcpy(in.src_mac, at_receiver ? mac_a : mac_b, 6);
	memcpy(in.dst_mac, at_receiver ? mac_b : mac_a, 6);
	return in;
}

/* A 4 GiB afxdp payload transfer (tag @tag, receiver port @p) with
 * INJECT_COUNT frames of @kind injected once the sender is connected:
 * both ends OK with equal checksums, every injected frame with a valid
 * layout counted as forged but for the XSK's drops, and logged. */
static int attacked(const char *tag, enum attack kind, int p)
{
	struct inject in = flood(kind, true, p);
	char rt[48], st[48], rcrc[24], scrc[24];
	const char *rj, *sj, *g;
	bool inside, attached;
	long long forged, drops;
	pid_t r, s, inj;
	int rrc, src;

	NEED_NET();
	snprintf(rt, sizeof(rt), "%s-recv", tag);
	snprintf(st, sizeof(st), "%s-send", tag);
	if (start_afxdp(tag, p, &r, &s) != TAP_PASS)
		return TAP_FAIL;
	inj = inject_start(&in);
	attached = xdp_on(ns_b, veth_b);
	inside = inject_within(inj, r, s);
	src = wait_rc(s, 90);
	rrc = wait_rc(r, 30);
	rj = slurp(rt, "json");
	sj = slurp(st, "json");
	g = jsect(rj, "\"datagrams\"");
	forged = jnum(g, "forged");
	drops = jnum(g, "socket_drops");
	tap_diag("%s: injected %" PRIu64 " (%" PRIu64 " with a valid layout, %" PRIu64
		 " refused by the kernel), forged %lld, XSK drops %lld; %.1f MB/s; %.200s",
		 tag, inj_st->sent, inj_st->tagged, inj_st->refused, forged, drops,
		 jreal(rj, "effective_mb_s"), g ? g : "(no datagrams)");
	CHECK(rrc == 0 && src == 0, "recv %d send %d: %s / %s", rrc, src, slurp(rt, "err"),
	      slurp(st, "err"));
	CHECK(strstr(rj, "\"integrity\":\"OK\"") && strstr(sj, "\"integrity\":\"OK\""),
	      "integrity: %s / %s", rj, sj);
	jstr(rj, "checksum", rcrc, sizeof(rcrc));
	jstr(sj, "checksum", scrc, sizeof(scrc));
	CHECK(rcrc[0] && !strcmp(rcrc, scrc), "checksums differ: recv %s send %s", rcrc, scrc);
	CHECK(strstr(rj, "xdp, copy"), "not received over AF_XDP: %s", rj);
	CHECK(attached, "no XDP program on %s during the injection", veth_b);
	CHECK(inside, "the transfer ended before the injection did: raise --bytes");
	CHECK(inj_st->sent == INJECT_COUNT, "injected %" PRIu64 " of %d", inj_st->sent,
	      INJECT_COUNT);
	CHECK(forged > 0 && drops >= 0 && (uint64_t)(forged + drops) >= inj_st->tagged,
	      "forged %lld + XSK drops %lld < %" PRIu64 " injected with a valid layout: "
	      "frames not steered into the XSK",
	      forged, drops, inj_st->tagged);
	CHECK(strstr(slurp(rt, "err"), "dropped a forged datagram"), "not logged: %s",
	      slurp(rt, "err"));
	return TAP_PASS;
}

static int t_gram_len(void)
{
	return attacked("glen", ATTACK_GRAM_LEN, ++port);
}

static int t_undecodable(void)
{
	return attacked("undec", ATTACK_UNDECODABLE, ++port);
}

static int t_garbage(void)
{
	return attacked("garbage", ATTACK_GARBAGE, ++port);
}

/* An afxdp sender's datagrams of a finished transfer (captured at a kernel
 * UDP receiver, see the top), replayed into the next transfer to an afxdp
 * receiver on the same port from the new sender's MAC, address and port:
 * every one fails its tag under the new key. */
static int t_replay(void)
{
	char addr[64];
	char *rargs[] = { "recv",    "--transport",	 "udp", "--listen",  addr, "--mode",
			  "payload", "--accept-timeout", "20",	"--timeout", "5",  NULL };
	char *sargs[] = { "send", "--transport", "afxdp",   "--ifname",	   veth_a, "--connect",
			  addr,	  "--mode",	 "payload", "--umem-page", "4k",   "--size",
			  "16M",  "--page",	 "4k",	    "--bytes",	   "16M",  NULL };
	int rrc, src;

	NEED_NET();
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	capture_xfer(rargs, sargs, (uint16_t)port, cap, &rrc, &src);
	CHECK(rrc == 0 && src == 0, "first transfer: recv %d send %d", rrc, src);
	CHECK(strstr(slurp("first-send", "json"), "\"afxdp_mode\":\"copy\""),
	      "the first sender did not send over AF_XDP: %s", slurp("first-send", "json"));
	tap_diag("captured %d datagrams of the first transfer (afxdp sender)", cap->n);
	CHECK(cap->n > 100, "captured only %d datagrams", cap->n);
	return attacked("replay", ATTACK_REPLAY, port);
}

/* The sender under the same flood, aimed at its data port from the
 * receiver's MAC, address and port: it takes nothing from the wire (no XDP
 * program on its interface, TX-only sockets; ACK/NAK arrive over TCP), the
 * transfer ends OK and it reports no datagram received. */
static int t_sender_side(void)
{
	struct inject in = flood(ATTACK_GARBAGE, false, ++port);
	const char *rj, *sj;
	bool sender_xdp, inside;
	pid_t r, s, inj;
	int rrc, src;

	NEED_NET();
	if (start_afxdp("sside", port, &r, &s) != TAP_PASS)
		return TAP_FAIL;
	inj = inject_start(&in);
	sender_xdp = xdp_on(ns_a, veth_a);
	inside = inject_within(inj, r, s);
	src = wait_rc(s, 90);
	rrc = wait_rc(r, 30);
	rj = slurp("sside-recv", "json");
	sj = slurp("sside-send", "json");
	tap_diag("sender-side: injected %" PRIu64 " toward the sender; sender %.160s", inj_st->sent,
		 jsect(sj, "\"datagrams\"") ?: "(no datagrams)");
	CHECK(!sender_xdp, "an XDP program on the sender's %s", veth_a);
	CHECK(rrc == 0 && src == 0, "recv %d send %d: %s / %s", rrc, src,
	      slurp("sside-recv", "err"), slurp("sside-send", "err"));
	CHECK(strstr(rj, "\"integrity\":\"OK\"") && strstr(sj, "\"integrity\":\"OK\""),
	      "integrity: %s / %s", rj, sj);
	CHECK(inside && inj_st->sent == INJECT_COUNT, "injected %" PRIu64 " of %d, %s the transfer",
	      inj_st->sent, INJECT_COUNT, inside ? "during" : "not all during");
	CHECK(jnum(jsect(sj, "\"datagrams\""), "received") == 0, "the sender received: %s", sj);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "create two netns joined by a veth pair; AF_XDP present", t_setup, .setup = true },
	{ "afxdp: spoofed fragments with another gram length for every sequence: OK, forged "
	  "counted in the XSK",
	  t_gram_len },
	{ "afxdp: spoofed undecodable whole grams at every sequence: OK, forged counted in the XSK",
	  t_undecodable },
	{ "afxdp: spoofed flood of garbage and random tags: OK, forged counted in the XSK",
	  t_garbage },
	{ "afxdp: an afxdp sender's datagrams replayed from the previous transfer: OK, counted",
	  t_replay },
	{ "afxdp sender: no XDP program on its side; a flood to its data port changes nothing",
	  t_sender_side },
	{ "remove the namespaces and veth", netns_remove, .setup = true },
};

TAP_MAIN(tests)
