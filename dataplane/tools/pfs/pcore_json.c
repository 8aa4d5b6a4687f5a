// SPDX-License-Identifier: Apache-2.0
/*
 * The result of `pfs pcore run`: one JSON object (< 4 KiB, so it also fits
 * a Kubernetes termination message) on stdout and optionally into
 * --result-file. Written into a fixed buffer on the control thread after
 * the workers are joined; with many pcores the per-core arrays give way to
 * their min/max so the object stays whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "pcore_json.h"
#include "pfs/integrity.h"
#include "pfs/log.h"

__attribute__((format(printf, 2, 3))) static void jput(struct pfs_pcore_jbuf *j, const char *fmt,
						       ...)
{
	va_list ap;
	int n;

	if (j->overflow)
		return;
	va_start(ap, fmt);
	n = vsnprintf(j->p + j->len, j->cap - j->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= j->cap - j->len)
		j->overflow = true;
	else
		j->len += n;
}

static void jstr(struct pfs_pcore_jbuf *j, const char *key, const char *s)
{
	if (!s) {
		jput(j, "\"%s\":null,", key);
		return;
	}
	jput(j, "\"%s\":\"", key);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			jput(j, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			jput(j, "\\u%04x", *s);
		else
			jput(j, "%c", *s);
	}
	jput(j, "\",");
}

static void jvalue(struct pfs_pcore_jbuf *j, enum pfs_op op, const struct pfs_pcore_result *r)
{
	if (!r->value_valid)
		jput(j, "null");
	else if (op == PFS_OP_CRC32C)
		jput(j, "\"0x%08x\"", (uint32_t)r->value);
	else if (op == PFS_OP_FNV)
		jput(j, "\"0x%016llx\"", (unsigned long long)r->value);
	else
		jput(j, "%llu", (unsigned long long)r->value);
}

static const char *const result_kind[PFS_OP__COUNT] = {
	[PFS_OP_XOR] = "bytes modified",
	[PFS_OP_ADD] = "bytes modified",
	[PFS_OP_COUNTEQ] = "count of bytes equal to imm, per pass",
	[PFS_OP_FNV] = "FNV-1a 64 over per-descriptor FNV-1a 64 hashes (le64), per pass",
	[PFS_OP_CRC32C] = "CRC32C of the range, per pass",
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(const double *v, unsigned n)
{
	double s[PFS_PCORE_MAX_ROUNDS];

	if (!n)
		return 0;
	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(*s), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* What was run: op, CPUs, page, NUMA, range, schedule, how it ended. */
static void json_setup(struct pfs_pcore_jbuf *j, const struct pfs_pcore_outcome *oc)
{
	const struct pfs_pcore_opts *o = &oc->a->o;
	int node = pfs_pcore_cpus_node(oc->cpus, (int)o->pcores);

	jstr(j, "label", "pCPU Offset-mode");
	jstr(j, "op", pfs_op_str(o->op));
	jput(j, "\"imm\":%u,\"pcores\":%u,\"cpus\":[", o->imm, o->pcores);
	for (unsigned i = 0; i < o->pcores; i++)
		jput(j, "%s%d", i ? "," : "", oc->cpus[i]);
	jput(j, "],");
	jstr(j, "isa", o->kernels->name);
	jstr(j, "crc32c_impl", pfs_crc32c_impl());
	jstr(j, "page", pfs_page_kind_str(pfs_blob__page_kind(oc->blob)));
	jstr(j, "page_fallback", pfs_blob__fallback_reason(oc->blob));
	jstr(j, "numa", oc->numa_note);
	if (node >= 0)
		jput(j, "\"numa_node\":%d,", node);
	jput(j,
	     "\"range_off\":%llu,\"range_len\":%llu,\"desc_len\":%u,\"dpf\":%u,"
	     "\"align\":%u,\"ring_slots\":%u,",
	     (unsigned long long)o->range_off, (unsigned long long)o->range_len, o->desc_len,
	     o->dpf, o->align, o->ring_slots);
	if (o->duration_s > 0)
		jput(j, "\"duration_s\":%.3f,", o->duration_s);
	else
		jput(j, "\"passes\":%llu,", (unsigned long long)o->passes);
	jput(j, "\"rounds\":%u,\"warmup_s\":%.3f,\"complete\":%s,", oc->rounds, oc->warmup_s,
	     oc->pc->complete ? "true" : "false");
	jstr(j, "stopped_by", oc->stop_signal ? "signal" : NULL);
}

/* Per pcore: rates, CPU seconds, ring stalls; or their min/max and sums. */
static void json_cores(struct pfs_pcore_jbuf *j, const struct pfs_pcore_result *pc, bool per_core)
{
	double lo = 1e300, hi = 0;
	uint64_t empty = 0;

	if (per_core) {
		jput(j, "\"per_core_MBps\":[");
		for (unsigned i = 0; i < pc->ncores; i++)
			jput(j, "%s%.1f", i ? "," : "",
			     pfs_pcore_mbps(pc->core[i].bytes, pc->seconds));
		jput(j, "],\"per_core_cpu_s\":[");
		for (unsigned i = 0; i < pc->ncores; i++)
			jput(j, "%s%.3f", i ? "," : "", pc->core[i].cpu_s);
		jput(j, "],\"ring_stalls\":{\"window_full\":%llu,\"consumer_empty\":[",
		     (unsigned long long)pc->window_full_waits);
		for (unsigned i = 0; i < pc->ncores; i++)
			jput(j, "%s%llu", i ? "," : "",
			     (unsigned long long)pc->core[i].empty_waits);
		jput(j, "],\"consumer_wait_s\":[");
		for (unsigned i = 0; i < pc->ncores; i++)
			jput(j, "%s%.4f", i ? "," : "", pc->core[i].wait_s);
		jput(j, "]},");
		return;
	}
	for (unsigned i = 0; i < pc->ncores; i++) {
		double m = pfs_pcore_mbps(pc->core[i].bytes, pc->seconds);

		lo = m < lo ? m : lo;
		hi = m > hi ? m : hi;
		empty += pc->core[i].empty_waits;
	}
	jput(j,
	     "\"per_core_MBps\":{\"min\":%.1f,\"max\":%.1f},"
	     "\"ring_stalls\":{\"window_full\":%llu,\"consumer_empty\":%llu},",
	     lo, hi, (unsigned long long)pc->window_full_waits, (unsigned long long)empty);
}

