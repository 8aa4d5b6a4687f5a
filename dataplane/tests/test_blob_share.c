// SPDX-License-Identifier: Apache-2.0
/*
 * Blob sharing end to end with real processes: `pfs blob create` runs and
 * exits, `pfs blob serve` runs as a child process, and every consumer is a
 * further forked process (some setuid to nobody) that receives the fd over
 * the Unix socket. Raw clients speak the wire protocol directly to feed the
 * holder malformed, oversized and slow requests. The hugepage test mounts
 * its own size-limited hugetlbfs (so its own page count is exact even while
 * other programs use hugepages) and reserves pages via vm.nr_hugepages,
 * restoring the count afterwards. Needs root for hugetlbfs, setuid and
 * nr_hugepages; those tests SKIP with the reason otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../src/wire/blob_share_wire.h"
#include "pfs/blob.h"
#include "pfs/blob_share.h"
#include "pfs/log.h"
#include "pfs_copy.h"
#include "sh.h"
#include "tap.h"

#define BLOB_SIZE (16ULL << 20)
#define BLOB_SEED 9
#define TOKEN "t0ken-for-tests-0123456789abcdef"
#define NOBODY 65534
#define OPERATOR_GID 65532 /* the operator's non-root uid/gid and fsGroup */

static const char *pfs_bin;
static char pfs_bin_copy[256];
static char tmpdir[48], shmdir[64], tokfile[96], badtok[96], sock[100];
static char create_fp[32]; /* fingerprint from create's JSON */
static bool setup_ok;
static char setup_skip[200] = "setup did not run";
static int port = 7650;
static pid_t cur_holder = -1; /* killed by the next start or at exit */
/* Spawned pfs runs as the operator runs the holder: uid 0, no capabilities
 * at all, no new privileges, supplementary group NOBODY_GROUP (its fsGroup). */
static bool spawn_nocaps;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Fork and exec pfs with @args; stdout/stderr into tmpdir/<tag>.{json,err}. */
static pid_t spawn(const char *tag, char *const args[])
{
	pid_t pid = fork();

	if (pid == 0) {
		char p[128], *argv[48];
		int fd, i = 0;

		snprintf(p, sizeof(p), "%s/%s.json", tmpdir, tag);
		fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 1);
		snprintf(p, sizeof(p), "%s/%s.err", tmpdir, tag);
		fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 2);
		argv[i++] = (char *)pfs_bin;
		for (int k = 0; args[k] && i < 47; k++)
			argv[i++] = args[k];
		argv[i] = NULL;
		if (spawn_nocaps) {
			gid_t g = OPERATOR_GID;

			/* An empty bounding set: exec gives uid 0 no capabilities. */
			for (int cap = 0; cap < 64; cap++)
				prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
			if (setgroups(1, &g) || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
				fprintf(stderr, "test harness: cannot drop capabilities: %s\n",
					strerror(errno));
				_exit(122);
			}
		}
		execv(pfs_bin, argv);
		fprintf(stderr, "test harness: cannot exec %s: %s\n", pfs_bin, strerror(errno));
		_exit(121);
	}
	return pid;
}

/* Exit code, 128+signal, or -1 after killing a child that overran. */
static int wait_rc(pid_t pid, double timeout_s)
{
	double end = now_s() + timeout_s;
	int st;

	while (now_s() <= end) {
		pid_t w = waitpid(pid, &st, WNOHANG);

		if (w == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		usleep(5000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

static bool alive(pid_t pid)
{
	return waitpid(pid, NULL, WNOHANG) == 0;
}

static char *slurp(const char *tag, const char *ext)
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

static void json_fp(const char *json, char *out, size_t n)
{
	const char *f = strstr(json, "\"fingerprint\":\"");

	out[0] = '\0';
	if (f)
		snprintf(out, n, "%.18s", f + 15);
}

/* Start `pfs blob serve` for blob @name in @dir on @path with @extra args
 * and wait until it answers a ping. Returns its pid, or -1. */
static pid_t start_holder(const char *tag, const char *dir, const char *name, const char *path,
			  char *const extra[])
{
	char *args[40] = { "blob",	 "serve",    "--dir",	   (char *)dir,	   "--name",
			   (char *)name, "--socket", (char *)path, "--token-file", tokfile };
	struct pfs_share_meta m;
	int i = 10;
	pid_t pid;
	double end;

	for (int k = 0; extra && extra[k] && i < 39; k++)
		args[i++] = extra[k];
	args[i] = NULL;
	/* A test that failed half-way may have left its holder running. */
	if (cur_holder > 0 && alive(cur_holder)) {
		kill(cur_holder, SIGKILL);
		waitpid(cur_holder, NULL, 0);
	}
	cur_holder = pid = spawn(tag, args);
	end = now_s() + 10;
	while (now_s() < end) {
		if (!alive(pid)) {
			tap_diag("holder %s exited: %s", tag, slurp(tag, "err"));
			return -1;
		}
		if (!pfs_share_ping(path, NULL, 500, &m))
			return pid;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	tap_diag("holder %s never answered: %s", tag, slurp(tag, "err"));
	return -1;
}

static int stop_holder(pid_t pid)
{
	if (pid <= 0)
		return -1;
	kill(pid, SIGTERM);
	return wait_rc(pid, 10);
}

/* Run @fn(@arg) in a forked child (as @uid when >= 0); its return value is
 * the exit code. */
static int in_child(int (*fn)(void *), void *arg, long uid, double timeout_s)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (uid >= 0 && (setgroups(0, NULL) || setgid((gid_t)uid) || setuid((uid_t)uid)))
			_exit(99);
		_exit(fn(arg));
	}
	return wait_rc(pid, timeout_s);
}

/* One raw message to the holder; the decoded reply in @m. Returns the
 * reply status, or -errno (connect/recv), or -1000 for no reply at all. */
static int raw_request(const char *path, const void *msg, size_t len, struct pfs_share_meta *m,
		       int *fd_out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { 5, 0 };
	uint8_t rep[SHARE_REPLY_MAX + 1];
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} cm;
	struct iovec iov = { rep, sizeof(rep) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cm.buf,
			     .msg_controllen = sizeof(cm.buf) };
	ssize_t n;
	int s, r;

	if (fd_out)
		*fd_out = -1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.100s", path);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa))) {
		r = -errno;
		close(s);
		return r;
	}
	if (len && send(s, msg, len, MSG_NOSIGNAL) < 0) {
		r = -errno;
		close(s);
		return r;
	}
	n = recvmsg(s, &mh, MSG_CMSG_CLOEXEC);
	r = n < 0			  ? -errno :
	    n == 0			  ? -1000 :
	    share_reply_decode(rep, n, m) ? -EPROTO :
					    (int)m->status;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); n > 0 && c; c = CMSG_NXTHDR(&mh, c)) {
		int f;

		memcpy(&f, CMSG_DATA(c), sizeof(f));
		if (fd_out && *fd_out < 0)
			*fd_out = f;
		else
			close(f);
	}
	close(s);
	return r;
}

#define NEED_SETUP()                                       \
	do {                                               \
		if (!setup_ok)                             \
			return tap_skip("%s", setup_skip); \
	} while (0)

