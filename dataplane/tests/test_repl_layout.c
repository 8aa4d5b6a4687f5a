// SPDX-License-Identifier: Apache-2.0
/*
 * Replication with the file layout first (pfs/blob_repl.h: the server's
 * opts.layout, the client's opts.layout and on_layout; the LAYOUT frames
 * of src/wire/blob_repl_wire.h), the library in this process over real
 * TCP sockets on the loopback: a layout of 3000 files reaches the client
 * in several frames before any byte and the bytes follow; a flat server
 * asked for a layout makes the fetch fail with the message; a resume on
 * another upstream with the same layout completes, with another layout
 * fails; every kind of malformed LAYOUT frame from a fake upstream is
 * refused, counted and logged, and the fetch goes on to the next upstream.
 * The client's on_layout makes a plain buffer of the blob here: the files
 * blob the CLI makes from it is tested through pfs (test_repl_layout_cli).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "repl/blob_repl_int.h"
#include "wire/blob_repl_wire.h"
#include "repl_util.h"
#include "tap.h"
#include "pfs/gram.h"
#include "pfs/integrity.h"
#include "wire/wire_le.h"

#define SIZE (16ULL << 20)
#define NFILES 3000
#define TOKEN "layout-test-token"

static uint8_t *src;
static struct pfs_blob_layout_ent ents[2][NFILES];
static char names[NFILES][64];
static struct pfs_blob_layout lay[2]; /* [1]: another layout of the same size */

/* Layout v1 of @n files, packed; @salt changes the lengths. */
static void make_layout(int k, uint32_t n, uint64_t salt)
{
	uint64_t at = 0;

	for (uint32_t i = 0; i < n; i++) {
		if (!k)
			snprintf(names[i], sizeof(names[i]), "models/tiny/part-%04u-of-%04u.bin", i,
				 n);
		ents[k][i] = (struct pfs_blob_layout_ent){ .name = names[i],
							   .offset = at,
							   .length = (i * 7919 + salt) % 4000 };
		at = (at + ents[k][i].length + 4095) & ~4095ULL;
	}
	lay[k] = (struct pfs_blob_layout){ .n = n, .ent = ents[k], .tail_off = at, .size = SIZE };
}

static int setup(void)
{
	if (src)
		return 0;
	src = malloc(SIZE);
	if (!src)
		return -1;
	for (uint64_t i = 0; i < SIZE; i += 8)
		put64(src + i, i * 0x9e3779b97f4a7c15ULL);
	make_layout(0, NFILES, 1);
	make_layout(1, NFILES, 2);
	return 0;
}

static struct pfs_repl_server *serve(const struct pfs_blob_layout *l)
{
	struct pfs_repl_server_opts o = { .sz = sizeof(o),
					  .listen = "127.0.0.1:0",
					  .blob = src,
					  .size = SIZE,
					  .token = TOKEN,
					  .token_len = strlen(TOKEN),
					  .layout = l };
	char why[256];
	struct pfs_repl_server *s = pfs_repl_server__start(&o, why, sizeof(why));

	if (!s)
		tap_diag("server: %s", why);
	return s;
}

/* A deep copy of @l (names too), or NULL. */
static struct pfs_blob_layout *layout_copy(const struct pfs_blob_layout *l)
{
	struct pfs_blob_layout *c = calloc(1, sizeof(*c));

	if (!c || !(c->ent = calloc(l->n + 1, sizeof(*c->ent)))) {
		free(c);
		return NULL;
	}
	c->tail_off = l->tail_off;
	c->size = l->size;
	for (; c->n < l->n; c->n++) {
		c->ent[c->n] = l->ent[c->n];
		c->ent[c->n].name = strdup(l->ent[c->n].name);
	}
	return c;
}

static bool layout_same(const struct pfs_blob_layout *a, const struct pfs_blob_layout *b)
{
	if (a->n != b->n || a->tail_off != b->tail_off || a->size != b->size)
		return false;
	for (uint32_t i = 0; i < a->n; i++)
		if (a->ent[i].offset != b->ent[i].offset || a->ent[i].length != b->ent[i].length ||
		    strcmp(a->ent[i].name, b->ent[i].name))
			return false;
	return true;
}

