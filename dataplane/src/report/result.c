// SPDX-License-Identifier: Apache-2.0
/*
 * Result output. Builders live on the caller's stack; nothing here is
 * shared between threads. The JSON buffer is the 4 KiB termination-message
 * limit itself, so a result that fits the buffer fits the pod message.
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pfs/result.h"

__attribute__((format(printf, 2, 3))) static void put(struct pfs_json *j, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (j->overflow)
		return;
	va_start(ap, fmt);
	n = vsnprintf(j->buf + j->len, sizeof(j->buf) - j->len, fmt, ap);
	va_end(ap);
	/* Keep 2 bytes for the closing brace and the terminator. */
	if (n < 0 || j->len + n >= sizeof(j->buf) - 2) {
		j->overflow = true;
		return;
	}
	j->len += n;
}

static void key(struct pfs_json *j, const char *k)
{
	put(j, "%s\"%s\":", j->first ? "" : ",", k);
	j->first = false;
}

void pfs_json_begin(struct pfs_json *j)
{
	j->len = 0;
	j->overflow = false;
	j->first = true;
	put(j, "{");
}

void pfs_json_str(struct pfs_json *j, const char *k, const char *v, size_t max)
{
	char esc[1600];
	size_t o = 0;

	key(j, k);
	if (!v) {
		put(j, "null");
		return;
	}
	if (max > 256 * 5)
		max = 256 * 5;
	for (size_t i = 0; v[i] && i < max && o < sizeof(esc) - 8; i++) {
		unsigned char c = (unsigned char)v[i];

		if (c == '"' || c == '\\') {
			esc[o++] = '\\';
			esc[o++] = (char)c;
		} else if (c < 0x20) {
			o += snprintf(esc + o, sizeof(esc) - o, "\\u%04x", c);
		} else {
			esc[o++] = (char)c;
		}
	}
	esc[o] = '\0';
	put(j, "\"%s\"", esc);
}

void pfs_json_u64(struct pfs_json *j, const char *k, uint64_t v)
{
	key(j, k);
	put(j, "%llu", (unsigned long long)v);
}

void pfs_json_num(struct pfs_json *j, const char *k, double v, int prec)
{
	key(j, k);
	if (v != v || v > 1e300 || v < -1e300)
		put(j, "null");
	else
		put(j, "%.*f", prec, v);
}

void pfs_json_hex(struct pfs_json *j, const char *k, uint64_t v, int width)
{
	key(j, k);
	put(j, "\"0x%0*llx\"", width, (unsigned long long)v);
}

void pfs_json_bool(struct pfs_json *j, const char *k, bool v)
{
	key(j, k);
	put(j, "%s", v ? "true" : "false");
}

void pfs_json_ints(struct pfs_json *j, const char *k, const int *v, int n)
{
	key(j, k);
	put(j, "[");
	for (int i = 0; i < n; i++)
		put(j, "%s%d", i ? "," : "", v[i]);
	put(j, "]");
}

void pfs_json_u64s(struct pfs_json *j, const char *k, const uint64_t *v, int n)
{
	key(j, k);
	put(j, "[");
	for (int i = 0; i < n; i++)
		put(j, "%s%" PRIu64, i ? "," : "", v[i]);
	put(j, "]");
}

void pfs_json_obj(struct pfs_json *j, const char *k)
{
	key(j, k);
	put(j, "{");
	j->first = true;
}

void pfs_json_close(struct pfs_json *j)
{
	put(j, "}");
	j->first = false;
}

const char *pfs_json_end(struct pfs_json *j)
{
	if (j->overflow) {
		snprintf(j->buf, sizeof(j->buf),
			 "{\"ok\":false,\"error\":\"result exceeded %d bytes\"}", PFS_RESULT_MAX);
		return j->buf;
	}
	j->buf[j->len++] = '}';
	j->buf[j->len] = '\0';
	return j->buf;
}

int pfs_result_emit(const char *json, const char *path)
{
	size_t n = strlen(json);
	int fd, err = 0;

	printf("%s\n", json);
	fflush(stdout);
	if (!path)
		return 0;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, json, n) != (ssize_t)n)
		err = -EIO;
	if (close(fd) && !err)
		err = -errno;
	return err;
}

static void csv_field(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s == '\n' ? ' ' : *s, f);
	}
	fputc('"', f);
}

int pfs_csv_append(const char *path, const struct pfs_csv_row *r)
{
	FILE *f = fopen(path, "a");
	struct stat st;

	if (!f)
		return -errno;
	if (!fstat(fileno(f), &st) && st.st_size == 0)
		fprintf(f, "label,purpose,size_mb,elapsed_s,effective_mb_s,user_s,sys_s,"
			   "mb_per_cpu_s,integrity,pthreads,notes\n");
	csv_field(f, r->label);
	fputc(',', f);
	csv_field(f, r->purpose);
	fprintf(f, ",%.2f,%.4f,%.1f,%.3f,%.3f,%.1f,", r->size_mb, r->elapsed_s, r->effective_mb_s,
		r->user_s, r->sys_s, r->mb_per_cpu_s);
	csv_field(f, r->integrity);
	fprintf(f, ",%d,", r->pthreads);
	csv_field(f, r->notes);
	fputc('\n', f);
	return fclose(f) ? -errno : 0;
}

const char *pfs_label(enum pfs_gram_mode mode, const char *transport, char *buf, size_t n)
{
	switch (mode) {
	case PFS_MODE_PAYLOAD:
		snprintf(buf, n, "PFS-With-Payload-%s", transport);
		break;
	case PFS_MODE_OFFSET:
		snprintf(buf, n, "Native PFS Offset-only Mode - %s", transport);
		break;
	case PFS_MODE_ARITH:
		snprintf(buf, n, "Native PFS Arithmetic Mode - %s", transport);
		break;
	case PFS_MODE_DELTA:
		snprintf(buf, n, "PFS-Delta-%s", transport);
		break;
	}
	return buf;
}

const char *pfs_purpose(enum pfs_gram_mode mode)
{
	return mode == PFS_MODE_PAYLOAD || mode == PFS_MODE_DELTA ? "Transfer" : "Transfer|pCPU";
}
