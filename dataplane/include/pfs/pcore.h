/* SPDX-License-Identifier: Apache-2.0 */
/* pcores: per-core descriptor rings executing byte ops over the blob. */
#ifndef PFS_PCORE_H
#define PFS_PCORE_H

/* pfs_cmd_pcore - the `pfs pcore ...` subcommand; argv[0] is "pcore".
 * Returns the process exit code. */
int pfs_cmd_pcore(int argc, char **argv);

#endif /* PFS_PCORE_H */
