// SPDX-License-Identifier: Apache-2.0
/*
 * `pfs blob serve` (the blob holder's main container), `pfs blob ping` (its
 * readiness probe) and the consumer options --blob-socket/--blob-token-file.
 * Single-threaded; serve runs until SIGTERM/SIGINT and then prints one JSON
 * object with its counters.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pfs/blob_share.h"
#include "cli.h"
#include "cli_share.h"
#include "pfs/log.h"

#define MAX_ALLOW_UIDS 64

static const char serve_usage[] =
	"usage: pfs blob serve --name NAME [--dir DIR] --socket PATH --token-file PATH [options]\n"
	"\n"
	"Holds a named blob made by `pfs blob create` and hands its file descriptor\n"
	"to local consumers over a Unix socket (SCM_RIGHTS), so they map the same\n"
	"pages without setting them up again. Opens the blob without prefault or\n"
	"fill; computes its fingerprint once. Each client is identified with\n"
	"SO_PEERCRED (logged) and must send the token; the socket file is replaced\n"
	"if a previous holder died, removed on SIGTERM/SIGINT (exit 0).\n"
	"\n"
	"  --name NAME, --dir DIR   the blob (dir default: search /dev/hugepages,\n"
	"                           /dev/hugepages1G, /dev/shm; /dev/shm is also\n"
	"                           tried when create fell back from hugetlbfs)\n"
	"  --socket PATH            Unix socket to listen on (parent dirs created)\n"
	"  --token-file PATH        the token clients must present (re-read per client)\n"
	"  --allow-uid LIST         only these peer uids, comma-separated (default any)\n"
	"  --socket-mode OCTAL      socket file mode (default 0660)\n"
	"  --socket-group GID       socket file group (default the holder's)\n"
	"  --read-only              hand out a read-only fd (consumers map PROT_READ)\n"
	"  --client-timeout S       drop a client that sends nothing this long (default 5)\n"
	"  --max-clients N          connections in progress at once (default 64)\n"
	"  --ready-file PATH        created once listening, removed on exit\n"
	"  --result-file PATH       write the exit JSON there too\n";

static const char ping_usage[] =
	"usage: pfs blob ping --socket PATH [--token-file PATH] [--timeout S]\n"
	"\n"
	"Asks a blob holder for its metadata (never an fd). With --token-file the\n"
	"holder must also accept that token. Prints one JSON object; exit 0 when\n"
	"the holder answered (and took the token), 1 when not, 5 on timeout.\n"
	"Fit for an exec readiness probe (default timeout 2 s).\n";

static const char attach_usage[] =
	"usage: pfs blob attach --socket PATH --token-file PATH [--no-verify] [--timeout S]\n"
	"                       [--result-file PATH]\n"
	"\n"
	"Takes the blob from a holder exactly as a consumer does (fd, mmap, size and\n"
	"fingerprint check) and prints what it got, how long attaching took and\n"
	"the node's HugePages_Free before and after (from /proc/meminfo; other\n"
	"processes on the node move it too). Exit 0 when attached.\n";

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int parse_ms(const char *s, int *ms)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || v <= 0 || v > 3600)
		return -EINVAL;
	*ms = (int)(v * 1000);
	return *ms > 0 ? 0 : -EINVAL;
}

static int parse_uids(const char *s, uid_t *out, int *n)
{
	char buf[1024], *save, *tok;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	*n = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;

		if (*n >= MAX_ALLOW_UIDS || pfs_parse_u64(tok, &v) || v >= (uid_t)-1)
			return -EINVAL;
		out[(*n)++] = (uid_t)v;
	}
	return *n ? 0 : -EINVAL;
}

/* Where `pfs blob create` put the blob: DIR, or /dev/shm after a fallback
 * from a hugetlbfs DIR (see pfs_blob__create). */
static struct pfs_blob *open_named(const char *dir, const char *name)
{
	struct pfs_blob *b = pfs_blob__open(dir, name);
	int err = errno;

