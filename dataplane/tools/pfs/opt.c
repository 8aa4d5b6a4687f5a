// SPDX-License-Identifier: Apache-2.0
/*
 * The option-table engine of the pfs subcommands (opt.h): builds the
 * getopt_long table from the command's tables, stores each argument into
 * the field its entry names, and prints --help from the same tables.
 * Single-threaded, at start-up; the only state is getopt's own, reset on
 * every call so a command may parse more than once (the tests do).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "opt.h"
#include "pfs/log.h"

#define MAX_OPTS 128 /* entries over all groups of one command */
#define HELP_COL 24 /* --help: where the descriptions start */
#define HELP_WIDTH 80 /* --help: descriptions are wrapped before this column */
#define KEY_BASE 0x100 /* getopt values: KEY_BASE + index into the flat list */

int pfs_parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 0);
	return errno || *end ? -EINVAL : 0;
}

int pfs_parse_size(const char *s, uint64_t *out)
{
	static const struct {
		const char *suf;
		double mul;
	} sufs[] = {
		{ "", 1 },
		{ "b", 1 },
		{ "k", 1024.0 },
		{ "kib", 1024.0 },
		{ "ki", 1024.0 }, /* Kubernetes quantities */
		{ "kb", 1e3 },
		{ "m", 1048576.0 },
		{ "mib", 1048576.0 },
		{ "mi", 1048576.0 }, /* Kubernetes quantities */
		{ "mb", 1e6 },
		{ "g", 1073741824.0 },
		{ "gib", 1073741824.0 },
		{ "gi", 1073741824.0 }, /* Kubernetes quantities */
		{ "gb", 1e9 },
		{ "t", 1099511627776.0 },
		{ "tib", 1099511627776.0 },
		{ "ti", 1099511627776.0 }, /* Kubernetes quantities */
		{ "tb", 1e12 },
	};
	char *end;
	double v;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(sufs) / sizeof(sufs[0]); i++) {
		if (!strcasecmp(end, sufs[i].suf)) {
			double b = v * sufs[i].mul;

			if (b > 1.8e19 || b != floor(b))
				return -EINVAL;
			*out = (uint64_t)b;
			return 0;
		}
	}
	return -EINVAL;
}

#define MAX_SECS 86400 /* SECS and MSEC without a max: a day */

/* The largest value @o takes: its max, else what its field holds. */
static uint64_t field_max(const struct pfs_opt *o)
{
	if (o->max)
		return o->max;
	if (o->type == PFS_OPT_SECS || o->type == PFS_OPT_MSEC)
		return MAX_SECS;
	return o->size >= 8 ? UINT64_MAX : (1ULL << (8 * o->size)) - 1;
}

static void store_uint(void *f, size_t size, uint64_t v)
{
	switch (size) {
	case 1:
		*(uint8_t *)f = (uint8_t)v;
		break;
	case 2:
		*(uint16_t *)f = (uint16_t)v;
		break;
	case 4:
		*(uint32_t *)f = (uint32_t)v;
		break;
	default:
		*(uint64_t *)f = v;
		break;
	}
}

static int parse_secs(const char *s, double *out)
{
	char *end;

	if (!s || !*s)
		return -EINVAL;
	*out = strtod(s, &end);
	return *end || !(*out >= 0) ? -EINVAL : 0;
}

static int parse_range(const char *s, struct pfs_opt_range *r)
{
	const char *colon = strchr(s, ':');
	char off[64];

	if (!colon || (size_t)(colon - s) >= sizeof(off))
		return -EINVAL;
	memcpy(off, s, colon - s);
	off[colon - s] = '\0';
	return pfs_parse_size(off, &r->off) || pfs_parse_size(colon + 1, &r->len) ? -EINVAL : 0;
}

/* Store @arg into the field of @o; 0, -EINVAL (bad or out of range), or
 * -ECANCELED (the entry's parser reported it). */
