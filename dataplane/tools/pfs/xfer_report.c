// SPDX-License-Identifier: Apache-2.0
/*
 * The result of a transfer of any mode (xfer_args.h): one JSON object on
 * stdout and into --result-file, a CSV row with --csv, and the exit code.
 * What is the same for every mode is written here; a mode that reports
 * more (delta) registers a struct pfs_cli_xfer_hook in its xfer_args
 * before reporting, so this file knows no mode's own members.
 * Single-threaded, once at the end of a command.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "acquire.h"
#include "cli.h"
#include "xfer_args.h"
#include "pfs/integrity.h"
#include "pfs/log.h"
#include "pfs/pcore.h"
#include "pfs/xfer.h"

int pfs_cli_xfer_exit(int err, const struct pfs_xfer_result *r)
{
	if (err && r->transport_unavailable)
		return PFS_EXIT_UNAVAILABLE;
	if (err == -EPERM)
		return PFS_EXIT_REFUSED;
	if (err == -ETIMEDOUT)
		return PFS_EXIT_TIMEOUT;
	if (err)
		return PFS_EXIT_ERROR;
	/* NA: --integrity none and the counts agreed. */
	return r->verdict == PFS_VERDICT_MISMATCH ? PFS_EXIT_MISMATCH : PFS_EXIT_OK;
}

static const char *verdict_str(const struct pfs_xfer_result *r)
{
	return r->verdict == PFS_VERDICT_OK	  ? "OK" :
	       r->verdict == PFS_VERDICT_MISMATCH ? "MISMATCH" :
						    "NA";
}

/* Where this side ran: the CPUs it was allowed (in a Guaranteed pod under the
 * static CPU manager, the ones Kubernetes assigned) and their NUMA node. */
static void placement_json(struct pfs_json *j)
{
	int cpus[64], n = pfs_pcore_allowed_cpus(cpus, 64), node;

	if (n <= 0)
		return;
	node = pfs_pcore_cpus_node(cpus, n);
	/* Up to 64 CPUs; a wider set is summarised by its node alone. */
	if (n < 64)
		pfs_json_ints(j, "cpus", cpus, n);
	if (node >= 0)
		pfs_json_u64(j, "numa_node", (uint64_t)node);
}

static void checksum_json(struct pfs_json *j, const char *key, const char *peer_key,
			  const struct pfs_xfer_result *r, int digits)
{
	pfs_json_hex(j, key, r->crc, digits);
	if (r->peer_crc_valid)
		pfs_json_hex(j, peer_key, r->peer_crc, digits);
	else
		pfs_json_str(j, peer_key, NULL, 0);
}

/* The datagram transports' counters (udp, afxdp); nothing for tcp. */
static void dgrams_json(struct pfs_json *j, const struct pfs_dgram_stats *g)
{
	if (!g->sent && !g->received)
		return;
	pfs_json_obj(j, "datagrams");
	pfs_json_u64(j, "sent", g->sent);
	pfs_json_u64(j, "received", g->received);
	pfs_json_u64(j, "retransmitted", g->retransmitted);
	pfs_json_u64(j, "naks", g->naks);
	pfs_json_u64(j, "duplicates", g->duplicates);
	pfs_json_u64(j, "out_of_order", g->out_of_order);
	pfs_json_u64(j, "socket_drops", g->dropped);
	pfs_json_u64(j, "forged", g->forged);
	pfs_json_u64(j, "conflicts", g->conflicts);
	if (g->test_dropped)
		pfs_json_u64(j, "test_dropped", g->test_dropped);
	pfs_json_close(j);
}

/* The "notes" of a result: the user's, then what this run was. */
static void notes_str(const struct xfer_args *a, const struct pfs_blob *blob,
		      const struct pfs_xfer_result *r, char *buf, size_t n)
{
	snprintf(buf, n,
		 "%s%s%s; %s; blob=%s; %u desc/gram; len %u..%u align %u; pattern=%s; "
		 "integrity=%s; crc32c=%s",
		 a->notes ? a->notes : "", a->notes ? "; " : "", a->sender ? "sender" : "receiver",
		 r->peer[0] ? r->peer : "no peer",
		 blob ? pfs_page_kind_str(pfs_blob__page_kind(blob)) : "none", a->desc_per_gram,
		 a->sched.min_len, a->sched.max_len, a->sched.align,
		 a->sched.pattern == PFS_PATTERN_RANDOM ? "random" : "seq",
		 pfs_integrity_str(a->integrity), pfs_crc32c_impl());
}

/* The rates and checksums of a result; a mode's hook writes its own
 * integrity members. */
