// SPDX-License-Identifier: Apache-2.0
/*
 * `pfs send` and `pfs recv`: one transfer over the chosen transport, one JSON result (stdout and
 * --result-file), optionally one CSV row. Each side reports what it
 * measured itself: its elapsed time and its own CPU time (getrusage).
 * Blob setup is timed separately and excluded from the transfer metrics.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_share.h"
#include "pfs/integrity.h"
#include "pfs/log.h"
#include "pfs/pcore.h"
#include "pfs/xdp.h"
#include "pfs/xfer.h"
#include "pfs/xsk.h"

#define INTEGRITY_HELP \
"  --integrity K         crc32c | fnv1a64 | none (default crc32c); both ends must\n" \
"                        agree (the receiver refuses another); none compares counts\n"

static const char send_usage[] =
"usage: pfs send --connect ADDR:PORT --mode MODE [options]\n"
"\n"
"Connects to `pfs recv`, proves the blob (version, mode, fingerprint), streams\n"
"grams of the schedule and prints the result (JSON) once the receiver has\n"
"returned its checksum and verdict.\n"
"\n"
"  --connect ADDR:PORT   numeric IPv4 (1.2.3.4:5000) or IPv6 ([::1]:5000)\n"
"  --mode MODE           payload | offset | arith\n"
"  --transport T         tcp | udp | afxdp, those built in (default tcp)\n"
"  --bytes N             effective bytes to move (default: the blob size)\n"
"  --desc-per-gram N     descriptors per gram (default 1024, max 65536)\n"
"  --min-len N --max-len N   descriptor lengths (default 64 .. 256K)\n"
"  --align N             offset/length alignment, power of 2 (default 64)\n"
"  --pattern P           seq | random (default seq)\n"
"  --range OFF:LEN       keep descriptors inside this part of the blob (default all)\n"
"  --sched-seed N        schedule seed (default 1)\n"
"  --gram-bytes N        payload bytes per gram in payload mode (default 4M)\n"
"  --connect-timeout S   keep retrying a refused connect this long (default 10)\n"
"  --timeout S           no progress for S seconds is an error (default: tcp 30,\n"
"                        udp and afxdp 5)\n"
INTEGRITY_HELP
"  --result-file PATH    also write the JSON there (e.g. /dev/termination-log)\n"
"  --csv PATH            append a CSV row (seed-001 fields)\n"
"  --notes TEXT          notes for the result row\n"
"\nLink (udp, afxdp):\n"
"  --ifname IF           interface to bind or attach to; afxdp also takes it from\n"
"                        AFXDP_DEVICES_* or PCIDEVICE_* (device plugins)\n"
"  --queues N            afxdp: AF_XDP sockets on queues 0..N-1 (default 1, max\n"
"                        16); a gram's fragments go out on queue seq % N\n"
"  --peer-mac MAC        the peer's MAC when it cannot be resolved (afxdp)\n"
"  --umem-page P         afxdp UMEM pages: auto | 2m | 4k (default auto: 2 MiB\n"
"                        hugepages when the pool has them)\n"
"  --mtu N               path MTU datagrams must fit (default: the MTU of\n"
"                        --ifname for udp and afxdp, else 1500)\n"
"  afxdp sending needs CAP_NET_RAW (+CAP_IPC_LOCK for a UMEM over the memlock\n"
"  limit); control, ACKs and NAKs use TCP over the same interface.\n"
"\n" PFS_CLI_BLOB_HELP PFS_CLI_SHARE_HELP
"\nExit: 0 OK, 1 error, 2 usage, 3 integrity MISMATCH, 4 refused by the\n"
"receiver (mode/version/blob), 5 timeout.\n";

static const char recv_usage[] =
"usage: pfs recv --listen ADDR:PORT --mode MODE [options]\n"
"\n"
"Accepts one sender, checks its HELLO (version, mode and, for offset and\n"
"arith, that the sender's blob fingerprint equals this one's), executes every\n"
"descriptor (CRC32C over the referenced bytes; payload mode over the payload)\n"
"and reports OK or MISMATCH against the sender's checksum.\n"
"\n"
"  --listen ADDR:PORT    address to bind (0.0.0.0:5000, [::]:5000)\n"
"  --mode MODE           payload | offset | arith\n"
"  --transport T         tcp | udp | afxdp, those built in (default tcp)\n"
"  --ready-file PATH     create PATH once a sender may start (readiness probes)\n"
"  --out FILE            also write the referenced bytes to FILE at their offsets\n"
"  --accept-timeout S    wait this long for a sender (default 60)\n"
"  --timeout S           no progress for S seconds is an error (default: tcp 30,\n"
"                        udp and afxdp 5)\n"
INTEGRITY_HELP
"  --result-file PATH    also write the JSON there (e.g. /dev/termination-log)\n"
"  --csv PATH            append a CSV row (seed-001 fields)\n"
"  --notes TEXT          notes for the result row\n"
"\nLink (udp, afxdp):\n"
"  --ifname IF           interface to bind or attach to; afxdp also takes it from\n"
"                        AFXDP_DEVICES_* or PCIDEVICE_* (device plugins)\n"
"  --queues N            afxdp: AF_XDP sockets on queues 0..N-1, all polled by one\n"
"                        thread (default: every RX queue of the interface, max 16)\n"
"  --attach MODE         afxdp: auto | native | generic XDP (default auto: native,\n"
"                        else generic with the reason logged)\n"
"  --umem-page P         afxdp UMEM pages: auto | 2m | 4k (default auto: 2 MiB\n"
"                        hugepages when the pool has them)\n"
"  --mtu N               path MTU datagrams must fit (default: the MTU of\n"
"                        --ifname for udp, else 1500)\n"
"  afxdp receiving needs CAP_NET_ADMIN, CAP_NET_RAW and CAP_BPF (+CAP_IPC_LOCK\n"
"  for a UMEM over the memlock limit); the program is detached on exit and on\n"
"  SIGTERM/SIGINT/SIGHUP.\n"
"  Test only: PFS_TEST_RX_DROP_PPM=N in the environment drops N per million\n"
"  received data datagrams on purpose (udp, afxdp) to exercise the repair\n"
"  plane where netem/netfilter cannot reach (AF_XDP bypasses both).\n"
"\n" PFS_CLI_BLOB_HELP PFS_CLI_SHARE_HELP
"(payload mode needs no blob on the receiver; none is created)\n"
"\nExit: 0 OK, 1 error, 2 usage, 3 integrity MISMATCH, 4 refused the sender\n"
"(mode/version/blob), 5 timeout.\n";

struct xfer_args {
	bool sender;
	const char *addr;
	const struct pfs_transport *transport;
	enum pfs_gram_mode mode;
	bool mode_set;
	struct pfs_cli_blob cb;
	struct pfs_cli_share share;	/* --blob-socket: the blob from a holder */
	struct pfs_sched_opts sched;
	uint64_t bytes;
	uint32_t desc_per_gram, gram_bytes;
	double connect_timeout, accept_timeout, timeout;
	const char *out, *result_file, *csv, *notes, *ready_file;
	const char *ifname, *peer_mac;
	uint32_t queues, mtu;
	enum pfs_xdp_attach xdp_attach;
	enum pfs_xsk_page umem_page;
	enum pfs_integrity integrity;
};

