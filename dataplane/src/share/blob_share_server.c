// SPDX-License-Identifier: Apache-2.0
/*
 * Blob sharing, holder side: one thread, one poll loop over the listening
 * socket, the caller's stop fd (pfs: a signalfd of SIGTERM/SIGINT) and at
 * most max_clients accepted connections. Each connection carries one request and gets one reply; no
 * per-client buffering is needed because SOCK_SEQPACKET delivers a request
 * whole or not at all, and an oversized one is seen as truncated.
 *
 * Nothing a client sends can block or crash the loop: every socket is
 * non-blocking, replies are sent with MSG_DONTWAIT, requests are decoded
 * with their length checked first, fds a client tries to pass are dropped
 * by the kernel (no control buffer is offered), and a client that says
 * nothing is answered "timed out" and closed after client_timeout_ms.
 *
 * Ownership: the server owns the listening socket, the fd it hands out (a
 * dup, or an O_RDONLY reopen for read-only sharing) and the socket path;
 * the blob itself stays the caller's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "wire/blob_share_wire.h"
#include "pfs/blob_files.h"
#include "pfs/blob_share.h"
#include "pfs/log.h"

struct client {
	int fd;
	double deadline;
	struct ucred cred;
};

struct pfs_share_server {
	struct pfs_share_server_opts o;
	char *sock_path, *token_file, *ready_file;
	uid_t *allow;
	int lfd;
	dev_t sock_dev; /* to unlink only the socket we bound */
	ino_t sock_ino;
	int share_fd;
	bool dir; /* share_fd is N.d of a files-layout blob (PFS_SHARE_F_DIR) */
	uint64_t size, fp;
	enum pfs_page_kind page;
	struct client *cl;
	int ncl;
	uint64_t accepted, refused, pings;
	/* Per-client refusal lines: at most SHARE_LOG_PER_S in each second
	 * from log_t0; the rest are counted and summed in one line. */
	double log_t0;
	unsigned log_n;
	uint64_t log_suppressed;
};

/* A hostile or broken client loop must not flood the holder's log. */
#define SHARE_LOG_PER_S 10

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Ends the current one-second window when it is over (or @force): one line
 * with the number of refusal lines it dropped, if any. */
static void log_flush(struct pfs_share_server *s, double now, bool force)
{
	if (!force && now - s->log_t0 < 1.0)
		return;
	if (s->log_suppressed)
		pfs_warn("blob serve: suppressed %" PRIu64 " similar messages in %.1f s "
			 "(refused %" PRIu64 " in all)",
			 s->log_suppressed, now - s->log_t0, s->refused);
	s->log_t0 = now;
	s->log_n = 0;
	s->log_suppressed = 0;
}

/* May a per-client refusal be logged now? Counts it when not. */
static bool log_allow(struct pfs_share_server *s)
{
	log_flush(s, now_s(), false);
	if (s->log_n < SHARE_LOG_PER_S) {
		s->log_n++;
		return true;
	}
	s->log_suppressed++;
	return false;
}

/* mkdir -p of the directory part of @path. */
static int make_parent(const char *path)
{
	char d[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *p;

	snprintf(d, sizeof(d), "%s", path);
	p = strrchr(d, '/');
	if (!p || p == d)
		return 0;
	*p = '\0';
	for (p = d + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(d, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return mkdir(d, 0755) && errno != EEXIST ? -errno : 0;
}

/* A socket file at @path: replace it if nobody answers there. */
static int clear_stale(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int s, r;

	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode)) {
		pfs_err("blob serve: %s exists and is not a socket; not removing it", path);
		return -EEXIST;
	}
	strcpy(sa.sun_path, path);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0)
		return -errno;
	r = connect(s, (struct sockaddr *)&sa, sizeof(sa));
	close(s);
	if (!r || errno == EAGAIN) {
		pfs_err("blob serve: another holder is listening on %s", path);
		return -EADDRINUSE;
	}
	pfs_warn("blob serve: replacing stale socket %s (%s)", path, strerror(errno));
	return unlink(path) && errno != ENOENT ? -errno : 0;
}

