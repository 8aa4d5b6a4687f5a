// SPDX-License-Identifier: Apache-2.0
/*
 * pfs: the PacketFS data-plane CLI. This file only dispatches: global
 * options (log level, --check-args) then a subcommand from the table below,
 * one file each in tools/pfs/. The table is the only caller of the
 * subcommands' entry points (scripts/check-cli-graph.sh keeps it so): they
 * are leaves over the shared services of cli.h and its sibling headers.
 * Results go to stdout as one JSON object; logs go to stderr. The library
 * (libpfs.a) holds no CLI code.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "pfs/integrity.h"
#include "pfs/log.h"

/* A command, or with @verb one verb of it that has its own entry point
 * (argv[0] is then the verb); @help NULL: not listed in the usage. */
struct command {
	const char *name, *verb;
	int (*fn)(int argc, char **argv);
	const char *help;
};

static const struct command commands[] = {
	{ "blob", "serve", pfs_cmd_blob_serve, NULL },
	{ "blob", "ping", pfs_cmd_blob_ping, NULL },
	{ "blob", "attach", pfs_cmd_blob_attach, NULL },
	{ "blob", "manifest", pfs_cmd_blob_manifest, NULL },
	{ "blob", NULL, pfs_cmd_blob, "create | info | rm a blob (hugepages, THP, 4K)" },
	{ "recv", NULL, pfs_cmd_recv, "receive one transfer and verify its integrity" },
	{ "send", NULL, pfs_cmd_send, "send a schedule of grams to a receiver" },
	{ "bench", NULL, pfs_cmd_bench, "local rates: CRC32C, FNV-1a, memset, blob setup" },
	{ "pcore", NULL, pfs_cmd_pcore, "run byte ops over the blob on pcores" },
	{ "probe", NULL, pfs_cmd_probe, "readiness probe: does a receiver's --ready-file exist" },
	{ "udp", NULL, pfs_cmd_udp, "UDP link probe: blast | sink datagrams (sendmmsg, GSO/GRO)" },
#ifndef PFS_NO_AFXDP /* the arm64 cross build has no libbpf */
	{ "xsk", NULL, pfs_cmd_xsk, "AF_XDP link probe: sink | blast test frames, detach" },
#endif
};

