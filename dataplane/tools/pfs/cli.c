// SPDX-License-Identifier: Apache-2.0
/*
 * State and helpers the pfs subcommands share (cli.h): the --check-args
 * switch, set once by main() before the command runs, the stop flag the
 * signal handler sets, the clock the commands time their phases with, and
 * the parsers of the AF_XDP link options send, recv and xsk have in common.
 */
#include <string.h>
#include <time.h>

#include "cli.h"
#include "pfs/xdp.h"
#include "pfs/xsk.h"

bool pfs_cli_check_args;
volatile sig_atomic_t pfs_cli_stop;

static void on_stop(int sig)
{
	pfs_cli_stop = sig;
}

void pfs_cli_catch_stop(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop; /* no SA_RESTART: blocking poll() returns EINTR */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
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
