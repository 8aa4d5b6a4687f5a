// SPDX-License-Identifier: Apache-2.0
/*
 * Blobs loaded from real files through the library (blob_source.h): a file
 * and a directory tree of installed Debian packages checked against
 * coreutils' sha256sum and their own bytes; escapes, special files, names,
 * sources that change while read (a writer thread), O_DIRECT reporting,
 * and the read's last units cut smaller (what a relay waits for at the end).
 * The CLI side is test_blob_source_cli.c. Copies of real files go to a
 * private temporary directory (on the root file system, so O_DIRECT is
 * exercised) and are removed at the end.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "pfs/integrity.h"
#include "pfs/log.h"
#include "source_util.h"
#include "marks.h"
#include "tap.h"

static char tmp[64] = "/tmp/pfs-source-XXXXXX";
static char root[96];
static const char *file;

static bool all_zero(const uint8_t *p, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static int t_setup(void)
{
	pfs_log_set_level(PFS_LOG_ERROR);
	file = real_file();
	if (!file || access(REAL_TREE, R_OK))
		return tap_skip("no libcrypto.a or %s (hack/install-deps.sh installs them)",
				REAL_TREE);
	CHECK(mkdtemp(tmp), "mkdtemp: %s", strerror(errno));
	snprintf(root, sizeof(root), "%s/root", tmp);
	CHECK(!sh("mkdir -p %s/root/sub && cp %s %s/root/lib.a && cp %s %s/outside.a", tmp, file,
		  tmp, file, tmp),
	      "copy the real file");
	return TAP_PASS;
}

/* The file's bytes, sha256 (sha256sum) and CRC32C (the portable table)
 * are what the blob and its manifest say. */
static int t_single_file(void)
{
	struct loaded L;
	const struct pfs_manifest_file *f;
	char hex[65], mhex[65];
	uint8_t *want;
	size_t len;

	if (!file)
		return tap_skip("no real file");
	want = slurp(file, &len);
	CHECK(want && !sha256sum(file, hex), "read %s", file);
	CHECK(!load(file, NULL, PFS_PAGE_4K, &L), "load: %s", L.why);
	f = &L.m->files[0];
	pfs_sha256_hex(L.m->sha256, mhex);
	CHECK(L.m->kind == PFS_MANIFEST_FILE && L.m->nfiles == 1 && !strcmp(f->name, "libcrypto.a"),
	      "kind %d, %zu files, name %s", L.m->kind, L.m->nfiles, f->name);
	CHECK(!strcmp(hex, mhex) && !strcmp(hex, L.st.sha256), "sha256sum %s, manifest %s", hex,
	      mhex);
	CHECK(!memcmp(f->sha256, L.m->sha256, 32), "file and top-level sha256 differ");
	CHECK(f->offset == 0 && f->length == len &&
		      !memcmp(pfs_blob__data(L.blob) + f->offset, want, len),
	      "bytes at %llu differ from the file", (unsigned long long)f->offset);
	CHECK(L.st.crc32c == pfs_crc32c_portable(0, want, len), "crc32c 0x%08x", L.st.crc32c);
	CHECK(L.m->offset == (len + 4095) / 4096 * 4096 &&
		      all_zero(pfs_blob__data(L.blob) + len, L.m->offset - len) &&
		      all_zero(pfs_blob__data(L.blob) + L.m->offset + L.m->length,
			       pfs_blob__size(L.blob) - 64 - L.m->offset - L.m->length),
	      "manifest at %llu; the gaps are not zero", (unsigned long long)L.m->offset);
	tap_diag("%s: %zu bytes, read %.0f MB/s (O_DIRECT %s%s), sha256 %.0f MB/s, %.4f s", file,
		 len, len / 1e6 / L.st.read_s,
		 L.st.o_direct ? "yes" : "no: ", L.st.o_direct ? "" : L.st.o_direct_why,
		 len / 1e6 / L.st.sha256_s, L.st.load_s);
	unload(&L);
	free(want);
	return TAP_PASS;
}