static int split_addr(const char *s, char *host, size_t n, uint16_t *port)
{
	const char *colon = strrchr(s, ':');
	uint64_t p;
	size_t hl;

	if (!colon || pfs_parse_u64(colon + 1, &p) || p > 65535)
		return -EINVAL;
	hl = colon - s;
	if (hl && s[0] == '[' && s[hl - 1] == ']') {
		s++;
		hl -= 2;
	}
	if (hl >= n)
		return -EINVAL;
	memcpy(host, s, hl);
	host[hl] = '\0';
	*port = (uint16_t)p;
	return 0;
}

static int parse_secs(const char *s, double *out)
{
	char *end;

	*out = strtod(s, &end);
	return *end || *out < 0 || *out > 86400 ? -EINVAL : 0;
}

static int parse_args(int argc, char **argv, struct xfer_args *a)
{
	static const struct option lo[] = {
		PFS_CLI_BLOB_LONGOPTS, PFS_CLI_SHARE_LONGOPTS(PFS_OPT_LONG),
		{ "connect", 1, 0, PFS_OPT_LONG }, { "listen", 1, 0, PFS_OPT_LONG },
		{ "mode", 1, 0, PFS_OPT_LONG }, { "bytes", 1, 0, PFS_OPT_LONG },
		{ "desc-per-gram", 1, 0, PFS_OPT_LONG }, { "min-len", 1, 0, PFS_OPT_LONG },
		{ "max-len", 1, 0, PFS_OPT_LONG }, { "align", 1, 0, PFS_OPT_LONG },
		{ "pattern", 1, 0, PFS_OPT_LONG }, { "sched-seed", 1, 0, PFS_OPT_LONG },
		{ "gram-bytes", 1, 0, PFS_OPT_LONG }, { "connect-timeout", 1, 0, PFS_OPT_LONG },
		{ "accept-timeout", 1, 0, PFS_OPT_LONG }, { "timeout", 1, 0, PFS_OPT_LONG },
		{ "out", 1, 0, PFS_OPT_LONG }, { "result-file", 1, 0, PFS_OPT_LONG },
		{ "csv", 1, 0, PFS_OPT_LONG }, { "notes", 1, 0, PFS_OPT_LONG },
		{ "transport", 1, 0, PFS_OPT_LONG }, { "ready-file", 1, 0, PFS_OPT_LONG },
		{ "ifname", 1, 0, PFS_OPT_LONG }, { "queues", 1, 0, PFS_OPT_LONG },
		{ "peer-mac", 1, 0, PFS_OPT_LONG }, { "mtu", 1, 0, PFS_OPT_LONG },
		{ "integrity", 1, 0, PFS_OPT_LONG }, { "range", 1, 0, PFS_OPT_LONG },
		{ "attach", 1, 0, PFS_OPT_LONG }, { "umem-page", 1, 0, PFS_OPT_LONG },
		{ "help", 0, 0, 'h' }, { 0 },
	};
	const char *usage = a->sender ? send_usage : recv_usage;
	int c, idx;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", lo, &idx)) != -1) {
		const char *n, *v = optarg;
		uint64_t u = 0;
		int r;

		if (c == 'h') {
			fputs(usage, stdout);
			return 1;
		}
		if (c != PFS_OPT_LONG)
			goto usage;
		n = lo[idx].name;
		r = pfs_cli_blob_opt(&a->cb, n, v);
		if (!r)
			r = pfs_cli_share_opt(&a->share, n, v);
		if (r < 0)
			return -1;
		if (r)
			continue;
		if (!strcmp(n, a->sender ? "connect" : "listen")) {
			a->addr = v;
		} else if (!strcmp(n, "mode")) {
			if (pfs_mode_parse(v, &a->mode))
				goto bad;
			a->mode_set = true;
		} else if (!strcmp(n, "bytes")) {
			if (pfs_parse_size(v, &a->bytes) || !a->bytes)
				goto bad;
		} else if (!strcmp(n, "desc-per-gram")) {
			if (pfs_parse_u64(v, &u) || !u || u > PFS_GRAM_MAX_DESC)
				goto bad;
			a->desc_per_gram = (uint32_t)u;
		} else if (!strcmp(n, "min-len") || !strcmp(n, "max-len") || !strcmp(n, "align") ||
			   !strcmp(n, "gram-bytes")) {
			if (pfs_parse_size(v, &u) || !u || u > UINT32_MAX)
				goto bad;
			if (!strcmp(n, "min-len"))
				a->sched.min_len = (uint32_t)u;
			else if (!strcmp(n, "max-len"))
				a->sched.max_len = (uint32_t)u;
			else if (!strcmp(n, "align"))
				a->sched.align = (uint32_t)u;
			else
				a->gram_bytes = (uint32_t)u;
		} else if (!strcmp(n, "pattern")) {
			if (pfs_pattern_parse(v, &a->sched.pattern))
				goto bad;
		} else if (!strcmp(n, "sched-seed")) {
			if (pfs_parse_u64(v, &a->sched.seed))
				goto bad;
		} else if (!strcmp(n, "connect-timeout")) {
			if (parse_secs(v, &a->connect_timeout))
				goto bad;
		} else if (!strcmp(n, "accept-timeout")) {
			if (parse_secs(v, &a->accept_timeout))
				goto bad;
		} else if (!strcmp(n, "timeout")) {
			if (parse_secs(v, &a->timeout) || a->timeout == 0)
				goto bad;
		} else if (!strcmp(n, "out")) {
			a->out = v;
		} else if (!strcmp(n, "result-file")) {
			a->result_file = v;
		} else if (!strcmp(n, "csv")) {
			a->csv = v;
		} else if (!strcmp(n, "notes")) {
			a->notes = v;
		} else if (!strcmp(n, "transport")) {
			a->transport = pfs_transport_find(v);
			if (!a->transport) {
				fprintf(stderr, "pfs %s: unknown --transport '%s' (this build has: %s)\n",
					argv[0], v, pfs_transport_names());
				return -1;
			}
		} else if (!strcmp(n, "range") && a->sender) {
			char *colon = strchr(v, ':');
			char off[32];

			if (!colon || (size_t)(colon - v) >= sizeof(off))
				goto bad;
			memcpy(off, v, colon - v);
			off[colon - v] = '\0';
			if (pfs_parse_size(off, &a->sched.range_off) ||
			    pfs_parse_size(colon + 1, &a->sched.range_len) || !a->sched.range_len)
				goto bad;
		} else if (!strcmp(n, "integrity")) {
			if (pfs_integrity_parse(v, &a->integrity))
				goto bad;
		} else if (!strcmp(n, "ready-file") && !a->sender) {
			a->ready_file = v;
		} else if (!strcmp(n, "ifname")) {
			a->ifname = v;
		} else if (!strcmp(n, "peer-mac")) {
			a->peer_mac = v;
		} else if (!strcmp(n, "queues")) {
			if (pfs_parse_u64(v, &u) || !u || u > 64)
				goto bad;
			a->queues = (uint32_t)u;
		} else if (!strcmp(n, "umem-page")) {
			if (pfs_xsk_page_parse(v, &a->umem_page))
				goto bad;
		} else if (!strcmp(n, "attach") && !a->sender) {
			if (pfs_xdp_attach_parse(v, &a->xdp_attach))
				goto bad;
		} else if (!strcmp(n, "mtu")) {
			if (pfs_parse_u64(v, &u) || u < 576 || u > 65535)
				goto bad;
			a->mtu = (uint32_t)u;
		} else {
			goto usage;
		}
		continue;
bad:
		fprintf(stderr, "pfs %s: invalid --%s '%s'\n", argv[0], n, v);
		return -1;
	}
	if (optind < argc) {
		fprintf(stderr, "pfs %s: unexpected argument '%s'\n", argv[0], argv[optind]);
		goto usage;
	}
	if (!a->addr || !a->mode_set) {
		fprintf(stderr, "pfs %s: --%s and --mode are required\n", argv[0],
			a->sender ? "connect" : "listen");
		goto usage;
	}
	if (!pfs_transport_has_integrity(a->transport, a->integrity)) {
		fprintf(stderr, "pfs %s: --transport %s runs only --integrity crc32c, not %s\n",
			argv[0], a->transport->name, pfs_integrity_str(a->integrity));
		return -1;
	}
	if (a->sched.min_len > a->sched.max_len) {
		fprintf(stderr, "pfs %s: --min-len exceeds --max-len\n", argv[0]);
		return -1;
	}
	return 0;
