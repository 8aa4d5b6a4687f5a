// SPDX-License-Identifier: Apache-2.0
/*
 * Chunk digests in the CLI (repl_chunks.h). What a relay verified is tied
 * to what the origin read: the origin computes the list from the bytes it
 * loaded, every relay verifies each of its chunks against the list its
 * upstream sent, and the operator checks that every node's list has the
 * origin's root. So a relay no longer hashes files with SHA-256: the
 * manifest's per-file sha256 lies in the blob's tail, which the chunks
 * cover, and is reported as received.
 *
 * A chunk that fails is fetched again, its bytes alone (a RANGE request
 * over TCP), from the next upstream, then hashed and compared again; its
 * downstream, which got the bad bytes cut-through, finds the same chunk on
 * its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include "repl.h"
#include "holder_metrics.h"
#include "repl_chunks.h"
#include "pfs/blob_manifest.h"
#include "pfs/blob_source.h"
#include "pfs/log.h"

#define CHUNKS_FILE "chunks" /* beside a files-layout blob: N.d/chunks */
#define CHUNKS_SUFFIX ".chunks" /* beside a flat blob's file: DIR/N.chunks */
#define BAD_MAX 64 /* failed chunks fetched again per round */

/* Hash threads: --verify-threads, else the online CPUs, at most 4. */
static unsigned hash_threads(const struct pfs_cli_repl *r)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (r->verify_threads_given && r->verify_threads)
		return (unsigned)r->verify_threads;
	return cpus < 1 ? 1 : cpus > 4 ? 4 : (unsigned)cpus;
}

/* --verify-threads 0 on a relay: hash after the last byte, so the receive
 * shares no core with hashing (what a benchmark's one-hop limit needs). */
static bool deferred(const struct pfs_cli_repl *r)
{
	return r->fetch_from && r->verify_threads_given && !r->verify_threads;
}

void pfs_cli_chunks_start(struct pfs_cli_repl *r, const uint8_t *blob, uint64_t size)
{
	struct pfs_cli_chunks *ch = &r->ch;
	int err;

	/* Every fetch carries them: TCP grams, datagrams and delta grams (a
	 * relay with a base hashes the bytes it rebuilt). */
	if (!ch->want)
		return;
	if (!ch->c) {
		struct pfs_chunks *c = pfs_chunks__new(size);

		ch->origin = !r->fetch_from;
		pfs_cli_metrics_lock(); /* a /metrics scrape reads ch->c */
		ch->c = c;
		pfs_cli_metrics_unlock();
		if (!ch->c) {
			pfs_warn("chunk digests: %s; verifying without them", strerror(errno));
			return;
		}
	}
	if (!blob || ch->hashing || deferred(r))
		return;
	err = pfs_chunks__hash_start(ch->c, blob, r->prog, hash_threads(r));
	if (err) {
		/* Without hashes a received list cannot verify anything: the
		 * relay verifies by sha256 (pfs_cli_chunks_verify: -ENOENT). */
		pfs_warn("chunk digests: %s; verifying without them", strerror(-err));
		if (ch->origin)
			pfs_chunks__list_none(ch->c);
		return;
	}
	ch->hashing = true;
	pfs_info("chunk digests: %u chunks of %u MiB, BLAKE3 (%s) on %u threads",
		 pfs_chunks__count(ch->c), PFS_CHUNK_SIZE >> 20, pfs_blake3_impl(),
		 hash_threads(r));
}

/* A flat blob's list: @name is "BASE.chunks" for the blob file @path, and
 * the directory fd returned is @chunks_dir's, else the blob's own, which
 * must not be hugetlbfs (it takes no write(2): a holder on hugepages is
 * given a small tmpfs as --chunks-dir, see the operator's holder pods).
 * -errno: -ENAMETOOLONG, -EOPNOTSUPP (hugetlbfs without --chunks-dir). */
