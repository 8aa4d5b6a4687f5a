// SPDX-License-Identifier: Apache-2.0
/*
 * The AF_XDP link layer end to end over real veth pairs between network
 * namespaces this test creates and removes (also on failure, atexit and on
 * SIGINT/SIGTERM): a single-queue pair and a 4-queue pair (numtxqueues 4
 * numrxqueues 4). `pfs xsk sink` (our XDP program + one AF_XDP socket per
 * queue) runs in namespace B, `pfs xsk blast` in A; both join their
 * namespace with `nsenter --net=` (never `ip netns exec`, which hides
 * /sys/fs/bpf), and runs without root go through `setpriv` with an exact
 * capability set. Checks JSON results, exit codes, `ip link` (no program
 * left behind), that ARP/ND/ICMP and other UDP keep working while the
 * program is attached, stale-program replacement, native->generic fallback,
 * hugepage UMEM and the capability messages.
 * Needs root; what the machine lacks (AF_XDP, hugepages, setpriv) is a SKIP.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <netinet/ip_icmp.h>
#include <pwd.h>
#include <time.h>
#include <unistd.h>

#include <linux/if_packet.h>
#include <net/if.h>

#include "pfs/frame.h"
#include "pfs_copy.h"
#include "sh.h"
#include "tap.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif

struct pair {
	char ns_a[32], ns_b[32], if_a[16], if_b[16];
	char ip4_a[32], ip4_b[32], ip6_a[48], ip6_b[48];
	int queues;
};

static struct pair p1, p4;
static char tmpdir[64];
static const char *pfs_bin;
static char pfs_bin_copy[256];
static bool net_ok, have_setpriv;
static char net_skip[200] = "network namespaces not set up";
static int huge_added;
static unsigned int test_uid = 65534;
static pid_t live[16];

static long read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static void write_long(const char *path, long v)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fprintf(f, "%ld\n", v);
		fclose(f);
	}
}

static void teardown(void)
{
	for (int i = 0; i < 16; i++)
		if (live[i] > 0) {
			kill(live[i], SIGKILL);
			waitpid(live[i], NULL, 0);
			live[i] = 0;
		}
	if (p1.ns_a[0]) {
		/* deleting a namespace deletes its veth end, and the peer with it */
		sh("ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null", p1.ns_a, p1.ns_b);
		sh("ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null", p4.ns_a, p4.ns_b);
		p1.ns_a[0] = '\0';
	}
	if (huge_added) {
		long n = read_long("/proc/sys/vm/nr_hugepages");

		if (n >= huge_added)
			write_long("/proc/sys/vm/nr_hugepages", n - huge_added);
		huge_added = 0;
	}
	if (tmpdir[0])
		sh("rm -rf %s", tmpdir);
}

static void on_signal(int sig)
{
	(void)sig;
	exit(1); /* runs teardown */
}

static int make_pair(struct pair *p, const char *tag, int id, int queues)
{
	char q[64] = "";

	snprintf(p->ns_a, sizeof(p->ns_a), "pfsx%s-a-%d", tag, getpid());
	snprintf(p->ns_b, sizeof(p->ns_b), "pfsx%s-b-%d", tag, getpid());
	snprintf(p->if_a, sizeof(p->if_a), "xa%s%d", tag, getpid() % 100000);
	snprintf(p->if_b, sizeof(p->if_b), "xb%s%d", tag, getpid() % 100000);
	snprintf(p->ip4_a, sizeof(p->ip4_a), "10.%d.%d.1", 215 + id, getpid() % 250);
	snprintf(p->ip4_b, sizeof(p->ip4_b), "10.%d.%d.2", 215 + id, getpid() % 250);
	snprintf(p->ip6_a, sizeof(p->ip6_a), "fd%02x:%x::1", 0x15 + id, getpid() % 0xffff);
	snprintf(p->ip6_b, sizeof(p->ip6_b), "fd%02x:%x::2", 0x15 + id, getpid() % 0xffff);
	p->queues = queues;
	if (queues > 1)
		snprintf(q, sizeof(q), "numtxqueues %d numrxqueues %d", queues, queues);
	return sh(
		"ip netns add %s && ip netns add %s && "
		"ip link add %s %s type veth peer name %s %s && "
		"ip link set %s netns %s && ip link set %s netns %s && "
		"ip -n %s addr add %s/24 dev %s && ip -n %s addr add %s/24 dev %s && "
		"ip -n %s -6 addr add %s/64 dev %s nodad && ip -n %s -6 addr add %s/64 dev %s nodad && "
		"ip -n %s link set %s up && ip -n %s link set %s up && "
		"ip -n %s link set lo up && ip -n %s link set lo up",
		p->ns_a, p->ns_b, p->if_a, q, p->if_b, q, p->if_a, p->ns_a, p->if_b, p->ns_b,
		p->ns_a, p->ip4_a, p->if_a, p->ns_b, p->ip4_b, p->if_b, p->ns_a, p->ip6_a, p->if_a,
		p->ns_b, p->ip6_b, p->if_b, p->ns_a, p->if_a, p->ns_b, p->if_b, p->ns_a, p->ns_b);
}

static int t_setup(void)
{
	int fd;

	pfs_bin = getenv("PFS") ? getenv("PFS") : "build/pfs";
	if (access(pfs_bin, X_OK)) {
		snprintf(net_skip, sizeof(net_skip), "pfs binary %s not built", pfs_bin);
		return tap_skip("%s", net_skip);
	}
	if (geteuid()) {
		snprintf(net_skip, sizeof(net_skip), "needs root for netns/veth/XDP");
		return tap_skip("%s", net_skip);
	}
	fd = socket(AF_XDP, SOCK_RAW, 0);
	if (fd < 0) {
		snprintf(net_skip, sizeof(net_skip), "no AF_XDP sockets in this kernel: %s",
			 strerror(errno));
		return tap_skip("%s", net_skip);
	}
	close(fd);
	if (sh("command -v nsenter >/dev/null")) {
		snprintf(net_skip, sizeof(net_skip), "nsenter (util-linux) not installed");
		return tap_skip("%s", net_skip);
	}
	have_setpriv = !sh("command -v setpriv >/dev/null");
	test_uid = 20000 + (unsigned int)getpid() % 30000;
	while (test_uid < 60000 && getpwuid(test_uid))
		test_uid++;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	atexit(teardown);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/pfs-xsk-%d", getpid());
	mkdir(tmpdir, 0777);
	chmod(tmpdir, 0777); /* the setpriv runs (test_uid) write ready files here */
	pfs_bin = pfs_copy(pfs_bin, tmpdir, pfs_bin_copy, sizeof(pfs_bin_copy));
	if (!pfs_bin) {
		snprintf(net_skip, sizeof(net_skip), "%.190s", pfs_bin_copy);
		return TAP_FAIL;
	}
	if (make_pair(&p1, "1", 0, 1) || make_pair(&p4, "4", 1, 4)) {
		snprintf(net_skip, sizeof(net_skip), "cannot create netns/veth (ip failed)");
		return TAP_FAIL;
	}
	net_ok = true;
	tap_diag("1 queue: %s(%s) <-> %s(%s); 4 queues: %s <-> %s; unprivileged runs as uid %u",
		 p1.if_a, p1.ns_a, p1.if_b, p1.ns_b, p4.if_a, p4.if_b, test_uid);
	return TAP_PASS;
}

#define NEED_NET()                                       \
	do {                                             \
		if (!net_ok)                             \
			return tap_skip("%s", net_skip); \
	} while (0)

