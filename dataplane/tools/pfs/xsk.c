// SPDX-License-Identifier: Apache-2.0
/*
 * `pfs xsk sink | blast | detach`: a probe of the AF_XDP link layer on its
 * own, before the transport's repair plane rides on it. `sink` attaches our
 * XDP program and counts/validates test-pattern frames on N queues; `blast`
 * sends N frames per queue from TX-only sockets (CAP_NET_RAW only); both
 * print one JSON result. `detach` removes a program a crashed run left.
 *
 * Threads: the control thread parses options, attaches the program, opens
 * one socket per queue, then starts one worker per queue; each worker owns
 * its socket and its counters (cache-aligned) and the control thread sums
 * them after joining. SIGTERM/SIGINT set a flag the workers poll, so the
 * program is always detached on the way out.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>

#include "cli.h"
#include "pfs/log.h"
#include "pfs/netdev.h"
#include "pfs/result.h"
#include "pfs/xdp.h"
#include "pfs/xfer.h"
#include "pfs/xsk.h"

extern char **environ;

#define XSK_MAX_QUEUES 16
#define PAT_MAGIC 0x58534650u	/* "PFSX" little endian */
#define PAT_HDR 16
#define PAT_MAX 65536	/* payloads are < 64 KiB (16-bit IP lengths) */

static const char xsk_usage[] =
"usage: pfs xsk sink|blast|detach [options]\n"
"\n"
"AF_XDP link probe. `sink` attaches the pfs XDP program (UDP to --port goes to\n"
"one AF_XDP socket per queue, everything else to the kernel), receives and\n"
"validates test-pattern frames and prints one JSON result. `blast` sends\n"
"--count frames per queue to --dst from TX-only sockets. `detach` removes a\n"
"pfs XDP program a crashed run left on --ifname.\n"
"\n"
"  --ifname IF        interface; default from AFXDP_DEVICES_<POOL> or\n"
"                     PCIDEVICE_<RES> (PCI address -> /sys/bus/pci/devices/A/net/)\n"
"  --port N           UDP destination port (default 7600)\n"
"  --queues N         queues 0..N-1, one socket and thread each (default 1, max 16)\n"
"  --bind MODE        auto | copy | zerocopy (default auto: zero-copy, else copy)\n"
"  --page KIND        auto | 2m | 4k: UMEM pages (default auto: 2m, else 4k)\n"
"  --frames N         UMEM frames per queue, power of 2 (default 2048)\n"
"  --frame-size N     2048 | 4096 (default: by MTU)\n"
"  --timeout S        give up after S seconds (default 30)\n"
"  --pin              pin queue q's thread to the q-th allowed CPU (modulo)\n"
"  --result-file PATH also write the JSON there\n"
"sink:\n"
"  --attach MODE      auto | native | generic (default auto: native, else generic)\n"
"  --count N          stop after N frames in total (default: until --idle)\n"
"  --idle S           stop S seconds after the last frame (default 2)\n"
"  --verify-csum      check IPv4 header and UDP checksums in user space\n"
"  --spin             busy-poll the RX ring while frames flow (default: poll(2)\n"
"                     whenever it is empty, which leaves the CPU to the softirq)\n"
"  --ready-file PATH  create PATH once the sockets are registered\n"
"blast:\n"
"  --dst IP           receiver address (IPv4 or IPv6)\n"
"  --peer-mac MAC     receiver MAC (default: neighbour table, resolved if needed)\n"
"  --src-port N       UDP source port (default: --port)\n"
"  --count N          frames per queue (default 100000)\n"
"  --size N           UDP payload bytes, >= 16 (default 64)\n"
"  --no-udp-csum4     IPv4: send UDP checksum 0\n"
"  --vlan N           tag frames with 802.1Q VLAN N (inline tag)\n"
"  --in-place         build frames in UMEM (tx_reserve/tx_submit) instead of\n"
"                     copying each payload (tx_burst)\n"
"  --pps N            pace each queue to N frames/s (default: as fast as possible;\n"
"                     AF_XDP has no flow control, a slower receiver drops)\n"
"\nExit: 0 OK, 1 error, 2 usage, 3 bad frames received, 5 timeout (fewer than --count).\n";

