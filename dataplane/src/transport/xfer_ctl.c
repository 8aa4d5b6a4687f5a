// SPDX-License-Identifier: Apache-2.0
/*
 * The TCP control connection the tcp and udp transports share: address
 * parsing, listen/accept/connect with timeouts, full reads and writes, and
 * the HELLO/ACCEPT/REFUSE judgement (version, mode, blob size and
 * fingerprint), so both transports refuse a different blob with the same
 * words. Everything here runs on the caller's thread and owns no state.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pfs/log.h"
#include "pfs/wire.h"
#include "xfer_ctl.h"

/* Connections a receiver keeps while they have not completed their HELLO. */
#define HELLO_PENDING 8
/* Dropped connections logged one by one; the rest are counted. */
#define HELLO_DROP_LOG 5

double pfs_xfer_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void pfs_xfer_cpu(double *user, double *sys)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	*user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6;
	*sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

int pfs_xfer_fail(struct pfs_xfer_result *r, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->error, sizeof(r->error), fmt, ap);
	va_end(ap);
	pfs_err("%s", r->error);
	return err;
}

int pfs_xfer_parse_addr(const char *host, uint16_t port, struct sockaddr_storage *ss,
			socklen_t *len)
{
	struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (!host || !*host)
		host = "0.0.0.0";
	if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons(port);
		*len = sizeof(*v4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons(port);
		*len = sizeof(*v6);
		return 0;
	}
	return -EINVAL;
}

void pfs_xfer_addr_str(const struct sockaddr_storage *ss, char *out, size_t n)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET) {
		inet_ntop(AF_INET, &((struct sockaddr_in *)ss)->sin_addr, a, sizeof(a));
		snprintf(out, n, "%s:%u", a, ntohs(((struct sockaddr_in *)ss)->sin_port));
	} else {
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)ss)->sin6_addr, a, sizeof(a));
		snprintf(out, n, "[%s]:%u", a, ntohs(((struct sockaddr_in6 *)ss)->sin6_port));
	}
}

