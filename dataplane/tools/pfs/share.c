// SPDX-License-Identifier: Apache-2.0
/*
 * `pfs blob serve` (the blob holder's main container), `pfs blob ping` (its
 * readiness probe) and `pfs blob attach`, the holder's three verbs, each an
 * entry point of main.c's table. The consumer side every other command
 * uses (--blob-socket/--blob-token-file) is acquire.c's; serve's
 * --replicate-listen is a replication session (repl.c). Single-threaded; serve runs until SIGTERM/SIGINT and then prints one JSON
 * object with its counters.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acquire.h"
#include "cli.h"
#include "commands.h"
#include "holder_metrics.h"
#include "repl.h"
#include "pfs/blob_share.h"
#include "pfs/log.h"
#include "pfs/wire.h"

#define MAX_ALLOW_UIDS 64

struct uid_list {
	uid_t uid[MAX_ALLOW_UIDS];
	int n;
};

static int parse_uids(const char *s, void *field)
{
	struct uid_list *l = field;
	char buf[1024], *save, *tok;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	l->n = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;

		if (l->n >= MAX_ALLOW_UIDS || pfs_parse_u64(tok, &v) || v >= (uid_t)-1)
			return -EINVAL;
		l->uid[l->n++] = (uid_t)v;
	}
	return l->n ? 0 : -EINVAL;
}

static int parse_mode(const char *s, void *field)
{
	char *end;
	unsigned long m = strtoul(s, &end, 8);

	if (!*s || *end || m > 0777 || !(m & 0600))
		return -EINVAL;
	*(unsigned int *)field = (unsigned int)m;
	return 0;
}

struct serve_args {
	const char *name, *dir, *result_file;
	struct uid_list allow;
	struct pfs_share_server_opts so;
	struct pfs_cli_repl repl; /* --replicate-listen, --replicate-rate */
	struct pfs_cli_holder_metrics hm; /* --metrics-listen */
};

#define AT(f) PFS_OPT_AT(struct serve_args, f)
static const struct pfs_opt serve_opts[] = {
	{ "name", PFS_OPT_STR, AT(name), "NAME", "the blob", .flags = PFS_OPT_REQUIRED },
	{ "dir", PFS_OPT_STR, AT(dir), "DIR",
	  "its directory (default: search /dev/hugepages, /dev/hugepages1G, "
	  "/dev/shm; /dev/shm is also tried when create fell back from hugetlbfs)" },
	{ "socket", PFS_OPT_STR, AT(so.socket_path), "PATH",
	  "Unix socket to listen on (parent dirs created)", .flags = PFS_OPT_REQUIRED },
	{ "token-file", PFS_OPT_STR, AT(so.token_file), "PATH",
	  "the token clients must present (re-read per client)", .flags = PFS_OPT_REQUIRED },
	{ "allow-uid", PFS_OPT_FN, AT(allow), "LIST",
	  "only these peer uids, comma-separated (default any)", .parse = parse_uids },
	{ "socket-mode", PFS_OPT_FN, AT(so.socket_mode), "OCTAL", "socket file mode (default 0660)",
	  .parse = parse_mode },
	{ "socket-group", PFS_OPT_U64, AT(so.socket_gid), "GID",
	  "socket file group (default the holder's)", .max = (gid_t)-2 },
	{ "read-only", PFS_OPT_FLAG, AT(so.read_only), NULL,
	  "hand out a read-only fd (consumers map PROT_READ)" },
	{ "client-timeout", PFS_OPT_MSEC, AT(so.client_timeout_ms), "S",
	  "drop a client that sends nothing this long (default 5)", .max = 3600,
	  .flags = PFS_OPT_NONZERO },
	{ "max-clients", PFS_OPT_U64, AT(so.max_clients), "N",
	  "connections in progress at once (default 64)", .min = 1, .max = 4096 },
	{ "ready-file", PFS_OPT_STR, AT(so.ready_file), "PATH",
	  "created once listening, removed on exit" },
	{ "result-file", PFS_OPT_STR, AT(result_file), "PATH", "write the exit JSON there too" },
	{ "replicate-listen", PFS_OPT_STR, AT(repl.listen), "ADDR:PORT",
	  "also serve the blob to replication clients (`pfs blob create --fetch-from`) on "
	  "this TCP address, with the --token-file token",
	  .flags = PFS_OPT_NONZERO },
	{ "replicate-rate", PFS_OPT_SIZE, AT(repl.rate), "BYTES_PER_S",
	  "pace each replication connection (e.g. 50Mi; default unpaced)", .min = 4096 },
	{ "chunks-dir", PFS_OPT_STR, AT(repl.chunks_dir), "DIR",
	  "flat blob: the chunk list its fill kept in DIR/NAME.chunks (`blob create "
	  "--chunks-dir`; default beside the blob's file)",
	  .flags = PFS_OPT_NONZERO },
	{ "metrics-listen", PFS_OPT_STR, AT(hm.listen), "ADDR:PORT", PFS_CLI_METRICS_HELP },
	{ 0 },
};
#undef AT

