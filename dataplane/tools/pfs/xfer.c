// SPDX-License-Identifier: Apache-2.0
/*
 * `pfs send` and `pfs recv`: one transfer over the chosen transport, one
 * JSON result (stdout and --result-file, written by xfer_report.c),
 * optionally one CSV row. Each side reports what it measured itself: its
 * elapsed time and its own CPU time (getrusage). Blob setup is timed
 * separately and excluded from the transfer metrics. --mode delta hands
 * the parsed command line to delta.c. Single-threaded here; the transport
 * owns its threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acquire.h"
#include "pfs/blob_files.h"
#include "cli.h"
#include "commands.h"
#include "metrics.h"
#include "xfer_args.h"
#include "pfs/integrity.h"
#include "pfs/log.h"
#include "pfs/xdp.h"
#include "pfs/xfer.h"
#include "pfs/xsk.h"

static int parse_mode(const char *arg, void *field)
{
	return pfs_mode_parse(arg, field);
}

/* Checked as it is read, before the required options: `pfs send
 * --transport list` (any unknown name) answers with the transports of this
 * build whatever else is missing; the e2e tests and make demo ask it so. */
static int parse_transport(const char *arg, void *field)
{
	const struct pfs_transport **t = field;

	*t = pfs_transport_find(arg);
	if (*t)
		return 0;
	pfs_err("unknown --transport '%s' (this build has: %s)", arg, pfs_transport_names());
	return -ECANCELED;
}

static int parse_pattern(const char *arg, void *field)
{
	return pfs_pattern_parse(arg, field);
}

static int parse_integrity(const char *arg, void *field)
{
	return pfs_integrity_parse(arg, field);
}

#define AT(f) PFS_OPT_AT(struct xfer_args, f)

/* send and recv take the same options, each side using its own and
 * ignoring the other's (so one argument list may serve both), except the
 * few check_side() refuses. */
static const struct pfs_opt send_opts[] = {
	PFS_OPT_HEADING("Sender (pfs send):"),
	{ "connect", PFS_OPT_STR, AT(connect), "ADDR:PORT",
	  "the receiver: numeric IPv4 (1.2.3.4:5000) or IPv6 ([::1]:5000)" },
	{ "bytes", PFS_OPT_SIZE, AT(bytes), "N", "effective bytes to move (default: the blob size)",
	  .min = 1 },
	{ "desc-per-gram", PFS_OPT_U64, AT(desc_per_gram), "N",
	  "descriptors per gram (default 1024, max 65536)", .min = 1, .max = PFS_GRAM_MAX_DESC },
	{ "min-len", PFS_OPT_SIZE, AT(sched.min_len), "N", "shortest descriptor (default 64)",
	  .min = 1 },
	{ "max-len", PFS_OPT_SIZE, AT(sched.max_len), "N", "longest descriptor (default 256K)",
	  .min = 1 },
	{ "align", PFS_OPT_SIZE, AT(sched.align), "N",
	  "offset/length alignment, power of 2 (default 64)", .min = 1 },
	{ "pattern", PFS_OPT_FN, AT(sched.pattern), "P", "seq | random (default seq)",
	  .parse = parse_pattern },
	{ "range", PFS_OPT_RANGE, AT(range), "OFF:LEN",
	  "keep descriptors inside this part of the blob (default all)", .flags = PFS_OPT_NONZERO },
	{ "sched-seed", PFS_OPT_U64, AT(sched.seed), "N", "schedule seed (default 1)" },
	{ "gram-bytes", PFS_OPT_SIZE, AT(gram_bytes), "N",
	  "payload bytes per gram in payload mode (default 4M)", .min = 1 },
	{ "connect-timeout", PFS_OPT_SECS, AT(connect_timeout), "S",
	  "keep retrying a refused connect this long (default 10)" },
	{ "peer-mac", PFS_OPT_STR, AT(peer_mac), "MAC",
	  "afxdp: the receiver's MAC when it cannot be resolved" },
	{ 0 },
};

