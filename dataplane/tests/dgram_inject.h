/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the datagram authentication tests (test_dgram_auth: udp,
 * test_afxdp_auth: afxdp): a hostile injector that forges the real sender.
 *
 * It writes whole Ethernet frames on the sender's veth end with an
 * AF_PACKET socket, framed by the library's own frame builder as the real
 * afxdp sender frames its datagrams, so every layer a receiver or its XDP
 * program could look at carries the real sender's values: source MAC (the
 * sender's interface), IPv4 source address, UDP source port, and the
 * receiver's MAC, address and data port as destination. A frame the kernel refuses to queue
 * (ENOBUFS: the peer's ring is full) is not counted as sent, so `sent` and
 * `tagged` are what left the interface.
 *
 * The forged payloads (forge()): a wrong gram length for every sequence a
 * 1 GiB transfer reaches, undecodable one-fragment grams, garbage (random
 * bytes, and valid layouts with random tags), or the UDP payloads of an
 * earlier transfer captured on the receiver's veth (capture()).
 *
 * Everything runs in forked children that join a namespace of netns.h; the
 * counters and the capture live in MAP_SHARED memory the parent reads. */
#ifndef PFS_TESTS_DGRAM_INJECT_H
#define PFS_TESTS_DGRAM_INJECT_H

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pfs/frame.h"
#include "pfs/udp.h"
#include "netns.h"

/* Sequences a forged datagram may name: the real grams of a 1 GiB payload
 * transfer are 512 KiB + 52 bytes, 2048 of them; a little past the end too. */
#define INJECT_SEQS 2200

enum attack {
	ATTACK_GRAM_LEN, /* one fragment per sequence, a gram length of its own */
	ATTACK_UNDECODABLE, /* whole one-fragment grams of junk, every sequence */
	ATTACK_GARBAGE, /* random bytes, and valid layouts with random tags */
	ATTACK_REPLAY, /* datagrams captured from an earlier transfer */
};

/* UDP payloads captured from an earlier transfer (shared with the child
 * that captures them). */
#define CAP_MAX 4096
struct inject_cap {
	int n;
	uint16_t len[CAP_MAX];
	uint8_t buf[CAP_MAX][1500];
};

/* What an injector sent, read by the parent while and after it runs. */
struct inject_stats {
	uint64_t sent; /* frames the kernel took */
	uint64_t tagged; /* of them, with a valid fragment layout: they reach the tag check */
	uint64_t refused; /* frames the kernel refused (ENOBUFS...), not in sent */
	int done; /* 1 once the injector has sent its count (or hit its deadline) */
};

struct inject {
	enum attack kind;
	const struct inject_cap *cap; /* ATTACK_REPLAY */
	const char *ns, *ifname; /* where the real sender is */
	uint8_t src_mac[6], dst_mac[6];
	const char *src_ip, *dst_ip;
	/* 0: the local port of the UDP socket connected to dst_ip:dport in ns,
	 * waited for (the udp transport's sender binds an ephemeral port) */
	uint16_t sport;
	uint16_t dport;
	uint64_t count; /* frames to send, then exit; 0: until killed */
	int max_s; /* and never longer than this */
	/* Pacing: a pause of gap_us after every burst frames. */
	uint32_t burst, gap_us;
	struct inject_stats *st; /* MAP_SHARED */
};

/* A MAP_SHARED zeroed mapping of @n bytes for parent and children, or NULL. */
__attribute__((unused)) static void *inject_shared(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* The MAC of @ifname in netns @ns, read from this (single-threaded)
 * process by joining @ns and coming back. 0 or -1. */
__attribute__((unused)) static int if_mac(const char *ns, const char *ifname, uint8_t mac[6])
{
	int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC), s = -1, rc = -1;
	struct ifreq ifr = { 0 };

	if (self < 0)
		return -1;
	if (netns_enter(ns))
		goto out_close_self;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s >= 0 && !ioctl(s, SIOCGIFHWADDR, &ifr)) {
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
		rc = 0;
	}
	if (s >= 0)
		close(s);
	/* back home: the rest of the test must not run in @ns */
	if (setns(self, CLONE_NEWNET))
		rc = -1;
out_close_self:
	close(self);
	return rc;
}

/* Set by inject_setup(): the MACs of veth_a (sender) and veth_b
 * (receiver), the injector's counters and the capture, shared. */
static uint8_t mac_a[6], mac_b[6];
static struct inject_stats *inj_st;
static struct inject_cap *cap;

