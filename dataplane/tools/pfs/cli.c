// SPDX-License-Identifier: Apache-2.0
/*
 * State and helpers the pfs subcommands share (cli.h): the --check-args
 * switch, set once by main() before the command runs, the clock the
 * commands time their phases with, and the parsers of the AF_XDP link
 * options send, recv and xsk have in common.
 */
#include <time.h>

#include "cli.h"
#include "pfs/xdp.h"
#include "pfs/xsk.h"

bool pfs_cli_check_args;

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
