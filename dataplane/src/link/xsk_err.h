/* SPDX-License-Identifier: Apache-2.0 */
/* Private to xdp.c/xsk.c: the thread-local reason of the last failure,
 * returned by pfs_xsk_last_error(). */
#ifndef PFS_XSK_ERR_H
#define PFS_XSK_ERR_H

void pfs_xsk_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pfs_xsk_error_clear(void);

#endif