static void usage(FILE *f)
{
	fprintf(f, "usage: pfs [-v | -q | --log-level LEVEL] [--log-format text|json]\n"
		   "           [--log-time-encoding ENC] [--check-args] COMMAND [options]\n\n"
		   "Commands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (commands[i].help)
			fprintf(f, "  %-6s %s\n", commands[i].name, commands[i].help);
	fprintf(f,
		"\n`pfs COMMAND --help` describes each command.\n"
		"Results: one JSON object on stdout (<= 4 KiB); logs on stderr.\n"
		"Exit: 0 OK, 1 error, 2 usage, 3 integrity MISMATCH, 4 refused, 5 timeout,\n"
		"6 transport unavailable here (AF_XDP refused).\n"
		"Log levels: error, warn, info (default), debug. --log-format json: one object a\n"
		"line, {\"level\",\"ts\",\"logger\":\"pfs\",\"msg\"} as the operator's zap logs, ts in\n"
		"--log-time-encoding epoch (default), millis, nano, iso8601, rfc3339, rfc3339nano.\n"
		"PFS_LOG_FORMAT, PFS_LOG_LEVEL, PFS_LOG_TIME_ENCODING set the same; flags win.\n"
		"Sizes take K/M/G/T, Ki..Ti and KiB..TiB (binary), KB/MB/GB/TB (decimal) and\n"
		"fractions (1.5G); integers take 0x (hex) and 0 (octal) prefixes.\n");
}

/* Run the command of argv[0] (its verb argv[1] when that has an entry of
 * its own); the exit code. */
static int dispatch(int argc, char **argv)
{
	for (size_t c = 0; c < sizeof(commands) / sizeof(commands[0]); c++) {
		const struct command *cmd = &commands[c];

		if (strcmp(argv[0], cmd->name))
			continue;
		if (!cmd->verb)
			return cmd->fn(argc, argv);
		if (argc > 1 && !strcmp(argv[1], cmd->verb))
			return cmd->fn(argc - 1, argv + 1);
	}
	fprintf(stderr, "pfs: unknown command '%s'\n\n", argv[0]);
	usage(stderr);
	return PFS_EXIT_USAGE;
}

/* PFS_LOG_FORMAT, PFS_LOG_LEVEL, PFS_LOG_TIME_ENCODING: how the operator's
 * pods ask for the logs its own zap writes (the flags, when given, win).
 * 0, or PFS_EXIT_USAGE after saying which is wrong. */
static int log_env(enum pfs_log_format *lf, enum pfs_log_time *lt)
{
	const char *f = getenv("PFS_LOG_FORMAT"), *l = getenv("PFS_LOG_LEVEL"),
		   *t = getenv("PFS_LOG_TIME_ENCODING");
	enum pfs_log_level lv;

	if (f && *f && pfs_log_parse_format(f, lf)) {
		fprintf(stderr, "pfs: PFS_LOG_FORMAT='%s': want text or json\n", f);
		return PFS_EXIT_USAGE;
	}
	if (t && *t && pfs_log_parse_time(t, lt)) {
		fprintf(stderr,
			"pfs: PFS_LOG_TIME_ENCODING='%s': want epoch, millis, nano, iso8601, "
			"rfc3339 or rfc3339nano\n",
			t);
		return PFS_EXIT_USAGE;
	}
	if (l && *l) {
		if (pfs_log_parse_level(l, &lv)) {
			fprintf(stderr,
				"pfs: PFS_LOG_LEVEL='%s': want error, warn, info or debug\n", l);
			return PFS_EXIT_USAGE;
		}
		pfs_log_set_level(lv);
	}
	return 0;
}

int main(int argc, char **argv)
{
	enum pfs_log_format lf = PFS_LOG_TEXT;
	enum pfs_log_time lt = PFS_LOG_TIME_EPOCH;
	const char *crc;
	int i = 1, rc;

	/* A vanished peer must surface as EPIPE from send(), not kill us. */
	signal(SIGPIPE, SIG_IGN);
	pfs_cli_stop_as_pid1();
	/* The library reads no environment: pfs passes what it finds. */
	crc = getenv("PFS_CRC32C_IMPL");
	if (crc && !strcmp(crc, "portable"))
		pfs_crc32c_select("portable");
	rc = log_env(&lf, &lt);
	if (rc)
		return rc;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--check-args")) {
			pfs_cli_check_args = true;
		} else if (!strcmp(argv[i], "-v")) {
			pfs_log_set_level(PFS_LOG_DEBUG);
		} else if (!strcmp(argv[i], "-q")) {
			pfs_log_set_level(PFS_LOG_ERROR);
		} else if (!strcmp(argv[i], "--log-level") && i + 1 < argc) {
			enum pfs_log_level l;

			if (pfs_log_parse_level(argv[++i], &l)) {
				fprintf(stderr,
					"pfs: unknown log level '%s' (error, warn, info, debug)\n",
					argv[i]);
				return PFS_EXIT_USAGE;
			}
			pfs_log_set_level(l);
		} else if (!strcmp(argv[i], "--log-format") && i + 1 < argc) {
			if (pfs_log_parse_format(argv[++i], &lf)) {
				fprintf(stderr, "pfs: unknown log format '%s' (text, json)\n",
					argv[i]);
				return PFS_EXIT_USAGE;
			}
		} else if (!strcmp(argv[i], "--log-time-encoding") && i + 1 < argc) {
			if (pfs_log_parse_time(argv[++i], &lt)) {
				fprintf(stderr,
					"pfs: unknown log time encoding '%s' (epoch, millis, nano, "
					"iso8601, rfc3339, rfc3339nano)\n",
					argv[i]);
				return PFS_EXIT_USAGE;
			}
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return PFS_EXIT_OK;
		} else {
			fprintf(stderr, "pfs: unknown option '%s'\n\n", argv[i]);
			usage(stderr);
			return PFS_EXIT_USAGE;
		}
	}
	pfs_log_set_format(lf, lt);
	if (i >= argc) {
		usage(stderr);
		return PFS_EXIT_USAGE;
	}
	if (!strcmp(argv[i], "help")) {
		usage(stdout);
		return PFS_EXIT_OK;
	}
	return dispatch(argc - i, argv + i);
}