static void teardown(void)
{
	if (cur_holder > 0 && alive(cur_holder)) {
		kill(cur_holder, SIGKILL);
		waitpid(cur_holder, NULL, 0);
	}
	if (tmpdir[0])
		sh("rm -rf %s", tmpdir);
	if (shmdir[0])
		sh("rm -rf %s", shmdir);
}

static int write_file(const char *path, const char *s, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode), ok;

	if (fd < 0)
		return -errno;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok ? 0 : -EIO;
}

static int t_setup(void)
{
	char size[32], seed[16];
	int rc;

	pfs_log_set_level(PFS_LOG_WARN);
	pfs_bin = getenv("PFS") ? getenv("PFS") : "build/pfs";
	if (access(pfs_bin, X_OK)) {
		snprintf(setup_skip, sizeof(setup_skip), "pfs binary %s not built", pfs_bin);
		return tap_skip("%s", setup_skip);
	}
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/pfs-share-%d", getpid());
	snprintf(shmdir, sizeof(shmdir), "/dev/shm/pfs-share-%d", getpid());
	atexit(teardown);
	/* 0755: the setuid-nobody consumers must reach the socket dir. */
	CHECK(!mkdir(tmpdir, 0755) && !chmod(tmpdir, 0755), "mkdir %s: %s", tmpdir,
	      strerror(errno));
	pfs_bin = pfs_copy(pfs_bin, tmpdir, pfs_bin_copy, sizeof(pfs_bin_copy));
	CHECK(pfs_bin, "%s", pfs_bin_copy);
	CHECK(!mkdir(shmdir, 0700), "mkdir %s: %s", shmdir, strerror(errno));
	snprintf(tokfile, sizeof(tokfile), "%s/token", tmpdir);
	snprintf(badtok, sizeof(badtok), "%s/badtoken", tmpdir);
	snprintf(sock, sizeof(sock), "%s/run/ns1/blob.sock", tmpdir);
	CHECK(!write_file(tokfile, TOKEN "\n", 0600), "token file");
	CHECK(!write_file(badtok, "not-the-token-0123456789\n", 0600), "bad token file");
	snprintf(size, sizeof(size), "%llu", (unsigned long long)BLOB_SIZE);
	snprintf(seed, sizeof(seed), "%d", BLOB_SEED);
	{
		char *args[] = { "blob",   "create", "--dir",  shmdir,	 "--name",
				 "b4k",	   "--size", size,     "--page", "4k",
				 "--fill", "seed",   "--seed", seed,	 NULL };

		rc = wait_rc(spawn("create", args), 60);
	}
	CHECK(rc == 0, "create rc %d: %s", rc, slurp("create", "err"));
	json_fp(slurp("create", "json"), create_fp, sizeof(create_fp));
	CHECK(create_fp[0], "no fingerprint in %s", slurp("create", "json"));
	tap_diag("4K blob in %s, fingerprint %s", shmdir, create_fp);
	setup_ok = true;
	return TAP_PASS;
}

/* ---- consumers (run in child processes) ---- */

struct consume {
	const char *path, *token;
	bool write_after; /* write into the mapping afterwards (read-only test) */
	int pipe_fd; /* if >= 0: report Shared_Hugetlb then wait for a byte */
};

