/* SPDX-License-Identifier: Apache-2.0 */
/* The subcommands' entry points, one file each in tools/pfs/: main.c's
 * command table is their only caller (and the tests that run a command
 * in-process). Each takes argv with argv[0] = its own name (blob serve,
 * ping, attach, manifest: the verb) and returns the process exit code. */
#ifndef PFS_TOOL_COMMANDS_H
#define PFS_TOOL_COMMANDS_H

int pfs_cmd_blob(int argc, char **argv); /* blob.c: create, info, rm */
int pfs_cmd_blob_serve(int argc, char **argv); /* share.c */
int pfs_cmd_blob_ping(int argc, char **argv); /* share.c */
int pfs_cmd_blob_attach(int argc, char **argv); /* share.c */
int pfs_cmd_blob_manifest(int argc, char **argv); /* manifest.c */
int pfs_cmd_send(int argc, char **argv); /* xfer.c */
int pfs_cmd_recv(int argc, char **argv); /* xfer.c */
int pfs_cmd_bench(int argc, char **argv); /* bench.c */
int pfs_cmd_pcore(int argc, char **argv); /* pcore.c */
int pfs_cmd_probe(int argc, char **argv); /* probe.c */
int pfs_cmd_xsk(int argc, char **argv); /* xsk.c */
int pfs_cmd_udp(int argc, char **argv); /* udp.c */

#endif /* PFS_TOOL_COMMANDS_H */
