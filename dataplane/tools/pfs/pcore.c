// SPDX-License-Identifier: Apache-2.0
/*
 * `pfs pcore run` and `pfs pcore calibrate`.
 *
 * The control thread parses options, picks CPUs from the allowed set,
 * acquires the blob (one function: a fresh blob, a named blob or an fd
 * from a blob holder), binds memory to the NUMA node, runs the pcores and,
 * with --baseline, the plain-threads baseline in the same process, then
 * prints one JSON object (< 4 KiB, so it also fits a Kubernetes termination
 * message) on stdout and optionally into --result-file. Logs go to stderr.
 *
 * Signals: SIGTERM/SIGINT set a flag the pcore lead polls between frames;
 * the run stops, in-flight frames finish, and the partial result is still
 * printed (complete=false, stopped_by="signal"), exit status 143/130.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pfs/blob.h"
#include "cli.h"
#include "cli_share.h"
#include "pfs/integrity.h"
#include "pfs/log.h"
#include "pfs/pcore.h"
#include "pcore.h"

#define EXIT_USAGE 2
#define JSON_MAX 4096
#define MAX_ROUNDS 9

static atomic_int stop_flag;
static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
	atomic_store(&stop_flag, 1);
}

/* ------------------------------------------------------------- parsing */

int pfs_pcore_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	errno = 0;
	if (!s || *s == '-')
		return -EINVAL;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': mul = 1ULL << 10; end++; break;
	case 'm': case 'M': mul = 1ULL << 20; end++; break;
	case 'g': case 'G': mul = 1ULL << 30; end++; break;
	case 't': case 'T': mul = 1ULL << 40; end++; break;
	default: break;
	}
	if (mul > 1 && (!strcmp(end, "iB") || !strcmp(end, "B")))
		end += strlen(end);
	if (*end || (v && mul > UINT64_MAX / v))
		return -EINVAL;
	*out = v * mul;
	return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
	return pfs_pcore_parse_size(s, out);
}

static int parse_range(const char *s, uint64_t *off, uint64_t *len)
{
	const char *colon = strchr(s, ':');
	char buf[64];

	if (!colon || (size_t)(colon - s) >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, colon - s);
	buf[colon - s] = '\0';
	if (pfs_pcore_parse_size(buf, off) || pfs_pcore_parse_size(colon + 1, len))
		return -EINVAL;
	return 0;
}

struct args {
	struct pfs_pcore_opts o;
	bool have_range, baseline, have_pcores;
	uint64_t blob_size;
	enum pfs_page_kind page;
	uint64_t seed;
	enum pfs_blob_fill fill;
	int numa_node;
	int blob_fd;
	const char *blob_name, *blob_dir;
	struct pfs_cli_share share;	/* --blob-socket/--blob-token-file */
	const char *result_file;
	enum pfs_ops_isa isa;
	unsigned rounds;
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: pfs pcore run --op {xor,add,counteq,fnv,crc32c} [options]\n"
"       pfs pcore calibrate [--blob-size S] [--page K] [--threads N] [--passes P]\n"
"run options:\n"
"  --op OP            byte op to execute\n"
"  --imm N            immediate for xor/add, value for counteq (0..255, default 255)\n"
"  --range OFF:LEN    blob range (default: the whole blob); sizes take K/M/G\n"
"  --pcores N         pinned pcores (default: every allowed CPU)\n"
"  --dpf N            descriptors per frame (default 64)\n"
"  --desc-len N       descriptor length, multiple of --align (default 64K)\n"
"  --align N          descriptor alignment, power of two (default 64)\n"
"  --ring-slots N     descriptors per ring, power of two >= dpf (default 2 x dpf)\n"
"  --duration S | --passes P   run time or passes over the range (default 1 pass)\n"
"  --baseline         also run the plain-threads baseline; report CPUpwn\n"
"  --rounds N         alternate pcore/baseline N times (1..%d), report medians\n"
"  --numa-node N      pin to node N's CPUs and bind memory there\n"
"  --isa NAME         kernels: auto, avx2, sse2, neon, portable (default auto)\n"
"blob (one of):\n"
"  --blob-size S --page {4k,thp,2m,1g} --seed N   a fresh seeded blob (default 1G on 2m)\n"
"  --fill {seed,zero}  how that fresh blob is filled (default seed)\n"
"  --blob-name NAME [--blob-dir DIR]          an existing named blob\n"
"  --blob-fd FD                               a blob fd passed by a holder\n"
"  --blob-socket PATH --blob-token-file PATH  the blob from a holder (pfs blob serve);\n"
"                                             read-only ops (counteq, fnv, crc32c) only\n"
"output:\n"
"  --result-file PATH also write the JSON result there\n",
		MAX_ROUNDS);
}

