// SPDX-License-Identifier: Apache-2.0
/*
 * The afxdp transport (`pfs send/recv --transport afxdp`) end to end over
 * real veth pairs between network namespaces this test creates and removes
 * (also on failure, at exit and on SIGINT/SIGTERM): a single-queue pair
 * (netns.h) and a 4-queue pair (numtxqueues/numrxqueues 4). The receiver
 * attaches our XDP program in B, the sender uses TX-only AF_XDP sockets in
 * A; both join their namespace with `nsenter --net=` (never `ip netns
 * exec`, which hides /sys/fs/bpf), runs without root go through `setpriv`
 * with an exact capability set as an unused uid. Checks integrity on both
 * ends for payload/offset/arith, native and generic XDP, 1 and 4 queues,
 * the label and path, that ARP/ICMP work while the program is attached,
 * repair of injected loss (PFS_TEST_RX_DROP_PPM: AF_XDP bypasses netfilter
 * and this kernel has no netem), capabilities, a receiver killed or stopped
 * mid-transfer, and that no XDP program is left on the interface.
 * UMEMs on 4 KiB pages (--umem-page 4k): the hugepage pool is not touched.
 * Needs root; what the machine lacks (AF_XDP, setpriv) is a SKIP.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pwd.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "netns.h"

struct pair {
	char ns_a[32], ns_b[32], if_a[16], if_b[16], ip_a[32], ip_b[32], ip6_b[48];
	int queues;
};

static struct pair p1, p4;
static bool have_setpriv;
static unsigned int test_uid = 65534;
static int port = 7400;
static pid_t live[8];

static void teardown(void)
{
	for (int i = 0; i < 8; i++)
		if (live[i] > 0) {
			kill(live[i], SIGKILL);
			waitpid(live[i], NULL, 0);
			live[i] = 0;
		}
	if (p4.ns_a[0]) {
		/* deleting a namespace deletes its veth end and the peer, and
		 * with them any XDP program a killed receiver left behind */
		sh("ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null", p4.ns_a, p4.ns_b);
		p4.ns_a[0] = '\0';
	}
}

static void on_signal(int sig)
{
	(void)sig;
	exit(1); /* atexit: teardown, netns_teardown */
}

