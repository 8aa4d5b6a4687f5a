// SPDX-License-Identifier: Apache-2.0
/*
 * TCP transport end to end over a real veth pair between two network
 * namespaces that this test creates (and removes at exit): the receiver runs
 * `pfs recv` in namespace B, the sender `pfs send` in namespace A, each a
 * child process that joins its namespace with setns() and execs the static
 * binary. Checks exit codes and the JSON results of both sides.
 * Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN); otherwise every test SKIPs.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include "pfs/blob.h"
#include "pfs/gram.h"
#include "pfs/integrity.h"
#include "json_util.h"
#include "netns.h"

static int port = 7400;

static int t_setup(void)
{
	return netns_setup("t", 213);
}

static int mode_ok(const char *mode, const char *pattern, const char *extra_recv)
{
	char listen[64], conn[64], tag[32], out[128], fp[32], csv[128];
	int rrc, src;

	NEED_NET();
	port++;
	snprintf(listen, sizeof(listen), "%s:%d", ip_b, port);
	snprintf(conn, sizeof(conn), "%s:%d", ip_b, port);
	snprintf(tag, sizeof(tag), "%s-%s", mode, pattern);
	snprintf(out, sizeof(out), "%s/%s.out", tmpdir, tag);
	snprintf(csv, sizeof(csv), "%s/%s.csv", tmpdir, tag);
	{
		char *rargs[] = { "recv",   "--listen",	  listen,
				  "--mode", (char *)mode, "--size",
				  "64M",    "--page",	  "4k",
				  "--seed", "7",	  "--accept-timeout",
				  "30",	    "--timeout",  "20",
				  "--csv",  csv,	  extra_recv ? "--out" : NULL,
				  out,	    NULL };
		char *sargs[] = {
			"send",	     "--connect", conn,	       "--mode",    (char *)mode,
			"--size",    "64M",	  "--page",    "4k",	    "--seed",
			"7",	     "--bytes",	  "256M",      "--pattern", (char *)pattern,
			"--max-len", "1M",	  "--timeout", "20",	    NULL
		};

		if (extra_recv && !strcmp(pattern, "seq"))
			sargs[12] = "64M"; /* exactly one sweep: the output is the blob */
		xfer(tag, rargs, sargs, &rrc, &src);
	}
	{
		char rt[64], stg[64];
		const char *rj, *sj;

		snprintf(rt, sizeof(rt), "%s-recv", tag);
		snprintf(stg, sizeof(stg), "%s-send", tag);
		rj = slurp(rt, "json");
		CHECK(rrc == 0 && src == 0, "exit codes recv %d send %d", rrc, src);
		CHECK(strstr(rj, "\"integrity\":\"OK\""), "receiver: %s", rj);
		CHECK(strlen(rj) < 4096, "result over 4 KiB");
		sj = slurp(stg, "json");
		CHECK(strstr(sj, "\"integrity\":\"OK\""), "sender: %s", sj);
		CHECK(strstr(rj, "\"decode_errors\":0"), "decode errors");
		/* Placement for the operator's status: allowed CPUs and their node. */
		CHECK(strstr(rj, "\"cpus\":[") && strstr(rj, "\"numa_node\":") &&
			      strstr(sj, "\"cpus\":["),
		      "placement: %s", rj);
		{
			char label[64], *c;

			snprintf(label, sizeof(label), "\n\"%s\",",
				 !strcmp(mode, "payload") ? "PFS-With-Payload-TCP" :
				 !strcmp(mode, "offset")  ? "Native PFS Offset-only Mode - TCP" :
							    "Native PFS Arithmetic Mode - TCP");
			snprintf(rt, sizeof(rt), "%s", tag);
			c = slurp(rt, "csv");
			CHECK(!strncmp(c,
				       "label,purpose,size_mb,elapsed_s,effective_mb_s,user_s,"
				       "sys_s,mb_per_cpu_s,integrity,pthreads,notes\n",
				       85) &&
				      strstr(c, label) && strstr(c, ",\"OK\",1,"),
			      "csv: %s", c);
		}
		tap_diag("%s/%s receiver: %.*s", mode, pattern, 160, strstr(rj, "\"size_mb\""));
		if (extra_recv && !strcmp(pattern, "seq")) {
			/* The copy-out file must hold exactly the sender's blob. */
			const char *f = strstr(sj, "\"fingerprint\":\"");
			int fd = open(out, O_RDONLY);
			struct stat stt;
			void *m;

			CHECK(f && fd >= 0 && !fstat(fd, &stt), "out file");
			m = mmap(NULL, stt.st_size, PROT_READ, MAP_SHARED, fd, 0);
			CHECK(m != MAP_FAILED, "mmap out");
			snprintf(fp, sizeof(fp), "0x%016llx",
				 (unsigned long long)pfs_fingerprint_mem(m, stt.st_size));
			munmap(m, stt.st_size);
			close(fd);
			CHECK(!strncmp(f + 15, fp, 18), "out file %s != sender blob %.18s", fp,
			      f + 15);
		}
	}
	return TAP_PASS;
}