/* After netns_setup: the shared memory and the two MACs. TAP_PASS or
 * TAP_FAIL. */
__attribute__((unused)) static int inject_setup(void)
{
	inj_st = inject_shared(sizeof(*inj_st));
	cap = inject_shared(sizeof(*cap));
	CHECK(inj_st && cap, "mmap: %s", strerror(errno));
	CHECK(!if_mac(ns_a, veth_a, mac_a) && !if_mac(ns_b, veth_b, mac_b), "MACs of the veth");
	return TAP_PASS;
}

/* In a child in the sender's namespace: the local port of the udp socket
 * connected to @dst:@dport (the real sender's data socket), waiting up to
 * 10 s; 0 if none. */
static uint16_t inject_sender_port(const char *dst, uint16_t dport)
{
	struct in_addr b;
	char want[32], line[512];

	inet_pton(AF_INET, dst, &b);
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

/* An AF_PACKET socket on the sender's interface, and the header template
 * the real afxdp sender stamps on its frames (pfs/frame.h, same flags: IPv4
 * with DF, TTL 64, UDP checksum set), here made for the forged flow. */
struct spoof {
	int fd;
	struct sockaddr_ll to;
	struct pfs_frame_tmpl t;
	uint8_t frame[PFS_FRAME_MAX_HDR + PFS_UDP_FRAG_LEN + 2048];
};

static int spoof_open(struct spoof *sp, const struct inject *in, uint16_t sport)
{
	struct pfs_frame_addr a = { .family = AF_INET, .src_port = sport, .dst_port = in->dport };

	memcpy(a.src_mac, in->src_mac, ETH_ALEN);
	memcpy(a.dst_mac, in->dst_mac, ETH_ALEN);
	if (inet_pton(AF_INET, in->src_ip, a.src_ip) != 1 ||
	    inet_pton(AF_INET, in->dst_ip, a.dst_ip) != 1 || pfs_frame_tmpl_init(&sp->t, &a, 0))
		return -1;
	/* protocol 0: this socket only sends, it never queues what it sees */
	sp->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (sp->fd < 0)
		return -1;
	sp->to = (struct sockaddr_ll){ .sll_family = AF_PACKET,
				       .sll_protocol = htons(ETH_P_IP),
				       .sll_ifindex = (int)if_nametoindex(in->ifname),
				       .sll_halen = ETH_ALEN };
	memcpy(sp->to.sll_addr, in->dst_mac, ETH_ALEN);
	return sp->to.sll_ifindex ? 0 : -1;
}

/* One frame carrying @len bytes of UDP payload @p. 0, or -errno when the
 * kernel refused it. */
static int spoof_send(struct spoof *sp, const uint8_t *p, size_t len)
{
	int n = pfs_frame_build(&sp->t, sp->frame, sizeof(sp->frame), p, len);

	if (n < 0)
		return n;
	if (sendto(sp->fd, sp->frame, (size_t)n, 0, (struct sockaddr *)&sp->to, sizeof(sp->to)) !=
	    n)
		return -errno;
	return 0;
}

/* One forged datagram of @kind number @i into @dg; its length. *tagged:
 * whether it has a valid fragment layout (so the receiver's tag check, not
 * its layout check, is what refuses it). */
static size_t forge(enum attack kind, const struct inject_cap *cap, uint64_t i, uint64_t *rng,
		    uint8_t *dg, bool *tagged)
{
	struct pfs_udp_frag f = { .seq = i % INJECT_SEQS, .pn = i };
	size_t len;

	*rng ^= *rng << 13;
	*rng ^= *rng >> 7;
	*rng ^= *rng << 17;
	*tagged = true;
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
			*tagged = false; /* its header CRC fails first */
			return len;
		}
		/* Only whole fragments: the 370th (offset 523,980) would be
		 * a short tail, which the layout check refuses before the tag */
		f.gram_len = 1u << 19;
		f.frag_off = (uint32_t)(*rng % 369) * 1420;
		f.frag_len = 1420;
		break;
	case ATTACK_REPLAY:
		len = cap->len[i % cap->n];
		memcpy(dg, cap->buf[i % cap->n], len);
		return len;
	}
	pfs_udp_frag_encode(&f, dg);
	for (int k = 0; k < PFS_UDP_TAG_LEN; k++)
		dg[PFS_UDP_TAG_OFF + k] = (uint8_t)(*rng >> (k * 3));
	memset(dg + PFS_UDP_FRAG_LEN, 0xa5, f.frag_len);
	return PFS_UDP_FRAG_LEN + f.frag_len;
}

