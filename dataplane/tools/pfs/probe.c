// SPDX-License-Identifier: Apache-2.0
/*
 * `pfs probe`: the exec readiness probe of a receiver pod. The data-plane
 * image has no shell, so the kubelet runs pfs itself; `pfs recv
 * --ready-file` creates the file once it accepts senders, and this command
 * only reports whether it is there. It opens no socket: probing the
 * receiver's port would take the one connection it accepts.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

static const char probe_usage[] =
"usage: pfs probe --ready-file PATH\n"
"\n"
"Exit 0 when PATH exists (the receiver that was started with --ready-file\n"
"PATH accepts senders), 1 when it does not, 2 on bad usage.\n";

int pfs_cmd_probe(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "ready-file", 1, 0, 'r' }, { "help", 0, 0, 'h' }, { 0 },
	};
	const char *path = NULL;
	struct stat st;
	int c;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		if (c == 'h') {
			fputs(probe_usage, stdout);
			return PFS_EXIT_OK;
		}
		if (c != 'r')
			goto usage;
		path = optarg;
	}
	if (!path || optind < argc)
		goto usage;
	if (pfs_cli_check_args)
		return PFS_EXIT_OK;
	if (stat(path, &st)) {
		fprintf(stderr, "pfs probe: not ready: %s: %s\n", path, strerror(errno));
		return PFS_EXIT_ERROR;
	}
	return PFS_EXIT_OK;
usage:
	fprintf(stderr, "pfs probe: --ready-file PATH is required\n\n%s", probe_usage);
	return PFS_EXIT_USAGE;
}
