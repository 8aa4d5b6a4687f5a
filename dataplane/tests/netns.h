/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the transport tests: two network namespaces joined by a veth
 * pair (created by netns_setup, removed at exit), running `pfs` inside one
 * of them (spawn joins the namespace with setns() and execs the static
 * binary, stdout/stderr into files under tmpdir), waiting with a deadline,
 * and reading those files back. Single-threaded test programs only. */
#ifndef PFS_TESTS_NETNS_H
#define PFS_TESTS_NETNS_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pfs_copy.h"
#include "sh.h"
#include "tap.h"

static char ns_a[32], ns_b[32], veth_a[16], veth_b[16], ip_a[32], ip_b[32], tmpdir[64];
static const char *pfs_bin;
static char pfs_bin_copy[256];
static bool net_ok;
static char net_skip[200] = "network namespaces not set up";

static void netns_teardown(void)
{
	if (ns_a[0]) {
		sh("ip netns del %s 2>/dev/null", ns_a);
		sh("ip netns del %s 2>/dev/null", ns_b);
	}
	if (tmpdir[0])
		sh("rm -rf %s", tmpdir);
}

/* Create pfs<tag>-a/b-PID joined by a veth pair, 10.@net.X.1/.2. Returns
 * TAP_PASS, TAP_SKIP (no pfs binary, not root) or TAP_FAIL. */
__attribute__((unused)) static int netns_setup(const char *tag, int net)
{
	int id = getpid() % 250, n = getpid() % 100000;

	pfs_bin = getenv("PFS") ? getenv("PFS") : "build/pfs";
	if (access(pfs_bin, X_OK)) {
		snprintf(net_skip, sizeof(net_skip), "pfs binary %s not built", pfs_bin);
		return tap_skip("%s", net_skip);
	}
	if (geteuid()) {
		snprintf(net_skip, sizeof(net_skip), "needs root for netns/veth");
		return tap_skip("%s", net_skip);
	}
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/pfs-%s-%d", tag, getpid());
	mkdir(tmpdir, 0700);
	atexit(netns_teardown);
	pfs_bin = pfs_copy(pfs_bin, tmpdir, pfs_bin_copy, sizeof(pfs_bin_copy));
	if (!pfs_bin) {
		snprintf(net_skip, sizeof(net_skip), "%.190s", pfs_bin_copy);
		return TAP_FAIL;
	}
	snprintf(ns_a, sizeof(ns_a), "pfs%s-a-%d", tag, getpid());
	snprintf(ns_b, sizeof(ns_b), "pfs%s-b-%d", tag, getpid());
	snprintf(veth_a, sizeof(veth_a), "p%.1sa%d", tag, n);
	snprintf(veth_b, sizeof(veth_b), "p%.1sb%d", tag, n);
	snprintf(ip_a, sizeof(ip_a), "10.%d.%d.1", net, id);
	snprintf(ip_b, sizeof(ip_b), "10.%d.%d.2", net, id);
	if (sh("ip netns add %s && ip netns add %s && "
	       "ip link add %s type veth peer name %s && "
	       "ip link set %s netns %s && ip link set %s netns %s && "
	       "ip -n %s addr add %s/24 dev %s && ip -n %s addr add %s/24 dev %s && "
	       "ip -n %s link set %s up && ip -n %s link set %s up && "
	       "ip -n %s link set lo up && ip -n %s link set lo up",
	       ns_a, ns_b, veth_a, veth_b, veth_a, ns_a, veth_b, ns_b, ns_a, ip_a, veth_a, ns_b,
	       ip_b, veth_b, ns_a, veth_a, ns_b, veth_b, ns_a, ns_b)) {
		snprintf(net_skip, sizeof(net_skip), "cannot create netns/veth (ip failed)");
		return TAP_FAIL;
	}
	net_ok = true;
	tap_diag("veth %s(%s, %s) <-> %s(%s, %s)", veth_a, ns_a, ip_a, veth_b, ns_b, ip_b);
	return TAP_PASS;
}

#ifndef AF_XDP
#define AF_XDP 44
#endif

/* After netns_setup: the network tests SKIP, with the reason, when this
 * kernel has no AF_XDP sockets. TAP_PASS or TAP_SKIP. */
__attribute__((unused)) static int netns_need_afxdp(void)
{
	int fd = socket(AF_XDP, SOCK_RAW, 0);

	if (fd < 0) {
		net_ok = false;
		snprintf(net_skip, sizeof(net_skip), "no AF_XDP sockets in this kernel: %s",
			 strerror(errno));
		return tap_skip("%s", net_skip);
	}
	close(fd);
	return TAP_PASS;
}

/* Join netns @ns (in a child). 0 or -1. */
__attribute__((unused)) static int netns_enter(const char *ns)
{
	char p[128];
	int fd;

	snprintf(p, sizeof(p), "/run/netns/%s", ns);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET))
		return -1;
	close(fd);
	return 0;
}

/* In a child: join ns_a and open a TCP connection to ip_b:@port, retried
 * for 5 s while the receiver starts listening. The socket, or -1. */
__attribute__((unused)) static int netns_connect_b(uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int s = -1;

	if (netns_enter(ns_a))
		return -1;
	inet_pton(AF_INET, ip_b, &sa.sin_addr);
	for (int i = 0; i < 100 && s < 0; i++) {
		s = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(s, (struct sockaddr *)&sa, sizeof(sa))) {
			close(s);
			s = -1;
			usleep(50000);
		}
	}
	return s;
}

