// SPDX-License-Identifier: Apache-2.0
/*
 * An OCI image's layers (tar, tar+gzip) unpacked into the blob's
 * directory: KServe ModelCar images, whose layers hold /models/...
 *
 * A blob's layout needs every file's size before the read, and a tar
 * tells sizes only as it is read, so each untitled layer is streamed
 * twice, both times through oci_untar (src/remote/oci_layer.c: sha256 of
 * the bytes as served against the layer digest, inflate, tar headers):
 *
 * 1. The listing (oci_image_list, on the lister's thread): one plain GET
 *    of the layer's blob (redirects and the registry's token as for any
 *    blob), its members recorded in order: name, size, layer. After each
 *    layer its whiteouts (".wh.NAME", ".wh..wh..opq") delete what earlier
 *    layers put there (image spec, "Whiteouts"); at the end a name given
 *    twice keeps its last member (a later layer overrides an earlier one),
 *    and of a file and a directory of one name the later replaces the
 *    earlier. The members left become files (oci_image_files).
 * 2. The read (src_unpack, before the pipeline's readers start): every
 *    layer with a member left is streamed again by one of up to
 *    opts.threads threads (layers in parallel, each sequential), and each
 *    member's bytes are copied straight to its file's offset in the blob.
 *    Every member must be the one the listing saw (name and size, in
 *    order) and the layer's bytes its digest again: a layer that changed
 *    fails the load. The pipeline then hashes these files as any other.
 *
 * A transient failure mid-stream resumes from the first byte not fed
 * (Range: bytes=N-), the parser's state kept; a parse error is final.
 * rm->img is owned by the source and freed with it.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/blob_source_int.h"
#include "source/blob_source_remote.h"
#include "pfs/log.h"

#define STREAM_BUF (256u << 10)
#define WHITEOUT ".wh."
#define OPAQUE ".wh..wh..opq"

struct img_member {
	char *name; /* the full name; NULL: outside --source-oci-path, or a whiteout */
	uint64_t size;
	size_t layer;
	bool live; /* a file of the blob */
	size_t file; /* its index in s->l (the read) */
};

struct img_layer {
	char digest[OCI_DIGEST_LEN + 1];
	char url[1100];
	uint64_t size;
	enum oci_layer_kind kind;
	size_t first, count; /* its members */
	size_t live; /* of which files: 0, not read again */
};

struct oci_image {
	struct img_member *m;
	size_t nm, capm;
	struct img_layer *l;
	size_t nl;
	uint64_t skipped;
	/* The whiteouts of the layer being listed: a name deletes itself and
	 * what lies beneath; an opaque one (a directory, "" for the root, with
	 * its '/') what lies beneath only. */
	char **wh;
	size_t nwh, capwh;
};

static int nomem(char *why, size_t n)
{
	snprintf(why, n, "no memory");
	return -ENOMEM;
}

static void image_free(struct oci_image *img)
{
	for (size_t i = 0; i < img->nm; i++)
		free(img->m[i].name);
	for (size_t i = 0; i < img->nwh; i++)
		free(img->wh[i]);
	free(img->m);
	free(img->l);
	free(img->wh);
	free(img);
}

void oci_image_free(struct oci_image *img)
{
	if (img)
		image_free(img);
}

/* The --source-oci-path of the source ("" none): a directory, with its '/'. */
static const char *path_of(const struct src_remote *rm)
{
	return rm->o.oci_path ? rm->o.oci_path : "";
}

/* ---- streaming a layer ---- */

/* The layer's bytes, all of them, into @u; resumed after a transient
 * failure from the first byte not fed. */
