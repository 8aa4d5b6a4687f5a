// SPDX-License-Identifier: Apache-2.0
/*
 * `pfs pcore run` and `pfs pcore calibrate`.
 *
 * The control thread parses options, picks CPUs from the allowed set,
 * acquires the blob (one function: a fresh blob, a named blob, an fd from a
 * blob holder or the blob of a holder's socket), binds memory to the NUMA
 * node, runs the pcores and, with --baseline, the plain-threads baseline in
 * the same process, then prints the result (pcore_json.c). Logs go to
 * stderr.
 *
 * Signals: SIGTERM/SIGINT set the stop flag the library's pcore lead polls
 * between frames (struct pfs_pcore_opts.stop); the run stops, in-flight
 * frames finish, and the partial result is still printed (complete=false,
 * stopped_by="signal"), exit status 143/130.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acquire.h"
#include "cli.h"
#include "commands.h"
#include "pcore_calib.h"
#include "pcore_json.h"
#include "pfs/integrity.h"
#include "pfs/log.h"

static atomic_int stop_flag;
static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
	atomic_store(&stop_flag, 1);
}

static int parse_op(const char *arg, void *field)
{
	return pfs_op_parse(arg, field);
}

/* --isa: a name this CPU and build also run. */
static int parse_isa(const char *arg, void *field)
{
	if (pfs_ops_isa_parse(arg, field))
		return -EINVAL;
	if (!pfs_ops__kernels(*(enum pfs_ops_isa *)field)) {
		pfs_err("pcore: --isa %s is not supported by this CPU or build", arg);
		return -ECANCELED;
	}
	return 0;
}

#define AT(f) PFS_OPT_AT(struct pfs_pcore_args, f)
static const struct pfs_opt pcore_opts[] = {
	PFS_OPT_HEADING("run options:"),
	{ "op", PFS_OPT_FN, AT(o.op), "OP", "byte op to execute: xor, add, counteq, fnv, crc32c",
	  .parse = parse_op },
	{ "imm", PFS_OPT_U64, AT(o.imm), "N",
	  "immediate for xor/add, value for counteq (0..255, default 255)", .max = 255 },
	{ "range", PFS_OPT_RANGE, AT(range), "OFF:LEN",
	  "blob range (default: the whole blob); sizes as --size" },
	{ "pcores", PFS_OPT_U64, AT(o.pcores), "N", "pinned pcores (default: every allowed CPU)",
	  .min = 1, .max = PFS_PCORE_MAX },
	{ "threads", PFS_OPT_U64, AT(o.pcores), "N", "alias of --pcores (calibrate's word)",
	  .min = 1, .max = PFS_PCORE_MAX },
	{ "dpf", PFS_OPT_U64, AT(o.dpf), "N", "descriptors per frame (default 64)", .min = 1,
	  .max = 4096 },
	{ "desc-len", PFS_OPT_SIZE, AT(o.desc_len), "N",
	  "descriptor length, multiple of --align (default 64K)", .min = 1, .max = 1u << 30 },
	{ "align", PFS_OPT_SIZE, AT(o.align), "N",
	  "descriptor alignment, power of two (default 64)", .min = 1, .max = 1u << 30,
	  .flags = PFS_OPT_POW2 },
	{ "ring-slots", PFS_OPT_SIZE, AT(o.ring_slots), "N",
	  "descriptors per ring, power of two >= dpf (default 2 x dpf)", .min = 1, .max = 1u << 24,
	  .flags = PFS_OPT_POW2 },
	{ "duration", PFS_OPT_SECS, AT(o.duration_s), "S",
	  "run this many seconds instead of --passes", .flags = PFS_OPT_NONZERO },
	{ "passes", PFS_OPT_U64, AT(o.passes), "P", "passes over the range (default 1)", .min = 1 },
	{ "baseline", PFS_OPT_FLAG, AT(baseline), NULL,
	  "also run the plain-threads baseline; report CPUpwn" },
	{ "rounds", PFS_OPT_U64, AT(rounds), "N",
	  "alternate pcore/baseline N times (1..9), report medians", .min = 1,
	  .max = PFS_PCORE_MAX_ROUNDS },
	{ "numa-node", PFS_OPT_U64, AT(numa_node), "N",
	  "pin to node N's CPUs and bind memory there (here --numa "
	  "does the same)",
	  .max = 1023 },
	{ "isa", PFS_OPT_FN, AT(isa), "NAME",
	  "kernels: auto, avx2, sse2, neon, portable (default auto)", .parse = parse_isa },
	{ "blob-fd", PFS_OPT_U64, AT(blob_fd), "FD",
	  "a blob fd passed by a holder, instead of the blob options", .max = 1 << 20 },
	{ "result-file", PFS_OPT_STR, AT(result_file), "PATH", "also write the JSON result there" },
	{ 0 },
};
#undef AT

