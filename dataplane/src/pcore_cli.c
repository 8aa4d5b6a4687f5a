// SPDX-License-Identifier: Apache-2.0
/* `pfs pcore`: placeholder until the pcore runner lands. */
#include <stdio.h>

#include "pfs/pcore.h"

int pfs_cmd_pcore(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "pfs: pcore: not implemented yet\n");
	return 2;
}