/* The injector's child: join the sender's namespace, find its port, then
 * send forged frames until the count, the deadline or SIGKILL. Exit 0
 * after at least one was sent. */
static void inject_run(const struct inject *in)
{
	struct spoof sp;
	uint8_t dg[PFS_UDP_FRAG_LEN + 2048];
	uint64_t rng = 0x2545f4914f6cdd1dULL, i = 0;
	uint16_t sport;
	time_t end = time(NULL) + in->max_s;

	if (netns_enter(in->ns))
		_exit(2);
	sport = in->sport ? in->sport : inject_sender_port(in->dst_ip, in->dport);
	if (!sport || spoof_open(&sp, in, sport))
		_exit(3);
	while ((!in->count || in->st->sent < in->count) && time(NULL) < end) {
		bool tagged;
		size_t len = forge(in->kind, in->cap, i++, &rng, dg, &tagged);

		if (spoof_send(&sp, dg, len)) {
			in->st->refused++;
		} else {
			in->st->tagged += tagged;
			/* the parent reads sent: count it last */
			__atomic_store_n(&in->st->sent, in->st->sent + 1, __ATOMIC_RELEASE);
		}
		if (i % in->burst == 0)
			usleep(in->gap_us);
	}
	__atomic_store_n(&in->st->done, 1, __ATOMIC_RELEASE);
	_exit(in->st->sent ? 0 : 4);
}

/* Fork an injector for @in; its pid. */
__attribute__((unused)) static pid_t inject_start(const struct inject *in)
{
	pid_t pid;

	memset(in->st, 0, sizeof(*in->st));
	pid = fork();
	if (pid == 0)
		inject_run(in);
	return pid;
}

/* In a child in @ns: capture the UDP payloads to @dport arriving on
 * @ifname into @cap until CAP_MAX or killed. Only what reaches the kernel
 * stack is seen: frames an XDP program redirects never reach a packet
 * socket. */
__attribute__((unused)) static void inject_capture(const char *ns, const char *ifname,
						   uint16_t dport, struct inject_cap *cap)
{
	struct sockaddr_ll ll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IP) };
	uint8_t fr[2048];
	int fd;

	if (netns_enter(ns))
		_exit(0);
	ll.sll_ifindex = (int)if_nametoindex(ifname);
	fd = socket(AF_PACKET, SOCK_DGRAM, htons(ETH_P_IP));
	if (fd < 0 || bind(fd, (struct sockaddr *)&ll, sizeof(ll)))
		_exit(0);
	while (cap->n < CAP_MAX) {
		ssize_t n = recv(fd, fr, sizeof(fr), 0);
		const struct iphdr *ip = (const struct iphdr *)fr;
		const struct udphdr *u;
		size_t hl;

		if (n < 28 || ip->protocol != IPPROTO_UDP)
			continue;
		hl = ip->ihl * 4u;
		u = (const struct udphdr *)(fr + hl);
		if ((size_t)n < hl + 8 || ntohs(u->dest) != dport || n - hl - 8 > 1500)
			continue;
		memcpy(cap->buf[cap->n], fr + hl + 8, n - hl - 8);
		cap->len[cap->n] = (uint16_t)(n - hl - 8);
		cap->n++;
	}
	_exit(0);
}

/* One transfer (netns.h's xfer(), tag "first": receiver in ns_b, sender
 * in ns_a) whose datagrams to @port are captured on veth_b into @cap; the
 * two exit codes. The receiver must be a kernel UDP one for the capture to
 * see anything (see inject_capture). */
__attribute__((unused)) static void capture_xfer(char *const rargs[], char *const sargs[],
						 uint16_t port, struct inject_cap *cap, int *rrc,
						 int *src)
{
	pid_t c;

	cap->n = 0;
	c = fork();
	if (c == 0)
		inject_capture(ns_b, veth_b, port, cap);
	usleep(200000);
	/* One datagram per packet (no GSO/GRO), so the capture sees each. */
	setenv("PFS_UDP_OFFLOAD", "off", 1);
	xfer("first", rargs, sargs, rrc, src);
	unsetenv("PFS_UDP_OFFLOAD");
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
}

#endif /* PFS_TESTS_DGRAM_INJECT_H */