static uint64_t smaps_hugetlb_kb(void)
{
	char line[256];
	uint64_t kb = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "Shared_Hugetlb:", 15))
			kb += strtoull(line + 15, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

/* 0: the mapping holds exactly the seed pattern and the holder's
 * fingerprint; 10+: which check failed. */
static int consume_fn(void *arg)
{
	struct consume *c = arg;
	struct pfs_share_meta m;
	struct pfs_share_client_opts o = { .sz = sizeof(o), .meta = &m };
	struct pfs_blob *b = pfs_blob__from_socket(c->path, c->token, &o);
	static uint8_t want[1 << 20];
	const struct pfs_blob_timings *t;
	uint64_t fp;

	if (!b)
		return 10;
	if (pfs_blob__size(b) != BLOB_SIZE && c->pipe_fd < 0)
		return 11;
	fp = pfs_blob__fingerprint(b);
	if (fp != m.fingerprint)
		return 12;
	if (c->pipe_fd < 0) {
		for (uint64_t off = 0; off < BLOB_SIZE; off += sizeof(want)) {
			pfs_blob_fill_seed(want, off, sizeof(want), BLOB_SEED);
			if (memcmp(want, pfs_blob__data(b) + off, sizeof(want)))
				return 13;
		}
	}
	/* The consumer paid no setup: nothing was mapped fresh, prefaulted or filled. */
	t = pfs_blob__timings(b);
	if (t->map_s != 0 || t->prefault_s != 0 || t->fill_s != 0)
		return 14;
	if (c->pipe_fd >= 0) {
		char buf[32], x;
		int n = snprintf(buf, sizeof(buf), "%" PRIu64 "\n", smaps_hugetlb_kb());

		if (write(c->pipe_fd, buf, n) != n || read(c->pipe_fd, &x, 1) != 1)
			return 15;
	}
	if (c->write_after) {
		/* The kernel's SIGSEGV must end the child, not a sanitizer's
		 * handler (which would exit with its own code). */
		signal(SIGSEGV, SIG_DFL);
		pfs_blob__data(b)[0] ^= 1; /* SIGSEGV on a read-only mapping */
	}
	pfs_blob__close(b);
	return 0;
}

static int t_create_serve_consume(void)
{
	struct consume c = { sock, TOKEN, false, -1 };
	struct pfs_share_meta m;
	pid_t h;
	int rc1, rc2;

	NEED_SETUP();
	h = start_holder("serve-basic", shmdir, "b4k", sock, NULL);
	CHECK(h > 0, "holder did not start");
	/* Two consumers at once, each its own process. */
	{
		pid_t a = fork();

		if (a == 0)
			_exit(consume_fn(&c));
		rc2 = in_child(consume_fn, &c, -1, 30);
		rc1 = wait_rc(a, 30);
	}
	CHECK(!pfs_share_ping(sock, NULL, 1000, &m), "ping after consumers");
	stop_holder(h);
	CHECK(rc1 == 0 && rc2 == 0, "consumers exited %d and %d", rc1, rc2);
	{
		char fp[32];

		snprintf(fp, sizeof(fp), "0x%016" PRIx64, m.fingerprint);
		CHECK(!strcmp(fp, create_fp), "holder fingerprint %s, create said %s", fp,
		      create_fp);
	}
	CHECK(m.accepted == 2 && m.size == BLOB_SIZE, "accepted %" PRIu64 " size %" PRIu64,
	      m.accepted, m.size);
	return TAP_PASS;
}

static int t_ping_cli(void)
{
	char missing[160];
	pid_t h;
	int rc, rc2;

	NEED_SETUP();
	h = start_holder("serve-ping", shmdir, "b4k", sock, NULL);
	CHECK(h > 0, "holder did not start");
	{
		char *args[] = { "blob", "ping", "--socket", sock, NULL };

		rc = wait_rc(spawn("ping", args), 10);
	}
	/* The operator's readiness probe form: the holder must take the token. */
	{
		char *args[] = { "blob", "ping", "--socket", sock, "--token-file", tokfile, NULL };
		char *bad[] = { "blob", "ping", "--socket", sock, "--token-file", badtok, NULL };
		int good_rc = wait_rc(spawn("ping-tok", args), 10);
		int bad_rc = wait_rc(spawn("ping-badtok", bad), 10);

		CHECK(good_rc == 0, "ping with the token: %d %s", good_rc,
		      slurp("ping-tok", "err"));
		CHECK(bad_rc == 1 && strstr(slurp("ping-badtok", "json"), "token rejected"),
		      "ping with a wrong token: %d %s", bad_rc, slurp("ping-badtok", "json"));
	}
	snprintf(missing, sizeof(missing), "%s/run/none.sock", tmpdir);
	{
		char *args[] = { "blob", "ping", "--socket", missing, "--timeout", "1", NULL };

		rc2 = wait_rc(spawn("ping-missing", args), 10);
	}
	stop_holder(h);
	CHECK(rc == 0, "ping rc %d: %s", rc, slurp("ping", "err"));
	CHECK(strstr(slurp("ping", "json"), create_fp), "ping JSON %s", slurp("ping", "json"));
	CHECK(rc2 == 1, "ping of a missing holder rc %d", rc2);
	CHECK(strstr(slurp("ping-missing", "json"), "\"ok\":false"), "%s",
	      slurp("ping-missing", "json"));
	return TAP_PASS;
}

static int t_wrong_token(void)
{
	struct consume good = { sock, TOKEN, false, -1 };
	struct pfs_share_meta m;
	int fd = -1, err, rc;
	pid_t h;

	NEED_SETUP();
	h = start_holder("serve-token", shmdir, "b4k", sock, NULL);
	CHECK(h > 0, "holder did not start");
	err = pfs_share_fetch(sock, "not-the-token-0123456789", 2000, &fd, &m);
	CHECK(err == -EACCES && fd < 0, "wrong token: err %d fd %d", err, fd);
	CHECK(m.status == PFS_SHARE_BAD_TOKEN && strstr(m.msg, "token rejected"), "msg '%s'",
	      m.msg);
	tap_diag("refusal: %s", m.msg);
	/* A token that is a prefix of the real one, and an empty one. */
	err = pfs_share_fetch(sock, "t0ken", 2000, &fd, &m);
	CHECK(err == -EACCES, "prefix token: %d", err);
	err = pfs_share_fetch(sock, "", 2000, &fd, &m);
	CHECK(err == -EACCES, "empty token: %d", err);
	/* The CLI path: a consumer with the wrong token file fails clearly. */
	{
		char *args[] = {
			"recv",		 "--listen", "127.0.0.1:1",	  "--mode", "offset",
			"--blob-socket", sock,	     "--blob-token-file", badtok,   NULL
		};

		rc = wait_rc(spawn("recv-badtoken", args), 10);
	}
	CHECK(rc == 1 && strstr(slurp("recv-badtoken", "err"), "token rejected"), "recv rc %d: %s",
	      rc, slurp("recv-badtoken", "err"));
	/* ... and says why in its result (the operator's termination message). */
	CHECK(strstr(slurp("recv-badtoken", "json"), "refused: token rejected"), "recv JSON: %s",
	      slurp("recv-badtoken", "json"));
	rc = in_child(consume_fn, &good, -1, 30);
	CHECK(alive(h), "holder died");
	CHECK(!pfs_share_ping(sock, NULL, 1000, &m), "ping");
	stop_holder(h);
	CHECK(rc == 0, "good consumer after refusals: %d", rc);
	CHECK(m.refused == 4 && m.accepted == 1, "refused %" PRIu64 " accepted %" PRIu64, m.refused,
	      m.accepted);
	CHECK(strstr(slurp("serve-token", "err"), "refused pid="), "holder log lacks refusals");
	return TAP_PASS;
}

/* A flood of bad clients is logged at a bounded rate: 300 malformed
 * requests leave fewer than 50 lines in the holder's log, and the dropped
 * ones are counted in a "suppressed" line. */
static int t_log_rate(void)
{
	char p[200], line[512];
	struct pfs_share_meta m;
	unsigned long k, supp = 0;
	int lines = 0, r;
	FILE *f;
	pid_t h;

	NEED_SETUP();
	h = start_holder("serve-flood", shmdir, "b4k", sock, NULL);
	CHECK(h > 0, "holder did not start");
	for (int i = 0; i < 300; i++) {
		r = raw_request(sock, "garbage garbage garbage", 23, &m, NULL);
		CHECK(r == PFS_SHARE_BAD_REQUEST, "bad request %d: %d", i, r);
	}
	CHECK(!pfs_share_ping(sock, NULL, 1000, &m), "ping after the flood");
	CHECK(m.refused == 300, "refused %" PRIu64, m.refused);
	stop_holder(h); /* the holder sums what it suppressed on its way out */
	snprintf(p, sizeof(p), "%s/serve-flood.err", tmpdir);
	f = fopen(p, "r");
	CHECK(f, "%s: %s", p, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		const char *q = strstr(line, "suppressed ");

		lines++;
		if (q && sscanf(q, "suppressed %lu", &k) == 1)
			supp += k;
	}
	fclose(f);
	tap_diag("300 bad clients: %d log lines, %lu suppressed", lines, supp);
	CHECK(lines < 50, "%d log lines for 300 bad clients", lines);
	CHECK(supp > 0 && supp + lines >= 300, "suppressed %lu with %d lines", supp, lines);
	return TAP_PASS;
}

static int t_malformed(void)
{
	static uint8_t big[16384];
	uint8_t msg[SHARE_REQ_MAX];
	struct pfs_share_meta m;
	int r, fd;
	size_t n;
	pid_t h;
	unsigned int rs = 12345;

	NEED_SETUP();
	h = start_holder("serve-malformed", shmdir, "b4k", sock, NULL);
	CHECK(h > 0, "holder did not start");
	r = raw_request(sock, "garbage garbage garbage", 23, &m, NULL);
	CHECK(r == PFS_SHARE_BAD_REQUEST && strstr(m.msg, "malformed"), "garbage: %d '%s'", r,
	      m.msg);
	memset(big, 'A', sizeof(big));
	n = share_req_encode(big, 1, PFS_SHARE_OP_GET, NULL, 0);
	(void)n;
	r = raw_request(sock, big, sizeof(big), &m, NULL);
	CHECK(r == PFS_SHARE_BAD_REQUEST && strstr(m.msg, "larger"), "oversized: %d '%s'", r,
	      m.msg);
	n = share_req_encode(msg, 7, PFS_SHARE_OP_GET, TOKEN, strlen(TOKEN));
	r = raw_request(sock, msg, n, &m, NULL);
	CHECK(r == PFS_SHARE_BAD_VERSION && strstr(m.msg, "version 7"), "version: %d '%s'", r,
	      m.msg);
	n = share_req_encode(msg, 1, PFS_SHARE_OP_GET, TOKEN, strlen(TOKEN));
	r = raw_request(sock, msg, n - 3, &m, NULL); /* token_len says more than sent */
	CHECK(r == PFS_SHARE_BAD_REQUEST, "short token: %d", r);
	n = share_req_encode(msg, 1, (enum pfs_share_op)9, TOKEN, strlen(TOKEN));
	r = raw_request(sock, msg, n, &m, NULL);
	CHECK(r == PFS_SHARE_BAD_REQUEST, "bad op: %d", r);
	r = raw_request(sock, msg, 5, &m, NULL); /* shorter than the header */
	CHECK(r == PFS_SHARE_BAD_REQUEST, "short header: %d", r);
	/* Connect and close without a word. */
	r = raw_request(sock, NULL, 0, &m, NULL);
	(void)r;
	/* A valid request that carries an fd for the holder: the holder must
	 * ignore the fd (the kernel drops it) and still answer. */
	{
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(sizeof(int))];
		} cm = { 0 };
		struct iovec iov = { msg, 0 };
		struct msghdr mh = { .msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = cm.b,
				     .msg_controllen = sizeof(cm.b) };
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		uint8_t rep[SHARE_REPLY_MAX];
		int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), in = 0;
		ssize_t got;

		iov.iov_len = share_req_encode(msg, 1, PFS_SHARE_OP_GET, TOKEN, strlen(TOKEN));
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &in, sizeof(int));
		memcpy(sa.sun_path, sock, strlen(sock) + 1);
		CHECK(!connect(s, (struct sockaddr *)&sa, sizeof(sa)), "connect");
		CHECK(sendmsg(s, &mh, 0) > 0, "sendmsg with fd: %s", strerror(errno));
		got = recv(s, rep, sizeof(rep), 0);
		close(s);
		CHECK(got > 0 && !share_reply_decode(rep, got, &m) && m.status == PFS_SHARE_OK,
		      "request with an fd attached: got %zd status %d", got, (int)m.status);
	}
	/* Random bytes of random lengths, some with a valid header prefix. */
	for (int i = 0; i < 300; i++) {
		size_t len = 1 + rand_r(&rs) % (SHARE_REQ_MAX + 64);

		for (size_t k = 0; k < len; k++)
			big[k] = (uint8_t)rand_r(&rs);
		if (i % 3 == 0)
			memcpy(big, SHARE_REQ_MAGIC "\x01\x00", 6);
		r = raw_request(sock, big, len, &m, &fd);
		if (fd >= 0) {
			close(fd);
			CHECK(0, "random request %d got an fd", i);
		}
		CHECK(r > 0 || r == -1000, "random request %d: %d", i, r);
	}
	CHECK(alive(h), "holder died: %s", slurp("serve-malformed", "err"));
	CHECK(!pfs_share_ping(sock, NULL, 1000, &m), "ping after abuse");
	tap_diag("after abuse: accepted %" PRIu64 ", refused %" PRIu64, m.accepted, m.refused);
	stop_holder(h);
	return TAP_PASS;
}