static const char pcore_usage[] =
	"usage: pfs pcore run --op {xor,add,counteq,fnv,crc32c} [options]\n"
	"       pfs pcore calibrate [--size S] [--page K] [--threads N] [--passes P]\n"
	"\n"
	"run executes a byte op over the blob on pinned pcores (and the plain-threads\n"
	"baseline); calibrate measures this machine's reference rates over the same\n"
	"range and CPUs. One JSON object on stdout.\n"
	"\n";

static const char pcore_footer[] =
	"\nA holder's blob (--blob-socket) is read-only: counteq, fnv, crc32c only.\n"
	"\nSince v0.2 pcore reads sizes (--size, --range, --desc-len, --align,\n"
	"--ring-slots) as every pfs command does: 1GB is 10^9 bytes (it was 2^30),\n"
	"1.5M is allowed, 010 is ten (it was eight); counts (--imm, --pcores, --dpf,\n"
	"--passes, --rounds, ...) are integers, so 1K is refused there.\n";

static int check_args(const struct pfs_cmdline *c, struct pfs_pcore_args *a, bool calibrate)
{
	bool shared = pfs_cli_share_set(&a->share);

	if (!calibrate && !pfs_opt_given(c, "op"))
		return pfs_opt_fail(c, "--op is required (xor, add, counteq, fnv, crc32c)");
	if (pfs_opt_given(c, "duration") && pfs_opt_given(c, "passes"))
		return pfs_opt_fail(c, "give --duration or --passes, not both");
	if (a->blob_fd >= 0 && a->cb.open_name)
		return pfs_opt_fail(c, "give --blob-name or --blob-fd, not both");
	if (shared && (a->blob_fd >= 0 || a->cb.open_name))
		return pfs_opt_fail(c, "give --blob-socket or --blob-name/--blob-fd, not both");
	/* A holder shares its blob read-only: transfers rely on its bytes
	 * matching its fingerprint. Refuse here rather than fault mid-run. */
	if (shared && pfs_opt_given(c, "op") && pfs_op_is_inplace(a->o.op))
		return pfs_opt_fail(c,
				    "--op %s writes the blob in place, but a holder's blob "
				    "(--blob-socket) is shared read-only; run it over a private "
				    "copy (--size/--page/--seed) instead",
				    pfs_op_str(a->o.op));
	return 0;
}

/* Returns 0, PFS_OPT_HELP, or -EINVAL (reported). */
static int parse_args(int argc, char **argv, struct pfs_pcore_args *a, bool calibrate)
{
	struct pfs_cmdline c = {
		.cmd = calibrate ? "pcore calibrate" : "pcore run",
		.usage = pcore_usage,
		.footer = pcore_footer,
		.group = { { pcore_opts, a },
			   { pfs_cli_blob_opts, &a->cb },
			   { pfs_cli_share_opts, &a->share } },
	};
	int err;

	memset(a, 0, sizeof(*a));
	a->o.sz = sizeof(a->o);
	a->o.imm = 0xff;
	a->o.dpf = 64;
	a->o.desc_len = 64 << 10;
	a->o.align = 64;
	a->o.passes = 1;
	a->numa_node = -1;
	a->blob_fd = -1;
	a->isa = pfs_ops__best()->isa;
	a->rounds = 1;
	pfs_cli_blob_init(&a->cb);
	err = pfs_opt_parse(&c, argc, argv);
	if (!err)
		err = check_args(&c, a, calibrate);
	if (err)
		return err;
	if (pfs_opt_given(&c, "duration"))
		a->o.passes = 0;
	/* --numa-node pins the CPUs and binds the blob; --numa (a blob
	 * option elsewhere) means the same here, as it always did. */
	if (a->numa_node < 0)
		a->numa_node = a->cb.opts.numa_node;
	a->cb.opts.numa_node = a->numa_node;
	if (!pfs_opt_given(&c, "ring-slots")) {
		uint32_t r = 1;

		/* Two frames per ring: enough to cover the refill, and a
		 * preempted pcore strands at most two frames. */
		while (r < 2 * a->o.dpf)
			r <<= 1;
		a->o.ring_slots = r;
	}
	a->have_range = pfs_opt_given(&c, "range");
	a->have_pcores = pfs_opt_given(&c, "pcores");
	if (a->have_range) {
		a->o.range_off = a->range.off;
		a->o.range_len = a->range.len;
	} else {
		a->o.range_len = a->cb.opts.size; /* the whole blob, once it exists */
	}
	a->o.kernels = pfs_ops__kernels(a->isa);
	return 0;
}

