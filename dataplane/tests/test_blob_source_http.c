// SPDX-License-Identifier: Apache-2.0
/*
 * A blob loaded from a web server (`pfs blob create --source-url`): the
 * binary in $PFS against a range server this program runs on the loopback
 * in a child process (real sockets, one thread per connection), serving
 * real model files (hack/testdata.sh: all-MiniLM-L6-v2, silero-vad 6)
 * with ETags, If-Match and Range as object stores and CDNs do, and
 * faults on demand. Checked:
 *   - the loaded blob equals `pfs blob create --source` of the same
 *     directory (sha256, manifest) and every file's sha256 equals the
 *     one sha256sum prints; the reads were ranged (more GETs than files);
 *   - bodies cut short (the first answer of every range closes halfway):
 *     each range is retried and resumed from where it stopped, never
 *     from its start (resumed bytes = what the cut answers delivered);
 *   - 503 on first tries, and the server killed mid-read and started
 *     again: retried, loaded, equal;
 *   - refusals, each with its message and no blob left behind: a 404, a
 *     403 with an S3 error body, an object whose ETag changes mid-read
 *     (412), a server that answers a range with another range, one that
 *     ignores ranges it promised, a malformed header file;
 *   - `--source-s3` against the same server speaking the S3 side of it
 *     (ListObjectsV2 in pages of four keys with continuation tokens, an
 *     XML-escaped and percent-encoded key, a directory marker, HEAD with
 *     x-amz-checksum-sha256): the same blob as the files, every stored
 *     checksum compared, every request signed with the key from the
 *     credentials directory; one object as a file; a stored checksum the
 *     bytes do not have refused. (The signatures themselves are checked
 *     against botocore's in test_remote_http, and by a real S3 server in
 *     the e2e.)
 *   - the watermark (the progress hook, what a relay forwards from) moves
 *     inside a unit while its slow GET lands, not a unit at a time, in
 *     increasing order, and the load still equals sha256sum.
 * Without the data sets the setup FAILS.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pfs/blob_source.h"
#include "json_util.h"
#include "script_server.h"
#include "sh.h"
#include "marks.h"
#include "tap.h"
#include "testdata.h"

enum fault {
	F_NONE,
	F_CUT, /* every range's first answer stops halfway and closes */
	F_503, /* the first try of each range gets a 503 */
	F_CHANGE, /* after 3 GETs the objects "change": ETags move */
	F_OTHER_RANGE, /* a range is answered with the one after it */
	F_NO_RANGES, /* 200 with the whole object, while saying Accept-Ranges */
	F_403, /* every GET: 403 with an S3 error body (HEADs pass) */
	F_SLOW, /* 2 MB/s per connection: the test kills and restarts it */
	F_BAD_SUM, /* S3: x-amz-checksum-sha256 of config.json is another file's */
	F_REDIRECT, /* /m/NAME answers 302 to http://localhost:PORT/r/NAME */
};

/* Shared with the server child (MAP_SHARED): the fault and counters. */
struct ctl {
	enum fault fault;
	atomic_int gets, cut, failed_once[4096];
	/* F_CUT: the answers cut, and where each cut range's retry resumes
	 * (exactly: a range starting there is a retry, not cut again). */
	atomic_int ncut, nresume;
	_Atomic long long resume[4096];
	/* S3: listing pages served; requests, and those signed with SigV4 by
	 * the test's access key. */
	atomic_int pages, requests, signed_ok;
	/* The user's header seen on /m/ (the source's server) and on /r/
	 * (where a redirect led: another host name). */
	atomic_int token_here, token_there;
};

static struct ctl *ctl;
static char dir[64] = "/tmp/pfs-srchttp-XXXXXX", data[128], files[8192], pfs[PATH_MAX];
static int port;

/* ---- the range server; with "?list-type=2" on /m, an S3 bucket ---- */

#define ACCESS_KEY "PFSTESTKEYID"

/* Key of a range for the "first try" faults. */
static int slot(const char *name, long long a)
{
	unsigned h = 5381;

	for (const char *p = name; *p; p++)
		h = h * 33 + (unsigned char)*p;
	return (int)((h + (unsigned)(a >> 16)) % 4096);
}

