/* SPDX-License-Identifier: Apache-2.0 */
/* Impairing the veth of tests/netns.h with real kernel mechanisms: tc netem
 * on A's side when the kernel has sch_netem; otherwise netfilter: loss =
 * iptables `statistic` DROP on B's input (a DROP in A's own output would
 * fail A's send with EPERM, which path loss never does), duplication =
 * iptables TEE to B on A's output, delay and reordering = an NFQUEUE holder
 * (a child of the test, in A) that releases each packet of A's output after
 * a fixed delay, a random share an extra delay later. Nothing is mocked:
 * every packet takes the kernel's path. One impairment at a time. */
#ifndef PFS_TESTS_IMPAIR_H
#define PFS_TESTS_IMPAIR_H

#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <linux/netlink.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

#include "netns.h"

static enum { IMP_NONE, IMP_NETEM, IMP_NETFILTER } backend;
static char imp_skip[200] = "no impairment backend";
static pid_t nfq_pid = -1;

struct impair {
	const char *name;
	const char *netem; /* the same impairment as netem arguments */
	double loss; /* share of packets dropped */
	double dup; /* share of packets sent twice */
	double reorder; /* share held reorder_us longer than the rest */
	int delay_us; /* every packet */
	int reorder_us;
};

/* ---- NFQUEUE holder: delay/reorder without netem ---- */

#define NFQ_NUM 7

static int nfq_send(int fd, uint8_t type, const void *attrs, size_t alen)
{
	struct {
		struct nlmsghdr nh;
		struct nfgenmsg g;
		uint8_t a[64];
	} m = { 0 };

	m.nh.nlmsg_len = NLMSG_LENGTH(sizeof(m.g) + alen);
	m.nh.nlmsg_type = (NFNL_SUBSYS_QUEUE << 8) | type;
	m.nh.nlmsg_flags = NLM_F_REQUEST;
	m.g.nfgen_family = AF_UNSPEC;
	m.g.version = NFNETLINK_V0;
	m.g.res_id = htons(NFQ_NUM);
	memcpy(m.a, attrs, alen);
	return send(fd, &m, m.nh.nlmsg_len, 0) < 0 ? -errno : 0;
}

/* One netlink attribute into @p; returns its aligned size. */
static size_t nla(uint8_t *p, uint16_t type, const void *v, uint16_t len)
{
	struct nlattr a = { .nla_len = NLA_HDRLEN + len, .nla_type = type };

	memcpy(p, &a, sizeof(a));
	memcpy(p + NLA_HDRLEN, v, len);
	return NLA_ALIGN(a.nla_len);
}

static int nfq_verdict(int fd, uint32_t id)
{
	struct nfqnl_msg_verdict_hdr v = { .verdict = htonl(NF_ACCEPT), .id = htonl(id) };
	uint8_t a[16];

	return nfq_send(fd, NFQNL_MSG_VERDICT, a, nla(a, NFQA_VERDICT_HDR, &v, sizeof(v)));
}

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Runs in a child inside ns_a until killed. Two FIFOs, one per delay, so
 * each is in release order. Writes one byte to @ready once bound. */
static int nfq_loop(const struct impair *im, int ready)
{
	static struct {
		uint32_t id;
		double at;
	} q[2][1 << 16];
	static uint8_t buf[1 << 16];
	uint32_t head[2] = { 0 }, tail[2] = { 0 };
	uint64_t rng = 0x9e3779b97f4a7c15ULL ^ (uint64_t)getpid();
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct nfqnl_msg_config_cmd cmd = { .command = NFQNL_CFG_CMD_BIND };
	struct nfqnl_msg_config_params prm = { .copy_range = 0, .copy_mode = NFQNL_COPY_META };
	uint32_t maxlen = htonl(1 << 15), flags = htonl(NFQA_CFG_F_FAIL_OPEN);
	uint8_t a[64];
	size_t al;
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER), sz = 16 << 20;

	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
		return 2;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz));
	if (nfq_send(fd, NFQNL_MSG_CONFIG, a, nla(a, NFQA_CFG_CMD, &cmd, sizeof(cmd))))
		return 3;
	al = nla(a, NFQA_CFG_PARAMS, &prm, sizeof(prm));
	al += nla(a + al, NFQA_CFG_QUEUE_MAXLEN, &maxlen, sizeof(maxlen));
	al += nla(a + al, NFQA_CFG_FLAGS, &flags, sizeof(flags));
	al += nla(a + al, NFQA_CFG_MASK, &flags, sizeof(flags));
	if (nfq_send(fd, NFQNL_MSG_CONFIG, a, al))
		return 4;
	if (write(ready, "r", 1) != 1)
		return 5;
	for (;;) {
		double now = mono(), next = now + 0.1;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		struct timespec ts;
		ssize_t n;

		for (int c = 0; c < 2; c++) {
			while (head[c] != tail[c] && q[c][head[c] % (1 << 16)].at <= now)
				nfq_verdict(fd, q[c][head[c]++ % (1 << 16)].id);
			if (head[c] != tail[c] && q[c][head[c] % (1 << 16)].at < next)
				next = q[c][head[c] % (1 << 16)].at;
		}
		ts = (struct timespec){ 0, next > now ? (long)((next - now) * 1e9) : 0 };
		ppoll(&p, 1, &ts, NULL);
		/* One read per round, so releases are never starved by arrivals. */
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n <= 0)
			continue;
		now = mono();
		for (struct nlmsghdr *nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)n);
		     nh = NLMSG_NEXT(nh, n)) {
			uint8_t *at =
				(uint8_t *)NLMSG_DATA(nh) + NLMSG_ALIGN(sizeof(struct nfgenmsg));
			uint8_t *end = (uint8_t *)nh + nh->nlmsg_len;

			if (nh->nlmsg_type != ((NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET))
				continue;
			while (at + NLA_HDRLEN <= end) {
				struct nlattr na;

				memcpy(&na, at, sizeof(na));
				if (na.nla_len < NLA_HDRLEN)
					break;
				if ((na.nla_type & NLA_TYPE_MASK) == NFQA_PACKET_HDR) {
					struct nfqnl_msg_packet_hdr ph;
					int c;

					memcpy(&ph, at + NLA_HDRLEN, sizeof(ph));
					rng ^= rng << 13;
					rng ^= rng >> 7;
					rng ^= rng << 17;
					c = (rng % 10000) < im->reorder * 10000;
					if (!im->delay_us && !c) {
						nfq_verdict(fd, ntohl(ph.packet_id));
					} else {
						q[c][tail[c] % (1 << 16)].id = ntohl(ph.packet_id);
						q[c][tail[c]++ % (1 << 16)].at =
							now +
							(im->delay_us + (c ? im->reorder_us : 0)) *
								1e-6;
					}
					break;
				}
				at += NLA_ALIGN(na.nla_len);
			}
		}
	}
}

