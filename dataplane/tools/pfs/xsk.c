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
#include "commands.h"
#include "pfs/log.h"
#include "pfs/netdev.h"
#include "pfs/result.h"
#include "pfs/xdp.h"
#include "pfs/xfer.h"
#include "pfs/xsk.h"

extern char **environ;

#define XSK_MAX_QUEUES 16
#define PAT_MAGIC 0x58534650u /* "PFSX" little endian */
#define PAT_HDR 16
#define PAT_MAX 65536 /* payloads are < 64 KiB (16-bit IP lengths) */

static const char xsk_usage[] =
	"usage: pfs xsk sink|blast|detach [options]\n"
	"\n"
	"AF_XDP link probe. `sink` attaches the pfs XDP program (UDP to --port goes to\n"
	"one AF_XDP socket per queue, everything else to the kernel), receives and\n"
	"validates test-pattern frames and prints one JSON result. `blast` sends\n"
	"--count frames per queue to --dst from TX-only sockets. `detach` removes a\n"
	"pfs XDP program a crashed run left on --ifname, or with --all on every link\n"
	"of this network namespace (the uninstall sweep; other programs stay).\n"
	"\n";

static const char xsk_footer[] =
	"\nExit: 0 OK, 1 error, 2 usage, 3 bad frames received, 5 timeout (fewer than\n"
	"--count).\n";

struct xsk_args {
	const char *cmd, *ifname, *result_file, *ready_file, *dst, *peer_mac;
	uint16_t port, src_port;
	uint32_t queues, frames, frame_size, size, vlan;
	uint64_t count, pps;
	double timeout, idle;
	enum pfs_xdp_attach attach;
	enum pfs_xsk_bind bind;
	enum pfs_xsk_page page;
	bool verify_csum, no_csum4, in_place, spin, pin, all;
};

struct worker {
	struct pfs_xsk *x;
	const struct xsk_args *a;
	uint64_t frames, bytes, bad, wrong_queue;
	uint64_t last_seq; /* sink: seq of the last good frame */
	double first, last; /* CLOCK_MONOTONIC seconds */
	int err;
	pthread_t th;
} __attribute__((aligned(64)));