/* Fork, join netns @ns, exec pfs with @args as @uid (0: stay root);
 * stdout/stderr to tmpdir/@tag.json and tmpdir/@tag.err, opened before
 * privileges are dropped. */
__attribute__((unused)) static pid_t spawn_as(const char *ns, const char *tag, uid_t uid,
					      char *const args[])
{
	pid_t pid = fork();

	if (pid == 0) {
		char p[128];
		char *argv[48];
		int fd, i = 0;

		snprintf(p, sizeof(p), "%s/%s.json", tmpdir, tag);
		fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 1);
		snprintf(p, sizeof(p), "%s/%s.err", tmpdir, tag);
		fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 2);
		/* Failures before pfs runs are said in words in the .err file the
		 * test prints, not left as a bare exit code. */
		if (netns_enter(ns)) {
			fprintf(stderr, "test harness: cannot join netns %s: %s\n", ns,
				strerror(errno));
			_exit(120);
		}
		if (uid &&
		    (setgroups(0, NULL) || setresgid(uid, uid, uid) || setresuid(uid, uid, uid))) {
			fprintf(stderr, "test harness: cannot become uid %u: %s\n", (unsigned)uid,
				strerror(errno));
			_exit(122);
		}
		argv[i++] = (char *)pfs_bin;
		for (int k = 0; args[k] && i < 47; k++)
			argv[i++] = args[k];
		argv[i] = NULL;
		execv(pfs_bin, argv);
		fprintf(stderr, "test harness: cannot exec %s as uid %u: %s%s\n", pfs_bin,
			(unsigned)uid, strerror(errno),
			errno == EACCES ?
				" (a directory on its path is not searchable by that user)" :
				"");
		_exit(121);
	}
	return pid;
}

__attribute__((unused)) static pid_t spawn(const char *ns, const char *tag, char *const args[])
{
	return spawn_as(ns, tag, 0, args);
}

/* Exit code of @pid, 128+signal, or -1 after killing it at the deadline. */
__attribute__((unused)) static int wait_rc(pid_t pid, int timeout_s)
{
	time_t end = time(NULL) + timeout_s;
	int st;

	while (time(NULL) <= end) {
		pid_t w = waitpid(pid, &st, WNOHANG);

		if (w == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		usleep(20000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

/* tmpdir/@tag.@ext, up to 8 KiB; two buffers alternate. */
__attribute__((unused)) static char *slurp(const char *tag, const char *ext)
{
	static char buf[2][8192];
	static int which;
	char p[128];
	char *b = buf[which ^= 1];
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

/* Wait (@seconds at most) until tmpdir/@tag.err says @what. */
__attribute__((unused)) static bool wait_log_for(const char *tag, const char *what, int seconds)
{
	for (int i = 0; i < seconds * 50; i++) {
		if (strstr(slurp(tag, "err"), what))
			return true;
		usleep(20000);
	}
	return false;
}

/* wait_log_for 5 s: how long a process on this machine takes to listen. */
__attribute__((unused)) static bool wait_log(const char *tag, const char *what)
{
	return wait_log_for(tag, what, 5);
}

/* One transfer: receiver in ns_b, sender in ns_a; the two exit codes. */
__attribute__((unused)) static void xfer(const char *tag, char *const rargs[], char *const sargs[],
					 int *rrc, int *src)
{
	char rt[64], st[64];
	pid_t r, s;

	snprintf(rt, sizeof(rt), "%s-recv", tag);
	snprintf(st, sizeof(st), "%s-send", tag);
	r = spawn(ns_b, rt, rargs);
	s = spawn(ns_a, st, sargs); /* retries its connect until recv listens */
	*src = wait_rc(s, 60);
	*rrc = wait_rc(r, 60);
	if (*rrc || *src) {
		tap_diag("recv rc %d: %s", *rrc, slurp(rt, "err"));
		tap_diag("send rc %d: %s", *src, slurp(st, "err"));
	}
}

#define NEED_NET()                                       \
	do {                                             \
		if (!net_ok)                             \
			return tap_skip("%s", net_skip); \
	} while (0)

/* The last test of a program: remove the namespaces (and so the veth). */
__attribute__((unused)) static int netns_remove(void)
{
	NEED_NET();
	CHECK(sh("ip netns del %s && ip netns del %s", ns_a, ns_b) == 0, "netns del");
	ns_a[0] = '\0';
	return TAP_PASS;
}

/* pfs with the NULL-terminated words after @tag, in netns @ns. */
__attribute__((unused)) static pid_t pfs_in(const char *ns, const char *tag, ...)
{
	char *args[40];
	va_list ap;
	int n = 0;

	va_start(ap, tag);
	while (n < 39 && (args[n] = va_arg(ap, char *)))
		n++;
	va_end(ap);
	args[n] = NULL;
	return spawn(ns, tag, args);
}

/* "IP:PORT" into @buf (48 bytes). */
__attribute__((unused)) static char *addr(char *buf, const char *ip, int port)
{
	snprintf(buf, 48, "%s:%d", ip, port);
	return buf;
}

#endif /* PFS_TESTS_NETNS_H */
