// SPDX-License-Identifier: Apache-2.0
/*
 * Blob sharing, consumer side: ask a blob holder for its fd, map it and
 * check it against the holder's record; plus the token helpers both sides
 * use. Everything here is synchronous and single-threaded: a consumer does
 * this once at start-up, before any worker thread exists.
 *
 * The received fd refers to the holder's file (hugetlbfs or tmpfs), so the
 * new mapping shares the holder's pages: nothing is allocated, prefaulted
 * or filled again, and hugepages are not counted twice. The descriptor is
 * owned by the returned struct pfs_blob (pfs_blob__from_fd dups it; the
 * original is closed here).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "wire/blob_share_wire.h"
#include "pfs/blob_files.h"
#include "pfs/blob_manifest.h"
#include "pfs/blob_share.h"
#include "pfs/log.h"
#include "pfs/wire.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

const char *pfs_share_status_str(enum pfs_share_status s)
{
	switch (s) {
	case PFS_SHARE_OK:
		return "ok";
	case PFS_SHARE_BAD_REQUEST:
		return "bad request";
	case PFS_SHARE_BAD_VERSION:
		return "unsupported protocol version";
	case PFS_SHARE_BAD_TOKEN:
		return "token rejected";
	case PFS_SHARE_UID_DENIED:
		return "uid not allowed";
	case PFS_SHARE_BUSY:
		return "holder busy";
	case PFS_SHARE_TIMEOUT:
		return "timed out";
	case PFS_SHARE_INTERNAL:
		return "holder error";
	}
	return "unknown status";
}

int pfs_share_token_read(const char *path, char *buf, size_t n)
{
	ssize_t r;
	size_t len = 0;
	int fd, err = 0;

	if (n < PFS_SHARE_TOKEN_MAX + 1)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	/* Read one byte more than allowed so an oversized file is noticed. */
	while (len < PFS_SHARE_TOKEN_MAX + 1) {
		r = read(fd, buf + len, PFS_SHARE_TOKEN_MAX + 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			break;
		}
		if (r == 0)
			break;
		len += r;
	}
	close(fd);
	if (err)
		return err;
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' ' ||
		       buf[len - 1] == '\t'))
		len--;
	if (len > PFS_SHARE_TOKEN_MAX)
		return -E2BIG;
	/* Tokens travel as C strings: a NUL would cut the client's copy short
	 * and the holder would refuse every client (random binary Secrets did
	 * that to about one blob in eight). Refuse the file instead. */
	if (memchr(buf, '\0', len))
		return -EILSEQ;
	buf[len] = '\0';
	return len ? (int)len : -EINVAL;
}

const char *pfs_share_token_strerror(int err)
{
	switch (err) {
	case -EINVAL:
		return "empty";
	case -EILSEQ:
		return "contains a NUL byte (a token is text, e.g. hex digits)";
	}
	return strerror(-err);
}