static int stream(struct src_remote *rm, struct http_conn *c, const struct img_layer *l,
		  struct oci_untar *u, uint8_t *buf, char *why, size_t n)
{
	for (int attempt = 0;; attempt++) {
		uint64_t at = oci_untar_fed(u);
		char range[48];
		struct http_resp r;
		int err;

		snprintf(range, sizeof(range), "bytes=%" PRIu64 "-", at);
		err = src_get(rm, c, l->url, at ? range : NULL, &r, why, n);
		if (!err && (at ? r.status != 206 || !r.has_range || r.first != at ||
					     (r.total != l->size && r.total != UINT64_MAX) :
				  r.status != 200 || (r.has_len && r.len != l->size))) {
			http_close(c);
			snprintf(why, n,
				 "layer %s: the registry answered %d with %" PRIu64
				 " bytes from %" PRIu64 ", the manifest says %" PRIu64,
				 l->digest, r.status, r.len, at ? r.first : 0, l->size);
			return -EBADMSG;
		}
		while (!err && oci_untar_fed(u) < l->size) {
			uint64_t want = l->size - oci_untar_fed(u);
			ssize_t k = http_read(c, &r, buf, want < STREAM_BUF ? want : STREAM_BUF);

			if (k <= 0) {
				err = k ? (int)k : -ECONNRESET;
				snprintf(why, n, "layer %s: the body ended at byte %" PRIu64 ": %s",
					 l->digest, oci_untar_fed(u), strerror(-err));
				break;
			}
			err = oci_untar_feed(u, buf, (size_t)k, why, n);
			if (err)
				break;
		}
		if (!err) {
			if (!r.keep_alive || !r.done)
				http_close(c);
			return oci_untar_end(u, why, n);
		}
		http_close(c);
		if (!src_transient(err) || attempt >= rm->o.retries)
			return err;
		atomic_fetch_add(&rm->retries, 1);
		atomic_fetch_add(&rm->resumed, oci_untar_fed(u));
		pfs_warn("source: %s; resuming from byte %" PRIu64, why, oci_untar_fed(u));
		src_backoff(attempt);
	}
}

/* One pass over layer @l: a parser calling @fn, the layer streamed. */
static int pass(struct src_remote *rm, struct http_conn *c, const struct img_layer *l,
		oci_member_fn fn, void *ctx, uint64_t *skipped, char *why, size_t n)
{
	struct oci_untar *u = oci_untar_new(l->kind, l->digest, fn, ctx);
	uint8_t *buf = malloc(STREAM_BUF);
	int err = u && buf ? stream(rm, c, l, u, buf, why, n) : nomem(why, n);

	if (!err && skipped)
		*skipped += oci_untar_skipped(u);
	oci_untar_free(u);
	free(buf);
	return err;
}

/* ---- the listing ---- */

struct lister {
	struct pfs_source *s;
	struct oci_image *img;
	size_t layer;
};

static int add_whiteout(struct oci_image *img, const char *name, char *why, size_t n)
{
	const char *base = strrchr(name, '/');
	size_t dl = base ? (size_t)(base - name) + 1 : 0; /* the directory, with '/' */
	char *w;

	base = base ? base + 1 : name;
	if (!strcmp(base, WHITEOUT))
		return 0; /* names nothing */
	if (img->nwh == img->capwh) {
		size_t cap = img->capwh ? 2 * img->capwh : 16;
		char **p = realloc(img->wh, cap * sizeof(*p));

		if (!p)
			return nomem(why, n);
		img->wh = p;
		img->capwh = cap;
	}
	if (!strcmp(base, OPAQUE))
		w = strndup(name, dl);
	else if (asprintf(&w, "%.*s%s", (int)dl, name, base + strlen(WHITEOUT)) < 0)
		w = NULL;
	if (!w)
		return nomem(why, n);
	img->wh[img->nwh++] = w;
	return 0;
}

static int list_member(void *ctx, const char *name, uint64_t size, uint8_t **dst, char *why,
		       size_t n)
{
	struct lister *ls = ctx;
	struct oci_image *img = ls->img;
	const char *path = path_of(ls->s->rem), *base = strrchr(name, '/');
	struct img_member *m;
	int err;

	(void)dst; /* the listing reads no bytes */
	if (img->nm == img->capm) {
		size_t cap = img->capm ? 2 * img->capm : 256;
		struct img_member *p;

		if (img->nm >= OCI_IMAGE_MEMBERS_MAX) {
			snprintf(why, n, "the image has over %u files: not read",
				 OCI_IMAGE_MEMBERS_MAX);
			return -E2BIG;
		}
		p = realloc(img->m, cap * sizeof(*p));
		if (!p)
			return nomem(why, n);
		img->m = p;
		img->capm = cap;
	}
	m = &img->m[img->nm];
	*m = (struct img_member){ .size = size, .layer = ls->layer };
	base = base ? base + 1 : name;
	if (!strncmp(base, WHITEOUT, strlen(WHITEOUT))) {
		err = add_whiteout(img, name, why, n);
	} else if (!strncmp(name, path, strlen(path))) {
		err = src_check_name(name + strlen(path), name, why, n);
		m->name = err ? NULL : strdup(name);
		m->live = true;
		if (!err && !m->name)
			err = nomem(why, n);
	} else {
		err = 0; /* not read; its name is not checked */
	}
	img->nm++;
	return err;
}