enum {
	OPT_OP = 256, OPT_IMM, OPT_RANGE, OPT_PCORES, OPT_DPF, OPT_DESC_LEN,
	OPT_ALIGN, OPT_RING, OPT_DURATION, OPT_PASSES, OPT_BASELINE, OPT_ROUNDS,
	OPT_NUMA, OPT_ISA, OPT_BLOB_SIZE, OPT_PAGE, OPT_SEED, OPT_FILL, OPT_BLOB_NAME,
	OPT_BLOB_DIR, OPT_BLOB_FD, OPT_BLOB_SHARE, OPT_RESULT, OPT_THREADS, OPT_HELP,
};

static const struct option long_opts[] = {
	{ "op", required_argument, NULL, OPT_OP },
	{ "imm", required_argument, NULL, OPT_IMM },
	{ "range", required_argument, NULL, OPT_RANGE },
	{ "pcores", required_argument, NULL, OPT_PCORES },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "dpf", required_argument, NULL, OPT_DPF },
	{ "desc-len", required_argument, NULL, OPT_DESC_LEN },
	{ "align", required_argument, NULL, OPT_ALIGN },
	{ "ring-slots", required_argument, NULL, OPT_RING },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "passes", required_argument, NULL, OPT_PASSES },
	{ "baseline", no_argument, NULL, OPT_BASELINE },
	{ "rounds", required_argument, NULL, OPT_ROUNDS },
	{ "numa-node", required_argument, NULL, OPT_NUMA },
	{ "isa", required_argument, NULL, OPT_ISA },
	{ "blob-size", required_argument, NULL, OPT_BLOB_SIZE },
	{ "page", required_argument, NULL, OPT_PAGE },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "fill", required_argument, NULL, OPT_FILL },
	{ "blob-name", required_argument, NULL, OPT_BLOB_NAME },
	{ "blob-dir", required_argument, NULL, OPT_BLOB_DIR },
	{ "blob-fd", required_argument, NULL, OPT_BLOB_FD },
	PFS_CLI_SHARE_LONGOPTS(OPT_BLOB_SHARE),
	{ "result-file", required_argument, NULL, OPT_RESULT },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

static int bad(const char *opt, const char *val)
{
	pfs_err("pcore: invalid %s '%s' (see pfs pcore --help)", opt, val);
	return -EINVAL;
}