/* What on_layout saw; it makes the blob a plain buffer. */
struct made {
	int calls;
	struct pfs_blob_layout *l;
	uint8_t *blob;
};

static int on_layout(void *ctx, const struct pfs_blob_layout *l, uint8_t **blob, char *why,
		     size_t n)
{
	struct made *m = ctx;

	m->calls++;
	if (!(m->l = layout_copy(l)) || !(m->blob = calloc(1, l->size))) {
		snprintf(why, n, "no memory");
		return -ENOMEM;
	}
	*blob = m->blob;
	return 0;
}

static void made_free(struct made *m)
{
	if (m->l) {
		for (uint32_t i = 0; i < m->l->n; i++)
			free((void *)m->l->ent[i].name);
		free(m->l->ent);
		free(m->l);
	}
	free(m->blob);
	memset(m, 0, sizeof(*m));
}

/* pfs_repl_fetch with the layout from @ups (n of them), into @m and @r. */
static int fetch(const char *const *ups, int n, struct made *m, struct pfs_repl_fetch_result *r)
{
	struct pfs_repl_fetch_opts o = { .sz = sizeof(o),
					 .upstreams = ups,
					 .n_upstreams = n,
					 .size = SIZE,
					 .token = TOKEN,
					 .token_len = strlen(TOKEN),
					 .timeout_ms = 20000,
					 .io_timeout_ms = 3000,
					 .prefer_wait_ms = -1,
					 .layout = true,
					 .on_layout = on_layout,
					 .layout_ctx = m };

	return pfs_repl_fetch(&o, r);
}

static struct pfs_repl_fetch_result res;

static int t_layout_first(void)
{
	struct pfs_repl_server *s;
	struct made m = { 0 };
	const char *up;
	int err;

	CHECK(!setup(), "no memory");
	s = serve(&lay[0]);
	CHECK(s, "server");
	up = pfs_repl_server__addr(s);
	err = fetch(&up, 1, &m, &res);
	pfs_repl_server__stop(s);
	CHECK(!err, "fetch: %s", res.error);
	CHECK(m.calls == 1 && layout_same(m.l, &lay[0]), "on_layout: %d calls, layout %s", m.calls,
	      m.l ? "differs" : "missing");
	CHECK(res.layout_files == NFILES && res.layout_frames >= 2, "%u files in %llu frames",
	      res.layout_files, (unsigned long long)res.layout_frames);
	CHECK(!memcmp(m.blob, src, SIZE), "the bytes differ");
	tap_diag("%u files in %llu LAYOUT frames, then %llu bytes", res.layout_files,
		 (unsigned long long)res.layout_frames, (unsigned long long)res.bytes);
	made_free(&m);
	return TAP_PASS;
}

static int t_flat_server(void)
{
	struct pfs_repl_server *s;
	struct made m = { 0 };
	const char *up;
	int err;

	CHECK(!setup(), "no memory");
	s = serve(NULL);
	CHECK(s, "server");
	up = pfs_repl_server__addr(s);
	err = fetch(&up, 1, &m, &res);
	pfs_repl_server__stop(s);
	tap_diag("%s", res.error);
	CHECK(err == -ENODATA && strstr(res.error, "without a file layout") &&
		      strstr(res.error, "--layout files"),
	      "fetch from a flat server: %d %s", err, res.error);
	CHECK(!m.calls && !res.bytes, "on_layout called %d times, %llu bytes", m.calls,
	      (unsigned long long)res.bytes);
	made_free(&m);
	return TAP_PASS;
}

/* A fake upstream (thread): HELLO, the client's AUTH, ACCEPT, then the
 * LAYOUT frames of @l, each changed by @mutate (NULL: none), a first gram
 * of 4096 bytes when @gram, and a close. */
struct fake {
	int lfd;
	char addr[32];
	const struct pfs_blob_layout *l;
	void (*mutate)(uint8_t *b, int *len);
	bool gram;
	int asked_layout; /* AUTH had the LAYOUT flag */
	pthread_t tid;
};

