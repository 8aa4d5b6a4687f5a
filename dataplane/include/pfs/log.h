/* SPDX-License-Identifier: Apache-2.0 */
/* One logging function for the whole data plane. Messages go to stderr so
 * that stdout stays reserved for the JSON/CSV result; nothing on the hot path
 * logs per packet. */
#ifndef PFS_LOG_H
#define PFS_LOG_H

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

#endif /* PFS_LOG_H */