static const struct pfs_opt recv_opts[] = {
	PFS_OPT_HEADING("\nReceiver (pfs recv):"),
	{ "listen", PFS_OPT_STR, AT(listen), "ADDR:PORT",
	  "address to bind (0.0.0.0:5000, [::]:5000)" },
	{ "ready-file", PFS_OPT_STR, AT(ready_file), "PATH",
	  "create PATH once a sender may start (readiness probes)" },
	{ "out", PFS_OPT_STR, AT(out), "FILE",
	  "also write the referenced bytes to FILE at their offsets" },
	{ "into-blob", PFS_OPT_FLAG, AT(into_blob), NULL,
	  "payload: receive the bytes straight into this side's blob at their offsets\n"
	  "(--blob-name/--size/--page as for offset mode; tcp, udp, afxdp)" },
	{ "accept-timeout", PFS_OPT_SECS, AT(accept_timeout), "S",
	  "wait this long for a sender (default 60)" },
	{ "max-size", PFS_OPT_SIZE, AT(max_size), "SIZE",
	  "payload mode: refuse a sender whose blob is over SIZE (--out is "
	  "sized to the sender's blob; default 64G)",
	  .min = 1 },
	{ "max-work", PFS_OPT_SIZE, AT(max_work), "BYTES",
	  "refuse a sender that announces more effective bytes than BYTES: the\n"
	  "work this receiver agrees to do (payload, offset, arithmetic; offset and\n"
	  "arithmetic execute every byte over this side's blob; default: no bound)",
	  .min = 1 },
	{ "metrics-listen", PFS_OPT_STR, AT(metrics_listen), "ADDR:PORT",
	  "serve how far the transfer got on http://ADDR:PORT/metrics (\":PORT\": every\n"
	  "address; docs/guides/observability.md)" },
	{ "attach", PFS_OPT_FN, AT(xdp_attach), "MODE",
	  "afxdp: auto | native | generic XDP (default auto: native, "
	  "else generic with the reason logged)",
	  .parse = pfs_cli_parse_xdp_attach },
	{ 0 },
};

static const struct pfs_opt both_opts[] = {
	PFS_OPT_HEADING("\nBoth sides:"),
	{ "mode", PFS_OPT_FN, AT(mode), "MODE", "payload | offset | arith | delta (required)",
	  .parse = parse_mode, .flags = PFS_OPT_REQUIRED },
	{ "transport", PFS_OPT_FN, AT(transport), "T",
	  "tcp | udp | afxdp, those built in (default tcp)", .parse = parse_transport },
	{ "timeout", PFS_OPT_SECS, AT(timeout), "S",
	  "no progress for S seconds is an error; the receiver's HELLO and each "
	  "tcp gram must arrive whole within S (default: tcp 30, udp and afxdp 5)",
	  .flags = PFS_OPT_NONZERO },
	{ "integrity", PFS_OPT_FN, AT(integrity), "K",
	  "crc32c | fnv1a64 | none (default crc32c); both ends must "
	  "agree (the receiver refuses another); none compares counts",
	  .parse = parse_integrity },
	{ "token-file", PFS_OPT_STR, AT(token_file), "PATH",
	  "a secret both ends of this transfer hold (the operator's per-transfer\n"
	  "Secret): the receiver challenges every connection and takes only a\n"
	  "sender that proves it; anyone else is dropped, counted and logged while\n"
	  "it keeps waiting. Both ends need it, or neither" },
	{ "result-file", PFS_OPT_STR, AT(result_file), "PATH",
	  "also write the JSON there (e.g. /dev/termination-log)" },
	{ "csv", PFS_OPT_STR, AT(csv), "PATH", "append a CSV row (seed-001 fields)" },
	{ "notes", PFS_OPT_STR, AT(notes), "TEXT", "notes for the result row" },
	{ 0 },
};