bool pfs_share_token_equal(const char *a, size_t alen, const char *b, size_t blen)
{
	/* Walk the full maximum length whatever the inputs, so timing says
	 * nothing about where (or whether) they differ. */
	volatile uint8_t diff = alen != blen || alen > PFS_SHARE_TOKEN_MAX;

	for (size_t i = 0; i < PFS_SHARE_TOKEN_MAX; i++) {
		uint8_t x = i < alen ? (uint8_t)a[i] : 0;
		uint8_t y = i < blen ? (uint8_t)b[i] : 0;

		diff |= x ^ y;
	}
	return diff == 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int status_errno(enum pfs_share_status s)
{
	switch (s) {
	case PFS_SHARE_OK:
		return 0;
	case PFS_SHARE_BAD_TOKEN:
	case PFS_SHARE_UID_DENIED:
		return -EACCES;
	case PFS_SHARE_BUSY:
		return -EBUSY;
	case PFS_SHARE_TIMEOUT:
		return -ETIMEDOUT;
	default:
		return -EPROTO;
	}
}

/* One request, one reply; *fd gets a passed descriptor (or stays -1). */
static int exchange(const char *path, enum pfs_share_op op, const char *token, int timeout_ms,
		    int *fd, struct pfs_share_meta *meta)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
	uint8_t req[SHARE_REQ_MAX], rep[SHARE_REPLY_MAX + 1];
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(4 * sizeof(int))];
	} cm;
	struct iovec iov = { rep, sizeof(rep) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cm.buf,
			     .msg_controllen = sizeof(cm.buf) };
	size_t tl = token ? strlen(token) : 0, rl;
	ssize_t n;
	int s, err;

	*fd = -1;
	memset(meta, 0, sizeof(*meta));
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	if (tl > PFS_SHARE_TOKEN_MAX)
		return -E2BIG;
	strcpy(sa.sun_path, path);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	/* AF_UNIX connect waits on a full backlog for the send timeout. */
	if (setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv))) {
		err = -errno;
		goto out_close;
	}
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa))) {
		err = errno == EAGAIN || errno == EINPROGRESS ? -ETIMEDOUT : -errno;
		goto out_close;
	}
	rl = share_req_encode(req, PFS_SHARE_VERSION, op, token, tl);
	n = send(s, req, rl, MSG_NOSIGNAL);
	if (n != (ssize_t)rl && errno != EPIPE && errno != ECONNRESET) {
		err = errno == EAGAIN ? -ETIMEDOUT : -errno;
		goto out_close;
	}
	/* A holder that refuses at once (busy, uid) may reply and close before
	 * reading our request; the socket then reports ECONNRESET once, ahead
	 * of the reply that is already queued. Read past it. */
	for (int tries = 0; tries < 3; tries++) {
		n = recvmsg(s, &mh, MSG_CMSG_CLOEXEC);
		if (n >= 0 || (errno != EINTR && errno != ECONNRESET && errno != EPIPE))
			break;
	}
	if (n < 0) {
		err = errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
		goto out_close;
	}
	/* Take every passed fd first, so none leaks whatever happens next. */
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int f;

			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*fd < 0)
				*fd = f;
			else
				close(f);
		}
	}
	err = n == 0					? -ECONNRESET :
	      (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ? -EPROTO :
							  share_reply_decode(rep, n, meta);
	if (!err)
		err = status_errno(meta->status);
	if (!err && meta->version != PFS_SHARE_VERSION)
		err = -EPROTO;
	if (!err && op == PFS_SHARE_OP_GET && *fd < 0)
		err = -EPROTO;
	if (err && *fd >= 0) {
		close(*fd);
		*fd = -1;
	}
out_close:
	close(s);
	return err;
}

int pfs_share_fetch(const char *path, const char *token, int timeout_ms, int *fd,
		    struct pfs_share_meta *meta)
{
	return exchange(path, PFS_SHARE_OP_GET, token, timeout_ms > 0 ? timeout_ms : 5000, fd,
			meta);
}

int pfs_share_ping(const char *path, const char *token, int timeout_ms, struct pfs_share_meta *meta)
{
	int fd, err = exchange(path, PFS_SHARE_OP_PING, token, timeout_ms > 0 ? timeout_ms : 5000,
			       &fd, meta);

	if (fd >= 0)
		close(fd); /* a ping never takes an fd, even from a confused holder */
	return err;
}

/* A PFS_SHARE_F_DIR reply: @fd is N.d of a files-layout blob. Build the
 * region from the files beneath it (no symlinks, exact lengths: see
 * pfs_blob__open_files_at), read-only: the files are 0444 and the holder
 * shares them as they are. NULL + errno (logged). */
static struct pfs_blob *from_dir(const char *path, int fd, const struct pfs_share_meta *m)
{
	struct pfs_blob *b;
	struct stat st;
	char why[512];
	int err;