struct xsk_args {
	const char *cmd, *ifname, *result_file, *ready_file, *dst, *peer_mac;
	uint16_t port, src_port;
	uint32_t queues, frames, frame_size, size, vlan;
	uint64_t count, pps;
	double timeout, idle;
	enum pfs_xdp_attach attach;
	enum pfs_xsk_bind bind;
	enum pfs_xsk_page page;
	bool verify_csum, no_csum4, in_place, spin, pin;
};

struct worker {
	struct pfs_xsk *x;
	const struct xsk_args *a;
	uint64_t frames, bytes, bad, wrong_queue;
	uint64_t last_seq;	/* sink: seq of the last good frame */
	double first, last;	/* CLOCK_MONOTONIC seconds */
	int err;
	pthread_t th;
} __attribute__((aligned(64)));

static volatile int done;	/* count reached (sink), set by any worker */
static uint64_t total_frames;	/* sink: summed by workers with atomics */

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static inline uint8_t pat_byte(uint32_t i, uint32_t queue)
{
	return (uint8_t)(i * 13u + queue * 7u + 1u);
}

/* The test pattern: magic, queue, size, seq, then pat_byte(i). */
static void pat_fill(uint8_t *p, uint32_t size, uint32_t queue)
{
	uint32_t magic = PAT_MAGIC;
	uint16_t q = (uint16_t)queue, s = (uint16_t)size;

	memcpy(p, &magic, 4);
	memcpy(p + 4, &q, 2);
	memcpy(p + 6, &s, 2);
	memset(p + 8, 0, 8);
	for (uint32_t i = PAT_HDR; i < size; i++)
		p[i] = pat_byte(i, queue);
}

/* 0 good; 1 bad; 2 good but sent to another queue. @want: the pattern of
 * @queue precomputed (PAT_MAX bytes), compared with memcmp; a frame sent on
 * another queue (generic XDP on veth) is checked byte by byte. */
static int pat_check(const uint8_t *p, uint32_t len, uint32_t queue, const uint8_t *want)
{
	uint32_t magic;
	uint16_t q, s;

	if (len < PAT_HDR)
		return 1;
	memcpy(&magic, p, 4);
	memcpy(&q, p + 4, 2);
	memcpy(&s, p + 6, 2);
	if (magic != PAT_MAGIC || s != len || len >= PAT_MAX)
		return 1;
	if (q == queue)
		return memcmp(p + PAT_HDR, want + PAT_HDR, len - PAT_HDR) ? 1 : 0;
	for (uint32_t i = PAT_HDR; i < len; i++)
		if (p[i] != pat_byte(i, q))
			return 1;
	return 2;
}

static void *sink_worker(void *arg)
{
	struct worker *w = arg;
	struct pfs_dgram d[PFS_XSK_BATCH];
	double end = now_s() + w->a->timeout;
	uint32_t queue = pfs_xsk__queue(w->x);
	uint8_t *want = malloc(PAT_MAX);

	if (!want) {
		w->err = -ENOMEM;
		return NULL;
	}
	pat_fill(want, PAT_MAX - 1, queue);
	while (!done && !pfs_xdp_stop_requested()) {
		int n = pfs_xsk__rx_burst(w->x, d, PFS_XSK_BATCH);
		double t;

		if (n <= 0) {
			t = now_s();
			if (t > end || (w->a->idle > 0 && w->frames && t - w->last > w->a->idle))
				break;
			if (!w->a->spin || w->frames == 0 || t - w->last > 0.001)
				pfs_xsk__wait(w->x, 50);
			continue;
		}
		t = now_s();
		if (!w->frames)
			w->first = t;
		w->last = t;
		for (int i = 0; i < n; i++) {
			int r = pat_check(d[i].data, d[i].len, queue, want);

			w->bad += r == 1;
			w->wrong_queue += r == 2;
			w->bytes += d[i].len;
			if (r != 1)
				memcpy(&w->last_seq, d[i].data + 8, 8);
		}
		w->frames += (uint64_t)n;
		pfs_xsk__rx_release(w->x, d, (unsigned int)n);
		if (w->a->count &&
		    __atomic_add_fetch(&total_frames, (uint64_t)n, __ATOMIC_RELAXED) >= w->a->count)
			done = 1;
	}
	free(want);
	return NULL;
}

