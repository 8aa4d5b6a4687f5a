/* SPDX-License-Identifier: Apache-2.0 */
/* What every `pfs` subcommand shares (cli.c): exit codes, --check-args,
 * the stop flag, the clocks, a mapped file, the AF_XDP link option parsers.
 * The services over it have their own headers: acquire.h (a blob from the
 * blob options or a holder), source.h (a blob from files), repl.h (a
 * replication session), xfer_args.h (the send/recv options and their
 * report); commands.h the entry points main.c dispatches to. Internal to
 * the tool; the library knows nothing of it. */
#ifndef PFS_TOOL_CLI_H
#define PFS_TOOL_CLI_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opt.h"
#include "pfs/result.h"

enum pfs_exit {
	PFS_EXIT_OK = 0,
	PFS_EXIT_ERROR = 1, /* runtime failure, see stderr and "error" */
	PFS_EXIT_USAGE = 2, /* bad command line */
	PFS_EXIT_MISMATCH = 3, /* transfer finished, integrity MISMATCH */
	PFS_EXIT_REFUSED = 4, /* peer refused: mode, version or blob */
	PFS_EXIT_TIMEOUT = 5, /* no peer / no data within the timeout */
	PFS_EXIT_UNAVAILABLE = 6, /* the transport cannot run here (AF_XDP refused) */
};

/* The exit code of a command whose options did not parse: 0 after --help,
 * 2 otherwise. */
static inline int pfs_exit_parse(int err)
{
	return err > 0 ? PFS_EXIT_OK : PFS_EXIT_USAGE;
}

/* `pfs --check-args COMMAND ...`: every command parses and validates its
 * options as usual, then exits 0 before touching memory, sockets or files.
 * The operator's tests run the exact argument lists its pods get through
 * it, so a pod can never be built with an option the binary lacks. */
extern bool pfs_cli_check_args;

/* A regular file mapped read-only (pfs_cli_map_file); size 0 maps nothing. */
struct pfs_cli_mapped {
	uint8_t *p;
	uint64_t size;
};

/* Map @path read-only into @m: 0, or -errno with @why ("PATH: not a
 * regular file", "PATH: <strerror>"). pfs_cli_unmap undoes it. */
int pfs_cli_map_file(const char *path, struct pfs_cli_mapped *m, char *why, size_t n);
void pfs_cli_unmap(struct pfs_cli_mapped *m);

/* PFS_OPT_FN parsers of the AF_XDP link options that send, recv and xsk
 * share: --attach (enum pfs_xdp_attach), --umem-page/--page (enum
 * pfs_xsk_page). */
int pfs_cli_parse_xdp_attach(const char *arg, void *field);
int pfs_cli_parse_umem_page(const char *arg, void *field);

/* Signals are the tool's, not the library's: the commands that must leave
 * through their cleanup path (an afxdp receiver and `pfs xsk` detach their
 * XDP program) call pfs_cli_catch_stop(), which routes SIGTERM, SIGINT and
 * SIGHUP to pfs_cli_stop (without SA_RESTART, so a blocking call returns
 * EINTR), and hand &pfs_cli_stop to the library as its stop flag. The
 * others keep the default actions. */
extern volatile sig_atomic_t pfs_cli_stop;
void pfs_cli_catch_stop(void);

/* As PID 1 (pfs is the image's entrypoint), "the default action" is none:
 * the kernel drops a signal the init of a PID namespace has no handler for,
 * even one sent from the host, so a deleted pod's pfs would stream on until
 * the kubelet's SIGKILL a grace period later, holding its hugepages and its
 * queue. main() calls this first: as PID 1 only, SIGTERM, SIGINT and SIGHUP
 * end pfs at once with 128+N, as they end it anywhere else. The commands
 * above replace it with their own. */
void pfs_cli_stop_as_pid1(void);

/* CLOCK_MONOTONIC in seconds. */
double pfs_cli_now(void);
/* CLOCK_REALTIME in seconds (timestamps other nodes compare). */
double pfs_cli_wall(void);

#endif /* PFS_TOOL_CLI_H */