static const struct pfs_opt link_opts[] = {
	PFS_OPT_HEADING("\nLink (udp, afxdp):"),
	{ "ifname", PFS_OPT_STR, AT(ifname), "IF",
	  "interface to bind or attach to; afxdp also takes it from "
	  "AFXDP_DEVICES_* or PCIDEVICE_* (device plugins)" },
	{ "queues", PFS_OPT_U64, AT(queues), "N",
	  "afxdp: AF_XDP sockets on queues 0..N-1 (max 16); send: default "
	  "1, a gram's fragments go out on queue seq % N; recv: default "
	  "every RX queue of the interface, all polled by one thread",
	  .min = 1, .max = 64 },
	{ "umem-page", PFS_OPT_FN, AT(umem_page), "P",
	  "afxdp UMEM pages: auto | 2m | 4k (default auto: 2 MiB "
	  "hugepages when the pool has them)",
	  .parse = pfs_cli_parse_umem_page },
	{ "mtu", PFS_OPT_U64, AT(mtu), "N",
	  "path MTU datagrams must fit (default: the MTU of "
	  "--ifname, else 1500)",
	  .min = 576, .max = 65535 },
	PFS_OPT_HEADING(
		"  afxdp sending needs CAP_NET_RAW, receiving CAP_NET_ADMIN, CAP_NET_RAW and\n"
		"  CAP_BPF (either +CAP_IPC_LOCK for a UMEM over the memlock limit); control,\n"
		"  ACKs and NAKs use TCP over the same interface. The receiver's XDP program\n"
		"  is detached on exit and on SIGTERM/SIGINT/SIGHUP.\n"
		"  Test only: PFS_TEST_RX_DROP_PPM=N in the receiver's environment drops N\n"
		"  per million received data datagrams on purpose (udp, afxdp) to exercise\n"
		"  the repair plane where netem/netfilter cannot reach (AF_XDP bypasses both)."),
	{ 0 },
};

#undef AT

static const char send_usage[] =
	"usage: pfs send --connect ADDR:PORT --mode MODE [options]\n"
	"\n"
	"Connects to `pfs recv`, proves the blob (version, mode, fingerprint), streams\n"
	"grams of the schedule and prints the result (JSON) once the receiver has\n"
	"returned its checksum and verdict.\n"
	"\n";

static const char recv_usage[] =
	"usage: pfs recv --listen ADDR:PORT --mode MODE [options]\n"
	"\n"
	"Accepts one sender, checks its HELLO (version, mode and, for offset and\n"
	"arith, that the sender's blob fingerprint equals this one's), executes every\n"
	"descriptor (CRC32C over the referenced bytes; payload mode over the payload)\n"
	"and reports OK or MISMATCH against the sender's checksum.\n"
	"\n";

static const char xfer_footer[] =
	"\n(payload mode needs no blob on the receiver; none is created)\n"
	"\nsend and recv take the same options and ignore the other side's, so one\n"
	"argument list may serve both; --connect/--range are the sender's only,\n"
	"--listen/--ready-file/--attach/--max-size/--max-work the receiver's only.\n"
	"\nExit: 0 OK, 1 error, 2 usage, 3 integrity MISMATCH, 4 refused (mode/version/\n"
	"blob/limits), 5 timeout, 6 transport unavailable here (AF_XDP refused).\n";

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

/* The options of the other side that this one refuses. */
static int check_side(const struct pfs_cmdline *c, bool sender)
{
	static const char *const send_only[] = { "connect", "range", NULL };
	static const char *const recv_only[] = { "listen",   "ready-file",     "attach", "max-size",
						 "max-work", "metrics-listen", NULL };
	const char *const *other = sender ? recv_only : send_only;

	for (int i = 0; other[i]; i++)
		if (pfs_opt_given(c, other[i]))
			return pfs_opt_fail(c, "--%s is an option of pfs %s", other[i],
					    sender ? "recv" : "send");
	if (!pfs_opt_given(c, sender ? "connect" : "listen"))
		return pfs_opt_fail(c, "--%s is required (see pfs %s --help)",
				    sender ? "connect" : "listen", c->cmd);
	return 0;
}