static int choose_cpus(struct pfs_pcore_args *a, int *cpus)
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

/* All blob acquisition lives here: a blob from a holder's socket, an fd
 * handed over by a holder, a named blob made by someone else, or a fresh
 * blob (grown to cover --range). */
static struct pfs_blob *acquire_blob(const struct pfs_pcore_args *a)
{
	struct pfs_cli_blob cb = a->cb;
	struct pfs_blob *blob;
	char why[768];

	if (pfs_cli_share_set(&a->share))
		return pfs_cli_share_get(&a->share, NULL, 0);
	if (a->blob_fd >= 0) {
		blob = pfs_blob__from_fd(a->blob_fd);
		if (!blob)
			pfs_err("pcore: cannot map blob fd %d: %s", a->blob_fd, strerror(errno));
		return blob;
	}
	if (a->have_range && a->o.range_off + a->o.range_len > cb.opts.size)
		cb.opts.size = a->o.range_off + a->o.range_len;
	blob = pfs_cli_blob_get(&cb, why, sizeof(why));
	if (!blob && !cb.open_name)
		pfs_err("pcore: %s", why);
	return blob;
}

/* The blob's pages on --numa-node (a note either way). 0 or -errno. */
static int bind_numa(const struct pfs_pcore_args *a, struct pfs_blob *blob, char *note, size_t n)
{
	int err;

	if (a->numa_node < 0) {
		snprintf(note, n, "not bound (no --numa-node; %d node(s))", pfs_pcore_numa_nodes());
		return 0;
	}
	err = pfs_pcore_numa_bind(a->numa_node, pfs_blob__data(blob), pfs_blob__size(blob), note,
				  n);
	if (err) {
		pfs_err("pcore: cannot bind memory to NUMA node %d: %s", a->numa_node,
			strerror(-err));
		return err;
	}
	pfs_info("pcore: %s", note);
	return 0;
}

static void install_signals(struct sigaction *old_term, struct sigaction *old_int)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	atomic_store(&stop_flag, 0);
	stop_signal = 0;
	sigaction(SIGTERM, &sa, old_term);
	sigaction(SIGINT, &sa, old_int);
}

/* Untimed warm-up: one read-only sweep of the range on the same CPUs, so
 * whichever side runs first does not pay for first touches the host still
 * owes us (page backing, TLB, caches). */
static int warm_up(const struct pfs_pcore_args *a, struct pfs_blob *blob,
		   struct pfs_pcore_outcome *oc)
{
	struct pfs_pcore_opts w = a->o;
	int err;

	w.op = PFS_OP_COUNTEQ;
	w.passes = 1;
	w.duration_s = 0;
	err = pfs_pcore__baseline(&w, pfs_blob__data(blob), pfs_blob__size(blob), oc->pc);
	oc->warmup_s = oc->pc->seconds;
	/* A signal during the warm-up leaves no pcore result. */
	memset(oc->pc, 0, sizeof(*oc->pc));
	return err;
}

/* One side of a round into @r; its rate, bytes and CPU seconds summed. */
static int run_side(const struct pfs_pcore_args *a, struct pfs_blob *blob, bool pcores,
		    struct pfs_pcore_result *r, double *mbps, double *bytes, double *cpu)
{
	uint64_t size = pfs_blob__size(blob);
	int err = pcores ? pfs_pcore__run(&a->o, pfs_blob__data(blob), size, r) :
			   pfs_pcore__baseline(&a->o, pfs_blob__data(blob), size, r);

