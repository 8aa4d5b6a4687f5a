// SPDX-License-Identifier: Apache-2.0
/*
 * The /metrics endpoint (metrics.h). One thread, one connection at a time:
 * a scrape is a few kilobytes written from counters the fill and the
 * servers already keep, so there is nothing to gain from concurrency and a
 * scraper cannot make the holder spawn threads. The thread polls with
 * 200 ms ticks so a stop is seen promptly; a client gets 2 s to send its
 * request line. Anything but GET /metrics gets 404 (or 405 for other
 * methods); the server reads nothing else a client sends.
 */
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "metrics.h"
#include "pfs/log.h"

#define PAGE_CAP (64 * 1024)
#define REQ_MAX 1024

struct pfs_cli_metrics {
	int lfd;
	pthread_t thr;
	atomic_bool stop;
	pfs_metrics_collect_fn collect;
	void *ctx;
	char addr[64];
	char page[PAGE_CAP];
	char req[REQ_MAX];
};

static void put(struct pfs_metrics_page *p, const char *fmt, ...)
{
	size_t room = p->cap - p->len;
	va_list ap;
	int w;

	if (p->truncated)
		return;
	va_start(ap, fmt);
	w = vsnprintf(p->buf + p->len, room, fmt, ap);
	va_end(ap);
	/* keep room for the closing comment line */
	if (w < 0 || (size_t)w + 64 >= room) {
		p->buf[p->len] = '\0';
		p->truncated = true;
		return;
	}
	p->len += (size_t)w;
}