/* The in-place path: reserve, write pattern + seq into UMEM, submit. */
static int send_in_place(struct pfs_xsk *x, const uint8_t *pat, uint32_t size, uint64_t seq,
			 unsigned int n)
{
	struct pfs_xsk_txslot sl[PFS_XSK_BATCH];
	uint32_t lens[PFS_XSK_BATCH];
	int k = pfs_xsk__tx_reserve(x, sl, n);

	if (k <= 0)
		return k;
	if (size > sl[0].cap) {
		pfs_xsk__tx_submit(x, lens, 0);	/* give the frames back */
		return -EMSGSIZE;
	}
	for (int i = 0; i < k; i++) {
		uint64_t s = seq + (uint64_t)i;

		memcpy(sl[i].payload, pat, size);
		memcpy(sl[i].payload + 8, &s, 8);
		lens[i] = size;
	}
	return pfs_xsk__tx_submit(x, lens, (unsigned int)k);
}

static void *blast_worker(void *arg)
{
	struct worker *w = arg;
	uint32_t size = w->a->size, q = pfs_xsk__queue(w->x);
	uint8_t *buf = malloc((size_t)PFS_XSK_BATCH * size);
	struct iovec iov[PFS_XSK_BATCH];
	double end = now_s() + w->a->timeout;
	uint64_t seq = 0;

	if (!buf) {
		w->err = -ENOMEM;
		return NULL;
	}
	for (int i = 0; i < PFS_XSK_BATCH; i++) {
		pat_fill(buf + (size_t)i * size, size, q);
		iov[i] = (struct iovec){ buf + (size_t)i * size, size };
	}
	w->first = now_s();
	while (seq < w->a->count && !pfs_xdp_stop_requested()) {
		uint64_t left = w->a->count - seq;
		unsigned int n = left < PFS_XSK_BATCH ? (unsigned int)left : PFS_XSK_BATCH;
		int k;

		if (w->a->pps) {
			/* pace: never ahead of count/pps; bursts of at most 16 */
			double ahead = (double)seq / (double)w->a->pps - (now_s() - w->first);

			if (ahead > 0) {
				usleep((useconds_t)(ahead * 1e6));
				continue;
			}
			if (n > 16)
				n = 16;
		}

		for (unsigned int i = 0; i < n; i++) {
			uint64_t s = seq + i;

			memcpy(buf + (size_t)i * size + 8, &s, 8);
		}
		if (w->a->in_place)
			k = send_in_place(w->x, buf, size, seq, n);
		else
			k = pfs_xsk__tx_burst(w->x, iov, n);
		if (k < 0) {
			w->err = k;
			break;
		}
		/* The ring was full: the payloads not taken are re-stamped next round. */
		seq += (uint64_t)k;
		w->frames += (uint64_t)k;
		w->bytes += (uint64_t)k * size;
		if (!k && now_s() > end) {
			w->err = -ETIMEDOUT;
			break;
		}
	}
	if (!w->err && pfs_xsk__tx_drain(w->x, 5000))
		w->err = -ETIMEDOUT;
	w->last = now_s();
	free(buf);
	return NULL;
}

/* The @q-th CPU (modulo) of this process's allowed set, or -1. */
static int nth_cpu(uint32_t q)
{
	cpu_set_t set;
	int n, k;

	if (sched_getaffinity(0, sizeof(set), &set) || !(n = CPU_COUNT(&set)))
		return -1;
	k = (int)(q % (uint32_t)n);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set) && k-- == 0)
			return c;
	return -1;
}