	if (err)
		return err;
	*mbps = pfs_pcore_mbps(r->bytes, r->seconds);
	*bytes += r->bytes;
	for (unsigned i = 0; i < r->ncores; i++)
		*cpu += r->core[i].cpu_s;
	return 0;
}

/* The rounds: they alternate which side goes first (pcore first in round
 * 0, so range_crc32c_after describes the pcores' work). 0, or the exit
 * code of a failure (usage: the library refused the pcores' options). */
static int run_rounds(const struct pfs_pcore_args *a, struct pfs_blob *blob,
		      struct pfs_pcore_outcome *oc)
{
	int err;

	for (unsigned r = 0; r < a->rounds && !atomic_load(&stop_flag); r++) {
		for (int side = 0; side < 2; side++) {
			bool pcore_side = (side == 0) == (r % 2 == 0);

			if (atomic_load(&stop_flag))
				break;
			if (!pcore_side) {
				if (!a->baseline)
					continue;
				err = run_side(a, blob, false, oc->bl, &oc->bl_mbps[r],
					       &oc->bl_bytes, &oc->bl_cpu);
				if (err)
					return PFS_EXIT_ERROR;
				oc->bl_rounds = r + 1;
				continue;
			}
			err = run_side(a, blob, true, oc->pc, &oc->pc_mbps[r], &oc->pc_bytes,
				       &oc->pc_cpu);
			if (err)
				return err == -EINVAL ? PFS_EXIT_USAGE : PFS_EXIT_ERROR;
			oc->rounds = r + 1;
			if (r == 0 && pfs_op_is_inplace(a->o.op)) {
				/* Outside the timed run: the range as the pcores
				 * left it, before the baseline modifies it. */
				oc->crc_after = pfs_crc32c(0, pfs_blob__data(blob) + a->o.range_off,
							   a->o.range_len);
				oc->have_crc_after = true;
			}
		}
	}
	return 0;
}

/* Warm-up, rounds, result; the exit code. */
static int measure(struct pfs_pcore_args *a, struct pfs_blob *blob, struct pfs_pcore_outcome *oc)
{
	struct pfs_pcore_result *bl = NULL;
	int err, rc = PFS_EXIT_ERROR;

	oc->pc = calloc(1, sizeof(*oc->pc));
	oc->bl = bl = a->baseline ? calloc(1, sizeof(*oc->bl)) : NULL;
	if (!oc->pc || (a->baseline && !oc->bl)) {
		pfs_err("pcore: out of memory");
		goto out_free;
	}
	err = warm_up(a, blob, oc);
	if (err) {
		rc = err == -EINVAL ? PFS_EXIT_USAGE : PFS_EXIT_ERROR;
		goto out_free;
	}
	pfs_info("pcore: running %s on %u pcore(s), %llu bytes from offset %llu, %s kernels",
		 pfs_op_str(a->o.op), a->o.pcores, (unsigned long long)a->o.range_len,
		 (unsigned long long)a->o.range_off, a->o.kernels->name);
	rc = run_rounds(a, blob, oc);
	if (rc)
		goto out_free;
	if (oc->bl && oc->bl_rounds < oc->rounds)
		oc->bl = NULL; /* stopped before the baseline ran: no ratio */
	oc->stop_signal = stop_signal;
	if (pfs_pcore_output(oc))
		rc = PFS_EXIT_ERROR;
	else
		rc = stop_signal ? 128 + stop_signal : PFS_EXIT_OK;
out_free:
	free(oc->pc);
	free(bl);
	return rc;
}

