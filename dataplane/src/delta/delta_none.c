// SPDX-License-Identifier: Apache-2.0
/*
 * Delta mode in a build without zstd and libcrypto (the arm64 cross build,
 * -DPFS_NO_SOURCE; the Makefile leaves the other src/delta/ files out
 * there): the transfers fail with ENOTSUP and say why. Empty elsewhere.
 */
#ifdef PFS_NO_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pfs/delta.h"

static int no_delta(struct pfs_xfer_result *r, struct pfs_delta_result *d)
{
	memset(r, 0, sizeof(*r));
	memset(d, 0, sizeof(*d));
	snprintf(r->error, sizeof(r->error),
		 "this pfs was built without delta mode: the arm64 cross build has no zstd "
		 "and no libcrypto");
	return -ENOTSUP;
}

int pfs_delta_send(const struct pfs_delta_opts *o, struct pfs_xfer_result *r,
		   struct pfs_delta_result *d)
{
	(void)o;
	return no_delta(r, d);
}

int pfs_delta_recv(const struct pfs_delta_opts *o, struct pfs_xfer_result *r,
		   struct pfs_delta_result *d)
{
	(void)o;
	return no_delta(r, d);
}
#endif /* PFS_NO_SOURCE */
