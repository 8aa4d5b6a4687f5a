// SPDX-License-Identifier: Apache-2.0
/*
 * The holders' /metrics pages (`--metrics-listen`) as the operator and
 * Prometheus read them: the binary in $PFS on loopback. An origin loads a
 * real tree (/usr/include/linux) and serves it paced to 2 MiB/s; a relay
 * fetches it. Scraped mid-fetch the relay's page says phase filling with
 * some but not all bytes held; once done it says ready, every byte held
 * and received, and the origin's page counts the bytes it served and the
 * connection. `blob serve` over the relay's copy counts a consumer that
 * attached. A receiver (`pfs recv --metrics-listen`) of a 16 GiB payload
 * transfer on loopback says mid-way how many bytes its sender announced
 * and how many it has received. Every page passes `promtool check metrics` (Debian's
 * prometheus package, installed by hack/install-deps.sh); anything but GET
 * /metrics is refused; a bad address is a usage error before anything is
 * mapped. No root.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sh.h"
#include "tap.h"

#define SRC "/usr/include/linux"

static char pfs[512], dir[128], tok[192];
static int port_origin, port_mo, port_mr, port_ms;

static void cleanup(void)
{
	if (dir[0])
		sh("rm -rf %s /dev/shm/pfsmt-[or]-%d /dev/shm/pfsmt-[or]-%d.chunks", dir, getpid(),
		   getpid());
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The page at 127.0.0.1:@port/metrics (malloc'd; "" when none answered). */
static char *scrape(int port)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "curl -sf --max-time 3 http://127.0.0.1:%d/metrics", port);
	return slurp_cmd(cmd);
}

/* The value of the sample @name{@labels} ("" for none) on @page, or -1. */
static double sample(const char *page, const char *name, const char *labels)
{
	char key[256];
	const char *p = page;
	size_t kl;

	snprintf(key, sizeof(key), labels[0] ? "%s{%s} " : "%s ", name, labels);
	kl = strlen(key);
	while (p && *p) {
		if (!strncmp(p, key, kl))
			return strtod(p + kl, NULL);
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -1;
}

/* promtool check metrics on @page: its exit code (0: the format and the
 * naming conventions hold). */
static int promtool(const char *page, const char *tag)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.prom", dir, tag);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(page, f);
	fclose(f);
	return sh("promtool check metrics < %s > %s/%s.promtool 2>&1 || "
		  "{ cat %s/%s.promtool >&2; exit 1; }",
		  path, dir, tag, dir, tag);
}

static int t_setup(void)
{
	const char *bin = getenv("PFS") ? getenv("PFS") : "build/pfs";
	FILE *f;

	CHECK(realpath(bin, pfs), "pfs binary %s not built", bin);
	if (access(SRC, R_OK))
		return tap_skip("%s missing (linux-libc-dev)", SRC);
	CHECK(!sh("command -v promtool >/dev/null && command -v curl >/dev/null"),
	      "promtool and curl are needed (hack/install-deps.sh installs them)");
	snprintf(dir, sizeof(dir), "/tmp/pfs-metrics-%d", getpid());
	atexit(cleanup);
	CHECK(!mkdir(dir, 0700), "mkdir %s", dir);
	snprintf(tok, sizeof(tok), "%s/token", dir);
	f = fopen(tok, "w");
	CHECK(f && fprintf(f, "5a1f0c3e9a2d4c5b8e7f60718293a4b5c6d7e8f90a1b2c3d4e5f6071\n") > 0,
	      "token");
	fclose(f);
	/* Ports apart from the other tests' (the repl tests use 747x). */
	port_origin = 17480 + getpid() % 100 * 4;
	port_mo = port_origin + 1;
	port_mr = port_origin + 2;
	port_ms = port_origin + 3;
	return TAP_PASS;
}