static int parse_ip(const char *s, int *family, uint8_t *ip)
{
	if (inet_pton(AF_INET, s, ip) == 1) {
		*family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, ip) == 1) {
		*family = AF_INET6;
		return 0;
	}
	return -EINVAL;
}

static int parse_args(int argc, char **argv, struct xsk_args *a)
{
	static const struct option lo[] = {
		{ "ifname", 1, 0, 0 }, { "port", 1, 0, 0 }, { "queues", 1, 0, 0 },
		{ "bind", 1, 0, 0 }, { "page", 1, 0, 0 }, { "frames", 1, 0, 0 },
		{ "frame-size", 1, 0, 0 }, { "timeout", 1, 0, 0 }, { "result-file", 1, 0, 0 },
		{ "attach", 1, 0, 0 }, { "count", 1, 0, 0 }, { "idle", 1, 0, 0 },
		{ "verify-csum", 0, 0, 0 }, { "ready-file", 1, 0, 0 }, { "dst", 1, 0, 0 },
		{ "peer-mac", 1, 0, 0 }, { "src-port", 1, 0, 0 }, { "size", 1, 0, 0 },
		{ "no-udp-csum4", 0, 0, 0 }, { "pps", 1, 0, 0 }, { "vlan", 1, 0, 0 }, { "spin", 0, 0, 0 }, { "pin", 0, 0, 0 },
		{ "in-place", 0, 0, 0 }, { "help", 0, 0, 'h' }, { 0 }
	};
	int c, idx;

	memset(a, 0, sizeof(*a));
	a->port = 7600;
	a->queues = 1;
	a->timeout = 30;
	a->idle = 2;
	a->size = 64;
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(xsk_usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? PFS_EXIT_USAGE : -1;
	}
	a->cmd = argv[1];
	if (strcmp(a->cmd, "sink") && strcmp(a->cmd, "blast") && strcmp(a->cmd, "detach")) {
		fprintf(stderr, "pfs xsk: unknown subcommand '%s'\n\n%s", a->cmd, xsk_usage);
		return PFS_EXIT_USAGE;
	}
	optind = 2;
	while ((c = getopt_long(argc, argv, "h", lo, &idx)) != -1) {
		const char *n, *v = optarg;
		uint64_t u = 0;
		char *end;

		if (c == 'h') {
			fputs(xsk_usage, stdout);
			return -1;
		}
		if (c != 0)
			return PFS_EXIT_USAGE;
		n = lo[idx].name;
		if (!strcmp(n, "ifname")) {
			a->ifname = v;
		} else if (!strcmp(n, "port") || !strcmp(n, "src-port")) {
			if (pfs_parse_u64(v, &u) || !u || u > 65535)
				goto bad;
			*(!strcmp(n, "port") ? &a->port : &a->src_port) = (uint16_t)u;
		} else if (!strcmp(n, "queues")) {
			if (pfs_parse_u64(v, &u) || !u || u > XSK_MAX_QUEUES)
				goto bad;
			a->queues = (uint32_t)u;
		} else if (!strcmp(n, "bind")) {
			if (!strcmp(v, "auto"))
				a->bind = PFS_XSK_BIND_AUTO;
			else if (!strcmp(v, "copy"))
				a->bind = PFS_XSK_BIND_COPY;
			else if (!strcmp(v, "zerocopy"))
				a->bind = PFS_XSK_BIND_ZEROCOPY;
			else
				goto bad;
		} else if (!strcmp(n, "page")) {
			if (pfs_xsk_page_parse(v, &a->page))
				goto bad;
		} else if (!strcmp(n, "attach")) {
			if (pfs_xdp_attach_parse(v, &a->attach))
				goto bad;
		} else if (!strcmp(n, "frames") || !strcmp(n, "frame-size") || !strcmp(n, "size")) {
			if (pfs_parse_size(v, &u) || !u || u > (1u << 24))
				goto bad;
			*(!strcmp(n, "frames") ? &a->frames :
			  !strcmp(n, "size") ? &a->size : &a->frame_size) = (uint32_t)u;
		} else if (!strcmp(n, "count") || !strcmp(n, "pps")) {
			if (pfs_parse_size(v, !strcmp(n, "count") ? &a->count : &a->pps))
				goto bad;
		} else if (!strcmp(n, "timeout") || !strcmp(n, "idle")) {
			double d = strtod(v, &end);

			if (*end || d < 0 || d > 86400)
				goto bad;
			*(!strcmp(n, "timeout") ? &a->timeout : &a->idle) = d;
		} else if (!strcmp(n, "result-file")) {
			a->result_file = v;
		} else if (!strcmp(n, "ready-file")) {
			a->ready_file = v;
		} else if (!strcmp(n, "verify-csum")) {
			a->verify_csum = true;
		} else if (!strcmp(n, "vlan")) {
			if (pfs_parse_u64(v, &u) || !u || u > 4094)
				goto bad;
			a->vlan = (uint32_t)u;
		} else if (!strcmp(n, "spin")) {
			a->spin = true;
		} else if (!strcmp(n, "pin")) {
			a->pin = true;
		} else if (!strcmp(n, "in-place")) {
			a->in_place = true;
		} else if (!strcmp(n, "no-udp-csum4")) {
			a->no_csum4 = true;
		} else if (!strcmp(n, "dst")) {
			a->dst = v;
		} else if (!strcmp(n, "peer-mac")) {
			a->peer_mac = v;
		}
		continue;
bad:
		fprintf(stderr, "pfs xsk: invalid --%s '%s'\n", n, v);
		return PFS_EXIT_USAGE;
	}
	if (optind < argc) {
		fprintf(stderr, "pfs xsk: unexpected argument '%s'\n", argv[optind]);
		return PFS_EXIT_USAGE;
	}
	if (!strcmp(a->cmd, "blast") && (!a->dst || a->size < PAT_HDR || a->size > 65000)) {
		fprintf(stderr, "pfs xsk blast: --dst is required and --size must be 16..65000\n");
		return PFS_EXIT_USAGE;
	}
	if (!strcmp(a->cmd, "blast") && !a->count)
		a->count = 100000;
	if (!a->src_port)
		a->src_port = a->port;
	return 0;
}

