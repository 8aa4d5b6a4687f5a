// SPDX-License-Identifier: Apache-2.0
/*
 * The delta encoder: one target range in, one delta gram out.
 *
 * The range is cut into content-defined chunks. A chunk whose bytes are in
 * the base at the same offset, or anywhere the index knows (verified with
 * memcmp, so a hash collision costs time, never correctness), becomes a
 * COPY; adjacent COPYs merge. The rest gathers into literal regions of at
 * most REGION bytes, each coded the way a sample of it compresses best:
 * XOR with the base at the same offset (only where the base has bytes
 * there) or the bytes themselves, each after a byte-plane split for 1-,
 * 2- or 4-byte elements, then zstd; RAW when zstd does not make it
 * smaller. Sampling 32 KiB six ways at level 1 costs ~20% of coding a
 * region: cheaper than coding the region six ways, and it tracks a file
 * whose element type changes (a checkpoint's fp32 and bf16 tensors).
 *
 * The gram is assembled in place: the payload is written after room for
 * the largest table, and the header and table are then moved right before
 * it, so no payload byte is copied twice.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "delta_int.h"
#include "pfs/integrity.h"

#define REGION (1u << 20)
#define SAMPLE (32u << 10)
#define SAMPLE_MIN (16u << 10)
/* A ZREF region's window: the base around where its bytes probably are
 * (its own offset moved by the last COPY's shift), this far either side. */
#define ZREF_MARGIN (512u << 10)
#define ZREF_MIN (4u << 10)
/* A zstd error code (ZSTD_isError): "not coded, send it raw". */
#define NOT_CODED ((size_t)-1)

struct choice {
	uint8_t kind, elem;
};

struct pfs_delta_enc {
	const struct pfs_delta_index *idx;
	const uint8_t *base;
	uint64_t base_size;
	int level;
	ZSTD_CCtx *zc;
	struct pfs_delta_op *ops;
	uint32_t nops, max_ops;
	uint8_t *buf; /* [reserve for header+table][payload] */
	size_t buf_cap, reserve, fill; /* fill: payload bytes so far */
	uint8_t *scratch; /* REGION: a transformed region */
	uint8_t *alt; /* REGION: a second coding of a region, to compare */
	uint8_t *sample_out; /* ZSTD_compressBound(SAMPLE) */
	struct choice last;
	int zc_level; /* the level e->zc is set to */
	int64_t shift; /* src - dst of the last COPY: where nearby bytes moved to */
};

/* zstd at @level into @dst, with a content checksum in every frame (4
 * bytes): a corrupt frame fails where it is applied, not only at the
 * final SHA-256. The compressed size, or a zstd error code. */
static size_t zc(struct pfs_delta_enc *e, void *dst, size_t cap, const void *src, size_t n,
		 int level)
{
	size_t z;

	if (e->zc_level != level) {
		ZSTD_CCtx_setParameter(e->zc, ZSTD_c_compressionLevel, level);
		e->zc_level = level;
	}
	z = ZSTD_compress2(e->zc, dst, cap, src, n);
	/* A failed frame (its output did not fit: "send it raw") leaves the
	 * context mid-frame, where it takes no parameter and no prefix. */
	if (ZSTD_isError(z))
		ZSTD_CCtx_reset(e->zc, ZSTD_reset_session_only);
	return z;
}

struct pfs_delta_enc *pfs_delta_enc__new(const struct pfs_delta_index *idx, const uint8_t *base,
					 uint64_t base_size, int level)
{
	struct pfs_delta_enc *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->idx = idx;
	e->base = base;
	e->base_size = base ? base_size : 0;
	e->level = level ? level : 3;
	e->zc = ZSTD_createCCtx();
	if (e->zc)
		ZSTD_CCtx_setParameter(e->zc, ZSTD_c_checksumFlag, 1);
	e->scratch = malloc(REGION);
	e->alt = malloc(REGION);
	e->sample_out = malloc(ZSTD_compressBound(SAMPLE));
	e->last = (struct choice){ PFS_DELTA_ZSTD, 1 };
	if (!e->zc || !e->scratch || !e->alt || !e->sample_out) {
		pfs_delta_enc__free(e);
		errno = ENOMEM;
		return NULL;
	}
	return e;
}

void pfs_delta_enc__free(struct pfs_delta_enc *e)
{
	if (!e)
		return;
	ZSTD_freeCCtx(e->zc);
	free(e->ops);
	free(e->buf);
	free(e->scratch);
	free(e->alt);
	free(e->sample_out);
	free(e);
}