static int t_bad_address(void)
{
	char cmd[768], *out;
	int rc;

	snprintf(cmd, sizeof(cmd),
		 "%s blob create --name pfsmt-bad --size 4Mi --metrics-listen not-an-address 2>&1; "
		 "ls /dev/shm/pfsmt-bad 2>/dev/null",
		 pfs);
	out = slurp_cmd_rc(cmd, &rc);
	CHECK(strstr(out, "invalid --metrics-listen 'not-an-address'"), "no message: %s", out);
	CHECK(!strstr(out, "/dev/shm/pfsmt-bad"), "a blob was made: %s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "%s blob info --name x --metrics-listen :9 2>&1", pfs);
	out = slurp_cmd_rc(cmd, &rc);
	CHECK(rc == 2 && strstr(out, "--metrics-listen is an option of create"), "info: rc %d %s",
	      rc, out);
	free(out);
	return TAP_PASS;
}

static pid_t spawn(const char *tag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static pid_t spawn(const char *tag, const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	pid_t pid;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	pid = fork();
	if (pid == 0) {
		char out[256], err[256];

		snprintf(out, sizeof(out), "%s/%s.out", dir, tag);
		snprintf(err, sizeof(err), "%s/%s.err", dir, tag);
		if (!freopen(out, "w", stdout) || !freopen(err, "w", stderr))
			_exit(127);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Wait for @pid (@timeout_s at most; killed after): its exit code, or -1. */
static int reap(pid_t pid, int timeout_s)
{
	double t0 = now_s();
	int st;

	while (now_s() < t0 + timeout_s) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		usleep(50000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

static int t_fill_and_serve(void)
{
	pid_t origin, relay, serve;
	double t0, size = 0, mid = -1, o_size;
	char *page = NULL, *out;

	origin = spawn("origin",
		       "exec %s blob create --name pfsmt-o-%d --source %s --replicate-listen "
		       "127.0.0.1:%d --token-file %s --replicate-rate 2Mi --replicate-linger 1 "
		       "--metrics-listen 127.0.0.1:%d",
		       pfs, getpid(), SRC, port_origin, tok, port_mo);
	relay = spawn("relay",
		      "exec %s blob create --name pfsmt-r-%d --size 8Mi --fetch-from 127.0.0.1:%d "
		      "--token-file %s --metrics-listen 127.0.0.1:%d",
		      pfs, getpid(), port_origin, tok, port_mr);
	/* Mid-fetch: the relay's page says filling, with bytes on the way. */
	for (t0 = now_s(); now_s() < t0 + 20; usleep(100000)) {
		free(page);
		page = scrape(port_mr);
		size = sample(page, "packetfs_blob_size_bytes", "");
		mid = sample(page, "packetfs_blob_filled_bytes", "");
		if (sample(page, "packetfs_blob_phase", "phase=\"filling\"") == 1 && mid > 0 &&
		    mid < size)
			break;
	}
	CHECK(mid > 0 && mid < size, "never saw the relay mid-fetch (filled %.0f of %.0f): %s", mid,
	      size, page);
	CHECK(sample(page, "packetfs_blob_phase", "phase=\"ready\"") == 0, "ready mid-fetch");
	CHECK(sample(page, "packetfs_blob_info", "process=\"fill\",role=\"relay\"") == 1, "%s",
	      page);
	CHECK(sample(page, "packetfs_blob_fill_seconds", "") > 0, "no fill seconds");
	/* Live, not only once the fetch returned: a relay that moved to another
	 * upstream must show it while it still fetches (PacketFSRelayRerouted). */
	CHECK(sample(page, "packetfs_fetch_connections_total", "") == 1,
	      "connections mid-fetch, want 1 (live): %s", page);
	CHECK(!promtool(page, "relay-mid"), "promtool check metrics: relay mid-fetch");
	tap_diag("relay mid-fetch: %.0f of %.0f bytes", mid, size);

	/* Done: ready, every byte held and received; read before its linger ends. */
	for (t0 = now_s(); now_s() < t0 + 30; usleep(100000)) {
		free(page);
		page = scrape(port_mr);
		if (sample(page, "packetfs_blob_phase", "phase=\"ready\"") == 1)
			break;
	}
	CHECK(sample(page, "packetfs_blob_phase", "phase=\"ready\"") == 1, "relay never ready: %s",
	      page);
	CHECK(sample(page, "packetfs_blob_filled_bytes", "") == size, "ready, not all held: %s",
	      page);
	CHECK(sample(page, "packetfs_received_bytes_total", "") >= size, "received: %s", page);
	CHECK(sample(page, "packetfs_fetch_connections_total", "") >= 1, "connections: %s", page);
	CHECK(sample(page, "packetfs_verify_failures_total", "") == 0, "verify failures: %s", page);
	/* A TCP relay verified every chunk against the origin's BLAKE3 list. */
	CHECK(sample(page, "packetfs_chunks", "") == 2 &&
		      sample(page, "packetfs_chunks_hashed_total", "") == 2 &&
		      sample(page, "packetfs_chunks_verified_total", "") == 2 &&
		      sample(page, "packetfs_chunks_failed_total", "") == 0,
	      "chunks: %s", page);
	CHECK(!promtool(page, "relay-done"), "promtool check metrics: relay done");
	free(page);
	page = scrape(port_mo);
	o_size = sample(page, "packetfs_blob_size_bytes", "");
	CHECK(o_size == size, "origin size %.0f, relay %.0f", o_size, size);
	CHECK(sample(page, "packetfs_served_bytes_total", "") >= size, "served: %s", page);
	CHECK(sample(page, "packetfs_relay_connections_total", "") == 1, "connections: %s", page);
	CHECK(sample(page, "packetfs_blob_info", "process=\"fill\",role=\"origin\"") == 1, "%s",
	      page);
	CHECK(sample(page, "process_cpu_seconds_total", "") > 0, "no CPU: %s", page);
	CHECK(!promtool(page, "origin"), "promtool check metrics: origin");
	free(page);
	CHECK(reap(relay, 30) == 0, "relay failed (%s/relay.err)", dir);
	CHECK(reap(origin, 30) == 0, "origin failed (%s/origin.err)", dir);

	/* The holder that stays: a consumer attaches, the page counts it. */
	serve = spawn("serve",
		      "exec %s blob serve --name pfsmt-r-%d --socket %s/s.sock --token-file %s "
		      "--metrics-listen 127.0.0.1:%d",
		      pfs, getpid(), dir, tok, port_ms);
	for (t0 = now_s(), page = NULL; now_s() < t0 + 10; usleep(100000)) {
		free(page);
		page = scrape(port_ms);
		if (sample(page, "packetfs_consumers_accepted_total", "") == 0)
			break;
	}
	CHECK(sample(page, "packetfs_consumers_accepted_total", "") == 0, "serve: %s", page);
	CHECK(sample(page, "packetfs_blob_phase", "phase=\"ready\"") == 1, "serve: %s", page);
	CHECK(sample(page, "packetfs_blob_filled_bytes", "") == size, "serve: %s", page);
	free(page);
	CHECK(!sh("%s blob attach --socket %s/s.sock --token-file %s > %s/attach.out 2>&1", pfs,
		  dir, tok, dir),
	      "attach failed (%s/attach.out)", dir);
	page = scrape(port_ms);
	CHECK(sample(page, "packetfs_consumers_accepted_total", "") == 1, "after attach: %s", page);
	CHECK(!promtool(page, "serve"), "promtool check metrics: serve");
	free(page);

	/* Only GET /metrics. */
	{
		char cmd[256];

		snprintf(cmd, sizeof(cmd),
			 "curl -s -o /dev/null -w '%%{http_code} ' http://127.0.0.1:%d/other; "
			 "curl -s -o /dev/null -w '%%{http_code}' -X POST "
			 "http://127.0.0.1:%d/metrics",
			 port_ms, port_ms);
		out = slurp_cmd(cmd);
		CHECK(!strcmp(out, "404 405"), "other path, POST: '%s'", out);
		free(out);
	}
	kill(serve, SIGTERM);
	CHECK(reap(serve, 10) == 0, "serve did not stop cleanly (%s/serve.err)", dir);
	return TAP_PASS;
}

static int t_receiver(void)
{
	pid_t recv, send;
	double t0, planned = -1, got = -1;
	char *page = NULL;
	int port = port_origin + 400, mport = port_origin + 401;

	recv = spawn("recv",
		     "exec %s recv --listen 127.0.0.1:%d --mode payload --metrics-listen "
		     "127.0.0.1:%d",
		     pfs, port, mport);
	send = spawn("send",
		     "exec %s send --connect 127.0.0.1:%d --mode payload --size 64Mi --bytes 16G",
		     pfs, port);
	for (t0 = now_s(); now_s() < t0 + 30; usleep(50000)) {
		free(page);
		page = scrape(mport);
		planned = sample(page, "packetfs_transfer_planned_bytes", "");
		got = sample(page, "packetfs_transfer_effective_bytes_total", "");
		if (planned > 0 && got > 0 && got < planned)
			break;
	}
	CHECK(planned == 16.0 * (1ull << 30), "planned %.0f, want 16 GiB: %s", planned, page);
	CHECK(got > 0 && got < planned, "never saw it mid-way (%.0f of %.0f)", got, planned);
	CHECK(!promtool(page, "recv"), "promtool check metrics: receiver");
	tap_diag("receiver mid-transfer: %.0f of %.0f bytes", got, planned);
	free(page);
	CHECK(reap(send, 120) == 0, "send failed (%s/send.err)", dir);
	CHECK(reap(recv, 30) == 0, "recv failed (%s/recv.err)", dir);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "setup", t_setup },
	{ "a bad --metrics-listen is a usage error, nothing mapped", t_bad_address },
	{ "origin and relay pages mid-fetch and done, serve counts a consumer", t_fill_and_serve },
	{ "a receiver's page mid-transfer: the bytes announced and received", t_receiver },
};

TAP_MAIN(tests)
