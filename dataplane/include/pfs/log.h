/* SPDX-License-Identifier: Apache-2.0 */
/* One logging function for the whole data plane. Messages go to stderr so
 * that stdout stays reserved for the JSON/CSV result; nothing on the hot path
 * logs per packet. */
#ifndef PFS_LOG_H
#define PFS_LOG_H

#include <stddef.h>

enum pfs_log_level {
	PFS_LOG_ERROR = 0,
	PFS_LOG_WARN,
	PFS_LOG_INFO,
	PFS_LOG_DEBUG,
};

void pfs_log_set_level(enum pfs_log_level level);
enum pfs_log_level pfs_log_get_level(void);

void pfs_log(enum pfs_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define pfs_err(...) pfs_log(PFS_LOG_ERROR, __VA_ARGS__)
#define pfs_warn(...) pfs_log(PFS_LOG_WARN, __VA_ARGS__)
#define pfs_info(...) pfs_log(PFS_LOG_INFO, __VA_ARGS__)
#define pfs_debug(...) pfs_log(PFS_LOG_DEBUG, __VA_ARGS__)

/* Writes a message for the caller into why (n bytes, may be NULL or 0) and
 * returns -err: the "fill the reason, return the error" step every
 * function that reports a why/n pair ends with. Logs nothing. */
int pfs_why(char *why, size_t n, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif /* PFS_LOG_H */