static int bind_socket(struct pfs_share_server *s)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	mode_t old;
	int fd, err;

	err = make_parent(s->sock_path);
	if (err) {
		pfs_err("blob serve: cannot create the directory of %s: %s", s->sock_path,
			strerror(-err));
		return err;
	}
	err = clear_stale(s->sock_path);
	if (err)
		return err;
	strcpy(sa.sun_path, s->sock_path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* Born owner-only; widened to socket_mode only after the group is set,
	 * so no one outside the final mode can connect in between. */
	old = umask(0177);
	err = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ? -errno : 0;
	umask(old);
	if (err) {
		pfs_err("blob serve: bind %s: %s", s->sock_path, strerror(-err));
		goto out_close;
	}
	if (s->o.socket_gid != (gid_t)-1 && chown(s->sock_path, (uid_t)-1, s->o.socket_gid)) {
		err = -errno;
		pfs_err("blob serve: chgrp %s to %u: %s", s->sock_path, (unsigned)s->o.socket_gid,
			strerror(errno));
		goto out_unlink;
	}
	if (chmod(s->sock_path, s->o.socket_mode) || stat(s->sock_path, &st) || listen(fd, 64)) {
		err = -errno;
		pfs_err("blob serve: %s: %s", s->sock_path, strerror(errno));
		goto out_unlink;
	}
	s->sock_dev = st.st_dev;
	s->sock_ino = st.st_ino;
	s->lfd = fd;
	return 0;

out_unlink:
	unlink(s->sock_path);
out_close:
	close(fd);
	return err;
}

struct pfs_share_server *pfs_share_server__new(const struct pfs_blob *blob, uint64_t fp,
					       const struct pfs_share_server_opts *opts)
{
	struct sockaddr_un sa;
	struct pfs_share_server *s;
	char tok[PFS_SHARE_TOKEN_MAX + 1], proc[64];
	int err = -EINVAL, tl;

	if (!blob || !opts || opts->sz < offsetof(struct pfs_share_server_opts, ready_file) ||
	    !opts->socket_path || !opts->token_file ||
	    (pfs_blob__fd(blob) < 0 && pfs_blob__dir_fd(blob) < 0)) {
		pfs_err("blob serve: invalid options%s",
			blob && pfs_blob__fd(blob) < 0 && pfs_blob__dir_fd(blob) < 0 ?
				" (an anonymous blob has no fd to share: use a named blob)" :
				"");
		errno = EINVAL;
		return NULL;
	}
	if (strlen(opts->socket_path) >= sizeof(sa.sun_path)) {
		pfs_err("blob serve: socket path longer than %zu bytes", sizeof(sa.sun_path) - 1);
		errno = ENAMETOOLONG;
		return NULL;
	}
	tl = pfs_share_token_read(opts->token_file, tok, sizeof(tok));
	if (tl < 0) {
		pfs_err("blob serve: token file %s: %s", opts->token_file,
			pfs_share_token_strerror(tl));
		errno = -tl == EINVAL ? EINVAL : -tl;
		return NULL;
	}
	if (tl < 16)
		pfs_warn("blob serve: token is only %d bytes; use at least 16 random bytes", tl);
	memset(tok, 0, sizeof(tok));

	s = calloc(1, sizeof(*s));
	if (!s)
		goto out_nomem;
	memcpy(&s->o, opts, opts->sz < sizeof(s->o) ? opts->sz : sizeof(s->o));
	s->o.sz = sizeof(s->o);
	s->lfd = -1;
	s->share_fd = -1;
	if (!s->o.socket_mode)
		s->o.socket_mode = 0660;
	s->o.socket_mode &= 0777;
	if (s->o.client_timeout_ms <= 0)
		s->o.client_timeout_ms = 5000;
	if (s->o.max_clients <= 0)
		s->o.max_clients = 64;
	s->sock_path = strdup(opts->socket_path);
	s->token_file = strdup(opts->token_file);
	s->ready_file = s->o.ready_file ? strdup(s->o.ready_file) : NULL;
	s->cl = calloc(s->o.max_clients, sizeof(*s->cl));
	s->allow = s->o.n_allow_uids > 0 ? calloc(s->o.n_allow_uids, sizeof(uid_t)) : NULL;
	if (!s->sock_path || !s->token_file || (s->o.ready_file && !s->ready_file) || !s->cl ||
	    (s->o.n_allow_uids > 0 && !s->allow))
		goto out_free;
	if (s->allow)
		memcpy(s->allow, s->o.allow_uids, s->o.n_allow_uids * sizeof(uid_t));
	s->o.allow_uids = NULL;
	s->o.socket_path = s->o.token_file = s->o.ready_file = NULL;

	/* Read-only sharing hands out a new O_RDONLY open of the same file:
	 * its holder can only map it PROT_READ. A files-layout blob hands out
	 * a new O_RDONLY|O_DIRECTORY open of N.d (PFS_SHARE_F_DIR): the
	 * consumer opens the files beneath it, read-only (they are 0444). */
	s->dir = pfs_blob__dir_fd(blob) >= 0;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d",
		 s->dir ? pfs_blob__dir_fd(blob) : pfs_blob__fd(blob));
	s->share_fd = s->dir	     ? open(proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC) :
		      s->o.read_only ? open(proc, O_RDONLY | O_CLOEXEC) :
				       fcntl(pfs_blob__fd(blob), F_DUPFD_CLOEXEC, 3);
	if (s->share_fd < 0) {
		err = -errno;
		pfs_err("blob serve: cannot %s the blob fd: %s",
			s->o.read_only ? "reopen (read-only)" : "dup", strerror(errno));
		goto out_free;
	}
	s->size = pfs_blob__size(blob);
	s->page = pfs_blob__page_kind(blob);
	s->fp = fp;
	err = bind_socket(s);
	if (err)
		goto out_free;
	if (s->ready_file) {
		int rf = open(s->ready_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (rf < 0 || write(rf, "ready\n", 6) != 6)
			pfs_warn("blob serve: ready file %s: %s", s->ready_file, strerror(errno));
		if (rf >= 0)
			close(rf);
	}
	pfs_info("blob serve: listening on %s (mode %04o%s%s), %" PRIu64 " bytes on %s, "
		 "fingerprint 0x%016" PRIx64,
		 s->sock_path, s->o.socket_mode, s->allow ? ", uid allow-list" : "",
		 s->o.read_only ? ", read-only" : "", s->size, pfs_page_kind_str(s->page), s->fp);
	return s;

out_free:
	pfs_share_server__free(s);
	errno = -err;
	return NULL;
out_nomem:
	errno = ENOMEM;
	return NULL;
}