static const char serve_usage[] =
	"usage: pfs blob serve --name NAME --socket PATH --token-file PATH [options]\n"
	"\n"
	"Holds a named blob made by `pfs blob create` and hands its file descriptor\n"
	"to local consumers over a Unix socket (SCM_RIGHTS), so they map the same\n"
	"pages without setting them up again. Opens the blob without prefault or\n"
	"fill; computes its fingerprint once. Each client is identified with\n"
	"SO_PEERCRED (logged) and must send the token; the socket file is replaced\n"
	"if a previous holder died, removed on SIGTERM/SIGINT (exit 0).\n"
	"\n";

/* Where `pfs blob create` put the blob: DIR/NAME.d (files layout), DIR,
 * or /dev/shm after a fallback from a hugetlbfs DIR (see pfs_blob__create). */
static struct pfs_blob *open_named(const char *dir, const char *name)
{
	char why[768];
	struct pfs_blob *b = pfs_cli_blob_open_named(dir, name, why, sizeof(why));
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
		pfs_err("blob serve: %s", why);
	errno = err;
	return b;
}

/* Serve until SIGTERM or SIGINT (@sigs, blocked by the caller: queued even
 * for PID 1 of a container, which would otherwise ignore SIGTERM without a
 * handler) arrives on a signalfd. 0 or -errno. */
static int serve_until_signal(struct pfs_share_server *srv, const sigset_t *sigs)
{
	struct signalfd_siginfo si;
	uint64_t acc, ref;
	int sfd = signalfd(-1, sigs, SFD_CLOEXEC | SFD_NONBLOCK), err;

	if (sfd < 0) {
		err = -errno;
		pfs_err("blob serve: signalfd: %s", strerror(errno));
		return err;
	}
	err = pfs_share_server__run(srv, sfd);
	pfs_share_server__counts(srv, &acc, &ref);
	if (!err && read(sfd, &si, sizeof(si)) == sizeof(si))
		pfs_info("blob serve: signal %u, shutting down (accepted %" PRIu64
			 ", refused %" PRIu64 ")",
			 si.ssi_signo, acc, ref);
	close(sfd);
	return err;
}

/* One read pass (no prefault, no fill): the record every consumer checks
 * its mapping against; its duration into @fp_s. */
static uint64_t fingerprint(const struct pfs_blob *blob, double *fp_s)
{
	double t0 = pfs_cli_now();
	uint64_t fp = pfs_blob__fingerprint(blob);

	*fp_s = pfs_cli_now() - t0;
	pfs_info("blob serve: opened %s: %" PRIu64 " bytes on %s, fingerprint 0x%016" PRIx64
		 " (%.3f s)",
		 pfs_blob__path(blob), pfs_blob__size(blob),
		 pfs_page_kind_str(pfs_blob__page_kind(blob)), fp, *fp_s);
	return fp;
}

/* The exit JSON of serve: the blob, the clients accepted and refused, the
 * replication server's counters; stdout and --result-file. */