/* The setpriv prefix that runs as test_uid with exactly @caps
 * ("+net_raw,+bpf", or "" for none); NULL @caps: as root. test_uid is an
 * unused uid of this run, not 65534: RLIMIT_MEMLOCK is charged per user,
 * machine-wide, and other processes running as nobody must not eat the
 * budget this test measures. */
static const char *as_user(const char *caps, char *buf, size_t n)
{
	if (!caps)
		return "";
	snprintf(buf, n,
		 "setpriv --reuid=%u --regid=%u --clear-groups "
		 "--inh-caps=-all%s%s --ambient-caps=-all%s%s --bounding-set=-all%s%s ",
		 test_uid, test_uid, *caps ? "," : "", caps, *caps ? "," : "", caps,
		 *caps ? "," : "", caps);
	return buf;
}

/* Start `pfs xsk ARGS` in namespace @ns (as @caps, see as_user), stdout and
 * stderr to tmpdir/@tag.json|.err. Returns the pid (pfs itself: sh, nsenter
 * and setpriv all exec). */
static pid_t spawn(const char *ns, const char *caps, const char *tag, const char *env,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static pid_t spawn(const char *ns, const char *caps, const char *tag, const char *env,
		   const char *fmt, ...)
{
	char args[600], cmd[1400], pre[300];
	va_list ap;
	pid_t pid;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd),
		 "exec %s nsenter --net=/run/netns/%s %s%s xsk %s "
		 ">%s/%s.json 2>%s/%s.err",
		 env ? env : "", ns, as_user(caps, pre, sizeof(pre)), pfs_bin, args, tmpdir, tag,
		 tmpdir, tag);
	pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 16; i++)
		if (!live[i]) {
			live[i] = pid;
			break;
		}
	return pid;
}

static int wait_rc(pid_t pid, double timeout_s)
{
	struct timespec t0, t;
	int st;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);

		if (w == pid) {
			for (int i = 0; i < 16; i++)
				if (live[i] == pid)
					live[i] = 0;
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 >
		    timeout_s)
			break;
		usleep(20000);
	}
	kill(pid, SIGKILL);
	return wait_rc(pid, 5);
}

static bool wait_file(const char *path, pid_t pid, double timeout_s)
{
	for (int i = 0; i < (int)(timeout_s * 50); i++) {
		if (!access(path, F_OK))
			return true;
		if (waitpid(pid, NULL, WNOHANG) == pid) {
			for (int k = 0; k < 16; k++)
				if (live[k] == pid)
					live[k] = 0;
			return false;
		}
		usleep(20000);
	}
	return false;
}

static char *slurp(const char *tag, const char *ext)
{
	static char buf[4][8192];
	static int which;
	char p[128];
	char *b = buf[which = (which + 1) & 3];
	ssize_t n = 0;
	int fd;

	snprintf(p, sizeof(p), "%s/%s.%s", tmpdir, tag, ext);
	fd = open(p, O_RDONLY);
	if (fd >= 0) {
		n = read(fd, b, sizeof(buf[0]) - 1);
		close(fd);
	}
	b[n > 0 ? n : 0] = '\0';
	return b;
}

/* "key":NUMBER in a JSON text; ~0 when absent. */
static uint64_t ju(const char *json, const char *key)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), "\"%s\":", key);
	p = strstr(json, k);
	return p ? strtoull(p + strlen(k), NULL, 10) : ~0ULL;
}

/* "key":"VALUE" equals @val. */
static bool js(const char *json, const char *key, const char *val)
{
	char k[160];

	snprintf(k, sizeof(k), "\"%s\":\"%s\"", key, val);
	return strstr(json, k) != NULL;
}

static bool xdp_attached(const struct pair *p)
{
	return sh("ip -n %s link show dev %s | grep -q ' xdp'", p->ns_b, p->if_b) == 0;
}

struct run {
	int sink_rc, blast_rc;
	char *sink, *blast;
};

/* Sink in B (background, waits for its ready file), then blast from A. */
static void sink_blast(const struct pair *p, const char *tag, const char *sink_caps,
		       const char *blast_caps, const char *sink_args, const char *blast_args,
		       struct run *r)
{
	char ready[128], st[64], bt[64];
	pid_t s, b;

	snprintf(ready, sizeof(ready), "%s/%s.ready", tmpdir, tag);
	snprintf(st, sizeof(st), "%s-sink", tag);
	snprintf(bt, sizeof(bt), "%s-blast", tag);
	unlink(ready);
	s = spawn(p->ns_b, sink_caps, st, NULL, "sink --ifname %s --ready-file %s --timeout 20 %s",
		  p->if_b, ready, sink_args);
	if (!wait_file(ready, s, 10)) {
		r->sink_rc = wait_rc(s, 5);
		r->blast_rc = -1;
	} else {
		b = spawn(p->ns_a, blast_caps, bt, NULL, "blast --ifname %s %s", p->if_a,
			  blast_args);
		r->blast_rc = wait_rc(b, 30);
		r->sink_rc = wait_rc(s, 30);
	}
	r->sink = slurp(st, "json");
	r->blast = slurp(bt, "json");
	if (r->sink_rc || r->blast_rc) {
		tap_diag("sink rc %d: %s %s", r->sink_rc, r->sink, slurp(st, "err"));
		tap_diag("blast rc %d: %s %s", r->blast_rc, r->blast, slurp(bt, "err"));
	}
}

/* One delivery check: every frame arrives intact, program gone after. */
static int delivery_x(const struct pair *p, const char *tag, const char *attach, bool v6,
		      unsigned size, bool check_queue, const char *extra)
{
	char sa[200], ba[200];
	unsigned per_q = 1000, total = per_q * (unsigned)p->queues;
	struct run r;

	NEED_NET();
	/* 2048 RX frames per queue hold all 1000 frames of a queue even if the
	 * sink is not scheduled at all during the blast: no drop on a busy host */
	snprintf(sa, sizeof(sa), "--attach %s --queues %d --count %u --verify-csum --frames 4096",
		 attach, p->queues, total);
	snprintf(ba, sizeof(ba), "--dst %s --queues %d --count %u --size %u --pps 20000 %s",
		 v6 ? p->ip6_b : p->ip4_b, p->queues, per_q, size, extra);
	sink_blast(p, tag, NULL, NULL, sa, ba, &r);
	CHECK(r.sink_rc == 0 && r.blast_rc == 0, "exit codes sink %d blast %d", r.sink_rc,
	      r.blast_rc);
	CHECK(js(r.sink, "xdp_mode", attach), "not attached %s", attach);
	CHECK(ju(r.sink, "frames") == total && ju(r.sink, "bad") == 0,
	      "frames %" PRIu64 " bad %" PRIu64, ju(r.sink, "frames"), ju(r.sink, "bad"));
	CHECK(ju(r.sink, "payload_bytes") == (uint64_t)total * size, "payload bytes");
	CHECK(ju(r.sink, "redirected") == total && ju(r.sink, "no_xsk") == 0 &&
		      ju(r.sink, "rx_unparsed") == 0,
	      "xdp counters: %s", r.sink);
	CHECK(js(r.sink, "bind", "copy") || js(r.sink, "bind", "zerocopy"), "bind mode missing");
	if (check_queue)
		CHECK(ju(r.sink, "wrong_queue") == 0, "frames on the wrong queue: %s", r.sink);
	else
		tap_diag("generic XDP on veth: %" PRIu64 " of %u frames arrived on another queue "
			 "than sent (each still on the socket of the queue the kernel reported)",
			 ju(r.sink, "wrong_queue"), total);
	CHECK(!xdp_attached(p), "XDP program left attached after exit");
	return TAP_PASS;
}

