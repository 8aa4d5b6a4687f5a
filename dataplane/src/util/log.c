// SPDX-License-Identifier: Apache-2.0
/*
 * Logging. A single global level and format read on every call; set once at
 * start-up by the CLI (-v/-q, --log-level, --log-format) before any worker
 * thread exists, so no locking is needed.
 * Each message is formatted into one buffer and written with one write() so
 * lines from different threads never interleave mid-line.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pfs/log.h"
#include "util/utf8.h"

static enum pfs_log_level pfs_level = PFS_LOG_INFO;
static enum pfs_log_format pfs_format = PFS_LOG_TEXT;
static enum pfs_log_time pfs_time = PFS_LOG_TIME_EPOCH;

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

static const char *const format_names[] = { [PFS_LOG_TEXT] = "text", [PFS_LOG_JSON] = "json" };
static const char *const time_names[] = {
	[PFS_LOG_TIME_EPOCH] = "epoch",	    [PFS_LOG_TIME_MILLIS] = "millis",
	[PFS_LOG_TIME_NANO] = "nano",	    [PFS_LOG_TIME_ISO8601] = "iso8601",
	[PFS_LOG_TIME_RFC3339] = "rfc3339", [PFS_LOG_TIME_RFC3339NANO] = "rfc3339nano",
};

void pfs_log_set_format(enum pfs_log_format format, enum pfs_log_time time)
{
	pfs_format = format;
	pfs_time = time;
}

static int pick(const char *s, const char *const *names, int n)
{
	for (int i = 0; s && i < n; i++)
		if (names[i] && !strcmp(s, names[i]))
			return i;
	return -1;
}

int pfs_log_parse_format(const char *s, enum pfs_log_format *out)
{
	int i = pick(s, format_names, 2);

	return i < 0 ? -EINVAL : (*out = (enum pfs_log_format)i, 0);
}

int pfs_log_parse_level(const char *s, enum pfs_log_level *out)
{
	int i = pick(s, level_names, 4);

	return i < 0 ? -EINVAL : (*out = (enum pfs_log_level)i, 0);
}

int pfs_log_parse_time(const char *s, enum pfs_log_time *out)
{
	int i = pick(s, time_names, 6);

	return i < 0 ? -EINVAL : (*out = (enum pfs_log_time)i, 0);
}

/* "ts" in the chosen encoding, as zap writes it. */
static int ts(char *o, size_t n)
{
	struct timespec t;
	struct tm tm;
	char d[32];

	clock_gettime(CLOCK_REALTIME, &t);
	gmtime_r(&t.tv_sec, &tm);
	strftime(d, sizeof(d), "%Y-%m-%dT%H:%M:%S", &tm);
	switch (pfs_time) {
	case PFS_LOG_TIME_MILLIS:
		return snprintf(o, n, "%.6f", (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6);
	case PFS_LOG_TIME_NANO:
		return snprintf(o, n, "%lld", (long long)t.tv_sec * 1000000000LL + t.tv_nsec);
	case PFS_LOG_TIME_ISO8601:
		return snprintf(o, n, "\"%s.%03ldZ\"", d, t.tv_nsec / 1000000);
	case PFS_LOG_TIME_RFC3339:
		return snprintf(o, n, "\"%sZ\"", d);
	case PFS_LOG_TIME_RFC3339NANO:
		return snprintf(o, n, "\"%s.%09ldZ\"", d, t.tv_nsec);
	default:
		return snprintf(o, n, "%lld.%06ld", (long long)t.tv_sec, t.tv_nsec / 1000);
	}
}

/* @msg (@len bytes) as a JSON string body into @o (at least 6 * @len + 1):
 * quotes, backslashes and control bytes escaped, a byte that starts no
 * valid UTF-8 sequence (a file name can hold any) as U+FFFD. */
static size_t escape(char *o, const char *msg, size_t len)
{
	size_t w = 0;

	for (size_t i = 0; i < len;) {
		unsigned char c = (unsigned char)msg[i];
		size_t k;

		if (c == '"' || c == '\\') {
			o[w++] = '\\';
			o[w++] = (char)c;
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			w += (size_t)sprintf(o + w, "\\u%04x", c);
			i++;
		} else if (c < 0x80) {
			o[w++] = (char)c;
			i++;
		} else if ((k = utf8_seq((const uint8_t *)msg + i, len - i)) > 0) {
			memcpy(o + w, msg + i, k);
			w += k;
			i += k;
		} else {
			w += (size_t)sprintf(o + w, "\\ufffd");
			i++;
		}
	}
	return w;
}

void pfs_log(enum pfs_log_level level, const char *fmt, ...)
{
	char msg[1024], buf[6 * 1024 + 128];
	va_list ap;
	int n;

	if (level > pfs_level)
		return;
	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(msg) - 1)
		n = sizeof(msg) - 1;
	while (n > 0 && msg[n - 1] == '\n')
		n--;
	if (pfs_format == PFS_LOG_JSON) {
		int h = snprintf(buf, sizeof(buf), "{\"level\":\"%s\",\"ts\":", level_names[level]);

		h += ts(buf + h, sizeof(buf) - (size_t)h);
		h += snprintf(buf + h, sizeof(buf) - (size_t)h, ",\"logger\":\"pfs\",\"msg\":\"");
		h += (int)escape(buf + h, msg, (size_t)n);
		h += snprintf(buf + h, sizeof(buf) - (size_t)h, "\"}\n");
		n = h;
	} else {
		n = snprintf(buf, sizeof(buf), "pfs: %s: %.*s\n", level_names[level], n, msg);
	}
	(void)!write(STDERR_FILENO, buf, (size_t)n);
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
