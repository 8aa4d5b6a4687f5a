/* SPDX-License-Identifier: Apache-2.0 */
/* The scripted HTTP server of the remote-source tests (test_blob_source_http,
 * test_blob_source_oci): a listening socket on 127.0.0.1 that outlives the
 * server, so the server can be killed and started again on the same port,
 * and the server itself, a child process that accepts and runs one thread
 * per connection, handing each request head (up to the blank line) to the
 * test's serve function. What the test wants shared with the child (faults,
 * counters) lives in a MAP_SHARED mapping of its own. */
#ifndef PFS_TESTS_SCRIPT_SERVER_H
#define PFS_TESTS_SCRIPT_SERVER_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int srv_lfd = -1;
static pid_t srv_pid;
static void (*srv_serve)(int fd, const char *req);

__attribute__((unused)) static void srv_reply(int fd, const char *s)
{
	(void)!send(fd, s, strlen(s), MSG_NOSIGNAL);
}

static void *srv_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char req[8192];
	size_t l = 0;

	for (;;) {
		ssize_t r = recv(fd, req + l, sizeof(req) - 1 - l, 0);

		if (r <= 0)
			break;
		l += (size_t)r;
		req[l] = '\0';
		if (strstr(req, "\r\n\r\n")) {
			srv_serve(fd, req);
			l = 0;
		}
	}
	close(fd);
	return NULL;
}

/* srv_listen - a listening socket on 127.0.0.1 (a port the kernel picks);
 * the port, or -1. */
__attribute__((unused)) static int srv_listen(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	int one = 1;

	srv_lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(srv_lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (srv_lfd < 0 || bind(srv_lfd, (struct sockaddr *)&a, sizeof(a)) || listen(srv_lfd, 64) ||
	    getsockname(srv_lfd, (struct sockaddr *)&a, &al))
		return -1;
	return ntohs(a.sin_port);
}

/* srv_start - the server child on srv_lfd, calling @serve per request. */
__attribute__((unused)) static void srv_start(void (*serve)(int fd, const char *req))
{
	srv_serve = serve;
	srv_pid = fork();
	if (srv_pid == 0) {
		/* sendfile() to a client that hung up must not kill the server. */
		signal(SIGPIPE, SIG_IGN);
		for (;;) {
			int fd = accept(srv_lfd, NULL, NULL);
			pthread_t t;

			if (fd >= 0 && !pthread_create(&t, NULL, srv_conn, (void *)(intptr_t)fd))
				pthread_detach(t);
		}
	}
}

__attribute__((unused)) static void srv_stop(void)
{
	if (srv_pid > 0) {
		kill(srv_pid, SIGKILL);
		waitpid(srv_pid, NULL, 0);
	}
	srv_pid = 0;
}

#endif /* PFS_TESTS_SCRIPT_SERVER_H */