static int t_payload(void)
{
	return mode_ok("payload", "seq", "out");
}
static int t_offset(void)
{
	return mode_ok("offset", "seq", "out");
}
static int t_arith_random(void)
{
	return mode_ok("arith", "random", NULL);
}
static int t_arith_seq(void)
{
	return mode_ok("arith", "seq", NULL);
}
static int t_payload_random(void)
{
	return mode_ok("payload", "random", NULL);
}

static int refused(const char *rmode, const char *smode, const char *rseed, const char *want,
		   int want_rc)
{
	char addr[64];
	int rrc, src;

	NEED_NET();
	port++;
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, port);
	{
		char *rargs[] = { "recv",	 "--listen", addr,	    "--mode",
				  (char *)rmode, "--size",   "16M",	    "--page",
				  "4k",		 "--seed",   (char *)rseed, "--accept-timeout",
				  "30",		 NULL };
		char *sargs[] = { "send", "--connect", addr, "--mode", (char *)smode, "--size",
				  "16M",  "--page",    "4k", "--seed", "1",	      NULL };

		xfer("refuse", rargs, sargs, &rrc, &src);
	}
	{
		const char *re = slurp("refuse-recv", "err"), *se = slurp("refuse-send", "err");

		CHECK(rrc == want_rc && src == want_rc, "exit codes recv %d send %d (want %d)", rrc,
		      src, want_rc);
		CHECK(strstr(re, want) && strstr(se, want), "messages lack '%s': recv: %s send: %s",
		      want, re, se);
		CHECK(strstr(slurp("refuse-recv", "json"), "\"integrity\":\"NA\""), "verdict NA");
		tap_diag("sender said: %.200s", strstr(se, "refused"));
	}
	return TAP_PASS;
}

static int t_blob_mismatch(void)
{
	return refused("offset", "offset", "2", "blob fingerprint mismatch", 4);
}

static int t_blob_mismatch_arith(void)
{
	return refused("arith", "arith", "3", "blob fingerprint mismatch", 4);
}

static int t_mode_mismatch(void)
{
	return refused("offset", "arith", "1", "mode mismatch", 4);
}

static int t_accept_timeout(void)
{
	char addr[64];
	char *rargs[] = { "recv",    "--listen",	 addr, "--mode",
			  "payload", "--accept-timeout", "1",  NULL };
	time_t t0 = time(NULL);
	int rc;

	NEED_NET();
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	rc = wait_rc(spawn(ns_b, "timeout", rargs), 10);
	CHECK(rc == 5, "exit %d (want 5): %s", rc, slurp("timeout", "err"));
	CHECK(time(NULL) - t0 <= 4, "took %ld s", (long)(time(NULL) - t0));
	CHECK(strstr(slurp("timeout", "json"), "no sender connected"), "json error");
	return TAP_PASS;
}

/* A client that says HELLO properly and then sends a gram with a corrupt
 * descriptor table: the receiver must reject, count and exit cleanly. */
