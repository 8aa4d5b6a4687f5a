// SPDX-License-Identifier: Apache-2.0
/*
 * `pfs blob create --source` and `pfs blob manifest` as the operator's pods
 * run them (the binary in $PFS, default build/pfs): a source appended to by
 * another process, sizes (too small: both numbers; default: what it needs),
 * an empty file and directory, 4 KiB pages and 2 MiB hugepages (a private
 * hugetlbfs mount), the manifest by name and through a holder's socket, a
 * seeded blob without one, --check-args. Real files of installed Debian
 * packages only; named blobs in /dev/shm and a private temporary directory,
 * removed at the end. Needs root only for the hugepage test (SKIP
 * otherwise).
 */
#include <signal.h>
#include <sys/mount.h>

#include "pfs/log.h"
#include "source_util.h"
#include "tap.h"

static char tmp[64] = "/tmp/pfs-source-cli-XXXXXX";
static char shm_name[64];
static const char *pfs_bin, *file;

/* pfs with @args (a shell word list); its stdout, exit code in *rc and
 * stderr in tmp/pfs.err (read by err_has). */
static char *pfs(int *rc, const char *args)
{
	char err[128];

	snprintf(err, sizeof(err), "%s/pfs.err", tmp);
	return run(rc, err, "%s %s", pfs_bin, args);
}

static bool err_has(const char *s)
{
	char p[128];
	size_t len;
	uint8_t *e;
	bool has;

	snprintf(p, sizeof(p), "%s/pfs.err", tmp);
	e = slurp(p, &len);
	if (!e)
		return false;
	e[len] = '\0';
	has = strstr((char *)e, s) != NULL;
	if (!has)
		tap_diag("stderr: %.400s", (char *)e);
	free(e);
	return has;
}

static int t_setup(void)
{
	pfs_log_set_level(PFS_LOG_ERROR);
	pfs_bin = getenv("PFS") ? getenv("PFS") : "build/pfs";
	file = real_file();
	if (!file || access(REAL_TREE, R_OK))
		return tap_skip("no libcrypto.a or %s (hack/install-deps.sh installs them)",
				REAL_TREE);
	if (access(pfs_bin, X_OK))
		return tap_skip("no pfs binary at %s (set PFS)", pfs_bin);
	CHECK(mkdtemp(tmp), "mkdtemp: %s", strerror(errno));
	snprintf(shm_name, sizeof(shm_name), "pfs-src-test-%d", (int)getpid());
	return TAP_PASS;
}

/* The same through the CLI, the writer another process. */
static int t_file_grows_cli(void)
{
	char args[512], path[128], e[300];
	pid_t child;
	char *out;
	int rc;

	snprintf(path, sizeof(path), "%s/grow2.a", tmp);
	CHECK(!sh("cp %s %s", file, path), "copy");
	child = fork();
	if (child == 0) {
		for (int i = 0; i < 2000; i++) {
			sh("head -c 65536 %s >> %s", file, path);
			usleep(1000);
		}
		_exit(0);
	}
	usleep(20000);
	snprintf(args, sizeof(args),
		 "blob create --source %s --page 4k --source-threads 1 --source-chunk 64K", path);
	out = pfs(&rc, args);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	CHECK(out && rc == 1 && jstr(out, "error", e, sizeof(e)) &&
		      strstr(e, "source changed while it was read: 'grow2.a'"),
	      "rc %d: %s", rc, out);
	tap_diag("%s", e);
	free(out);
	return TAP_PASS;
}

/* --size below what the source needs: exit 1, both sizes in the message;
 * --dry-run prints what it needs; without --size the blob fits. */
static int t_size_too_small(void)
{
	struct pfs_source_opts o = { .sz = sizeof(o) };
	char why[512], want[160], need[32], e[600];
	struct pfs_source *s = pfs_source__scan(REAL_TREE, &o, why, sizeof(why));
	long long needed;
	char *out;
	int rc;

	CHECK(s, "scan: %s", why);
	needed = (long long)pfs_source__needed(s);
	snprintf(want, sizeof(want),
		 "source needs %s (%lld bytes) with its manifest, --size is 1 MiB",
		 pfs_size_str((uint64_t)needed, need, sizeof(need)), needed);
	pfs_source__free(s);
	out = pfs(&rc, "blob create --source " REAL_TREE " --size 1M --page 4k");
	CHECK(out && rc == 1 && !strcmp(jstr(out, "error", e, sizeof(e)), want) && err_has(want),
	      "rc %d, \"%s\", want \"%s\"", rc, e, want);
	tap_diag("%s", e);
	free(out);
	out = pfs(&rc, "blob create --source include/linux --source-root /usr --dry-run");
	CHECK(out && !rc && strstr(out, "\"dry_run\":true") && jnum(out, "needed") == needed &&
		      jnum(out, "blob_size") ==
			      (long long)((needed + (2 << 20) - 1) & ~((2 << 20) - 1)),
	      "--dry-run: rc %d: %s", rc, out);
	free(out);
	out = pfs(&rc, "blob create --source " REAL_TREE " --page 4k");
	CHECK(out && !rc && jnum(out, "files") > 100 && jnum(out, "size") % (2 << 20) == 0 &&
		      jnum(out, "size") - jnum(out, "manifest_offset") < (4 << 20),
	      "without --size: rc %d: %.300s", rc, out);
	free(out);
	return TAP_PASS;
}