static void serve_result(const struct serve_args *a, const struct pfs_blob *blob, uint64_t fp,
			 double fp_s, uint64_t acc, uint64_t ref, int err)
{
	struct pfs_json j;

	pfs_json_begin(&j);
	pfs_json_bool(&j, "ok", !err);
	pfs_json_str(&j, "cmd", "blob-serve", 16);
	pfs_cli_blob_json(&j, blob, fp);
	pfs_json_num(&j, "fingerprint_s", fp_s, 4);
	pfs_json_u64(&j, "accepted", acc);
	pfs_json_u64(&j, "refused", ref);
	pfs_cli_repl_json(&j, &a->repl);
	pfs_json_str(&j, "error", err ? strerror(-err) : NULL, 120);
	if (pfs_result_emit(pfs_json_end(&j), a->result_file))
		pfs_err("cannot write the result to %s: %s", a->result_file, strerror(errno));
}

/* --metrics-listen: the page of a holder that holds its blob whole. */
static void start_metrics(struct serve_args *a, const struct pfs_blob *blob,
			  const struct pfs_share_server *srv)
{
	a->hm.process = "serve";
	a->hm.role = "holder"; /* serve does not know how the blob was filled */
	a->hm.size = pfs_blob__size(blob);
	a->hm.phase = PFS_CLI_PHASE_READY;
	a->hm.repl = &a->repl;
	a->hm.share = srv;
	pfs_cli_holder_metrics_start(&a->hm);
}