static int t_malformed_gram(void)
{
	char addr[64];
	char *rargs[] = { "recv", "--listen",  addr, "--mode", "payload", "--accept-timeout",
			  "20",	  "--timeout", "5",  NULL };
	pid_t r, c;
	int rc, crc;

	NEED_NET();
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	r = spawn(ns_b, "malformed", rargs);
	c = fork();
	if (c == 0) {
		struct pfs_ctl h = { .type = PFS_CTL_HELLO,
				     .mode = PFS_MODE_PAYLOAD,
				     .size = 1 << 20 };
		struct pfs_desc d = { .off = 0, .len = 100 };
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
		uint8_t rec[PFS_CTL_LEN], g[256];
		char p[64];
		int fd, s;
		ssize_t len;

		snprintf(p, sizeof(p), "/run/netns/%s", ns_a);
		fd = open(p, O_RDONLY);
		if (fd < 0 || setns(fd, CLONE_NEWNET))
			_exit(2);
		inet_pton(AF_INET, ip_b, &sa.sin_addr);
		for (int i = 0; i < 100; i++) {
			s = socket(AF_INET, SOCK_STREAM, 0);
			if (!connect(s, (struct sockaddr *)&sa, sizeof(sa)))
				break;
			close(s);
			s = -1;
			usleep(50000);
		}
		if (s < 0)
			_exit(3);
		pfs_ctl_encode(&h, rec);
		len = pfs_gram_encode(PFS_MODE_PAYLOAD, 0, &d, 1, g, sizeof(g));
		g[PFS_GRAM_HDR_LEN + 2] ^= 0x10; /* table CRC now wrong */
		if (write(s, rec, sizeof(rec)) != sizeof(rec) || read(s, rec, sizeof(rec)) <= 0 ||
		    write(s, g, len) != len)
			_exit(4);
		sleep(1);
		_exit(0);
	}
	crc = wait_rc(c, 20);
	rc = wait_rc(r, 20);
	CHECK(crc == 0, "client exit %d", crc);
	CHECK(rc == 1, "receiver exit %d (want 1): %s", rc, slurp("malformed", "err"));
	CHECK(strstr(slurp("malformed", "json"), "\"decode_errors\":1"), "not counted: %s",
	      slurp("malformed", "json"));
	CHECK(strstr(slurp("malformed", "err"), "malformed gram"), "not logged");
	return TAP_PASS;
}

/* A sender that says HELLO and then goes silent: the receiver must give up
 * after its I/O timeout instead of hanging. */
static int t_stalled_sender(void)
{
	char addr[64];
	char *rargs[] = { "recv", "--listen",  addr, "--mode", "payload", "--accept-timeout",
			  "20",	  "--timeout", "1",  NULL };
	time_t t0;
	pid_t r, c;
	int rc;

	NEED_NET();
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	r = spawn(ns_b, "stall", rargs);
	c = fork();
	if (c == 0) {
		struct pfs_ctl h = { .type = PFS_CTL_HELLO,
				     .mode = PFS_MODE_PAYLOAD,
				     .size = 1 << 20 };
		uint8_t rec[PFS_CTL_LEN];
		int s = netns_connect_b((uint16_t)port);

		pfs_ctl_encode(&h, rec);
		if (s < 0 || write(s, rec, sizeof(rec)) != sizeof(rec))
			_exit(3);
		sleep(6); /* silent, connection open */
		_exit(0);
	}
	t0 = time(NULL);
	rc = wait_rc(r, 20);
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	CHECK(rc == 5, "receiver exit %d (want 5): %s", rc, slurp("stall", "err"));
	CHECK(time(NULL) - t0 <= 5, "gave up after %ld s", (long)(time(NULL) - t0));
	CHECK(strstr(slurp("stall", "json"), "timed out"), "json: %s", slurp("stall", "json"));
	return TAP_PASS;
}

/* Offset mode between two processes that open the same named blob. */
static int t_named_blob(void)
{
	char addr[64], name[48];
	int rrc, src;

	NEED_NET();
	snprintf(name, sizeof(name), "pfs-tcp-test-%d", getpid());
	if (sh("%s -q blob create --name %s --size 32M --page 4k --seed 9 >/dev/null", pfs_bin,
	       name))
		return TAP_FAIL;
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	{
		char *rargs[] = { "recv",   "--listen",	   addr, "--mode",
				  "offset", "--blob-name", name, NULL };
		char *sargs[] = { "send",	 "--connect", addr,	 "--mode", "offset",
				  "--blob-name", name,	      "--bytes", "128M",   NULL };

		xfer("named", rargs, sargs, &rrc, &src);
	}
	sh("%s blob rm --name %s", pfs_bin, name);
	CHECK(rrc == 0 && src == 0, "exit codes %d %d", rrc, src);
	CHECK(strstr(slurp("named-recv", "json"), "\"integrity\":\"OK\""), "integrity");
	return TAP_PASS;
}

/* --integrity fnv1a64 and none, payload and offset: one sweep of a 16 MiB
 * seeded blob, so the stream is the blob and its FNV-1a 64 is known here. */