static void reply(struct pfs_share_server *s, struct client *c, enum pfs_share_status st,
		  const char *msg)
{
	struct pfs_share_meta m = {
		.version = PFS_SHARE_VERSION,
		.status = st,
		.size = s->size,
		.fingerprint = s->fp,
		.page = s->page,
		.flags = (s->o.read_only || s->dir ? PFS_SHARE_F_READ_ONLY : 0) |
			 (s->dir ? PFS_SHARE_F_DIR : 0),
		.peer_pid = (uint32_t)c->cred.pid,
		.peer_uid = c->cred.uid,
		.peer_gid = c->cred.gid,
	};
	uint8_t buf[SHARE_REPLY_MAX];
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} cm;
	struct iovec iov;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	bool give = st == PFS_SHARE_OK && msg == NULL;

	if (give) {
		struct cmsghdr *h;

		m.flags |= PFS_SHARE_F_FD;
		memset(&cm, 0, sizeof(cm));
		mh.msg_control = cm.buf;
		mh.msg_controllen = sizeof(cm.buf);
		h = CMSG_FIRSTHDR(&mh);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(h), &s->share_fd, sizeof(int));
		__atomic_add_fetch(&s->accepted, 1, __ATOMIC_RELAXED);
	} else if (st == PFS_SHARE_OK) {
		s->pings++;
	} else {
		__atomic_add_fetch(&s->refused, 1, __ATOMIC_RELAXED);
	}
	m.accepted = s->accepted;
	m.refused = s->refused;
	snprintf(m.msg, sizeof(m.msg), "%s", msg && st ? msg : "");
	iov.iov_base = buf;
	iov.iov_len = share_reply_encode(buf, &m);
	if (sendmsg(c->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && log_allow(s))
		pfs_warn("blob serve: reply to pid=%d uid=%u: %s", c->cred.pid, c->cred.uid,
			 strerror(errno));
	if (give)
		pfs_info("blob serve: gave the blob fd to pid=%d uid=%u gid=%u (accepted %" PRIu64
			 ", refused %" PRIu64 ")",
			 c->cred.pid, c->cred.uid, c->cred.gid, s->accepted, s->refused);
	else if (st != PFS_SHARE_OK && log_allow(s))
		pfs_warn("blob serve: refused pid=%d uid=%u gid=%u: %s (accepted %" PRIu64
			 ", refused %" PRIu64 ")",
			 c->cred.pid, c->cred.uid, c->cred.gid, m.msg, s->accepted, s->refused);
	else if (st == PFS_SHARE_OK)
		pfs_debug("blob serve: ping from pid=%d uid=%u", c->cred.pid, c->cred.uid);
}