/* Room for a gram of @len target bytes. 0 or -ENOMEM. */
static int enc_reserve(struct pfs_delta_enc *e, uint32_t len)
{
	uint32_t max_ops = len / CDC_MIN + len / REGION + 8;
	size_t reserve = PFS_DELTA_HDR_LEN + (size_t)max_ops * PFS_DELTA_OP_ENC_MAX;
	size_t cap = reserve + len;

	if (max_ops > e->max_ops) {
		struct pfs_delta_op *ops = realloc(e->ops, max_ops * sizeof(*ops));

		if (!ops)
			return -ENOMEM;
		e->ops = ops;
		e->max_ops = max_ops;
	}
	if (cap > e->buf_cap) {
		uint8_t *b = realloc(e->buf, cap);

		if (!b)
			return -ENOMEM;
		e->buf = b;
		e->buf_cap = cap;
	}
	e->reserve = reserve;
	e->fill = 0;
	e->nops = 0;
	return 0;
}

static void push(struct pfs_delta_enc *e, struct pfs_delta_op op, struct pfs_delta_stats *st)
{
	e->ops[e->nops++] = op;
	st->n[op.kind]++;
	st->bytes[op.kind] += op.len;
	st->wire[op.kind] += op.clen;
}

/* COPY target[dst, dst+len) from base[src...], merged into the previous
 * COPY when it continues it, cut at PFS_DELTA_OP_MAX. */
static void push_copy(struct pfs_delta_enc *e, uint64_t dst, uint64_t src, uint64_t len,
		      struct pfs_delta_stats *st)
{
	while (len) {
		struct pfs_delta_op *p = e->nops ? &e->ops[e->nops - 1] : NULL;
		uint32_t take;

		if (p && p->kind == PFS_DELTA_COPY && p->dst + p->len == dst &&
		    p->src + p->len == src && p->len < PFS_DELTA_OP_MAX) {
			take = PFS_DELTA_OP_MAX - p->len < len ? PFS_DELTA_OP_MAX - p->len :
								 (uint32_t)len;
			p->len += take;
			st->bytes[PFS_DELTA_COPY] += take;
		} else {
			take = len < PFS_DELTA_OP_MAX ? (uint32_t)len : PFS_DELTA_OP_MAX;
			push(e,
			     (struct pfs_delta_op){ .dst = dst,
						    .src = src,
						    .len = take,
						    .kind = PFS_DELTA_COPY,
						    .elem = 1 },
			     st);
			st->moved_n += src != dst;
		}
		if (src != dst)
			st->moved_bytes += take;
		e->shift = (int64_t)(src - dst);
		dst += take;
		src += take;
		len -= take;
	}
}

/* How many leading bytes of @a and @b are equal, up to @max. */
static uint64_t common_prefix(const uint8_t *a, const uint8_t *b, uint64_t max)
{
	uint64_t i = 0;

	for (; i + 8 <= max; i += 8) {
		uint64_t x, y;

		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		if (x != y)
			return i + (uint64_t)__builtin_ctzll(x ^ y) / 8;
	}
	while (i < max && a[i] == b[i])
		i++;
	return i;
}

/* How many bytes before @a and @b are equal, up to @max. */
static uint64_t common_suffix(const uint8_t *a, const uint8_t *b, uint64_t max)
{
	uint64_t i = 0;

	while (i < max && a[-1 - (int64_t)i] == b[-1 - (int64_t)i])
		i++;
	return i;
}

/* The bytes @c makes of target[off, off+n) in e->scratch (or the target
 * itself when there is nothing to transform). */
static const uint8_t *transform(struct pfs_delta_enc *e, struct choice c, const uint8_t *t,
				uint64_t off, size_t n)
{
	const uint8_t *x = c.kind == PFS_DELTA_XOR ? e->base + off : NULL;

	if (!x && c.elem == 1)
		return t + off;
	pfs_plane_split(t + off, x, n, c.elem, e->scratch);
	return e->scratch;
}