static int integrity_run(const char *mode, const char *kind)
{
	struct pfs_blob_opts bo = { .sz = sizeof(bo),
				    .size = 16 << 20,
				    .page = PFS_PAGE_4K,
				    .fill = PFS_FILL_SEED,
				    .seed = 5,
				    .numa_node = -1 };
	char addr[64], tag[48], want[64], rt[64], st[64];
	const char *rj, *sj;
	struct pfs_blob *b;
	int rrc, src;

	NEED_NET();
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	snprintf(tag, sizeof(tag), "integ-%s-%s", mode, kind);
	{
		char *rargs[] = { "recv",	"--listen",	    addr,  "--mode",
				  (char *)mode, "--size",	    "16M", "--page",
				  "4k",		"--seed",	    "5",   "--integrity",
				  (char *)kind, "--accept-timeout", "30",  NULL };
		char *sargs[] = { "send",	"--connect",   addr,	     "--mode",
				  (char *)mode, "--size",      "16M",	     "--page",
				  "4k",		"--seed",      "5",	     "--bytes",
				  "16M",	"--integrity", (char *)kind, NULL };

		xfer(tag, rargs, sargs, &rrc, &src);
	}
	snprintf(rt, sizeof(rt), "%s-recv", tag);
	snprintf(st, sizeof(st), "%s-send", tag);
	rj = slurp(rt, "json");
	sj = slurp(st, "json");
	CHECK(rrc == 0 && src == 0, "exit codes recv %d send %d", rrc, src);
	snprintf(want, sizeof(want), "\"integrity_alg\":\"%s\"", kind);
	CHECK(strstr(rj, want) && strstr(sj, want), "alg: %s", rj);
	if (!strcmp(kind, "none")) {
		CHECK(strstr(rj, "\"integrity\":\"NA\"") && strstr(sj, "\"integrity\":\"NA\""),
		      "none must report NA: %s", rj);
		CHECK(!strstr(rj, "\"checksum\"") && !strstr(rj, "\"crc32c\""), "checksum: %s", rj);
		return TAP_PASS;
	}
	CHECK(strstr(rj, "\"integrity\":\"OK\"") && strstr(sj, "\"integrity\":\"OK\""),
	      "verdicts: %s | %s", rj, sj);
	b = pfs_blob__create(&bo);
	CHECK(b, "local blob");
	snprintf(want, sizeof(want), "\"checksum\":\"0x%016llx\"",
		 (unsigned long long)pfs_fnv1a64(PFS_FNV1A64_INIT, pfs_blob__data(b), 16 << 20));
	pfs_blob__close(b);
	CHECK(strstr(rj, want) && strstr(sj, want), "want %s: %s", want, rj);
	snprintf(want, sizeof(want), "\"peer_checksum\":\"0x%016llx\"",
		 strtoull(strstr(rj, "\"checksum\":\"") + 12, NULL, 16));
	CHECK(strstr(rj, want) && strstr(sj, want), "peer checksums: %s", sj);
	return TAP_PASS;
}

static int t_fnv_payload(void)
{
	return integrity_run("payload", "fnv1a64");
}
static int t_fnv_offset(void)
{
	return integrity_run("offset", "fnv1a64");
}
static int t_none_arith(void)
{
	return integrity_run("arith", "none");
}

static int t_integrity_mismatch(void)
{
	char addr[64];
	int rrc, src;

	NEED_NET();
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	{
		char *rargs[] = { "recv",    "--listen",    addr,      "--mode",
				  "payload", "--integrity", "fnv1a64", "--accept-timeout",
				  "30",	     NULL };
		char *sargs[] = { "send",   "--connect", addr,	   "--mode", "payload",
				  "--size", "16M",	 "--page", "4k",     NULL };

		xfer("integ-refuse", rargs, sargs, &rrc, &src);
	}
	CHECK(rrc == 4 && src == 4, "exit codes recv %d send %d (want 4)", rrc, src);
	CHECK(strstr(slurp("integ-refuse-recv", "err"), "integrity checksum mismatch") &&
		      strstr(slurp("integ-refuse-send", "err"), "integrity checksum mismatch") &&
		      strstr(slurp("integ-refuse-send", "err"), "same --integrity"),
	      "messages: %s", slurp("integ-refuse-send", "err"));
	return TAP_PASS;
}

/* The receiver pod's readiness probe: 1 before --ready-file exists, 0 once
 * the receiver listens, 2 without the option. */