static void drop(struct pfs_share_server *s, int i)
{
	close(s->cl[i].fd);
	s->cl[i] = s->cl[--s->ncl];
}

static bool uid_allowed(const struct pfs_share_server *s, uid_t uid)
{
	if (!s->allow)
		return true;
	for (int i = 0; i < s->o.n_allow_uids; i++)
		if (s->allow[i] == uid)
			return true;
	return false;
}

static void on_accept(struct pfs_share_server *s)
{
	for (;;) {
		struct client c = { .deadline = now_s() + s->o.client_timeout_ms / 1e3 };
		socklen_t cl = sizeof(c.cred);
		char msg[96];

		c.fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (c.fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				pfs_warn("blob serve: accept: %s", strerror(errno));
			return;
		}
		if (getsockopt(c.fd, SOL_SOCKET, SO_PEERCRED, &c.cred, &cl)) {
			pfs_warn("blob serve: SO_PEERCRED: %s; refusing", strerror(errno));
			c.cred = (struct ucred){ 0, (uid_t)-1, (gid_t)-1 };
			reply(s, &c, PFS_SHARE_INTERNAL, "holder cannot identify the peer");
			close(c.fd);
			continue;
		}
		pfs_debug("blob serve: connection from pid=%d uid=%u gid=%u", c.cred.pid,
			  c.cred.uid, c.cred.gid);
		if (!uid_allowed(s, c.cred.uid)) {
			snprintf(msg, sizeof(msg), "uid %u is not in the holder's --allow-uid list",
				 c.cred.uid);
			reply(s, &c, PFS_SHARE_UID_DENIED, msg);
			close(c.fd);
			continue;
		}
		if (s->ncl >= s->o.max_clients) {
			snprintf(msg, sizeof(msg), "holder busy: %d clients in progress, retry",
				 s->ncl);
			reply(s, &c, PFS_SHARE_BUSY, msg);
			close(c.fd);
			continue;
		}
		s->cl[s->ncl++] = c;
	}
}