	if (!b && err == ENOENT && dir && strcmp(dir, "/dev/shm")) {
		b = pfs_blob__open("/dev/shm", name);
		if (b) {
			pfs_warn("blob serve: '%s' is not in %s; serving /dev/shm/%s (create fell "
				 "back from hugepages)",
				 name, dir, name);
			return b;
		}
	}
	if (!b)
		pfs_err("blob serve: cannot open blob '%s'%s%s: %s", name, dir ? " in " : "",
			dir ? dir : "", strerror(err));
	errno = err;
	return b;
}

int pfs_cmd_blob_serve(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "name", 1, 0, PFS_OPT_LONG },
		{ "dir", 1, 0, PFS_OPT_LONG },
		{ "socket", 1, 0, PFS_OPT_LONG },
		{ "token-file", 1, 0, PFS_OPT_LONG },
		{ "allow-uid", 1, 0, PFS_OPT_LONG },
		{ "socket-mode", 1, 0, PFS_OPT_LONG },
		{ "socket-group", 1, 0, PFS_OPT_LONG },
		{ "read-only", 0, 0, PFS_OPT_LONG },
		{ "client-timeout", 1, 0, PFS_OPT_LONG },
		{ "max-clients", 1, 0, PFS_OPT_LONG },
		{ "ready-file", 1, 0, PFS_OPT_LONG },
		{ "result-file", 1, 0, PFS_OPT_LONG },
		{ "help", 0, 0, 'h' },
		{ 0 },
	};
	struct pfs_share_server_opts so = { .sz = sizeof(so), .socket_gid = (gid_t)-1 };
	const char *name = NULL, *dir = NULL, *result_file = NULL;
	uid_t uids[MAX_ALLOW_UIDS];
	struct pfs_share_server *srv;
	struct pfs_blob *blob;
	struct pfs_json j;
	uint64_t fp, acc = 0, ref = 0;
	double t0, fp_s;
	sigset_t sigs;
	int c, idx, err, rc = PFS_EXIT_OK;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", lo, &idx)) != -1) {
		const char *n = lo[idx].name, *v = optarg;
		uint64_t u;

		if (c == 'h') {
			fputs(serve_usage, stdout);
			return PFS_EXIT_OK;
		}
		if (c != PFS_OPT_LONG)
			goto usage;
		if (!strcmp(n, "name")) {
			name = v;
		} else if (!strcmp(n, "dir")) {
			dir = v;
		} else if (!strcmp(n, "socket")) {
			so.socket_path = v;
		} else if (!strcmp(n, "token-file")) {
			so.token_file = v;
		} else if (!strcmp(n, "allow-uid")) {
			if (parse_uids(v, uids, &so.n_allow_uids))
				goto bad;
			so.allow_uids = uids;
		} else if (!strcmp(n, "socket-mode")) {
			char *end;
			unsigned long m = strtoul(v, &end, 8);

			if (!*v || *end || m > 0777 || !(m & 0600))
				goto bad;
			so.socket_mode = (unsigned int)m;
		} else if (!strcmp(n, "socket-group")) {
			if (pfs_parse_u64(v, &u) || u >= (gid_t)-1)
				goto bad;
			so.socket_gid = (gid_t)u;
		} else if (!strcmp(n, "read-only")) {
			so.read_only = true;
		} else if (!strcmp(n, "client-timeout")) {
			if (parse_ms(v, &so.client_timeout_ms))
				goto bad;
		} else if (!strcmp(n, "max-clients")) {
			if (pfs_parse_u64(v, &u) || !u || u > 4096)
				goto bad;
			so.max_clients = (int)u;
		} else if (!strcmp(n, "ready-file")) {
			so.ready_file = v;
		} else if (!strcmp(n, "result-file")) {
			result_file = v;
		}
		continue;