static void impair_clear(void)
{
	if (nfq_pid > 0) {
		kill(nfq_pid, SIGKILL);
		waitpid(nfq_pid, NULL, 0);
		nfq_pid = -1;
	}
	if (backend == IMP_NETEM)
		sh("tc -n %s qdisc del dev %s root 2>/dev/null", ns_a, veth_a);
	else if (backend == IMP_NETFILTER)
		sh("ip netns exec %s iptables -F OUTPUT; ip netns exec %s iptables -t mangle -F "
		   "POSTROUTING; ip netns exec %s iptables -F INPUT",
		   ns_a, ns_a, ns_b);
}

static int impair_apply(const struct impair *im)
{
	impair_clear();
	if (backend == IMP_NETEM)
		return sh("tc -n %s qdisc replace dev %s root netem %s", ns_a, veth_a, im->netem);
	/* Loss where the wire ends (B's input), not in A's output: a packet A's
	 * own firewall drops fails A's send with EPERM, and the sender would
	 * know about it, which a lossy network never tells it. */
	if (im->loss > 0 && sh("ip netns exec %s iptables -A INPUT -i %s -m statistic --mode "
			       "random --probability %.4f -j DROP",
			       ns_b, veth_b, im->loss))
		return -1;
	if (im->dup > 0 && sh("ip netns exec %s iptables -t mangle -A POSTROUTING -o %s -m "
			      "statistic --mode random --probability %.4f -j TEE --gateway %s",
			      ns_a, veth_a, im->dup, ip_b))
		return -1;
	if (im->delay_us || im->reorder > 0) {
		int pfd[2];
		char c;

		if (pipe(pfd))
			return -1;
		nfq_pid = fork();
		if (nfq_pid == 0) {
			close(pfd[0]);
			_exit(netns_enter(ns_a) ? 1 : nfq_loop(im, pfd[1]));
		}
		close(pfd[1]);
		if (read(pfd[0], &c, 1) != 1) {
			close(pfd[0]);
			return -1;
		}
		close(pfd[0]);
		/* No --queue-bypass: the holder listens already, and should it
		 * die the datagrams are dropped (the test fails) rather than
		 * pass undelayed (the test would prove nothing). */
		if (sh("ip netns exec %s iptables -A OUTPUT -o %s -j NFQUEUE --queue-num %d", ns_a,
		       veth_a, NFQ_NUM))
			return -1;
	}
	return 0;
}

/* Pick the backend once, after netns_setup. Returns a note for the log. */
__attribute__((unused)) static const char *impair_probe(void)
{
	static char note[200];

	if (!sh("tc -n %s qdisc add dev %s root netem delay 0ms 2>/dev/null", ns_a, veth_a)) {
		backend = IMP_NETEM;
		impair_clear();
		snprintf(note, sizeof(note), "impairment: tc netem on %s", veth_a);
	} else if (!sh("ip netns exec %s iptables -A OUTPUT -o %s -m statistic --mode random "
		       "--probability 0.5 -j ACCEPT 2>/dev/null && ip netns exec %s iptables -F "
		       "OUTPUT",
		       ns_a, veth_a, ns_a)) {
		backend = IMP_NETFILTER;
		snprintf(note, sizeof(note),
			 "impairment: sch_netem is not in this kernel; using "
			 "netfilter (iptables statistic DROP on %s input, TEE and NFQUEUE delay on "
			 "%s output)",
			 veth_b, veth_a);
	} else {
		snprintf(imp_skip, sizeof(imp_skip),
			 "neither sch_netem nor iptables (statistic, "
			 "TEE, NFQUEUE) available to impair the veth");
		snprintf(note, sizeof(note), "%s", imp_skip);
	}
	return note;
}

#endif /* PFS_TESTS_IMPAIR_H */
