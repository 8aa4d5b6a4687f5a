// SPDX-License-Identifier: Apache-2.0
/*
 * The file layout a replication client receives (blob_repl_wire.h,
 * struct repl_layout_list): LAYOUT frames the decoder accepted, appended
 * in order into one list with the checks that span frames (the same count,
 * no gap or repeat of an index, names ascending and extents not
 * overlapping across a frame boundary). Memory grows with the entries that
 * arrived, never with the count a frame announces, so a peer cannot make
 * us allocate what it did not send, and the names stop at what a manifest
 * can hold. One owner, no threads; fuzzed with the
 * frame codec (fuzz/fuzz_repl.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "wire/blob_repl_wire.h"

/* Room for @more entries after l->got. 0 or -ENOMEM. */
static int grow(struct repl_layout_list *l, uint32_t more)
{
	uint32_t want = l->got + more, cap = l->cap ? l->cap : 64;
	struct repl_layout_ent *e;

	if (want <= l->cap)
		return 0;
	while (cap < want)
		cap *= 2;
	e = realloc(l->ent, (size_t)cap * sizeof(*e));
	if (!e)
		return -ENOMEM;
	l->ent = e;
	l->cap = cap;
	return 0;
}

int repl_layout_list_add(struct repl_layout_list *l, const struct repl_layout_frame *f)
{
	const uint8_t *pos = f->ents;
	struct repl_layout_wire_ent w;
	int err;

	if (l->done)
		return -EPROTO; /* a frame after the list was complete */
	if (f->none) {
		if (l->started)
			return -EPROTO;
		l->started = l->none = l->done = true;
		return 1;
	}
	if (l->started ? f->count != l->count || f->first != l->got : f->first != 0)
		return -EPROTO;
	l->count = f->count;
	l->started = true;
	err = grow(l, f->n);
	if (err)
		return err;
	for (uint16_t i = 0; i < f->n && repl_layout_next(f, &pos, &w); i++) {
		const struct repl_layout_ent *prev = l->got ? &l->ent[l->got - 1] : NULL;
		char *name;

		/* Within a frame the decoder checked both; the first entry of a
		 * frame against the previous frame's last is ours. */
		if (i == 0 && prev) {
			size_t pl = strlen(prev->name);
			int c = memcmp(prev->name, w.name, pl < w.name_len ? pl : w.name_len);

			if (c > 0 || (!c && pl >= w.name_len))
				return -EBADMSG;
			if (w.offset < l->end)
				return -ERANGE;
		}
		l->name_bytes += w.name_len;
		if (l->name_bytes > REPL_LAYOUT_NAMES_MAX)
			return -E2BIG; /* no manifest lists that much */
		name = strndup(w.name, w.name_len);
		if (!name)
			return -ENOMEM;
		l->ent[l->got].name = name;
		l->ent[l->got].offset = w.offset;
		l->ent[l->got].length = w.length;
		l->got++;
		l->end = w.offset + w.length;
	}
	if (!f->last)
		return 0;
	if (f->tail_off < l->end)
		return -ERANGE;
	l->tail_off = f->tail_off;
	l->done = true;
	return 1;
}

struct repl_layout repl_layout_list_get(const struct repl_layout_list *l)
{
	struct repl_layout r = { .n = l->got, .ent = l->ent, .tail_off = l->tail_off };

	return r;
}

void repl_layout_list_fini(struct repl_layout_list *l)
{
	for (uint32_t i = 0; i < l->got; i++)
		free((void *)l->ent[i].name);
	free(l->ent);
	memset(l, 0, sizeof(*l));
}

bool repl_layout_equal(const struct repl_layout *a, const struct repl_layout *b)
{
	if (a->n != b->n || a->tail_off != b->tail_off)
		return false;
	for (uint32_t i = 0; i < a->n; i++)
		if (a->ent[i].offset != b->ent[i].offset || a->ent[i].length != b->ent[i].length ||
		    strcmp(a->ent[i].name, b->ent[i].name))
			return false;
	return true;
}
