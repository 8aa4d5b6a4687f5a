// SPDX-License-Identifier: Apache-2.0
/*
 * Logging. A single global level read on every call; set once at start-up by
 * the CLI (-v/-q) before any worker thread exists, so no locking is needed.
 * Each message is formatted into one buffer and written with one write() so
 * lines from different threads never interleave mid-line.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pfs/log.h"

static enum pfs_log_level pfs_level = PFS_LOG_INFO;

static const char *const level_names[] = {
	[PFS_LOG_ERROR] = "error",
	[PFS_LOG_WARN] = "warn",
	[PFS_LOG_INFO] = "info",
	[PFS_LOG_DEBUG] = "debug",
};

void pfs_log_set_level(enum pfs_log_level level)
{
	pfs_level = level;
}

enum pfs_log_level pfs_log_get_level(void)
{
	return pfs_level;
}

void pfs_log(enum pfs_log_level level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	if (level > pfs_level)
		return;
	n = snprintf(buf, sizeof(buf), "pfs: %s: ", level_names[level]);
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	if (n > 0 && buf[n - 1] != '\n')
		buf[n++] = '\n';
	(void)!write(STDERR_FILENO, buf, n);
}

int pfs_why(char *why, size_t n, int err, const char *fmt, ...)
{
	va_list ap;

	if (why && n) {
		va_start(ap, fmt);
		vsnprintf(why, n, fmt, ap);
		va_end(ap);
	}
	return -err;
}