static int cmd_run(int argc, char **argv)
{
	static int cpus[PFS_PCORE_MAX];
	struct pfs_pcore_args a;
	struct pfs_pcore_outcome oc = { .a = &a, .cpus = cpus };
	struct sigaction old_term, old_int;
	char numa_note[128] = "";
	struct pfs_blob *blob;
	const char *why;
	int err, rc = PFS_EXIT_ERROR;

	err = parse_args(argc, argv, &a, false);
	if (err)
		return pfs_exit_parse(err);
	if (a.o.desc_len % a.o.align) {
		pfs_err("pcore: --desc-len %u is not a multiple of --align %u", a.o.desc_len,
			a.o.align);
		return PFS_EXIT_USAGE;
	}
	if (a.o.ring_slots < a.o.dpf) {
		pfs_err("pcore: --ring-slots %u is smaller than --dpf %u", a.o.ring_slots, a.o.dpf);
		return PFS_EXIT_USAGE;
	}
	/* Before the CPU choice: the CPUs a pod gets are not this host's. */
	if (pfs_cli_check_args)
		return PFS_EXIT_OK;
	if (choose_cpus(&a, cpus) < 0)
		return PFS_EXIT_USAGE;
	a.o.cpus = cpus;
	install_signals(&old_term, &old_int);
	blob = acquire_blob(&a);
	if (!blob)
		goto out_signals;
	if (!a.have_range)
		a.o.range_len = pfs_blob__size(blob);
	if (bind_numa(&a, blob, numa_note, sizeof(numa_note)))
		goto out_blob;
	a.o.stop = &stop_flag;
	if (pfs_pcore__check_opts(&a.o, pfs_blob__size(blob), &why)) {
		pfs_err("pcore: %s", why);
		rc = PFS_EXIT_USAGE;
		goto out_blob;
	}
	oc.blob = blob;
	oc.numa_note = numa_note;
	rc = measure(&a, blob, &oc);
out_blob:
	pfs_blob__close(blob);
out_signals:
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGINT, &old_int, NULL);
	return rc;
}

/* calibrate's result, one JSON line: the rates, the kernel that won each
 * limit and every candidate kernel's rate ("kernels_MBps"). */
static void calib_json(const struct pfs_pcore_calib *c, const struct pfs_pcore_args *a,
		       enum pfs_page_kind page)
{
	static const char *const tried_keys[PFS_CALIB_TRIED__COUNT] = {
		[PFS_CALIB_TRIED_READ_1T] = "read_1t",	 [PFS_CALIB_TRIED_READ_NT] = "read_nt",
		[PFS_CALIB_TRIED_COPY_1T] = "memcpy_1t", [PFS_CALIB_TRIED_COPY_NT] = "memcpy_nt",
		[PFS_CALIB_TRIED_RMW_NT] = "rmw_nt",	 [PFS_CALIB_TRIED_RMW_1T] = "rmw_1t",
	};
	static const char *const cpu_keys[7] = { "read_1t",	   "read_nt",
						 "memcpy_1t",	   "memcpy_nt",
						 "crc32c_1core",   "fnv_naive_1core",
						 "fnv_multi_1core" };
	struct pfs_json j;