int pfs_cmd_blob_serve(int argc, char **argv)
{
	struct serve_args a = { .so = { .sz = sizeof(a.so), .socket_gid = (gid_t)-1 } };
	struct pfs_cmdline c = {
		.cmd = "blob serve",
		.usage = serve_usage,
		.group = { { serve_opts, &a }, { pfs_cli_repl_delta_opts, &a.repl.delta } },
	};
	struct pfs_share_server *srv;
	struct pfs_blob *blob;
	uint64_t fp, acc = 0, ref = 0;
	char why[320];
	double fp_s;
	sigset_t sigs;
	int err, rc = PFS_EXIT_OK;

	err = pfs_opt_parse(&c, argc, argv);
	if (err)
		return pfs_exit_parse(err);
	if (pfs_opt_given(&c, "replicate-rate") && !a.repl.listen)
		return pfs_opt_fail(&c, "--replicate-rate needs --replicate-listen"),
		       PFS_EXIT_USAGE;
	if (a.repl.chunks_dir && !a.repl.listen)
		return pfs_opt_fail(&c, "--chunks-dir needs --replicate-listen (the list is for "
					"the relays it serves)"),
		       PFS_EXIT_USAGE;
	if (pfs_cli_repl_delta_check(&c, &a.repl.delta, a.repl.listen, false, 0))
		return PFS_EXIT_USAGE;
	if (a.hm.listen && pfs_cli_metrics_check(a.hm.listen))
		return pfs_opt_fail(&c, "invalid --metrics-listen '%s' (ADDR:PORT or :PORT)",
				    a.hm.listen),
		       PFS_EXIT_USAGE;
	if (a.allow.n) {
		a.so.allow_uids = a.allow.uid;
		a.so.n_allow_uids = a.allow.n;
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
	blob = open_named(a.dir, a.name);
	if (!blob)
		return PFS_EXIT_ERROR;
	if (pfs_blob__layout(blob)) {
		struct pfs_blob_files_pages pg;

		/* The page kind consumers are told is the files' own. */
		pfs_cli_files_measure(blob, &pg);
	}
	fp = fingerprint(blob, &fp_s);
	srv = pfs_share_server__new(blob, fp, &a.so);
	a.repl.token_file = a.so.token_file;
	/* The chunk digests the fill kept beside the blob: late relays verify
	 * by them (none: they verify by sha256). */
	if (a.repl.listen)
		pfs_cli_chunks_load(&a.repl, blob);
	if (!srv || pfs_cli_repl_serve(&a.repl, blob, NULL, why, sizeof(why))) {
		pfs_share_server__free(srv);
		pfs_blob__close(blob);
		return PFS_EXIT_ERROR;
	}
	start_metrics(&a, blob, srv);
	err = serve_until_signal(srv, &sigs);
	pfs_cli_holder_metrics_stop(&a.hm);
	pfs_share_server__counts(srv, &acc, &ref);
	pfs_share_server__free(srv);
	pfs_cli_repl_stop(&a.repl);
	if (err)
		rc = PFS_EXIT_ERROR;
	serve_result(&a, blob, fp, fp_s, acc, ref, err);
	pfs_cli_repl_free(&a.repl);
	pfs_blob__close(blob);
	return rc;
}

/* The token in @path into @tok; 0, or PFS_EXIT_ERROR with the reason logged. */
static int read_token(const char *cmd, const char *path, char *tok, size_t n)
{
	int tl = pfs_share_token_read(path, tok, n);

	if (tl < 0) {
		pfs_err("%s: --token-file %s: %s", cmd, path, pfs_share_token_strerror(tl));
		return PFS_EXIT_ERROR;
	}
	return 0;
}

struct ping_args {
	const char *socket, *token_file;
	int timeout_ms;
};

#define AT(f) PFS_OPT_AT(struct ping_args, f)
static const struct pfs_opt ping_opts[] = {
	{ "socket", PFS_OPT_STR, AT(socket), "PATH", "the holder's Unix socket",
	  .flags = PFS_OPT_REQUIRED },
	{ "token-file", PFS_OPT_STR, AT(token_file), "PATH",
	  "the holder must also accept this token" },
	{ "timeout", PFS_OPT_MSEC, AT(timeout_ms), "S", "give up after S seconds (default 2)",
	  .max = 3600, .flags = PFS_OPT_NONZERO },
	{ 0 },
};
#undef AT

static const char ping_usage[] =
	"usage: pfs blob ping --socket PATH [--token-file PATH] [--timeout S]\n"
	"\n"
	"Asks a blob holder for its metadata (never an fd). With --token-file the\n"
	"holder must also accept that token. Prints one JSON object; exit 0 when\n"
	"the holder answered (and took the token), 1 when not, 5 on timeout.\n"
	"Fit for an exec readiness probe (default timeout 2 s).\n\n";

int pfs_cmd_blob_ping(int argc, char **argv)
{
	struct ping_args a = { .timeout_ms = 2000 };
	struct pfs_cmdline c = {
		.cmd = "blob ping",
		.usage = ping_usage,
		.group = { { ping_opts, &a } },
	};
	char tok[PFS_SHARE_TOKEN_MAX + 1];
	struct pfs_share_meta m;
	struct pfs_json j;
	int err;

	err = pfs_opt_parse(&c, argc, argv);
	if (err)
		return pfs_exit_parse(err);
	if (pfs_cli_check_args)
		return PFS_EXIT_OK;
	if (a.token_file && read_token("blob ping", a.token_file, tok, sizeof(tok)))
		return PFS_EXIT_ERROR;
	err = pfs_share_ping(a.socket, a.token_file ? tok : NULL, a.timeout_ms, &m);
	memset(tok, 0, sizeof(tok));
	pfs_json_begin(&j);
	pfs_json_bool(&j, "ok", !err);
	pfs_json_str(&j, "cmd", "blob-ping", 16);
	pfs_json_str(&j, "socket", a.socket, 120);
	if (!err) {
		pfs_json_u64(&j, "size", m.size);
		pfs_json_str(&j, "page", pfs_page_kind_str(m.page), 8);
		pfs_json_hex(&j, "fingerprint", m.fingerprint, 16);
		pfs_json_bool(&j, "read_only", m.flags & PFS_SHARE_F_READ_ONLY);
		pfs_json_u64(&j, "accepted", m.accepted);
		pfs_json_u64(&j, "refused", m.refused);
	}
	pfs_json_str(&j, "error", err ? (m.msg[0] ? m.msg : pfs_wire_strerror(err)) : NULL, 200);
	pfs_result_emit(pfs_json_end(&j), NULL);
	if (err)
		pfs_err("blob ping %s: %s", a.socket, m.msg[0] ? m.msg : pfs_wire_strerror(err));
	return !err ? PFS_EXIT_OK : err == -ETIMEDOUT ? PFS_EXIT_TIMEOUT : PFS_EXIT_ERROR;
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

struct attach_args {
	const char *socket, *token_file, *result_file;
	struct pfs_share_client_opts o;
};

#define AT(f) PFS_OPT_AT(struct attach_args, f)
static const struct pfs_opt attach_opts[] = {
	{ "socket", PFS_OPT_STR, AT(socket), "PATH", "the holder's Unix socket",
	  .flags = PFS_OPT_REQUIRED },
	{ "token-file", PFS_OPT_STR, AT(token_file), "PATH", "file holding the token",
	  .flags = PFS_OPT_REQUIRED },
	{ "no-verify", PFS_OPT_FLAG, AT(o.no_verify), NULL,
	  "skip the fingerprint check of the mapping" },
	{ "timeout", PFS_OPT_MSEC, AT(o.timeout_ms), "S", "give up after S seconds (default 5)",
	  .max = 3600, .flags = PFS_OPT_NONZERO },
	{ "result-file", PFS_OPT_STR, AT(result_file), "PATH", "also write the JSON there" },
	{ 0 },
};
#undef AT

static const char attach_usage[] =
	"usage: pfs blob attach --socket PATH --token-file PATH [--no-verify]\n"
	"                       [--timeout S] [--result-file PATH]\n"
	"\n"
	"Takes the blob from a holder exactly as a consumer does (fd, mmap, size and\n"
	"fingerprint check) and prints what it got, how long attaching took and\n"
	"the node's HugePages_Free before and after (from /proc/meminfo; other\n"
	"processes on the node move it too). Exit 0 when attached.\n\n";

static void attach_json(struct pfs_json *j, const struct attach_args *a, const struct pfs_blob *b,
			const struct pfs_share_meta *m, double attach_s)
{
	pfs_json_u64(j, "size", pfs_blob__size(b));
	pfs_json_str(j, "page", pfs_page_kind_str(m->page), 8);
	pfs_json_hex(j, "fingerprint", m->fingerprint, 16);
	pfs_json_bool(j, "verified", !a->o.no_verify);
	pfs_json_bool(j, "read_only", m->flags & PFS_SHARE_F_READ_ONLY);
	pfs_json_num(j, "attach_s", attach_s, 4);
	pfs_json_u64(j, "holder_accepted", m->accepted);
}

int pfs_cmd_blob_attach(int argc, char **argv)
{
	struct pfs_share_meta m = { 0 };
	struct attach_args a = { .o = { .sz = sizeof(a.o), .timeout_ms = 5000, .meta = &m } };
	struct pfs_cmdline c = {
		.cmd = "blob attach",
		.usage = attach_usage,
		.group = { { attach_opts, &a } },
	};
	char tok[PFS_SHARE_TOKEN_MAX + 1], why[320];
	struct pfs_blob *b;
	struct pfs_json j;
	double attach_s = 0;
	long hp0, hp1;
	int err;

	a.o.attach_s = &attach_s;
	err = pfs_opt_parse(&c, argc, argv);
	if (err)
		return pfs_exit_parse(err);
	if (pfs_cli_check_args)
		return PFS_EXIT_OK;
	if (read_token("blob attach", a.token_file, tok, sizeof(tok)))
		return PFS_EXIT_ERROR;
	hp0 = hugepages_free();
	b = pfs_blob__from_socket(a.socket, tok, &a.o);
	if (!b) {
		err = -errno;
		pfs_cli_share_reason(a.socket, &m, -err, why, sizeof(why));
	}
	hp1 = hugepages_free();
	memset(tok, 0, sizeof(tok));
	pfs_json_begin(&j);
	pfs_json_bool(&j, "ok", b != NULL);
	pfs_json_str(&j, "cmd", "blob-attach", 16);
	pfs_json_str(&j, "socket", a.socket, 120);
	if (b)
		attach_json(&j, &a, b, &m, attach_s);
	if (hp0 >= 0 && hp1 >= 0) {
		pfs_json_u64(&j, "hugepages_free_before", (uint64_t)hp0);
		pfs_json_u64(&j, "hugepages_free_after", (uint64_t)hp1);
	}
	pfs_json_str(&j, "error", b ? NULL : why, 300);
	if (pfs_result_emit(pfs_json_end(&j), a.result_file))
		pfs_err("cannot write the result to %s: %s", a.result_file, strerror(errno));
	pfs_blob__close(b);
	return b ? PFS_EXIT_OK : err == -ETIMEDOUT ? PFS_EXIT_TIMEOUT : PFS_EXIT_ERROR;
}