static void transfer_json(struct pfs_json *j, const struct xfer_args *a,
			  const struct pfs_xfer_result *r)
{
	double mb = r->bytes / 1e6, cpu = r->user_s + r->sys_s;

	pfs_json_num(j, "size_mb", mb, 3);
	pfs_json_u64(j, "bytes", r->bytes);
	pfs_json_num(j, "elapsed_s", r->elapsed_s, 6);
	pfs_json_num(j, "effective_mb_s", r->elapsed_s > 0 ? mb / r->elapsed_s : 0, 1);
	pfs_json_num(j, "user_s", r->user_s, 3);
	pfs_json_num(j, "sys_s", r->sys_s, 3);
	pfs_json_num(j, "cpu_s", cpu, 3);
	pfs_json_num(j, "mb_per_cpu_s", cpu > 0 ? mb / cpu : 0, 1);
	pfs_json_str(j, "integrity", verdict_str(r), 10);
	pfs_json_u64(j, "pthreads", 1);
	if (a->report_hook.integrity) {
		a->report_hook.integrity(j, a->report_hook.ctx, r);
	} else {
		pfs_json_str(j, "integrity_alg", pfs_integrity_str(a->integrity), 8);
		/* "crc32c"/"peer_crc32c" stay for readers that predate --integrity. */
		if (a->integrity == PFS_INTEGRITY_CRC32C)
			checksum_json(j, "crc32c", "peer_crc32c", r, 8);
		if (a->integrity != PFS_INTEGRITY_NONE)
			checksum_json(j, "checksum", "peer_checksum", r, 16);
		pfs_json_str(j, "crc32c_impl", pfs_crc32c_impl(), 24);
	}
	pfs_json_u64(j, "descs", r->descs);
	pfs_json_u64(j, "grams", r->grams);
	pfs_json_u64(j, "wire_bytes", r->wire_bytes);
	pfs_json_u64(j, "decode_errors", r->stats.errors);
	/* Receiver: connections dropped while it waited for its sender
	 * (strangers, unauthenticated; pfs_xfer_result.dropped). */
	pfs_json_u64(j, "dropped_connections", r->dropped);
	dgrams_json(j, &r->dgrams);
}

void pfs_cli_xfer_report(const struct xfer_args *a, const struct pfs_blob *blob, uint64_t fp,
			 const struct pfs_xfer_result *r, int err, int rc)
{
	double mb = r->bytes / 1e6, cpu = r->user_s + r->sys_s;
	char label[64], notes[400];
	struct pfs_json j;

	pfs_label(a->mode, a->transport->label, label, sizeof(label));
	notes_str(a, blob, r, notes, sizeof(notes));
	pfs_json_begin(&j);
	pfs_json_bool(&j, "ok", rc == PFS_EXIT_OK);
	pfs_json_str(&j, "cmd", a->sender ? "send" : "recv", 8);
	pfs_json_str(&j, "label", label, 64);
	pfs_json_str(&j, "purpose", pfs_purpose(a->mode), 16);
	pfs_json_str(&j, "side", a->sender ? "sender" : "receiver", 10);
	pfs_json_str(&j, "transport", a->transport->name, 8);
	pfs_json_str(&j, "mode", pfs_mode_str(a->mode), 10);
	pfs_json_str(&j, "peer", r->peer[0] ? r->peer : NULL, 64);
	transfer_json(&j, a, r);
	if (r->path[0])
		pfs_json_str(&j, "path", r->path, sizeof(r->path));
	if (r->afxdp_mode[0])
		pfs_json_str(&j, "afxdp_mode", r->afxdp_mode, sizeof(r->afxdp_mode));
	placement_json(&j);
	if (a->report_hook.member)
		a->report_hook.member(&j, a->report_hook.ctx, r);
	if (blob)
		pfs_cli_blob_json(&j, blob, fp);
	pfs_json_hex(&j, "peer_fingerprint", r->peer_fingerprint, 16);
	pfs_json_str(&j, "notes", notes, 400);
	pfs_json_u64(&j, "exit_code", rc);
	pfs_json_str(&j, "error",
		     err || rc ? (r->error[0] ? r->error : "integrity MISMATCH") : NULL, 700);
	if (pfs_result_emit(pfs_json_end(&j), a->result_file))
		pfs_err("cannot write the result to %s: %s", a->result_file, strerror(errno));
	if (a->csv) {
		double eff = r->elapsed_s > 0 ? mb / r->elapsed_s : 0;
		struct pfs_csv_row row = { label,
					   pfs_purpose(a->mode),
					   mb,
					   r->elapsed_s,
					   eff,
					   r->user_s,
					   r->sys_s,
					   cpu > 0 ? mb / cpu : 0,
					   verdict_str(r),
					   1,
					   notes };

		if (pfs_csv_append(a->csv, &row))
			pfs_err("cannot append to %s: %s", a->csv, strerror(errno));
	}
}