/* The coding a sample of the region compresses best with, at level 1. */
static struct choice choose(struct pfs_delta_enc *e, const uint8_t *t, uint64_t off, size_t n,
			    bool xor_ok)
{
	static const uint8_t elems[] = { 1, 2, 4 };
	struct choice best = e->last;
	size_t best_len = SIZE_MAX, plain = SIZE_MAX, cap = ZSTD_compressBound(SAMPLE);

	if (!xor_ok && best.kind == PFS_DELTA_XOR)
		best.kind = PFS_DELTA_ZSTD;
	if (n < SAMPLE_MIN)
		return best;
	n = n < SAMPLE ? n & ~(size_t)3 : SAMPLE;
	for (int k = xor_ok ? 0 : 1; k < 2; k++) {
		for (int i = 0; i < 3; i++) {
			struct choice c = { k ? PFS_DELTA_ZSTD : PFS_DELTA_XOR, elems[i] };
			const uint8_t *src = transform(e, c, t, off, n);
			size_t z = zc(e, e->sample_out, cap, src, n, 1);

			if (ZSTD_isError(z))
				continue;
			if (k && i == 0)
				plain = z;
			if (z < best_len) {
				best_len = z;
				best = c;
			}
		}
	}
	/* The bytes as they are, unless a split gains 3%: only unsplit bytes
	 * can go as ZREF, which matches them against the base too. */
	if (best.kind == PFS_DELTA_ZSTD && best.elem > 1 && best_len * 103 / 100 >= plain)
		best.elem = 1;
	return best;
}

/* zstd of target[off, off+n) with the base window around where these
 * bytes probably sit as the frame's prefix, so matches at any byte offset
 * into the old version are found (what chunking misses when every chunk
 * holds a changed byte, as in a tarball whose headers name the release).
 * The compressed size (< n) or a zstd error code; the window in @op. */
static size_t code_zref(struct pfs_delta_enc *e, uint8_t *dst, const uint8_t *t, uint64_t off,
			size_t n, struct pfs_delta_op *op)
{
	int64_t at = (int64_t)off + e->shift;
	uint64_t lo = at > (int64_t)ZREF_MARGIN ? (uint64_t)at - ZREF_MARGIN : 0;
	uint64_t hi = at + (int64_t)(n + ZREF_MARGIN) > 0 ? (uint64_t)at + n + ZREF_MARGIN : 0;
	int wlog = 10;
	size_t z;

	if (hi > e->base_size)
		hi = e->base_size;
	if (lo >= hi)
		return NOT_CODED;
	if (hi - lo > PFS_DELTA_ZREF_WINDOW_MAX)
		hi = lo + PFS_DELTA_ZREF_WINDOW_MAX;
	while (wlog < 27 && (1ULL << wlog) < hi - lo + n)
		wlog++;
	ZSTD_CCtx_setParameter(e->zc, ZSTD_c_windowLog, wlog);
	z = ZSTD_CCtx_refPrefix(e->zc, e->base + lo, hi - lo);
	if (!ZSTD_isError(z))
		z = zc(e, dst, n - 1, t + off, n, e->level);
	ZSTD_CCtx_setParameter(e->zc, ZSTD_c_windowLog, 0);
	op->src = lo;
	op->wlen = (uint32_t)(hi - lo);
	return z;
}

/* One coding of target[off, off+n) as @c into @dst (ZSTD of unsplit
 * bytes goes as ZREF when there is a base); the size or NOT_CODED. */
static size_t code_as(struct pfs_delta_enc *e, struct choice c, uint8_t *dst, const uint8_t *t,
		      uint64_t off, size_t n, struct pfs_delta_op *op)
{
	*op = (struct pfs_delta_op){
		.dst = off, .len = (uint32_t)n, .kind = c.kind, .elem = c.elem
	};
	if (n < 2)
		return NOT_CODED;
	if (c.kind == PFS_DELTA_ZSTD && c.elem == 1 && e->base_size && n >= ZREF_MIN) {
		op->kind = PFS_DELTA_ZREF;
		return code_zref(e, dst, t, off, n, op);
	}
	/* Anything not smaller than the bytes goes raw. */
	return zc(e, dst, n - 1, transform(e, c, t, off, n), n, e->level);
}

/* One literal region, all of it inside or all of it past the base. */
static void code_region(struct pfs_delta_enc *e, const uint8_t *t, uint64_t off, size_t n,
			struct pfs_delta_stats *st)
{
	bool xor_ok = off + n <= e->base_size;
	struct choice c = choose(e, t, off, n, xor_ok);
	uint8_t *dst = e->buf + e->reserve + e->fill;
	struct pfs_delta_op op, alt;
	size_t z = code_as(e, c, dst, t, off, n, &op), za;

	e->last = c;
	/* The sample is the region's first 32 KiB; when the rest is unlike it
	 * (bytes that moved start further on) the coding comes out poor: then
	 * the base window is tried too, and the smaller kept. */
	if (op.kind != PFS_DELTA_ZREF && e->base_size && n >= ZREF_MIN &&
	    (ZSTD_isError(z) || z > n - n / 8)) {
		za = code_as(e, (struct choice){ PFS_DELTA_ZSTD, 1 }, e->alt, t, off, n, &alt);
		if (!ZSTD_isError(za) && (ZSTD_isError(z) || za < z)) {
			memcpy(dst, e->alt, za);
			z = za;
			op = alt;
		}
	}
	if (ZSTD_isError(z)) {
		memcpy(dst, t + off, n);
		z = n;
		op = (struct pfs_delta_op){
			.dst = off, .len = (uint32_t)n, .kind = PFS_DELTA_RAW, .elem = 1
		};
	}
	op.clen = (uint32_t)z;
	e->fill += z;
	push(e, op, st);
}