	if (fstat(fd, &st) || !S_ISDIR(st.st_mode)) {
		pfs_err("blob from %s: the reply says a directory, the fd is not one", path);
		errno = EPROTO;
		return NULL;
	}
	err = pfs_blob__open_files_at(fd, true, &b, why, sizeof(why));
	if (err) {
		pfs_err("blob from %s: the holder's blob directory: %s", path, why);
		errno = -err;
		return NULL;
	}
	if (pfs_blob__size(b) != m->size) {
		pfs_err("blob from %s: its files make %" PRIu64 " bytes, the holder's record says "
			"%" PRIu64,
			path, pfs_blob__size(b), m->size);
		pfs_blob__close(b);
		errno = EINVAL;
		return NULL;
	}
	return b;
}

struct pfs_blob *pfs_blob__from_socket(const char *path, const char *token,
				       const struct pfs_share_client_opts *opts)
{
	struct pfs_share_client_opts o = { .sz = sizeof(o) };
	struct pfs_share_meta m;
	struct pfs_blob *b;
	struct stat st;
	double t0 = now_s();
	int fd, err;

	if (opts)
		memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	if (!path || !token) {
		errno = EINVAL;
		return NULL;
	}
	err = pfs_share_fetch(path, token, o.timeout_ms, &fd, &m);
	if (o.meta)
		*o.meta = m;
	if (err) {
		if (m.msg[0])
			pfs_err("blob holder %s refused: %s (%s)", path, m.msg,
				pfs_share_status_str(m.status));
		else if (err == -EACCES)
			pfs_err("blob holder %s: permission denied: the socket's mode/group "
				"does not admit uid %u gid %u",
				path, getuid(), getgid());
		else
			pfs_err("blob holder %s: %s", path, pfs_wire_strerror(err));
		errno = -err;
		return NULL;
	}
	if (m.flags & PFS_SHARE_F_DIR) {
		b = from_dir(path, fd, &m);
		err = errno;
		close(fd);
		if (!b) {
			errno = err;
			return NULL;
		}
		goto out_mapped;
	}
	if (fstat(fd, &st) || (uint64_t)st.st_size != m.size) {
		pfs_err("blob from %s: the fd holds %lld bytes, the holder's record says %" PRIu64,
			path, (long long)st.st_size, m.size);
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	b = pfs_blob__from_fd(fd);
	err = errno;
	close(fd);
	if (!b) {
		pfs_err("blob from %s: cannot map %" PRIu64 " bytes: %s", path, m.size,
			strerror(err));
		errno = err;
		return NULL;
	}
out_mapped:
	/* Map the holder's pages now (nothing is allocated: they exist) so the
	 * first pass of a transfer does not pay the page-table faults. READ,
	 * not WRITE: read faults on a shared tmpfs mapping map 16 pages each
	 * (fault-around) and still yield writable entries (no dirty tracking
	 * on shmem or hugetlbfs). */
	if (!o.no_prefault && madvise(pfs_blob__data(b), m.size, MADV_POPULATE_READ))
		pfs_debug("blob from %s: populate: %s (pages fault in on first use)", path,
			  strerror(errno));
	if (!o.no_verify) {
		uint64_t fp = pfs_blob__fingerprint(b);

		if (fp != m.fingerprint) {
			pfs_err("blob from %s: fingerprint 0x%016" PRIx64
				" differs from the holder's "
				"0x%016" PRIx64 " (modified since the holder started?)",
				path, fp, m.fingerprint);
			pfs_blob__close(b);
			errno = EIO;
			return NULL;
		}
	}
	if (o.attach_s)
		*o.attach_s = now_s() - t0;
	pfs_info("blob from %s: %" PRIu64 " bytes on %s, fingerprint 0x%016" PRIx64 "%s%s", path,
		 m.size, pfs_page_kind_str(m.page), m.fingerprint,
		 m.flags & PFS_SHARE_F_READ_ONLY ? ", read-only" : "",
		 o.no_verify ? " (not verified)" : " (verified)");
	return b;
}
