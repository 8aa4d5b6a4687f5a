// SPDX-License-Identifier: Apache-2.0
/*
 * A blob loaded from an OCI registry (`pfs blob create --source-oci`): the
 * binary in $PFS against a registry this program scripts on the loopback
 * in a child process (real sockets, one thread per connection), serving
 * real model files (hack/testdata.sh: silero-vad 6 and the small files of
 * all-MiniLM-L6-v2, under "minilm/") as titled layers, the way `oras
 * push` stores them, with faults on demand. Checked:
 *   - anonymous, token (401 -> token from the realm -> 200, with and
 *     without a pull secret, which only the realm sees as Basic) and
 *     Basic registries: the blob equals `pfs blob create --source` of the
 *     same directory and every layer digest was compared;
 *   - by digest; a manifest whose bytes are not the digest asked for;
 *     an index (linux/amd64 picked; none: the platforms listed);
 *   - a layer whose bytes are not its digest: refused after the read;
 *   - blobs redirected to another host (storage): no Authorization header
 *     reaches it, the registry gets its token;
 *   - a token that expires mid-read: fetched again once, the load goes on;
 *   - every range cut halfway once: resumed where it stopped;
 *   - an image (tar+gzip and tar layers made by `tar` from the same
 *     files, with an override, a directory over a file, a whiteout, a symlink, GNU and pax long
 *     names): with --source-oci-path models/ the blob equals the files';
 *     one Docker tar.gzip layer, redirected to storage, likewise; a
 *     layer stream cut halfway: resumed;
 *   - image layers refused: bytes that are not the digest, a truncated
 *     gzip, a malformed tar header, a '..' member;
 *   - an unknown tag (the registry's JSON error shown), malformed
 *     manifests, a title that breaks the name rules, an untitled layer
 *     of another type (zstd): refused, each with its message, no blob left.
 * The registry's side is scripted here; hack/oci/smoke.sh runs the same
 * loads against a real registry (distribution) filled by oras.
 * Without the data sets the setup FAILS.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
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

#include "json_util.h"
#include "script_server.h"
#include "sh.h"
#include "tar_util.h"
#include "tap.h"
#include "testdata.h"

#define USER_PASS_B64 "cGZzOnNFY1JlVC1vY2k=" /* base64("pfs:sEcReT-oci") */
#define TOKEN "pfs-test-token-0123456789"
#define TOKEN2 "pfs-test-token-refreshed"
#define MT_LAYER "application/vnd.oci.image.layer.v1.tar"
#define MT_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define EMPTY_CFG                                                                   \
	"{\"mediaType\":\"application/vnd.oci.empty.v1+json\",\"digest\":\"sha256:" \
	"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a\",\"size\":2}"

enum auth { A_NONE, A_TOKEN, A_TOKEN_SECRET, A_BASIC };

enum fault {
	F_NONE,
	F_REDIRECT, /* blobs: 307 to http://localhost:PORT/storage/DIGEST */
	F_CUT, /* every blob answer from a 256 KiB boundary stops halfway */
	F_LIE, /* a manifest asked by digest gets a space more */
	F_EXPIRE, /* the first token expires after 24 requests (mid-read); the second does not */
	F_SWAP, /* a blob with other bytes (alt) serves them from its second whole GET on */
};

/* Shared with the server child (MAP_SHARED). */
struct ctl {
	enum auth auth;
	enum fault fault;
	atomic_int cut, tokens, token_basic, registry_bearer, storage_gets, storage_auth,
		unauthorized, whole_gets;
};

/* What the registry serves: manifests by tag (and by their digest), blobs
 * by digest. Filled before the fork; the child reads them. */
struct tagged {
	char tag[32];
	char *body;
	char digest[72];
};
struct blob {
	char digest[72];
	char path[300];
	char alt[300]; /* F_SWAP: the same size, other bytes */
};

static struct tagged tags[32];
static struct blob blobs[64];
static int ntags, nblobs;
static struct ctl *ctl;
static char dir[64] = "/tmp/pfs-srcoci-XXXXXX", data[128], pfs[PATH_MAX];
static char main_digest[72], want_sha[70];
static int port, nfiles;

static void digest_of(const void *b, size_t len, char *out)
{
	unsigned char md[32];

	EVP_Digest(b, len, md, NULL, EVP_sha256(), NULL);
	strcpy(out, "sha256:");
	for (int i = 0; i < 32; i++)
		sprintf(out + 7 + 2 * i, "%02x", md[i]);
}

static int file_digest(const char *path, char *out)
{
	struct stat st;
	int fd = open(path, O_RDONLY);
	void *m;

	if (fd < 0 || fstat(fd, &st))
		return -1;
	m = st.st_size ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
	close(fd);
	if (m == MAP_FAILED)
		return -1;
	digest_of(m ? m : "", (size_t)st.st_size, out);
	if (m)
		munmap(m, (size_t)st.st_size);
	return 0;
}

static void add_tag(const char *tag, const char *body)
{
	struct tagged *t = &tags[ntags++];

	snprintf(t->tag, sizeof(t->tag), "%s", tag);
	t->body = strdup(body);
	digest_of(body, strlen(body), t->digest);
}

/* ---- the registry ---- */

static bool has(const char *req, const char *hdr)
{
	return strcasestr(req, hdr) != NULL;
}

