// SPDX-License-Identifier: Apache-2.0
/*
 * The layout of a files-layout blob as a value (pfs/blob_files.h): the v1
 * check (packed: no gap, no overlap; names relative and sorted), deep
 * copy, equality. Pure functions over the caller's memory, no I/O, so the
 * manifest fuzzer links them alone.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfs/blob_files.h"
#include "pfs/log.h"

#define PG 4096ULL
#define NAME_MAX_BYTES 4095

static uint64_t pg_up(uint64_t v)
{
	return (v + PG - 1) & ~(PG - 1);
}

/* A layout name: relative, no empty, "." or ".." component, no NUL (C
 * string), at most NAME_MAX_BYTES bytes. */
static const char *name_problem(const char *name)
{
	size_t len = strlen(name);
	const char *c = name;

	if (!len)
		return "is empty";
	if (len > NAME_MAX_BYTES)
		return "is longer than 4095 bytes";
	if (name[0] == '/')
		return "is absolute";
	while (*c) {
		size_t l = strcspn(c, "/");

		if (!l || (l == 1 && c[0] == '.') || (l == 2 && c[0] == '.' && c[1] == '.'))
			return "has an empty, '.' or '..' component";
		c += l;
		if (*c)
			c++;
		if (!*c && c[-1] == '/')
			return "ends with '/'";
	}
	return NULL;
}

int pfs_blob_layout_check(const struct pfs_blob_layout *l, char *why, size_t n)
{
	uint64_t at = 0;

	if (!l)
		return pfs_why(why, n, EINVAL, "no layout");
	if (!l->size || l->size % PG || l->size > (1ULL << 46))
		return pfs_why(why, n, EINVAL,
			       "layout size %" PRIu64 " is not a positive multiple of 4096 "
			       "(at most 64 TiB)",
			       l->size);
	if (l->n && !l->ent)
		return pfs_why(why, n, EINVAL, "layout has %u entries and no table", l->n);
	for (uint32_t i = 0; i < l->n; i++) {
		const struct pfs_blob_layout_ent *e = &l->ent[i];
		const char *p;

		if (!e->name)
			return pfs_why(why, n, EINVAL, "layout entry %u has no name", i);
		p = name_problem(e->name);
		if (p)
			return pfs_why(why, n, EINVAL, "layout entry %u '%.200s' %s", i, e->name,
				       p);
		if (i && strcmp(l->ent[i - 1].name, e->name) >= 0)
			return pfs_why(
				why, n, EINVAL,
				"layout entry %u '%.200s' is not after '%.200s' in name order "
				"(names must be unique and sorted bytewise)",
				i, e->name, l->ent[i - 1].name);
		if (e->offset != at)
			return pfs_why(why, n, EINVAL,
				       "layout entry %u '%.200s' starts at %" PRIu64 ", the packed "
				       "layout puts it at %" PRIu64 " (%s): layout v1 has neither "
				       "gaps nor overlaps",
				       i, e->name, e->offset, at,
				       e->offset > at ? "a gap" : "an overlap");
		if (e->length > l->size - at)
			return pfs_why(why, n, EINVAL,
				       "layout entry %u '%.200s' (%" PRIu64 " bytes at %" PRIu64
				       ") runs past the blob size %" PRIu64,
				       i, e->name, e->length, e->offset, l->size);
		at = pg_up(at + e->length);
	}
	if (l->tail_off != at)
		return pfs_why(why, n, EINVAL,
			       "layout tail at %" PRIu64 ", the packed layout puts it at %" PRIu64
			       " (%s after the last file)",
			       l->tail_off, at, l->tail_off > at ? "a gap" : "an overlap");
	if (l->tail_off >= l->size || l->size - l->tail_off < 64)
		return pfs_why(why, n, EINVAL,
			       "layout tail at %" PRIu64 " leaves %" PRIu64 " bytes of a %" PRIu64
			       "-byte blob: the manifest and its 64-byte footer need more",
			       l->tail_off, l->size - l->tail_off, l->size);
	return 0;
}

int pfs_blob_layout_dup(const struct pfs_blob_layout *l, struct pfs_blob_layout **out)
{
	size_t names = 0, at;
	struct pfs_blob_layout *c;
	char *pool;

	for (uint32_t i = 0; i < l->n; i++)
		names += strlen(l->ent[i].name) + 1;
	/* One block: the struct, the table, the names. */
	c = malloc(sizeof(*c) + (size_t)l->n * sizeof(*c->ent) + names);
	if (!c)
		return -ENOMEM;
	*c = *l;
	c->ent = (struct pfs_blob_layout_ent *)(c + 1);
	pool = (char *)(c->ent + l->n);
	at = 0;
	for (uint32_t i = 0; i < l->n; i++) {
		size_t len = strlen(l->ent[i].name) + 1;

		memcpy(pool + at, l->ent[i].name, len);
		c->ent[i] = l->ent[i];
		c->ent[i].name = pool + at;
		at += len;
	}
	*out = c;
	return 0;
}

void pfs_blob_layout_free(struct pfs_blob_layout *l)
{
	free(l);
}

bool pfs_blob_layout_equal(const struct pfs_blob_layout *a, const struct pfs_blob_layout *b)
{
	if (a->n != b->n || a->tail_off != b->tail_off || a->size != b->size)
		return false;
	for (uint32_t i = 0; i < a->n; i++)
		if (a->ent[i].offset != b->ent[i].offset || a->ent[i].length != b->ent[i].length ||
		    strcmp(a->ent[i].name, b->ent[i].name))
			return false;
	return true;
}