static double mono(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int t_setup(void)
{
	int rc, n = getpid() % 100000;

	rc = netns_setup("af", 219);
	if (rc != TAP_PASS)
		return rc;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	atexit(teardown);
	chmod(tmpdir, 0777); /* the setpriv runs (test_uid) write their results here */
	rc = netns_need_afxdp();
	if (rc != TAP_PASS)
		return rc;
	if (sh("command -v nsenter >/dev/null")) {
		net_ok = false;
		snprintf(net_skip, sizeof(net_skip), "nsenter (util-linux) not installed");
		return tap_skip("%s", net_skip);
	}
	have_setpriv = !sh("command -v setpriv >/dev/null");
	test_uid = 20000 + (unsigned int)getpid() % 30000;
	while (test_uid < 60000 && getpwuid(test_uid))
		test_uid++;
	p1 = (struct pair){ .queues = 1 };
	snprintf(p1.ns_a, sizeof(p1.ns_a), "%s", ns_a);
	snprintf(p1.ns_b, sizeof(p1.ns_b), "%s", ns_b);
	snprintf(p1.if_a, sizeof(p1.if_a), "%s", veth_a);
	snprintf(p1.if_b, sizeof(p1.if_b), "%s", veth_b);
	snprintf(p1.ip_a, sizeof(p1.ip_a), "%s", ip_a);
	snprintf(p1.ip_b, sizeof(p1.ip_b), "%s", ip_b);
	p4.queues = 4;
	snprintf(p4.ns_a, sizeof(p4.ns_a), "pfsaf4-a-%d", getpid());
	snprintf(p4.ns_b, sizeof(p4.ns_b), "pfsaf4-b-%d", getpid());
	snprintf(p4.if_a, sizeof(p4.if_a), "q4a%d", n);
	snprintf(p4.if_b, sizeof(p4.if_b), "q4b%d", n);
	snprintf(p4.ip_a, sizeof(p4.ip_a), "10.220.%d.1", getpid() % 250);
	snprintf(p4.ip_b, sizeof(p4.ip_b), "10.220.%d.2", getpid() % 250);
	snprintf(p4.ip6_b, sizeof(p4.ip6_b), "fd20:%x::2", getpid() % 0xffff);
	if (sh("ip netns add %s && ip netns add %s && "
	       "ip link add %s numtxqueues 4 numrxqueues 4 type veth peer name %s "
	       "numtxqueues 4 numrxqueues 4 && "
	       "ip link set %s netns %s && ip link set %s netns %s && "
	       "ip -n %s addr add %s/24 dev %s && ip -n %s addr add %s/24 dev %s && "
	       "ip -n %s link set %s up && ip -n %s link set %s up && "
	       "ip -n %s link set lo up && ip -n %s link set lo up && "
	       "ip -n %s -6 addr add fd20:%x::1/64 dev %s nodad && "
	       "ip -n %s -6 addr add %s/64 dev %s nodad",
	       p4.ns_a, p4.ns_b, p4.if_a, p4.if_b, p4.if_a, p4.ns_a, p4.if_b, p4.ns_b, p4.ns_a,
	       p4.ip_a, p4.if_a, p4.ns_b, p4.ip_b, p4.if_b, p4.ns_a, p4.if_a, p4.ns_b, p4.if_b,
	       p4.ns_a, p4.ns_b, p4.ns_a, getpid() % 0xffff, p4.if_a, p4.ns_b, p4.ip6_b, p4.if_b)) {
		net_ok = false;
		snprintf(net_skip, sizeof(net_skip), "cannot create the 4-queue veth pair");
		return TAP_FAIL;
	}
	tap_diag("4 queues: %s(%s) <-> %s(%s); unprivileged runs as uid %u", p4.if_a, p4.ns_a,
		 p4.if_b, p4.ns_b, test_uid);
	return TAP_PASS;
}

/* Start `[ENV] nsenter --net=NS [setpriv ...] pfs ARGS` (stdout/stderr to
 * tmpdir/@tag.json|.err). @caps: NULL root, else exactly these
 * capabilities as test_uid ("+net_raw,+bpf"). pfs is the pid (exec). */
static pid_t run_pfs(const char *ns, const char *caps, const char *tag, const char *env,
		     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static pid_t run_pfs(const char *ns, const char *caps, const char *tag, const char *env,
		     const char *fmt, ...)
{
	char args[700], cmd[1500], pre[300] = "";
	va_list ap;
	pid_t pid;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	if (caps)
		snprintf(pre, sizeof(pre),
			 "setpriv --reuid=%u --regid=%u --clear-groups "
			 "--inh-caps=-all,%s --ambient-caps=-all,%s --bounding-set=-all,%s ",
			 test_uid, test_uid, caps, caps, caps);
	snprintf(cmd, sizeof(cmd),
		 "exec env %s nsenter --net=/run/netns/%s %s%s %s "
		 ">%s/%s.json 2>%s/%s.err",
		 env ? env : "", ns, pre, pfs_bin, args, tmpdir, tag, tmpdir, tag);
	pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 8; i++)
		if (!live[i]) {
			live[i] = pid;
			break;
		}
	return pid;
}

static int reap(pid_t pid, int timeout_s)
{
	int rc = wait_rc(pid, timeout_s);

	for (int i = 0; i < 8; i++)
		if (live[i] == pid)
			live[i] = 0;
	return rc;
}

static bool wait_file(const char *path, pid_t pid, double timeout_s)
{
	for (int i = 0; i < (int)(timeout_s * 50); i++) {
		if (!access(path, F_OK))
			return true;
		if (waitpid(pid, NULL, WNOHANG) == pid) {
			for (int k = 0; k < 8; k++)
				if (live[k] == pid)
					live[k] = 0;
			return false;
		}
		usleep(20000);
	}
	return false;
}

static uint64_t ju(const char *json, const char *key)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), "\"%s\":", key);
	p = strstr(json, k);
	return p ? strtoull(p + strlen(k), NULL, 10) : ~0ULL;
}

