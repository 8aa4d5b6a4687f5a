// SPDX-License-Identifier: Apache-2.0
/*
 * pfs_verify_stream (a files relay hashing while its bytes arrive) against
 * a real tree, /usr/include/linux loaded through the library: a feeder
 * thread copies the loaded blob into an empty buffer piece by piece and
 * advances a pfs_progress after each piece, as the fetch client does.
 * What must hold: a file is hashed once the watermark passes its end and
 * not before (the count of final digests matches the watermark exactly);
 * a complete copy verifies on 1 and 4 threads; one changed byte is named;
 * a manifest whose extents differ from the layout is refused; a failed
 * fill ends the workers with its message; a free mid-fill does not hang.
 * Memory and threads only.
 */
#include <pthread.h>
#include <time.h>

#include "pfs/blob_repl.h"
#include "pfs/log.h"
#include "source_util.h"
#include "tap.h"

static struct loaded tree;
static struct pfs_blob_layout lay;
static uint8_t *dst; /* the relay's copy */
static uint64_t size;

struct feeder {
	struct pfs_progress *p;
	uint64_t from, to, piece;
	pthread_t tid;
};

static void *feed(void *arg)
{
	struct feeder *f = arg;
	const uint8_t *src = pfs_blob__data(tree.blob);

	for (uint64_t at = f->from; at < f->to;) {
		uint64_t n = f->to - at < f->piece ? f->to - at : f->piece;

		memcpy(dst + at, src + at, n);
		at += n;
		pfs_progress__advance(f->p, at);
	}
	return NULL;
}

/* Copy [@from, @to) into dst on a thread, advancing @p. */
static void feed_range(struct feeder *f, struct pfs_progress *p, uint64_t from, uint64_t to)
{
	*f = (struct feeder){ .p = p, .from = from, .to = to, .piece = 64 << 10 };
	pthread_create(&f->tid, NULL, feed, f);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int t_setup(void)
{
	pfs_log_set_level(PFS_LOG_ERROR);
	if (access(REAL_TREE, R_OK))
		return tap_skip("no %s (hack/install-deps.sh installs linux-libc-dev)", REAL_TREE);
	CHECK(!load(REAL_TREE, NULL, PFS_PAGE_4K, &tree), "load %s: %s", REAL_TREE, tree.why);
	size = pfs_blob__size(tree.blob);
	/* The layout a relay gets first: the manifest's files, in its order. */
	lay.n = (uint32_t)tree.m->nfiles;
	lay.ent = calloc(lay.n, sizeof(*lay.ent));
	CHECK(lay.ent, "calloc");
	for (uint32_t i = 0; i < lay.n; i++)
		lay.ent[i] = (struct pfs_blob_layout_ent){ .name = tree.m->files[i].name,
							   .offset = tree.m->files[i].offset,
							   .length = tree.m->files[i].length };
	lay.tail_off = tree.m->offset;
	lay.size = size;
	dst = calloc(1, size);
	CHECK(dst && lay.n > 500, "calloc, %u files", lay.n);
	tap_diag("%s: %u files, %llu bytes", REAL_TREE, lay.n, (unsigned long long)size);
	return TAP_PASS;
}

/* Files whose digest can be final once bytes [0, mark) are: zero-length
 * ones and the ones ending at or below the mark. */
static uint32_t final_below(uint64_t mark)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < lay.n; i++)
		k += lay.ent[i].length == 0 || lay.ent[i].offset + lay.ent[i].length <= mark;
	return k;
}

/* Wait (5 s at most) until @v holds @want final digests; what it holds. */
static uint32_t wait_hashed(struct pfs_verify_stream *v, uint32_t want)
{
	double end = now() + 5;

	while (pfs_verify_stream__hashed(v) < want && now() < end)
		usleep(2000);
	return pfs_verify_stream__hashed(v);
}

/* Half the files in, then the rest: digests become final exactly as the
 * watermark passes their ends, and the whole copy verifies. */
static int streamed(unsigned threads)
{
	struct pfs_progress *p = pfs_progress__new(size);
	struct pfs_verify_stream *v;
	struct pfs_verify_stream_stats st;
	uint64_t half = lay.ent[lay.n / 2].offset + lay.ent[lay.n / 2].length / 2;
	struct feeder f;
	char why[256] = "";
	uint32_t got, want = final_below(half);
	int err;

	memset(dst, 0, size);
	v = pfs_verify_stream__start(dst, &lay, p, threads);
	CHECK(v, "start: %s", strerror(errno));
	feed_range(&f, p, 0, half);
	pthread_join(f.tid, NULL);
	got = wait_hashed(v, want);
	usleep(50000); /* more would show up by now if the workers overran the mark */
	CHECK(got == want && pfs_verify_stream__hashed(v) == want,
	      "%u threads: %u digests final at mark %llu, want %u", threads,
	      pfs_verify_stream__hashed(v), (unsigned long long)half, want);
	feed_range(&f, p, half, size);
	pthread_join(f.tid, NULL);
	err = pfs_verify_stream__finish(v, tree.m, size, &st, why, sizeof(why));
	CHECK(!err, "%u threads: finish %d: %s", threads, err, why);
	CHECK(pfs_verify_stream__hashed(v) == lay.n, "%u of %u files hashed",
	      pfs_verify_stream__hashed(v), lay.n);
	CHECK(st.busy_s > 0, "busy %.6f s", st.busy_s);
	tap_diag("%u threads: %u of %u digests final at half, hashing %.4f s", threads, want, lay.n,
		 st.busy_s);
	pfs_verify_stream__free(v);
	pfs_progress__free(p);
	return TAP_PASS;
}