usage:
	fprintf(stderr, "\n%s", usage);
	return -1;
}

static int exit_code(int err, const struct pfs_xfer_result *r)
{
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
	return r->verdict == PFS_VERDICT_OK ? "OK" :
	       r->verdict == PFS_VERDICT_MISMATCH ? "MISMATCH" : "NA";
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

static void report(const struct xfer_args *a, const struct pfs_blob *blob, uint64_t fp,
		   const struct pfs_xfer_result *r, int err, int rc)
{
	double mb = r->bytes / 1e6, cpu = r->user_s + r->sys_s;
	double eff = r->elapsed_s > 0 ? mb / r->elapsed_s : 0;
	double mbcpu = cpu > 0 ? mb / cpu : 0;
	char label[64], notes[400];
	struct pfs_json j;

	pfs_label(a->mode, a->transport->label, label, sizeof(label));
	snprintf(notes, sizeof(notes), "%s%s%s; %s; blob=%s; %u desc/gram; len %u..%u align %u; "
		 "pattern=%s; integrity=%s; crc32c=%s", a->notes ? a->notes : "", a->notes ? "; " : "",
		 a->sender ? "sender" : "receiver", r->peer[0] ? r->peer : "no peer",
		 blob ? pfs_page_kind_str(pfs_blob__page_kind(blob)) : "none", a->desc_per_gram,
		 a->sched.min_len, a->sched.max_len, a->sched.align,
		 a->sched.pattern == PFS_PATTERN_RANDOM ? "random" : "seq",
		 pfs_integrity_str(a->integrity), pfs_crc32c_impl());
	pfs_json_begin(&j);
	pfs_json_bool(&j, "ok", rc == PFS_EXIT_OK);
	pfs_json_str(&j, "cmd", a->sender ? "send" : "recv", 8);
	pfs_json_str(&j, "label", label, 64);
	pfs_json_str(&j, "purpose", pfs_purpose(a->mode), 16);
	pfs_json_str(&j, "side", a->sender ? "sender" : "receiver", 10);
	pfs_json_str(&j, "transport", a->transport->name, 8);
	pfs_json_str(&j, "mode", pfs_mode_str(a->mode), 10);
	pfs_json_str(&j, "peer", r->peer[0] ? r->peer : NULL, 64);
	pfs_json_num(&j, "size_mb", mb, 3);
	pfs_json_u64(&j, "bytes", r->bytes);
	pfs_json_num(&j, "elapsed_s", r->elapsed_s, 6);
	pfs_json_num(&j, "effective_mb_s", eff, 1);
	pfs_json_num(&j, "user_s", r->user_s, 3);
	pfs_json_num(&j, "sys_s", r->sys_s, 3);
	pfs_json_num(&j, "cpu_s", cpu, 3);
	pfs_json_num(&j, "mb_per_cpu_s", mbcpu, 1);
	pfs_json_str(&j, "integrity", verdict_str(r), 10);
	pfs_json_u64(&j, "pthreads", 1);
	pfs_json_str(&j, "integrity_alg", pfs_integrity_str(a->integrity), 8);
	/* "crc32c"/"peer_crc32c" stay for readers that predate --integrity. */
	if (a->integrity == PFS_INTEGRITY_CRC32C)
		checksum_json(&j, "crc32c", "peer_crc32c", r, 8);
	if (a->integrity != PFS_INTEGRITY_NONE)
		checksum_json(&j, "checksum", "peer_checksum", r, 16);
	pfs_json_str(&j, "crc32c_impl", pfs_crc32c_impl(), 24);
	pfs_json_u64(&j, "descs", r->descs);
	pfs_json_u64(&j, "grams", r->grams);
	pfs_json_u64(&j, "wire_bytes", r->wire_bytes);
	pfs_json_u64(&j, "decode_errors", r->stats.errors);
	if (r->dgrams.sent || r->dgrams.received) {
		const struct pfs_dgram_stats *g = &r->dgrams;

		pfs_json_obj(&j, "datagrams");
		pfs_json_u64(&j, "sent", g->sent);
		pfs_json_u64(&j, "received", g->received);
		pfs_json_u64(&j, "retransmitted", g->retransmitted);
		pfs_json_u64(&j, "naks", g->naks);
		pfs_json_u64(&j, "duplicates", g->duplicates);
		pfs_json_u64(&j, "out_of_order", g->out_of_order);
		pfs_json_u64(&j, "socket_drops", g->dropped);
		if (g->test_dropped)
			pfs_json_u64(&j, "test_dropped", g->test_dropped);
		pfs_json_close(&j);
	}
	if (r->path[0])
		pfs_json_str(&j, "path", r->path, sizeof(r->path));
	if (r->afxdp_mode[0])
		pfs_json_str(&j, "afxdp_mode", r->afxdp_mode, sizeof(r->afxdp_mode));
	placement_json(&j);
	if (blob)
		pfs_cli_blob_json(&j, blob, fp);
	pfs_json_hex(&j, "peer_fingerprint", r->peer_fingerprint, 16);
	pfs_json_str(&j, "notes", notes, 400);
	pfs_json_u64(&j, "exit_code", rc);
	pfs_json_str(&j, "error", err || rc ? (r->error[0] ? r->error : "integrity MISMATCH") : NULL,
		     700);
	if (pfs_result_emit(pfs_json_end(&j), a->result_file))
		pfs_err("cannot write the result to %s: %s", a->result_file, strerror(errno));
	if (a->csv) {
		struct pfs_csv_row row = { label, pfs_purpose(a->mode), mb, r->elapsed_s, eff,
					   r->user_s, r->sys_s, mbcpu, verdict_str(r), 1, notes };

		if (pfs_csv_append(a->csv, &row))
			pfs_err("cannot append to %s: %s", a->csv, strerror(errno));
	}
}

static int run(int argc, char **argv, bool sender)
{
	struct xfer_args a = { .sender = sender, .transport = pfs_transport_find("tcp"), .desc_per_gram = 1024, .gram_bytes = 4u << 20,
			       .connect_timeout = 10, .accept_timeout = 60 };
	struct pfs_xfer_result r = { 0 };
	struct pfs_blob *blob = NULL;
	char host[64];
	uint16_t port;
	uint64_t fp = 0;
	int err, rc, out_fd = -1;

	pfs_cli_blob_init(&a.cb);
	a.sched = (struct pfs_sched_opts){ .min_len = 64, .max_len = 256 << 10, .align = 64,
					   .seed = 1 };
	err = parse_args(argc, argv, &a);
	if (err)
		return err > 0 ? PFS_EXIT_OK : PFS_EXIT_USAGE;
	if (!a.timeout)	/* udp repairs within ms; a dead path should not take 30 s */
		a.timeout = strcmp(a.transport->name, "tcp") ? 5 : 30;
	if (split_addr(a.addr, host, sizeof(host), &port)) {
		fprintf(stderr, "pfs %s: '%s' is not ADDR:PORT\n", argv[0], a.addr);
		return PFS_EXIT_USAGE;
	}
	if (pfs_cli_check_args)
		return PFS_EXIT_OK;
	if (sender || a.mode != PFS_MODE_PAYLOAD) {
		blob = pfs_cli_share_set(&a.share) ?
			       pfs_cli_share_get(&a.share, r.error, sizeof(r.error)) :
			       pfs_cli_blob_get(&a.cb, r.error, sizeof(r.error));
		if (!blob) {
			report(&a, NULL, 0, &r, -ENOMEM, PFS_EXIT_ERROR);
			return PFS_EXIT_ERROR;
		}
		fp = pfs_blob__fingerprint(blob);
	}
	if (a.out) {
		out_fd = open(a.out, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (out_fd < 0) {
			pfs_err("cannot open --out %s: %s", a.out, strerror(errno));
			pfs_blob__close(blob);
			return PFS_EXIT_ERROR;
		}
	}
	struct pfs_xfer_opts xo = {
		.sz = sizeof(xo), .host = host, .port = port, .mode = a.mode, .blob = blob,
		.fingerprint = fp, .sched = a.sched, .desc_per_gram = a.desc_per_gram,
		.gram_bytes = a.gram_bytes, .connect_timeout_ms = (int)(a.connect_timeout * 1000),
		.out_fd = out_fd, .accept_timeout_ms = (int)(a.accept_timeout * 1000),
		.ready_file = a.ready_file, .io_timeout_ms = (int)(a.timeout * 1000),
		.ifname = a.ifname, .queues = a.queues, .peer_mac = a.peer_mac, .mtu = a.mtu,
		.xdp_attach = a.xdp_attach, .umem_page = a.umem_page,
		.integrity = a.integrity,
	};

	if (sender) {
		xo.sched.total_bytes = a.bytes ? a.bytes :
				       a.sched.range_len ? a.sched.range_len : pfs_blob__size(blob);
		err = a.transport->send(&xo, &r);
	} else {
		err = a.transport->recv(&xo, &r);
	}
	rc = exit_code(err, &r);
	if (out_fd >= 0 && close(out_fd)) {
		pfs_err("closing --out %s: %s", a.out, strerror(errno));
		rc = rc ? rc : PFS_EXIT_ERROR;
	}
	report(&a, blob, fp, &r, err, rc);
	pfs_blob__close(blob);
	return rc;
}

int pfs_cmd_send(int argc, char **argv)
{
	return run(argc, argv, true);
}

int pfs_cmd_recv(int argc, char **argv)
{
	return run(argc, argv, false);
}