static int emit_error(struct pfs_json *j, const struct xsk_args *a, const char *why, int code)
{
	pfs_json_str(j, "error", why, 700);
	pfs_json_str(j, "verdict", "ERROR", 16);
	pfs_result_emit(pfs_json_end(j), a->result_file);
	return code;
}

static void link_json(struct pfs_json *j, struct worker *w, uint32_t n)
{
	struct pfs_xsk *x = w[0].x;

	pfs_json_str(j, "bind", pfs_xsk__zerocopy(x) ? "zerocopy" : "copy", 16);
	pfs_json_str(j, "bind_reason", pfs_xsk__bind_reason(x), 200);
	pfs_json_str(j, "umem_page", pfs_xsk__hugepages(x) ? "2m" : "4k", 8);
	pfs_json_str(j, "umem_page_reason", pfs_xsk__page_reason(x), 200);
	pfs_json_u64(j, "umem_bytes_per_queue", pfs_xsk__umem_bytes(x));
	pfs_json_u64(j, "queues", n);
}

static int result(struct pfs_json *j, const struct xsk_args *a, struct worker *w, uint32_t n,
		  bool sink)
{
	struct pfs_xsk_stats s, sum;
	uint64_t frames = 0, bytes = 0, bad = 0, wrongq = 0;
	double first = 0, last = 0, el;
	char perq[XSK_MAX_QUEUES * 21 + 1] = "", lastseq[XSK_MAX_QUEUES * 21 + 1] = "";
	int err = 0;

	memset(&sum, 0, sizeof(sum));
	for (uint32_t q = 0; q < n; q++) {
		frames += w[q].frames;
		bytes += w[q].bytes;
		bad += w[q].bad;
		wrongq += w[q].wrong_queue;
		if (w[q].frames && (!first || w[q].first < first))
			first = w[q].first;
		if (w[q].last > last)
			last = w[q].last;
		if (w[q].err && !err)
			err = w[q].err;
		snprintf(perq + strlen(perq), sizeof(perq) - strlen(perq), "%s%" PRIu64,
			 q ? "," : "", w[q].frames);
		snprintf(lastseq + strlen(lastseq), sizeof(lastseq) - strlen(lastseq), "%s%" PRIu64,
			 q ? "," : "", w[q].last_seq);
		pfs_xsk__stats(w[q].x, &s);
		sum.rx_bad += s.rx_bad;
		sum.fill_stashed += s.fill_stashed;
		sum.tx_kicks += s.tx_kicks;
		sum.tx_ring_full += s.tx_ring_full;
		sum.k_rx_dropped += s.k_rx_dropped;
		sum.k_rx_ring_full += s.k_rx_ring_full;
		sum.k_fill_empty += s.k_fill_empty;
		sum.k_tx_invalid += s.k_tx_invalid;
	}
	el = frames && last > first ? last - first : 0;
	link_json(j, w, n);
	pfs_json_u64(j, "frames", frames);
	pfs_json_u64(j, "payload_bytes", bytes);
	pfs_json_str(j, "per_queue", perq, sizeof(perq));
	pfs_json_num(j, "elapsed_s", el, 6);
	pfs_json_num(j, "pps", el > 0 ? (double)frames / el : 0, 0);
	pfs_json_num(j, "payload_gbit_s", el > 0 ? (double)bytes * 8 / el / 1e9 : 0, 3);
	pfs_json_u64(j, "payload_size", sink ? (frames ? bytes / frames : 0) : a->size);
	if (sink) {
		pfs_json_str(j, "last_seq", lastseq, sizeof(lastseq));
		pfs_json_u64(j, "bad", bad);
		pfs_json_u64(j, "wrong_queue", wrongq);
		pfs_json_u64(j, "rx_unparsed", sum.rx_bad);
		pfs_json_u64(j, "fill_stashed", sum.fill_stashed);
		pfs_json_u64(j, "k_rx_dropped", sum.k_rx_dropped);
		pfs_json_u64(j, "k_rx_ring_full", sum.k_rx_ring_full);
		pfs_json_u64(j, "k_fill_empty", sum.k_fill_empty);
	} else {
		pfs_json_u64(j, "tx_kicks", sum.tx_kicks);
		pfs_json_u64(j, "tx_ring_full", sum.tx_ring_full);
		pfs_json_u64(j, "k_tx_invalid", sum.k_tx_invalid);
	}
	if (pfs_xdp_stop_requested())
		pfs_json_bool(j, "stopped_by_signal", true);
	if (err) {
		pfs_json_str(j, "error", strerror(-err), 200);
		pfs_json_str(j, "verdict", err == -ETIMEDOUT ? "TIMEOUT" : "ERROR", 16);
		return err == -ETIMEDOUT ? PFS_EXIT_TIMEOUT : PFS_EXIT_ERROR;
	}
	if (sink && bad) {
		pfs_json_str(j, "verdict", "MISMATCH", 16);
		return PFS_EXIT_MISMATCH;
	}
	if (sink && a->count && frames < a->count) {
		pfs_json_str(j, "verdict", "TIMEOUT", 16);
		return PFS_EXIT_TIMEOUT;
	}
	pfs_json_str(j, "verdict", "OK", 16);
	return PFS_EXIT_OK;
}