static bool xdp_attached(const struct pair *p)
{
	return sh("ip -n %s link show dev %s | grep -q ' xdp'", p->ns_b, p->if_b) == 0;
}

#define BLOB "--size 64M --page 4k --seed 7"

struct xcase {
	const struct pair *p;
	const char *mode, *attach;
	uint32_t drop_ppm; /* PFS_TEST_RX_DROP_PPM */
	const char *rcaps, *scaps; /* NULL: root */
	bool env_ifname; /* AFXDP_DEVICES_* instead of --ifname */
	bool v6; /* over the pair's IPv6 addresses */
	bool rq_default; /* receiver without --queues: all the interface's RX queues */
};

/* One transfer; integrity OK on both ends, the program detached after. */
static int xfer_case(const struct xcase *c)
{
	const struct pair *p = c->p;
	char tag[48], rt[64], st[64], ready[128], env[160] = "", renv[200], rif[48] = "",
						  sif[48] = "", extra[64] = "", addr[64],
						  rq[24] = "";
	bool payload = !strcmp(c->mode, "payload");
	const char *rj, *sj;
	int rrc, src;
	pid_t r, s;

	NEED_NET();
	port++;
	snprintf(tag, sizeof(tag), "%s-%s-%dq-%u-%d", c->mode, c->attach, p->queues, c->drop_ppm,
		 port);
	snprintf(rt, sizeof(rt), "%s-recv", tag);
	snprintf(st, sizeof(st), "%s-send", tag);
	snprintf(ready, sizeof(ready), "%s/%s.ready", tmpdir, tag);
	if (c->env_ifname) {
		snprintf(env, sizeof(env), "AFXDP_DEVICES_POOL=%s", p->if_b);
		snprintf(sif, sizeof(sif), "--ifname %s", p->if_a);
	} else {
		snprintf(rif, sizeof(rif), "--ifname %s", p->if_b);
		snprintf(sif, sizeof(sif), "--ifname %s", p->if_a);
	}
	snprintf(renv, sizeof(renv), "%s PFS_TEST_RX_DROP_PPM=%u", env, c->drop_ppm);
	if (!c->rq_default)
		snprintf(rq, sizeof(rq), "--queues %d", p->queues);
	if (c->v6)
		snprintf(addr, sizeof(addr), "[%s]:%d", p->ip6_b, port);
	else
		snprintf(addr, sizeof(addr), "%s:%d", p->ip_b, port);
	if (!payload)
		snprintf(extra, sizeof(extra), "--max-len 2K --desc-per-gram 256");
	r = run_pfs(p->ns_b, c->rcaps, rt, renv,
		    "recv --transport afxdp %s --listen %s "
		    "--mode %s --attach %s %s --umem-page 4k --ready-file %s "
		    "--accept-timeout 20 --timeout 10 " BLOB,
		    rif, addr, c->mode, c->attach, rq, ready);
	CHECK(wait_file(ready, r, 10), "receiver did not start: %s %s", slurp(rt, "json"),
	      slurp(rt, "err"));
	s = run_pfs(p->ns_a, c->scaps, st, NULL,
		    "send --transport afxdp %s --connect %s "
		    "--mode %s --queues %d --umem-page 4k --bytes %s --timeout 10 %s " BLOB,
		    sif, addr, c->mode, p->queues, payload ? "48M" : "256M", extra);
	src = reap(s, 60);
	rrc = reap(r, 30);
	rj = slurp(rt, "json");
	sj = slurp(st, "json");
	if (rrc || src) {
		tap_diag("recv rc %d: %.600s", rrc, slurp(rt, "err"));
		tap_diag("send rc %d: %.600s", src, slurp(st, "err"));
	}
	CHECK(rrc == 0 && src == 0, "exit codes recv %d send %d: %s", rrc, src, rj);
	CHECK(strstr(rj, "\"integrity\":\"OK\"") && strstr(sj, "\"integrity\":\"OK\""),
	      "integrity: recv %s send %s", rj, sj);
	CHECK(strstr(rj, "\"decode_errors\":0"), "decode errors: %s", rj);
	CHECK(strstr(rj, "-AF_XDP\"") || strstr(rj, "- AF_XDP\""), "label: %s", rj);
	CHECK(strstr(rj, "\"afxdp_mode\":\"copy\"") && strstr(sj, "\"afxdp_mode\":\"copy\""),
	      "afxdp_mode (veth: copy): %s", rj);
	{
		char want[48];

		snprintf(want, sizeof(want), "%s xdp, copy, %d queue", c->attach, p->queues);
		CHECK(strstr(rj, want) && strstr(rj, "umem 4k"), "path lacks '%s': %s", want, rj);
	}
	if (c->v6)
		CHECK(strstr(rj, "1452B datagrams"), "IPv6 at MTU 1500 should carry 1452 bytes: %s",
		      rj);
	if (c->drop_ppm) {
		CHECK(ju(rj, "test_dropped") > 0 && ju(sj, "retransmitted") > 0,
		      "loss injected but nothing dropped/re-sent: %s %s", rj, sj);
	}
	CHECK(!xdp_attached(p), "XDP program left attached on %s", p->if_b);
	tap_diag("%s: %.1f MB/s, %" PRIu64 " frames sent, %" PRIu64 " re-sent, %" PRIu64
		 " test-dropped, %" PRIu64 " socket drops",
		 tag, strtod(strstr(rj, "\"effective_mb_s\":") + 17, NULL), ju(sj, "sent"),
		 ju(sj, "retransmitted"),
		 ju(rj, "test_dropped") == ~0ULL ? 0 : ju(rj, "test_dropped"),
		 ju(rj, "socket_drops"));
	return TAP_PASS;
}