/* The registry's authentication of /v2/ requests; false after a 401. */
static bool authorized(int fd, const char *req)
{
	char h[512];

	switch (ctl->auth) {
	case A_NONE:
		return true;
	case A_BASIC:
		if (has(req, "\r\nAuthorization: Basic " USER_PASS_B64 "\r\n"))
			return true;
		snprintf(
			h, sizeof(h),
			"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"pfs-test\"\r\n"
			"Content-Length: 0\r\n\r\n");
		break;
	default:
		if (has(req, "\r\nAuthorization: Bearer " TOKEN2 "\r\n") ||
		    (has(req, "\r\nAuthorization: Bearer " TOKEN "\r\n") &&
		     (ctl->fault != F_EXPIRE || ctl->registry_bearer < 24))) {
			atomic_fetch_add(&ctl->registry_bearer, 1);
			return true;
		}
		snprintf(h, sizeof(h),
			 "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer "
			 "realm=\"http://127.0.0.1:%d/token\",service=\"pfs test\","
			 "scope=\"repository:models/m:pull\"\r\nContent-Type: application/json\r\n"
			 "Content-Length: 2\r\n\r\n{}",
			 port);
	}
	atomic_fetch_add(&ctl->unauthorized, 1);
	srv_reply(fd, h);
	return false;
}