static int store(const struct pfs_opt *o, void *base, const char *arg)
{
	void *f = (char *)base + o->off;
	bool nonzero = o->flags & PFS_OPT_NONZERO;
	uint64_t v;
	double d;

	switch (o->type) {
	case PFS_OPT_FLAG:
		*(bool *)f = true;
		return 0;
	case PFS_OPT_STR:
		if (nonzero && !*arg)
			return -EINVAL;
		*(const char **)f = arg;
		return 0;
	case PFS_OPT_U64:
	case PFS_OPT_SIZE:
		if ((o->type == PFS_OPT_U64 ? pfs_parse_u64(arg, &v) : pfs_parse_size(arg, &v)) ||
		    v < o->min || v > field_max(o) || (nonzero && !v) ||
		    ((o->flags & PFS_OPT_POW2) && (v & (v - 1))))
			return -EINVAL;
		store_uint(f, o->size, v);
		return 0;
	case PFS_OPT_SECS:
	case PFS_OPT_MSEC:
		if (parse_secs(arg, &d) || d < (double)o->min || d > (double)field_max(o) ||
		    (nonzero && !(d > 0)))
			return -EINVAL;
		if (o->type == PFS_OPT_SECS) {
			*(double *)f = d;
		} else {
			*(int *)f = (int)(d * 1000);
			if (nonzero && !*(int *)f)
				return -EINVAL;
		}
		return 0;
	case PFS_OPT_RANGE:
		if (parse_range(arg, f) || (nonzero && !((struct pfs_opt_range *)f)->len))
			return -EINVAL;
		return 0;
	case PFS_OPT_CHOICE:
		for (const struct pfs_opt_choice *ch = o->choices; ch->name; ch++)
			if (!strcmp(arg, ch->name)) {
				*(int *)f = ch->value;
				return 0;
			}
		return -EINVAL;
	case PFS_OPT_FN:
		return o->parse(arg, f);
	default:
		return -EINVAL;
	}
}

int pfs_opt_fail(const struct pfs_cmdline *c, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pfs_err("%s: %s", c->cmd, msg);
	return -EINVAL;
}

static int invalid(const struct pfs_cmdline *c, const struct pfs_opt *o, const char *arg)
{
	bool secs = o->type == PFS_OPT_SECS || o->type == PFS_OPT_MSEC;
	char range[96] = "";

	if (o->max || secs)
		snprintf(range, sizeof(range), " (%s%llu..%llu%s)",
			 o->flags & PFS_OPT_POW2 ? "a power of two, " : "",
			 (unsigned long long)o->min, (unsigned long long)field_max(o),
			 secs ? " seconds" : "");
	else if (o->min)
		snprintf(range, sizeof(range), " (>= %llu)", (unsigned long long)o->min);
	if (range[0] && (o->type == PFS_OPT_U64 || o->type == PFS_OPT_SIZE || secs))
		return pfs_opt_fail(c, "invalid --%s '%s'%s", o->name, arg, range);
	return pfs_opt_fail(c, "invalid --%s '%s' (see pfs %s --help)", o->name, arg, c->cmd);
}

/* One flat list of the entries over all groups: getopt's table and, for
 * each of its indexes, the group and entry it stands for. */
struct flat {
	struct option lo[MAX_OPTS + 2];
	unsigned char g[MAX_OPTS], i[MAX_OPTS];
	int n;
};

static int flatten(const struct pfs_cmdline *c, struct flat *fl)
{
	fl->n = 0;
	for (int g = 0; g < PFS_OPT_GROUPS && c->group[g].opts; g++) {
		for (int i = 0; c->group[g].opts[i].type != PFS_OPT_END; i++) {
			const struct pfs_opt *o = &c->group[g].opts[i];

			if (o->type == PFS_OPT_HEAD)
				continue;
			if (fl->n >= MAX_OPTS || i >= 64)
				return pfs_opt_fail(c, "option table too large");
			fl->lo[fl->n] =
				(struct option){ o->name, o->arg ? required_argument : no_argument,
						 NULL, KEY_BASE + fl->n };
			fl->g[fl->n] = (unsigned char)g;
			fl->i[fl->n] = (unsigned char)i;
			fl->n++;
		}
	}
	fl->lo[fl->n] = (struct option){ "help", no_argument, NULL, 'h' };
	fl->lo[fl->n + 1] = (struct option){ 0 };
	return 0;
}