#define CASE(fn, ...)                                   \
	static int fn(void)                             \
	{                                               \
		const struct xcase c = { __VA_ARGS__ }; \
		return xfer_case(&c);                   \
	}
CASE(t_1q_native_payload, .p = &p1, .mode = "payload", .attach = "native")
CASE(t_1q_native_offset, .p = &p1, .mode = "offset", .attach = "native")
CASE(t_1q_native_arith, .p = &p1, .mode = "arith", .attach = "native")
CASE(t_1q_generic_payload, .p = &p1, .mode = "payload", .attach = "generic")
CASE(t_1q_generic_offset, .p = &p1, .mode = "offset", .attach = "generic")
CASE(t_4q_native_payload, .p = &p4, .mode = "payload", .attach = "native")
CASE(t_4q_native_offset, .p = &p4, .mode = "offset", .attach = "native", .rq_default = true)
CASE(t_4q_generic_arith, .p = &p4, .mode = "arith", .attach = "generic", .env_ifname = true)
CASE(t_4q_v6_payload, .p = &p4, .mode = "payload", .attach = "native", .v6 = true,
     .drop_ppm = 10000)
CASE(t_loss1_payload, .p = &p1, .mode = "payload", .attach = "native", .drop_ppm = 10000)
CASE(t_loss1_offset, .p = &p1, .mode = "offset", .attach = "native", .drop_ppm = 10000)
CASE(t_loss1_arith, .p = &p1, .mode = "arith", .attach = "native", .drop_ppm = 10000)
CASE(t_loss5_payload, .p = &p1, .mode = "payload", .attach = "native", .drop_ppm = 50000)
CASE(t_loss5_offset, .p = &p4, .mode = "offset", .attach = "native", .drop_ppm = 50000)
CASE(t_loss5_arith, .p = &p1, .mode = "arith", .attach = "generic", .drop_ppm = 50000)

#define NEED_SETPRIV()                                                         \
	do {                                                                   \
		if (!have_setpriv)                                             \
			return tap_skip("setpriv (util-linux) not installed"); \
	} while (0)