static int t_one_thread(void)
{
	return streamed(1);
}

static int t_four_threads(void)
{
	return streamed(4);
}

/* The whole copy at once, but with one byte of @file changed, or with
 * @layout instead of lay: finish's error and message. */
static int run_whole(const struct pfs_blob_layout *layout, int64_t flip_at, char *why, size_t n)
{
	struct pfs_progress *p = pfs_progress__new(size);
	struct pfs_verify_stream *v;
	int err;

	memcpy(dst, pfs_blob__data(tree.blob), size);
	if (flip_at >= 0)
		dst[flip_at] ^= 0x20;
	v = pfs_verify_stream__start(dst, layout, p, 2);
	if (!v)
		return -ENOMEM;
	pfs_progress__advance(p, size);
	err = pfs_verify_stream__finish(v, tree.m, size, NULL, why, n);
	pfs_verify_stream__free(v);
	pfs_progress__free(p);
	return err;
}

static int t_flipped_byte(void)
{
	uint32_t i = lay.n - 1;
	char why[256] = "", want[300];
	int err;

	while (i && !lay.ent[i].length)
		i--;
	err = run_whole(&lay, (int64_t)(lay.ent[i].offset + lay.ent[i].length / 2), why,
			sizeof(why));
	snprintf(want, sizeof(want), "'%s': its bytes do not have the manifest's sha256",
		 lay.ent[i].name);
	CHECK(err == -EBADMSG && !strcmp(why, want), "err %d: '%s', want '%s'", err, why, want);
	return TAP_PASS;
}

static int t_other_extents(void)
{
	struct pfs_blob_layout other = lay;
	char why[256] = "";
	int err;

	other.ent = calloc(lay.n, sizeof(*other.ent));
	CHECK(other.ent, "calloc");
	memcpy(other.ent, lay.ent, lay.n * sizeof(*lay.ent));
	other.ent[3].length--;
	err = run_whole(&other, -1, why, sizeof(why));
	free(other.ent);
	CHECK(err == -EBADMSG && strstr(why, lay.ent[3].name) &&
		      strstr(why, "the layout sent first at"),
	      "err %d: '%s'", err, why);
	other = lay;
	other.n--;
	err = run_whole(&other, -1, why, sizeof(why));
	CHECK(err == -EBADMSG && strstr(why, "the manifest lists"), "err %d: '%s'", err, why);
	return TAP_PASS;
}

/* The fill fails a third of the way in: finish returns its message. */
static int t_failed_fill(void)
{
	struct pfs_progress *p = pfs_progress__new(size);
	struct pfs_verify_stream *v = pfs_verify_stream__start(dst, &lay, p, 3);
	char why[256] = "";
	double t0;
	int err;

	CHECK(v, "start");
	pfs_progress__advance(p, size / 3);
	pfs_progress__fail(p, "upstream 10.0.0.1:7470 failed: gone");
	t0 = now();
	err = pfs_verify_stream__finish(v, tree.m, size, NULL, why, sizeof(why));
	CHECK(err == -ECANCELED && !strcmp(why, "upstream 10.0.0.1:7470 failed: gone"),
	      "err %d: '%s'", err, why);
	CHECK(now() - t0 < 2, "finish took %.2f s after the failure", now() - t0);
	pfs_verify_stream__free(v);
	pfs_progress__free(p);
	return TAP_PASS;
}

/* A fetch that fails before its progress does (the CLI frees first). */
static int t_free_midway(void)
{
	struct pfs_progress *p = pfs_progress__new(size);
	struct pfs_verify_stream *v = pfs_verify_stream__start(dst, &lay, p, 4);
	double t0;

	CHECK(v, "start");
	pfs_progress__advance(p, size / 2);
	t0 = now();
	pfs_verify_stream__free(v);
	CHECK(now() - t0 < 1.0, "free took %.2f s", now() - t0);
	pfs_progress__free(p);
	return TAP_PASS;
}

static int t_teardown(void)
{
	unload(&tree);
	free(lay.ent);
	free(dst);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "setup: /usr/include/linux loaded through the library", t_setup, .setup = true },
	{ "1 thread: digests final exactly below the watermark; the copy verifies", t_one_thread },
	{ "4 threads: the same", t_four_threads },
	{ "one changed byte: the file is named", t_flipped_byte },
	{ "a manifest whose files differ from the layout sent first is refused", t_other_extents },
	{ "a failed fill ends the workers with its message", t_failed_fill },
	{ "freed mid-fill: the workers stop within a second", t_free_midway },
	{ "teardown", t_teardown, .setup = true },
};

TAP_MAIN(tests)