/* After layer @layer: its whiteouts delete what earlier layers put there. */
static void apply_whiteouts(struct oci_image *img, size_t layer)
{
	for (size_t w = 0; w < img->nwh; w++) {
		const char *t = img->wh[w];
		size_t tl = strlen(t);
		bool opaque = !tl || t[tl - 1] == '/';

		for (size_t i = 0; i < img->nm && img->m[i].layer < layer; i++) {
			struct img_member *m = &img->m[i];

			if (m->live && !strncmp(m->name, t, tl) &&
			    (opaque || !m->name[tl] || m->name[tl] == '/'))
				m->live = false;
		}
		free(img->wh[w]);
	}
	img->nwh = 0;
}

int oci_image_list(struct pfs_source *s, struct http_conn *c, const struct oci_desc *d, char *why,
		   size_t n)
{
	struct src_remote *rm = s->rem;
	struct oci_image *img = rm->img;
	struct lister ls = { .s = s };
	struct img_layer *l;
	char o[HTTP_HOST_MAX + 32];
	int err;

	if (!img) {
		img = rm->img = calloc(1, sizeof(*img));
		if (!img)
			return nomem(why, n);
	}
	l = realloc(img->l, (img->nl + 1) * sizeof(*l));
	if (!l)
		return nomem(why, n);
	img->l = l;
	l = &img->l[img->nl];
	*l = (struct img_layer){ .size = d->size,
				 .kind = oci_layer_kind(d->media_type),
				 .first = img->nm };
	snprintf(l->digest, sizeof(l->digest), "%s", d->digest);
	snprintf(l->url, sizeof(l->url), "%s://%s/v2/%s/blobs/%s", rm->ep.tls ? "https" : "http",
		 http_url_authority(&rm->ep, o, sizeof(o)), rm->ref.repo, d->digest);
	ls.img = img;
	ls.layer = img->nl++;
	err = pass(rm, c, l, list_member, &ls, &img->skipped, why, n);
	l->count = img->nm - l->first;
	apply_whiteouts(img, ls.layer);
	return err;
}

static int by_name(const void *a, const void *b)
{
	const struct img_member *x = *(struct img_member *const *)a;
	const struct img_member *y = *(struct img_member *const *)b;
	int c = strcmp(x->name, y->name);

	return c ? c : x < y ? -1 : x > y;
}

static int by_name_only(const void *a, const void *b)
{
	return strcmp((*(struct img_member *const *)a)->name,
		      (*(struct img_member *const *)b)->name);
}

/* A file and a directory of one name (@v: the live members, one per
 * name, sorted): the later replaces the earlier, as an overlay does: a
 * file deletes what lay beneath the directory, a member beneath the
 * directory deletes the file. */
static void file_or_dir(struct img_member **v, size_t k)
{
	char dir[OCI_NAME_MAX + 1];

	for (size_t i = 0; i < k; i++) {
		const char *name = v[i]->name;

		for (const char *sl = strchr(name, '/'); sl && v[i]->live;
		     sl = strchr(sl + 1, '/')) {
			struct img_member key = { .name = dir }, *kp = &key, **hit;

			snprintf(dir, sizeof(dir), "%.*s", (int)(sl - name), name);
			hit = bsearch(&kp, v, k, sizeof(*v), by_name_only);
			if (hit && (*hit)->live)
				(*hit > v[i] ? v[i] : *hit)->live = false;
		}
	}
}

int oci_image_files(struct pfs_source *s, char *why, size_t n)
{
	struct oci_image *img = s->rem->img;
	size_t plen = strlen(path_of(s->rem)), k = 0, live = 0;
	struct img_member **v;
	int err = 0;

	if (!img && plen) {
		snprintf(why, n,
			 "--source-oci-path %s: the manifest has no image layer (tar, tar+gzip)",
			 path_of(s->rem));
		return -EINVAL;
	}
	if (!img)
		return 0;
	v = calloc(img->nm ? img->nm : 1, sizeof(*v));
	if (!v)
		return nomem(why, n);
	for (size_t i = 0; i < img->nm; i++)
		if (img->m[i].live)
			v[k++] = &img->m[i];
	/* A name given twice: its last member wins (the order of the layers,
	 * then of the members in a layer). */
	qsort(v, k, sizeof(*v), by_name);
	for (size_t i = 0; i + 1 < k; i++)
		if (!strcmp(v[i]->name, v[i + 1]->name))
			v[i]->live = false;
	for (size_t i = 0; i < k; i++)
		if (v[i]->live)
			v[live++] = v[i];
	k = live;
	file_or_dir(v, k);
	for (size_t i = 0; !err && i < k; i++) {
		if (!v[i]->live)
			continue;
		img->l[v[i]->layer].live++;
		err = src_add_file(s, v[i]->name + plen, v[i]->name, v[i]->size,
				   img->l[v[i]->layer].url, why, n);
		if (!err)
			s->l.f[s->l.n - 1].unpacked = true;
	}
	free(v);
	if (!err && img->skipped)
		pfs_info("source: %" PRIu64 " links, devices or FIFOs in the image's layers "
			 "skipped",
			 img->skipped);
	if (!err && !s->l.n) {
		snprintf(why, n, "the image has no regular file%s%s", plen ? " beneath " : "",
			 path_of(s->rem));
		err = -ENOENT;
	}
	return err;
}