/* Returns 0, 1 for --help, or -EINVAL (already reported). */
static int parse_args(int argc, char **argv, struct args *a, bool calibrate)
{
	uint64_t v;
	bool have_op = false, have_dur = false, have_passes = false;
	bool have_ring = false, have_blob_src = false;
	int c, li = 0;

	memset(a, 0, sizeof(*a));
	a->o.sz = sizeof(a->o);
	a->o.imm = 0xff;
	a->o.dpf = 64;
	a->o.desc_len = 64 << 10;
	a->o.align = 64;
	a->o.passes = 1;
	a->blob_size = 1ULL << 30;
	a->page = PFS_PAGE_2M;
	a->seed = 1;
	a->fill = PFS_FILL_SEED;
	a->numa_node = -1;
	a->blob_fd = -1;
	a->isa = pfs_ops__best()->isa;
	a->rounds = 1;

	optind = 0;	/* full getopt reset: callable more than once */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", long_opts, &li)) != -1) {
		switch (c) {
		case OPT_OP:
			if (pfs_op_parse(optarg, &a->o.op))
				return bad("--op", optarg);
			have_op = true;
			break;
		case OPT_IMM:
			if (parse_u64(optarg, &v) || v > 255)
				return bad("--imm (0..255)", optarg);
			a->o.imm = (uint8_t)v;
			break;
		case OPT_RANGE:
			if (parse_range(optarg, &a->o.range_off, &a->o.range_len))
				return bad("--range (OFF:LEN)", optarg);
			a->have_range = true;
			break;
		case OPT_PCORES:
		case OPT_THREADS:
			if (parse_u64(optarg, &v) || !v || v > PFS_PCORE_MAX)
				return bad(c == OPT_PCORES ? "--pcores (1..256)" : "--threads (1..256)", optarg);
			a->o.pcores = (unsigned)v;
			a->have_pcores = true;
			break;
		case OPT_DPF:
			if (parse_u64(optarg, &v) || !v || v > 4096)
				return bad("--dpf (1..4096)", optarg);
			a->o.dpf = (uint32_t)v;
			break;
		case OPT_DESC_LEN:
			if (parse_u64(optarg, &v) || !v || v > (1u << 30))
				return bad("--desc-len (1..1G)", optarg);
			a->o.desc_len = (uint32_t)v;
			break;
		case OPT_ALIGN:
			if (parse_u64(optarg, &v) || !v || (v & (v - 1)) || v > (1u << 30))
				return bad("--align (power of two)", optarg);
			a->o.align = (uint32_t)v;
			break;
		case OPT_RING:
			if (parse_u64(optarg, &v) || !v || (v & (v - 1)) || v > (1u << 24))
				return bad("--ring-slots (power of two <= 16M)", optarg);
			a->o.ring_slots = (uint32_t)v;
			have_ring = true;
			break;
		case OPT_DURATION: {
			char *end;
			double d = strtod(optarg, &end);

			if (*end || !(d > 0) || d > 86400)
				return bad("--duration (seconds, > 0)", optarg);
			a->o.duration_s = d;
			have_dur = true;
			break;
		}
		case OPT_PASSES:
			if (parse_u64(optarg, &v) || !v)
				return bad("--passes (>= 1)", optarg);
			a->o.passes = v;
			have_passes = true;
			break;
		case OPT_BASELINE:
			a->baseline = true;
			break;
		case OPT_ROUNDS:
			if (parse_u64(optarg, &v) || !v || v > MAX_ROUNDS)
				return bad("--rounds (1..9)", optarg);
			a->rounds = (unsigned)v;
			break;
		case OPT_NUMA:
			if (parse_u64(optarg, &v) || v > 1023)
				return bad("--numa-node", optarg);
			a->numa_node = (int)v;
			break;
		case OPT_ISA:
			if (pfs_ops_isa_parse(optarg, &a->isa))
				return bad("--isa", optarg);
			if (!pfs_ops__kernels(a->isa)) {
				pfs_err("pcore: --isa %s is not supported by this CPU or build", optarg);
				return -EINVAL;
			}
			break;
		case OPT_BLOB_SIZE:
			if (parse_u64(optarg, &a->blob_size) || !a->blob_size)
				return bad("--blob-size", optarg);
			break;
		case OPT_PAGE:
			if (pfs_page_kind_parse(optarg, &a->page))
				return bad("--page (4k, thp, 2m, 1g)", optarg);
			break;
		case OPT_SEED:
			if (parse_u64(optarg, &a->seed))
				return bad("--seed", optarg);
			break;
		case OPT_FILL:
			if (!strcmp(optarg, "seed"))
				a->fill = PFS_FILL_SEED;
			else if (!strcmp(optarg, "zero"))
				a->fill = PFS_FILL_ZERO;
			else
				return bad("--fill (seed, zero)", optarg);
			break;
		case OPT_BLOB_NAME:
			a->blob_name = optarg;
			have_blob_src = true;
			break;
		case OPT_BLOB_DIR:
			a->blob_dir = optarg;
			break;
		case OPT_BLOB_FD:
			if (parse_u64(optarg, &v) || v > 1 << 20)
				return bad("--blob-fd", optarg);
			if (a->blob_name)
				return bad("--blob-fd (with --blob-name)", optarg);
			a->blob_fd = (int)v;
			have_blob_src = true;
			break;
		case OPT_BLOB_SHARE:
			if (pfs_cli_share_opt(&a->share, long_opts[li].name, optarg) < 0)
				return -EINVAL;
			have_blob_src = true;
			break;
		case OPT_RESULT:
			a->result_file = optarg;
			break;
		case OPT_HELP:
			usage(stdout);
			return 1;
		default:
			pfs_err("pcore: unknown or incomplete option '%s' (see pfs pcore --help)",
				argv[optind - 1]);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		pfs_err("pcore: unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	if (!calibrate && !have_op) {
		pfs_err("pcore: --op is required (xor, add, counteq, fnv, crc32c)");
		return -EINVAL;
	}
	if (have_dur && have_passes) {
		pfs_err("pcore: give --duration or --passes, not both");
		return -EINVAL;
	}
	if (have_dur)
		a->o.passes = 0;
	if (a->blob_fd >= 0 && a->blob_name) {
		pfs_err("pcore: give --blob-name or --blob-fd, not both");
		return -EINVAL;
	}
	if (pfs_cli_share_set(&a->share) && (a->blob_fd >= 0 || a->blob_name)) {
		pfs_err("pcore: give --blob-socket or --blob-name/--blob-fd, not both");
		return -EINVAL;
	}
	/* A holder shares its blob read-only: transfers rely on its bytes
	 * matching its fingerprint. Refuse here rather than fault mid-run. */
	if (pfs_cli_share_set(&a->share) && have_op && pfs_op_is_inplace(a->o.op)) {
		pfs_err("pcore: --op %s writes the blob in place, but a holder's blob "
			"(--blob-socket) is shared read-only; run it over a private copy "
			"(--blob-size/--page/--seed) instead", pfs_op_str(a->o.op));
		return -EINVAL;
	}
	(void)have_blob_src;
	if (!have_ring) {
		uint32_t r = 1;

		/* Two frames per ring: enough to cover the refill, and a
		 * preempted pcore strands at most two frames. */
		while (r < 2 * a->o.dpf)
			r <<= 1;
		a->o.ring_slots = r;
	}
	a->o.kernels = pfs_ops__kernels(a->isa);
	return 0;
}

/* ---------------------------------------------------------- placement */

static int choose_cpus(struct args *a, int *cpus)
{
	int n = pfs_pcore_allowed_cpus(cpus, PFS_PCORE_MAX);
	char list[256];
	size_t off = 0;

	if (n < 0) {
		pfs_err("pcore: cannot read the allowed CPU set: %s", strerror(-n));
		return n;
	}
	if (a->numa_node >= 0) {
		n = pfs_pcore_node_filter(a->numa_node, cpus, n);
		if (n < 0) {
			pfs_err("pcore: NUMA node %d is not online on this machine (%d node(s))",
				a->numa_node, pfs_pcore_numa_nodes());
			return n;
		}
		if (!n) {
			pfs_err("pcore: none of the allowed CPUs is on NUMA node %d", a->numa_node);
			return -EINVAL;
		}
	}
	for (int i = 0; i < n && off < sizeof(list) - 16; i++)
		off += snprintf(list + off, sizeof(list) - off, "%s%d", i ? "," : "", cpus[i]);
	if (!a->have_pcores)
		a->o.pcores = (unsigned)n;
	if ((int)a->o.pcores > n) {
		pfs_err("pcore: --pcores %u is more than the %d CPU(s) this process may run on "
			"(allowed: %s%s); each pcore needs a CPU of its own (in Kubernetes: a "
			"Guaranteed pod requesting %u whole CPUs under the static CPU manager)",
			a->o.pcores, n, list, a->numa_node >= 0 ? " on that NUMA node" : "",
			a->o.pcores);
		return -EINVAL;
	}
	return n;
}

/* All blob acquisition lives here: a fresh seeded blob, a named blob made
 * by someone else, or an fd handed over by a blob holder. */
static struct pfs_blob *acquire_blob(const struct args *a)
{
	struct pfs_blob *blob;

	if (pfs_cli_share_set(&a->share))
		return pfs_cli_share_get(&a->share, NULL, 0);
	if (a->blob_fd >= 0) {
		blob = pfs_blob__from_fd(a->blob_fd);
		if (!blob)
			pfs_err("pcore: cannot map blob fd %d: %s", a->blob_fd, strerror(errno));
		return blob;
	}
	if (a->blob_name) {
		blob = pfs_blob__open(a->blob_dir, a->blob_name);
		if (!blob)
			pfs_err("pcore: cannot open blob '%s': %s", a->blob_name, strerror(errno));
		return blob;
	}

	struct pfs_blob_opts bo = {
		.sz = sizeof(bo),
		.size = a->blob_size,
		.page = a->page,
		.fill = a->fill,
		.seed = a->seed,
		.numa_node = a->numa_node,
	};

	if (a->have_range && a->o.range_off + a->o.range_len > bo.size)
		bo.size = a->o.range_off + a->o.range_len;
	blob = pfs_blob__create(&bo);
	if (!blob)
		pfs_err("pcore: cannot create a %llu-byte blob: %s",
			(unsigned long long)bo.size, strerror(errno));
	return blob;
}

/* --------------------------------------------------------------- JSON */

struct jbuf {
	char *p;
	size_t len, cap;
	bool overflow;
};

__attribute__((format(printf, 2, 3)))
static void jput(struct jbuf *j, const char *fmt, ...)
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

static void jstr(struct jbuf *j, const char *key, const char *s)
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

static double mbps(uint64_t bytes, double s)
{
	return s > 0 ? bytes / s / 1e6 : 0;
}

static void jvalue(struct jbuf *j, enum pfs_op op, const struct pfs_pcore_result *r)
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
	double s[MAX_ROUNDS];

	if (!n)
		return 0;
	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(*s), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

struct outcome {
	const struct args *a;
	const struct pfs_blob *blob;
	const int *cpus;
	const char *numa_note;
	struct pfs_pcore_result *pc;		/* last round */
	struct pfs_pcore_result *bl;		/* last round, or NULL */
	double pc_mbps[MAX_ROUNDS], bl_mbps[MAX_ROUNDS];
	unsigned rounds, bl_rounds;
	double warmup_s;
	/* Over every round: bytes and thread CPU seconds, for MB/CPU-s. */
	double pc_bytes, pc_cpu, bl_bytes, bl_cpu;
	bool have_crc_after;
	uint32_t crc_after;
};

static void emit_json(struct jbuf *j, const struct outcome *oc, bool per_core)
{
	const struct args *a = oc->a;
	const struct pfs_pcore_opts *o = &a->o;
	const struct pfs_pcore_result *pc = oc->pc;
	double pc_m = median(oc->pc_mbps, oc->rounds);
	uint64_t empty = 0;

	jput(j, "{");
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
	{
		int node = pfs_pcore_cpus_node(oc->cpus, (int)o->pcores);

		if (node >= 0)
			jput(j, "\"numa_node\":%d,", node);
	}
	jput(j, "\"range_off\":%llu,\"range_len\":%llu,\"desc_len\":%u,\"dpf\":%u,"
		"\"align\":%u,\"ring_slots\":%u,",
	     (unsigned long long)o->range_off, (unsigned long long)o->range_len,
	     o->desc_len, o->dpf, o->align, o->ring_slots);
	if (o->duration_s > 0)
		jput(j, "\"duration_s\":%.3f,", o->duration_s);
	else
		jput(j, "\"passes\":%llu,", (unsigned long long)o->passes);
	jput(j, "\"rounds\":%u,\"warmup_s\":%.3f,\"complete\":%s,", oc->rounds, oc->warmup_s,
	     pc->complete ? "true" : "false");
	jstr(j, "stopped_by", stop_signal ? "signal" : NULL);
	for (unsigned i = 0; i < pc->ncores; i++)
		empty += pc->core[i].empty_waits;
	jput(j, "\"bytes\":%llu,\"seconds\":%.6f,\"MBps\":%.1f,\"MB_per_cpu_s\":%.1f,",
	     (unsigned long long)pc->bytes, pc->seconds, pc_m,
	     oc->pc_cpu > 0 ? oc->pc_bytes / oc->pc_cpu / 1e6 : 0);
	jput(j, "\"passes_done\":%llu,\"frames\":%llu,",
	     (unsigned long long)pc->passes_done, (unsigned long long)pc->frames);
	if (per_core) {
		jput(j, "\"per_core_MBps\":[");
		for (unsigned i = 0; i < pc->ncores; i++)
			jput(j, "%s%.1f", i ? "," : "", mbps(pc->core[i].bytes, pc->seconds));
		jput(j, "],\"per_core_cpu_s\":[");
		for (unsigned i = 0; i < pc->ncores; i++)
			jput(j, "%s%.3f", i ? "," : "", pc->core[i].cpu_s);
		jput(j, "],\"ring_stalls\":{\"window_full\":%llu,\"consumer_empty\":[",
		     (unsigned long long)pc->window_full_waits);
		for (unsigned i = 0; i < pc->ncores; i++)
			jput(j, "%s%llu", i ? "," : "", (unsigned long long)pc->core[i].empty_waits);
		jput(j, "],\"consumer_wait_s\":[");
		for (unsigned i = 0; i < pc->ncores; i++)
			jput(j, "%s%.4f", i ? "," : "", pc->core[i].wait_s);
		jput(j, "]},");
	} else {
		double lo = 1e300, hi = 0;

		for (unsigned i = 0; i < pc->ncores; i++) {
			double m = mbps(pc->core[i].bytes, pc->seconds);

			lo = m < lo ? m : lo;
			hi = m > hi ? m : hi;
		}
		jput(j, "\"per_core_MBps\":{\"min\":%.1f,\"max\":%.1f},"
			"\"ring_stalls\":{\"window_full\":%llu,\"consumer_empty\":%llu},",
		     lo, hi, (unsigned long long)pc->window_full_waits,
		     (unsigned long long)empty);
	}
	jput(j, "\"result\":{");
	jstr(j, "kind", result_kind[o->op]);
	jput(j, "\"value\":");
	jvalue(j, o->op, pc);
	jput(j, ",\"passes_agree\":%s},", pc->passes_agree ? "true" : "false");
	if (oc->have_crc_after)
		jput(j, "\"range_crc32c_after\":\"0x%08x\",", oc->crc_after);
	if (oc->rounds > 1) {
		jput(j, "\"rounds_MBps\":[");
		for (unsigned i = 0; i < oc->rounds; i++)
			jput(j, "%s%.1f", i ? "," : "", oc->pc_mbps[i]);
		jput(j, "],");
	}
	if (oc->bl) {
		const struct pfs_pcore_result *bl = oc->bl;
		double bl_m = median(oc->bl_mbps, oc->rounds);
		/* Baseline and pcores must agree on the result; in-place ops
		 * count bytes, which match only when both ran the same work. */
		bool match = !pfs_op_is_inplace(o->op) && pc->value_valid && bl->value_valid ?
			     pc->value == bl->value : pc->complete && bl->complete &&
			     pc->bytes == bl->bytes;

		jput(j, "\"baseline\":{\"label\":\"plain threads, static partition\","
			"\"MBps\":%.1f,\"MB_per_cpu_s\":%.1f,\"seconds\":%.6f,\"bytes\":%llu,"
			"\"result\":",
		     bl_m, oc->bl_cpu > 0 ? oc->bl_bytes / oc->bl_cpu / 1e6 : 0, bl->seconds,
		     (unsigned long long)bl->bytes);
		jvalue(j, o->op, bl);
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

static int output(const struct outcome *oc)
{
	char buf[JSON_MAX];
	struct jbuf j = { .p = buf, .cap = sizeof(buf) };

	emit_json(&j, oc, true);
	if (j.overflow) {
		/* Many pcores: summarise the per-core arrays to stay < 4 KiB. */
		j = (struct jbuf){ .p = buf, .cap = sizeof(buf) };
		emit_json(&j, oc, false);
	}
	if (j.overflow) {
		pfs_err("pcore: result does not fit in %d bytes", JSON_MAX);
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

/* -------------------------------------------------------------- run */

static void install_signals(struct sigaction *old_term, struct sigaction *old_int)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	atomic_store(&stop_flag, 0);
	stop_signal = 0;
	sigaction(SIGTERM, &sa, old_term);
	sigaction(SIGINT, &sa, old_int);
}

static int cmd_run(int argc, char **argv)
{
	struct args a;
	struct outcome oc = { .a = &a };
	struct sigaction old_term, old_int;
	static int cpus[PFS_PCORE_MAX];
	char numa_note[128] = "";
	struct pfs_pcore_result *bl_alloc = NULL;
	struct pfs_blob *blob;
	uint64_t size;
	int err, rc = 1;

	err = parse_args(argc, argv, &a, false);
	if (err)
		return err > 0 ? 0 : EXIT_USAGE;
	if (a.o.desc_len % a.o.align) {
		pfs_err("pcore: --desc-len %u is not a multiple of --align %u", a.o.desc_len, a.o.align);
		return EXIT_USAGE;
	}
	if (a.o.ring_slots < a.o.dpf) {
		pfs_err("pcore: --ring-slots %u is smaller than --dpf %u", a.o.ring_slots, a.o.dpf);
		return EXIT_USAGE;
	}
	/* Before the CPU choice: the CPUs a pod gets are not this host's. */
	if (pfs_cli_check_args)
		return 0;
	err = choose_cpus(&a, cpus);
	if (err < 0)
		return EXIT_USAGE;
	a.o.cpus = cpus;
	if (!a.have_range) {
		a.o.range_off = 0;
		a.o.range_len = a.blob_size;
	}

	install_signals(&old_term, &old_int);
	blob = acquire_blob(&a);
	if (!blob)
		goto out_signals;
	size = pfs_blob__size(blob);
	if (!a.have_range)
		a.o.range_len = size;
	if (a.numa_node >= 0) {
		err = pfs_pcore_numa_bind(a.numa_node, pfs_blob__data(blob), size,
					  numa_note, sizeof(numa_note));
		if (err) {
			pfs_err("pcore: cannot bind memory to NUMA node %d: %s", a.numa_node,
				strerror(-err));
			goto out_blob;
		}
		pfs_info("pcore: %s", numa_note);
	} else {
		snprintf(numa_note, sizeof(numa_note), "not bound (no --numa-node; %d node(s))",
			 pfs_pcore_numa_nodes());
	}
	a.o.stop = &stop_flag;
	{
		const char *why;

		if (pfs_pcore__check_opts(&a.o, size, &why)) {
			pfs_err("pcore: %s", why);
			rc = EXIT_USAGE;
			goto out_blob;
		}
	}

	oc.blob = blob;
	oc.cpus = cpus;
	oc.numa_note = numa_note;
	oc.pc = calloc(1, sizeof(*oc.pc));
	oc.bl = bl_alloc = a.baseline ? calloc(1, sizeof(*oc.bl)) : NULL;
	if (!oc.pc || (a.baseline && !oc.bl)) {
		pfs_err("pcore: out of memory");
		goto out_free;
	}
	/* Untimed warm-up: one read-only sweep of the range on the same
	 * CPUs, so whichever side runs first does not pay for first touches
	 * the host still owes us (page backing, TLB, caches). */
	{
		struct pfs_pcore_opts w = a.o;

		w.op = PFS_OP_COUNTEQ;
		w.passes = 1;
		w.duration_s = 0;
		err = pfs_pcore__baseline(&w, pfs_blob__data(blob), size, oc.pc);
		if (err) {
			rc = err == -EINVAL ? EXIT_USAGE : 1;
			goto out_free;
		}
		oc.warmup_s = oc.pc->seconds;
		/* A signal during the warm-up leaves no pcore result. */
		memset(oc.pc, 0, sizeof(*oc.pc));
	}
	pfs_info("pcore: running %s on %u pcore(s), %llu bytes from offset %llu, %s kernels",
		 pfs_op_str(a.o.op), a.o.pcores, (unsigned long long)a.o.range_len,
		 (unsigned long long)a.o.range_off, a.o.kernels->name);
	/* Rounds alternate which side goes first (pcore first in round 0,
	 * so range_crc32c_after describes the pcores' work). */
	for (unsigned r = 0; r < a.rounds && !atomic_load(&stop_flag); r++) {
		for (int side = 0; side < 2; side++) {
			bool pcore_side = (side == 0) == (r % 2 == 0);

			if (atomic_load(&stop_flag))
				break;
			if (!pcore_side) {
				if (!a.baseline)
					continue;
				err = pfs_pcore__baseline(&a.o, pfs_blob__data(blob), size, oc.bl);
				if (err)
					goto out_free;
				oc.bl_mbps[r] = mbps(oc.bl->bytes, oc.bl->seconds);
				oc.bl_rounds = r + 1;
				oc.bl_bytes += oc.bl->bytes;
				for (unsigned i = 0; i < oc.bl->ncores; i++)
					oc.bl_cpu += oc.bl->core[i].cpu_s;
				continue;
			}
			err = pfs_pcore__run(&a.o, pfs_blob__data(blob), size, oc.pc);
			if (err) {
				if (err == -EINVAL)
					rc = EXIT_USAGE;
				goto out_free;
			}
			oc.pc_mbps[r] = mbps(oc.pc->bytes, oc.pc->seconds);
			oc.rounds = r + 1;
			oc.pc_bytes += oc.pc->bytes;
			for (unsigned i = 0; i < oc.pc->ncores; i++)
				oc.pc_cpu += oc.pc->core[i].cpu_s;
			if (r == 0 && pfs_op_is_inplace(a.o.op)) {
				/* Outside the timed run: the range as the pcores
				 * left it, before the baseline modifies it. */
				oc.crc_after = pfs_crc32c(0, pfs_blob__data(blob) + a.o.range_off,
							  a.o.range_len);
				oc.have_crc_after = true;
			}
		}
	}
	if (oc.bl && oc.bl_rounds < oc.rounds)
		oc.bl = NULL;	/* stopped before the baseline ran: no ratio */
	err = output(&oc);
	if (err)
		rc = 1;
	else if (stop_signal)
		rc = 128 + stop_signal;
	else
		rc = 0;
out_free:
	free(oc.pc);
	free(bl_alloc);
out_blob:
	pfs_blob__close(blob);
out_signals:
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGINT, &old_int, NULL);
	return rc;
}

static int cmd_calibrate(int argc, char **argv)
{
	struct args a;
	struct pfs_pcore_calib c;
	static int cpus[PFS_PCORE_MAX];
	struct pfs_blob *blob;
	uint64_t size;
	int err;

	err = parse_args(argc, argv, &a, true);
	if (err)
		return err > 0 ? 0 : EXIT_USAGE;
	if (a.o.duration_s > 0) {
		pfs_err("pcore: calibrate takes --passes, not --duration");
		return EXIT_USAGE;
	}
	if (choose_cpus(&a, cpus) < 0)
		return EXIT_USAGE;
	blob = acquire_blob(&a);
	if (!blob)
		return 1;
	size = pfs_blob__size(blob);
	if (!a.have_range) {
		a.o.range_off = 0;
		a.o.range_len = size;
	}
	if (a.o.range_off > size || a.o.range_len > size - a.o.range_off || !a.o.range_len) {
		pfs_err("pcore: range extends past the end of the blob");
		pfs_blob__close(blob);
		return EXIT_USAGE;
	}
	err = pfs_pcore_calib__measure(pfs_blob__data(blob) + a.o.range_off, a.o.range_len,
				       cpus, a.o.pcores, (unsigned)a.o.passes, &c);
	if (err) {
		pfs_err("pcore: calibrate: %s", strerror(-err));
		pfs_blob__close(blob);
		return 1;
	}
	printf("{\"label\":\"pcore calibration\",\"bytes\":%llu,\"passes\":%llu,"
	       "\"threads\":%u,\"page\":\"%s\",\"crc32c_impl\":\"%s\",\"isa\":\"%s\","
	       "\"read_MBps_1t\":%.1f,\"read_MBps_nt\":%.1f,\"memcpy_MBps_1t\":%.1f,"
	       "\"memcpy_MBps_nt\":%.1f,\"memcpy_dst_page\":\"%s\",\"crc32c_MBps_1core\":%.1f,"
	       "\"fnv_naive_MBps_1core\":%.1f,\"fnv_multi_MBps_1core\":%.1f,"
	       "\"MB_per_cpu_s\":{\"read_1t\":%.1f,\"read_nt\":%.1f,\"memcpy_1t\":%.1f,"
	       "\"memcpy_nt\":%.1f,\"crc32c_1core\":%.1f,\"fnv_naive_1core\":%.1f,"
	       "\"fnv_multi_1core\":%.1f}}\n",
	       (unsigned long long)a.o.range_len, (unsigned long long)a.o.passes, c.threads,
	       pfs_page_kind_str(pfs_blob__page_kind(blob)), pfs_crc32c_impl(),
	       pfs_ops__best()->name, c.read_1t, c.read_nt, c.memcpy_1t, c.memcpy_nt,
	       c.memcpy_dst_page, c.crc32c_1core, c.fnv_naive_1core, c.fnv_multi_1core,
	       c.cpu[0], c.cpu[1], c.cpu[2], c.cpu[3], c.cpu[4], c.cpu[5], c.cpu[6]);
	pfs_blob__close(blob);
	return 0;
}

int pfs_cmd_pcore(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : 0;
	}
	if (!strcmp(argv[1], "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(argv[1], "calibrate"))
		return cmd_calibrate(argc - 1, argv + 1);
	pfs_err("pcore: unknown subcommand '%s' (run, calibrate)", argv[1]);
	return EXIT_USAGE;
}