static int t_probe(void)
{
	char addr[64], ready[128];
	char *probe[] = { "probe", "--ready-file", ready, NULL };
	char *bare[] = { "probe", NULL };
	char *rargs[] = { "recv", "--listen",	      addr, "--mode", "payload", "--ready-file",
			  ready,  "--accept-timeout", "20", NULL };
	pid_t r;
	int rc = 1;

	NEED_NET();
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	snprintf(ready, sizeof(ready), "%s/ready", tmpdir);
	CHECK(wait_rc(spawn(ns_b, "probe0", probe), 10) == 1, "probe before recv: %s",
	      slurp("probe0", "err"));
	CHECK(strstr(slurp("probe0", "err"), "not ready"), "message");
	CHECK(wait_rc(spawn(ns_b, "probe2", bare), 10) == 2, "probe without --ready-file");
	r = spawn(ns_b, "probe-recv", rargs);
	for (int i = 0; i < 200 && rc; i++) {
		rc = wait_rc(spawn(ns_b, "probe1", probe), 10);
		if (rc)
			usleep(25000);
	}
	kill(r, SIGTERM);
	waitpid(r, NULL, 0);
	CHECK(rc == 0, "probe never saw the receiver ready");
	return TAP_PASS;
}

/* @pid's PID in its own namespace (the last field of NSpid), or -1. */
static long ns_pid(pid_t pid)
{
	char p[64], line[256];
	long last = -1;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	f = fopen(p, "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "NSpid:", 6))
			continue;
		for (char *t = strtok(line + 6, " \t\n"); t; t = strtok(NULL, " \t\n"))
			last = strtol(t, NULL, 10);
	}
	if (f)
		fclose(f);
	return last;
}

/* In a pod pfs is PID 1 of its PID namespace, which the kernel spares every
 * signal it has no handler for, even one from the host: the kubelet's
 * SIGTERM must still end a receiver at once (128+15, saying so), not leave
 * it waiting for a sender until the SIGKILL a grace period later. */
static int t_pid1_sigterm(void)
{
	char addr[64], ready[128];
	char *rargs[] = { "recv", "--listen",	      addr, "--mode", "payload", "--ready-file",
			  ready,  "--accept-timeout", "30", NULL };
	pid_t mid, inner = -1;
	int pfd[2], rc;
	long nspid;

	NEED_NET();
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	snprintf(ready, sizeof(ready), "%s/pid1-ready", tmpdir);
	/* close-on-exec: pfs must not hold the pipe open */
	CHECK(!pipe2(pfd, O_CLOEXEC), "pipe: %s", strerror(errno));
	mid = fork();
	CHECK(mid >= 0, "fork: %s", strerror(errno));
	if (mid == 0) {
		/* The namespace's first child, spawned below, is its PID 1. */
		if (unshare(CLONE_NEWPID)) {
			fprintf(stderr, "unshare(CLONE_NEWPID): %s\n", strerror(errno));
			_exit(119);
		}
		inner = spawn(ns_b, "pid1", rargs);
		if (write(pfd[1], &inner, sizeof(inner)) != sizeof(inner))
			_exit(118);
		_exit(wait_rc(inner, 60));
	}
	close(pfd[1]);
	rc = read(pfd[0], &inner, sizeof(inner)) == sizeof(inner) && inner > 0;
	close(pfd[0]);
	CHECK(rc, "no receiver in a new PID namespace (exit %d)", wait_rc(mid, 5));
	for (int i = 0; i < 400 && access(ready, F_OK); i++)
		usleep(25000);
	nspid = ns_pid(inner);
	kill(inner, SIGTERM);
	/* At once: 5 s, where the receiver would wait 30 for a sender. */
	rc = wait_rc(mid, 5);
	/* If it outlived the wait, SIGKILL (which reaches a namespace's init
	 * from outside) leaves none over. */
	if (rc == -1)
		kill(inner, SIGKILL);
	CHECK(!access(ready, F_OK), "the receiver never listened: %s", slurp("pid1", "err"));
	CHECK(nspid == 1, "the receiver is pid %ld in its namespace, not 1", nspid);
	CHECK(rc == 128 + SIGTERM, "exit %d (-1: still running 5 s) after SIGTERM, want %d: %s", rc,
	      128 + SIGTERM, slurp("pid1", "err"));
	CHECK(strstr(slurp("pid1", "err"), "stopped by SIGTERM"), "message: %s",
	      slurp("pid1", "err"));
	return TAP_PASS;
}