	pfs_json_begin(&j);
	pfs_json_str(&j, "label", "pcore calibration", 64);
	pfs_json_u64(&j, "bytes", a->o.range_len);
	pfs_json_u64(&j, "passes", a->o.passes);
	pfs_json_u64(&j, "threads", c->threads);
	pfs_json_str(&j, "page", pfs_page_kind_str(page), 16);
	pfs_json_str(&j, "crc32c_impl", pfs_crc32c_impl(), 64);
	pfs_json_str(&j, "isa", pfs_ops__best()->name, 32);
	pfs_json_str(&j, "rate", "best pass", 32);
	pfs_json_str(&j, "read_impl", c->read_impl_nt, 32);
	pfs_json_str(&j, "read_impl_1t", c->read_impl_1t, 32);
	pfs_json_str(&j, "read_impl_nt", c->read_impl_nt, 32);
	pfs_json_num(&j, "read_MBps_1t", c->read_1t, 1);
	pfs_json_num(&j, "read_MBps_nt", c->read_nt, 1);
	pfs_json_num(&j, "memcpy_MBps_1t", c->memcpy_1t, 1);
	pfs_json_num(&j, "memcpy_MBps_nt", c->memcpy_nt, 1);
	pfs_json_str(&j, "memcpy_impl_1t", c->memcpy_impl_1t, 32);
	pfs_json_str(&j, "memcpy_impl_nt", c->memcpy_impl_nt, 32);
	pfs_json_num(&j, "memcpy_glibc_MBps_1t", c->memcpy_glibc_1t, 1);
	pfs_json_num(&j, "memcpy_glibc_MBps_nt", c->memcpy_glibc_nt, 1);
	pfs_json_num(&j, "memcpy_ntstore_MBps_1t", c->memcpy_ntstore_1t, 1);
	pfs_json_num(&j, "memcpy_ntstore_MBps_nt", c->memcpy_ntstore_nt, 1);
	pfs_json_num(&j, "rmw_MBps_nt", c->rmw_nt, 1);
	pfs_json_str(&j, "rmw_impl_nt", c->rmw_impl_nt, 32);
	pfs_json_num(&j, "rmw_MBps_1t", c->rmw_1t, 1);
	pfs_json_str(&j, "rmw_impl_1t", c->rmw_impl_1t, 32);
	pfs_json_str(&j, "memcpy_dst_page", c->memcpy_dst_page, 16);
	pfs_json_num(&j, "crc32c_MBps_1core", c->crc32c_1core, 1);
	pfs_json_num(&j, "fnv_naive_MBps_1core", c->fnv_naive_1core, 1);
	pfs_json_num(&j, "fnv_multi_MBps_1core", c->fnv_multi_1core, 1);
	pfs_json_obj(&j, "kernels_MBps");
	for (int i = 0; i < PFS_CALIB_TRIED__COUNT; i++) {
		pfs_json_obj(&j, tried_keys[i]);
		for (unsigned k = 0; k < c->tried[i].n; k++)
			pfs_json_num(&j, c->tried[i].name[k], c->tried[i].mbps[k], 1);
		pfs_json_close(&j);
	}
	pfs_json_close(&j);
	pfs_json_obj(&j, "MB_per_cpu_s");
	for (int i = 0; i < 7; i++)
		pfs_json_num(&j, cpu_keys[i], c->cpu[i], 1);
	pfs_json_num(&j, "rmw_nt", c->rmw_nt_cpu, 1);
	pfs_json_num(&j, "rmw_1t", c->rmw_1t_cpu, 1);
	pfs_json_close(&j);
	pfs_result_emit(pfs_json_end(&j), NULL);
}

static int cmd_calibrate(int argc, char **argv)
{
	static int cpus[PFS_PCORE_MAX];
	struct pfs_pcore_args a;
	struct pfs_pcore_calib c;
	struct pfs_blob *blob;
	uint64_t size;
	int err;

	err = parse_args(argc, argv, &a, true);
	if (err)
		return pfs_exit_parse(err);
	if (a.o.duration_s > 0) {
		pfs_err("pcore: calibrate takes --passes, not --duration");
		return PFS_EXIT_USAGE;
	}
	if (pfs_cli_check_args)
		return PFS_EXIT_OK;
	if (choose_cpus(&a, cpus) < 0)
		return PFS_EXIT_USAGE;
	blob = acquire_blob(&a);
	if (!blob)
		return PFS_EXIT_ERROR;
	size = pfs_blob__size(blob);
	if (!a.have_range)
		a.o.range_len = size;
	if (a.o.range_off > size || a.o.range_len > size - a.o.range_off || !a.o.range_len) {
		pfs_err("pcore: range extends past the end of the blob");
		pfs_blob__close(blob);
		return PFS_EXIT_USAGE;
	}
	err = pfs_pcore_calib__measure(pfs_blob__data(blob) + a.o.range_off, a.o.range_len, cpus,
				       a.o.pcores, (unsigned)a.o.passes, &c);
	if (err) {
		pfs_err("pcore: calibrate: %s", strerror(-err));
		pfs_blob__close(blob);
		return PFS_EXIT_ERROR;
	}
	calib_json(&c, &a, pfs_blob__page_kind(blob));
	pfs_blob__close(blob);
	return PFS_EXIT_OK;
}

int pfs_cmd_pcore(int argc, char **argv)
{
	struct pfs_cmdline c = {
		.usage = pcore_usage,
		.footer = pcore_footer,
		.group = { { pcore_opts, NULL },
			   { pfs_cli_blob_opts, NULL },
			   { pfs_cli_share_opts, NULL } },
	};

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		pfs_opt_usage(&c, argc < 2 ? stderr : stdout);
		return argc < 2 ? PFS_EXIT_USAGE : PFS_EXIT_OK;
	}
	if (!strcmp(argv[1], "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(argv[1], "calibrate"))
		return cmd_calibrate(argc - 1, argv + 1);
	pfs_err("pcore: unknown subcommand '%s' (run, calibrate)", argv[1]);
	return PFS_EXIT_USAGE;
}