/* A non-root uid: receiver with exactly CAP_NET_ADMIN,CAP_NET_RAW,CAP_BPF,
 * sender with CAP_NET_RAW only; the UMEMs (4 + 2 MiB, same uid) fit the
 * 8 MiB memlock limit, so no CAP_IPC_LOCK. */
static int t_nonroot(void)
{
	const struct xcase c = { .p = &p1,
				 .mode = "payload",
				 .attach = "native",
				 .rcaps = "+net_admin,+net_raw,+bpf",
				 .scaps = "+net_raw" };

	NEED_SETPRIV();
	return xfer_case(&c);
}

/* Non-root, 4 queues: the receiver's 4 UMEMs (16 MiB) are over the 8 MiB
 * memlock limit: with CAP_IPC_LOCK added it works, without it the receiver
 * fails naming CAP_IPC_LOCK. */
static int t_nonroot_ipc_lock(void)
{
	const struct xcase c = { .p = &p4,
				 .mode = "offset",
				 .attach = "native",
				 .rcaps = "+net_admin,+net_raw,+bpf,+ipc_lock",
				 .scaps = "+net_raw" };
	char *j;
	pid_t r;
	int rc;

	NEED_SETPRIV();
	rc = xfer_case(&c);
	if (rc != TAP_PASS)
		return rc;
	r = run_pfs(p4.ns_b, "+net_admin,+net_raw,+bpf", "noipclock", NULL,
		    "recv --transport "
		    "afxdp --ifname %s --listen %s:%d --mode payload --queues 4 --umem-page 4k "
		    "--accept-timeout 5",
		    p4.if_b, p4.ip_b, ++port);
	rc = reap(r, 15);
	j = slurp("noipclock", "json");
	CHECK(rc == 6, "exit %d, want 6 (transport unavailable): %s %s", rc, j,
	      slurp("noipclock", "err"));
	CHECK(strstr(j, "CAP_IPC_LOCK"), "error does not name CAP_IPC_LOCK: %s", j);
	CHECK(!xdp_attached(&p4), "program left attached");
	return TAP_PASS;
}

static int t_no_cap_bpf(void)
{
	char tag[] = "nobpf", *j;
	pid_t r;
	int rc;

	NEED_NET();
	NEED_SETPRIV();
	r = run_pfs(p1.ns_b, "+net_admin,+net_raw", tag, NULL,
		    "recv --transport afxdp --ifname "
		    "%s --listen %s:%d --mode payload --umem-page 4k --accept-timeout 5",
		    p1.if_b, p1.ip_b, ++port);
	rc = reap(r, 15);
	j = slurp(tag, "json");
	CHECK(rc == 6, "exit %d, want 6 (transport unavailable): %s %s", rc, j, slurp(tag, "err"));
	CHECK(strstr(j, "CAP_BPF"), "error does not name CAP_BPF: %s", j);
	CHECK(!xdp_attached(&p1), "program attached anyway");
	return TAP_PASS;
}