static int delivery(const struct pair *p, const char *tag, const char *attach, bool v6,
		    unsigned size, bool check_queue)
{
	return delivery_x(p, tag, attach, v6, size, check_queue, "");
}

static int t_native_1q_v4(void)
{
	return delivery(&p1, "n1v4", "native", false, 64, true);
}
static int t_generic_1q_v4(void)
{
	return delivery(&p1, "g1v4", "generic", false, 1472, true);
}
static int t_native_1q_v6(void)
{
	return delivery(&p1, "n1v6", "native", true, 1452, true);
}
static int t_generic_1q_v6(void)
{
	return delivery(&p1, "g1v6", "generic", true, 64, true);
}
static int t_native_4q_v4(void)
{
	return delivery(&p4, "n4v4", "native", false, 256, true);
}
static int t_native_4q_v6(void)
{
	return delivery_x(&p4, "n4v6", "native", true, 1000, true, "--in-place");
}

static int t_vlan_native(void)
{
	return delivery_x(&p1, "vlan-n", "native", false, 300, true, "--vlan 100 --in-place");
}

static int t_vlan_generic(void)
{
	return delivery_x(&p1, "vlan-g", "generic", true, 300, true, "--vlan 4094");
}
static int t_generic_4q_v4(void)
{
	return delivery(&p4, "g4v4", "generic", false, 512, false);
}

/* Run @fn in a child that joined namespace @ns; its exit code. */
static int in_ns(const char *ns, int (*fn)(const void *), const void *arg)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		char path[96];
		int fd;

		snprintf(path, sizeof(path), "/run/netns/%s", ns);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || setns(fd, CLONE_NEWNET))
			_exit(120);
		_exit(fn(arg));
	}
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
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return htons((uint16_t)~s);
}

/* ICMP(v6) echo to @dst: 0 when a reply came back within 3 s. */
static int ping_fn(const void *arg)
{
	const char *dst = arg;
	bool v6 = strchr(dst, ':') != NULL;
	struct sockaddr_storage ss;
	struct timeval tv = { .tv_sec = 1 };
	uint8_t pkt[64], rb[256];
	int fd;

	memset(&ss, 0, sizeof(ss));
	if (v6) {
		((struct sockaddr_in6 *)&ss)->sin6_family = AF_INET6;
		inet_pton(AF_INET6, dst, &((struct sockaddr_in6 *)&ss)->sin6_addr);
		fd = socket(AF_INET6, SOCK_RAW, IPPROTO_ICMPV6);
	} else {
		((struct sockaddr_in *)&ss)->sin_family = AF_INET;
		inet_pton(AF_INET, dst, &((struct sockaddr_in *)&ss)->sin_addr);
		fd = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
	}
	if (fd < 0)
		return 2;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (int attempt = 0; attempt < 3; attempt++) {
		uint16_t id = (uint16_t)getpid(), seq = (uint16_t)attempt;

		memset(pkt, 0xa5, sizeof(pkt));
		pkt[0] = v6 ? 128 : 8; /* echo request */
		pkt[1] = 0;
		pkt[2] = pkt[3] = 0;
		memcpy(pkt + 4, &id, 2);
		memcpy(pkt + 6, &seq, 2);
		if (!v6) {
			uint16_t c = icmp_csum(pkt, sizeof(pkt));

			memcpy(pkt + 2, &c, 2);
		} /* the kernel fills the ICMPv6 checksum */
		if (sendto(fd, pkt, sizeof(pkt), 0, (struct sockaddr *)&ss,
			   v6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in)) < 0)
			continue;
		for (;;) {
			ssize_t n = recv(fd, rb, sizeof(rb), 0);
			const uint8_t *icmp = rb;

			if (n < 0)
				break;
			if (!v6) { /* raw IPv4 sockets return the IP header */
				size_t ihl = (size_t)(rb[0] & 0xf) * 4;

				if ((size_t)n < ihl + 8)
					continue;
				icmp = rb + ihl;
			}
			if (icmp[0] == (v6 ? 129 : 0) && !memcmp(icmp + 4, &id, 2)) {
				close(fd);
				return 0;
			}
		}
	}
	close(fd);
	return 1;
}

struct udp_job {
	const char *dst;
	uint16_t port;
	bool ip_options; /* IPv4 options (IHL 6) on the datagrams */
	int count;
	uint16_t size;
	int ready_fd; /* receiver: write a byte once bound */
};

/* The test pattern of `pfs xsk` (tools/pfs/xsk.c), queue 0. */
static void pattern(uint8_t *p, uint16_t size, uint64_t seq)
{
	uint32_t magic = 0x58534650u;
	uint16_t q = 0;

	memcpy(p, &magic, 4);
	memcpy(p + 4, &q, 2);
	memcpy(p + 6, &size, 2);
	memcpy(p + 8, &seq, 8);
	for (uint32_t i = 16; i < size; i++)
		p[i] = (uint8_t)(i * 13u + 1u);
}

static int udp_send_fn(const void *arg)
{
	const struct udp_job *j = arg;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(j->port) };
	uint8_t buf[1500];
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	inet_pton(AF_INET, j->dst, &sa.sin_addr);
	if (fd < 0)
		return 2;
	if (j->ip_options &&
	    setsockopt(fd, IPPROTO_IP, IP_OPTIONS, "\x01\x01\x01\x00", 4)) /* NOP NOP NOP EOL */
		return 3;
	for (int i = 0; i < j->count; i++) {
		pattern(buf, j->size, (uint64_t)i);
		if (sendto(fd, buf, j->size, 0, (struct sockaddr *)&sa, sizeof(sa)) != j->size)
			return 4;
		usleep(2000);
	}
	close(fd);
	return 0;
}

static int udp_recv_fn(const void *arg)
{
	const struct udp_job *j = arg;
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6,
				   .sin6_port = htons(j->port),
				   .sin6_addr = IN6ADDR_ANY_INIT };
	struct timeval tv = { .tv_sec = 3 };
	uint8_t buf[1500];
	int fd = socket(AF_INET6, SOCK_DGRAM, 0), got = 0;

	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
		return 2;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	(void)!write(j->ready_fd, "r", 1);
	while (got < j->count && recv(fd, buf, sizeof(buf), 0) == j->size)
		got++;
	close(fd);
	return got == j->count ? 0 : 1;
}

