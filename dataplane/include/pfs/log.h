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

/* How a line looks: text ("pfs: info: msg") or one JSON object a line with
 * the field names of the operator's zap logs ({"level":"info","ts":...,
 * "logger":"pfs","msg":"..."}), ts in one of zap's time encodings. */
enum pfs_log_format {
	PFS_LOG_TEXT = 0,
	PFS_LOG_JSON,
};
enum pfs_log_time {
	PFS_LOG_TIME_EPOCH = 0, /* float seconds, zap's default */
	PFS_LOG_TIME_MILLIS, /* float milliseconds */
	PFS_LOG_TIME_NANO, /* integer nanoseconds */
	PFS_LOG_TIME_ISO8601, /* "2026-12-04T15:06:00.123Z" */
	PFS_LOG_TIME_RFC3339, /* "2026-12-04T15:06:00Z" */
	PFS_LOG_TIME_RFC3339NANO, /* "2026-12-04T15:06:00.123456789Z" */
};
void pfs_log_set_format(enum pfs_log_format format, enum pfs_log_time time);
/* "text"/"json", "debug"/"info"/"warn"/"error", and zap's time encoding
 * names ("epoch", "millis", "nano", "iso8601", "rfc3339", "rfc3339nano")
 * into their values; 0 or -EINVAL. */
int pfs_log_parse_format(const char *s, enum pfs_log_format *out);
int pfs_log_parse_level(const char *s, enum pfs_log_level *out);
int pfs_log_parse_time(const char *s, enum pfs_log_time *out);

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
