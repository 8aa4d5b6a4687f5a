/* SPDX-License-Identifier: Apache-2.0 */
/* Results: one JSON object per run (at most PFS_RESULT_MAX bytes, because the
 * operator reads it from a pod's termination message) and optional CSV rows
 * with the standardized fields: label, purpose, size_mb, elapsed_s,
 * effective_mb_s, user_s, sys_s, mb_per_cpu_s, integrity, pthreads, notes.
 * MB are decimal (10^6 bytes). The members of every result the operator reads
 * are described in result.schema.json beside this header; internal/result's
 * golden test holds the pfs binary to it. */
#ifndef PFS_RESULT_H
#define PFS_RESULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pfs/gram.h"

#define PFS_RESULT_MAX 4096

/* A JSON object built into a fixed buffer; strings are escaped and cut to
 * their per-field limit, and a builder that would overflow is marked. */
struct pfs_json {
	char buf[PFS_RESULT_MAX];
	size_t len;
	bool first;
	bool overflow;
};

void pfs_json_begin(struct pfs_json *j);
void pfs_json_str(struct pfs_json *j, const char *key, const char *val, size_t max);
void pfs_json_u64(struct pfs_json *j, const char *key, uint64_t v);
void pfs_json_num(struct pfs_json *j, const char *key, double v, int prec);
void pfs_json_hex(struct pfs_json *j, const char *key, uint64_t v, int width);
void pfs_json_bool(struct pfs_json *j, const char *key, bool v);
void pfs_json_ints(struct pfs_json *j, const char *key, const int *v, int n); /* [..] */
void pfs_json_u64s(struct pfs_json *j, const char *key, const uint64_t *v, int n); /* [..] */
void pfs_json_obj(struct pfs_json *j, const char *key); /* opens "key":{ */
void pfs_json_close(struct pfs_json *j); /* closes } */
/* Terminates the object; returns its text (a short error object if the
 * builder overflowed, which the limits above make impossible in practice). */
const char *pfs_json_end(struct pfs_json *j);

/* Emit @json on stdout (one line) and, when @path is set, into that file
 * (e.g. /dev/termination-log). 0 or -errno (file). */
int pfs_result_emit(const char *json, const char *path);

struct pfs_csv_row {
	const char *label;
	const char *purpose;
	double size_mb;
	double elapsed_s;
	double effective_mb_s;
	double user_s;
	double sys_s;
	double mb_per_cpu_s;
	const char *integrity;
	int pthreads;
	const char *notes;
};

/* Append a row to @path, writing the header first if the file is empty. */
int pfs_csv_append(const char *path, const struct pfs_csv_row *row);

/* Seed-001 labels: "PFS-With-Payload-TCP", "Native PFS Offset-only Mode -
 * TCP", "Native PFS Arithmetic Mode - TCP" (transport "TCP"). */
const char *pfs_label(enum pfs_gram_mode mode, const char *transport, char *buf, size_t n);
const char *pfs_purpose(enum pfs_gram_mode mode);

#endif /* PFS_RESULT_H */