bad:
		fprintf(stderr, "pfs blob serve: invalid --%s '%s'\n", n, v);
		return PFS_EXIT_USAGE;
	}
	if (optind < argc) {
		fprintf(stderr, "pfs blob serve: unexpected argument '%s'\n", argv[optind]);
		goto usage;
	}
	if (!name || !so.socket_path || !so.token_file) {
		fprintf(stderr, "pfs blob serve: --name, --socket and --token-file are required\n");
		goto usage;
	}
	if (pfs_cli_check_args)
		return PFS_EXIT_OK;

	/* Block SIGTERM/SIGINT from here on: one that arrives during the
	 * fingerprint pass stays pending for the server's signalfd instead of
	 * being dropped (PID 1 of a container has no default action). */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	blob = open_named(dir, name);
	if (!blob)
		return PFS_EXIT_ERROR;
	/* One read pass (no prefault, no fill): the record every consumer
	 * checks its mapping against. */
	t0 = now_s();
	fp = pfs_blob__fingerprint(blob);
	fp_s = now_s() - t0;
	pfs_info("blob serve: opened %s: %" PRIu64 " bytes on %s, fingerprint 0x%016" PRIx64
		 " (%.3f s)",
		 pfs_blob__path(blob), pfs_blob__size(blob),
		 pfs_page_kind_str(pfs_blob__page_kind(blob)), fp, fp_s);
	srv = pfs_share_server__new(blob, fp, &so);
	if (!srv) {
		pfs_blob__close(blob);
		return PFS_EXIT_ERROR;
	}
	err = pfs_share_server__run(srv);
	pfs_share_server__counts(srv, &acc, &ref);
	pfs_share_server__free(srv);
	if (err)
		rc = PFS_EXIT_ERROR;

	pfs_json_begin(&j);
	pfs_json_bool(&j, "ok", !err);
	pfs_json_str(&j, "cmd", "blob-serve", 16);
	pfs_cli_blob_json(&j, blob, fp);
	pfs_json_num(&j, "fingerprint_s", fp_s, 4);
	pfs_json_u64(&j, "accepted", acc);
	pfs_json_u64(&j, "refused", ref);
	pfs_json_str(&j, "error", err ? strerror(-err) : NULL, 120);
	if (pfs_result_emit(pfs_json_end(&j), result_file))
		pfs_err("cannot write the result to %s: %s", result_file, strerror(errno));
	pfs_blob__close(blob);
	return rc;
usage:
	fprintf(stderr, "\n%s", serve_usage);
	return PFS_EXIT_USAGE;
}

int pfs_cmd_blob_ping(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "socket", 1, 0, PFS_OPT_LONG },
		{ "timeout", 1, 0, PFS_OPT_LONG },
		{ "token-file", 1, 0, PFS_OPT_LONG },
		{ "help", 0, 0, 'h' },
		{ 0 },
	};
	const char *path = NULL, *token_file = NULL;
	char tok[PFS_SHARE_TOKEN_MAX + 1];
	struct pfs_share_meta m;
	struct pfs_json j;
	int c, idx, ms = 2000, err;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", lo, &idx)) != -1) {
		if (c == 'h') {
			fputs(ping_usage, stdout);
			return PFS_EXIT_OK;
		}
		if (c != PFS_OPT_LONG)
			goto usage;
		if (!strcmp(lo[idx].name, "socket")) {
			path = optarg;
		} else if (!strcmp(lo[idx].name, "token-file")) {
			token_file = optarg;
		} else if (parse_ms(optarg, &ms)) {
			fprintf(stderr, "pfs blob ping: invalid --timeout '%s'\n", optarg);
			return PFS_EXIT_USAGE;
		}
	}
	if (optind < argc || !path)
		goto usage;
	if (pfs_cli_check_args)
		return PFS_EXIT_OK;
	if (token_file) {
		int tl = pfs_share_token_read(token_file, tok, sizeof(tok));

		if (tl < 0) {
			pfs_err("blob ping: --token-file %s: %s", token_file,
				pfs_share_token_strerror(tl));
			return PFS_EXIT_ERROR;
		}
	}
	err = pfs_share_ping(path, token_file ? tok : NULL, ms, &m);
	memset(tok, 0, sizeof(tok));
	pfs_json_begin(&j);
	pfs_json_bool(&j, "ok", !err);
	pfs_json_str(&j, "cmd", "blob-ping", 16);
	pfs_json_str(&j, "socket", path, 120);
	if (!err) {
		pfs_json_u64(&j, "size", m.size);
		pfs_json_str(&j, "page", pfs_page_kind_str(m.page), 8);
		pfs_json_hex(&j, "fingerprint", m.fingerprint, 16);
		pfs_json_bool(&j, "read_only", m.flags & PFS_SHARE_F_READ_ONLY);
		pfs_json_u64(&j, "accepted", m.accepted);
		pfs_json_u64(&j, "refused", m.refused);
	}
	pfs_json_str(&j, "error", err ? (m.msg[0] ? m.msg : strerror(-err)) : NULL, 200);
	pfs_result_emit(pfs_json_end(&j), NULL);
	if (err)
		pfs_err("blob ping %s: %s", path, m.msg[0] ? m.msg : strerror(-err));
	return !err ? PFS_EXIT_OK : err == -ETIMEDOUT ? PFS_EXIT_TIMEOUT : PFS_EXIT_ERROR;