static int t_slow_client(void)
{
	struct consume good = { sock, TOKEN, false, -1 };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct pfs_share_meta m;
	char *extra[] = { "--client-timeout", "1", "--max-clients", "3", NULL };
	uint8_t rep[SHARE_REPLY_MAX];
	int idle[3], rc, busy;
	double t0, t_good;
	ssize_t got;
	pid_t h;

	NEED_SETUP();
	h = start_holder("serve-slow", shmdir, "b4k", sock, extra);
	CHECK(h > 0, "holder did not start");
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	/* Two silent clients hold slots; a third would fill the table. */
	for (int i = 0; i < 2; i++) {
		idle[i] = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		CHECK(!connect(idle[i], (struct sockaddr *)&sa, sizeof(sa)), "connect idle");
	}
	t0 = now_s();
	rc = in_child(consume_fn, &good, -1, 30);
	t_good = now_s() - t0;
	CHECK(rc == 0, "consumer while two clients idle: %d", rc);
	CHECK(t_good < 0.9, "consumer waited %.3f s behind idle clients", t_good);
	/* Fill the table: the next one is told the holder is busy. */
	idle[2] = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	CHECK(!connect(idle[2], (struct sockaddr *)&sa, sizeof(sa)), "connect idle 3");
	usleep(100000);
	busy = pfs_share_fetch(sock, TOKEN, 2000, &rc, &m);
	CHECK(busy == -EBUSY && strstr(m.msg, "busy"), "4th client: %d '%s'", busy, m.msg);
	/* The silent ones are answered "timed out" and closed. */
	{
		struct timeval tv = { 3, 0 };

		setsockopt(idle[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		got = recv(idle[0], rep, sizeof(rep), 0);
	}
	t_good = now_s() - t0;
	for (int i = 0; i < 3; i++)
		close(idle[i]);
	CHECK(got > 0 && !share_reply_decode(rep, got, &m) && m.status == PFS_SHARE_TIMEOUT,
	      "idle client reply: %zd status %d", got, (int)m.status);
	CHECK(t_good >= 0.9 && t_good < 2.5, "timeout after %.3f s", t_good);
	tap_diag("idle client told '%s' after %.2f s", m.msg, t_good);
	rc = in_child(consume_fn, &good, -1, 30);
	CHECK(rc == 0, "consumer after timeouts: %d", rc);
	stop_holder(h);
	return TAP_PASS;
}

static int peercred_fn(void *arg)
{
	struct pfs_share_meta m;
	int fd, err = pfs_share_fetch(arg, TOKEN, 2000, &fd, &m);

	if (err)
		return 10;
	close(fd);
	return m.peer_pid == (uint32_t)getpid() && m.peer_uid == getuid() &&
			       m.peer_gid == getgid() ?
		       0 :
		       11;
}

static int t_peercred(void)
{
	char want[64];
	pid_t h, c;
	int rc;

	NEED_SETUP();
	h = start_holder("serve-cred", shmdir, "b4k", sock, NULL);
	CHECK(h > 0, "holder did not start");
	c = fork();
	if (c == 0)
		_exit(peercred_fn(sock));
	rc = wait_rc(c, 10);
	stop_holder(h);
	CHECK(rc == 0, "holder reported other credentials than the client's (%d)", rc);
	snprintf(want, sizeof(want), "pid=%d uid=%u gid=%u", c, getuid(), getgid());
	CHECK(strstr(slurp("serve-cred", "err"), want), "holder log lacks '%s': %s", want,
	      slurp("serve-cred", "err"));
	return TAP_PASS;
}

static int t_nonroot(void)
{
	struct consume c = { sock, TOKEN, false, -1 };
	char grp[16], *closed[] = { "--socket-mode", "0600", NULL };
	char *open_grp[] = { "--socket-mode", "0660", "--socket-group", grp, NULL };
	char *allow[] = { "--socket-mode", "0666", "--allow-uid", "0,1000", NULL };
	struct stat st;
	pid_t h;
	int rc;

	NEED_SETUP();
	if (geteuid())
		return tap_skip("needs root to setuid to %d", NOBODY);
	snprintf(grp, sizeof(grp), "%d", NOBODY);
	h = start_holder("serve-0600", shmdir, "b4k", sock, closed);
	CHECK(h > 0, "holder did not start");
	CHECK(!stat(sock, &st) && (st.st_mode & 0777) == 0600, "mode %o", st.st_mode & 0777);
	rc = in_child(consume_fn, &c, NOBODY, 30);
	CHECK(alive(h), "holder died");
	stop_holder(h);
	CHECK(rc == 10, "uid %d on a 0600 root socket: rc %d (want refused)", NOBODY, rc);

	h = start_holder("serve-0660", shmdir, "b4k", sock, open_grp);
	CHECK(h > 0, "holder did not start");
	CHECK(!stat(sock, &st) && (st.st_mode & 0777) == 0660 && st.st_gid == NOBODY,
	      "mode %o gid %u", st.st_mode & 0777, st.st_gid);
	rc = in_child(consume_fn, &c, NOBODY, 30);
	stop_holder(h);
	CHECK(rc == 0, "uid %d in the socket's group: rc %d", NOBODY, rc);
	CHECK(strstr(slurp("serve-0660", "err"), "uid=65534"), "holder log");

	h = start_holder("serve-allow", shmdir, "b4k", sock, allow);
	CHECK(h > 0, "holder did not start");
	rc = in_child(consume_fn, &c, NOBODY, 30);
	stop_holder(h);
	CHECK(rc == 10, "uid %d outside --allow-uid: rc %d", NOBODY, rc);
	CHECK(strstr(slurp("serve-allow", "err"), "--allow-uid"), "holder log: %s",
	      slurp("serve-allow", "err"));
	return TAP_PASS;
}

static int t_read_only(void)
{
	struct consume c = { sock, TOKEN, true, -1 };
	char *extra[] = { "--read-only", NULL };
	pid_t h;
	int rc;

	NEED_SETUP();
	h = start_holder("serve-ro", shmdir, "b4k", sock, extra);
	CHECK(h > 0, "holder did not start");
	rc = in_child(consume_fn, &c, -1, 30);
	stop_holder(h);
	CHECK(rc == 128 + SIGSEGV, "write into a read-only shared blob: rc %d (want SIGSEGV)", rc);
	return TAP_PASS;
}

static int flip_fn(void *arg)
{
	struct pfs_blob *b = pfs_blob__from_socket(arg, TOKEN, NULL);

	if (!b)
		return 10;
	pfs_blob__data(b)[12345] ^= 0xff;
	pfs_blob__close(b);
	return 0;
}

/* A consumer that writes into a shared read-write blob changes it for all;
 * the next consumer's fingerprint check catches it and says so. */
static int t_modified_detected(void)
{
	char *create[] = { "blob",   "create", "--dir",	 shmdir, "--name", "mod",
			   "--size", "4M",     "--page", "4k",	 NULL };
	char *attach[] = { "blob", "attach", "--socket", sock, "--token-file", tokfile, NULL };
	int rc, rc2;
	pid_t h;

	NEED_SETUP();
	CHECK(wait_rc(spawn("create-mod", create), 30) == 0, "create");
	h = start_holder("serve-mod", shmdir, "mod", sock, NULL);
	CHECK(h > 0, "holder did not start");
	rc = in_child(flip_fn, sock, -1, 30);
	rc2 = wait_rc(spawn("attach-mod", attach), 30);
	stop_holder(h);
	sh("rm -f %s/mod", shmdir);
	CHECK(rc == 0, "writer %d", rc);
	CHECK(rc2 == 1 && strstr(slurp("attach-mod", "json"), "fingerprint differs"),
	      "attach after a write: rc %d %s", rc2, slurp("attach-mod", "json"));
	return TAP_PASS;
}

/* `pfs pcore run` over a read-only holder: read-only ops run and see the
 * holder's bytes; an in-place op is refused up front (exit 2, a message that
 * says what to do), never a fault mid-run. */
static int t_pcore_read_only(void)
{
	char *extra[] = { "--read-only", NULL };
	char *crc[] = { "pcore",	 "run",	     "--op",
			"crc32c",	 "--pcores", "1",
			"--blob-socket", sock,	     "--blob-token-file",
			tokfile,	 NULL };
	char * xor [] = { "pcore",
			  "run",
			  "--op",
			  "xor",
			  "--imm",
			  "1",
			  "--pcores",
			  "1",
			  "--blob-socket",
			  sock,
			  "--blob-token-file",
			  tokfile,
			  NULL };
	int rc_crc, rc_xor;
	pid_t h;

	NEED_SETUP();
	h = start_holder("serve-pcore", shmdir, "b4k", sock, extra);
	CHECK(h > 0, "holder did not start");
	rc_crc = wait_rc(spawn("pcore-crc", crc), 60);
	rc_xor = wait_rc(spawn("pcore-xor", xor), 30);
	stop_holder(h);
	CHECK(rc_crc == 0 && strstr(slurp("pcore-crc", "json"), "\"op\":\"crc32c\""),
	      "crc32c over the holder's blob: rc %d %s %s", rc_crc, slurp("pcore-crc", "json"),
	      slurp("pcore-crc", "err"));
	CHECK(rc_xor == 2 && strstr(slurp("pcore-xor", "err"), "shared read-only"),
	      "xor over a read-only holder: rc %d %s", rc_xor, slurp("pcore-xor", "err"));
	return TAP_PASS;
}

static long cap_eff(pid_t pid)
{
	char p[64], line[128];
	long v = -1;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/status", pid);
	f = fopen(p, "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "CapEff:", 7))
			v = strtol(line + 7, NULL, 16);
	if (f)
		fclose(f);
	return v;
}

/* The holder as the operator's pod runs it (uid 0, every capability
 * dropped, fsGroup 65532, --socket-group 65532) serving a consumer that
 * runs as uid/gid 65532 with no capabilities either. */
static int t_operator_profile(void)
{
	char grp[16];
	char *create[] = { "blob",   "create", "--dir",	 shmdir, "--name", "op", "--size", "16M",
			   "--page", "4k",     "--fill", "seed", "--seed", "9",	 NULL };
	char *extra[] = { "--socket-group", grp, NULL };
	struct consume c = { sock, TOKEN, false, -1 };
	int rc;
	long caps;
	pid_t h;

	NEED_SETUP();
	if (geteuid())
		return tap_skip("needs root to drop to the operator's profile");
	snprintf(grp, sizeof(grp), "%d", OPERATOR_GID);
	spawn_nocaps = true;
	rc = wait_rc(spawn("create-op", create), 30);
	h = rc ? -1 : start_holder("serve-op", shmdir, "op", sock, extra);
	spawn_nocaps = false;
	CHECK(rc == 0, "create without capabilities: %d %s", rc, slurp("create-op", "err"));
	CHECK(h > 0, "holder without capabilities did not start");
	caps = cap_eff(h);
	rc = in_child(consume_fn, &c, OPERATOR_GID, 30);
	stop_holder(h);
	sh("rm -f %s/op", shmdir);
	CHECK(caps == 0, "holder CapEff %lx", caps);
	CHECK(rc == 0, "consumer uid %d: rc %d; holder: %s", OPERATOR_GID, rc,
	      slurp("serve-op", "err"));
	return TAP_PASS;
}

/* ---- hugepages ---- */

static long meminfo(const char *key)
{
	char line[128];
	long v = -1;
	size_t kl = strlen(key);
	FILE *f = fopen("/proc/meminfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ':')
			v = strtol(line + kl + 1, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

static long read_nr(void)
{
	long v = -1;
	FILE *f = fopen("/proc/sys/vm/nr_hugepages", "r");

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static int write_nr(long v)
{
	FILE *f = fopen("/proc/sys/vm/nr_hugepages", "w");
	int ok;

	if (!f)
		return -errno;
	ok = fprintf(f, "%ld\n", v) > 0;
	return !fclose(f) && ok ? 0 : -EIO;
}

static long mount_free(const char *dir)
{
	struct statfs s;

	return statfs(dir, &s) ? -1 : (long)s.f_bfree;
}

static int t_hugepages_not_double_counted(void)
{
	/* 4 pages for the 8 MiB blob plus 4 spare, so a consumer that did
	 * allocate its own copy would show as HugePages_Free dropping by 4
	 * rather than failing for want of pages. */
	const long need = 8;
	char hp[128], hsock[160], kbs[32];
	struct consume c = { hsock, TOKEN, false, -1 };
	long added = 0, before_free, after_free = -1, before_rsvd, after_rsvd = -1;
	long mnt_before, mnt_after = -1;
	int sv[2], rc = -1, ret = TAP_FAIL, tries;
	bool mounted = false, same = false;
	pid_t h = -1, cp;

	NEED_SETUP();
	if (geteuid())
		return tap_skip("needs root for hugetlbfs and vm.nr_hugepages");
	if (meminfo("Hugepagesize") != 2048)
		return tap_skip("default hugepage size is %ld kB, not 2048",
				meminfo("Hugepagesize"));
	if (meminfo("HugePages_Free") < need) {
		long nr = read_nr();

		added = need - meminfo("HugePages_Free");
		if (nr < 0 || write_nr(nr + added))
			return tap_skip("cannot raise vm.nr_hugepages: %s", strerror(errno));
		if (meminfo("HugePages_Free") < need) {
			write_nr(read_nr() - added);
			return tap_skip("kernel could not provide %ld 2 MiB pages (fragmented)",
					need);
		}
	}
	snprintf(hp, sizeof(hp), "%s/hp", tmpdir);
	snprintf(hsock, sizeof(hsock), "%s/run/ns2/huge.sock", tmpdir);
	mkdir(hp, 0755);
	/* A mount of its own with a page limit: its free count belongs to
	 * this test alone, whatever else the machine does with hugepages. */
	if (mount("none", hp, "hugetlbfs", 0, "pagesize=2M,size=8M,mode=0755")) {
		ret = tap_skip("cannot mount hugetlbfs: %s", strerror(errno));
		goto out_release;
	}
	mounted = true;
	{
		char *args[] = { "blob",   "create", "--dir",  hp,   "--name",	      "huge",
				 "--size", "8M",     "--page", "2M", "--no-fallback", "--fill",
				 "seed",   "--seed", "3",      NULL };

		rc = wait_rc(spawn("create-huge", args), 60);
	}
	if (rc) {
		tap_diag("create rc %d: %s", rc, slurp("create-huge", "err"));
		goto out_umount;
	}
	/* create has exited: the pages must still be held by the file. */
	if (mount_free(hp) != 0) {
		tap_diag("after create exited the mount has %ld free pages (want 0)",
			 mount_free(hp));
		goto out_umount;
	}
	h = start_holder("serve-huge", hp, "huge", hsock, NULL);
	if (h < 0)
		goto out_umount;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		goto out_stop;
	/* Sample the global counters right before and while the consumer holds
	 * its mapping; other programs on the machine may move them, so retry. */
	for (tries = 0; tries < 5 && !same; tries++) {
		char buf[32] = "";
		ssize_t n;

		mnt_before = mount_free(hp);
		before_free = meminfo("HugePages_Free");
		before_rsvd = meminfo("HugePages_Rsvd");
		c.pipe_fd = sv[1];
		cp = fork();
		if (cp == 0)
			_exit(consume_fn(&c));
		n = read(sv[0], buf, sizeof(buf) - 1);
		after_free = meminfo("HugePages_Free");
		after_rsvd = meminfo("HugePages_Rsvd");
		mnt_after = mount_free(hp);
		(void)!write(sv[0], "x", 1);
		rc = wait_rc(cp, 30);
		if (rc || n <= 0) {
			tap_diag("consumer rc %d", rc);
			goto out_pair;
		}
		buf[n] = '\0';
		snprintf(kbs, sizeof(kbs), "%s", buf);
		kbs[strcspn(kbs, "\n")] = '\0';
		same = before_free == after_free && before_rsvd == after_rsvd;
		tap_diag("try %d: HugePages_Free %ld -> %ld, Rsvd %ld -> %ld, "
			 "mount free %ld -> %ld, consumer Shared_Hugetlb %s kB",
			 tries + 1, before_free, after_free, before_rsvd, after_rsvd, mnt_before,
			 mnt_after, kbs);
		if (mnt_before != mnt_after || strtol(kbs, NULL, 10) != 8192) {
			tap_diag("the consumer's mapping changed the mount's page count or is not "
				 "on hugetlb");
			goto out_pair;
		}
	}
	if (!same) {
		tap_diag("HugePages_Free/Rsvd moved on every try (others use hugepages too?)");
		goto out_pair;
	}
	ret = TAP_PASS;
out_pair:
	close(sv[0]);
	close(sv[1]);
out_stop:
	stop_holder(h);
out_umount:
	sh("rm -f %s/huge", hp);
	if (mounted)
		umount(hp);
out_release:
	if (added)
		write_nr(read_nr() - added);
	return ret;
}

/* create on a hugetlbfs dir too small for the blob falls back (with the
 * reason in its JSON) to /dev/shm; serve still finds and serves it. */
static int t_fallback_found(void)
{
	char hp[128], name[48], fsock[160], path[128];
	struct consume c = { fsock, TOKEN, false, -1 };
	int rc = -1, ret = TAP_FAIL;
	const char *j;
	pid_t h;

	NEED_SETUP();
	if (geteuid())
		return tap_skip("needs root to mount hugetlbfs");
	snprintf(hp, sizeof(hp), "%s/hp-small", tmpdir);
	snprintf(name, sizeof(name), "pfs-fallback-%d", getpid());
	snprintf(fsock, sizeof(fsock), "%s/run/ns3/fb.sock", tmpdir);
	snprintf(path, sizeof(path), "/dev/shm/%s", name);
	mkdir(hp, 0755);
	if (mount("none", hp, "hugetlbfs", 0, "pagesize=2M,size=2M"))
		return tap_skip("cannot mount hugetlbfs: %s", strerror(errno));
	{
		char *args[] = { "blob",   "create", "--dir",  hp,	 "--name",
				 name,	   "--size", "16M",    "--page", "2M",
				 "--fill", "seed",   "--seed", "9",	 NULL };

		rc = wait_rc(spawn("create-fb", args), 60);
	}
	j = slurp("create-fb", "json");
	if (rc || !strstr(j, "\"fallback_reason\":\"hugetlb 2M") || !strstr(j, path)) {
		tap_diag("create rc %d: %s", rc, j);
		goto out;
	}
	h = start_holder("serve-fb", hp, name, fsock, NULL);
	if (h < 0)
		goto out;
	rc = in_child(consume_fn, &c, -1, 30);
	stop_holder(h);
	if (rc || !strstr(slurp("serve-fb", "err"), "fell back")) {
		tap_diag("consumer rc %d; holder log: %s", rc, slurp("serve-fb", "err"));
		goto out;
	}
	ret = TAP_PASS;
out:
	unlink(path);
	umount(hp);
	return ret;
}

/* ---- socket lifecycle ---- */

static int t_stale_socket(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct consume c = { sock, TOKEN, false, -1 };
	char regular[160];
	pid_t h, h2;
	int s, rc;

	NEED_SETUP();
	/* A socket file left by a holder that died (bound, never unlinked). */
	sh("mkdir -p %s/run/ns1 && rm -f %s", tmpdir, sock);
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	CHECK(!bind(s, (struct sockaddr *)&sa, sizeof(sa)), "bind stale: %s", strerror(errno));
	close(s);
	CHECK(!access(sock, F_OK), "stale socket file missing");
	h = start_holder("serve-stale", shmdir, "b4k", sock, NULL);
	CHECK(h > 0, "holder did not replace a stale socket");
	CHECK(strstr(slurp("serve-stale", "err"), "stale"), "no log of the replacement");
	/* A second holder must not steal a live holder's socket. */
	{
		char *args[] = { "blob",     "serve", "--dir",	      shmdir,  "--name", "b4k",
				 "--socket", sock,    "--token-file", tokfile, NULL };

		h2 = spawn("serve-second", args);
		rc = wait_rc(h2, 10);
	}
	CHECK(rc == 1 && strstr(slurp("serve-second", "err"), "another holder"),
	      "second holder rc %d: %s", rc, slurp("serve-second", "err"));
	rc = in_child(consume_fn, &c, -1, 30);
	stop_holder(h);
	CHECK(rc == 0, "first holder disturbed by the second: %d", rc);
	/* A regular file at the path is never removed. */
	snprintf(regular, sizeof(regular), "%s/run/regular", tmpdir);
	CHECK(!write_file(regular, "keep me\n", 0644), "write");
	{
		char *args[] = { "blob",     "serve", "--dir",	      shmdir,  "--name", "b4k",
				 "--socket", regular, "--token-file", tokfile, NULL };

		rc = wait_rc(spawn("serve-regular", args), 10);
	}
	CHECK(rc == 1 && !access(regular, F_OK), "serve over a regular file: rc %d", rc);
	return TAP_PASS;
}

static int t_sigterm(void)
{
	char ready[160], *extra[] = { "--ready-file", ready, NULL };
	int sig[] = { SIGTERM, SIGINT };

	NEED_SETUP();
	snprintf(ready, sizeof(ready), "%s/ready", tmpdir);
	for (int i = 0; i < 2; i++) {
		pid_t h = start_holder("serve-term", shmdir, "b4k", sock, extra);
		int rc;

		CHECK(h > 0, "holder did not start");
		CHECK(!access(ready, F_OK), "no ready file while serving");
		kill(h, sig[i]);
		rc = wait_rc(h, 10);
		CHECK(rc == 0, "exit %d after signal %d", rc, sig[i]);
		CHECK(access(sock, F_OK) && errno == ENOENT, "socket left after signal %d", sig[i]);
		CHECK(access(ready, F_OK), "ready file left");
		CHECK(strstr(slurp("serve-term", "json"), "\"cmd\":\"blob-serve\""), "exit JSON");
	}
	return TAP_PASS;
}

/* In a container the holder is PID 1 of its pid namespace, where a signal
 * without a handler is dropped: SIGTERM must still end it cleanly. */
static int t_sigterm_pid1(void)
{
	char *args[] = { (char *)pfs_bin, "blob",     "serve", "--dir",	       shmdir,	"--name",
			 "b4k",		  "--socket", sock,    "--token-file", tokfile, NULL };
	struct pfs_share_meta m;
	int pfd[2], rc = -1;
	pid_t mid, serve = -1;
	double end;

	NEED_SETUP();
	if (geteuid())
		return tap_skip("needs root for a pid namespace");
	CHECK(!pipe(pfd), "pipe");
	mid = fork();
	if (mid == 0) {
		pid_t g;
		int st;

		if (unshare(CLONE_NEWPID))
			_exit(98);
		g = fork();
		if (g == 0) {
			int fd = open("/dev/null", O_WRONLY);

			dup2(fd, 1);
			dup2(fd, 2);
			execv(pfs_bin, args);
			_exit(121);
		}
		(void)!write(pfd[1], &g, sizeof(g));
		waitpid(g, &st, 0);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
	close(pfd[1]);
	if (read(pfd[0], &serve, sizeof(serve)) != sizeof(serve))
		serve = -1;
	close(pfd[0]);
	if (serve <= 0) {
		rc = wait_rc(mid, 5);
		return rc == 98 ? tap_skip("unshare(CLONE_NEWPID): not permitted") : TAP_FAIL;
	}
	for (end = now_s() + 10; now_s() < end && pfs_share_ping(sock, NULL, 500, &m);)
		usleep(10000);
	kill(serve, SIGTERM);
	rc = wait_rc(mid, 10);
	CHECK(rc == 0, "PID-1 holder exit %d after SIGTERM", rc);
	CHECK(access(sock, F_OK) && errno == ENOENT, "socket left by the PID-1 holder");
	return TAP_PASS;
}

/* ---- consumers through the CLI ---- */

static int t_send_recv_offset(void)
{
	char listen[32], conn[32], bytes[32];
	pid_t h, r, s;
	int rrc, src;
	const char *rj, *sj;
	char rfp[32], sfp[32];

	NEED_SETUP();
	h = start_holder("serve-xfer", shmdir, "b4k", sock, NULL);
	CHECK(h > 0, "holder did not start");
	port = 7650 + getpid() % 1000;
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	snprintf(conn, sizeof(conn), "127.0.0.1:%d", port);
	snprintf(bytes, sizeof(bytes), "%llu", (unsigned long long)BLOB_SIZE * 4);
	{
		char *rargs[] = { "recv",   "--listen",
				  listen,   "--mode",
				  "offset", "--blob-socket",
				  sock,	    "--blob-token-file",
				  tokfile,  "--accept-timeout",
				  "30",	    "--timeout",
				  "20",	    NULL };
		char *sargs[] = { "send",   "--connect",     conn,  "--mode",
				  "offset", "--blob-socket", sock,  "--blob-token-file",
				  tokfile,  "--bytes",	     bytes, "--pattern",
				  "random", "--timeout",     "20",  NULL };

		r = spawn("xfer-recv", rargs);
		s = spawn("xfer-send", sargs);
		src = wait_rc(s, 60);
		rrc = wait_rc(r, 60);
	}
	stop_holder(h);
	CHECK(strstr(slurp("serve-xfer", "err"), "accepted 2"), "holder did not serve both");
	rj = slurp("xfer-recv", "json");
	sj = slurp("xfer-send", "json");
	CHECK(rrc == 0 && src == 0, "recv rc %d (%s), send rc %d (%s)", rrc,
	      slurp("xfer-recv", "err"), src, slurp("xfer-send", "err"));
	CHECK(strstr(rj, "\"integrity\":\"OK\"") && strstr(sj, "\"integrity\":\"OK\""),
	      "integrity: %s", rj);
	json_fp(rj, rfp, sizeof(rfp));
	json_fp(sj, sfp, sizeof(sfp));
	CHECK(!strcmp(rfp, create_fp) && !strcmp(sfp, create_fp), "fingerprints %s %s, create %s",
	      rfp, sfp, create_fp);
	/* Neither side paid blob setup: it came from the holder. */
	CHECK(strstr(rj, "\"prefault_s\":0.0000,\"fill_s\":0.0000"), "receiver setup: %s", rj);
	tap_diag("offset via holder: %.*s", 120, strstr(rj, "\"size_mb\""));
	return TAP_PASS;
}

static int t_create_replace(void)
{
	char *args[] = { "blob",   "create", "--dir",  shmdir, "--name", "rep",
			 "--size", "4M",     "--page", "4k",   NULL,	 NULL };
	int rc1, rc2, rc3;

	NEED_SETUP();
	rc1 = wait_rc(spawn("rep1", args), 30);
	rc2 = wait_rc(spawn("rep2", args), 30);
	args[10] = "--replace";
	rc3 = wait_rc(spawn("rep3", args), 30);
	sh("rm -f %s/rep", shmdir);
	CHECK(rc1 == 0, "first create %d", rc1);
	CHECK(rc2 == 1 && strstr(slurp("rep2", "err"), "exists"), "second create %d: %s", rc2,
	      slurp("rep2", "err"));
	CHECK(rc3 == 0, "create --replace %d: %s", rc3, slurp("rep3", "err"));
	return TAP_PASS;
}

/* A short fixed-seed libFuzzer run of the request and reply decoders under
 * ASan/UBSan (`make fuzz` runs it longer). */
static int t_fuzz_decoders(void)
{
	const char *b = getenv("BUILD") ? getenv("BUILD") : "build";
	char fz[160], corpus[160];
	int rc;

	snprintf(fz, sizeof(fz), "%s/fuzz/fuzz_share", b);
	if (access(fz, X_OK))
		return tap_skip("%s not built (needs clang with libFuzzer: libclang-rt-14-dev)",
				fz);
	NEED_SETUP();
	snprintf(corpus, sizeof(corpus), "%s/fuzz-corpus", tmpdir);
	mkdir(corpus, 0700);
	CHECK(!sh("%s/fuzz/corpus_share %s", b, corpus), "corpus");
	rc = sh("%s -runs=20000 -seed=1 %s >%s/fuzz.log 2>&1", fz, corpus, tmpdir);
	CHECK(rc == 0, "fuzzer rc %d: %s", rc, slurp("fuzz", "log"));
	return TAP_PASS;
}

/* ---- pure helpers ---- */

static int t_token_helpers(void)
{
	char buf[PFS_SHARE_TOKEN_MAX + 1], path[160], big[PFS_SHARE_TOKEN_MAX + 8];

	CHECK(pfs_share_token_equal("abc", 3, "abc", 3), "equal");
	CHECK(!pfs_share_token_equal("abc", 3, "abd", 3), "differ");
	CHECK(!pfs_share_token_equal("abc", 3, "abcd", 4), "prefix");
	CHECK(!pfs_share_token_equal("", 0, "a", 1), "empty");
	memset(big, 'a', sizeof(big));
	CHECK(!pfs_share_token_equal("a", 1, big, PFS_SHARE_TOKEN_MAX + 1), "overlong");
	CHECK(!pfs_share_token_equal(big, PFS_SHARE_TOKEN_MAX + 1, big, PFS_SHARE_TOKEN_MAX + 1),
	      "overlong pair");
	NEED_SETUP();
	snprintf(path, sizeof(path), "%s/tok-test", tmpdir);
	CHECK(!write_file(path, "secret \r\n\n", 0600), "write");
	CHECK(pfs_share_token_read(path, buf, sizeof(buf)) == 6 && !strcmp(buf, "secret"),
	      "trimmed '%s'", buf);
	CHECK(!write_file(path, "\n", 0600), "write");
	CHECK(pfs_share_token_read(path, buf, sizeof(buf)) == -EINVAL, "empty token accepted");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK(!write_file(path, big, 0600), "write");
	CHECK(pfs_share_token_read(path, buf, sizeof(buf)) == -E2BIG, "oversized token accepted");
	CHECK(pfs_share_token_read("/nonexistent/x", buf, sizeof(buf)) == -ENOENT, "missing");
	/* 32 random bytes with a NUL inside, as the operator once wrote them:
	 * refused with EILSEQ rather than silently cut short by the client. */
	{
		static const char bin[] = { '\x8a', '\x9a', 'q', '\0', '\x90', '5' };
		int fd = open(path, O_WRONLY | O_TRUNC);

		CHECK(fd >= 0 && write(fd, bin, sizeof(bin)) == (ssize_t)sizeof(bin),
		      "write binary");
		close(fd);
		CHECK(pfs_share_token_read(path, buf, sizeof(buf)) == -EILSEQ,
		      "token with a NUL accepted");
		CHECK(strstr(pfs_share_token_strerror(-EILSEQ), "NUL"), "message");
	}
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "setup: 4K named blob created by `pfs blob create` (process exits)", t_setup,
	  .setup = true },
	{ "serve in a child; two consumer processes get identical bytes and fingerprint",
	  t_create_serve_consume },
	{ "pfs blob ping: 0 when the holder answers (and takes --token-file), 1 when not",
	  t_ping_cli },
	{ "wrong token refused with a clear error; holder keeps serving", t_wrong_token },
	{ "malformed, oversized, fd-carrying and random requests: no crash, clear errors",
	  t_malformed },
	{ "slow clients neither block others nor stay forever; busy when full", t_slow_client },
	{ "SO_PEERCRED reported to the client and in the holder log", t_peercred },
	{ "300 bad clients: holder log rate-limited, suppressed count", t_log_rate },
	{ "non-root consumer: refused by socket mode, allowed by group, refused by --allow-uid",
	  t_nonroot },
	{ "--read-only holder: consumer mapping is read-only", t_read_only },
	{ "pcore over a read-only holder: crc32c runs, xor refused with a clear error",
	  t_pcore_read_only },
	{ "operator profile: holder uid 0 without capabilities, consumer uid 65532",
	  t_operator_profile },
	{ "a consumer's write is caught by the next consumer's fingerprint check",
	  t_modified_detected },
	{ "2 MiB hugepages: blob persists after create exits, consumer maps without new pages",
	  t_hugepages_not_double_counted },
	{ "create falls back from a full hugetlbfs dir to /dev/shm; serve finds it",
	  t_fallback_found },
	{ "stale socket replaced; live holder and regular file left alone", t_stale_socket },
	{ "SIGTERM/SIGINT: exit 0, socket and ready file removed", t_sigterm },
	{ "SIGTERM ends a holder that is PID 1 of its pid namespace", t_sigterm_pid1 },
	{ "pfs send/recv offset mode with both blobs from the holder", t_send_recv_offset },
	{ "create refuses an existing name; --replace replaces it", t_create_replace },
	{ "token file reading and constant-time compare", t_token_helpers },
	{ "libFuzzer: request and reply decoders, 20000 runs, seed 1", t_fuzz_decoders },
};

TAP_MAIN(tests)