/* %XX decoded in place. */
static void pct_decode(char *s)
{
	char *o = s;

	for (; *s; s++) {
		unsigned v;

		if (*s == '%' && sscanf(s + 1, "%2x", &v) == 1) {
			*o++ = (char)v;
			s += 2;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

static void xml_escaped(char *out, size_t n, const char *s)
{
	size_t o = 0;

	for (; *s && o + 7 < n; s++) {
		if (*s == '&')
			o += (size_t)snprintf(out + o, n - o, "&amp;");
		else if (*s == '<')
			o += (size_t)snprintf(out + o, n - o, "&lt;");
		else if (*s == '"')
			o += (size_t)snprintf(out + o, n - o, "&quot;");
		else
			out[o++] = *s;
	}
	out[o] = '\0';
}

static int by_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ListObjectsV2 of the data directory, four keys a page, the token the
 * index of the next key. */
static void list_objects(int fd, const char *target)
{
	const char *tok = strstr(target, "continuation-token=");
	int from = tok ? atoi(tok + 19) : 0, k = 0;
	char *names[64], body[16384], key[600], etag[64], head[256], et[96];
	size_t o = 0;
	struct dirent *e;
	DIR *d = opendir(data);

	while (d && (e = readdir(d)) && k < 64)
		if (e->d_name[0] != '.')
			names[k++] = strdup(e->d_name);
	if (d)
		closedir(d);
	qsort(names, (size_t)k, sizeof(names[0]), by_str);
	o += (size_t)snprintf(body, sizeof(body),
			      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult "
			      "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>m</Name>"
			      "<Prefix></Prefix><MaxKeys>4</MaxKeys><IsTruncated>%s</IsTruncated>",
			      from + 4 < k ? "true" : "false");
	if (from + 4 < k)
		o += (size_t)snprintf(body + o, sizeof(body) - o,
				      "<NextContinuationToken>%d</NextContinuationToken>",
				      from + 4);
	for (int i = from; i < from + 4 && i < k; i++) {
		char path[512];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", data, names[i]);
		stat(path, &st);
		xml_escaped(key, sizeof(key), names[i]);
		snprintf(etag, sizeof(etag), "\"%llx-%lld\"", (long long)st.st_ino,
			 (long long)st.st_size);
		xml_escaped(et, sizeof(et), etag);
		o += (size_t)snprintf(body + o, sizeof(body) - o,
				      "<Contents><Key>%s</Key><ETag>%s</ETag><Size>%lld</Size>"
				      "<StorageClass>STANDARD</StorageClass></Contents>",
				      key, et, (long long)st.st_size);
	}
	/* A "directory" marker, as consoles create: skipped by the reader. */
	if (!from)
		o += (size_t)snprintf(body + o, sizeof(body) - o,
				      "<Contents><Key>sub/</Key><ETag>&quot;d41d8&quot;</ETag>"
				      "<Size>0</Size></Contents>");
	o += (size_t)snprintf(body + o, sizeof(body) - o, "</ListBucketResult>");
	for (int i = 0; i < k; i++)
		free(names[i]);
	atomic_fetch_add(&ctl->pages, 1);
	snprintf(head, sizeof(head),
		 "HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nContent-Length: %zu\r\n\r\n",
		 o);
	srv_reply(fd, head);
	srv_reply(fd, body);
}

/* The x-amz-checksum-sha256 of @path (base64) into @out (45 bytes). */
static void checksum(const char *path, char *out)
{
	unsigned char md[32];
	char *buf = malloc(128 << 20);
	size_t len = 0;
	FILE *f = fopen(path, "r");

	if (f && buf)
		len = fread(buf, 1, 128 << 20, f);
	if (f)
		fclose(f);
	EVP_Digest(buf ? buf : "", len, md, NULL, EVP_sha256(), NULL);
	free(buf);
	EVP_EncodeBlock((unsigned char *)out, md, 32);
}

/* F_CUT's record of the offsets where cut ranges resume, shared by the
 * server's threads; written before the cut answer is sent, so before its
 * retry can ask. (A slot claimed but not yet written reads as 0: at worst a
 * first try from offset 0 is not cut, which the test's count still sees.) */
static void add_resume(long long at)
{
	int i = atomic_fetch_add(&ctl->nresume, 1);

	if (i < 4096)
		atomic_store(&ctl->resume[i], at);
}

static bool is_resume(long long at)
{
	int n = atomic_load(&ctl->nresume);

	for (int i = 0; i < n && i < 4096; i++)
		if (atomic_load(&ctl->resume[i]) == at)
			return true;
	return false;
}

static void serve_one(int fd, const char *req)
{
	char path[512], name[300], head[1024], etag[64], target[1024], sum[128] = "";
	long long a = 0, b = -1, size;
	int get = !strncmp(req, "GET ", 4), f;
	const char *rg = strcasestr(req, "\r\nRange: bytes="),
		   *im = strcasestr(req, "\r\nIf-Match: ");
	struct stat st;

	atomic_fetch_add(&ctl->requests, 1);
	if (strstr(req, "\r\nAuthorization: AWS4-HMAC-SHA256 Credential=" ACCESS_KEY "/") &&
	    strstr(req, "\r\nx-amz-date: ") && strstr(req, "\r\nx-amz-content-sha256: "))
		atomic_fetch_add(&ctl->signed_ok, 1);
	if (get && sscanf(req + 4, "%1023s", target) == 1 && !strncmp(target, "/m?", 3) &&
	    strstr(target, "list-type=2")) {
		list_objects(fd, target);
		return;
	}
	if (ctl->fault == F_REDIRECT && sscanf(req + (get ? 4 : 5), "/r/%299[^ ]", name) == 1) {
		if (strstr(req, "\r\nX-Pfs-Token: "))
			atomic_fetch_add(&ctl->token_there, 1);
	} else if (sscanf(req + (get ? 4 : 5), "/m/%299[^ ]", name) != 1 || strstr(name, "..")) {
		srv_reply(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
		return;
	}
	if (strstr(req, "\r\nX-Pfs-Token: ") && !strncmp(req + (get ? 4 : 5), "/m/", 3))
		atomic_fetch_add(&ctl->token_here, 1);
	if (ctl->fault == F_REDIRECT && !strncmp(req + (get ? 4 : 5), "/m/", 3)) {
		snprintf(head, sizeof(head),
			 "HTTP/1.1 302 Found\r\nLocation: http://localhost:%d/r/%s\r\n"
			 "Content-Length: 0\r\n\r\n",
			 port, name);
		srv_reply(fd, head);
		return;
	}
	pct_decode(name);
	snprintf(path, sizeof(path), "%s/%s", data, name);
	f = open(path, O_RDONLY);
	if (f < 0 || fstat(f, &st)) {
		srv_reply(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
		if (f >= 0)
			close(f);
		return;
	}
	size = st.st_size;
	if (get && ctl->fault == F_403) {
		static const char body[] =
			"<Error><Code>AccessDenied</Code><Message>no</Message></Error>";

		snprintf(head, sizeof(head),
			 "HTTP/1.1 403 Forbidden\r\nContent-Type: application/xml\r\n"
			 "Content-Length: %zu\r\n\r\n%s",
			 strlen(body), body);
		srv_reply(fd, head);
		close(f);
		return;
	}
	snprintf(etag, sizeof(etag), "\"%llx-%lld%s\"", (long long)st.st_ino, size,
		 get && ctl->fault == F_CHANGE && atomic_fetch_add(&ctl->gets, 1) >= 3 ? "-v2" :
											 "");
	/* "Name:value" or "Name: value": both are HTTP. */
	if (!get && strcasestr(req, "\r\nx-amz-checksum-mode:") &&
	    strstr(strcasestr(req, "\r\nx-amz-checksum-mode:"), "ENABLED\r\n")) {
		char other[512];
		int o = snprintf(sum, sizeof(sum), "x-amz-checksum-sha256: ");

		/* The bad one: the digest of another file of the same set. */
		snprintf(other, sizeof(other), "%s/%s", data,
			 ctl->fault == F_BAD_SUM && !strcmp(name, "config.json") ?
				 "silero_vad.onnx" :
				 name);
		checksum(other, sum + o);
		strcat(sum, "\r\n");
	}
	if (rg)
		sscanf(rg + 15, "%lld-%lld", &a, &b);
	if (b < 0 || b >= size)
		b = size - 1;
	if (get && im && strncmp(im + 12, etag, strlen(etag))) {
		srv_reply(fd, "HTTP/1.1 412 Precondition Failed\r\nContent-Length: 0\r\n\r\n");
		close(f);
		return;
	}
	if (get && ctl->fault == F_503 && !atomic_exchange(&ctl->failed_once[slot(name, a)], 1)) {
		srv_reply(fd, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n");
		close(f);
		return;
	}
	if (rg && ctl->fault == F_OTHER_RANGE && b + 1 < size)
		a++, b++;
	if (rg && ctl->fault != F_NO_RANGES)
		snprintf(head, sizeof(head),
			 "HTTP/1.1 206 Partial Content\r\nContent-Length: %lld\r\nContent-Range: "
			 "bytes %lld-%lld/%lld\r\nETag: %s\r\nAccept-Ranges: bytes\r\n\r\n",
			 size ? b - a + 1 : 0, a, b, size, etag);
	else
		snprintf(head, sizeof(head),
			 "HTTP/1.1 200 OK\r\nContent-Length: %lld\r\nETag: %s\r\n%sAccept-Ranges: "
			 "bytes\r\n\r\n",
			 size, etag, sum);
	if (!rg || ctl->fault == F_NO_RANGES) {
		a = 0;
		b = size - 1;
	}
	srv_reply(fd, head);
	if (get && size) {
		long long len = b - a + 1, sent = 0;
		bool cut = ctl->fault == F_CUT && len > 1 && !is_resume(a);

		if (cut) {
			len /= 2;
			add_resume(a + len);
		}
		while (sent < len) {
			off_t o = a + sent;
			long long step = ctl->fault == F_SLOW ? 65536 : len - sent;
			ssize_t w = sendfile(fd, f, &o,
					     (size_t)(step < len - sent ? step : len - sent));

			if (w <= 0)
				break;
			sent += w;
			if (ctl->fault == F_SLOW)
				usleep(32000);
		}
		if (cut) {
			atomic_fetch_add(&ctl->cut, (int)sent);
			atomic_fetch_add(&ctl->ncut, 1);
			shutdown(fd, SHUT_RDWR);
		}
	}
	close(f);
}

/* ---- the checks ---- */

static char out[16384], err[16384];

/* tmpdir's out and err files into out[] and err[]. */
static void results(void)
{
	char p[128];
	FILE *f;

	snprintf(p, sizeof(p), "%s/out", dir);
	f = fopen(p, "r");
	out[f ? fread(out, 1, sizeof(out) - 1, f) : 0] = '\0';
	if (f)
		fclose(f);
	snprintf(p, sizeof(p), "%s/err", dir);
	f = fopen(p, "r");
	err[f ? fread(err, 1, sizeof(err) - 1, f) : 0] = '\0';
	if (f)
		fclose(f);
}

/* The command line of a load of blob @name with options @extra. */
static const char *cmdline(const char *name, const char *extra)
{
	static char cmd[16384];

	snprintf(cmd, sizeof(cmd),
		 "%s blob create --source-url http://127.0.0.1:%d/m --source-files %s --page 4k "
		 "--dir /dev/shm --name %s --replace --source-chunk 256K --source-timeout 5 %s "
		 ">%s/out 2>%s/err",
		 pfs, port, files, name, extra ? extra : "", dir, dir);
	return cmd;
}

/* pfs blob create from the server (@fault), extra options @extra; exit code. */
static int load(enum fault fault, const char *name, const char *extra)
{
	int rc;

	memset((void *)ctl, 0, sizeof(*ctl));
	ctl->fault = fault;
	rc = sh("%s", cmdline(name, extra));
	results();
	return rc;
}

static char want_sha[70];

static int t_setup(void)
{
	const char *silero = testdata_dir("PFS_TESTDATA_SILERO6", "silero6");
	const char *minilm = testdata_dir("PFS_TESTDATA_MINILM", "minilm");
	int o = 0;
	char cmd[512], *p;
	struct dirent *e;
	DIR *d;
	FILE *f;

	CHECK(silero && minilm, "%s", testdata_why);
	/* Absolute: some checks run it from another directory. */
	CHECK(realpath(getenv("PFS") ? getenv("PFS") : "build/pfs", pfs) && !access(pfs, X_OK),
	      "no pfs binary at %s", pfs);
	CHECK(mkdtemp(dir), "mkdtemp");
	snprintf(data, sizeof(data), "%s/data", dir);
	CHECK(!sh("mkdir %s && cp %s/* %s/ && cp %s/model.safetensors %s/config.json %s/", data,
		  silero, data, minilm, minilm, data),
	      "copy the data sets");
	d = opendir(data);
	CHECK(d, "opendir");
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			o += snprintf(files + o, sizeof(files) - (size_t)o, "%s%s", o ? "," : "",
				      e->d_name);
	closedir(d);
	/* The reference: the same directory loaded as files. */
	CHECK(!sh("%s blob create --source %s --page 4k --dir /dev/shm --name pfs-srchttp-ref-%d "
		  "--replace >%s/ref.json 2>/dev/null",
		  pfs, data, getpid(), dir),
	      "reference load");
	snprintf(cmd, sizeof(cmd), "%s/ref.json", dir);
	f = fopen(cmd, "r");
	CHECK(f && fread(out, 1, sizeof(out) - 1, f) > 0, "ref.json");
	fclose(f);
	jstr(jsect(out, "\"source\""), "sha256", want_sha, sizeof(want_sha));
	CHECK(want_sha[0], "reference sha256");
	sh("rm -f /dev/shm/pfs-srchttp-ref-%d", getpid());
	ctl = mmap(NULL, sizeof(*ctl), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(ctl != MAP_FAILED, "mmap");
	port = srv_listen();
	CHECK(port > 0, "listen");
	srv_start(serve_one);
	p = strchr(files, ',');
	tap_diag("serving %s and more on port %d", p ? "the data sets' files" : files, port);
	return TAP_PASS;
}

static char bname[64];

static const char *blob(const char *what)
{
	snprintf(bname, sizeof(bname), "pfs-srchttp-%s-%d", what, getpid());
	return bname;
}

/* The blob loaded and equal to the reference; its manifest verifies. */
static bool loaded_equal(int rc, const char *what)
{
	char sha[70];

	jstr(jsect(out, "\"source\""), "sha256", sha, sizeof(sha));
	if (rc || strcmp(sha, want_sha) ||
	    sh("%s blob manifest --name %s --dir /dev/shm --verify >/dev/null 2>&1", pfs,
	       blob(what))) {
		tap_diag("rc %d sha %s want %s: %.1500s", rc, sha, want_sha, err);
		return false;
	}
	return true;
}

static int t_ranged(void)
{
	int rc = load(F_NONE, blob("plain"), NULL);
	const char *r = jsect(out, "\"remote\"");

	CHECK(loaded_equal(rc, "plain"), "not loaded as the files are");
	/* 256 KiB units of an 87 MiB file: hundreds of ranged GETs. */
	CHECK(jreal(r, "requests") > 300 && jreal(r, "retries") == 0, "%.300s", r);
	CHECK(!sh("cd %s && sha256sum model.safetensors | grep -q $(%s blob manifest --name %s "
		  "--dir /dev/shm | grep -o '\"model.safetensors\"[^}]*' | grep -o '[0-9a-f]\\{64\\}')",
		  data, pfs, blob("plain")),
	      "the manifest's sha256 of model.safetensors is not sha256sum's");
	tap_diag("%.0f requests, %.0f MB/s", jreal(r, "requests"),
		 jreal(jsect(out, "\"source\""), "read_mbps"));
	sh("rm -f /dev/shm/%s", blob("plain"));
	return TAP_PASS;
}

static int t_cut(void)
{
	/* 8 MiB units: each retry waits its backoff, so few of them. */
	int rc = load(F_CUT, blob("cut"), "--source-chunk 8M");
	const char *r = jsect(out, "\"remote\"");

	CHECK(loaded_equal(rc, "cut"), "not loaded");
	/* Exactly one retry per cut answer (every range of a file over one
	 * byte: more than the 11 files), each resuming where its cut stopped. */
	CHECK(jreal(r, "retries") == ctl->ncut && ctl->ncut > 11 &&
		      jreal(r, "resumed_bytes") == (double)ctl->cut && ctl->cut > 0,
	      "retries and resumed bytes %.300s, the server cut %d answers after %d bytes in all",
	      r, ctl->ncut, ctl->cut);
	tap_diag("%.0f ranges cut halfway, %.0f bytes not fetched again", jreal(r, "retries"),
		 jreal(r, "resumed_bytes"));
	sh("rm -f /dev/shm/%s", blob("cut"));
	return TAP_PASS;
}

static int t_503(void)
{
	int rc = load(F_503, blob("503"), "--source-chunk 8M");
	const char *r = jsect(out, "\"remote\"");

	CHECK(loaded_equal(rc, "503"), "not loaded");
	CHECK(jreal(r, "retries") >= 10 && jreal(r, "resumed_bytes") == 0, "%.300s", r);
	sh("rm -f /dev/shm/%s", blob("503"));
	return TAP_PASS;
}

static int t_restart(void)
{
	const char *r;
	pid_t p;
	int st, rc;

	const char *cmd = cmdline(blob("restart"), "--source-chunk 8M"); /* its name: our pid */

	memset((void *)ctl, 0, sizeof(*ctl));
	ctl->fault = F_SLOW;
	p = fork();
	if (!p)
		_exit(sh("%s", cmd));
	sleep(2);
	srv_stop();
	sleep(1);
	ctl->fault = F_NONE;
	srv_start(serve_one);
	tap_diag("server killed 2 s into the load, started again 1 s later");
	waitpid(p, &st, 0);
	rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	results();
	r = jsect(out, "\"remote\"");
	CHECK(loaded_equal(rc, "restart"), "not loaded");
	CHECK(jreal(r, "retries") >= 1 && jreal(r, "resumed_bytes") > 0, "%.300s", r);
	tap_diag("%.0f retries, %.0f bytes not fetched again", jreal(r, "retries"),
		 jreal(r, "resumed_bytes"));
	sh("rm -f /dev/shm/%s", blob("restart"));
	return TAP_PASS;
}

/* A refused load: exit code not 0, @msg in the error, no blob left. */
static int refused(enum fault fault, const char *extra, const char *msg)
{
	int rc = load(fault, blob("bad"), extra);

	CHECK(rc != 0 && strstr(err, msg), "rc %d, wanted '%s' in: %.1500s", rc, msg, err);
	CHECK(!strstr(err, "retrying"), "a refusal was retried: %.1500s", err);
	CHECK(sh("test -e /dev/shm/%s", blob("bad")) != 0, "a failed load left its blob");
	tap_diag("%.300s", strstr(err, "error: ") ? strstr(err, "error: ") : err);
	return TAP_PASS;
}

static int t_changed(void)
{
	return refused(F_CHANGE, "--source-threads 1", "the object changed while it was read");
}

static int t_other_range(void)
{
	return refused(F_OTHER_RANGE, NULL, "the server answered 206 with range");
}

static int t_no_ranges(void)
{
	return refused(F_NO_RANGES, NULL, "the server answered 200 with no range");
}

static int t_403(void)
{
	return refused(F_403, NULL, "HTTP 403 Forbidden: AccessDenied (no)");
}

static int t_404(void)
{
	char saved[sizeof(files)];
	int r;

	memcpy(saved, files, sizeof(files));
	strcat(files, ",not-there.bin");
	r = refused(F_NONE, NULL, "HEAD http://127.0.0.1");
	memcpy(files, saved, sizeof(files));
	CHECK(r == TAP_PASS && strstr(err, "not-there.bin: HTTP 404 Not Found"), "%.600s", err);
	return TAP_PASS;
}

static int t_bad_header_file(void)
{
	char extra[256];

	sh("printf 'Authorization Bearer sEcReT\\n' >%s/hdr", dir);
	snprintf(extra, sizeof(extra), "--source-header-file %s/hdr", dir);
	CHECK(refused(F_NONE, extra, "line 1 is not 'Name: value'") == TAP_PASS, "refused");
	CHECK(!strstr(err, "sEcReT"), "the secret reached the log: %.600s", err);
	return TAP_PASS;
}

static char ref_s3[70];

/* The bucket: the data sets' files and one more whose name needs XML
 * escaping and percent-encoding (a copy of config.json); its reference
 * blob; the credentials. */
static int s3_setup(void)
{
	char p[256];
	FILE *f;

	if (ref_s3[0])
		return 0;
	if (sh("cp '%s/config.json' '%s/a b&c.json' && %s blob create --source %s --page 4k "
	       "--dir /dev/shm --name pfs-srchttp-ref2-%d --replace >%s/ref2.json 2>/dev/null",
	       data, data, pfs, data, getpid(), dir))
		return -1;
	sh("rm -f /dev/shm/pfs-srchttp-ref2-%d", getpid());
	snprintf(p, sizeof(p), "%s/ref2.json", dir);
	f = fopen(p, "r");
	out[f ? fread(out, 1, sizeof(out) - 1, f) : 0] = '\0';
	if (f)
		fclose(f);
	jstr(jsect(out, "\"source\""), "sha256", ref_s3, sizeof(ref_s3));
	if (!ref_s3[0])
		return -1;
	return sh("mkdir -p %s/creds && printf '%s' >%s/creds/AWS_ACCESS_KEY_ID && "
		  "printf 'sEcReT-s3-key\\n' >%s/creds/AWS_SECRET_ACCESS_KEY",
		  dir, ACCESS_KEY, dir, dir) ?
		       -1 :
		       0;
}

/* pfs blob create --source-s3 @what against the server. */
static int load_s3(enum fault fault, const char *what, const char *name)
{
	int rc;

	memset((void *)ctl, 0, sizeof(*ctl));
	ctl->fault = fault;
	rc = sh("%s blob create --source-s3 %s --source-s3-endpoint http://127.0.0.1:%d "
		"--source-credentials %s/creds --page 4k --dir /dev/shm --name %s --replace "
		">%s/out 2>%s/err",
		pfs, what, port, dir, name, dir, dir);
	results();
	return rc;
}

static int t_s3(void)
{
	const char *r;
	char sha[70];
	int rc, nfiles;

	CHECK(!s3_setup(), "the bucket's reference");
	rc = load_s3(F_NONE, "m/", blob("s3"));
	r = jsect(out, "\"remote\"");
	jstr(jsect(out, "\"source\""), "sha256", sha, sizeof(sha));
	nfiles = (int)jreal(jsect(out, "\"source\""), "files");
	CHECK(!rc && !strcmp(sha, ref_s3), "rc %d sha %s want %s: %.1500s", rc, sha, ref_s3, err);
	/* 12 objects and a directory marker, four keys a page. */
	CHECK(nfiles == 12 && ctl->pages == 3, "%d files, %d pages", nfiles, ctl->pages);
	CHECK(jreal(r, "checksums") == nfiles, "every stored sha256 compared: %.300s", r);
	CHECK(ctl->signed_ok == ctl->requests && ctl->requests == (int)jreal(r, "requests"),
	      "%d of %d requests signed with the key (pfs sent %.0f)", ctl->signed_ok,
	      ctl->requests, jreal(r, "requests"));
	CHECK(!sh("%s blob manifest --name %s --dir /dev/shm | grep -q '\"a b&c.json\"'", pfs,
		  blob("s3")),
	      "the escaped key is not in the manifest");
	CHECK(!strstr(err, "sEcReT"), "the secret reached the log");
	sh("rm -f /dev/shm/%s", blob("s3"));
	rc = load_s3(F_NONE, "m/config.json", blob("s3one"));
	CHECK(!rc && strstr(out, "\"kind\":\"file\"") &&
		      jreal(jsect(out, "\"remote\""), "checksums") == 1,
	      "one object: %.600s", out);
	sh("rm -f /dev/shm/%s", blob("s3one"));
	return TAP_PASS;
}

static int t_s3_bad_sum(void)
{
	int rc;

	CHECK(!s3_setup(), "the bucket's reference");
	rc = load_s3(F_BAD_SUM, "m/", blob("bad"));
	CHECK(rc && strstr(err, "'config.json': its sha256 is not the x-amz-checksum-sha256"),
	      "rc %d: %.1500s", rc, err);
	CHECK(sh("test -e /dev/shm/%s", blob("bad")) != 0, "a failed load left its blob");
	return TAP_PASS;
}

/* A mirror that redirects every file to another host (a CDN): followed,
 * and the user's header (a token) is sent to the mirror only. */
static int t_redirect(void)
{
	char extra[256];
	int rc;

	sh("printf 'X-Pfs-Token: t0ken\n' >%s/hdr2", dir);
	snprintf(extra, sizeof(extra), "--source-header-file %s/hdr2", dir);
	rc = load(F_REDIRECT, blob("redirect"), extra);
	CHECK(loaded_equal(rc, "redirect"), "not loaded");
	CHECK(ctl->token_here > 0 && ctl->token_there == 0,
	      "the token went to the mirror %d times and to the other host %d times",
	      ctl->token_here, ctl->token_there);
	sh("rm -f /dev/shm/%s", blob("redirect"));
	return TAP_PASS;
}

static int t_landed(void)
{
	const char *name = "silero_vad_op18_ifless.onnx"; /* 2.8 MB: 3 units of 1 MiB */
	char url[256], why[512], sha[65] = "";
	unsigned char md[32];
	const uint64_t unit = 1 << 20;
	struct pfs_remote r = { .kind = PFS_REMOTE_HTTP, .url = url, .timeout_ms = 10000 };
	struct pfs_source_opts o = {
		.sz = sizeof(o), .threads = 1, .chunk = unit, .progress = record_mark
	};
	struct pfs_source_stats st = { 0 };
	struct pfs_source *src;
	size_t inside = 0;
	uint64_t size, fsize = 0;
	void *blob;
	int err;

	memset((void *)ctl, 0, sizeof(*ctl));
	ctl->fault = F_SLOW; /* 64 KiB every 32 ms: half a second per unit */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/m/%s", port, name);
	src = pfs_source__scan_remote(&r, &o, why, sizeof(why));
	CHECK(src, "scan: %s", why);
	fsize = pfs_source__bytes(src);
	size = pfs_source__needed(src);
	blob = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(blob != MAP_FAILED, "mmap");
	nmarks = 0;
	err = pfs_source__load(src, blob, size, &st, why, sizeof(why));
	pfs_source__free(src);
	if (!err && EVP_Digest(blob, fsize, md, NULL, EVP_sha256(), NULL))
		for (int i = 0; i < 32; i++)
			snprintf(sha + 2 * i, 3, "%02x", md[i]);
	munmap(blob, size);
	CHECK(!err, "load: %s", why);
	CHECK(!sh("cd %s && sha256sum %s | grep -q ^%s", data, name, sha),
	      "the blob's bytes are not the file's (sha256 %s)", sha);
	/* The one file starts the blob. A mark inside a unit is one a reader
	 * published before its GET ended. */
	for (size_t i = 0; i < nmarks; i++) {
		CHECK(!i || marks[i] >= marks[i - 1], "mark %zu: %" PRIu64 " after %" PRIu64, i,
		      marks[i], marks[i - 1]);
		inside += marks[i] % unit && marks[i] < fsize;
	}
	CHECK(inside >= 3, "%zu of %zu marks inside a unit: the watermark moved a unit at a time",
	      inside, nmarks);
	tap_diag("%zu marks, %zu inside a unit of 1 MiB (a 2 MB/s server)", nmarks, inside);
	return TAP_PASS;
}

static int t_cleanup(void)
{
	srv_stop();
	sh("rm -rf %s; rm -f /dev/shm/pfs-srchttp-*-%d", dir, getpid());
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "setup: real model files, their reference blob, a range server", t_setup, .setup = true },
	{ "ranged GETs: the blob the files make, sha256sum's digests", t_ranged },
	{ "every range cut halfway once: resumed where it stopped, equal", t_cut },
	{ "503 on every first try: retried, equal", t_503 },
	{ "the server killed mid-read and started again: loaded, resumed, equal", t_restart },
	{ "an object changing mid-read (412): refused, says so, no blob", t_changed },
	{ "another range than asked: refused", t_other_range },
	{ "ranges promised, ignored: refused", t_no_ranges },
	{ "403 with an S3 error body: refused with its code and message", t_403 },
	{ "a 404: refused naming the file", t_404 },
	{ "a malformed header file: refused, the secret not logged", t_bad_header_file },
	{ "redirects to another host: followed, the user's header kept from it", t_redirect },
	{ "S3: ListObjectsV2 pages, escaped keys, a marker skipped, HEAD checksums compared, "
	  "every request signed; one object",
	  t_s3 },
	{ "S3: a stored checksum the bytes do not have: refused", t_s3_bad_sum },
	{ "a slow GET: the watermark moves inside its unit as the bytes land", t_landed },
	{ "cleanup", t_cleanup, .setup = true },
};

TAP_MAIN(tests)