static int flat_place(const char *chunks_dir, const char *path, char *name, size_t n)
{
	const char *base = strrchr(path, '/');
	char dir[4096];
	struct statfs sf;
	int fd;

	base = base ? base + 1 : path;
	if ((size_t)snprintf(name, n, "%s%s", base, CHUNKS_SUFFIX) >= n ||
	    (size_t)snprintf(dir, sizeof(dir), "%.*s", (int)(base - path), path) >= sizeof(dir))
		return -ENAMETOOLONG;
	fd = open(chunks_dir ? chunks_dir : *dir ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (!chunks_dir && !fstatfs(fd, &sf) && (uint32_t)sf.f_type == (uint32_t)HUGETLBFS_MAGIC) {
		close(fd);
		return -EOPNOTSUPP;
	}
	return fd;
}

/* Where @blob's list is kept: a directory fd to close and the file's name
 * in @name. A files-layout blob keeps it in its directory (N.d/chunks), a
 * flat one as flat_place says. -errno: none (an anonymous blob: -ENOENT). */
static int list_place(const struct pfs_cli_repl *r, const struct pfs_blob *blob, char *name,
		      size_t n)
{
	int fd;

	if (pfs_blob__dir_fd(blob) >= 0) {
		snprintf(name, n, "%s", CHUNKS_FILE);
		fd = fcntl(pfs_blob__dir_fd(blob), F_DUPFD_CLOEXEC, 0);
		return fd < 0 ? -errno : fd;
	}
	if (!pfs_blob__path(blob))
		return -ENOENT;
	return flat_place(r->chunks_dir, pfs_blob__path(blob), name, n);
}

/* Keep the complete list where list_place says, for the holder that serves
 * the blob later; without it, its later relays verify by sha256. */
static void save(struct pfs_cli_repl *r, const struct pfs_blob *blob)
{
	char name[512];
	int dfd = list_place(r, blob, name, sizeof(name)), err;

	if (dfd == -EOPNOTSUPP)
		pfs_warn("chunk digests: a hugetlbfs directory cannot keep the list beside the "
			 "blob; give --chunks-dir (later relays verify by sha256)");
	if (dfd < 0)
		return;
	err = pfs_chunks__save(r->ch.c, dfd, name);
	close(dfd);
	if (err == -EEXIST)
		pfs_warn("chunk digests: %s is not a chunk list (a blob of that name?): left "
			 "alone, the list not kept",
			 name);
	else if (err)
		pfs_warn("chunk digests: keeping the list as %s: %s", name, strerror(-err));
	r->ch.saved = !err;
}

/* Remove the list @name of the directory @dfd (closed here; < 0: none),
 * saying so when @what cannot. */
static void unlink_list(int dfd, const char *name, const char *what)
{
	int err = dfd < 0 ? -ENOENT : pfs_chunks__unlink(dfd, name);

	if (err == -EEXIST)
		pfs_warn("%s: %s is not a chunk list (a blob of that name?): left alone", what,
			 name);
	else if (err && err != -ENOENT)
		pfs_warn("%s: %s: %s", what, name, strerror(-err));
	if (dfd >= 0)
		close(dfd);
}

void pfs_cli_chunks_remove(const char *chunks_dir, const char *path)
{
	char name[512];
	int dfd = flat_place(chunks_dir, path, name, sizeof(name));

	unlink_list(dfd, name, "blob rm: the chunk list");
}

void pfs_cli_chunks_forget(const struct pfs_cli_repl *r, const struct pfs_blob *blob)
{
	char name[512];
	int dfd = list_place(r, blob, name, sizeof(name));

	unlink_list(dfd, name, "chunk digests: an earlier blob's list");
}

static void set_root(struct pfs_cli_chunks *ch)
{
	pfs_chunks__root(ch->c, ch->root);
	ch->have_root = true;
}

int pfs_cli_chunks_origin_done(struct pfs_cli_repl *r, struct pfs_blob *blob, char *why, size_t n)
{
	struct pfs_cli_chunks *ch = &r->ch;
	double t0 = pfs_cli_now();
	int err;

	if (!ch->c || !ch->origin || !ch->hashing)
		return 0;
	err = pfs_chunks__hash_wait(ch->c, why, n);
	ch->wait_s = pfs_cli_now() - t0;
	if (err) {
		pfs_chunks__list_none(ch->c);
		return err;
	}
	pfs_chunks__list_from_hashes(ch->c);
	set_root(ch);
	save(r, blob);
	return 0;
}

/* The upstreams of @base again, the one after @from first: a failed chunk
 * is fetched from another node when there is one. */
static int rotate(const struct pfs_repl_fetch_opts *base, const char *from, const char **ups)
{
	int first = 0, n = base->n_upstreams;

	for (int i = 0; i < n; i++)
		if (!strcmp(base->upstreams[i], from))
			first = (i + 1) % n;
	for (int i = 0; i < n; i++)
		ups[i] = base->upstreams[(first + i) % n];
	return n;
}

/* Fetch chunk @i again into @blob from @base's upstreams, @from last: its
 * bytes alone (a RANGE request over TCP, whatever the relay's transport). */
static int refetch(struct pfs_cli_chunks *ch, const struct pfs_repl_fetch_opts *base, uint8_t *blob,
		   uint64_t size, uint32_t i, const char *from, char *why, size_t n)
{
	const char *ups[PFS_REPL_UPSTREAMS];
	struct pfs_repl_fetch_opts o = *base;
	struct pfs_repl_fetch_result *fr = calloc(1, sizeof(*fr));
	int err;

	if (!fr)
		return -ENOMEM;
	o.upstreams = ups;
	o.n_upstreams = rotate(base, from, ups);
	o.blob = blob;
	o.size = size;
	o.start = pfs_chunks__off(i);
	o.end = o.start + pfs_chunks__len(ch->c, i);
	o.transport = "tcp";
	o.data_port = 0;
	/* The watermark is past these bytes already, and a failure here must
	 * not fail the server's clients: the verify's verdict does. */
	o.progress = NULL;
	o.base = NULL;
	o.chunks = NULL; /* the list is complete */
	o.layout = false;
	o.on_layout = NULL;
	o.on_bytes = NULL;
	/* Asked of @base's upstreams in turn, never moved to a tail (a relay
	 * that stepped aside has its flag set for good). */
	o.tail = NULL;
	o.n_tail = 0;
	o.step_aside = NULL;
	err = pfs_repl_fetch(&o, fr);
	/* relaxed atomic: a /metrics scrape reads it meanwhile */
	__atomic_store_n(&ch->refetched, ch->refetched + fr->bytes, __ATOMIC_RELAXED);
	if (err)
		snprintf(why, n, "fetching chunk %u again: %s", i, fr->error);
	free(fr);
	return err;
}

/* The manifest in the (verified) tail: its own digest and bounds; the
 * files' sha256 it lists are the origin's, covered by the chunks. */
static int check_manifest(const struct pfs_blob *blob, char *why, size_t n)
{
	struct pfs_manifest *m = NULL;
	char msg[400];
	int err = pfs_blob__manifest(blob, &m, msg, sizeof(msg));

	if (!err)
		err = pfs_manifest_check_digests(m, pfs_blob__size(blob), NULL, msg, sizeof(msg));
	pfs_manifest_free(m);
	if (err)
		snprintf(why, n, "%s", msg);
	return err;
}

/* What chunk @i holds, for a message: ", in 'a.bin'" (the first file it
 * overlaps, and how many more), ", in the manifest" (the tail), or "". */
static void chunk_files(const struct pfs_blob *blob, const struct pfs_chunks *c, uint32_t i,
			char *out, size_t n)
{
	const struct pfs_blob_layout *l = pfs_blob__layout(blob);
	uint64_t lo = pfs_chunks__off(i), hi = lo + pfs_chunks__len(c, i);
	const char *first = NULL;
	uint32_t more = 0;

	out[0] = '\0';
	if (!l)
		return;
	for (uint32_t f = 0; f < l->n; f++) {
		const struct pfs_blob_layout_ent *e = &l->ent[f];

		if (e->offset >= hi || e->offset + e->length <= lo || !e->length)
			continue;
		if (!first)
			first = e->name;
		else
			more++;
	}
	if (first && more)
		snprintf(out, n, ", in '%.200s' and %u more file(s)", first, more);
	else if (first)
		snprintf(out, n, ", in '%.200s'", first);
	else if (hi > l->tail_off)
		snprintf(out, n, ", in the manifest");
}

int pfs_cli_chunks_verify(struct pfs_cli_repl *r, struct pfs_blob *blob,
			  const struct pfs_repl_fetch_opts *base, char *why, size_t n)
{
	struct pfs_cli_chunks *ch = &r->ch;
	uint8_t *b = pfs_blob__data(blob);
	uint64_t size = pfs_blob__size(blob);
	uint32_t bad[BAD_MAX], nbad, from = 0;
	const char *up = r->fr.from;
	double t0 = pfs_cli_now();
	int err;

	/* No list came (an upstream that has none): the caller verifies by
	 * sha256. The tables stay: the server may be sending from them. */
	if (!ch->c || ch->origin || !pfs_chunks__list_done(ch->c))
		return -ENOENT;
	if (!ch->hashing && deferred(r) && !pfs_chunks__hash_start(ch->c, b, NULL, hash_threads(r)))
		ch->hashing = true;
	if (!ch->hashing)
		return -ENOENT;
	set_root(ch);
	err = pfs_chunks__hash_wait(ch->c, why, n);
	ch->wait_s = pfs_cli_now() - t0;
	if (err)
		return err;
	while ((nbad = pfs_chunks__compare(ch->c, from, bad, BAD_MAX))) {
		uint64_t off = pfs_chunks__off(bad[0]);

		if (!ch->rounds)
			ch->first_bad = bad[0];
		if (ch->rounds == PFS_CLI_CHUNK_ROUNDS) {
			char where[300];

			chunk_files(blob, ch->c, bad[0], where, sizeof(where));
			snprintf(why, n,
				 "chunk %u (bytes %" PRIu64 "+%" PRIu64 "%s) does not have the "
				 "BLAKE3 digest of the origin's list after %u fetches again",
				 bad[0], off, pfs_chunks__len(ch->c, bad[0]), where, ch->rounds);
			return -EBADMSG;
		}
		pfs_warn("chunk digests: %u chunk(s) from %s failed, the first chunk %u at %" PRIu64
			 "; fetching %s again from the next upstream",
			 nbad, up, bad[0], off, nbad > BAD_MAX ? "the first ones" : "them");
		ch->rounds++;
		for (uint32_t k = 0; k < nbad && k < BAD_MAX; k++) {
			err = refetch(ch, base, b, size, bad[k], up, why, n);
			if (err)
				return err;
			pfs_chunks__rehash(ch->c, bad[k], bad[k] + 1);
		}
		from = bad[0];
		up = "the next upstream";
	}
	ch->by_chunks = true;
	err = check_manifest(blob, why, n);
	if (!err)
		save(r, blob);
	return err;
}

void pfs_cli_chunks_load(struct pfs_cli_repl *r, const struct pfs_blob *blob)
{
	char name[512];
	int dfd = r->ch.c ? -EEXIST : list_place(r, blob, name, sizeof(name));
	struct pfs_chunks *c;

	if (r->chunks_dir && pfs_blob__dir_fd(blob) >= 0)
		pfs_warn("--chunks-dir: a files-layout blob keeps its list in its directory; "
			 "ignored");
	if (dfd < 0)
		return;
	c = pfs_chunks__load(dfd, name, pfs_blob__size(blob));
	if (!c && errno != ENOENT)
		pfs_warn("chunk digests: the kept list %s: %s; serving without it", name,
			 strerror(errno));
	close(dfd);
	pfs_cli_metrics_lock();
	r->ch.c = c;
	pfs_cli_metrics_unlock();
	if (r->ch.c) {
		r->ch.loaded = true;
		set_root(&r->ch);
	}
}

void pfs_cli_chunks_json(struct pfs_json *j, const struct pfs_cli_chunks *ch)
{
	struct pfs_chunks_stats st;
	char hex[2 * PFS_CHUNK_DIGEST + 1];

	if (!ch->c)
		return;
	pfs_chunks__stats(ch->c, &st);
	pfs_json_obj(j, "chunks");
	pfs_json_str(j, "algo", "blake3", 8);
	pfs_json_str(j, "impl", st.impl, 16);
	pfs_json_u64(j, "size", PFS_CHUNK_SIZE);
	pfs_json_u64(j, "count", st.count);
	if (ch->have_root) {
		for (int i = 0; i < PFS_CHUNK_DIGEST; i++)
			snprintf(hex + 2 * i, 3, "%02x", ch->root[i]);
		pfs_json_str(j, "root", hex, sizeof(hex));
	}
	pfs_json_str(j, "list",
		     ch->origin			  ? "computed" :
		     ch->loaded			  ? "kept" :
		     pfs_chunks__list_done(ch->c) ? "received" :
						    "none",
		     16);
	pfs_json_u64(j, "threads", st.threads);
	pfs_json_u64(j, "hashed", st.hashed);
	pfs_json_u64(j, "verified", st.verified);
	pfs_json_u64(j, "failed", st.failed);
	pfs_json_u64(j, "rounds", ch->rounds);
	if (ch->rounds)
		pfs_json_u64(j, "first_failed", ch->first_bad);
	pfs_json_u64(j, "refetched_bytes", ch->refetched);
	pfs_json_num(j, "hash_busy_s", st.busy_s, 3);
	pfs_json_num(j, "wait_s", ch->wait_s, 3);
	pfs_json_bool(j, "kept", ch->saved);
	pfs_json_close(j);
}

void pfs_cli_chunks_free(struct pfs_cli_chunks *ch)
{
	pfs_chunks__free(ch->c);
	ch->c = NULL;
}