/* Every file of a real tree, by sha256sum and by its bytes; the names are
 * relative and sorted; the top-level sha256 is the one of the "files"
 * text, by sha256sum. */
static int t_directory(void)
{
	char path[128], hex[65], *sums, *line, *save;
	struct loaded L;
	size_t count = 0;
	uint64_t end = 0;
	int rc;
	FILE *f;

	CHECK(!load(REAL_TREE, NULL, PFS_PAGE_4K, &L), "load: %s", L.why);
	sums = run(&rc, NULL, "cd %s && find . -type f -print0 | xargs -0 sha256sum", REAL_TREE);
	CHECK(sums && !rc, "sha256sum over %s", REAL_TREE);
	for (line = strtok_r(sums, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const struct pfs_manifest_file *e = pfs_manifest_find(L.m, line + 66 + 2);
		char mhex[65];

		CHECK(strlen(line) > 68 && e, "'%s' is not in the manifest", line);
		pfs_sha256_hex(e->sha256, mhex);
		CHECK(!strncmp(line, mhex, 64), "%s: manifest %s", line, mhex);
		count++;
	}
	free(sums);
	CHECK(count == L.m->nfiles && count > 100, "%zu files, manifest %zu", count, L.m->nfiles);
	for (size_t i = 0; i < L.m->nfiles; i++) {
		const struct pfs_manifest_file *e = &L.m->files[i];
		uint8_t *want;
		size_t len;

		snprintf(path, sizeof(path), "%s/%s", REAL_TREE, e->name);
		want = slurp(path, &len);
		CHECK(want && len == e->length &&
			      !memcmp(pfs_blob__data(L.blob) + e->offset, want, len),
		      "%s: bytes differ", e->name);
		CHECK(all_zero(pfs_blob__data(L.blob) + end, e->offset - end), "gap before %s",
		      e->name);
		CHECK(!i || strcmp(L.m->files[i - 1].name, e->name) < 0, "order at %s", e->name);
		end = e->offset + e->length;
		free(want);
	}
	snprintf(path, sizeof(path), "%s/files.json", tmp);
	f = fopen(path, "w");
	CHECK(f && fwrite(L.m->json + L.m->files_off, 1, L.m->files_len, f) == L.m->files_len &&
		      !fclose(f) && !sha256sum(path, hex),
	      "write %s", path);
	CHECK(!strcmp(hex, L.st.sha256), "sha256 of the files text %s, manifest %s", hex,
	      L.st.sha256);
	CHECK(!pfs_manifest_verify(L.m, pfs_blob__data(L.blob), pfs_blob__size(L.blob), L.why,
				   sizeof(L.why)),
	      "verify: %s", L.why);
	pfs_blob__data(L.blob)[L.m->files[7].offset + 1] ^= 1;
	CHECK(pfs_manifest_verify(L.m, pfs_blob__data(L.blob), pfs_blob__size(L.blob), L.why,
				  sizeof(L.why)) == -EBADMSG &&
		      strstr(L.why, L.m->files[7].name),
	      "a flipped byte of %s: %s", L.m->files[7].name, L.why);
	tap_diag("%s: %zu files, %llu bytes, read %.0f MB/s, sha256 %.0f MB/s, %.4f s", REAL_TREE,
		 L.m->nfiles, (unsigned long long)L.m->bytes, L.m->bytes / 1e6 / L.st.read_s,
		 L.m->bytes / 1e6 / L.st.sha256_s, L.st.load_s);
	unload(&L);
	return TAP_PASS;
}

/* scan @path beneath @rootdir: it must fail with @err and a message
 * holding @what. */
static int refused(const char *path, const char *rootdir, int err, const char *what)
{
	struct pfs_source_opts o = { .sz = sizeof(o), .root = rootdir };
	char why[512] = "";
	struct pfs_source *s = pfs_source__scan(path, &o, why, sizeof(why));
	int e = errno;

	if (s) {
		pfs_source__free(s);
		tap_diag("'%s' beneath %s was accepted", path, rootdir ? rootdir : "-");
		return TAP_FAIL;
	}
	if (e != err || !strstr(why, what)) {
		tap_diag("'%s': errno %d (want %d), \"%s\" (want \"%s\")", path, e, err, why, what);
		return TAP_FAIL;
	}
	tap_diag("refused: %s", why);
	return TAP_PASS;
}

static int t_dotdot(void)
{
	if (refused("../outside.a", root, EXDEV, "'../outside.a' leads out of the source root") ||
	    refused("sub/../../outside.a", root, EXDEV, "leads out") ||
	    refused("/etc/os-release", root, EXDEV, "is absolute"))
		return TAP_FAIL;
	return TAP_PASS;
}

static int t_symlink_out(void)
{
	int r;

	CHECK(!sh("ln -s ../../outside.a %s/sub/evil", root), "symlink");
	r = refused(".", root, EXDEV, "symlink 'sub/evil' -> '../../outside.a' points outside");
	if (!r)
		r = refused(root, NULL, EXDEV, "points outside the source root");
	sh("rm %s/sub/evil && ln -s /etc/os-release %s/abs", root, root);
	if (!r)
		r = refused(".", root, EXDEV, "symlink 'abs' -> '/etc/os-release' points outside");
	sh("rm %s/abs", root);
	return r;
}

/* A relative symlink to a file inside the root is followed: its entry
 * holds the target's bytes under the link's name. */
static int t_symlink_in(void)
{
	struct pfs_source_opts o = { .sz = sizeof(o), .root = tmp };
	const struct pfs_manifest_file *a, *b;
	struct loaded L;

	CHECK(!sh("ln -s ../lib.a %s/sub/alias", root), "symlink");
	CHECK(!load("root", &o, PFS_PAGE_4K, &L), "load: %s", L.why);
	sh("rm %s/sub/alias", root);
	a = pfs_manifest_find(L.m, "lib.a");
	b = pfs_manifest_find(L.m, "sub/alias");
	CHECK(L.m->nfiles == 2 && a && b && !memcmp(a->sha256, b->sha256, 32) &&
		      !memcmp(pfs_blob__data(L.blob) + a->offset,
			      pfs_blob__data(L.blob) + b->offset, a->length),
	      "%zu files; the link's entry is not the target's bytes", L.m->nfiles);
	unload(&L);
	return TAP_PASS;
}

static int t_special_files(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dev[96];
	int r, fd = socket(AF_UNIX, SOCK_STREAM, 0);

	CHECK(!sh("ln -s .. %s/sub/up", root), "symlink");
	r = refused(".", root, EPERM, "symlink 'sub/up' -> '..' is a directory");
	sh("rm %s/sub/up", root);
	CHECK(!r && !sh("mkfifo %s/sub/fifo", root), "mkfifo");
	r = refused(".", root, EPERM, "'sub/fifo' is a FIFO");
	if (!r)
		r = refused("sub/fifo", root, EPERM, "is a FIFO");
	sh("rm %s/sub/fifo", root);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sub/sock", root);
	CHECK(!r && fd >= 0 && !bind(fd, (struct sockaddr *)&sa, sizeof(sa)), "bind");
	r = refused(".", root, EPERM, "is a socket");
	close(fd);
	unlink(sa.sun_path);
	snprintf(dev, sizeof(dev), "/dev/null");
	return r ? r : refused(dev, NULL, EPERM, "'/dev/null' is a character device");
}

static int t_missing_and_names(void)
{
	int r = refused("/nonexistent/model.bin", NULL, ENOENT, "No such file");

	if (!r)
		r = refused("nope", root, ENOENT, "'nope': No such file");
	CHECK(!r && !sh("cp %s '%s/sub/bad\xff.a'", file, root), "copy");
	r = refused(".", root, EILSEQ, "is not valid UTF-8");
	sh("rm '%s/sub/bad\xff.a'", root);
	return r;
}

/* A writer that starts once the read has begun (the blob's first byte is
 * no longer zero) and then changes the source until told to stop. */
struct writer {
	const volatile uint8_t *watch;
	const char *dir; /* add files here, or */
	int fd; /* append the real bytes to this file */
	const uint8_t *bytes;
	size_t len;
	atomic_bool stop;
	int changes;
};

static void *writer_fn(void *arg)
{
	struct writer *w = arg;

	while (!*w->watch && !atomic_load(&w->stop))
		;
	while (!atomic_load(&w->stop) && w->changes < 1000) {
		char p[160];
		int fd;

		if (w->dir) {
			snprintf(p, sizeof(p), "%s/zz_new_%d.h", w->dir, w->changes);
			fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
			if (fd >= 0 && write(fd, w->bytes, w->len) >= 0)
				w->changes++;
			if (fd >= 0)
				close(fd);
		} else if (write(w->fd, w->bytes + w->changes * 4096 % (w->len - 4096), 4096) ==
			   4096) {
			w->changes++;
		}
		usleep(200);
	}
	return NULL;
}

/* Load @path while a writer changes it: refused, no footer written. */
static int changed_while_read(const char *path, struct writer *w, const char *what)
{
	struct pfs_source_opts o = { .sz = sizeof(o), .threads = 1, .chunk = 64 << 10 };
	struct pfs_blob_opts bo = { .sz = sizeof(bo), .page = PFS_PAGE_4K, .numa_node = -1 };
	struct pfs_manifest *m;
	char why[512];
	pthread_t t;
	int err;
	struct pfs_source *s = pfs_source__scan(path, &o, why, sizeof(why));
	struct pfs_blob *b;

	CHECK(s, "scan: %s", why);
	bo.size = pfs_source__needed(s);
	b = pfs_blob__create(&bo);
	CHECK(b, "blob");
	w->watch = pfs_blob__data(b);
	CHECK(!pthread_create(&t, NULL, writer_fn, w), "writer thread");
	err = pfs_source__load(s, pfs_blob__data(b), pfs_blob__size(b),
			       &(struct pfs_source_stats){}, why, sizeof(why));
	atomic_store(&w->stop, true);
	pthread_join(t, NULL);
	tap_diag("%d changes by the writer; load: %s", w->changes, err ? why : "accepted");
	CHECK(err == -ESTALE && strstr(why, "source changed while it was read: ") &&
		      strstr(why, what),
	      "load returned %d: %s", err, why);
	CHECK(pfs_blob__manifest(b, &m, why, sizeof(why)) == -ENOENT, "a footer was written");
	pfs_source__free(s);
	pfs_blob__close(b);
	return TAP_PASS;
}

static int t_file_grows(void)
{
	struct writer w = { .fd = -1 };
	char path[128];
	int r;

	snprintf(path, sizeof(path), "%s/grow.a", tmp);
	w.bytes = slurp(file, &w.len);
	CHECK(w.bytes && !sh("cp %s %s", file, path), "copy");
	w.fd = open(path, O_WRONLY | O_APPEND);
	CHECK(w.fd >= 0, "open %s", path);
	r = changed_while_read(path, &w, "'grow.a' ");
	close(w.fd);
	free((void *)w.bytes);
	return r;
}

static int t_dir_gains_a_file(void)
{
	struct writer w = { .fd = -1 };
	char dir[128], hdr[160];
	int r;

	snprintf(dir, sizeof(dir), "%s/tree", tmp);
	snprintf(hdr, sizeof(hdr), "%s/tree/types.h", tmp);
	CHECK(!sh("cp -r %s %s", REAL_TREE, dir), "copy %s", REAL_TREE);
	w.bytes = slurp(hdr, &w.len);
	w.dir = dir;
	CHECK(w.bytes, "read %s", hdr);
	r = changed_while_read(dir, &w, "zz_new_0.h' appeared");
	free((void *)w.bytes);
	return r;
}

/* O_DIRECT is reported (used on the root file system, or why not), and
 * --source-no-direct reads the same bytes through the page cache. */
static int t_direct_report(void)
{
	struct pfs_source_opts o = { .sz = sizeof(o), .no_direct = true };
	char path[128], a[65];
	struct loaded L;

	snprintf(path, sizeof(path), "%s/lib.a", root);
	CHECK(!load(path, NULL, PFS_PAGE_4K, &L), "load: %s", L.why);
	CHECK(L.st.o_direct || L.st.o_direct_why[0], "o_direct false without a reason");
	tap_diag("O_DIRECT on %s: %s%s", tmp,
		 L.st.o_direct ? "used" : "not used: ", L.st.o_direct_why);
	snprintf(a, sizeof(a), "%s", L.st.sha256);
	unload(&L);
	CHECK(!load(path, &o, PFS_PAGE_4K, &L), "load: %s", L.why);
	CHECK(!L.st.o_direct && !strcmp(L.st.o_direct_why, "--source-no-direct") &&
		      !strcmp(a, L.st.sha256),
	      "no-direct: %d %s", L.st.o_direct, L.st.o_direct_why);
	unload(&L);
	return TAP_PASS;
}

/* The watermark steps (a unit each, from a local file) shrink towards the
 * end: none longer than a 4*threads-th of what was left, or 1 MiB; 8 MiB
 * units would make one step of the whole 9 MB file. */
static int t_taper(void)
{
	struct pfs_source_opts o = {
		.sz = sizeof(o), .threads = 1, .chunk = 8 << 20, .progress = record_mark
	};
	uint64_t prev = 0, first = 0, last = 0, len;
	char path[128];
	struct loaded L;

	snprintf(path, sizeof(path), "%s/lib.a", root);
	nmarks = 0;
	CHECK(!load(path, &o, PFS_PAGE_4K, &L), "load: %s", L.why);
	len = L.m->files[0].length;
	unload(&L);
	CHECK(nmarks >= 4, "%zu steps", nmarks);
	for (size_t i = 0; i < nmarks && marks[i] < len; i++) {
		uint64_t step = marks[i] - prev, cap = (len - prev) / 4;

		CHECK(step <= (cap > (1 << 20) ? cap : 1 << 20),
		      "step %zu: %" PRIu64 " bytes with %" PRIu64 " left", i, step, len - prev);
		first = first ? first : step;
		last = step;
		prev = marks[i];
	}
	CHECK(last < first, "the steps did not shrink: first %" PRIu64 ", last %" PRIu64, first,
	      last);
	tap_diag("%zu steps over %" PRIu64 " bytes: the first %" PRIu64 ", the last %" PRIu64,
		 nmarks, len, first, last);
	return TAP_PASS;
}

static int t_cleanup(void)
{
	CHECK(!sh("rm -rf %s", tmp), "rm -rf %s", tmp);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "setup: real files of installed packages, a private temporary directory", t_setup,
	  .setup = true },
	{ "single file: sha256 = sha256sum, bytes and CRC32C at the manifest's offset",
	  t_single_file },
	{ "directory: every file's bytes and sha256 (sha256sum), order, gaps, verify",
	  t_directory },
	{ "'..' and absolute paths out of --source-root are refused, named", t_dotdot },
	{ "symlinks pointing out of the root are refused, named", t_symlink_out },
	{ "a symlink to a file inside the root is followed", t_symlink_in },
	{ "directory symlinks, FIFOs, sockets, devices are refused", t_special_files },
	{ "a missing path and a non-UTF-8 name are refused", t_missing_and_names },
	{ "a file growing while read is refused, no footer written", t_file_grows },
	{ "the last units are cut smaller: the watermark's steps shrink to the end", t_taper },
	{ "a file added to a directory while read is refused", t_dir_gains_a_file },
	{ "O_DIRECT used or why not; --source-no-direct reads the same bytes", t_direct_report },
	{ "cleanup", t_cleanup, .setup = true },
};

TAP_MAIN(tests)