/* The plain-threads baseline and the ratio of the medians. */
static void json_baseline(struct pfs_pcore_jbuf *j, const struct pfs_pcore_outcome *oc, double pc_m)
{
	const struct pfs_pcore_result *pc = oc->pc, *bl = oc->bl;
	enum pfs_op op = oc->a->o.op;
	double bl_m = median(oc->bl_mbps, oc->rounds);
	/* Baseline and pcores must agree on the result; in-place ops
	 * count bytes, which match only when both ran the same work. */
	bool match = !pfs_op_is_inplace(op) && pc->value_valid && bl->value_valid ?
			     pc->value == bl->value :
			     pc->complete && bl->complete && pc->bytes == bl->bytes;

	jput(j,
	     "\"baseline\":{\"label\":\"plain threads, static partition\","
	     "\"MBps\":%.1f,\"MB_per_cpu_s\":%.1f,\"seconds\":%.6f,\"bytes\":%llu,"
	     "\"result\":",
	     bl_m, oc->bl_cpu > 0 ? oc->bl_bytes / oc->bl_cpu / 1e6 : 0, bl->seconds,
	     (unsigned long long)bl->bytes);
	jvalue(j, op, bl);
	jput(j, ",\"result_match\":%s,\"complete\":%s", match ? "true" : "false",
	     bl->complete ? "true" : "false");
	if (oc->rounds > 1) {
		jput(j, ",\"rounds_MBps\":[");
		for (unsigned i = 0; i < oc->rounds; i++)
			jput(j, "%s%.1f", i ? "," : "", oc->bl_mbps[i]);
		jput(j, "]");
	}
	jput(j, "},\"CPUpwn\":%.3f,", bl_m > 0 ? pc_m / bl_m : 0);
}

void pfs_pcore_json(struct pfs_pcore_jbuf *j, const struct pfs_pcore_outcome *oc, bool per_core)
{
	const struct pfs_pcore_result *pc = oc->pc;
	enum pfs_op op = oc->a->o.op;
	double pc_m = median(oc->pc_mbps, oc->rounds);

	jput(j, "{");
	json_setup(j, oc);
	jput(j, "\"bytes\":%llu,\"seconds\":%.6f,\"MBps\":%.1f,\"MB_per_cpu_s\":%.1f,",
	     (unsigned long long)pc->bytes, pc->seconds, pc_m,
	     oc->pc_cpu > 0 ? oc->pc_bytes / oc->pc_cpu / 1e6 : 0);
	jput(j, "\"passes_done\":%llu,\"frames\":%llu,", (unsigned long long)pc->passes_done,
	     (unsigned long long)pc->frames);
	json_cores(j, pc, per_core);
	jput(j, "\"result\":{");
	jstr(j, "kind", result_kind[op]);
	jput(j, "\"value\":");
	jvalue(j, op, pc);
	jput(j, ",\"passes_agree\":%s},", pc->passes_agree ? "true" : "false");
	if (oc->have_crc_after)
		jput(j, "\"range_crc32c_after\":\"0x%08x\",", oc->crc_after);
	if (oc->rounds > 1) {
		jput(j, "\"rounds_MBps\":[");
		for (unsigned i = 0; i < oc->rounds; i++)
			jput(j, "%s%.1f", i ? "," : "", oc->pc_mbps[i]);
		jput(j, "],");
	}
	if (oc->bl)
		json_baseline(j, oc, pc_m);
	if (j->len && j->p[j->len - 1] == ',')
		j->len--;
	jput(j, "}\n");
}

static int write_result_file(const char *path, const char *s, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, len);
	if (close(fd) || n != (ssize_t)len)
		return -EIO;
	return 0;
}

int pfs_pcore_output(const struct pfs_pcore_outcome *oc)
{
	char buf[PFS_PCORE_JSON_MAX];
	struct pfs_pcore_jbuf j = { .p = buf, .cap = sizeof(buf) };

	pfs_pcore_json(&j, oc, true);
	if (j.overflow) {
		/* Many pcores: summarise the per-core arrays to stay < 4 KiB. */
		j = (struct pfs_pcore_jbuf){ .p = buf, .cap = sizeof(buf) };
		pfs_pcore_json(&j, oc, false);
	}
	if (j.overflow) {
		pfs_err("pcore: result does not fit in %d bytes", PFS_PCORE_JSON_MAX);
		return -E2BIG;
	}
	fwrite(buf, 1, j.len, stdout);
	fflush(stdout);
	if (oc->a->result_file) {
		int err = write_result_file(oc->a->result_file, buf, j.len);

		if (err) {
			pfs_err("pcore: cannot write %s: %s", oc->a->result_file, strerror(-err));
			return err;
		}
	}
	return 0;
}