static void *fake_main(void *arg)
{
	struct fake *k = arg;
	struct repl_frame ok = { .type = REPL_ACCEPT, .size = SIZE }, au;
	struct repl_layout_ent *e = calloc(k->l->n + 1, sizeof(*e));
	struct repl_layout l = { .n = k->l->n, .ent = e, .tail_off = k->l->tail_off };
	static uint8_t b[REPL_LAYOUT_FRAME_MAX];
	uint32_t first = 0, next;
	int type, fd = fake_accept(k->lfd, SIZE, &au, &type);

	if (fd < 0 || !e)
		goto out;
	k->asked_layout = type == REPL_AUTH && (au.flags & REPL_FLAG_LAYOUT);
	for (uint32_t i = 0; i < l.n; i++)
		e[i] = (struct repl_layout_ent){ .name = k->l->ent[i].name,
						 .offset = k->l->ent[i].offset,
						 .length = k->l->ent[i].length };
	frame_out(fd, &ok);
	do {
		int n = repl_layout_encode(&l, first, b, &next);

		if (n < 0)
			break;
		if (k->mutate) {
			k->mutate(b, &n);
			put32(b + 28,
			      pfs_crc32c(pfs_crc32c(0, b, 28), b + REPL_HDR, (size_t)n - REPL_HDR));
		}
		(void)!write(fd, b, (size_t)n);
		first = next;
	} while (first < l.n && !k->mutate); /* a bad frame ends it */
	if (k->gram) {
		struct pfs_desc d = { .off = 0, .len = 4096 };
		ssize_t h = pfs_gram_encode(PFS_MODE_PAYLOAD, 0, &d, 1, b, sizeof(b));

		memcpy(b + h, src, 4096);
		(void)!write(fd, b, (size_t)h + 4096);
	}
	shutdown(fd, SHUT_WR);
	frame_in(fd, &au); /* the client's close */
	close(fd);
out:
	free(e);
	return NULL;
}

static int fake_start(struct fake *k)
{
	struct sockaddr_in a;
	socklen_t al = sizeof(a);

	k->lfd = fake_listen(0);
	if (k->lfd < 0 || getsockname(k->lfd, (struct sockaddr *)&a, &al))
		return -1;
	snprintf(k->addr, sizeof(k->addr), "127.0.0.1:%u", ntohs(a.sin_port));
	return pthread_create(&k->tid, NULL, fake_main, k) ? -1 : 0;
}

static void fake_stop(struct fake *k)
{
	pthread_join(k->tid, NULL);
	close(k->lfd);
}

/* The first upstream sends its layout and 4096 bytes, then breaks; the
 * client resumes on the second: the same layout completes, another fails. */
static int t_resume(void)
{
	CHECK(!setup(), "no memory");
	for (int other = 0; other < 2; other++) {
		struct fake k = { .l = &lay[0], .gram = true };
		struct pfs_repl_server *s = serve(&lay[other]);
		struct made m = { 0 };
		const char *ups[2];
		int err;

		CHECK(s && !fake_start(&k), "server, fake");
		ups[0] = k.addr;
		ups[1] = pfs_repl_server__addr(s);
		err = fetch(ups, 2, &m, &res);
		fake_stop(&k);
		pfs_repl_server__stop(s);
		CHECK(k.asked_layout, "the AUTH did not ask for the layout");
		CHECK(res.n_resumed == 1 && res.resumed_at[0] == 4096 && m.calls == 1,
		      "resumed %d times at %llu, on_layout %d calls (%s)", res.n_resumed,
		      (unsigned long long)res.resumed_at[0], m.calls, res.error);
		if (!other) {
			CHECK(!err && !memcmp(m.blob, src, SIZE), "same layout: %d %s", err,
			      res.error);
		} else {
			tap_diag("%s", res.error);
			CHECK(err == -ESTALE && strstr(res.error, "another file layout") &&
				      strstr(res.error, k.addr),
			      "another layout: %d %s", err, res.error);
		}
		made_free(&m);
	}
	return TAP_PASS;
}