static int check_required(const struct pfs_cmdline *c)
{
	for (int g = 0; g < PFS_OPT_GROUPS && c->group[g].opts; g++)
		for (int i = 0; c->group[g].opts[i].type != PFS_OPT_END; i++) {
			const struct pfs_opt *o = &c->group[g].opts[i];

			if ((o->flags & PFS_OPT_REQUIRED) && !pfs_opt_given(c, o->name))
				return pfs_opt_fail(c, "--%s is required (see pfs %s --help)",
						    o->name, c->cmd);
		}
	return 0;
}

int pfs_opt_parse(struct pfs_cmdline *c, int argc, char **argv)
{
	struct flat fl;
	int key, err;

	memset(c->seen, 0, sizeof(c->seen));
	if (flatten(c, &fl))
		return -EINVAL;
	optind = 0; /* a full reset: callable more than once */
	opterr = 0;
	while ((key = getopt_long(argc, argv, "h", fl.lo, NULL)) != -1) {
		const struct pfs_opt *o;
		int k = key - KEY_BASE;

		if (key == 'h') {
			pfs_opt_usage(c, stdout);
			return PFS_OPT_HELP;
		}
		if (k < 0 || k >= fl.n)
			return pfs_opt_fail(c,
					    "unknown or incomplete option '%s' (see pfs %s --help)",
					    argv[optind - 1], c->cmd);
		o = &c->group[fl.g[k]].opts[fl.i[k]];
		err = store(o, c->group[fl.g[k]].base, optarg);
		if (err == -ECANCELED)
			return -EINVAL;
		if (err)
			return invalid(c, o, optarg);
		c->seen[fl.g[k]] |= 1ULL << fl.i[k];
	}
	if (optind < argc)
		return pfs_opt_fail(c, "unexpected argument '%s'", argv[optind]);
	return check_required(c);
}

bool pfs_opt_given(const struct pfs_cmdline *c, const char *name)
{
	for (int g = 0; g < PFS_OPT_GROUPS && c->group[g].opts; g++) {
		const struct pfs_opt *t = c->group[g].opts, *want = NULL;

		for (int i = 0; t[i].type != PFS_OPT_END && !want; i++)
			if (t[i].type != PFS_OPT_HEAD && !strcmp(t[i].name, name))
				want = &t[i];
		if (!want)
			continue;
		for (int i = 0; t[i].type != PFS_OPT_END && i < 64; i++)
			if ((c->seen[g] & (1ULL << i)) && t[i].type != PFS_OPT_HEAD &&
			    t[i].off == want->off && t[i].size == want->size)
				return true;
		return false;
	}
	return false;
}

/* "  --name ARG" then the help, word-wrapped into the column from HELP_COL
 * to HELP_WIDTH ("\n" in the help breaks a line too). */
static void print_opt(FILE *f, const struct pfs_opt *o)
{
	const char *h = o->help ? o->help : "";
	int n = fprintf(f, "  --%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");

	if (n > HELP_COL - 2) {
		fputc('\n', f);
		n = 0;
	}
	do {
		int len = (int)strcspn(h, "\n");

		if (len > HELP_WIDTH - HELP_COL) {
			len = HELP_WIDTH - HELP_COL;
			while (len > 0 && h[len] != ' ')
				len--;
			if (!len)
				len = (int)strcspn(h, " \n");
		}
		fprintf(f, "%*s%.*s\n", HELP_COL - n, "", len, h);
		h += len;
		h += *h == ' ' || *h == '\n';
		n = 0;
	} while (*h);
}

void pfs_opt_usage(const struct pfs_cmdline *c, FILE *f)
{
	fputs(c->usage, f);
	for (int g = 0; g < PFS_OPT_GROUPS && c->group[g].opts; g++)
		for (int i = 0; c->group[g].opts[i].type != PFS_OPT_END; i++) {
			const struct pfs_opt *o = &c->group[g].opts[i];

			if (o->type == PFS_OPT_HEAD)
				fprintf(f, "%s\n", o->name);
			else
				print_opt(f, o);
		}
	if (c->footer)
		fputs(c->footer, f);
}
