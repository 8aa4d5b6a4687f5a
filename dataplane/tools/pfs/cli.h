/* SPDX-License-Identifier: Apache-2.0 */
/* The `pfs` subcommands and what they share: exit codes, size parsing, blob
 * options. Each pfs_cmd_* takes argv with argv[0] = its own name and returns
 * the process exit code. */
#ifndef PFS_CLI_H
#define PFS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pfs/blob.h"
#include "pfs/result.h"

enum pfs_exit {
	PFS_EXIT_OK = 0,
	PFS_EXIT_ERROR = 1,	/* runtime failure, see stderr and "error" */
	PFS_EXIT_USAGE = 2,	/* bad command line */
	PFS_EXIT_MISMATCH = 3,	/* transfer finished, integrity MISMATCH */
	PFS_EXIT_REFUSED = 4,	/* peer refused: mode, version or blob */
	PFS_EXIT_TIMEOUT = 5,	/* no peer / no data within the timeout */
};

int pfs_cmd_blob(int argc, char **argv);
int pfs_cmd_send(int argc, char **argv);
int pfs_cmd_recv(int argc, char **argv);
int pfs_cmd_bench(int argc, char **argv);
int pfs_cmd_probe(int argc, char **argv);
int pfs_cmd_xsk(int argc, char **argv);
int pfs_cmd_pcore(int argc, char **argv);

/* `pfs --check-args COMMAND ...`: every command parses and validates its
 * options as usual, then exits 0 before touching memory, sockets or files.
 * The operator's tests run the exact argument lists its pods get through
 * it, so a pod can never be built with an option the binary lacks. */
extern bool pfs_cli_check_args;

/* "4096", "64K", "1G", "2GiB", "1.5M" (binary multiples), "1GB" (decimal).
 * 0 or -EINVAL. */
int pfs_parse_size(const char *s, uint64_t *out);
int pfs_parse_u64(const char *s, uint64_t *out);

/* Blob options shared by blob/send/recv/bench. */
struct pfs_cli_blob {
	struct pfs_blob_opts opts;	/* anonymous or named create */
	const char *open_name;		/* --blob-name: open an existing blob */
	const char *open_dir;
};

void pfs_cli_blob_init(struct pfs_cli_blob *b);
/* Handle one blob option (long name without dashes); 1 handled, 0 not a
 * blob option, -1 bad value (message printed). */
int pfs_cli_blob_opt(struct pfs_cli_blob *b, const char *name, const char *val);
/* Create or open; NULL with the reason logged and copied into @why. */
struct pfs_blob *pfs_cli_blob_get(const struct pfs_cli_blob *b, char *why, size_t n);
/* The "blob" member of a result. */
void pfs_cli_blob_json(struct pfs_json *j, const struct pfs_blob *blob, uint64_t fp);

#define PFS_CLI_BLOB_HELP \
"Blob (offset/arithmetic need the same blob on both ends):\n" \
"  --size N           blob size (default 1G); K/M/G/T binary, rounded to 2 MiB\n" \
"  --seed N           fill seed (default 1)\n" \
"  --page KIND        4k | thp | 2m | 1g (default 2m); falls back 1g>2m>thp>4k\n" \
"  --no-fallback      fail instead of falling back to smaller pages\n" \
"  --fill KIND        seed | zero | none (default seed)\n" \
"  --numa NODE        bind the blob to a NUMA node\n" \
"  --mlock            lock the blob in RAM (CAP_IPC_LOCK or RLIMIT_MEMLOCK)\n" \
"  --setup-threads N  threads for prefault + fill (default 1, max 4)\n" \
"  --blob-name NAME   open an existing named blob instead of creating one\n" \
"  --blob-dir DIR     its directory (default: search /dev/hugepages, /dev/shm)\n"

/* getopt_long entries for the blob options; every long-only option of the
 * subcommands returns PFS_OPT_LONG and is told apart by its name. */
#define PFS_OPT_LONG 0x100
#define PFS_CLI_BLOB_LONGOPTS \
	{ "size", 1, 0, PFS_OPT_LONG }, { "seed", 1, 0, PFS_OPT_LONG }, \
	{ "page", 1, 0, PFS_OPT_LONG }, { "no-fallback", 0, 0, PFS_OPT_LONG }, \
	{ "fill", 1, 0, PFS_OPT_LONG }, { "numa", 1, 0, PFS_OPT_LONG }, \
	{ "mlock", 0, 0, PFS_OPT_LONG }, { "blob-name", 1, 0, PFS_OPT_LONG }, \
	{ "blob-dir", 1, 0, PFS_OPT_LONG }, { "setup-threads", 1, 0, PFS_OPT_LONG }

#endif /* PFS_CLI_H */