/* One request from client @i; always ends the connection. */
static void on_request(struct pfs_share_server *s, int i)
{
	struct client *c = &s->cl[i];
	uint8_t req[SHARE_REQ_MAX];
	char tok[PFS_SHARE_TOKEN_MAX + 1], msg[128];
	struct iovec iov = { req, sizeof(req) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct share_req r;
	ssize_t n;
	int ftl, err;

	n = recvmsg(c->fd, &mh, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		__atomic_add_fetch(&s->refused, 1, __ATOMIC_RELAXED);
		if (log_allow(s))
			pfs_warn(
				"blob serve: pid=%d uid=%u closed without a request (refused %" PRIu64
				")",
				c->cred.pid, c->cred.uid, s->refused);
		drop(s, i);
		return;
	}
	if (mh.msg_flags & MSG_TRUNC) {
		snprintf(msg, sizeof(msg), "request larger than %d bytes", SHARE_REQ_MAX);
		reply(s, c, PFS_SHARE_BAD_REQUEST, msg);
		goto out_drop;
	}
	err = share_req_decode(req, n, &r);
	if (err == -EPROTO) {
		reply(s, c, PFS_SHARE_BAD_REQUEST,
		      "malformed request (not a PacketFS blob request)");
		goto out_drop;
	}
	if (err == -EPROTONOSUPPORT) {
		snprintf(msg, sizeof(msg), "protocol version %u not supported (holder speaks %u)",
			 r.version, PFS_SHARE_VERSION);
		reply(s, c, PFS_SHARE_BAD_VERSION, msg);
		goto out_drop;
	}
	if (err) {
		reply(s, c, PFS_SHARE_BAD_REQUEST, "malformed request (op or token length)");
		goto out_drop;
	}
	if (r.op == PFS_SHARE_OP_PING && r.token_len == 0) {
		reply(s, c, PFS_SHARE_OK, "");
		goto out_drop;
	}
	/* Re-read for every client: a rotated Secret takes effect at once. */
	ftl = pfs_share_token_read(s->token_file, tok, sizeof(tok));
	if (ftl < 0) {
		pfs_err("blob serve: token file %s: %s", s->token_file, strerror(-ftl));
		reply(s, c, PFS_SHARE_INTERNAL, "holder cannot read its token file");
	} else if (!pfs_share_token_equal((const char *)r.token, r.token_len, tok, ftl)) {
		reply(s, c, PFS_SHARE_BAD_TOKEN,
		      "token rejected (check --blob-token-file against "
		      "the blob's Secret)");
	} else {
		reply(s, c, PFS_SHARE_OK, r.op == PFS_SHARE_OP_PING ? "" : NULL);
	}
	memset(tok, 0, sizeof(tok));
	memset(req, 0, sizeof(req));
out_drop:
	drop(s, i);
}

int pfs_share_server__run(struct pfs_share_server *s, int stop_fd)
{
	struct pollfd *pf;
	int err = 0;
	bool stop = false;

	pf = calloc(s->o.max_clients + 2, sizeof(*pf));
	if (!pf)
		return -ENOMEM;
	while (!stop) {
		double now = now_s(), next = now + 3600;
		int n, timeout;

		for (int i = 0; i < s->ncl; i++) {
			if (s->cl[i].deadline <= now) {
				char msg[64];

				snprintf(msg, sizeof(msg), "no request within %d ms",
					 s->o.client_timeout_ms);
				reply(s, &s->cl[i], PFS_SHARE_TIMEOUT, msg);
				drop(s, i--);
				continue;
			}
			if (s->cl[i].deadline < next)
				next = s->cl[i].deadline;
		}
		pf[0] = (struct pollfd){ .fd = stop_fd, .events = POLLIN }; /* < 0: ignored */
		pf[1] = (struct pollfd){ .fd = s->lfd, .events = POLLIN };
		for (int i = 0; i < s->ncl; i++)
			pf[2 + i] = (struct pollfd){ .fd = s->cl[i].fd, .events = POLLIN };
		log_flush(s, now, false);
		if (s->log_suppressed && next > s->log_t0 + 1.0)
			next = s->log_t0 + 1.0; /* the count is due within the second */
		timeout = (int)((next - now) * 1000) + 1;
		n = poll(pf, 2 + s->ncl, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			pfs_err("blob serve: poll: %s", strerror(errno));
			break;
		}
		if (pf[0].revents & POLLIN) {
			stop = true; /* the caller reads why, if it wants to */
			continue;
		}
		/* Walk clients from the end: drop() moves the last one into i. */
		for (int i = s->ncl - 1; i >= 0; i--)
			if (pf[2 + i].revents)
				on_request(s, i);
		if (pf[1].revents & (POLLERR | POLLNVAL)) {
			err = -EIO;
			pfs_err("blob serve: listening socket failed");
			break;
		}
		if (pf[1].revents & POLLIN)
			on_accept(s);
	}
	log_flush(s, now_s(), true);
	free(pf);
	return err;
}

void pfs_share_server__counts(const struct pfs_share_server *s, uint64_t *accepted,
			      uint64_t *refused)
{
	/* Atomic: a /metrics thread reads them while the server runs. */
	*accepted = __atomic_load_n(&s->accepted, __ATOMIC_RELAXED);
	*refused = __atomic_load_n(&s->refused, __ATOMIC_RELAXED);
}

void pfs_share_server__free(struct pfs_share_server *s)
{
	struct stat st;

	if (!s)
		return;
	while (s->ncl)
		drop(s, s->ncl - 1);
	if (s->lfd >= 0) {
		close(s->lfd);
		/* A successor may have replaced our socket file: leave theirs. */
		if (!lstat(s->sock_path, &st) && st.st_dev == s->sock_dev &&
		    st.st_ino == s->sock_ino)
			unlink(s->sock_path);
		if (s->ready_file)
			unlink(s->ready_file);
	}
	if (s->share_fd >= 0)
		close(s->share_fd);
	free(s->cl);
	free(s->allow);
	free(s->sock_path);
	free(s->token_file);
	free(s->ready_file);
	free(s);
}