/* --range: an offset-mode sweep of exactly one 3 MiB range checksums those
 * bytes and no others. */
static int t_range(void)
{
	struct pfs_blob_opts bo = { .sz = sizeof(bo),
				    .size = 16 << 20,
				    .page = PFS_PAGE_4K,
				    .fill = PFS_FILL_SEED,
				    .seed = 5,
				    .numa_node = -1 };
	char addr[64], want[64];
	struct pfs_blob *b;
	int rrc, src;

	NEED_NET();
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	{
		char *rargs[] = { "recv", "--listen", addr, "--mode", "offset", "--size",
				  "16M",  "--page",   "4k", "--seed", "5",	"--accept-timeout",
				  "30",	  NULL };
		char *sargs[] = { "send",   "--connect", addr,	   "--mode", "offset",
				  "--size", "16M",	 "--page", "4k",     "--seed",
				  "5",	    "--range",	 "1M:3M",  NULL };

		xfer("range", rargs, sargs, &rrc, &src);
	}
	CHECK(rrc == 0 && src == 0, "exit codes recv %d send %d", rrc, src);
	b = pfs_blob__create(&bo);
	CHECK(b, "local blob");
	snprintf(want, sizeof(want), "\"crc32c\":\"0x%08x\"",
		 pfs_crc32c(0, pfs_blob__data(b) + (1 << 20), 3 << 20));
	pfs_blob__close(b);
	CHECK(strstr(slurp("range-recv", "json"), want) &&
		      strstr(slurp("range-recv", "json"), "\"bytes\":3145728"),
	      "want %s: %s", want, slurp("range-recv", "json"));
	return TAP_PASS;
}

/* Both sides as an unprivileged user (65534, no capabilities): TCP needs
 * none, and a 4 KiB blob needs no memlock. */
static int t_nonroot(void)
{
	char addr[64];
	char *rargs[] = { "recv", "--listen", addr, "--mode",		"offset", "--size",
			  "16M",  "--page",   "4k", "--accept-timeout", "30",	  NULL };
	char *sargs[] = { "send", "--connect", addr, "--mode",	"offset", "--size",
			  "16M",  "--page",    "4k", "--bytes", "64M",	  NULL };
	pid_t r, s;
	int rrc, src;

	NEED_NET();
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	r = spawn_as(ns_b, "nonroot-recv", 65534, rargs);
	s = spawn_as(ns_a, "nonroot-send", 65534, sargs);
	src = wait_rc(s, 60);
	rrc = wait_rc(r, 60);
	CHECK(rrc == 0 && src == 0, "exit codes recv %d send %d: %s %s", rrc, src,
	      slurp("nonroot-recv", "err"), slurp("nonroot-send", "err"));
	CHECK(strstr(slurp("nonroot-recv", "json"), "\"integrity\":\"OK\""), "integrity");
	return TAP_PASS;
}

/* --into-blob: a payload receiver writes the bytes straight into its own
 * blob (zero-filled) at their offsets. One sequential sweep of the sender's
 * seeded blob makes the two blobs equal: same fingerprint, over @transport.
 * A receiver blob of another size is refused, naming both sizes. */