/* Create @what into /dev/shm/@name with the CLI; the manifest it prints. */
static char *create_and_print(const char *what, const char *name, char *result, size_t n)
{
	char args[512], *out;
	int rc;

	snprintf(args, sizeof(args), "blob create --source %s --page 4k --name %s --dir /dev/shm",
		 what, name);
	out = pfs(&rc, args);
	snprintf(result, n, "%s", out ? out : "");
	free(out);
	if (rc) {
		tap_diag("create: rc %d: %s", rc, result);
		return NULL;
	}
	snprintf(args, sizeof(args), "blob manifest --name %s --dir /dev/shm", name);
	out = pfs(&rc, args);
	if (rc) {
		tap_diag("manifest: rc %d", rc);
		free(out);
		return NULL;
	}
	return out;
}

/* An empty file: one entry of length 0 and the manifest at 0; an empty
 * directory: no entries, the sha256 of "[]"; both the smallest blob. */
static int t_empty(void)
{
	static const char e3[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
	char path[128], want[512], res[4096], name[80], sq[65];
	char *m;

	snprintf(path, sizeof(path), "%s/empty.bin", tmp);
	snprintf(name, sizeof(name), "%s-empty", shm_name);
	CHECK(!sh(": > %s && mkdir %s/emptydir && printf '[]' > %s/sq", path, tmp, tmp), "touch");
	m = create_and_print(path, name, res, sizeof(res));
	snprintf(
		want, sizeof(want),
		"{\"version\":1,\"kind\":\"file\",\"sha256\":\"%s\",\"bytes\":0,\"files\":[{\"name\":"
		"\"empty.bin\",\"offset\":0,\"length\":0,\"sha256\":\"%s\"}]}\n",
		e3, e3);
	CHECK(m && !strcmp(m, want) && jnum(res, "size") == 2 << 20 &&
		      jnum(res, "manifest_offset") == 0,
	      "empty file: %s / %s", m, res);
	free(m);
	sh("%s blob rm --name %s --dir /dev/shm", pfs_bin, name);
	snprintf(path, sizeof(path), "%s/emptydir", tmp);
	snprintf(want, sizeof(want), "%s/sq", tmp);
	CHECK(!sha256sum(want, sq), "sha256sum");
	m = create_and_print(path, name, res, sizeof(res));
	snprintf(want, sizeof(want),
		 "{\"version\":1,\"kind\":\"dir\",\"sha256\":\"%s\",\"bytes\":0,\"files\":[]}\n",
		 sq);
	CHECK(m && !strcmp(m, want) && jnum(res, "size") == 2 << 20, "empty dir: %s / %s", m, res);
	free(m);
	sh("%s blob rm --name %s --dir /dev/shm", pfs_bin, name);
	return TAP_PASS;
}

/* 4 KiB pages, a named blob: the result, `pfs blob manifest` (the text the
 * library decodes), `blob info`, --verify, and a flipped byte caught. */
static int t_pages_4k(void)
{
	char res[4096], hex[65], e[128];
	const struct pfs_manifest_file *f;
	struct pfs_manifest *lm;
	struct pfs_blob *b;
	uint8_t *want;
	size_t len;
	char *m, *out;
	int rc;

	want = slurp(file, &len);
	CHECK(want && !sha256sum(file, hex), "read");
	m = create_and_print(file, shm_name, res, sizeof(res));
	CHECK(m && !strcmp(jstr(res, "sha256", e, sizeof(e)), hex) &&
		      !strcmp(jstr(res, "page", e, sizeof(e)), "4K"),
	      "result: %s", res);
	b = pfs_blob__open("/dev/shm", shm_name);
	CHECK(b && !pfs_blob__manifest(b, &lm, e, sizeof(e)), "open: %s", e);
	f = pfs_manifest_find(lm, "libcrypto.a");
	CHECK(strlen(m) == lm->length + 1 && !memcmp(m, lm->json, lm->length) && f &&
		      !memcmp(pfs_blob__data(b) + f->offset, want, len),
	      "printed %zu bytes, decoded %llu", strlen(m), (unsigned long long)lm->length);
	free(m);
	snprintf(res, sizeof(res), "blob info --dir /dev/shm --name %s", shm_name);
	out = pfs(&rc, res);
	CHECK(!rc && strstr(out, "\"manifest\":{\"kind\":\"file\",\"files\":1,"), "info: %s", out);
	free(out);
	snprintf(res, sizeof(res), "blob manifest --verify --dir /dev/shm --name %s", shm_name);
	free(pfs(&rc, res));
	CHECK(!rc, "--verify: rc %d", rc);
	pfs_blob__data(b)[f->offset + len / 2] ^= 0x40;
	free(pfs(&rc, res));
	pfs_blob__data(b)[f->offset + len / 2] ^= 0x40;
	CHECK(rc == 3 && err_has("'libcrypto.a': its bytes do not have the manifest's sha256"),
	      "--verify after a flip: rc %d", rc);
	pfs_manifest_free(lm);
	pfs_blob__close(b);
	free(want);
	return TAP_PASS;
}

/* `pfs blob manifest` through a holder's socket, as a consumer pod would. */
static int t_manifest_socket(void)
{
	char tok[128], sock[128], ready[128], args[512];
	char *out = NULL;
	pid_t holder;
	int rc = -1;

	snprintf(tok, sizeof(tok), "%s/token", tmp);
	snprintf(sock, sizeof(sock), "%s/holder.sock", tmp);
	snprintf(ready, sizeof(ready), "%s/ready", tmp);
	CHECK(!sh("echo 0123456789abcdef > %s", tok), "token");
	holder = fork();
	if (holder == 0) {
		int fd = open("/dev/null", O_WRONLY);

		dup2(fd, 1);
		dup2(fd, 2);
		execl(pfs_bin, pfs_bin, "blob", "serve", "--name", shm_name, "--dir", "/dev/shm",
		      "--socket", sock, "--token-file", tok, "--ready-file", ready, (char *)NULL);
		_exit(121);
	}
	for (int i = 0; i < 500 && access(ready, F_OK); i++)
		usleep(10000);
	if (!access(ready, F_OK)) {
		snprintf(args, sizeof(args), "blob manifest --blob-socket %s --blob-token-file %s",
			 sock, tok);
		out = pfs(&rc, args);
	}
	kill(holder, SIGTERM);
	waitpid(holder, NULL, 0);
	CHECK(!rc && out && !strncmp(out, "{\"version\":1,\"kind\":\"file\",", 27) &&
		      strstr(out, "\"name\":\"libcrypto.a\""),
	      "rc %d: %.200s", rc, out);
	free(out);
	return TAP_PASS;
}

/* A seeded blob has no manifest, and readers say so. */
static int t_no_manifest(void)
{
	char args[256], name[80];
	char *out;
	int rc;

	snprintf(name, sizeof(name), "%s-seed", shm_name);
	snprintf(args, sizeof(args), "blob create --name %s --dir /dev/shm --size 2M --page 4k",
		 name);
	free(pfs(&rc, args));
	CHECK(!rc, "create a seeded blob");
	snprintf(args, sizeof(args), "blob manifest --name %s --dir /dev/shm", name);
	out = pfs(&rc, args);
	CHECK(rc == 1 && out && !*out &&
		      err_has("no manifest: the blob does not end with a "
			      "PFSMANIF footer"),
	      "rc %d", rc);
	free(out);
	snprintf(args, sizeof(args), "blob info --name %s --dir /dev/shm", name);
	out = pfs(&rc, args);
	CHECK(!rc && strstr(out, "\"manifest\":null,\"manifest_error\":null"), "info: %s", out);
	free(out);
	sh("%s blob rm --name %s --dir /dev/shm", pfs_bin, name);
	return TAP_PASS;
}

/* 2 MiB hugepages on a private hugetlbfs mount, no fallback allowed. */
static int hp_2m(const char *f)
{
	char p[96];
	long v = -1;
	FILE *fp;

	snprintf(p, sizeof(p), "/sys/kernel/mm/hugepages/hugepages-2048kB/%s", f);
	fp = fopen(p, "r");
	if (fp && fscanf(fp, "%ld", &v) != 1)
		v = -1;
	if (fp)
		fclose(fp);
	return (int)v;
}

static int t_hugepages_2m(void)
{
	char mnt[96], args[512], res[4096], hex[65], e[128];
	int need = 16, added = 0, nr = hp_2m("nr_hugepages"), rc;
	struct pfs_blob *b;
	uint8_t *want;
	size_t len;
	char *out;

	if (geteuid())
		return tap_skip("needs root for vm.nr_hugepages and a hugetlbfs mount");
	if (hp_2m("free_hugepages") < need) {
		added = need - hp_2m("free_hugepages");
		sh("echo %d > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", nr + added);
		if (hp_2m("free_hugepages") < need) {
			sh("echo %d > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", nr);
			return tap_skip("the kernel gave fewer than %d free 2 MiB pages", need);
		}
	}
	snprintf(mnt, sizeof(mnt), "%s/huge", tmp);
	if (sh("mkdir -p %s", mnt) || mount("nodev", mnt, "hugetlbfs", 0, "pagesize=2M")) {
		if (added)
			sh("echo %d > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", nr);
		return tap_skip("cannot mount hugetlbfs: %s", strerror(errno));
	}
	snprintf(args, sizeof(args),
		 "blob create --source %s --page 2m --no-fallback --name %s --dir %s", file,
		 shm_name, mnt);
	out = pfs(&rc, args);
	snprintf(res, sizeof(res), "%s", out ? out : "");
	free(out);
	b = rc ? NULL : pfs_blob__open(mnt, shm_name);
	want = slurp(file, &len);
	rc = rc || !b || !want || sha256sum(file, hex) ||
	     strcmp(jstr(res, "page", e, sizeof(e)), "2M") ||
	     strcmp(jstr(res, "sha256", e, sizeof(e)), hex) ||
	     pfs_blob__page_kind(b) != PFS_PAGE_2M || memcmp(pfs_blob__data(b), want, len);
	pfs_blob__close(b);
	free(want);
	snprintf(args, sizeof(args), "blob manifest --verify --name %s --dir %s", shm_name, mnt);
	if (!rc)
		free(pfs(&rc, args));
	umount(mnt);
	if (added)
		sh("echo %d > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", nr);
	CHECK(!rc, "2M: %s", res);
	return TAP_PASS;
}

/* The CLI's --check-args takes the new options and refuses their misuse. */
static int t_check_args(void)
{
	static const struct {
		const char *args;
		int rc;
	} cases[] = {
		{ "blob create --source m.bin --source-root /data --source-threads 2 "
		  "--source-chunk 1M --source-no-direct --name b --dir /dev/hugepages --size 1G "
		  "--page 2m --result-file /dev/termination-log",
		  0 },
		{ "blob create --source /data/models --name b --replace", 0 },
		{ "blob create --source models --source-root /data --dry-run", 0 },
		{ "blob create --dry-run", 2 },
		{ "blob manifest --name b --dir /dev/hugepages", 0 },
		{ "blob manifest --blob-socket /run/s.sock --blob-token-file /t --verify", 0 },
		{ "blob create --source-root /data", 2 },
		{ "blob create --source m --fill seed", 2 },
		{ "blob create --source m --seed 3", 2 },
		{ "blob create --source m --blob-name x", 2 },
		{ "blob create --source m --source-chunk 65537", 2 },
		{ "blob create --source m --source-threads 17", 2 },
		{ "blob create --source ''", 2 },
		{ "blob info --name b --source m", 2 },
		{ "blob manifest", 2 },
		{ "blob manifest --name b --blob-socket /s --blob-token-file /t", 2 },
	};
	char args[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc;

		snprintf(args, sizeof(args), "--check-args %s", cases[i].args);
		free(pfs(&rc, args));
		CHECK(rc == cases[i].rc, "pfs %s: rc %d, want %d", args, rc, cases[i].rc);
	}
	return TAP_PASS;
}

static int t_cleanup(void)
{
	sh("%s blob rm --name %s --dir /dev/shm 2>/dev/null", pfs_bin, shm_name);
	CHECK(!sh("rm -rf %s", tmp), "rm -rf %s", tmp);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "setup: real files of installed packages, the pfs binary", t_setup, .setup = true },
	{ "a file appended to by another process while read: exit 1", t_file_grows_cli },
	{ "--size too small names both sizes; --dry-run; without --size the blob fits",
	  t_size_too_small },
	{ "an empty file and an empty directory", t_empty },
	{ "4 KiB pages, pfs blob manifest, blob info, --verify", t_pages_4k },
	{ "pfs blob manifest through a holder's socket", t_manifest_socket },
	{ "a seeded blob has no manifest, and says so", t_no_manifest },
	{ "2 MiB hugepages (hugetlbfs), no fallback", t_hugepages_2m },
	{ "--check-args takes the source options and the manifest verb", t_check_args },
	{ "cleanup", t_cleanup, .setup = true },
};

TAP_MAIN(tests)
