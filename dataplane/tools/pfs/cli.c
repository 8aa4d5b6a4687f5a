// SPDX-License-Identifier: Apache-2.0
/*
 * State and helpers the pfs subcommands share (cli.h): the --check-args
 * switch, set once by main() before the command runs, the stop flag the
 * signal handler sets, the clock the commands time their phases with, and
 * the parsers of the AF_XDP link options send, recv and xsk have in common.
 */
#include <stdio.h>
#include <errno.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "pfs/xdp.h"
#include "pfs/xsk.h"

bool pfs_cli_check_args;
volatile sig_atomic_t pfs_cli_stop;

/* SIGTERM, SIGINT and SIGHUP to @handler, without SA_RESTART (a blocking
 * poll() returns EINTR). */
static void on_stop_signals(void (*handler)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static void on_stop(int sig)
{
	pfs_cli_stop = sig;
}

void pfs_cli_catch_stop(void)
{
	on_stop_signals(on_stop);
}

/* The default action of a stop signal, for when the kernel gives none: the
 * shell's 128+N. Only async-signal-safe calls (strlen is one). */
static void on_stop_default(int sig)
{
	const char *msg = sig == SIGTERM ? "pfs: stopped by SIGTERM\n" :
			  sig == SIGINT	 ? "pfs: stopped by SIGINT\n" :
					   "pfs: stopped by SIGHUP\n";

	if (write(STDERR_FILENO, msg, strlen(msg)) < 0) {
		/* nothing else to tell: the exit code says it */
	}
	_exit(128 + sig);
}

void pfs_cli_stop_as_pid1(void)
{
	if (getpid() == 1)
		on_stop_signals(on_stop_default);
}

double pfs_cli_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int pfs_cli_parse_xdp_attach(const char *arg, void *field)
{
	return pfs_xdp_attach_parse(arg, field);
}

int pfs_cli_parse_umem_page(const char *arg, void *field)
{
	return pfs_xsk_page_parse(arg, field);
}

double pfs_cli_wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int pfs_cli_map_file(const char *path, struct pfs_cli_mapped *m, char *why, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = 0;
	struct stat st;

	if (fd < 0 || fstat(fd, &st)) {
		err = -errno;
	} else if (!S_ISREG(st.st_mode)) {
		err = -EINVAL;
	} else if (st.st_size) {
		m->p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m->p == MAP_FAILED) {
			m->p = NULL;
			err = -errno;
		}
		m->size = (uint64_t)st.st_size;
	}
	if (fd >= 0)
		close(fd);
	if (err)
		snprintf(why, n, "%.500s: %s", path,
			 err == -EINVAL ? "not a regular file" : strerror(-err));
	return err;
}

void pfs_cli_unmap(struct pfs_cli_mapped *m)
{
	if (m->p)
		munmap(m->p, m->size);
}