static void sock_setup(int fd, int timeout_ms)
{
	struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
	int one = 1;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	/* We batch ourselves; Nagle would only delay small control records. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int pfs_xfer_io_err(int e)
{
	if (e == EAGAIN || e == EWOULDBLOCK)
		return -ETIMEDOUT;
	if (e == EPIPE)
		return -ECONNRESET;
	return -e;
}

const char *pfs_xfer_io_what(int err)
{
	return err == -ECONNRESET ? "peer closed the connection" :
	       err == -ETIMEDOUT  ? "timed out" :
				    strerror(-err);
}

const char *pfs_xfer_refuse_str(uint32_t code)
{
	switch (code) {
	case PFS_REFUSE_VERSION:
		return "protocol version mismatch";
	case PFS_REFUSE_MODE:
		return "mode mismatch";
	case PFS_REFUSE_FINGERPRINT:
		return "blob fingerprint mismatch";
	case PFS_REFUSE_SIZE:
		return "blob size mismatch";
	case PFS_REFUSE_PARAMS:
		return "transport parameters not acceptable";
	case PFS_REFUSE_INTEGRITY:
		return "integrity checksum mismatch";
	case PFS_REFUSE_LIMIT:
		return "blob over the receiver's size limit";
	case PFS_REFUSE_WORK:
		return "planned bytes over the receiver's bound on work";
	}
	return "unknown reason";
}

int pfs_xfer_writev_full(int fd, struct iovec *iov, int cnt, uint64_t *wire)
{
	while (cnt) {
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = cnt };
		ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return pfs_xfer_io_err(errno);
		}
		*wire += n;
		while (cnt && (size_t)n >= iov->iov_len) {
			n -= iov->iov_len;
			iov++;
			cnt--;
		}
		if (cnt) {
			iov->iov_base = (uint8_t *)iov->iov_base + n;
			iov->iov_len -= n;
		}
	}
	return 0;
}

int pfs_xfer_write_full(int fd, const void *buf, size_t len, uint64_t *wire)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return pfs_xfer_writev_full(fd, &iov, 1, wire);
}

int pfs_xfer_read_full(int fd, void *buf, size_t len, uint64_t *wire)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = recv(fd, (uint8_t *)buf + got, len - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n == 0 ? -ECONNRESET : pfs_xfer_io_err(errno);
		got += n;
		*wire += n;
	}
	return 0;
}

int pfs_xfer_send_hello(int fd, const struct pfs_ctl *h, const struct pfs_xfer_auth_opts *auth,
			uint64_t *wire, struct pfs_xfer_result *r)
{
	uint8_t recs[2 * PFS_CTL_LEN];
	int n, err;

	pfs_ctl_encode(h, recs);
	n = pfs_xfer_hello_auth(fd, auth, recs, recs + PFS_CTL_LEN, r);
	if (n < 0)
		return n;
	err = pfs_xfer_write_full(fd, recs, PFS_CTL_LEN + (size_t)n, wire);
	if (err)
		return pfs_xfer_fail(r, err, "send: HELLO to %s: %s", r->peer,
				     pfs_xfer_io_what(err));
	return 0;
}

int pfs_xfer_send_ctl(int fd, const struct pfs_ctl *c, uint64_t *wire)
{
	uint8_t rec[PFS_CTL_LEN];

	pfs_ctl_encode(c, rec);
	return pfs_xfer_write_full(fd, rec, sizeof(rec), wire);
}

int pfs_xfer_listen(const char *host, uint16_t port, const char *who, struct pfs_xfer_result *r)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int lfd, one = 1;
	char where[80];

	if (pfs_xfer_parse_addr(host, port, &ss, &sl))
		return pfs_xfer_fail(r, -EINVAL, "recv: '%s' is not a numeric IPv4/IPv6 address",
				     host);
	pfs_xfer_addr_str(&ss, where, sizeof(where));
	lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		return pfs_xfer_fail(r, -errno, "recv: socket: %s", strerror(errno));
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&ss, sl) || listen(lfd, HELLO_PENDING)) {
		int e = errno;

		close(lfd);
		return pfs_xfer_fail(r, -e, "recv: listen on %s: %s%s", where, strerror(e),
				     e == EACCES && port < 1024 ?
					     " (ports below 1024 need CAP_NET_BIND_SERVICE)" :
					     "");
	}
	pfs_info("recv: %s listening on %s", who, where);
	return lfd;
}

int pfs_xfer_read_by(int fd, void *buf, size_t len, double deadline, uint64_t *wire)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = recv(fd, (uint8_t *)buf + got, len - got, MSG_DONTWAIT);
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		double left;

		if (n > 0) {
			got += n;
			*wire += n;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return pfs_xfer_io_err(errno);
		left = deadline - pfs_xfer_now();
		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, (int)(left * 1000) + 1) < 0 && errno != EINTR)
			return -errno;
	}
	return 0;
}

/* A connection that has not completed its HELLO yet: with a token, its
 * HELLO and AUTH (need = 2 records) answering the CHALLENGE of nonce. */
struct hello_pending {
	int fd;
	size_t got, need;
	double deadline;
	uint8_t buf[2 * PFS_CTL_LEN];
	uint8_t nonce[PFS_CTL_NONCE_LEN];
	char peer[64];
};

static void hello_drop(struct hello_pending *p, int *dropped, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Close @p and say why, the first HELLO_DROP_LOG times. */
static void hello_drop(struct hello_pending *p, int *dropped, const char *fmt, ...)
{
	char why[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (++*dropped <= HELLO_DROP_LOG)
		pfs_warn("recv: dropped %s: %s%s", p->peer, why,
			 *dropped == HELLO_DROP_LOG ? " (further drops are only counted)" : "");
	close(p->fd);
	p->fd = -1;
}

/* Read what @p has; 1 when it holds a HELLO to judge (a valid one, or one
 * of a version this receiver does not speak, which is answered with
 * REFUSE) and, with a token, its AUTH verified; 0 to keep waiting, -1
 * dropped. */
static int hello_read(struct hello_pending *p, const struct pfs_xfer_auth_opts *auth, int *dropped)
{
	struct pfs_ctl h;
	ssize_t n = recv(p->fd, p->buf + p->got, p->need - p->got, MSG_DONTWAIT);
	const char *why;
	int err;

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return 0;
	if (n <= 0) {
		hello_drop(p, dropped, "closed after %zu of the %zu bytes of a HELLO%s", p->got,
			   p->need, p->need > PFS_CTL_LEN ? " and its AUTH" : "");
		return -1;
	}
	p->got += n;
	if (p->got < p->need)
		return 0;
	/* The MAC first: nothing a stranger sent is judged, not even its
	 * version, so it cannot make the receiver refuse (and exit). */
	if (p->need > PFS_CTL_LEN && (why = pfs_xfer_auth_check(auth, p->nonce, p->buf))) {
		hello_drop(p, dropped, "not authenticated: %s", why);
		return -1;
	}
	err = pfs_ctl_decode(p->buf, PFS_CTL_LEN, &h);
	if (err == -EPROTONOSUPPORT || (!err && h.type == PFS_CTL_HELLO))
		return 1;
	hello_drop(p, dropped, "its first record is not a HELLO (%s)",
		   err ? pfs_wire_strerror(err) : "another record type");
	return -1;
}

/* Keep the connections still open, in order. */
static int hello_compact(struct hello_pending *p, int np)
{
	int k = 0;

	for (int i = 0; i < np; i++)
		if (p[i].fd >= 0)
			p[k++] = p[i];
	return k;
}

int pfs_xfer_accept_hello(int lfd, const struct pfs_xfer_accept_opts *ao, uint8_t *hello,
			  struct pfs_xfer_result *r)
{
	struct hello_pending p[HELLO_PENDING];
	struct pollfd pfd[HELLO_PENDING + 1];
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	double end = pfs_xfer_now() + ao->accept_timeout_ms / 1000.0;
	char where[80] = "?";
	int np = 0, dropped = 0, err, fd = -1;
	bool token = ao->auth && ao->auth->token;

	if (!getsockname(lfd, (struct sockaddr *)&ss, &sl))
		pfs_xfer_addr_str(&ss, where, sizeof(where));
	err = pfs_xfer_ready(ao->ready_file);
	if (err) {
		err = pfs_xfer_fail(r, err, "recv: cannot create the ready file %s: %s",
				    ao->ready_file, strerror(-err));
		goto out_close;
	}
	for (;;) {
		double now = pfs_xfer_now(), wait = end - now;
		bool listening = now < end;
		int k = 0, pr;

		if (ao->stop && *ao->stop) {
			err = pfs_xfer_fail(
				r, -EINTR,
				"recv: stopped by a signal while waiting for a sender on %s",
				where);
			goto out_close;
		}
		for (int i = 0; i < np; i++)
			if (now >= p[i].deadline)
				hello_drop(&p[i], &dropped,
					   "no complete HELLO%s within %.1f s (%zu of %zu bytes)",
					   token ? " and AUTH" : "", ao->hello_timeout_ms / 1000.0,
					   p[i].got, p[i].need);
		np = hello_compact(p, np);
		if (!listening && !np) {
			err = pfs_xfer_fail(r, -ETIMEDOUT,
					    "recv: no sender connected to %s within %.1f s%s",
					    where, ao->accept_timeout_ms / 1000.0,
					    !dropped ? "" :
					    token ? " (connections without a valid, authenticated "
						    "HELLO were dropped)" :
						    " (connections without a valid HELLO were "
						    "dropped)");
			goto out_close;
		}
		if (listening)
			pfd[k++] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		for (int i = 0; i < np; i++) {
			pfd[k++] = (struct pollfd){ .fd = p[i].fd, .events = POLLIN };
			if (!listening || p[i].deadline - now < wait)
				wait = p[i].deadline - now;
		}
		pr = poll(pfd, k, wait > 0 ? (int)(wait * 1000) + 1 : 0);
		if (pr < 0 && errno != EINTR) {
			err = pfs_xfer_fail(r, -errno, "recv: poll: %s", strerror(errno));
			goto out_close;
		}
		if (pr <= 0)
			continue;
		for (int i = 0; i < np; i++) {
			if (!pfd[i + listening].revents || p[i].fd < 0)
				continue;
			if (hello_read(&p[i], ao->auth, &dropped) == 1) {
				fd = p[i].fd;
				p[i].fd = -1;
				memcpy(hello, p[i].buf, PFS_CTL_LEN);
				snprintf(r->peer, sizeof(r->peer), "%s", p[i].peer);
				goto out_chosen;
			}
		}
		np = hello_compact(p, np);
		if (listening && pfd[0].revents) {
			int c;

			sl = sizeof(ss);
			c = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
			if (c < 0)
				continue;
			if (np == HELLO_PENDING) {
				/* The oldest makes room: a real sender sends its
				 * HELLO at once and needs milliseconds. */
				hello_drop(&p[0], &dropped,
					   "%d newer connections were waiting for a HELLO too",
					   HELLO_PENDING);
				memmove(p, p + 1, (HELLO_PENDING - 1) * sizeof(p[0]));
				np--;
			}
			p[np] = (struct hello_pending){
				.fd = c,
				.need = token ? 2 * PFS_CTL_LEN : PFS_CTL_LEN,
				.deadline = pfs_xfer_now() + ao->hello_timeout_ms / 1000.0
			};
			pfs_xfer_addr_str(&ss, p[np].peer, sizeof(p[np].peer));
			err = token ? pfs_xfer_challenge(c, p[np].nonce) : 0;
			np++;
			if (err)
				hello_drop(&p[np - 1], &dropped, "cannot send it a CHALLENGE: %s",
					   strerror(-err));
		}
	}
out_chosen:
	if (dropped > HELLO_DROP_LOG)
		pfs_warn("recv: %d connections without a valid HELLO dropped in all", dropped);
	sock_setup(fd, ao->io_timeout_ms);
	err = fd;
out_close:
	r->dropped = (uint32_t)dropped;
	for (int i = 0; i < np; i++)
		if (p[i].fd >= 0)
			close(p[i].fd);
	close(lfd);
	return err;
}

int pfs_xfer_connect(const char *host, uint16_t port, int connect_timeout_ms, int io_timeout_ms,
		     struct pfs_xfer_result *r)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	double deadline = pfs_xfer_now() + connect_timeout_ms / 1000.0;
	int fd, e;

	if (pfs_xfer_parse_addr(host, port, &ss, &sl) || !host || !*host)
		return pfs_xfer_fail(r, -EINVAL, "send: '%s' is not a numeric IPv4/IPv6 address",
				     host ? host : "");
	pfs_xfer_addr_str(&ss, r->peer, sizeof(r->peer));
	for (;;) {
		fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return pfs_xfer_fail(r, -errno, "send: socket: %s", strerror(errno));
		sock_setup(fd, io_timeout_ms);
		if (!connect(fd, (struct sockaddr *)&ss, sl))
			return fd;
		e = errno;
		close(fd);
		/* The receiver may not be listening yet: retry until the deadline. */
		if ((e != ECONNREFUSED && e != ENETUNREACH && e != EHOSTUNREACH &&
		     e != EINPROGRESS && e != EAGAIN && e != ETIMEDOUT) ||
		    pfs_xfer_now() >= deadline)
			return pfs_xfer_fail(r, -e, "send: connect to %s: %s (tried for %.1f s)",
					     r->peer, e == EINPROGRESS ? "timed out" : strerror(e),
					     connect_timeout_ms / 1000.0);
		usleep(50000);
	}
}

int pfs_xfer_hello_check(const uint8_t *raw, const struct pfs_xfer_terms *t,
			 struct pfs_xfer_agreed *ag, struct pfs_ctl *a, struct pfs_xfer_result *r)
{
	enum pfs_gram_mode mode = t->mode;
	enum pfs_integrity integrity = t->integrity;
	uint64_t size = t->blob_size, fp = t->fp;
	uint64_t max_size = t->max_size ? t->max_size : PFS_XFER_MAX_SIZE_DEFAULT;
	uint64_t *bound = &ag->bound;
	int out_fd = t->out_fd;
	struct pfs_ctl h;
	int err = pfs_ctl_decode(raw, PFS_CTL_LEN, &h);

	*a = (struct pfs_ctl){ .type = PFS_CTL_ACCEPT,
			       .mode = mode,
			       .flags = PFS_CTL_F_INTEGRITY(integrity),
			       .size = size,
			       .value = fp };
	if (err == -EPROTONOSUPPORT) {
		a->type = PFS_CTL_REFUSE;
		a->word = PFS_REFUSE_VERSION;
		return pfs_xfer_fail(r, -EPERM,
				     "recv: refused %s: protocol version %u, this "
				     "receiver speaks %u",
				     r->peer, raw[4], PFS_GRAM_VERSION);
	}
	if (err || h.type != PFS_CTL_HELLO)
		return pfs_xfer_fail(r, -EPROTO, "recv: %s did not open with a valid HELLO (%s)",
				     r->peer, err ? pfs_wire_strerror(err) : "wrong record type");
	r->peer_blob_size = h.size;
	r->peer_fingerprint = h.value;
	if (h.mode != mode) {
		a->type = PFS_CTL_REFUSE;
		a->word = PFS_REFUSE_MODE;
		return pfs_xfer_fail(r, -EPERM,
				     "recv: refused %s: mode mismatch: sender uses mode "
				     "%s, this receiver runs mode %s",
				     r->peer, pfs_mode_str(h.mode), pfs_mode_str(mode));
	}
	if (PFS_CTL_INTEGRITY(h.flags) != integrity) {
		a->type = PFS_CTL_REFUSE;
		a->word = PFS_REFUSE_INTEGRITY;
		return pfs_xfer_fail(
			r, -EPERM,
			"recv: refused %s: integrity checksum mismatch: sender "
			"uses %s, this receiver %s; start both with the same --integrity",
			r->peer, pfs_integrity_str(PFS_CTL_INTEGRITY(h.flags)),
			pfs_integrity_str(integrity));
	}
	/* Before anything else is judged or sized: the work is what a
	 * stranger's HELLO could cost us, whatever blob it names. */
	if (t->max_work && h.count > t->max_work) {
		a->type = PFS_CTL_REFUSE;
		a->word = PFS_REFUSE_WORK;
		a->count = t->max_work;
		return pfs_xfer_fail(r, -EPERM,
				     "recv: refused %s: it announces %" PRIu64 " effective bytes, "
				     "over this receiver's bound of %" PRIu64 " bytes of work; "
				     "raise --max-work to accept it",
				     r->peer, h.count, t->max_work);
	}
	if (mode != PFS_MODE_PAYLOAD && (h.size != size || h.value != fp)) {
		a->type = PFS_CTL_REFUSE;
		a->word = h.size != size ? PFS_REFUSE_SIZE : PFS_REFUSE_FINGERPRINT;
		return pfs_xfer_fail(r, -EPERM,
				     "recv: refused %s: %s: sender blob %" PRIu64
				     " bytes fingerprint 0x%016" PRIx64 ", receiver blob %" PRIu64
				     " bytes fingerprint 0x%016" PRIx64 "; %s mode executes over "
				     "the receiver's own blob, so both ends need identical blobs "
				     "(same size and seed)",
				     r->peer, pfs_xfer_refuse_str(a->word), h.size, h.value, size,
				     fp, pfs_mode_str(mode));
	}
	/* Payload mode needs no shared blob: bounds come from the sender's, and
	 * --out is sized to them, so a claim of 2^40 bytes would make a 1 TiB
	 * file. The receiver's own limit decides, not the sender. */
	if (mode == PFS_MODE_PAYLOAD && h.size > max_size) {
		a->type = PFS_CTL_REFUSE;
		a->word = PFS_REFUSE_LIMIT;
		a->size = max_size;
		return pfs_xfer_fail(r, -EPERM,
				     "recv: refused %s: its blob of %" PRIu64 " bytes is over "
				     "this receiver's limit of %" PRIu64 " bytes; raise "
				     "--max-size to accept it",
				     r->peer, h.size, max_size);
	}
	if (mode == PFS_MODE_PAYLOAD && t->out_mem_size && h.size != t->out_mem_size) {
		a->type = PFS_CTL_REFUSE;
		a->word = PFS_REFUSE_SIZE;
		a->size = t->out_mem_size;
		return pfs_xfer_fail(r, -EPERM,
				     "recv: refused %s: size mismatch: sender blob %" PRIu64
				     " bytes, this receiver's blob %" PRIu64 " bytes (--into-blob "
				     "needs the sender's size)",
				     r->peer, h.size, t->out_mem_size);
	}
	*bound = mode == PFS_MODE_PAYLOAD ? h.size : size;
	ag->planned = h.count;
	__atomic_store_n(&r->planned, h.count, __ATOMIC_RELAXED); /* a /metrics page reads it */
	if (out_fd >= 0) {
		struct stat st;

		/* Size the output now, so a sender claiming an impossible blob is
		 * refused before any byte is written. */
		if (!fstat(out_fd, &st) && S_ISREG(st.st_mode) && (uint64_t)st.st_size < *bound &&
		    ftruncate(out_fd, *bound)) {
			int e = errno;

			a->type = PFS_CTL_REFUSE;
			a->word = PFS_REFUSE_SIZE;
			return pfs_xfer_fail(r, -EPERM,
					     "recv: refused %s: cannot size the output "
					     "to the sender's blob size %" PRIu64 " bytes: %s",
					     r->peer, *bound, strerror(e));
		}
	}
	return 0;
}

int pfs_xfer_answer_check(const uint8_t *raw, const struct pfs_ctl *h, uint64_t fp,
			  struct pfs_xfer_result *r)
{
	struct pfs_ctl a;
	int err = pfs_ctl_decode(raw, PFS_CTL_LEN, &a);

	if (err == -EPROTONOSUPPORT)
		return pfs_xfer_fail(r, -EPERM,
				     "send: receiver %s speaks protocol version %u, "
				     "this sender %u",
				     r->peer, raw[4], PFS_GRAM_VERSION);
	if (!err && a.type == PFS_CTL_CHALLENGE)
		return pfs_xfer_fail(r, -EPERM,
				     "send: receiver %s asks for the transfer's token: start this "
				     "sender with the same --token-file",
				     r->peer);
	if (err || (a.type != PFS_CTL_ACCEPT && a.type != PFS_CTL_REFUSE))
		return pfs_xfer_fail(r, -EPROTO, "send: bad answer to HELLO from %s", r->peer);
	r->peer_blob_size = a.size;
	r->peer_fingerprint = a.value;
	/* The limit is on what the receiver must hold: a payload sender's blob
	 * (HELLO size), a delta sender's target (HELLO count; size is the base). */
	if (a.type == PFS_CTL_REFUSE && a.word == PFS_REFUSE_LIMIT)
		return pfs_xfer_fail(r, -EPERM,
				     "send: receiver %s refused: %s: this %s is %" PRIu64
				     " bytes, the receiver takes at most %" PRIu64
				     " (its --max-size)",
				     r->peer, pfs_xfer_refuse_str(a.word),
				     h->mode == PFS_MODE_DELTA ? "target" : "blob",
				     h->mode == PFS_MODE_DELTA ? h->count : h->size, a.size);
	if (a.type == PFS_CTL_REFUSE && a.word == PFS_REFUSE_WORK)
		return pfs_xfer_fail(r, -EPERM,
				     "send: receiver %s refused: %s: this sender plans %" PRIu64
				     " effective bytes, the receiver does at most %" PRIu64
				     " (its --max-work)",
				     r->peer, pfs_xfer_refuse_str(a.word), h->count, a.count);
	if (a.type == PFS_CTL_REFUSE)
		return pfs_xfer_fail(
			r, -EPERM,
			"send: receiver %s refused: %s (sender: mode %s, "
			"blob %" PRIu64 " bytes fingerprint 0x%016" PRIx64 "; receiver: "
			"mode %s, blob %" PRIu64 " bytes fingerprint 0x%016" PRIx64 ")%s",
			r->peer, pfs_xfer_refuse_str(a.word), pfs_mode_str(h->mode), h->size, fp,
			pfs_mode_str(a.mode), a.size, a.value,
			a.word == PFS_REFUSE_SIZE && h->mode == PFS_MODE_PAYLOAD ?
				"; a receiver writing into its blob (--into-blob) needs the "
				"sender's size" :
			a.word == PFS_REFUSE_FINGERPRINT || a.word == PFS_REFUSE_SIZE ?
				"; offset and arithmetic modes need the same blob on both ends, delta mode "
				"the same base" :
			a.word == PFS_REFUSE_INTEGRITY ?
				"; start both ends with the same --integrity" :
				"");
	return 0;
}

int pfs_xfer_out_write(int fd, const uint8_t *p, size_t len, uint64_t off,
		       struct pfs_xfer_result *r)
{
	while (len) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return pfs_xfer_fail(r, -errno, "recv: writing output at %" PRIu64 ": %s",
					     off, strerror(errno));
		}
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

int pfs_xfer_given_ctl(int fd, struct pfs_xfer_result *r)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (getpeername(fd, (struct sockaddr *)&ss, &sl))
		snprintf(r->peer, sizeof(r->peer), "fd %d", fd);
	else
		pfs_xfer_addr_str(&ss, r->peer, sizeof(r->peer));
	return fd;
}

struct pfs_ctl pfs_xfer_hello_of(const struct pfs_xfer_opts *o, uint64_t fp)
{
	return (struct pfs_ctl){ .type = PFS_CTL_HELLO,
				 .mode = o->mode,
				 .flags = PFS_CTL_F_INTEGRITY(o->integrity),
				 .size = pfs_blob__size(o->blob),
				 .value = fp,
				 .count = o->send.sched.total_bytes,
				 .word = o->send.desc_per_gram };
}

struct pfs_xfer_terms pfs_xfer_terms_of(const struct pfs_xfer_opts *o, uint64_t fp)
{
	return (struct pfs_xfer_terms){ .mode = o->mode,
					.integrity = o->integrity,
					.blob_size = o->blob ? pfs_blob__size(o->blob) : 0,
					.fp = fp,
					.out_fd = o->recv.out_fd,
					.max_size = o->recv.max_size,
					.max_work = o->recv.max_work,
					.out_mem_size =
						o->recv.out_mem ? o->recv.out_mem_size : 0 };
}

struct pfs_ctl pfs_xfer_result_of(const struct pfs_xfer_result *r)
{
	return (struct pfs_ctl){ .type = PFS_CTL_RESULT,
				 .mode = r->mode,
				 .flags = r->verdict != PFS_VERDICT_MISMATCH ? PFS_CTL_F_OK : 0,
				 .size = r->bytes,
				 .value = r->descs,
				 .count = r->stats.errors,
				 .word = (uint32_t)r->crc };
}
