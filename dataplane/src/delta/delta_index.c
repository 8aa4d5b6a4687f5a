// SPDX-License-Identifier: Apache-2.0
/*
 * The base index: every content-defined chunk of the base, keyed by its
 * CRC32C and length, in an open-addressing table (first occurrence kept).
 * Built by up to 8 threads, each chunking its own slice of the base from
 * the slice's start (boundaries resynchronise a chunk or two after a
 * seam), then inserted by the caller's thread: inserting 130 k entries
 * takes a few ms, chunking a GiB about a second of one core.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "delta_int.h"
#include "pfs/blob.h"
#include "pfs/integrity.h"

#define MASK_S (((1ULL << 15) - 1) << 49) /* 15 bits before AVG */
#define MASK_L (((1ULL << 11) - 1) << 53) /* 11 bits after */

static uint64_t gear[256];
static pthread_once_t gear_once = PTHREAD_ONCE_INIT;

/* splitmix64 from a fixed seed: the same table on every host and build,
 * so both ends (and a cached index) cut the same chunks. */
static void gear_init(void)
{
	uint64_t s = 0x5046534443444331ULL; /* "PFSDCDC1" */

	for (int i = 0; i < 256; i++) {
		uint64_t z = (s += 0x9e3779b97f4a7c15ULL);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
		gear[i] = z ^ (z >> 31);
	}
}

size_t pfs_cdc_cut(const uint8_t *p, size_t n)
{
	size_t i = CDC_MIN, normal = CDC_AVG, max = n < CDC_MAX ? n : CDC_MAX;
	uint64_t fp = 0;

	if (n <= CDC_MIN)
		return n;
	pthread_once(&gear_once, gear_init);
	if (normal > max)
		normal = max;
	for (; i < normal; i++) {
		fp = (fp << 1) + gear[p[i]];
		if (!(fp & MASK_S))
			return i + 1;
	}
	for (; i < max; i++) {
		fp = (fp << 1) + gear[p[i]];
		if (!(fp & MASK_L))
			return i + 1;
	}
	return max;
}

struct slot {
	uint64_t off; /* UINT64_MAX: empty */
	uint32_t crc, len;
};

struct pfs_delta_index {
	struct slot *tab;
	uint64_t mask; /* table size - 1 */
	uint64_t chunks;
};

struct chunk {
	uint64_t off;
	uint32_t crc, len;
};

struct slice {
	const uint8_t *base;
	uint64_t from, to;
	struct chunk *c;
	size_t n, cap;
	int err;
};

static void *slice_run(void *arg)
{
	struct slice *s = arg;

	for (uint64_t pos = s->from; pos < s->to;) {
		size_t len = pfs_cdc_cut(s->base + pos, s->to - pos);

		if (s->n == s->cap) {
			size_t cap = s->cap ? s->cap * 2 : 1024;
			struct chunk *c = realloc(s->c, cap * sizeof(*c));

			if (!c) {
				s->err = -ENOMEM;
				return NULL;
			}
			s->c = c;
			s->cap = cap;
		}
		s->c[s->n++] =
			(struct chunk){ pos, pfs_crc32c(0, s->base + pos, len), (uint32_t)len };
		pos += len;
	}
	return NULL;
}

static inline uint64_t slot_hash(uint32_t crc, uint32_t len)
{
	return ((uint64_t)crc * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)len * 0xc2b2ae3d27d4eb4fULL);
}

static void insert(struct pfs_delta_index *x, const struct chunk *c)
{
	for (uint64_t h = slot_hash(c->crc, c->len) & x->mask;; h = (h + 1) & x->mask) {
		struct slot *s = &x->tab[h];

		if (s->off == UINT64_MAX) {
			*s = (struct slot){ c->off, c->crc, c->len };
			x->chunks++;
			return;
		}
		if (s->crc == c->crc && s->len == c->len)
			return; /* keep the first occurrence */
	}
}

uint64_t pfs_delta_index__find(const struct pfs_delta_index *x, uint32_t crc, uint32_t len)
{
	for (uint64_t h = slot_hash(crc, len) & x->mask;; h = (h + 1) & x->mask) {
		const struct slot *s = &x->tab[h];

		if (s->off == UINT64_MAX)
			return UINT64_MAX;
		if (s->crc == crc && s->len == len)
			return s->off;
	}
}

struct pfs_delta_index *pfs_delta_index__build(const uint8_t *base, uint64_t size, int threads)
{
	struct pfs_delta_index *x = calloc(1, sizeof(*x));
	struct slice sl[8] = { 0 };
	pthread_t th[8];
	bool started[8] = { false };
	uint64_t total = 0, cap = 16;
	int nt = threads < 1 ? 1 : threads > 8 ? 8 : threads, err = 0;

	if (!x)
		return NULL;
	if (size < 64ULL * CDC_MAX)
		nt = 1;
	for (int t = 0; t < nt; t++) {
		sl[t] = (struct slice){ .base = base,
					.from = size * t / nt,
					.to = size * (t + 1) / nt };
		if (t && !pthread_create(&th[t], NULL, slice_run, &sl[t]))
			started[t] = true;
		else if (t)
			slice_run(&sl[t]);
	}
	slice_run(&sl[0]);
	for (int t = 0; t < nt; t++) {
		if (started[t])
			pthread_join(th[t], NULL);
		err = err ? err : sl[t].err;
		total += sl[t].n;
	}
	while (cap < 2 * total)
		cap *= 2;
	x->tab = err ? NULL : malloc(cap * sizeof(*x->tab));
	if (x->tab) {
		x->mask = cap - 1;
		for (uint64_t i = 0; i < cap; i++)
			x->tab[i].off = UINT64_MAX;
		for (int t = 0; t < nt; t++)
			for (size_t i = 0; i < sl[t].n; i++)
				insert(x, &sl[t].c[i]);
	}
	for (int t = 0; t < nt; t++)
		free(sl[t].c);
	if (!x->tab) {
		free(x);
		errno = ENOMEM;
		return NULL;
	}
	return x;
}

void pfs_delta_index__free(struct pfs_delta_index *x)
{
	if (!x)
		return;
	free(x->tab);
	free(x);
}

uint64_t pfs_delta_index__chunks(const struct pfs_delta_index *x)
{
	return x ? x->chunks : 0;
}

uint64_t pfs_delta_base_fp(const uint8_t *base, uint64_t size)
{
	return base && size ? pfs_fingerprint_mem(base, size) : 0;
}