/* Literal target[from, to): regions of at most REGION bytes, cut at the
 * end of the base so each is either XOR-able or not. */
static void code_literal(struct pfs_delta_enc *e, const uint8_t *t, uint64_t from, uint64_t to,
			 struct pfs_delta_stats *st)
{
	while (from < to) {
		uint64_t end = to - from > REGION ? from + REGION : to;

		if (from < e->base_size && end > e->base_size)
			end = e->base_size;
		code_region(e, t, from, end - from, st);
		from = end;
	}
}

/* Where the base holds target[pos, pos+n): the same offset first, else
 * the index; UINT64_MAX when nowhere. */
static uint64_t find_match(const struct pfs_delta_enc *e, const uint8_t *t, uint64_t pos, size_t n)
{
	uint64_t src;

	if (pos + n <= e->base_size && !memcmp(t + pos, e->base + pos, n))
		return pos;
	if (!e->idx)
		return UINT64_MAX;
	src = pfs_delta_index__find(e->idx, pfs_crc32c(0, t + pos, n), (uint32_t)n);
	if (src != UINT64_MAX && !memcmp(t + pos, e->base + src, n))
		return src;
	return UINT64_MAX;
}

ssize_t pfs_delta_enc__gram(struct pfs_delta_enc *e, uint64_t seq, const uint8_t *target,
			    uint64_t off, uint32_t len, const uint8_t **out,
			    struct pfs_delta_stats *st)
{
	uint64_t end = off + len, lit = UINT64_MAX;
	ssize_t hl;

	if (!len || len > PFS_DELTA_GRAM_MAX_TARGET)
		return -EINVAL;
	if (enc_reserve(e, len))
		return -ENOMEM;
	if (end <= e->base_size && !memcmp(target + off, e->base + off, len)) {
		/* Unchanged: one COPY per PFS_DELTA_OP_MAX, no chunking. */
		push_copy(e, off, off, len, st);
	} else {
		/* Chunk boundaries run on over the whole range, whatever
		 * matched, exactly as over the base: a boundary depends on the
		 * one before it, so restarting the chunker where a match ended
		 * would cut the rest of the range out of step with the base
		 * and find nothing that moved. */
		for (uint64_t pos = off, covered = off; pos < end;) {
			size_t n = pfs_cdc_cut(target + pos, end - pos);
			uint64_t next = pos + n, src = UINT64_MAX, lo, k, m;

			if (next <= covered) { /* inside a match grown past it */
				pos = next;
				continue;
			}
			if (pos >= covered)
				src = find_match(e, target, pos, n);
			if (src == UINT64_MAX) {
				if (lit == UINT64_MAX)
					lit = pos > covered ? pos : covered;
				pos = next;
				if (pos - lit >= REGION) {
					code_literal(e, target, lit, pos, st);
					lit = UINT64_MAX;
				}
				continue;
			}
			/* Chunks match whole; grow the match byte by byte into
			 * the literal bytes before it and past its end, so an
			 * edit costs its own bytes, not the chunks around it. */
			lo = lit != UINT64_MAX ? lit : pos;
			k = common_suffix(target + pos, e->base + src,
					  pos - lo < src ? pos - lo : src);
			m = n + common_prefix(target + next, e->base + src + n,
					      end - next < e->base_size - src - n ?
						      end - next :
						      e->base_size - src - n);
			if (lit != UINT64_MAX && pos - k > lit)
				code_literal(e, target, lit, pos - k, st);
			lit = UINT64_MAX;
			push_copy(e, pos - k, src - k, k + m, st);
			covered = pos + m;
			pos = next;
		}
		if (lit != UINT64_MAX)
			code_literal(e, target, lit, end, st);
	}
	/* Header and table: encoded at the start of the room reserved for
	 * them, then moved up against the payload. */
	hl = pfs_delta_gram_encode(seq, e->ops, e->nops, e->buf, e->reserve);
	if (hl > 0) {
		memmove(e->buf + e->reserve - hl, e->buf, (size_t)hl);
		*out = e->buf + e->reserve - hl;
	}
	return hl < 0 ? hl : hl + (ssize_t)e->fill;
}