/* The command line into @a; 0, PFS_OPT_HELP, or -EINVAL (reported). */
static int parse_args(int argc, char **argv, struct xfer_args *a)
{
	struct pfs_cmdline c = {
		.cmd = a->sender ? "send" : "recv",
		.usage = a->sender ? send_usage : recv_usage,
		.footer = xfer_footer,
		.group = { { send_opts, a },
			   { recv_opts, a },
			   { both_opts, a },
			   { link_opts, a },
			   { pfs_cli_blob_opts, &a->cb },
			   { pfs_cli_share_opts, &a->share },
			   { pfs_cli_delta_opts, &a->delta } },
	};
	int err = pfs_opt_parse(&c, argc, argv);

	if (!err)
		err = check_side(&c, a->sender);
	if (!err)
		err = pfs_cli_delta_check(&c, a);
	if (err)
		return err;
	a->sched.range_off = a->range.off;
	a->sched.range_len = a->range.len;
	if (!a->transport)
		a->transport = pfs_transport_find("tcp");
	if (!pfs_transport_has_integrity(a->transport, a->integrity))
		return pfs_opt_fail(&c, "--transport %s runs only --integrity crc32c, not %s",
				    a->transport->name, pfs_integrity_str(a->integrity));
	if (a->sched.min_len > a->sched.max_len)
		return pfs_opt_fail(&c, "--min-len exceeds --max-len");
	if (!a->timeout) /* udp repairs within ms; a dead path should not take 30 s */
		a->timeout = strcmp(a->transport->name, "tcp") ? 5 : 30;
	return 0;
}

extern char **environ;

/* What the library takes from pfs's process rather than reading it itself:
 * the device plugins' variables, PFS_UDP_OFFLOAD=off, PFS_TEST_RX_DROP_PPM
 * (tests only), and the stop flag. An afxdp receiver attaches an XDP
 * program: SIGTERM/SIGINT/SIGHUP must make it detach and report, not kill
 * the process with the program attached; the other transports keep the
 * signals' default actions. */
static void process_opts(const struct xfer_args *a, struct pfs_xfer_opts *xo)
{
	const char *off = getenv("PFS_UDP_OFFLOAD"), *ppm = getenv("PFS_TEST_RX_DROP_PPM");
	unsigned long n = ppm ? strtoul(ppm, NULL, 10) : 0;

	xo->link.env = environ;
	xo->link.udp_no_offload = off && !strcmp(off, "off");
	xo->link.test_rx_drop_ppm = n > 1000000 ? 1000000 : (uint32_t)n;
	xo->link.stop = &pfs_cli_stop;
	if (!a->sender && !strcmp(a->transport->name, "afxdp"))
		pfs_cli_catch_stop();
}