void pfs_metrics_family(struct pfs_metrics_page *p, const char *name, const char *type,
			const char *help)
{
	put(p, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void pfs_metrics_sample(struct pfs_metrics_page *p, const char *name, const char *labels, double v)
{
	/* %.17g round-trips a double; integers up to 2^53 print exactly. */
	if (labels && *labels)
		put(p, "%s{%s} %.17g\n", name, labels, v);
	else
		put(p, "%s %.17g\n", name, v);
}

void pfs_metrics_one(struct pfs_metrics_page *p, const char *name, const char *type,
		     const char *help, double v)
{
	pfs_metrics_family(p, name, type, help);
	pfs_metrics_sample(p, name, "", v);
}

static void process_metrics(struct pfs_metrics_page *p)
{
	struct rusage ru;
	double cpu = 0;

	if (!getrusage(RUSAGE_SELF, &ru))
		cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		      (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	pfs_metrics_one(
		p, "process_cpu_seconds_total", "counter",
		"User and system CPU time spent by this pfs process, every thread, in seconds.",
		cpu);
}

static size_t render(struct pfs_cli_metrics *m)
{
	struct pfs_metrics_page p = { .buf = m->page, .cap = sizeof(m->page) };

	m->page[0] = '\0';
	m->collect(m->ctx, &p);
	process_metrics(&p);
	if (p.truncated) {
		p.len += (size_t)snprintf(p.buf + p.len, p.cap - p.len,
					  "# truncated: the page is larger than %d bytes\n",
					  PAGE_CAP);
		pfs_warn("metrics: page truncated at %d bytes", PAGE_CAP);
	}
	return p.len;
}

static void send_all(int fd, const char *b, size_t n)
{
	while (n) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		b += w;
		n -= (size_t)w;
	}
}

static void reply(int fd, const char *status, const char *body, size_t len)
{
	char head[256];
	int h = snprintf(head, sizeof(head),
			 "HTTP/1.1 %s\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n\r\n",
			 status, len);

	send_all(fd, head, (size_t)h);
	send_all(fd, body, len);
}

/* Read until the end of the request line (or the buffer is full, or 2 s
 * pass); NUL-terminated. The length read, 0 on a silent client. */
static size_t read_request_line(struct pfs_cli_metrics *m, int fd)
{
	struct timeval tv = { .tv_sec = 2 };
	size_t got = 0;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (got < sizeof(m->req) - 1) {
		ssize_t r = recv(fd, m->req + got, sizeof(m->req) - 1 - got, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
		m->req[got] = '\0';
		if (strchr(m->req, '\n'))
			break;
	}
	m->req[got] = '\0';
	return got;
}

static void serve_one(struct pfs_cli_metrics *m, int fd)
{
	static const char not_found[] = "only /metrics is served here\n";
	static const char not_allowed[] = "only GET is served here\n";
	const char *path;

	if (!read_request_line(m, fd))
		return;
	if (strncmp(m->req, "GET ", 4)) {
		reply(fd, "405 Method Not Allowed", not_allowed, sizeof(not_allowed) - 1);
		return;
	}
	path = m->req + 4;
	/* "/metrics", optionally with a query string (Prometheus sends none,
	 * curl users sometimes do). */
	if (strncmp(path, "/metrics", 8) || (path[8] != ' ' && path[8] != '?')) {
		reply(fd, "404 Not Found", not_found, sizeof(not_found) - 1);
		return;
	}
	reply(fd, "200 OK", m->page, render(m));
}

static void *serve_loop(void *arg)
{
	struct pfs_cli_metrics *m = arg;

	while (!atomic_load(&m->stop)) {
		struct pollfd pf = { .fd = m->lfd, .events = POLLIN };
		int fd;

		if (poll(&pf, 1, 200) <= 0)
			continue;
		fd = accept4(m->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		serve_one(m, fd);
		close(fd);
	}
	return NULL;
}

/* "ADDR:PORT" → host (NULL: every address) and port, split in @buf. */
static int split_listen(const char *listen, char *buf, size_t n, const char **host,
			const char **port)
{
	char *colon;

	if (snprintf(buf, n, "%s", listen) >= (int)n)
		return -EINVAL;
	colon = strrchr(buf, ':');
	if (!colon || !colon[1])
		return -EINVAL;
	*colon = '\0';
	*port = colon + 1;
	*host = buf;
	if (buf[0] == '[') {
		size_t l = strlen(buf);

		if (l < 2 || buf[l - 1] != ']')
			return -EINVAL;
		buf[l - 1] = '\0';
		*host = buf + 1;
	}
	if (!**host)
		*host = NULL;
	return 0;
}

static int resolve(const char *listen, struct addrinfo **ai)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV };
	const char *host, *port;
	char buf[64];
	int g;

	if (split_listen(listen, buf, sizeof(buf), &host, &port))
		return EAI_NONAME;
	g = getaddrinfo(host, port, &hints, ai);
	return g;
}

int pfs_cli_metrics_check(const char *listen)
{
	struct addrinfo *ai = NULL;

	if (resolve(listen, &ai))
		return -EINVAL;
	freeaddrinfo(ai);
	return 0;
}

static int bind_listen(struct pfs_cli_metrics *m, const char *where, char *why, size_t n)
{
	struct addrinfo *ai = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char h[48], p[8];
	int one = 1, g = resolve(where, &ai);

	if (g) {
		snprintf(why, n, "invalid --metrics-listen '%s' (ADDR:PORT or :PORT): %s", where,
			 gai_strerror(g));
		return -EINVAL;
	}
	m->lfd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (m->lfd < 0 || setsockopt(m->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(m->lfd, ai->ai_addr, ai->ai_addrlen) || listen(m->lfd, 16)) {
		int err = -errno;

		snprintf(why, n, "metrics: cannot listen on %s: %s", where, strerror(errno));
		freeaddrinfo(ai);
		return err;
	}
	freeaddrinfo(ai);
	if (!getsockname(m->lfd, (struct sockaddr *)&ss, &sl) &&
	    !getnameinfo((struct sockaddr *)&ss, sl, h, sizeof(h), p, sizeof(p),
			 NI_NUMERICHOST | NI_NUMERICSERV))
		snprintf(m->addr, sizeof(m->addr), ss.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s",
			 h, p);
	return 0;
}

struct pfs_cli_metrics *pfs_cli_metrics_start(const char *listen, pfs_metrics_collect_fn collect,
					      void *ctx, char *why, size_t n)
{
	struct pfs_cli_metrics *m = calloc(1, sizeof(*m));
	int err;

	if (!m) {
		snprintf(why, n, "metrics: out of memory");
		errno = ENOMEM;
		return NULL;
	}
	m->lfd = -1;
	m->collect = collect;
	m->ctx = ctx;
	err = bind_listen(m, listen, why, n);
	if (!err) {
		err = -pthread_create(&m->thr, NULL, serve_loop, m);
		if (err)
			snprintf(why, n, "metrics: cannot start its thread: %s", strerror(-err));
	}
	if (err) {
		if (m->lfd >= 0)
			close(m->lfd);
		free(m);
		errno = -err;
		return NULL;
	}
	pfs_info("metrics: serving http://%s/metrics", m->addr);
	return m;
}

const char *pfs_cli_metrics_addr(const struct pfs_cli_metrics *m)
{
	return m->addr;
}

void pfs_cli_metrics_stop(struct pfs_cli_metrics *m)
{
	if (!m)
		return;
	atomic_store(&m->stop, true);
	pthread_join(m->thr, NULL);
	close(m->lfd);
	free(m);
}
