// SPDX-License-Identifier: Apache-2.0
/*
 * `pfs probe`: the exec readiness probe of a receiver pod. The data-plane
 * image has no shell, so the kubelet runs pfs itself; `pfs recv
 * --ready-file` creates the file once it accepts senders, and this command
 * only reports whether it is there. It opens no socket: probing the
 * receiver's port would take the one connection it accepts.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "commands.h"

struct probe_args {
	const char *ready_file;
};

static const struct pfs_opt probe_opts[] = {
	{ "ready-file", PFS_OPT_STR, PFS_OPT_AT(struct probe_args, ready_file), "PATH",
	  "the file `pfs recv --ready-file` creates", .flags = PFS_OPT_REQUIRED },
	{ 0 },
};

int pfs_cmd_probe(int argc, char **argv)
{
	struct probe_args a = { 0 };
	struct pfs_cmdline c = {
		.cmd = "probe",
		.usage =
			"usage: pfs probe --ready-file PATH\n"
			"\n"
			"Exit 0 when PATH exists (the receiver that was started with --ready-file\n"
			"PATH accepts senders), 1 when it does not, 2 on bad usage.\n\n",
		.group = { { probe_opts, &a } },
	};
	struct stat st;
	int err = pfs_opt_parse(&c, argc, argv);

	if (err)
		return pfs_exit_parse(err);
	if (pfs_cli_check_args)
		return PFS_EXIT_OK;
	if (stat(a.ready_file, &st)) {
		fprintf(stderr, "pfs probe: not ready: %s: %s\n", a.ready_file, strerror(errno));
		return PFS_EXIT_ERROR;
	}
	return PFS_EXIT_OK;
}