static int run(const struct xsk_args *a, const char *ifname, struct pfs_json *j)
{
	bool sink = !strcmp(a->cmd, "sink");
	struct worker *w;
	struct pfs_xdp *xdp = NULL;
	struct pfs_frame_addr peer;
	uint32_t started = 0, opened = 0;
	char why[700], pins[XSK_MAX_QUEUES * 5 + 1] = "";
	int code = PFS_EXIT_ERROR;

	memset(&peer, 0, sizeof(peer));
	if (!sink) {
		int ifindex = (int)if_nametoindex(ifname), rc;

		if (!ifindex) {
			snprintf(why, sizeof(why), "no interface '%s' in this network namespace",
				 ifname);
			return emit_error(j, a, why, PFS_EXIT_ERROR);
		}
		if (parse_ip(a->dst, &peer.family, peer.dst_ip)) {
			fprintf(stderr, "pfs xsk: invalid --dst '%s'\n", a->dst);
			return PFS_EXIT_USAGE;
		}
		peer.src_port = a->src_port;
		peer.dst_port = a->port;
		peer.vlan = (uint16_t)a->vlan;
		rc = pfs_netdev_hwaddr(ifname, peer.src_mac);
		if (!rc)
			rc = pfs_netdev_src_ip(ifname, peer.family, peer.dst_ip, peer.src_ip);
		if (rc) {
			snprintf(why, sizeof(why), "no route/address toward %s on %s: %s", a->dst,
				 ifname, strerror(-rc));
			return emit_error(j, a, why, PFS_EXIT_ERROR);
		}
		if (a->peer_mac) {
			if (pfs_mac_parse(a->peer_mac, peer.dst_mac)) {
				fprintf(stderr, "pfs xsk: invalid --peer-mac '%s'\n", a->peer_mac);
				return PFS_EXIT_USAGE;
			}
		} else {
			uint8_t hop[16];
			char hs[INET6_ADDRSTRLEN] = "";
			int oif = 0;

			/* off-link receivers: the gateway's MAC */
			rc = pfs_netdev_next_hop(peer.family, peer.dst_ip, hop, &oif);
			if (!rc && oif && oif != ifindex)
				pfs_warn("the route to %s leaves through ifindex %d, not %s", a->dst, oif,
					 ifname);
			if (rc)
				memcpy(hop, peer.dst_ip, sizeof(hop));
			inet_ntop(peer.family, hop, hs, sizeof(hs));
			rc = pfs_neigh_resolve(ifindex, ifname, peer.family, hop, peer.dst_mac, 3000);
			if (rc) {
				snprintf(why, sizeof(why), "cannot resolve the MAC of %s (next hop to "
					 "%s) on %s (%s); pass --peer-mac", hs, a->dst, ifname,
					 strerror(-rc));
				return emit_error(j, a, why, PFS_EXIT_ERROR);
			}
			if (strcmp(hs, a->dst))
				pfs_json_str(j, "next_hop", hs, sizeof(hs));
		}
	} else {
		struct pfs_xdp_opts xo = { .sz = sizeof(xo), .ifname = ifname, .port = a->port,
					   .attach = a->attach };

		xdp = pfs_xdp__attach(&xo);
		if (!xdp)
			return emit_error(j, a, pfs_xsk_last_error(), PFS_EXIT_ERROR);
		pfs_json_str(j, "xdp_mode", pfs_xdp__mode_str(xdp), 16);
		pfs_json_str(j, "xdp_fallback_reason", pfs_xdp__fallback_reason(xdp), 400);
		pfs_json_u64(j, "xdp_prog_id", pfs_xdp__prog_id(xdp));
		pfs_json_u64(j, "replaced_stale_prog_id", pfs_xdp__replaced_id(xdp));
	}
	w = aligned_alloc(64, sizeof(*w) * XSK_MAX_QUEUES);
	if (!w) {
		snprintf(why, sizeof(why), "out of memory");
		goto out_detach;
	}
	memset(w, 0, sizeof(*w) * XSK_MAX_QUEUES);
	for (; opened < a->queues; opened++) {
		struct pfs_xsk_opts so = {
			.sz = sizeof(so), .ifname = ifname, .queue = opened, .xdp = xdp,
			.frames = a->frames, .frame_size = a->frame_size, .bind = a->bind,
			.page = a->page, .peer = sink ? NULL : &peer,
			.frame_flags = a->no_csum4 ? PFS_FRAME_NO_UDP_CSUM4 : 0,
			.verify_csum = a->verify_csum,
		};

		w[opened].a = a;
		w[opened].x = pfs_xsk__create(&so);
		if (!w[opened].x) {
			snprintf(why, sizeof(why), "queue %u: %s", opened, pfs_xsk_last_error());
			goto out_close;
		}
	}
	if (sink && a->ready_file && pfs_xfer_ready(a->ready_file))
		pfs_warn("cannot create ready file %s", a->ready_file);
	for (; started < a->queues; started++) {
		if (pthread_create(&w[started].th, NULL, sink ? sink_worker : blast_worker,
				   &w[started])) {
			snprintf(why, sizeof(why), "cannot start worker threads");
			done = 1;
			break;
		}
		if (a->pin) {
			int cpu = nth_cpu(started);
			cpu_set_t one;

			CPU_ZERO(&one);
			if (cpu >= 0)
				CPU_SET(cpu, &one);
			if (cpu < 0 || pthread_setaffinity_np(w[started].th, sizeof(one), &one))
				pfs_warn("queue %u: cannot pin its thread", started);
			snprintf(pins + strlen(pins), sizeof(pins) - strlen(pins), "%s%d",
				 started ? "," : "", cpu);
		}
	}
	if (a->pin)
		pfs_json_str(j, "pinned_cpus", pins, sizeof(pins));
	for (uint32_t q = 0; q < started; q++)
		pthread_join(w[q].th, NULL);
	if (started == a->queues) {
		if (xdp) {
			struct pfs_xdp_counters c;

			if (!pfs_xdp__counters(xdp, &c)) {
				pfs_json_obj(j, "xdp");
				pfs_json_u64(j, "redirected", c.redirected);
				pfs_json_u64(j, "passed", c.passed);
				pfs_json_u64(j, "malformed", c.malformed);
				pfs_json_u64(j, "no_xsk", c.no_xsk);
				pfs_json_close(j);
			}
		}
		code = result(j, a, w, a->queues, sink);
		why[0] = '\0';
	}
out_close:
	for (uint32_t q = 0; q < opened; q++)
		pfs_xsk__close(w[q].x);
	free(w);
out_detach:
	pfs_xdp__close(xdp);	/* also on SIGTERM: the workers returned */
	if (why[0])
		return emit_error(j, a, why, code);
	pfs_result_emit(pfs_json_end(j), a->result_file);
	return code;
}