/* Malformed LAYOUT frames: one field of the first frame out of range. */
static void m_count(uint8_t *b, int *len)
{
	(void)len;
	put64(b + 8, REPL_LAYOUT_ENT_MAX + 1ULL);
}
static void m_first(uint8_t *b, int *len)
{
	(void)len;
	put64(b + 16, 1);
}
static void m_entries(uint8_t *b, int *len)
{
	(void)len;
	put16(b + REPL_HDR, (uint16_t)(get16(b + REPL_HDR) + 1));
}
static void m_name_len(uint8_t *b, int *len)
{
	(void)len;
	put16(b + REPL_HDR + 2 + 16, 0);
}
static void m_name(uint8_t *b, int *len)
{
	(void)len;
	memcpy(b + REPL_HDR + 2 + REPL_LAYOUT_ENT_HDR, "../", 3);
}
static void m_offset(uint8_t *b, int *len)
{
	(void)len;
	put64(b + REPL_HDR + 2, 512);
}
static void m_length(uint8_t *b, int *len)
{
	(void)len;
	put64(b + REPL_HDR + 2 + 8, SIZE + 1);
}
static void m_trailing(uint8_t *b, int *len)
{
	(void)len;
	put16(b + REPL_HDR, (uint16_t)(get16(b + REPL_HDR) - 1)); /* the last entry left over */
}
static void m_xport(uint8_t *b, int *len)
{
	(void)len;
	b[24] = 1;
}

static int t_malformed(void)
{
	static const struct {
		const char *what;
		void (*mutate)(uint8_t *b, int *len);
	} bad[] = {
		{ "count over the limit", m_count },
		{ "first index not 0", m_first },
		{ "entries past the body", m_entries },
		{ "a name of 0 bytes", m_name_len },
		{ "a '..' name", m_name },
		{ "an unaligned offset", m_offset },
		{ "a length past the blob", m_length },
		{ "bytes after the last entry", m_trailing },
		{ "an xport word", m_xport },
	};
	char logf[] = "/tmp/pfs-layout-log-XXXXXX";
	int lfd = mkstemp(logf), saved = dup(2);

	CHECK(!setup() && lfd >= 0 && saved >= 0, "setup");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fake k = { .l = &lay[0], .mutate = bad[i].mutate };
		struct pfs_repl_server *s = serve(&lay[0]);
		struct made m = { 0 };
		const char *ups[2];
		char *log, cmd[128];
		int err;

		CHECK(s && !fake_start(&k), "server, fake");
		ups[0] = k.addr;
		ups[1] = pfs_repl_server__addr(s);
		CHECK(!ftruncate(lfd, 0) && lseek(lfd, 0, SEEK_SET) == 0, "log file");
		dup2(lfd, 2); /* the library logs to stderr: read what it said */
		err = fetch(ups, 2, &m, &res);
		dup2(saved, 2);
		fake_stop(&k);
		pfs_repl_server__stop(s);
		snprintf(cmd, sizeof(cmd), "grep -m1 'bad LAYOUT' %s", logf);
		log = slurp_cmd(cmd);
		CHECK(!err && res.rejected == 1 && m.calls == 1 && !memcmp(m.blob, src, SIZE),
		      "%s: err %d rejected %llu calls %d: %s", bad[i].what, err,
		      (unsigned long long)res.rejected, m.calls, res.error);
		CHECK(log && strstr(log, k.addr), "%s: not logged (%s)", bad[i].what,
		      log ? log : "");
		if (i == 0 || i == 4)
			tap_diag("%s: %s", bad[i].what, log);
		free(log);
		made_free(&m);
	}
	close(lfd);
	close(saved);
	unlink(logf);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "3000 files' layout in several LAYOUT frames before the bytes; bytes equal",
	  t_layout_first },
	{ "a flat server asked for the layout: the fetch fails with the message", t_flat_server },
	{ "resume on another upstream: the same layout completes, another fails", t_resume },
	{ "malformed LAYOUT frames (each field out of range): refused, counted, logged; "
	  "the next upstream serves",
	  t_malformed },
};

TAP_MAIN(tests)