static int into_blob(const char *transport)
{
	char addr[64], tag[32], rtag[48], stag[48], fr[24], fs[24];
	const char *rj, *sj;
	int rrc, src;

	NEED_NET();
	snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
	snprintf(tag, sizeof(tag), "into-%s", transport);
	{
		char *rargs[] = {
			"recv",	       "--listen", addr,	  "--mode",	     "payload",
			"--into-blob", "--size",   "16M",	  "--page",	     "4k",
			"--fill",      "zero",	   "--transport", (char *)transport, NULL
		};
		char *sargs[] = { "send",
				  "--connect",
				  addr,
				  "--mode",
				  "payload",
				  "--size",
				  "16M",
				  "--page",
				  "4k",
				  "--seed",
				  "7",
				  "--transport",
				  (char *)transport,
				  NULL };

		xfer(tag, rargs, sargs, &rrc, &src);
	}
	snprintf(rtag, sizeof(rtag), "%s-recv", tag);
	snprintf(stag, sizeof(stag), "%s-send", tag);
	rj = slurp(rtag, "json");
	sj = slurp(stag, "json");
	CHECK(rrc == 0 && src == 0, "exit codes %d %d: %.400s", rrc, src, slurp(rtag, "err"));
	CHECK(strstr(rj, "\"integrity\":\"OK\""), "integrity: %.300s", rj);
	jstr(jsect(rj, "\"blob\""), "fingerprint", fr, sizeof(fr));
	jstr(jsect(sj, "\"blob\""), "fingerprint", fs, sizeof(fs));
	CHECK(fr[0] && !strcmp(fr, fs), "receiver blob %s, sender blob %s", fr, fs);
	tap_diag("%s: the receiver's blob has the sender's fingerprint %s", transport, fr);
	{
		char *rargs[] = { "recv",
				  "--listen",
				  addr,
				  "--mode",
				  "payload",
				  "--into-blob",
				  "--size",
				  "8M",
				  "--page",
				  "4k",
				  "--accept-timeout",
				  "30",
				  "--transport",
				  (char *)transport,
				  NULL };
		char *sargs[] = { "send",	 "--connect",	    addr,
				  "--mode",	 "payload",	    "--size",
				  "16M",	 "--page",	    "4k",
				  "--transport", (char *)transport, NULL };

		snprintf(addr, sizeof(addr), "%s:%d", ip_b, ++port);
		xfer("into-small", rargs, sargs, &rrc, &src);
	}
	CHECK(rrc && strstr(slurp("into-small-recv", "err"), "16777216") &&
		      strstr(slurp("into-small-recv", "err"), "8388608"),
	      "rc %d: %.400s", rrc, slurp("into-small-recv", "err"));
	return TAP_PASS;
}

static int t_into_blob_tcp(void)
{
	return into_blob("tcp");
}

static int t_into_blob_udp(void)
{
	return into_blob("udp");
}

static int t_teardown(void)
{
	NEED_NET();
	CHECK(sh("ip netns del %s && ip netns del %s", ns_a, ns_b) == 0, "netns del");
	CHECK(sh("ip link show %s >/dev/null 2>&1", veth_a) != 0, "veth left behind");
	ns_a[0] = '\0';
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "create two netns joined by a veth pair", t_setup, .setup = true },
	{ "payload mode over veth: integrity OK, --out equals sender blob", t_payload },
	{ "offset mode over veth: integrity OK, --out equals sender blob", t_offset },
	{ "arithmetic mode, sequential schedule: integrity OK", t_arith_seq },
	{ "arithmetic mode, random schedule (backward deltas): integrity OK", t_arith_random },
	{ "payload mode, random schedule: integrity OK", t_payload_random },
	{ "offset mode against a different blob is refused, clear error", t_blob_mismatch },
	{ "arithmetic mode against a different blob is refused", t_blob_mismatch_arith },
	{ "mode mismatch is refused", t_mode_mismatch },
	{ "receiver without a sender times out (exit 5)", t_accept_timeout },
	{ "malformed gram: rejected, counted, logged, clean exit", t_malformed_gram },
	{ "sender stalls mid-stream: receiver times out (exit 5)", t_stalled_sender },
	{ "offset mode over one named blob opened by both processes", t_named_blob },
	{ "--integrity fnv1a64, payload: OK, checksum = FNV-1a 64 of the blob", t_fnv_payload },
	{ "--integrity fnv1a64, offset: OK, checksum = FNV-1a 64 of the blob", t_fnv_offset },
	{ "--integrity none, arithmetic: counts compared, integrity NA, exit 0", t_none_arith },
	{ "different --integrity on the two ends is refused, clear error", t_integrity_mismatch },
	{ "offset mode with both sides unprivileged (uid 65534, no capabilities)", t_nonroot },
	{ "--into-blob over tcp: the receiver's blob becomes the sender's; other size refused",
	  t_into_blob_tcp },
	{ "--into-blob over udp: the receiver's blob becomes the sender's; other size refused",
	  t_into_blob_udp },
	{ "--range: one sweep of a blob range checksums exactly those bytes", t_range },
	{ "pfs probe: 1 before the receiver is ready, 0 after, 2 without --ready-file", t_probe },
	{ "as PID 1 of its PID namespace (a pod's), a receiver ends at once on SIGTERM, 143",
	  t_pid1_sigterm },
	{ "remove the namespaces and veth", t_teardown, .setup = true },
};

TAP_MAIN(tests)