int pfs_cmd_xsk(int argc, char **argv)
{
	struct xsk_args a;
	struct pfs_json j;
	char ifname[IF_NAMESIZE], how[300];
	int rc = parse_args(argc, argv, &a);

	if (rc)
		return rc < 0 ? PFS_EXIT_OK : rc;
	if (pfs_cli_check_args)	/* options valid; touch nothing */
		return PFS_EXIT_OK;
	pfs_json_begin(&j);
	pfs_json_str(&j, "cmd", !strcmp(a.cmd, "sink") ? "xsk sink" :
		     !strcmp(a.cmd, "blast") ? "xsk blast" : "xsk detach", 16);
	rc = pfs_netdev_resolve(a.ifname, environ, "/sys", ifname, sizeof(ifname), how,
				sizeof(how));
	if (rc)
		return emit_error(&j, &a, how, PFS_EXIT_USAGE);
	pfs_json_str(&j, "ifname", ifname, IF_NAMESIZE);
	pfs_json_str(&j, "ifname_from", how, 300);
	if (!strcmp(a.cmd, "detach")) {
		rc = pfs_xdp_detach_stale(ifname);
		if (rc < 0)
			return emit_error(&j, &a, rc == -EBUSY ? pfs_xsk_last_error() :
					  strerror(-rc), PFS_EXIT_ERROR);
		pfs_json_bool(&j, "detached", rc == 1);
		pfs_json_str(&j, "verdict", "OK", 16);
		pfs_result_emit(pfs_json_end(&j), a.result_file);
		return PFS_EXIT_OK;
	}
	pfs_json_u64(&j, "port", a.port);
	pfs_xdp_catch_signals();
	return run(&a, ifname, &j);
}