usage:
	fprintf(stderr, "%s", ping_usage);
	return PFS_EXIT_USAGE;
}

/* One line for a result: why pfs_blob__from_socket failed with @e. */
static void share_reason(const char *path, const struct pfs_share_meta *m, int e, char *buf,
			 size_t n)
{
	if (m->msg[0])
		snprintf(buf, n, "blob holder %s refused: %s", path, m->msg);
	else
		snprintf(buf, n, "blob from holder %s: %s", path,
			 e == EIO    ? "fingerprint differs from the holder's record (blob "
				       "modified since the holder started)" :
			 e == EINVAL ? "size differs from the holder's record" :
			 e == EACCES ? "permission denied on the socket (mode/group)" :
				       strerror(e));
}

static long hugepages_free(void)
{
	char line[128];
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "HugePages_Free:", 15))
			v = strtol(line + 15, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

int pfs_cmd_blob_attach(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "socket", 1, 0, PFS_OPT_LONG },
		{ "token-file", 1, 0, PFS_OPT_LONG },
		{ "timeout", 1, 0, PFS_OPT_LONG },
		{ "no-verify", 0, 0, PFS_OPT_LONG },
		{ "result-file", 1, 0, PFS_OPT_LONG },
		{ "help", 0, 0, 'h' },
		{ 0 },
	};
	struct pfs_share_meta m = { 0 };
	struct pfs_share_client_opts o = { .sz = sizeof(o), .timeout_ms = 5000, .meta = &m };
	const char *path = NULL, *token_file = NULL, *result_file = NULL;
	char tok[PFS_SHARE_TOKEN_MAX + 1], why[320];
	struct pfs_blob *b;
	struct pfs_json j;
	double attach_s = 0;
	long hp0, hp1;
	int c, idx, tl, err = 0;

	o.attach_s = &attach_s;
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", lo, &idx)) != -1) {
		const char *n = lo[idx].name;

		if (c == 'h') {
			fputs(attach_usage, stdout);
			return PFS_EXIT_OK;
		}
		if (c != PFS_OPT_LONG)
			goto usage;
		if (!strcmp(n, "socket")) {
			path = optarg;
		} else if (!strcmp(n, "token-file")) {
			token_file = optarg;
		} else if (!strcmp(n, "result-file")) {
			result_file = optarg;
		} else if (!strcmp(n, "no-verify")) {
			o.no_verify = true;
		} else if (parse_ms(optarg, &o.timeout_ms)) {
			fprintf(stderr, "pfs blob attach: invalid --timeout '%s'\n", optarg);
			return PFS_EXIT_USAGE;
		}
	}
	if (optind < argc || !path || !token_file)
		goto usage;
	tl = pfs_share_token_read(token_file, tok, sizeof(tok));
	if (tl < 0) {
		pfs_err("blob attach: --token-file %s: %s", token_file,
			pfs_share_token_strerror(tl));
		return PFS_EXIT_ERROR;
	}
	hp0 = hugepages_free();
	b = pfs_blob__from_socket(path, tok, &o);
	if (!b) {
		err = -errno;
		share_reason(path, &m, -err, why, sizeof(why));
	}
	hp1 = hugepages_free();
	memset(tok, 0, sizeof(tok));
	pfs_json_begin(&j);
	pfs_json_bool(&j, "ok", b != NULL);
	pfs_json_str(&j, "cmd", "blob-attach", 16);
	pfs_json_str(&j, "socket", path, 120);
	if (b) {
		pfs_json_u64(&j, "size", pfs_blob__size(b));
		pfs_json_str(&j, "page", pfs_page_kind_str(m.page), 8);
		pfs_json_hex(&j, "fingerprint", m.fingerprint, 16);
		pfs_json_bool(&j, "verified", !o.no_verify);
		pfs_json_bool(&j, "read_only", m.flags & PFS_SHARE_F_READ_ONLY);
		pfs_json_num(&j, "attach_s", attach_s, 4);
		pfs_json_u64(&j, "holder_accepted", m.accepted);
	}
	if (hp0 >= 0 && hp1 >= 0) {
		pfs_json_u64(&j, "hugepages_free_before", (uint64_t)hp0);
		pfs_json_u64(&j, "hugepages_free_after", (uint64_t)hp1);
	}
	pfs_json_str(&j, "error", b ? NULL : why, 300);
	if (pfs_result_emit(pfs_json_end(&j), result_file))
		pfs_err("cannot write the result to %s: %s", result_file, strerror(errno));
	pfs_blob__close(b);
	return b ? PFS_EXIT_OK : err == -ETIMEDOUT ? PFS_EXIT_TIMEOUT : PFS_EXIT_ERROR;