/* ---- the read ---- */

struct unpack {
	struct pfs_source *s;
	uint8_t *blob;
	atomic_size_t next; /* the next layer to take */
	pthread_mutex_t lock;
	int err;
	char why[512];
};

struct reader {
	struct unpack *u;
	const struct img_layer *l;
	size_t k; /* the layer's members seen */
};

static int read_member(void *ctx, const char *name, uint64_t size, uint8_t **dst, char *why,
		       size_t n)
{
	struct reader *rd = ctx;
	const struct img_layer *l = rd->l;
	struct oci_image *img = rd->u->s->rem->img;
	const struct img_member *m = rd->k < l->count ? &img->m[l->first + rd->k] : NULL;

	if (!m || m->size != size || (m->name && strcmp(m->name, name))) {
		snprintf(why, n,
			 "layer %s changed between the listing and the read: its member %zu is "
			 "'%.200s' of %" PRIu64 " bytes",
			 l->digest, rd->k, name, size);
		return -ESTALE;
	}
	rd->k++;
	if (m->live)
		*dst = rd->u->blob + rd->u->s->l.f[m->file].offset;
	return 0;
}

static void *unpack_thread(void *arg)
{
	struct unpack *u = arg;
	struct src_remote *rm = u->s->rem;
	struct src_rconn *c = src_rconn_new();
	char why[512];
	size_t i;
	int err = c ? 0 : nomem(why, sizeof(why));

	while (!err && (i = atomic_fetch_add(&u->next, 1)) < rm->img->nl) {
		struct reader rd = { .u = u, .l = &rm->img->l[i] };

		pthread_mutex_lock(&u->lock);
		err = u->err;
		pthread_mutex_unlock(&u->lock);
		if (err)
			return NULL;
		if (!rd.l->live)
			continue;
		err = pass(rm, &c->c, rd.l, read_member, &rd, NULL, why, sizeof(why));
		if (!err && rd.k != rd.l->count) {
			snprintf(why, sizeof(why),
				 "layer %s changed between the listing and the read: %zu members, "
				 "%zu listed",
				 rd.l->digest, rd.k, rd.l->count);
			err = -ESTALE;
		}
		if (!err)
			atomic_fetch_add(&rm->checksums, 1);
	}
	if (err) {
		pthread_mutex_lock(&u->lock);
		if (!u->err) {
			u->err = err;
			snprintf(u->why, sizeof(u->why), "%s", why);
		}
		pthread_mutex_unlock(&u->lock);
	}
	src_rconn_free(c);
	return NULL;
}

int src_unpack(struct pfs_source *s, uint8_t *blob, char *why, size_t n)
{
	struct oci_image *img = s->rem ? s->rem->img : NULL;
	struct unpack u = { .s = s, .blob = blob };
	pthread_t tid[PFS_SOURCE_THREADS_MAX];
	int nt = 0;

	if (!img)
		return 0;
	/* Each member's file, by name in the sorted listing. */
	for (size_t i = 0; i < img->nm; i++) {
		struct img_member *m = &img->m[i];
		const char *name = m->live ? m->name + strlen(path_of(s->rem)) : NULL;
		struct src_file key = { .name = (char *)name }, *hit;

		if (!name)
			continue;
		hit = bsearch(&key, s->l.f, s->l.n, sizeof(key), src_by_name);
		if (!hit || !hit->unpacked) {
			snprintf(why, n, "'%.200s' is not in the listing", name);
			return -EIO;
		}
		m->file = (size_t)(hit - s->l.f);
	}
	pthread_mutex_init(&u.lock, NULL);
	for (; nt < s->o.threads && (size_t)nt < img->nl; nt++)
		if (pthread_create(&tid[nt], NULL, unpack_thread, &u)) {
			pthread_mutex_lock(&u.lock);
			u.err = u.err ? u.err : -EAGAIN;
			snprintf(u.why, sizeof(u.why), "cannot start a thread");
			pthread_mutex_unlock(&u.lock);
			break;
		}
	for (int i = 0; i < nt; i++)
		pthread_join(tid[i], NULL);
	pthread_mutex_destroy(&u.lock);
	if (u.err)
		snprintf(why, n, "%s", u.why);
	return u.err;
}