/* A normal UDP socket in B on @port gets datagrams sent from A. */
static int other_udp_port(const struct pair *p, uint16_t port)
{
	struct udp_job j = { .dst = p->ip4_b, .port = port, .count = 5, .size = 100 };
	int pfd[2], rc;
	pid_t r;
	char c;

	if (pipe(pfd))
		return -1;
	j.ready_fd = pfd[1];
	r = fork();
	if (r == 0) {
		close(pfd[0]);
		_exit(in_ns(p->ns_b, udp_recv_fn, &j));
	}
	close(pfd[1]);
	if (read(pfd[0], &c, 1) != 1) {
		close(pfd[0]);
		waitpid(r, NULL, 0);
		return -1;
	}
	close(pfd[0]);
	rc = in_ns(p->ns_a, udp_send_fn, &j);
	if (rc)
		tap_diag("UDP sender failed: %d", rc);
	waitpid(r, &rc, 0);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* While the program is attached: ARP + ICMP, ND + ICMPv6, UDP to another port
 * reach the kernel; UDP with IPv4 options to our port reaches the socket;
 * SIGTERM makes the sink detach and report. */
static int t_coexist(void)
{
	const struct pair *p = &p1;
	struct udp_job opt = {
		.dst = p->ip4_b, .port = 7600, .ip_options = true, .count = 7, .size = 200
	};
	char ready[128], *out;
	pid_t s;
	int rc;

	NEED_NET();
	snprintf(ready, sizeof(ready), "%s/coexist.ready", tmpdir);
	/* no --verify-csum: datagrams from A's own stack leave veth with a
	 * partial (offloaded) UDP checksum, which only a real NIC completes */
	s = spawn(p->ns_b, NULL, "coexist", NULL,
		  "sink --ifname %s --ready-file %s --timeout 30 "
		  "--idle 0 --attach native",
		  p->if_b, ready);
	CHECK(wait_file(ready, s, 10), "sink did not start: %s", slurp("coexist", "err"));
	sh("ip -n %s neigh flush dev %s; ip -n %s neigh flush dev %s", p->ns_a, p->if_a, p->ns_b,
	   p->if_b);
	rc = in_ns(p->ns_a, ping_fn, p->ip4_b);
	CHECK(rc == 0, "ICMP echo to %s failed (%d) with the program attached", p->ip4_b, rc);
	CHECK(!sh("ip -n %s neigh show %s dev %s | grep -q lladdr", p->ns_a, p->ip4_b, p->if_a),
	      "ARP did not resolve %s", p->ip4_b);
	rc = in_ns(p->ns_a, ping_fn, p->ip6_b);
	CHECK(rc == 0, "ICMPv6 echo to %s failed (%d)", p->ip6_b, rc);
	CHECK(!sh("ip -n %s -6 neigh show %s dev %s | grep -q lladdr", p->ns_a, p->ip6_b, p->if_a),
	      "neighbour discovery did not resolve %s", p->ip6_b);
	CHECK(other_udp_port(p, 7601) == 0, "UDP to port 7601 did not reach a normal socket");
	rc = in_ns(p->ns_a, udp_send_fn, &opt);
	CHECK(rc == 0, "sending UDP with IP options failed: %d", rc);
	usleep(200000);
	CHECK(xdp_attached(p), "program not attached while the sink runs");
	kill(s, SIGTERM);
	rc = wait_rc(s, 10);
	out = slurp("coexist", "json");
	CHECK(rc == 0, "sink exit %d after SIGTERM: %s %s", rc, out, slurp("coexist", "err"));
	CHECK(strstr(out, "\"stopped_by_signal\":true"), "no stop report: %s", out);
	CHECK(ju(out, "frames") == (uint64_t)opt.count && ju(out, "bad") == 0,
	      "IPv4-with-options datagrams: %s", out);
	CHECK(ju(out, "passed") >= 4, "passed counter %" PRIu64, ju(out, "passed"));
	CHECK(!xdp_attached(p), "program left attached after SIGTERM");
	return TAP_PASS;
}

static int t_stale_replaced(void)
{
	const struct pair *p = &p1;
	char ready[128], *out;
	uint64_t old_id;
	struct run r;
	pid_t s;

	NEED_NET();
	snprintf(ready, sizeof(ready), "%s/crash.ready", tmpdir);
	s = spawn(p->ns_b, NULL, "crash", NULL,
		  "sink --ifname %s --ready-file %s --timeout 30 "
		  "--idle 0",
		  p->if_b, ready);
	CHECK(wait_file(ready, s, 10), "sink did not start: %s", slurp("crash", "err"));
	kill(s, SIGKILL); /* a crash: nothing detaches */
	wait_rc(s, 5);
	out = slurp("crash", "json"); /* empty: it never finished */
	CHECK(xdp_attached(p), "SIGKILL should leave the program attached");
	old_id = 0;
	{
		FILE *f;
		char cmd[512];

		snprintf(cmd, sizeof(cmd),
			 "ip -n %s -d link show dev %s | grep -o 'prog/xdp id [0-9]*'"
			 " | grep -o '[0-9]*$'",
			 p->ns_b, p->if_b);
		f = popen(cmd, "r");
		if (f) {
			if (fscanf(f, "%" SCNu64, &old_id) != 1)
				old_id = 0;
			pclose(f);
		}
	}
	CHECK(old_id, "cannot read the stale program id");
	{
		char ba[256];

		snprintf(ba, sizeof(ba), "--dst %s --count 500 --pps 20000", p->ip4_b);
		sink_blast(p, "replace", NULL, NULL, "--count 500", ba, &r);
	}
	CHECK(r.sink_rc == 0 && r.blast_rc == 0, "exit codes %d %d", r.sink_rc, r.blast_rc);
	CHECK(ju(r.sink, "replaced_stale_prog_id") == old_id,
	      "stale id %" PRIu64 " not replaced: %s", old_id, r.sink);
	CHECK(ju(r.sink, "frames") == 500, "frames: %s", r.sink);
	CHECK(!xdp_attached(p), "program left attached");

	/* the other way out of a crash: `pfs xsk detach` */
	unlink(ready);
	s = spawn(p->ns_b, NULL, "crash2", NULL,
		  "sink --ifname %s --ready-file %s --timeout 30 "
		  "--idle 0",
		  p->if_b, ready);
	CHECK(wait_file(ready, s, 10), "sink did not start: %s", slurp("crash2", "err"));
	kill(s, SIGKILL);
	wait_rc(s, 5);
	CHECK(xdp_attached(p), "SIGKILL should leave the program attached");
	s = spawn(p->ns_b, NULL, "detach", NULL, "detach --ifname %s", p->if_b);
	CHECK(wait_rc(s, 10) == 0, "detach failed: %s", slurp("detach", "json"));
	out = slurp("detach", "json");
	CHECK(strstr(out, "\"detached\":true"), "detach: %s", out);
	CHECK(!xdp_attached(p), "program still attached after pfs xsk detach");
	s = spawn(p->ns_b, NULL, "detach2", NULL, "detach --ifname %s", p->if_b);
	CHECK(wait_rc(s, 10) == 0 && strstr(slurp("detach2", "json"), "\"detached\":false"),
	      "detach with nothing attached: %s", slurp("detach2", "json"));
	return TAP_PASS;
}

/* A program that is not ours is never replaced, and stays attached. */
static int t_foreign(void)
{
	char obj[300], a[300], *out;
	const char *b = getenv("BUILD") ? getenv("BUILD") : "build";
	pid_t s;
	int rc;

	NEED_NET();
	snprintf(obj, sizeof(obj), "%s/tests/xdp_foreign.bpf.o", b);
	/* make test builds it (clang is one of hack/install-deps.sh's packages). */
	CHECK(!access(obj, R_OK), "%s not built: is clang installed?", obj);
	if (sh("nsenter --net=/run/netns/%s ip link set dev %s xdpgeneric obj %s sec xdp", p1.ns_b,
	       p1.if_b, obj))
		return tap_skip("iproute2 cannot load an XDP object here");
	snprintf(a, sizeof(a), "sink --ifname %s --timeout 0.3", p1.if_b);
	s = spawn(p1.ns_b, NULL, "foreign", NULL, "%s", a);
	rc = wait_rc(s, 15);
	out = slurp("foreign", "json");
	CHECK(rc == 1 && strstr(out, "'not_pfs'") && strstr(out, "does not replace"), "rc %d %s",
	      rc, out);
	rc = sh("ip -n %s link show dev %s | grep -q 'name not_pfs'", p1.ns_b, p1.if_b);
	sh("ip -n %s link set dev %s xdpgeneric off", p1.ns_b, p1.if_b);
	CHECK(rc == 0, "the foreign program was removed");
	CHECK(!xdp_attached(&p1), "cleanup");
	return TAP_PASS;
}

#define NEED_SETPRIV()                                                         \
	do {                                                                   \
		if (!have_setpriv)                                             \
			return tap_skip("setpriv (util-linux) not installed"); \
	} while (0)

/* A non-root uid, sink with exactly CAP_NET_ADMIN,CAP_NET_RAW,CAP_BPF, blaster
 * with CAP_NET_RAW only (no CAP_IPC_LOCK: both UMEMs under 8 MiB together). */
static int t_nonroot_caps(void)
{
	char ba[256];
	struct run r;

	NEED_NET();
	NEED_SETPRIV();
	/* RLIMIT_MEMLOCK is charged per user: both UMEMs (same uid) must fit
	 * together: 4 MiB (1024 RX frames for 1000 sent) + 512 KiB */
	snprintf(ba, sizeof(ba), "--dst %s --count 1000 --pps 20000 --frames 256", p1.ip4_b);
	sink_blast(&p1, "nonroot", "+net_admin,+net_raw,+bpf", "+net_raw",
		   "--count 1000 --frames 2048", ba, &r);
	CHECK(r.sink_rc == 0 && r.blast_rc == 0, "exit codes %d %d", r.sink_rc, r.blast_rc);
	CHECK(ju(r.sink, "frames") == 1000 && ju(r.sink, "bad") == 0, "frames: %s", r.sink);
	CHECK(!xdp_attached(&p1), "program left attached");
	return TAP_PASS;
}

/* Runs `pfs xsk ARGS` as test_uid with @caps; 0 when it failed (exit
 * 1) with @needle in its JSON error. */
static int refused(const char *tag, const char *ns, const char *caps, const char *needle,
		   const char *args)
{
	pid_t s = spawn(ns, caps, tag, NULL, "%s", args);
	int rc = wait_rc(s, 15);
	char *out = slurp(tag, "json");

	CHECK(rc == 1, "exit %d, want 1: %s %s", rc, out, slurp(tag, "err"));
	CHECK(strstr(out, needle), "error does not name %s: %s", needle, out);
	return TAP_PASS;
}

static int t_no_cap_bpf(void)
{
	char a[300];

	NEED_NET();
	NEED_SETPRIV();
	snprintf(a, sizeof(a), "sink --ifname %s --timeout 2", p1.if_b);
	if (refused("nobpf", p1.ns_b, "+net_admin,+net_raw", "missing CAP_BPF", a) != TAP_PASS)
		return TAP_FAIL;
	CHECK(!xdp_attached(&p1), "program attached although it failed");
	snprintf(a, sizeof(a), "sink --ifname %s --timeout 2", p1.if_b);
	if (refused("noadmin", p1.ns_b, "+net_raw,+bpf", "CAP_NET_ADMIN", a) != TAP_PASS)
		return TAP_FAIL;
	snprintf(a, sizeof(a), "blast --ifname %s --dst %s --peer-mac 02:00:00:00:00:01 --count 1",
		 p1.if_a, p1.ip4_b);
	return refused("noraw", p1.ns_a, "", "missing CAP_NET_RAW", a);
}

/* The uninstall sweep: `detach --all` removes what a crashed run left on
 * any link of the namespace and leaves another's program attached; without
 * CAP_SYS_ADMIN it cannot tell them apart, so it removes nothing and says
 * so. */
static int t_sweep(void)
{
	const struct pair *p = &p1;
	const char *b = getenv("BUILD") ? getenv("BUILD") : "build";
	char ready[128], obj[300], *out;
	pid_t s;
	int rc;

	NEED_NET();
	NEED_SETPRIV();
	snprintf(obj, sizeof(obj), "%s/tests/xdp_foreign.bpf.o", b);
	CHECK(!access(obj, R_OK), "%s not built: is clang installed?", obj);
	CHECK(!sh("ip -n %s link add pfssweep0 type veth peer name pfssweep1 && ip -n %s link set pfssweep0 up",
		  p->ns_b, p->ns_b),
	      "cannot add a veth pair");
	if (sh("nsenter --net=/run/netns/%s ip link set dev pfssweep0 xdpgeneric obj %s sec xdp",
	       p->ns_b, obj)) {
		sh("ip -n %s link del pfssweep0", p->ns_b);
		return tap_skip("iproute2 cannot load an XDP object here");
	}
	snprintf(ready, sizeof(ready), "%s/sweep.ready", tmpdir);
	unlink(ready);
	s = spawn(p->ns_b, NULL, "sweepcrash", NULL,
		  "sink --ifname %s --ready-file %s --timeout 30 --idle 0", p->if_b, ready);
	CHECK(wait_file(ready, s, 10), "sink did not start: %s", slurp("sweepcrash", "err"));
	kill(s, SIGKILL); /* a crash: nothing detaches */
	wait_rc(s, 5);
	CHECK(xdp_attached(p), "SIGKILL should leave the program attached");

	rc = refused("sweepnoadmin", p->ns_b, "+net_admin,+bpf", "CAP_SYS_ADMIN", "detach --all");
	CHECK(rc == TAP_PASS, "a sweep without CAP_SYS_ADMIN was not refused");
	CHECK(xdp_attached(p), "a sweep that could not read names removed a program");

	s = spawn(p->ns_b, "+net_admin,+bpf,+sys_admin", "sweep", NULL, "detach --all");
	rc = wait_rc(s, 15);
	out = slurp("sweep", "json");
	CHECK(rc == 0 && strstr(out, "\"verdict\":\"OK\""), "sweep exit %d: %s %s", rc, out,
	      slurp("sweep", "err"));
	CHECK(ju(out, "detached") == 1 && ju(out, "kept") == 1, "counts: %s", out);
	CHECK(strstr(out, "\"prog_name\":\"not_pfs\"") &&
		      strstr(out, "\"why\":\"not a pfs program\""),
	      "the foreign program is not reported as kept: %s", out);
	CHECK(!xdp_attached(p), "the crashed run's program is still attached");
	rc = sh("ip -n %s link show dev pfssweep0 | grep -q 'name not_pfs'", p->ns_b);
	sh("ip -n %s link del pfssweep0", p->ns_b);
	CHECK(rc == 0, "the sweep removed a program that is not pfs's");
	return TAP_PASS;
}

/* A UMEM over RLIMIT_MEMLOCK needs CAP_IPC_LOCK, and works with it. */
static int t_memlock(void)
{
	struct rlimit rl;
	char a[300], *out;
	pid_t s;
	int rc;

	NEED_NET();
	NEED_SETPRIV();
	if (getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur >= (16u << 20))
		return tap_skip("RLIMIT_MEMLOCK is not below 16 MiB here");
	snprintf(a, sizeof(a), "sink --ifname %s --timeout 0.3 --frames 8192", p1.if_b);
	if (refused("noipclock", p1.ns_b, "+net_admin,+net_raw,+bpf", "CAP_IPC_LOCK", a) !=
	    TAP_PASS)
		return TAP_FAIL;
	CHECK(!xdp_attached(&p1), "program left attached");
	s = spawn(p1.ns_b, "+net_admin,+net_raw,+bpf,+ipc_lock", "ipclock", NULL, "%s", a);
	rc = wait_rc(s, 15);
	out = slurp("ipclock", "json");
	CHECK(rc == 0 && js(out, "verdict", "OK"), "with CAP_IPC_LOCK: %d %s %s", rc, out,
	      slurp("ipclock", "err"));
	CHECK(ju(out, "umem_bytes_per_queue") >= (16u << 20), "UMEM size: %s", out);
	return TAP_PASS;
}

/* UMEM on 2 MiB hugepages when the pool has them. */
static int t_hugepages(void)
{
	long before = read_long("/proc/sys/vm/nr_hugepages"), after;
	char ba[256];
	struct run r;

	NEED_NET();
	if (before < 0)
		return tap_skip("no /proc/sys/vm/nr_hugepages (hugetlb not configured)");
	write_long("/proc/sys/vm/nr_hugepages", before + 4); /* 2 UMEMs of 4 MiB */
	after = read_long("/proc/sys/vm/nr_hugepages");
	if (after > before)
		huge_added = (int)(after - before);
	if (after < before + 4)
		return tap_skip("cannot reserve 4 hugepages (nr_hugepages %ld -> %ld)", before,
				after);
	snprintf(ba, sizeof(ba), "--dst %s --count 1000 --pps 20000 --page 2m", p1.ip4_b);
	sink_blast(&p1, "huge", NULL, NULL, "--count 1000 --page 2m", ba, &r);
	if ((r.sink_rc || r.blast_rc) &&
	    (strstr(r.sink, "no 2 MiB hugepages") || strstr(r.blast, "no 2 MiB hugepages")))
		return tap_skip("the hugepages reserved were taken by another process meanwhile");
	CHECK(r.sink_rc == 0 && r.blast_rc == 0, "exit codes %d %d", r.sink_rc, r.blast_rc);
	CHECK(js(r.sink, "umem_page", "2m") && js(r.blast, "umem_page", "2m"), "pages: %s | %s",
	      r.sink, r.blast);
	CHECK(ju(r.sink, "frames") == 1000, "frames");
	return TAP_PASS;
}

/* Peer MTU > 3506: native attach on veth is refused with the kernel's
 * reason; auto falls back to generic and reports why. */
static int t_native_fallback(void)
{
	char a[300], *out;
	pid_t s;
	int rc;

	NEED_NET();
	if (sh("ip -n %s link set dev %s mtu 4000", p1.ns_a, p1.if_a))
		return tap_skip("cannot raise the veth MTU");
	snprintf(a, sizeof(a), "sink --ifname %s --timeout 0.3 --attach native", p1.if_b);
	s = spawn(p1.ns_b, NULL, "mtunative", NULL, "%s", a);
	rc = wait_rc(s, 15);
	out = slurp("mtunative", "json");
	if (rc != 1 || !strstr(out, "native XDP")) {
		sh("ip -n %s link set dev %s mtu 1500", p1.ns_a, p1.if_a);
		CHECK(0, "native attach with peer MTU 4000: rc %d %s", rc, out);
	}
	snprintf(a, sizeof(a), "sink --ifname %s --timeout 0.3", p1.if_b);
	s = spawn(p1.ns_b, NULL, "mtuauto", NULL, "%s", a);
	rc = wait_rc(s, 15);
	out = slurp("mtuauto", "json");
	sh("ip -n %s link set dev %s mtu 1500", p1.ns_a, p1.if_a);
	CHECK(rc == 0 && js(out, "xdp_mode", "generic"), "auto: rc %d %s", rc, out);
	CHECK(strstr(out, "\"xdp_fallback_reason\":\"native XDP on"), "no reason: %s", out);
	tap_diag("fallback reason: %.200s", strstr(out, "xdp_fallback_reason"));
	CHECK(!xdp_attached(&p1), "program left attached");
	return TAP_PASS;
}

/* veth has no AF_XDP zero-copy: forcing it fails clearly; auto gets copy. */
static int t_zerocopy_forced(void)
{
	char a[300], *out;
	pid_t s;
	int rc;

	NEED_NET();
	snprintf(a, sizeof(a), "sink --ifname %s --timeout 0.3 --bind zerocopy", p1.if_b);
	s = spawn(p1.ns_b, NULL, "zc", NULL, "%s", a);
	rc = wait_rc(s, 15);
	out = slurp("zc", "json");
	if (rc == 0 && js(out, "bind", "zerocopy"))
		return tap_skip("this veth supports zero-copy (unexpected; nothing to check)");
	CHECK(rc == 1 && strstr(out, "zero-copy"), "rc %d %s", rc, out);
	CHECK(!xdp_attached(&p1), "program left attached");
	return TAP_PASS;
}

/* Hand-made frames through AF_PACKET from A, to test the XDP program's
 * parser itself: what it redirects, passes and counts as malformed. */
struct rawframe {
	uint8_t b[256];
	size_t len;
};

struct rawjob {
	const char *ifname;
	struct rawframe f[16];
	int n;
};

static int raw_send_fn(const void *arg)
{
	const struct rawjob *j = arg;
	struct sockaddr_ll ll = { .sll_family = AF_PACKET, .sll_halen = 6 };
	int fd = socket(AF_PACKET, SOCK_RAW, 0);

	if (fd < 0)
		return 2;
	ll.sll_ifindex = (int)if_nametoindex(j->ifname);
	for (int i = 0; i < j->n; i++)
		if (sendto(fd, j->f[i].b, j->f[i].len, 0, (struct sockaddr *)&ll, sizeof(ll)) !=
		    (ssize_t)j->f[i].len)
			return 3;
	close(fd);
	return 0;
}

static void ip4_fix_csum(uint8_t *ip)
{
	size_t ihl = (size_t)(ip[0] & 0xf) * 4;
	uint16_t c;

	ip[10] = ip[11] = 0;
	c = icmp_csum(ip, ihl); /* the same RFC 1071 sum, network order */
	memcpy(ip + 10, &c, 2);
}

/* Frame i: pattern payload of 64 bytes, IPv4 or IPv6, VLAN, port. */
static struct rawframe *raw_add(struct rawjob *j, const struct pair *p, bool v6, uint16_t vlan,
				uint16_t port)
{
	struct pfs_frame_addr a = {
		.family = v6 ? AF_INET6 : AF_INET, .vlan = vlan, .src_port = 40000, .dst_port = port
	};
	struct pfs_frame_tmpl t;
	struct rawframe *f = &j->f[j->n++];
	uint8_t pay[64];

	memset(a.dst_mac, 0xff, 6);
	memcpy(a.src_mac, "\x02\x00\x00\x00\x00\x0a", 6);
	inet_pton(a.family, v6 ? p->ip6_a : p->ip4_a, a.src_ip);
	inet_pton(a.family, v6 ? p->ip6_b : p->ip4_b, a.dst_ip);
	pattern(pay, sizeof(pay), (uint64_t)j->n);
	pfs_frame_tmpl_init(&t, &a, 0);
	f->len = (size_t)pfs_frame_build(&t, f->b, sizeof(f->b), pay, sizeof(pay));
	return f;
}

static int xdp_parser(const char *attach)
{
	const struct pair *p = &p1;
	struct rawjob j = { .ifname = p->if_a };
	struct rawframe *f;
	char ready[128], tag[32], *out;
	pid_t s;
	int rc;

	NEED_NET();
	/* redirected: IPv4, IPv6, VLAN + IPv4 with options (bpf_xdp_load_bytes) */
	raw_add(&j, p, false, 0, 7600);
	raw_add(&j, p, true, 0, 7600);
	f = raw_add(&j, p, false, 100, 7600);
	memmove(f->b + 18 + 24, f->b + 18 + 20, f->len - 38);
	memcpy(f->b + 18 + 20, "\x01\x01\x01\x00", 4); /* NOP NOP NOP EOL */
	f->len += 4;
	f->b[18] = 0x46;
	f->b[18 + 3] = (uint8_t)(f->b[18 + 3] + 4); /* total length, < 256 */
	f->b[18 + 24 + 6] = f->b[18 + 24 + 7] = 0; /* UDP checksum: none */
	ip4_fix_csum(f->b + 18);
	/* passed: fragment, QinQ, IPv6 hop-by-hop, other port */
	f = raw_add(&j, p, false, 0, 7600);
	f->b[14 + 6] |= 0x20;
	ip4_fix_csum(f->b + 14);
	f = raw_add(&j, p, false, 100, 7600);
	memmove(f->b + 16, f->b + 12, f->len - 12);
	memcpy(f->b + 12, "\x88\xa8\x00\x05", 4);
	f->len += 4;
	f = raw_add(&j, p, true, 0, 7600);
	f->b[14 + 6] = 0;
	raw_add(&j, p, false, 0, 7601);
	/* malformed: IPv4 cut at 10 bytes, IHL 4, IPv6 + 4 bytes of UDP,
	 * IHL 15 with the options beyond the frame */
	f = raw_add(&j, p, false, 0, 7600);
	f->len = 14 + 10;
	f = raw_add(&j, p, false, 0, 7600);
	f->b[14] = 0x44;
	f = raw_add(&j, p, true, 0, 7600);
	f->len = 14 + 40 + 4;
	f = raw_add(&j, p, false, 0, 7600);
	f->b[14] = 0x4f;
	f->len = 14 + 40;

	snprintf(tag, sizeof(tag), "parser-%s", attach);
	snprintf(ready, sizeof(ready), "%s/%s.ready", tmpdir, tag);
	unlink(ready);
	s = spawn(p->ns_b, NULL, tag, NULL,
		  "sink --ifname %s --ready-file %s --timeout 30 "
		  "--idle 0 --attach %s",
		  p->if_b, ready, attach);
	CHECK(wait_file(ready, s, 10), "sink did not start: %s", slurp(tag, "err"));
	rc = in_ns(p->ns_a, raw_send_fn, &j);
	CHECK(rc == 0, "AF_PACKET send failed: %d", rc);
	usleep(300000);
	kill(s, SIGTERM);
	rc = wait_rc(s, 10);
	out = slurp(tag, "json");
	CHECK(rc == 0, "sink rc %d: %s", rc, out);
	CHECK(ju(out, "redirected") == 3 && ju(out, "frames") == 3 && ju(out, "bad") == 0 &&
		      ju(out, "rx_unparsed") == 0,
	      "redirected frames: %s", out);
	CHECK(ju(out, "malformed") == 4, "malformed: %s", out);
	CHECK(ju(out, "passed") >= 4, "passed: %s", out);
	return TAP_PASS;
}

/* The probe's own check: a payload byte flipped is a MISMATCH (exit 3). */
static int t_sink_detects_corruption(void)
{
	const struct pair *p = &p1;
	struct rawjob j = { .ifname = p->if_a };
	struct rawframe *f;
	char ready[128], *out;
	pid_t s;
	int rc;

	NEED_NET();
	raw_add(&j, p, false, 0, 7600);
	f = raw_add(&j, p, false, 0, 7600);
	f->b[f->len - 5] ^= 0x40; /* UDP checksum now wrong too: no --verify-csum */
	snprintf(ready, sizeof(ready), "%s/corrupt.ready", tmpdir);
	unlink(ready);
	s = spawn(p->ns_b, NULL, "corrupt", NULL,
		  "sink --ifname %s --ready-file %s --timeout 30 "
		  "--idle 0",
		  p->if_b, ready);
	CHECK(wait_file(ready, s, 10), "sink did not start: %s", slurp("corrupt", "err"));
	rc = in_ns(p->ns_a, raw_send_fn, &j);
	CHECK(rc == 0, "AF_PACKET send failed: %d", rc);
	usleep(300000);
	kill(s, SIGTERM);
	rc = wait_rc(s, 10);
	out = slurp("corrupt", "json");
	CHECK(rc == 3 && ju(out, "frames") == 2 && ju(out, "bad") == 1 &&
		      js(out, "verdict", "MISMATCH"),
	      "rc %d %s", rc, out);
	return TAP_PASS;
}

static int t_xdp_parser_native(void)
{
	return xdp_parser("native");
}
static int t_xdp_parser_generic(void)
{
	return xdp_parser("generic");
}

/* A tiny UMEM (32 RX frames) under an unpaced blast: the receiver drops
 * (counted by the kernel) but loses no frame of its own: afterwards a small
 * burst still gets through (its last seq arrives) and nothing is corrupt.
 * The fill-ring stash itself is rarely needed with a fill ring twice the RX
 * frames (seen once in 8 runs of 200k frames with a ring of exactly the RX
 * frames); the result's fill_stashed shows when it was. */
static int t_overload_small_umem(void)
{
	const struct pair *p = &p1;
	char ready[128], a[512], *out;
	pid_t s, b;
	int rc;

	NEED_NET();
	snprintf(ready, sizeof(ready), "%s/overload.ready", tmpdir);
	unlink(ready);
	s = spawn(p->ns_b, NULL, "overload", NULL,
		  "sink --ifname %s --ready-file %s --timeout 30 "
		  "--idle 0 --frames 64",
		  p->if_b, ready);
	CHECK(wait_file(ready, s, 10), "sink did not start: %s", slurp("overload", "err"));
	snprintf(a, sizeof(a), "blast --ifname %s --dst %s --count 50000", p->if_a, p->ip4_b);
	b = spawn(p->ns_a, NULL, "overload-b1", NULL, "%s", a);
	rc = wait_rc(b, 30);
	CHECK(rc == 0, "blast 1: %d %s", rc, slurp("overload-b1", "json"));
	usleep(300000);
	/* 30 frames < 32 RX frames: they fit even if the sink sleeps throughout */
	snprintf(a, sizeof(a), "blast --ifname %s --dst %s --count 30 --pps 1000", p->if_a,
		 p->ip4_b);
	b = spawn(p->ns_a, NULL, "overload-b2", NULL, "%s", a);
	rc = wait_rc(b, 30);
	CHECK(rc == 0, "blast 2: %d %s", rc, slurp("overload-b2", "json"));
	usleep(300000);
	kill(s, SIGTERM);
	rc = wait_rc(s, 10);
	out = slurp("overload", "json");
	CHECK(rc == 0 && ju(out, "bad") == 0 && ju(out, "rx_unparsed") == 0, "rc %d %s %s", rc, out,
	      slurp("overload", "err"));
	CHECK(strstr(out, "\"last_seq\":\"29\""),
	      "the burst after the overload did not get "
	      "through (frames lost in the fill path?): %s",
	      out);
	CHECK(!strstr(slurp("overload", "err"), "fill ring"), "fill ring error: %s",
	      slurp("overload", "err"));
	tap_diag("overload: received %" PRIu64 " of 50030, kernel fill-ring-empty drops %" PRIu64
		 ", frames stashed %" PRIu64,
		 ju(out, "frames"), ju(out, "k_fill_empty"), ju(out, "fill_stashed"));
	return TAP_PASS;
}

/* A receiver behind a router: the blaster puts the gateway's MAC on the
 * frames (route lookup, then the gateway's neighbour entry). B plays the
 * router here; its XDP program takes the frames by port, whatever the IP. */
static int t_off_link(void)
{
	const struct pair *p = &p1;
	char off4[48], off6[64], ba[256];
	struct run r;

	NEED_NET();
	snprintf(off4, sizeof(off4), "10.250.%d.7", getpid() % 250);
	snprintf(off6, sizeof(off6), "fd99:%x::7", getpid() % 0xffff);
	CHECK(!sh("ip -n %s route add %s/32 via %s dev %s && ip -n %s -6 route add %s/128 via %s "
		  "dev %s",
		  p->ns_a, off4, p->ip4_b, p->if_a, p->ns_a, off6, p->ip6_b, p->if_a),
	      "cannot add the routes");
	snprintf(ba, sizeof(ba), "--dst %s --count 300 --pps 20000", off4);
	sink_blast(p, "offlink4", NULL, NULL, "--count 300", ba, &r);
	CHECK(r.sink_rc == 0 && r.blast_rc == 0 && ju(r.sink, "frames") == 300, "IPv4: %d %d %s",
	      r.sink_rc, r.blast_rc, r.sink);
	CHECK(js(r.blast, "next_hop", p->ip4_b), "IPv4 next hop: %s", r.blast);
	snprintf(ba, sizeof(ba), "--dst %s --count 300 --pps 20000", off6);
	sink_blast(p, "offlink6", NULL, NULL, "--count 300", ba, &r);
	CHECK(r.sink_rc == 0 && r.blast_rc == 0 && ju(r.sink, "frames") == 300, "IPv6: %d %d %s",
	      r.sink_rc, r.blast_rc, r.sink);
	CHECK(js(r.blast, "next_hop", p->ip6_b), "IPv6 next hop: %s", r.blast);
	sh("ip -n %s route del %s/32; ip -n %s -6 route del %s/128", p->ns_a, off4, p->ns_a, off6);
	return TAP_PASS;
}

/* A queue the veth does not have: clear error, program detached; a run
 * right after it must not trip over the kernel's deferred release of the
 * first queue (EBUSY, retried). */
static int t_bad_queue_then_rerun(void)
{
	char a[300], *out;
	pid_t s;
	int rc;

	NEED_NET();
	for (int i = 0; i < 3; i++) {
		snprintf(a, sizeof(a), "sink --ifname %s --queues 2 --timeout 0.2", p1.if_b);
		s = spawn(p1.ns_b, NULL, "badq", NULL, "%s", a);
		rc = wait_rc(s, 15);
		out = slurp("badq", "json");
		CHECK(rc == 1 && strstr(out, "queue 1") && strstr(out, "does the queue exist"),
		      "rc %d %s", rc, out);
		CHECK(!xdp_attached(&p1), "program left attached after a failed start");
		snprintf(a, sizeof(a), "sink --ifname %s --timeout 0.2", p1.if_b);
		s = spawn(p1.ns_b, NULL, "rerun", NULL, "%s", a);
		rc = wait_rc(s, 15);
		out = slurp("rerun", "json");
		CHECK(rc == 0 && js(out, "verdict", "OK"), "rerun %d: rc %d %s %s", i, rc, out,
		      slurp("rerun", "err"));
	}
	return TAP_PASS;
}

/* No --ifname: the interface comes from AFXDP_DEVICES_<POOL>. */
static int t_env_ifname(void)
{
	char env[96], *out;
	pid_t s;
	int rc;

	NEED_NET();
	snprintf(env, sizeof(env), "env AFXDP_DEVICES_TESTPOOL=%s,other0", p1.if_b);
	s = spawn(p1.ns_b, NULL, "envif", env, "sink --timeout 0.3");
	rc = wait_rc(s, 15);
	out = slurp("envif", "json");
	CHECK(rc == 0 && strstr(out, "\"ifname_from\":\"AFXDP_DEVICES_TESTPOOL="), "rc %d %s", rc,
	      out);
	s = spawn(p1.ns_b, NULL, "envnone", "env -u AFXDP_DEVICES_TESTPOOL", "sink --timeout 0.3");
	rc = wait_rc(s, 15);
	out = slurp("envnone", "json");
	CHECK(rc == 2 && strstr(out, "AFXDP_DEVICES_"), "no interface: rc %d %s", rc, out);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "setup: two namespaces, 1-queue and 4-queue veth pairs", t_setup, .setup = true },
	{ "native XDP, 1 queue, IPv4 64 B: every frame intact", t_native_1q_v4 },
	{ "generic XDP, 1 queue, IPv4 1472 B", t_generic_1q_v4 },
	{ "native XDP, 1 queue, IPv6 1452 B", t_native_1q_v6 },
	{ "generic XDP, 1 queue, IPv6 64 B", t_generic_1q_v6 },
	{ "native XDP, 4 queues, IPv4: each frame on its queue's socket", t_native_4q_v4 },
	{ "native XDP, 4 queues, IPv6, frames built in place (tx_reserve/submit)", t_native_4q_v6 },
	{ "native XDP, 802.1Q-tagged IPv4 frames redirected", t_vlan_native },
	{ "generic XDP, 802.1Q-tagged IPv6 frames redirected", t_vlan_generic },
	{ "generic XDP, 4 queues, IPv4: all frames delivered", t_generic_4q_v4 },
	{ "attached: ARP+ICMP, ND+ICMPv6, other UDP port pass; IPv4 options redirected; SIGTERM detaches",
	  t_coexist },
	{ "a stale program (SIGKILLed run) is replaced; or removed by pfs xsk detach",
	  t_stale_replaced },
	{ "a foreign XDP program is refused and left attached", t_foreign },
	{ "detach --all: a crashed run's program removed from the namespace, a foreign one kept; "
	  "without CAP_SYS_ADMIN nothing removed, the reason named",
	  t_sweep },
	{ "non-root uid with CAP_NET_ADMIN,CAP_NET_RAW,CAP_BPF receives; CAP_NET_RAW sends",
	  t_nonroot_caps },
	{ "without CAP_BPF / CAP_NET_ADMIN / CAP_NET_RAW: refused, capability named",
	  t_no_cap_bpf },
	{ "UMEM over RLIMIT_MEMLOCK: CAP_IPC_LOCK named; works with it", t_memlock },
	{ "UMEM on 2 MiB hugepages", t_hugepages },
	{ "peer MTU 4000: native refused with reason, auto falls back to generic",
	  t_native_fallback },
	{ "zero-copy forced on veth: refused clearly", t_zerocopy_forced },
	{ "XDP parser, native: 3 redirected (incl. VLAN + IPv4 options), fragment/QinQ/"
	  "IPv6 ext/other port passed, 4 malformed counted",
	  t_xdp_parser_native },
	{ "XDP parser, generic: the same frames, the same verdicts", t_xdp_parser_generic },
	{ "a corrupted payload byte: sink reports MISMATCH (exit 3)", t_sink_detects_corruption },
	{ "32 RX frames under an unpaced blast: drops counted, no frame lost to the fill path",
	  t_overload_small_umem },
	{ "receiver behind a gateway (IPv4, IPv6): frames carry the gateway's MAC", t_off_link },
	{ "queue 1 on a 1-queue veth: clear error; an immediate rerun binds (EBUSY retried)",
	  t_bad_queue_then_rerun },
	{ "interface from AFXDP_DEVICES_<POOL>; none set: usage error naming the variables",
	  t_env_ifname },
};

TAP_MAIN(tests)