static volatile int done; /* count reached (sink), set by any worker */
static uint64_t total_frames; /* sink: summed by workers with atomics */

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
	double end = pfs_cli_now() + w->a->timeout;
	uint32_t queue = pfs_xsk__queue(w->x);
	uint8_t *want = malloc(PAT_MAX);

	if (!want) {
		w->err = -ENOMEM;
		return NULL;
	}
	pat_fill(want, PAT_MAX - 1, queue);
	while (!done && !pfs_cli_stop) {
		int n = pfs_xsk__rx_burst(w->x, d, PFS_XSK_BATCH);
		double t;

		if (n <= 0) {
			t = pfs_cli_now();
			if (t > end || (w->a->idle > 0 && w->frames && t - w->last > w->a->idle))
				break;
			if (!w->a->spin || w->frames == 0 || t - w->last > 0.001)
				pfs_xsk__wait(w->x, 50);
			continue;
		}
		t = pfs_cli_now();
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
		pfs_xsk__tx_submit(x, lens, 0); /* give the frames back */
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
	double end = pfs_cli_now() + w->a->timeout;
	uint64_t seq = 0;

	if (!buf) {
		w->err = -ENOMEM;
		return NULL;
	}
	for (int i = 0; i < PFS_XSK_BATCH; i++) {
		pat_fill(buf + (size_t)i * size, size, q);
		iov[i] = (struct iovec){ buf + (size_t)i * size, size };
	}
	w->first = pfs_cli_now();
	while (seq < w->a->count && !pfs_cli_stop) {
		uint64_t left = w->a->count - seq;
		unsigned int n = left < PFS_XSK_BATCH ? (unsigned int)left : PFS_XSK_BATCH;
		int k;

		if (w->a->pps) {
			/* pace: never ahead of count/pps; bursts of at most 16 */
			double ahead = (double)seq / (double)w->a->pps - (pfs_cli_now() - w->first);

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
		if (!k && pfs_cli_now() > end) {
			w->err = -ETIMEDOUT;
			break;
		}
	}
	if (!w->err && pfs_xsk__tx_drain(w->x, 5000))
		w->err = -ETIMEDOUT;
	w->last = pfs_cli_now();
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

static const struct pfs_opt_choice binds[] = {
	{ "auto", PFS_XSK_BIND_AUTO },
	{ "copy", PFS_XSK_BIND_COPY },
	{ "zerocopy", PFS_XSK_BIND_ZEROCOPY },
	{ 0 },
};

#define AT(f) PFS_OPT_AT(struct xsk_args, f)
static const struct pfs_opt xsk_opts[] = {
	{ "ifname", PFS_OPT_STR, AT(ifname), "IF",
	  "interface; default from AFXDP_DEVICES_<POOL> or "
	  "PCIDEVICE_<RES> (PCI address -> /sys/bus/pci/devices/A/net/)" },
	{ "port", PFS_OPT_U64, AT(port), "N", "UDP destination port (default 7600)", .min = 1 },
	{ "queues", PFS_OPT_U64, AT(queues), "N",
	  "queues 0..N-1, one socket and thread each (default 1, max 16)", .min = 1,
	  .max = XSK_MAX_QUEUES },
	{ "bind", PFS_OPT_CHOICE, AT(bind), "MODE",
	  "auto | copy | zerocopy (default auto: zero-copy, else copy)", .choices = binds },
	{ "page", PFS_OPT_FN, AT(page), "KIND",
	  "auto | 2m | 4k: UMEM pages (default auto: 2m, else 4k)",
	  .parse = pfs_cli_parse_umem_page },
	{ "frames", PFS_OPT_SIZE, AT(frames), "N",
	  "UMEM frames per queue, power of 2 (default 2048)", .min = 1, .max = 1u << 24 },
	{ "frame-size", PFS_OPT_SIZE, AT(frame_size), "N", "2048 | 4096 (default: by MTU)",
	  .min = 1, .max = 1u << 24 },
	{ "timeout", PFS_OPT_SECS, AT(timeout), "S", "give up after S seconds (default 30)" },
	{ "count", PFS_OPT_SIZE, AT(count), "N",
	  "sink: stop after N frames in total (default: until --idle); "
	  "blast: frames per queue (default 100000)" },
	{ "pin", PFS_OPT_FLAG, AT(pin), NULL,
	  "pin queue q's thread to the q-th allowed CPU (modulo)" },
	{ "result-file", PFS_OPT_STR, AT(result_file), "PATH", "also write the JSON there" },
	PFS_OPT_HEADING("\nsink:"),
	{ "attach", PFS_OPT_FN, AT(attach), "MODE",
	  "auto | native | generic (default auto: native, else generic)",
	  .parse = pfs_cli_parse_xdp_attach },
	{ "idle", PFS_OPT_SECS, AT(idle), "S", "stop S seconds after the last frame (default 2)" },
	{ "verify-csum", PFS_OPT_FLAG, AT(verify_csum), NULL,
	  "check IPv4 header and UDP checksums in user space" },
	{ "spin", PFS_OPT_FLAG, AT(spin), NULL,
	  "busy-poll the RX ring while frames flow (default: poll(2) "
	  "whenever it is empty, which leaves the CPU to the softirq)" },
	{ "ready-file", PFS_OPT_STR, AT(ready_file), "PATH",
	  "create PATH once the sockets are registered" },
	PFS_OPT_HEADING("\ndetach:"),
	{ "all", PFS_OPT_FLAG, AT(all), NULL,
	  "every link of this network namespace instead of --ifname (reading a "
	  "program's name needs CAP_SYS_ADMIN)" },
	PFS_OPT_HEADING("\nblast:"),
	{ "dst", PFS_OPT_STR, AT(dst), "IP", "receiver address (IPv4 or IPv6)" },
	{ "peer-mac", PFS_OPT_STR, AT(peer_mac), "MAC",
	  "receiver MAC (default: neighbour table, resolved if needed)" },
	{ "src-port", PFS_OPT_U64, AT(src_port), "N", "UDP source port (default: --port)",
	  .min = 1 },
	{ "size", PFS_OPT_SIZE, AT(size), "N", "UDP payload bytes, 16..65000 (default 64)",
	  .min = 1, .max = 1u << 24 },
	{ "no-udp-csum4", PFS_OPT_FLAG, AT(no_csum4), NULL, "IPv4: send UDP checksum 0" },
	{ "vlan", PFS_OPT_U64, AT(vlan), "N", "tag frames with 802.1Q VLAN N (inline tag)",
	  .min = 1, .max = 4094 },
	{ "in-place", PFS_OPT_FLAG, AT(in_place), NULL,
	  "build frames in UMEM (tx_reserve/tx_submit) instead of "
	  "copying each payload (tx_burst)" },
	{ "pps", PFS_OPT_SIZE, AT(pps), "N",
	  "pace each queue to N frames/s (default: as fast as possible; "
	  "AF_XDP has no flow control, a slower receiver drops)" },
	{ 0 },
};
#undef AT

/* 0, PFS_OPT_HELP (help printed), or -EINVAL (reported). */
static int parse_args(int argc, char **argv, struct xsk_args *a)
{
	char cmd[16];
	struct pfs_cmdline c = {
		.cmd = cmd,
		.usage = xsk_usage,
		.footer = xsk_footer,
		.group = { { xsk_opts, a } },
	};
	int err;

	memset(a, 0, sizeof(*a));
	a->port = 7600;
	a->queues = 1;
	a->timeout = 30;
	a->idle = 2;
	a->size = 64;
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		pfs_opt_usage(&c, argc < 2 ? stderr : stdout);
		return argc < 2 ? -EINVAL : PFS_OPT_HELP;
	}
	a->cmd = argv[1];
	if (strcmp(a->cmd, "sink") && strcmp(a->cmd, "blast") && strcmp(a->cmd, "detach")) {
		fprintf(stderr, "pfs xsk: unknown subcommand '%s'\n\n", a->cmd);
		pfs_opt_usage(&c, stderr);
		return -EINVAL;
	}
	snprintf(cmd, sizeof(cmd), "xsk %s", a->cmd);
	err = pfs_opt_parse(&c, argc - 1, argv + 1);
	if (err)
		return err;
	if (!strcmp(a->cmd, "blast") && (!a->dst || a->size < PAT_HDR || a->size > 65000))
		return pfs_opt_fail(&c, "--dst is required and --size must be 16..65000");
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
	if (pfs_cli_stop)
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

/* blast: the receiver's MAC from the neighbour table (of the next hop,
 * for an off-link receiver). 0 or -errno with @why set. */
static int resolve_mac(const struct xsk_args *a, const char *ifname, int ifindex,
		       struct pfs_frame_addr *peer, struct pfs_json *j, char *why, size_t n)
{
	uint8_t hop[16];
	char hs[INET6_ADDRSTRLEN] = "";
	int oif = 0, rc;

	rc = pfs_netdev_next_hop(peer->family, peer->dst_ip, hop, &oif);
	if (!rc && oif && oif != ifindex)
		pfs_warn("the route to %s leaves through ifindex %d, not %s", a->dst, oif, ifname);
	if (rc)
		memcpy(hop, peer->dst_ip, sizeof(hop));
	inet_ntop(peer->family, hop, hs, sizeof(hs));
	rc = pfs_neigh_resolve(ifindex, ifname, peer->family, hop, peer->dst_mac, 3000);
	if (rc) {
		snprintf(
			why, n,
			"cannot resolve the MAC of %s (next hop to %s) on %s (%s); pass --peer-mac",
			hs, a->dst, ifname, strerror(-rc));
		return rc;
	}
	if (strcmp(hs, a->dst))
		pfs_json_str(j, "next_hop", hs, sizeof(hs));
	return 0;
}

/* blast: the flow's addresses, ports and MACs into @peer. 0, or the exit
 * code (the result already emitted on errors of the link). */
static int blast_peer(const struct xsk_args *a, const char *ifname, struct pfs_frame_addr *peer,
		      struct pfs_json *j)
{
	int ifindex = (int)if_nametoindex(ifname), rc;
	char why[700];

	if (!ifindex) {
		snprintf(why, sizeof(why), "no interface '%s' in this network namespace", ifname);
		return emit_error(j, a, why, PFS_EXIT_ERROR);
	}
	if (parse_ip(a->dst, &peer->family, peer->dst_ip)) {
		pfs_err("xsk blast: invalid --dst '%s'", a->dst);
		return PFS_EXIT_USAGE;
	}
	peer->src_port = a->src_port;
	peer->dst_port = a->port;
	peer->vlan = (uint16_t)a->vlan;
	rc = pfs_netdev_hwaddr(ifname, peer->src_mac);
	if (!rc)
		rc = pfs_netdev_src_ip(ifname, peer->family, peer->dst_ip, peer->src_ip);
	if (rc) {
		snprintf(why, sizeof(why), "no route/address toward %s on %s: %s", a->dst, ifname,
			 strerror(-rc));
		return emit_error(j, a, why, PFS_EXIT_ERROR);
	}
	if (!a->peer_mac)
		return resolve_mac(a, ifname, ifindex, peer, j, why, sizeof(why)) ?
			       emit_error(j, a, why, PFS_EXIT_ERROR) :
			       0;
	if (pfs_mac_parse(a->peer_mac, peer->dst_mac)) {
		pfs_err("xsk blast: invalid --peer-mac '%s'", a->peer_mac);
		return PFS_EXIT_USAGE;
	}
	return 0;
}

/* sink: our XDP program on @ifname, described in the result. */
static struct pfs_xdp *sink_attach(const struct xsk_args *a, const char *ifname, struct pfs_json *j)
{
	struct pfs_xdp_opts xo = {
		.sz = sizeof(xo), .ifname = ifname, .port = a->port, .attach = a->attach
	};
	struct pfs_xdp *xdp = pfs_xdp__attach(&xo);

	if (!xdp)
		return NULL;
	pfs_json_str(j, "xdp_mode", pfs_xdp__mode_str(xdp), 16);
	pfs_json_str(j, "xdp_fallback_reason", pfs_xdp__fallback_reason(xdp), 400);
	pfs_json_u64(j, "xdp_prog_id", pfs_xdp__prog_id(xdp));
	pfs_json_u64(j, "replaced_stale_prog_id", pfs_xdp__replaced_id(xdp));
	return xdp;
}

/* One worker per queue, pinned with --pin; how many started. */
static uint32_t start_workers(const struct xsk_args *a, struct worker *w, bool sink,
			      struct pfs_json *j)
{
	char pins[XSK_MAX_QUEUES * 5 + 1] = "";
	uint32_t started = 0;

	for (; started < a->queues; started++) {
		if (pthread_create(&w[started].th, NULL, sink ? sink_worker : blast_worker,
				   &w[started])) {
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
	return started;
}

static void xdp_json(struct pfs_json *j, struct pfs_xdp *xdp)
{
	struct pfs_xdp_counters c;

	if (!xdp || pfs_xdp__counters(xdp, &c))
		return;
	pfs_json_obj(j, "xdp");
	pfs_json_u64(j, "redirected", c.redirected);
	pfs_json_u64(j, "passed", c.passed);
	pfs_json_u64(j, "malformed", c.malformed);
	pfs_json_u64(j, "no_xsk", c.no_xsk);
	pfs_json_close(j);
}

static int run(const struct xsk_args *a, const char *ifname, struct pfs_json *j)
{
	bool sink = !strcmp(a->cmd, "sink");
	struct pfs_frame_addr peer = { 0 };
	struct pfs_xdp *xdp = NULL;
	uint32_t started, opened = 0;
	struct worker *w;
	char why[700];
	int code = PFS_EXIT_ERROR;

	if (!sink && (code = blast_peer(a, ifname, &peer, j)))
		return code;
	if (sink && !(xdp = sink_attach(a, ifname, j)))
		return emit_error(j, a, pfs_xsk_last_error(), PFS_EXIT_ERROR);
	code = PFS_EXIT_ERROR;
	w = aligned_alloc(64, sizeof(*w) * XSK_MAX_QUEUES);
	if (!w) {
		snprintf(why, sizeof(why), "out of memory");
		goto out_detach;
	}
	memset(w, 0, sizeof(*w) * XSK_MAX_QUEUES);
	for (; opened < a->queues; opened++) {
		struct pfs_xsk_opts so = {
			.sz = sizeof(so),
			.ifname = ifname,
			.queue = opened,
			.xdp = xdp,
			.frames = a->frames,
			.frame_size = a->frame_size,
			.bind = a->bind,
			.page = a->page,
			.peer = sink ? NULL : &peer,
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
	started = start_workers(a, w, sink, j);
	for (uint32_t q = 0; q < started; q++)
		pthread_join(w[q].th, NULL);
	if (started == a->queues) {
		xdp_json(j, xdp);
		code = result(j, a, w, a->queues, sink);
		why[0] = '\0';
	} else {
		snprintf(why, sizeof(why), "cannot start worker threads");
	}
out_close:
	for (uint32_t q = 0; q < opened; q++)
		pfs_xsk__close(w[q].x);
	free(w);
out_detach:
	pfs_xdp__close(xdp); /* also on SIGTERM: the workers returned */
	if (why[0])
		return emit_error(j, a, why, code);
	pfs_result_emit(pfs_json_end(j), a->result_file);
	return code;
}

/* detach --all: one entry per link that had a program, keyed by its name. */
static int detach_all(const struct xsk_args *a, struct pfs_json *j)
{
	struct pfs_xdp_swept e[64];
	size_t n, removed = 0, left = 0;
	int rc = pfs_xdp_sweep(e, sizeof(e) / sizeof(e[0]), &n);

	pfs_json_obj(j, "links");
	for (size_t i = 0; i < n && i < sizeof(e) / sizeof(e[0]); i++) {
		pfs_json_obj(j, e[i].ifname);
		pfs_json_u64(j, "prog_id", e[i].id);
		pfs_json_str(j, "prog_name", e[i].name, sizeof(e[i].name));
		if (e[i].mode)
			pfs_json_str(j, "mode", e[i].mode, 16);
		pfs_json_str(j, "action", e[i].result == 1 ? "detached" : "kept", 16);
		if (e[i].result < 0)
			pfs_json_str(j, "why",
				     e[i].result == -EBUSY ? (e[i].name[0] ? "not a pfs program" :
									     "name unreadable") :
							     strerror(-e[i].result),
				     64);
		pfs_json_close(j);
		removed += e[i].result == 1;
		left += e[i].result != 1;
	}
	pfs_json_close(j);
	pfs_json_u64(j, "detached", removed);
	pfs_json_u64(j, "kept", left);
	if (rc)
		return emit_error(j, a, rc == -EBUSY ? pfs_xsk_last_error() : strerror(-rc),
				  PFS_EXIT_ERROR);
	pfs_json_str(j, "verdict", "OK", 16);
	pfs_result_emit(pfs_json_end(j), a->result_file);
	return PFS_EXIT_OK;
}

int pfs_cmd_xsk(int argc, char **argv)
{
	struct xsk_args a;
	struct pfs_json j;
	char ifname[IF_NAMESIZE], how[300];
	int rc = parse_args(argc, argv, &a);

	if (rc)
		return pfs_exit_parse(rc);
	if (pfs_cli_check_args) /* options valid; touch nothing */
		return PFS_EXIT_OK;
	pfs_json_begin(&j);
	pfs_json_str(&j, "cmd",
		     !strcmp(a.cmd, "sink")  ? "xsk sink" :
		     !strcmp(a.cmd, "blast") ? "xsk blast" :
					       "xsk detach",
		     16);
	if (!strcmp(a.cmd, "detach") && a.all)
		return detach_all(&a, &j);
	rc = pfs_netdev_resolve(a.ifname, environ, "/sys", ifname, sizeof(ifname), how,
				sizeof(how));
	if (rc)
		return emit_error(&j, &a, how, PFS_EXIT_USAGE);
	pfs_json_str(&j, "ifname", ifname, IF_NAMESIZE);
	pfs_json_str(&j, "ifname_from", how, 300);
	if (!strcmp(a.cmd, "detach")) {
		rc = pfs_xdp_detach_stale(ifname);
		if (rc < 0)
			return emit_error(&j, &a,
					  rc == -EBUSY ? pfs_xsk_last_error() : strerror(-rc),
					  PFS_EXIT_ERROR);
		pfs_json_bool(&j, "detached", rc == 1);
		pfs_json_str(&j, "verdict", "OK", 16);
		pfs_result_emit(pfs_json_end(&j), a.result_file);
		return PFS_EXIT_OK;
	}
	pfs_json_u64(&j, "port", a.port);
	pfs_cli_catch_stop();
	return run(&a, ifname, &j);
}