usage:
	fprintf(stderr, "%s", attach_usage);
	return PFS_EXIT_USAGE;
}

int pfs_cli_share_opt(struct pfs_cli_share *s, const char *name, const char *val)
{
	if (strcmp(name, "blob-socket") && strcmp(name, "blob-token-file"))
		return 0;
	if (!val || !*val) {
		fprintf(stderr, "pfs: --%s needs a path\n", name);
		return -1;
	}
	if (!strcmp(name, "blob-socket"))
		s->socket = val;
	else
		s->token_file = val;
	return 1;
}

struct pfs_blob *pfs_cli_share_get(const struct pfs_cli_share *s, char *why, size_t n)
{
	char tok[PFS_SHARE_TOKEN_MAX + 1], buf[320];
	struct pfs_share_meta m = { 0 };
	struct pfs_share_client_opts o = { .sz = sizeof(o), .meta = &m };
	struct pfs_blob *b;
	int tl, e;

	if (!s->socket || !s->token_file) {
		snprintf(buf, sizeof(buf), "--blob-socket and --blob-token-file go together");
		pfs_err("%s", buf);
		e = EINVAL;
		goto out_fail;
	}
	tl = pfs_share_token_read(s->token_file, tok, sizeof(tok));
	if (tl < 0) {
		snprintf(buf, sizeof(buf), "--blob-token-file %s: %s", s->token_file,
			 pfs_share_token_strerror(tl));
		pfs_err("%s", buf);
		e = -tl;
		goto out_fail;
	}
	b = pfs_blob__from_socket(s->socket, tok, &o);
	e = errno;
	memset(tok, 0, sizeof(tok));
	if (b)
		return b;
	/* pfs_blob__from_socket logged the details; one line for the result. */
	share_reason(s->socket, &m, e, buf, sizeof(buf));
out_fail:
	if (why && n)
		snprintf(why, n, "%s", buf);
	errno = e;
	return NULL;
}