static void token(int fd, const char *req)
{
	static const char first[] = "{\"token\":\"" TOKEN "\",\"expires_in\":300}";
	static const char second[] = "{\"access_token\":\"" TOKEN2 "\",\"expires_in\":300}";
	const char *body = atomic_fetch_add(&ctl->tokens, 1) ? second : first;
	char h[256];

	if (has(req, "\r\nAuthorization: Basic " USER_PASS_B64 "\r\n"))
		atomic_fetch_add(&ctl->token_basic, 1);
	else if (ctl->auth == A_TOKEN_SECRET) {
		srv_reply(fd, "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n");
		return;
	}
	/* The scope and service, percent-encoded as the realm asked. */
	if (!strstr(req, "scope=repository%3Amodels%2Fm%3Apull") ||
	    !strstr(req, "service=pfs%20test")) {
		srv_reply(fd, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
		return;
	}
	snprintf(h, sizeof(h),
		 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
		 strlen(body));
	srv_reply(fd, h);
	srv_reply(fd, body);
}

static void manifest(int fd, const char *ref)
{
	char h[512];

	for (int i = 0; i < ntags; i++) {
		const struct tagged *t = &tags[i];
		bool by_digest = !strcmp(ref, t->digest);
		bool lie = by_digest && ctl->fault == F_LIE;
		const char *mt = strstr(t->body, "\"mediaType\":\"");
		char ct[128] = MT_MANIFEST;

		if (strcmp(ref, t->tag) && !by_digest)
			continue;
		/* The Content-Type is the manifest's own mediaType. */
		if (mt)
			snprintf(ct, sizeof(ct), "%.*s", (int)strcspn(mt + 13, "\""), mt + 13);
		snprintf(h, sizeof(h),
			 "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nDocker-Content-Digest: %s\r\n"
			 "Content-Length: %zu\r\n\r\n",
			 ct, t->digest, strlen(t->body) + lie);
		srv_reply(fd, h);
		srv_reply(fd, t->body);
		if (lie)
			srv_reply(fd, " ");
		return;
	}
	{
		static const char body[] =
			"{\"errors\":[{\"code\":\"MANIFEST_UNKNOWN\",\"message\":"
			"\"manifest unknown\",\"detail\":{\"Tag\":\"x\"}}]}";

		snprintf(h, sizeof(h),
			 "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
			 "Content-Length: %zu\r\n\r\n%s",
			 strlen(body), body);
		srv_reply(fd, h);
	}
}

/* A blob's bytes with ranges; an ETag (the digest) unless @storage. */
static void blob_bytes(int fd, const char *req, const char *digest, bool storage)
{
	const char *rg = strcasestr(req, "\r\nRange: bytes=");
	long long a = 0, b = -1, size, len, sent = 0;
	char h[512], etag[100] = "";
	const struct blob *bl = NULL;
	struct stat st;
	int f;

	for (int i = 0; i < nblobs; i++)
		if (!strcmp(blobs[i].digest, digest))
			bl = &blobs[i];
	f = !bl ? -1 :
		  open(ctl->fault == F_SWAP && bl->alt[0] && !rg &&
				       atomic_fetch_add(&ctl->whole_gets, 1) ?
			       bl->alt :
			       bl->path,
		       O_RDONLY);
	if (f < 0 || fstat(f, &st)) {
		srv_reply(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
		if (f >= 0)
			close(f);
		return;
	}
	size = st.st_size;
	if (!storage)
		snprintf(etag, sizeof(etag), "ETag: \"%s\"\r\n", digest);
	if (rg)
		sscanf(rg + 15, "%lld-%lld", &a, &b);
	if (b < 0 || b >= size)
		b = size - 1;
	if (rg && size)
		snprintf(h, sizeof(h),
			 "HTTP/1.1 206 Partial Content\r\nContent-Length: %lld\r\nContent-Range: "
			 "bytes %lld-%lld/%lld\r\n%sAccept-Ranges: bytes\r\n\r\n",
			 b - a + 1, a, b, size, etag);
	else
		snprintf(
			h, sizeof(h),
			"HTTP/1.1 200 OK\r\nContent-Length: %lld\r\n%sAccept-Ranges: bytes\r\n\r\n",
			size, etag);
	if (!rg || !size) {
		a = 0;
		b = size - 1;
	}
	srv_reply(fd, h);
	len = b - a + 1;
	/* A unit's first GET starts on its 256 KiB boundary; a resumed one
	 * does not. The probe of the first byte is not cut. */
	bool cut = ctl->fault == F_CUT && len > 1 && !(a % (256 << 10));

	if (cut)
		len /= 2;
	while (size && sent < len) {
		off_t o = a + sent;
		ssize_t w = sendfile(fd, f, &o, (size_t)(len - sent));

		if (w <= 0)
			break;
		sent += w;
	}
	if (cut) {
		atomic_fetch_add(&ctl->cut, (int)sent);
		shutdown(fd, SHUT_RDWR);
	}
	close(f);
}

static void serve_one(int fd, const char *req)
{
	char target[1024], h[1200];

	if (sscanf(req, "GET %1023s", target) != 1) {
		srv_reply(fd, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n");
		return;
	}
	if (!strncmp(target, "/token?", 7)) {
		token(fd, req);
		return;
	}
	if (!strncmp(target, "/storage/", 9)) {
		atomic_fetch_add(&ctl->storage_gets, 1);
		if (has(req, "\r\nAuthorization:"))
			atomic_fetch_add(&ctl->storage_auth, 1);
		blob_bytes(fd, req, target + 9, true);
		return;
	}
	if (!authorized(fd, req))
		return;
	if (!strncmp(target, "/v2/models/m/manifests/", 23)) {
		manifest(fd, target + 23);
	} else if (!strncmp(target, "/v2/models/m/blobs/", 19) && ctl->fault == F_REDIRECT) {
		snprintf(h, sizeof(h),
			 "HTTP/1.1 307 Temporary Redirect\r\nLocation: "
			 "http://localhost:%d/storage/%s\r\nContent-Length: 0\r\n\r\n",
			 port, target + 19);
		srv_reply(fd, h);
	} else if (!strncmp(target, "/v2/models/m/blobs/", 19)) {
		blob_bytes(fd, req, target + 19, false);
	} else {
		srv_reply(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
	}
}

/* ---- the content ---- */

/* A layer descriptor of @path (@mt) titled @title (NULL: an image layer,
 * untitled), its blob registered; @digest overrides the real one (a layer
 * that lies). */
static int layer_json(char *out, size_t n, const char *path, const char *mt, const char *title,
		      const char *digest)
{
	struct blob *b = &blobs[nblobs++];
	struct stat st;

	if (stat(path, &st) || file_digest(path, b->digest))
		return -1;
	if (digest)
		snprintf(b->digest, sizeof(b->digest), "%s", digest);
	snprintf(b->path, sizeof(b->path), "%s", path);
	if (!title)
		return snprintf(out, n, "{\"mediaType\":\"%s\",\"digest\":\"%s\",\"size\":%lld}",
				mt, b->digest, (long long)st.st_size);
	return snprintf(out, n,
			"{\"mediaType\":\"%s\",\"digest\":\"%s\",\"size\":%lld,"
			"\"annotations\":{\"org.opencontainers.image.title\":\"%s\"}}",
			mt, b->digest, (long long)st.st_size, title);
}

static char *manifest_of(const char *layers)
{
	static char m[65536];

	snprintf(m, sizeof(m),
		 "{\"schemaVersion\":2,\"mediaType\":\"" MT_MANIFEST "\",\"artifactType\":"
		 "\"application/vnd.pfs.model\",\"config\":" EMPTY_CFG ",\"layers\":[%s]}",
		 layers);
	return m;
}

/* The data directory's files as layers (sorted as readdir gives them),
 * the minilm/ ones titled with their folder; the lying variant gives
 * silero_vad.onnx another digest. */
static int content(void)
{
	char layers[32768], bad[32768], path[600], name[300];
	const char *sub[] = { "", "minilm/" };
	size_t o = 0, ob = 0;

	for (int s = 0; s < 2; s++) {
		char d[200];
		struct dirent *e;
		DIR *dp;

		snprintf(d, sizeof(d), "%s/%s", data, sub[s]);
		dp = opendir(d);
		if (!dp)
			return -1;
		while ((e = readdir(dp))) {
			if (e->d_name[0] == '.' || e->d_type == DT_DIR)
				continue;
			snprintf(path, sizeof(path), "%s%s", d, e->d_name);
			snprintf(name, sizeof(name), "%s%s", sub[s], e->d_name);
			o += (size_t)snprintf(layers + o, sizeof(layers) - o, "%s", o ? "," : "");
			ob += (size_t)snprintf(bad + ob, sizeof(bad) - ob, "%s", ob ? "," : "");
			if (layer_json(layers + o, sizeof(layers) - o, path, MT_LAYER, name, NULL) <
			    0)
				return -1;
			o += strlen(layers + o);
			if (layer_json(bad + ob, sizeof(bad) - ob, path, MT_LAYER, name,
				       strcmp(name, "silero_vad.onnx") ?
					       NULL :
					       "sha256:0000000000000000000000000000000000000000000"
					       "000000000000000000001") < 0)
				return -1;
			ob += strlen(bad + ob);
			nfiles++;
		}
		closedir(dp);
	}
	add_tag("v1", manifest_of(layers));
	snprintf(main_digest, sizeof(main_digest), "%s", tags[0].digest);
	add_tag("badlayer", manifest_of(bad));
	return 0;
}

/* Indexes, malformed manifests, a bad title, an untitled zstd layer. */
static void odd_tags(void)
{
	char b[70000], cfg[300];

	snprintf(b, sizeof(b),
		 "{\"schemaVersion\":2,\"mediaType\":"
		 "\"application/vnd.docker.distribution.manifest.list.v2+json\",\"manifests\":["
		 "{\"mediaType\":\"" MT_MANIFEST "\",\"digest\":\"%s\",\"size\":%zu,"
		 "\"platform\":{\"os\":\"linux\",\"architecture\":\"arm64\",\"variant\":\"v8\"}},"
		 "{\"mediaType\":\"" MT_MANIFEST "\",\"digest\":\"%s\",\"size\":%zu,"
		 "\"platform\":{\"os\":\"linux\",\"architecture\":\"amd64\"}}]}",
		 tags[1].digest, strlen(tags[1].body), main_digest, strlen(tags[0].body));
	add_tag("multi", b);
	snprintf(b, sizeof(b),
		 "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\","
		 "\"manifests\":[{\"mediaType\":\"" MT_MANIFEST "\",\"digest\":\"%s\",\"size\":%zu,"
		 "\"platform\":{\"os\":\"linux\",\"architecture\":\"arm64\"}},"
		 "{\"mediaType\":\"" MT_MANIFEST "\",\"digest\":\"%s\",\"size\":%zu,"
		 "\"platform\":{\"os\":\"linux\",\"architecture\":\"s390x\"}}]}",
		 main_digest, strlen(tags[0].body), main_digest, strlen(tags[0].body));
	add_tag("noamd", b);
	snprintf(cfg, sizeof(cfg), "%s", blobs[0].digest);
	add_tag("mal-notjson", "{\"schemaVersion\":2,");
	add_tag("mal-schema1", "{\"schemaVersion\":1,\"name\":\"models/m\",\"fsLayers\":[]}");
	snprintf(b, sizeof(b),
		 "{\"schemaVersion\":2,\"mediaType\":\"" MT_MANIFEST "\",\"config\":" EMPTY_CFG
		 ",\"layers\":[],\"layers\":[{\"mediaType\":\"" MT_LAYER "\",\"digest\":\"%s\","
		 "\"size\":1}]}",
		 cfg);
	add_tag("mal-twice", b);
	snprintf(b, sizeof(b),
		 "{\"schemaVersion\":2,\"mediaType\":\"" MT_MANIFEST "\",\"config\":" EMPTY_CFG
		 ",\"layers\":[{\"mediaType\":\"" MT_LAYER
		 "\",\"digest\":\"%s\",\"size\":\"12\"}]}",
		 cfg);
	add_tag("mal-size", b);
	add_tag("mal-sha512", "{\"schemaVersion\":2,\"mediaType\":\"" MT_MANIFEST
			      "\",\"config\":" EMPTY_CFG ",\"layers\":[{\"mediaType\":\"" MT_LAYER
			      "\",\"digest\":\"sha512:00\",\"size\":1}]}");
	snprintf(b, sizeof(b), "%s,}", manifest_of(""));
	add_tag("mal-comma", b);
	snprintf(b, sizeof(b),
		 "{\"schemaVersion\":2,\"mediaType\":\"" MT_MANIFEST "\",\"config\":" EMPTY_CFG
		 ",\"layers\":[{\"mediaType\":\"" MT_LAYER "\",\"digest\":\"%s\",\"size\":%lld,"
		 "\"annotations\":{\"org.opencontainers.image.title\":\"../escape.bin\"}}]}",
		 blobs[0].digest, 0LL);
	add_tag("badname", b);
	snprintf(b, sizeof(b),
		 "{\"schemaVersion\":2,\"mediaType\":\"" MT_MANIFEST "\",\"config\":" EMPTY_CFG
		 ",\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+zstd\","
		 "\"digest\":\"%s\",\"size\":12}]}",
		 cfg);
	add_tag("zstdlayer", b);
}

/* ---- images: tar and tar+gzip layers ---- */

#define MT_GZIP "application/vnd.oci.image.layer.v1.tar+gzip"
#define MT_DOCKER_GZIP "application/vnd.docker.image.rootfs.diff.tar.gzip"

/* A tag of the layers given as (path, media type) pairs, NULL-ended. */
static int image_tag(const char *tag, ...)
{
	char layers[4096] = "";
	const char *p;
	size_t o = 0;
	va_list ap;

	va_start(ap, tag);
	while ((p = va_arg(ap, const char *))) {
		const char *mt = va_arg(ap, const char *);

		o += (size_t)snprintf(layers + o, sizeof(layers) - o, "%s", o ? "," : "");
		if (layer_json(layers + o, sizeof(layers) - o, p, mt, NULL, NULL) < 0) {
			va_end(ap);
			return -1;
		}
		o += strlen(layers + o);
	}
	va_end(ap);
	add_tag(tag, manifest_of(layers));
	return 0;
}

/* A one-member ustar archive of @name holding @len bytes of @data, its
 * header's byte @flip inverted unless negative. */
static int ustar(const char *path, const char *name, const char *data, size_t len, int flip)
{
	static unsigned char a[4096];
	size_t o = tar_end(a, tar_put(a, 0, name, '0', data, len, NULL));
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	if (flip >= 0)
		a[flip] ^= 0xff;
	fwrite(a, 1, o, f);
	return fclose(f);
}

/*
 * The data directory as an image, the way a ModelCar is built:
 *   tag image: layer 1 (tar+gzip, GNU format) holds ./models/ = the data
 *     directory with a wrong __init__.py, a file in minilm/'s place, a
 *     stale file, a symlink, and etc/ with a GNU long name; layer 2 (plain
 *     tar, pax format) the right __init__.py, the minilm/ directory (which
 *     replaces the file), the stale file's whiteout and a pax long name.
 *     Read with --source-oci-path models/, it is the data directory.
 *   tag image-whole: one Docker tar.gzip layer of the data directory.
 *   refusals: a layer whose bytes are not its digest, a truncated gzip, a
 *     malformed tar header, a '..' member.
 */
static int image_tags(void)
{
	char p[4][400], o[1024];
	const char *lng = "a-file-whose-name-is-far-longer-than-the-hundred-bytes-a-ustar-name-"
			  "field-holds-so-it-needs-an-extension.txt";
	const char *dots = "models/../escape.bin";

	if (sh("cd %s && mkdir -p img/a/models img/a/etc img/b/models img/b/etc && "
	       "cp -r data/. img/a/models/ && rm -r img/a/models/minilm && "
	       "echo file >img/a/models/minilm && echo wrong >img/a/models/__init__.py && "
	       "echo stale >img/a/models/stale.bin && ln -s silero_vad.onnx img/a/models/link && "
	       "echo x >img/a/etc/%s && cp -r data/minilm img/b/models/ && "
	       ": >img/b/models/__init__.py && : >img/b/models/.wh.stale.bin && echo y >img/b/etc/%s && "
	       "tar -C img/a --format=gnu -czf img/l1.tar.gz . && "
	       "tar -C img/b --format=pax -cf img/l2.tar models etc && "
	       "tar -C data -cf - . | gzip -9 >img/whole.tar.gz && "
	       "head -c $(($(stat -c %%s img/l1.tar.gz) / 2)) img/l1.tar.gz >img/cut.tar.gz",
	       dir, lng, lng))
		return -1;
	snprintf(p[0], sizeof(p[0]), "%s/img/l1.tar.gz", dir);
	snprintf(p[1], sizeof(p[1]), "%s/img/l2.tar", dir);
	snprintf(p[2], sizeof(p[2]), "%s/img/whole.tar.gz", dir);
	snprintf(p[3], sizeof(p[3]), "%s/img/cut.tar.gz", dir);
	if (image_tag("image", p[0], MT_GZIP, p[1], MT_LAYER, NULL) ||
	    image_tag("image-whole", p[2], MT_DOCKER_GZIP, NULL) ||
	    image_tag("img-cut", p[3], MT_GZIP, NULL))
		return -1;
	if (layer_json(o, sizeof(o), p[1], MT_LAYER, NULL,
		       "sha256:00000000000000000000000000000000000000000000000000000000000000"
		       "02") < 0)
		return -1;
	add_tag("img-digest", manifest_of(o));
	/* The plain layer again, one byte of config.json's data changed. */
	if (sh("cd %s/img && cp l2.tar swap.tar && o=$(grep -obUaF \"$(head -c 16 "
	       "b/models/minilm/config.json)\" l2.tar | head -1 | cut -d: -f1) && "
	       "printf X | dd of=swap.tar bs=1 seek=$((o + 1)) conv=notrunc status=none",
	       dir))
		return -1;
	for (int i = 0; i < nblobs; i++)
		if (strstr(blobs[i].path, "/img/l2.tar"))
			snprintf(blobs[i].alt, sizeof(blobs[i].alt), "%s/img/swap.tar", dir);
	snprintf(p[0], sizeof(p[0]), "%s/img/bad.tar", dir);
	snprintf(p[1], sizeof(p[1]), "%s/img/dots.tar", dir);
	if (ustar(p[0], "models/x.bin", "12345", 5, 130) || ustar(p[1], dots, "12345", 5, -1) ||
	    image_tag("img-header", p[0], MT_LAYER, NULL) ||
	    image_tag("img-dots", p[1], MT_LAYER, NULL))
		return -1;
	return 0;
}

/* ---- the checks ---- */

static char out[16384], err[16384];

static void slurp(const char *name, char *buf, size_t n)
{
	char p[128];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "r");
	buf[f ? fread(buf, 1, n - 1, f) : 0] = '\0';
	if (f)
		fclose(f);
}

static char bname[64];

static const char *blob(const char *what)
{
	snprintf(bname, sizeof(bname), "pfs-srcoci-%s-%d", what, getpid());
	return bname;
}

/* pfs blob create --source-oci 127.0.0.1:PORT/models/m@REF; the exit code. */
static int load(enum auth auth, enum fault fault, const char *ref, const char *name,
		const char *extra)
{
	int rc;

	memset((void *)ctl, 0, sizeof(*ctl));
	ctl->auth = auth;
	ctl->fault = fault;
	rc = sh("%s blob create --source-oci 127.0.0.1:%d/models/m%s --source-oci-plain-http "
		"--page 4k --dir /dev/shm --name %s --replace --source-chunk 256K "
		"--source-timeout 5 %s >%s/out 2>%s/err",
		pfs, port, ref, name, extra ? extra : "", dir, dir);
	slurp("out", out, sizeof(out));
	slurp("err", err, sizeof(err));
	return rc;
}

static int t_setup(void)
{
	const char *silero = testdata_dir("PFS_TESTDATA_SILERO6", "silero6");
	const char *minilm = testdata_dir("PFS_TESTDATA_MINILM", "minilm");
	CHECK(silero && minilm, "%s", testdata_why);
	CHECK(realpath(getenv("PFS") ? getenv("PFS") : "build/pfs", pfs) && !access(pfs, X_OK),
	      "no pfs binary at %s", pfs);
	CHECK(mkdtemp(dir), "mkdtemp");
	snprintf(data, sizeof(data), "%s/data", dir);
	CHECK(!sh("mkdir -p %s/minilm && cp %s/* %s/ && cd %s && cp config.json tokenizer.json "
		  "vocab.txt modules.json %s/minilm/",
		  data, silero, data, minilm, data),
	      "copy the data sets");
	CHECK(!sh("%s blob create --source %s --page 4k --dir /dev/shm --name pfs-srcoci-ref-%d "
		  "--replace >%s/ref.json 2>/dev/null && rm -f /dev/shm/pfs-srcoci-ref-%d",
		  pfs, data, getpid(), dir, getpid()),
	      "reference load");
	slurp("ref.json", out, sizeof(out));
	jstr(jsect(out, "\"source\""), "sha256", want_sha, sizeof(want_sha));
	CHECK(want_sha[0], "reference sha256");
	CHECK(!content(), "the layers");
	odd_tags();
	CHECK(!image_tags(), "the image layers (tar)");
	ctl = mmap(NULL, sizeof(*ctl), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(ctl != MAP_FAILED, "mmap");
	port = srv_listen();
	CHECK(port > 0, "listen");
	srv_start(serve_one);
	CHECK(!sh("printf '{\"auths\":{\"127.0.0.1:%d\":{\"auth\":\"%s\"},\"other.example\":"
		  "{\"username\":\"x\",\"password\":\"y\"}}}' >%s/pull-secret.json",
		  port, USER_PASS_B64, dir),
	      "the pull secret");
	tap_diag("a registry of %d titled layers (manifest %s) on port %d", nfiles, main_digest,
		 port);
	return TAP_PASS;
}

/* Loaded, equal to the files' blob, every layer digest compared, the
 * manifest's digest in the result, the manifest verifies, no secret shown. */
static bool loaded_equal_n(int rc, const char *what, int checks)
{
	const char *r = jsect(out, "\"remote\"");
	char sha[70], md[80] = "";

	jstr(jsect(out, "\"source\""), "sha256", sha, sizeof(sha));
	jstr(r, "oci_manifest", md, sizeof(md));
	if (rc || strcmp(sha, want_sha) || jreal(r, "checksums") != checks ||
	    (checks == nfiles && strcmp(md, main_digest)) || strstr(out, "sEcReT") ||
	    strstr(err, "sEcReT") || strstr(err, USER_PASS_B64) || strstr(err, TOKEN) ||
	    strstr(err, TOKEN2) ||
	    sh("%s blob manifest --name %s --dir /dev/shm --verify >/dev/null 2>&1", pfs,
	       blob(what))) {
		tap_diag("rc %d sha %s want %s manifest %s: %.600s %.1500s", rc, sha, want_sha, md,
			 r ? r : "", err);
		return false;
	}
	sh("rm -f /dev/shm/%s", blob(what));
	return true;
}

static bool loaded_equal(int rc, const char *what)
{
	return loaded_equal_n(rc, what, nfiles);
}

static int t_anonymous(void)
{
	int rc = load(A_NONE, F_NONE, ":v1", blob("anon"), NULL);

	CHECK(loaded_equal(rc, "anon"), "not loaded as the files are");
	CHECK(strstr(out, "\"kind\":\"oci\""), "%.600s", out);
	return TAP_PASS;
}

static int t_token(void)
{
	int rc = load(A_TOKEN, F_NONE, ":v1", blob("token"), NULL);

	CHECK(loaded_equal(rc, "token"), "not loaded");
	CHECK(ctl->unauthorized == 1 && ctl->tokens == 1 && ctl->token_basic == 0 &&
		      ctl->registry_bearer >= nfiles,
	      "401s %d, tokens %d (with Basic %d), bearer requests %d", ctl->unauthorized,
	      ctl->tokens, ctl->token_basic, ctl->registry_bearer);
	return TAP_PASS;
}

/* Without the pull secret: refused with @msg; with it: loaded, equal. */
static int secret_needed(enum auth auth, const char *what, const char *msg)
{
	char extra[200];
	int rc = load(auth, F_NONE, ":v1", blob("bad"), NULL);

	CHECK(rc && strstr(err, msg), "rc %d, wanted '%s' in: %.600s", rc, msg, err);
	snprintf(extra, sizeof(extra), "--source-oci-auth %s/pull-secret.json", dir);
	rc = load(auth, F_NONE, ":v1", blob(what), extra);
	CHECK(loaded_equal(rc, what), "not loaded with the secret");
	return TAP_PASS;
}

static int t_token_secret(void)
{
	/* Without the secret the realm refuses: a clear 401. */
	CHECK(secret_needed(A_TOKEN_SECRET, "tsecret", "a token from 127.0.0.1: HTTP 401") ==
		      TAP_PASS,
	      "loaded");
	CHECK(ctl->tokens == 1 && ctl->token_basic == 1, "tokens %d, with the secret's Basic %d",
	      ctl->tokens, ctl->token_basic);
	return TAP_PASS;
}

static int t_basic(void)
{
	CHECK(secret_needed(A_BASIC, "basic",
			    "HTTP 401, it asks for credentials (Basic): give a pull secret") ==
		      TAP_PASS,
	      "loaded");
	CHECK(ctl->unauthorized == 1 && ctl->tokens == 0, "401s %d tokens %d", ctl->unauthorized,
	      ctl->tokens);
	return TAP_PASS;
}

/* A refused load: exit code not 0, @msg in the error, no blob left. */
static int refused(enum auth auth, enum fault fault, const char *ref, const char *msg)
{
	int rc = load(auth, fault, ref, blob("bad"), NULL);

	CHECK(rc != 0 && strstr(err, msg), "%s: rc %d, wanted '%s' in: %.1500s", ref, rc, msg, err);
	CHECK(!strstr(err, "retrying"), "a refusal was retried: %.1500s", err);
	/* The ASan pfs (make test-asan) reports a leak on a refusal path here. */
	CHECK(!strstr(err, "Sanitizer"), "%.3000s", err);
	CHECK(sh("test -e /dev/shm/%s", blob("bad")) != 0, "a failed load left its blob");
	tap_diag("%.300s", strstr(err, "error: ") ? strstr(err, "error: ") : err);
	return TAP_PASS;
}

static int t_digest(void)
{
	char ref[100];
	int rc;

	snprintf(ref, sizeof(ref), "@%s", main_digest);
	rc = load(A_TOKEN, F_NONE, ref, blob("digest"), NULL);
	CHECK(loaded_equal(rc, "digest"), "not loaded by digest");
	return refused(A_NONE, F_LIE, ref, "refused (the registry sent other bytes");
}

static int t_index(void)
{
	int rc = load(A_TOKEN, F_NONE, ":multi", blob("index"), NULL);

	CHECK(loaded_equal(rc, "index"), "the index's linux/amd64 manifest not loaded");
	return refused(A_NONE, F_NONE, ":noamd",
		       "no linux/amd64 manifest among its platforms: linux/arm64 linux/s390x");
}

static int t_bad_layer(void)
{
	return refused(A_NONE, F_NONE, ":badlayer", "not the layer's digest sha256:00000000");
}

static int t_redirect(void)
{
	int rc = load(A_TOKEN, F_REDIRECT, ":v1", blob("redirect"), NULL);

	CHECK(loaded_equal(rc, "redirect"), "not loaded");
	CHECK(ctl->storage_gets > nfiles && ctl->storage_auth == 0 && ctl->registry_bearer > 0,
	      "storage GETs %d, with an Authorization header %d; registry with the token %d",
	      ctl->storage_gets, ctl->storage_auth, ctl->registry_bearer);
	return TAP_PASS;
}

static int t_expire(void)
{
	int rc = load(A_TOKEN, F_EXPIRE, ":v1", blob("expire"), NULL);

	CHECK(loaded_equal(rc, "expire"), "not loaded");
	CHECK(ctl->tokens == 2 && ctl->unauthorized >= 2 && strstr(err, "token expired"),
	      "tokens %d, 401s %d: %.600s", ctl->tokens, ctl->unauthorized, err);
	tap_diag("%d readers met the expired token; one new token for all", ctl->unauthorized - 1);
	return TAP_PASS;
}

static int t_cut(void)
{
	int rc = load(A_TOKEN, F_CUT, ":v1", blob("cut"), NULL);
	const char *r = jsect(out, "\"remote\"");

	CHECK(loaded_equal(rc, "cut"), "not loaded");
	CHECK(jreal(r, "retries") >= 10 && jreal(r, "resumed_bytes") == (double)ctl->cut &&
		      ctl->cut > 0,
	      "%.300s, the server cut after %d bytes in all", r, ctl->cut);
	tap_diag("%.0f ranges cut halfway, %.0f bytes not fetched again", jreal(r, "retries"),
		 jreal(r, "resumed_bytes"));
	return TAP_PASS;
}

/* Each tag of @c refused with its message. */
struct refusal {
	const char *tag, *msg;
};

static int refused_all(const struct refusal *c, size_t k)
{
	for (size_t i = 0; i < k; i++)
		if (refused(A_NONE, F_NONE, c[i].tag, c[i].msg) != TAP_PASS)
			return TAP_FAIL;
	return TAP_PASS;
}

static int t_malformed(void)
{
	static const struct refusal cases[] = {
		{ ":mal-notjson", "malformed manifest: JSON byte 19: a key must be a string" },
		{ ":mal-schema1", "schemaVersion is not 2" },
		{ ":mal-twice", "\"layers\" is missing, twice, or not an array" },
		{ ":mal-size", "is missing, not a whole number, or absurd" },
		{ ":mal-sha512", "is not sha256:<64 lowercase hex digits>" },
		{ ":mal-comma", "bytes after the value" },
	};

	return refused_all(cases, sizeof(cases) / sizeof(cases[0]));
}

static int t_unknown(void)
{
	return refused(A_TOKEN, F_NONE, ":nope",
		       "/models/m:nope: HTTP 404 Not Found: MANIFEST_UNKNOWN (manifest unknown)");
}

static int t_bad_name(void)
{
	return refused(A_NONE, F_NONE, ":badname",
		       "'../escape.bin' has an empty, '.' or '..' part");
}

/* An image: its layers unpacked, whiteouts and overrides applied, the
 * directory beneath --source-oci-path; each layer's digest compared. */
static int t_image(void)
{
	int rc = load(A_TOKEN, F_NONE, ":image", blob("image"), "--source-oci-path /models");

	CHECK(loaded_equal_n(rc, "image", 2), "the image is not the data directory");
	CHECK(strstr(err, "1 links, devices or FIFOs"), "the symlink not counted: %.600s", err);
	rc = load(A_NONE, F_NONE, ":v1", blob("bad"), "--source-oci-path models");
	CHECK(rc && strstr(err, "--source-oci-path models/: the manifest has no image layer"),
	      "a path in an artifact of titled layers: rc %d, %.600s", rc, err);
	rc = load(A_NONE, F_REDIRECT, ":image-whole", blob("whole"), NULL);
	CHECK(loaded_equal_n(rc, "whole", 1), "one tar.gzip layer is not the data directory");
	CHECK(ctl->storage_gets == 2 && ctl->storage_auth == 0,
	      "the layer streamed %d times, with an Authorization %d", ctl->storage_gets,
	      ctl->storage_auth);
	return TAP_PASS;
}

/* Every range of a layer cut halfway: the stream resumes, equal. */
static int t_image_cut(void)
{
	int rc = load(A_NONE, F_CUT, ":image-whole", blob("icut"), NULL);
	const char *r = jsect(out, "\"remote\"");

	CHECK(loaded_equal_n(rc, "icut", 1), "not loaded");
	CHECK(jreal(r, "retries") >= 2, "%.300s", r);
	return TAP_PASS;
}

static int t_image_refused(void)
{
	static const struct refusal cases[] = {
		{ ":img-digest", "not its digest: the registry served other bytes" },
		{ ":img-cut", "truncated gzip: its" },
		{ ":img-header", "tar byte 0: a malformed tar header" },
		{ ":img-dots", "'models/../escape.bin' has an empty, '.' or '..' part" },
	};

	return refused_all(cases, sizeof(cases) / sizeof(cases[0]));
}

/* A layer whose bytes change between the listing and the read. */
static int t_image_swap(void)
{
	CHECK(refused(A_NONE, F_SWAP, ":image",
		      "not its digest: the registry served other bytes") == TAP_PASS,
	      "loaded");
	CHECK(ctl->whole_gets >= 2, "the layer was read %d times", ctl->whole_gets);
	return TAP_PASS;
}

static int t_untitled(void)
{
	return refused(
		A_NONE, F_NONE, ":zstdlayer",
		"(application/vnd.oci.image.layer.v1.tar+zstd, sha256:e3b0c44298fc1c149afbf4c"
		"8996fb92427ae41e4649b934ca495991b7852b855) has no "
		"org.opencontainers.image.title annotation and is not an image layer "
		"read here");
}

static int t_cleanup(void)
{
	srv_stop();
	sh("rm -rf %s; rm -f /dev/shm/pfs-srcoci-*-%d", dir, getpid());
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "setup: real model files as titled layers, a scripted registry", t_setup, .setup = true },
	{ "anonymous: the blob the files make, every layer digest compared", t_anonymous },
	{ "token: 401, a token from the realm, the manifest and blobs with it", t_token },
	{ "token with a pull secret: Basic to the realm only; without: refused", t_token_secret },
	{ "Basic registry: the secret's credentials; without: refused, says so", t_basic },
	{ "by digest: loaded; a manifest that is not its digest: refused", t_digest },
	{ "an index: its linux/amd64 manifest; none: refused listing the platforms", t_index },
	{ "a layer whose bytes are not its digest: refused after the read", t_bad_layer },
	{ "blobs redirected to another host: no Authorization header reaches it", t_redirect },
	{ "a token expiring mid-read: one new token for every reader, loaded", t_expire },
	{ "every range cut halfway once: resumed where it stopped, equal", t_cut },
	{ "malformed manifests: refused, each saying why", t_malformed },
	{ "an unknown tag: refused with the registry's error code and message", t_unknown },
	{ "a title with '..': refused naming it", t_bad_name },
	{ "image layers (tar, tar+gzip): unpacked, whiteouts, overrides, --source-oci-path",
	  t_image },
	{ "an image layer cut mid-stream: resumed from the byte it stopped at", t_image_cut },
	{ "image layers: bad digest, truncated gzip, bad tar header, '..': refused",
	  t_image_refused },
	{ "an image layer that changes between the listing and the read: refused", t_image_swap },
	{ "an untitled layer of another type (tar+zstd): refused naming it", t_untitled },
	{ "cleanup", t_cleanup, .setup = true },
};

TAP_MAIN(tests)