/* Run @fn in a child that joined namespace @ns; its exit code. */
static int in_ns(const char *ns, int (*fn)(const void *), const void *arg)
{
	pid_t pid = fork();
	int st;

	if (pid == 0)
		_exit(netns_enter(ns) ? 120 : fn(arg));
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static uint16_t icmp_csum(const void *d, size_t n)
{
	const uint8_t *p = d;
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return htons((uint16_t)~s);
}

/* ICMP echo to the IPv4 address @arg: 0 when a reply came within 3 tries. */
static int ping_fn(const void *arg)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct timeval tv = { .tv_sec = 1 };
	uint8_t pkt[64], rb[256];
	int fd = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);

	if (fd < 0)
		return 2;
	inet_pton(AF_INET, arg, &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (int attempt = 0; attempt < 3; attempt++) {
		uint16_t id = (uint16_t)getpid(), seq = (uint16_t)attempt, c;

		memset(pkt, 0xa5, sizeof(pkt));
		pkt[0] = 8; /* echo request */
		pkt[1] = pkt[2] = pkt[3] = 0;
		memcpy(pkt + 4, &id, 2);
		memcpy(pkt + 6, &seq, 2);
		c = icmp_csum(pkt, sizeof(pkt));
		memcpy(pkt + 2, &c, 2);
		if (sendto(fd, pkt, sizeof(pkt), 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			continue;
		for (;;) {
			ssize_t n = recv(fd, rb, sizeof(rb), 0);
			size_t ihl = (size_t)(rb[0] & 0xf) * 4;

			if (n < 0)
				break;
			if ((size_t)n >= ihl + 8 && rb[ihl] == 0 && !memcmp(rb + ihl + 4, &id, 2)) {
				close(fd);
				return 0;
			}
		}
	}
	close(fd);
	return 1;
}

/* A long transfer (sender killed at the end): while it runs, flushed ARP
 * entries resolve again and ICMP echo works both ways; after SIGTERM the
 * receiver reports the stop, exits non-zero and its program is gone; ping
 * still works after. */
static int t_arp_icmp_sigterm(void)
{
	char ready[128];
	const char *j;
	pid_t r, s;
	int rc;

	NEED_NET();
	snprintf(ready, sizeof(ready), "%s/arp.ready", tmpdir);
	r = run_pfs(p1.ns_b, NULL, "arp-recv", NULL,
		    "recv --transport afxdp --ifname %s "
		    "--listen %s:%d --mode payload --umem-page 4k --ready-file %s --timeout 10",
		    p1.if_b, p1.ip_b, ++port, ready);
	CHECK(wait_file(ready, r, 10), "receiver did not start: %s", slurp("arp-recv", "err"));
	s = run_pfs(p1.ns_a, NULL, "arp-send", NULL,
		    "send --transport afxdp --ifname %s "
		    "--connect %s:%d --mode payload --umem-page 4k --bytes 1T " BLOB,
		    p1.if_a, p1.ip_b, port);
	usleep(800000);
	CHECK(waitpid(s, NULL, WNOHANG) == 0, "sender ended early: %s", slurp("arp-send", "err"));
	CHECK(xdp_attached(&p1), "program not attached during the transfer");
	sh("ip -n %s neigh flush dev %s; ip -n %s neigh flush dev %s", p1.ns_a, p1.if_a, p1.ns_b,
	   p1.if_b);
	rc = in_ns(p1.ns_a, ping_fn, p1.ip_b);
	CHECK(rc == 0, "ICMP echo A->B failed (%d) during the transfer", rc);
	rc = in_ns(p1.ns_b, ping_fn, p1.ip_a);
	CHECK(rc == 0, "ICMP echo B->A failed (%d) during the transfer", rc);
	CHECK(!sh("ip -n %s neigh show %s dev %s | grep -q lladdr", p1.ns_a, p1.ip_b, p1.if_a),
	      "ARP did not resolve %s with the program attached", p1.ip_b);
	kill(r, SIGTERM);
	rc = reap(r, 10);
	j = slurp("arp-recv", "json");
	CHECK(rc > 0 && rc < 128, "receiver exit %d after SIGTERM: %s", rc, j);
	CHECK(strstr(j, "stopped by a signal"), "no stop message: %s", j);
	CHECK(!xdp_attached(&p1), "program left attached after SIGTERM");
	rc = reap(s, 15);
	CHECK(rc > 0 && rc < 128, "sender exit %d after the receiver stopped", rc);
	rc = in_ns(p1.ns_a, ping_fn, p1.ip_b);
	CHECK(rc == 0, "ICMP echo A->B failed (%d) after the run", rc);
	return TAP_PASS;
}

/* SIGKILL the sender: the receiver sees its control connection close, exits
 * non-zero at once and detaches its program. */
static int t_sender_killed(void)
{
	char ready[128];
	double t0;
	pid_t r, s;
	int rc;

	NEED_NET();
	snprintf(ready, sizeof(ready), "%s/skill.ready", tmpdir);
	r = run_pfs(p1.ns_b, NULL, "skill-recv", NULL,
		    "recv --transport afxdp --ifname %s "
		    "--listen %s:%d --mode payload --umem-page 4k --ready-file %s",
		    p1.if_b, p1.ip_b, ++port, ready);
	CHECK(wait_file(ready, r, 10), "receiver did not start: %s", slurp("skill-recv", "err"));
	s = run_pfs(p1.ns_a, NULL, "skill-send", NULL,
		    "send --transport afxdp --ifname %s "
		    "--connect %s:%d --mode payload --umem-page 4k --bytes 1T " BLOB,
		    p1.if_a, p1.ip_b, port);
	usleep(800000);
	CHECK(waitpid(r, NULL, WNOHANG) == 0, "receiver ended early: %s",
	      slurp("skill-recv", "err"));
	kill(s, SIGKILL);
	reap(s, 5);
	t0 = mono();
	rc = reap(r, 15);
	CHECK(rc > 0 && rc < 128, "receiver exit %d (want a clean non-zero exit): %s", rc,
	      slurp("skill-recv", "err"));
	CHECK(mono() - t0 < 3, "receiver took %.1f s to notice", mono() - t0);
	CHECK(strstr(slurp("skill-recv", "json"), "sender"), "message: %s",
	      slurp("skill-recv", "json"));
	CHECK(!xdp_attached(&p1), "program left attached");
	return TAP_PASS;
}

/* SIGTERM a receiver that is still waiting for its sender: it stops at
 * once, exit 1, program detached. */
static int t_sigterm_idle(void)
{
	char ready[128];
	double t0;
	pid_t r;
	int rc;

	NEED_NET();
	snprintf(ready, sizeof(ready), "%s/idle.ready", tmpdir);
	r = run_pfs(p1.ns_b, NULL, "idle-recv", NULL,
		    "recv --transport afxdp --ifname %s "
		    "--listen %s:%d --mode payload --umem-page 4k --ready-file %s "
		    "--accept-timeout 60",
		    p1.if_b, p1.ip_b, ++port, ready);
	CHECK(wait_file(ready, r, 10), "receiver did not start: %s", slurp("idle-recv", "err"));
	CHECK(xdp_attached(&p1), "program not attached while waiting");
	t0 = mono();
	kill(r, SIGTERM);
	rc = reap(r, 10);
	CHECK(rc == 1, "exit %d after SIGTERM, want 1: %s", rc, slurp("idle-recv", "err"));
	CHECK(mono() - t0 < 3, "took %.1f s to stop", mono() - t0);
	CHECK(strstr(slurp("idle-recv", "json"), "stopped by a signal"), "message: %s",
	      slurp("idle-recv", "json"));
	CHECK(!xdp_attached(&p1), "program left attached");
	return TAP_PASS;
}

/* SIGKILL the receiver: its TCP control connection closes, the sender must
 * exit non-zero within seconds. SIGKILL leaves the program attached (netlink
 * attachment outlives the process; its sockets are gone, so it passes
 * everything): the next receiver replaces it as stale. */
static int t_receiver_killed(void)
{
	char ready[128];
	double t0;
	pid_t r, s;
	int rc;

	NEED_NET();
	snprintf(ready, sizeof(ready), "%s/killed.ready", tmpdir);
	r = run_pfs(p4.ns_b, NULL, "killed-recv", NULL,
		    "recv --transport afxdp --ifname %s "
		    "--listen %s:%d --mode payload --queues 4 --umem-page 4k --ready-file %s",
		    p4.if_b, p4.ip_b, ++port, ready);
	CHECK(wait_file(ready, r, 10), "receiver did not start: %s", slurp("killed-recv", "err"));
	s = run_pfs(p4.ns_a, NULL, "killed-send", NULL,
		    "send --transport afxdp --ifname %s "
		    "--connect %s:%d --mode payload --queues 4 --umem-page 4k --bytes 1T " BLOB,
		    p4.if_a, p4.ip_b, port);
	usleep(1000000);
	CHECK(waitpid(s, NULL, WNOHANG) == 0, "sender ended before the kill: %s",
	      slurp("killed-send", "err"));
	kill(r, SIGKILL);
	reap(r, 5);
	t0 = mono();
	rc = reap(s, 15);
	tap_diag("sender exited %d after %.2f s: %.300s", rc, mono() - t0,
		 slurp("killed-send", "err"));
	CHECK(rc > 0 && rc < 128, "sender exit %d (want a clean non-zero exit)", rc);
	CHECK(mono() - t0 < 6, "sender took %.1f s to notice", mono() - t0);
	CHECK(strstr(slurp("killed-send", "json"), "\"ok\":false") &&
		      strstr(slurp("killed-send", "err"), "receiver"),
	      "message: %s", slurp("killed-send", "err"));
	/* the stale program: a new transfer replaces it and detaches after */
	{
		const struct xcase c = { .p = &p4, .mode = "offset", .attach = "native" };

		CHECK(xdp_attached(&p4), "expected the killed receiver's program to stay");
		rc = xfer_case(&c);
		CHECK(rc == TAP_PASS, "transfer after a killed receiver failed");
	}
	return TAP_PASS;
}

static int t_teardown(void)
{
	teardown();
	netns_teardown();
	ns_a[0] = '\0';
	tmpdir[0] = '\0';
	/* Only this run's namespaces (every name ends in -<pid>): another
	 * run of the suite on the same machine may hold its own. */
	CHECK(sh("ip netns list | grep -q '^pfsaf.*-%d\\b'", getpid()) != 0,
	      "namespaces left behind");
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "create a 1-queue and a 4-queue veth pair between namespaces", t_setup, .setup = true },
	{ "1 queue, native XDP, payload: integrity OK, label/path/afxdp_mode, detached",
	  t_1q_native_payload },
	{ "1 queue, native XDP, offset: integrity OK, detached", t_1q_native_offset },
	{ "1 queue, native XDP, arith: integrity OK, detached", t_1q_native_arith },
	{ "1 queue, generic XDP, payload: integrity OK, detached", t_1q_generic_payload },
	{ "1 queue, generic XDP, offset: integrity OK, detached", t_1q_generic_offset },
	{ "4 queues, native XDP, payload: integrity OK, detached", t_4q_native_payload },
	{ "4 queues, native XDP, offset; receiver without --queues takes all 4 RX queues",
	  t_4q_native_offset },
	{ "4 queues, generic XDP, arith, receiver interface from AFXDP_DEVICES_POOL",
	  t_4q_generic_arith },
	{ "IPv6, 4 queues, payload, 1% injected loss: 1452-byte datagrams, integrity OK",
	  t_4q_v6_payload },
	{ "1% injected loss, payload: repaired, integrity OK", t_loss1_payload },
	{ "1% injected loss, offset: repaired, integrity OK", t_loss1_offset },
	{ "1% injected loss, arith: repaired, integrity OK", t_loss1_arith },
	{ "5% injected loss, payload: repaired, integrity OK", t_loss5_payload },
	{ "5% injected loss, offset, 4 queues: repaired, integrity OK", t_loss5_offset },
	{ "5% injected loss, arith, generic XDP: repaired, integrity OK", t_loss5_arith },
	{ "non-root: receiver with exactly NET_ADMIN+NET_RAW+BPF, sender NET_RAW", t_nonroot },
	{ "non-root receiver without CAP_BPF fails naming CAP_BPF, exit 6 (transport unavailable)",
	  t_no_cap_bpf },
	{ "non-root, 4 queues (16 MiB of UMEM): works with CAP_IPC_LOCK, fails naming it without",
	  t_nonroot_ipc_lock },
	{ "ARP and ICMP work while attached and after; SIGTERM detaches", t_arp_icmp_sigterm },
	{ "sender killed mid-transfer: receiver exits non-zero at once, program detached",
	  t_sender_killed },
	{ "SIGTERM while waiting for a sender: stops at once, program detached", t_sigterm_idle },
	{ "receiver killed mid-transfer: sender exits non-zero within seconds; stale program "
	  "replaced by the next run",
	  t_receiver_killed },
	{ "remove the namespaces and veth pairs", t_teardown, .setup = true },
};

TAP_MAIN(tests)