/* Run the transfer over the blob (NULL: a payload receiver) and report. */
static int transfer(const struct xfer_args *a, const char *host, uint16_t port,
		    const struct pfs_blob *blob, uint64_t fp, struct pfs_xfer_result *r)
{
	int err, rc, out_fd = -1;

	if (a->out) {
		out_fd = open(a->out, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (out_fd < 0) {
			pfs_err("cannot open --out %s: %s", a->out, strerror(errno));
			return PFS_EXIT_ERROR;
		}
	}
	struct pfs_xfer_opts xo = {
		.sz = sizeof(xo),
		.host = host,
		.port = port,
		.mode = a->mode,
		.blob = blob,
		.fingerprint = fp,
		.io_timeout_ms = (int)(a->timeout * 1000),
		.integrity = a->integrity,
		.send = { .sched = a->sched,
			  .desc_per_gram = a->desc_per_gram,
			  .gram_bytes = a->gram_bytes,
			  .connect_timeout_ms = (int)(a->connect_timeout * 1000) },
		.recv = { .out_fd = out_fd,
			  .accept_timeout_ms = (int)(a->accept_timeout * 1000),
			  .ready_file = a->ready_file,
			  .max_size = a->max_size,
			  .max_work = a->max_work },
		.auth = a->auth,
		.link = { .ifname = a->ifname,
			  .queues = a->queues,
			  .peer_mac = a->peer_mac,
			  .mtu = a->mtu,
			  .xdp_attach = a->xdp_attach,
			  .umem_page = a->umem_page },
	};

	if (a->into_blob) {
		/* The blob is the destination here: no fingerprint to agree on. */
		xo.blob = NULL;
		xo.recv.out_mem = pfs_blob__data(blob);
		xo.recv.out_mem_size = pfs_blob__size(blob);
		/* The destination decides the size, not the --max-size default. */
		if (!a->max_size)
			xo.recv.max_size = xo.recv.out_mem_size;
	}
	process_opts(a, &xo);
	if (a->sender) {
		xo.send.sched.total_bytes = a->bytes	       ? a->bytes :
					    a->sched.range_len ? a->sched.range_len :
								 pfs_blob__size(blob);
		err = pfs_xfer_send(a->transport, &xo, r);
	} else {
		err = pfs_xfer_recv(a->transport, &xo, r);
	}
	rc = pfs_cli_xfer_exit(err, r);
	if (out_fd >= 0 && close(out_fd)) {
		pfs_err("closing --out %s: %s", a->out, strerror(errno));
		rc = rc ? rc : PFS_EXIT_ERROR;
	}
	if (a->into_blob)
		fp = pfs_blob__fingerprint(blob); /* of what arrived: the sender's when equal */
	pfs_cli_xfer_report(a, blob, fp, r, err, rc);
	return rc;
}

static int run(int argc, char **argv, bool sender)
{
	struct xfer_args a = { .sender = sender,
			       .desc_per_gram = 1024,
			       .gram_bytes = 4u << 20,
			       .connect_timeout = 10,
			       .accept_timeout = 60 };
	struct pfs_xfer_result r = { 0 };
	struct pfs_cli_metrics *metrics;
	struct pfs_blob *blob = NULL;
	char host[64];
	uint16_t port;
	uint64_t fp = 0;
	int err, rc;

	pfs_cli_blob_init(&a.cb);
	a.sched = (struct pfs_sched_opts){
		.min_len = 64, .max_len = 256 << 10, .align = 64, .seed = 1
	};
	err = parse_args(argc, argv, &a);
	if (err)
		return pfs_exit_parse(err);
	if (split_addr(sender ? a.connect : a.listen, host, sizeof(host), &port)) {
		pfs_err("%s: '%s' is not ADDR:PORT", argv[0], sender ? a.connect : a.listen);
		return PFS_EXIT_USAGE;
	}
	if (a.metrics_listen && pfs_cli_metrics_check(a.metrics_listen)) {
		pfs_err("%s: invalid --metrics-listen '%s' (ADDR:PORT or :PORT)", argv[0],
			a.metrics_listen);
		return PFS_EXIT_USAGE;
	}
	if (pfs_cli_check_args)
		return PFS_EXIT_OK;
	if (a.token_file) {
		int tl = pfs_share_token_read(a.token_file, a.token, sizeof(a.token));

		if (tl < 0) {
			pfs_err("%s: --token-file %s: %s", argv[0], a.token_file,
				pfs_share_token_strerror(tl));
			return PFS_EXIT_USAGE;
		}
		a.auth = (struct pfs_xfer_auth_opts){ .token = a.token, .token_len = (size_t)tl };
	}
	if (a.mode == PFS_MODE_DELTA)
		return pfs_cli_delta_run(&a, host, port);
	if (a.into_blob && (sender || a.mode != PFS_MODE_PAYLOAD)) {
		pfs_err("%s: --into-blob is for a payload receiver (pfs recv --mode payload)",
			argv[0]);
		return PFS_EXIT_USAGE;
	}
	if (sender || a.mode != PFS_MODE_PAYLOAD || a.into_blob) {
		blob = pfs_cli_blob_acquire(&a.cb, &a.share, r.error, sizeof(r.error));
		if (!blob) {
			pfs_cli_xfer_report(&a, NULL, 0, &r, -ENOMEM, PFS_EXIT_ERROR);
			return PFS_EXIT_ERROR;
		}
		if (a.into_blob && pfs_blob__layout(blob)) {
			/* Its files are a model volume: 0444, mapped read-only, and
			 * what consumers' fingerprints vouch for. A write would
			 * fault; say so instead. */
			snprintf(r.error, sizeof(r.error),
				 "--into-blob: the blob is held as files (--layout files), which "
				 "are read-only; receive into a flat blob (pfs blob create "
				 "without --layout files)");
			pfs_err("%s: %s", argv[0], r.error);
			pfs_blob__close(blob);
			pfs_cli_xfer_report(&a, NULL, 0, &r, -EROFS, PFS_EXIT_ERROR);
			return PFS_EXIT_ERROR;
		}
		/* --into-blob: the fingerprint of what arrives, after the transfer. */
		fp = a.into_blob ? 0 : pfs_blob__fingerprint(blob);
	}
	metrics = pfs_cli_xfer_metrics_start(a.metrics_listen, &r);
	rc = transfer(&a, host, port, blob, fp, &r);
	pfs_cli_metrics_stop(metrics);
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
