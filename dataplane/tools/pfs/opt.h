/* SPDX-License-Identifier: Apache-2.0 */
/* Option tables of the pfs subcommands, after xdp-tools' params: a command
 * describes each option once, in a table of struct pfs_opt (name, type,
 * the field it sets, bounds, help), and that table drives both the parser
 * (getopt_long) and `--help`, so the help cannot drift from what the parser
 * accepts. Sizes, integers and seconds are parsed and range-checked here,
 * with one message format for every command. */
#ifndef PFS_TOOL_OPT_H
#define PFS_TOOL_OPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum pfs_opt_type {
	PFS_OPT_END = 0, /* ends a table ({ 0 }) */
	PFS_OPT_HEAD, /* no option: a heading line of --help (the name is its text) */
	PFS_OPT_FLAG, /* no argument; the bool field becomes true */
	PFS_OPT_STR, /* the const char * field points at the argument */
	PFS_OPT_U64, /* an integer (decimal, 0x hex, 0 octal), pfs_parse_u64 */
	PFS_OPT_SIZE, /* a size with units, pfs_parse_size */
	PFS_OPT_SECS, /* seconds, fractions allowed, into a double */
	PFS_OPT_MSEC, /* seconds on the command line, int milliseconds in the field */
	PFS_OPT_RANGE, /* "OFF:LEN", two sizes, into a struct pfs_opt_range */
	PFS_OPT_CHOICE, /* one of .choices by name, its value into an int (enum) field */
	PFS_OPT_FN, /* .parse(argument, field): 0, -EINVAL, or -ECANCELED (reported) */
};

/* Flags of an entry. */
#define PFS_OPT_REQUIRED 0x1 /* the command fails without it */
#define PFS_OPT_NONZERO 0x2 /* numbers > 0, strings not empty, ranges' LEN > 0 */
#define PFS_OPT_POW2 0x4 /* U64, SIZE: a power of two */

/* A name and the value it stands for (PFS_OPT_CHOICE; { NULL } ends). */
struct pfs_opt_choice {
	const char *name;
	int value;
};

/* A part of the blob: --range OFF:LEN. */
struct pfs_opt_range {
	uint64_t off, len;
};

struct pfs_opt {
	const char *name; /* long option without the dashes */
	enum pfs_opt_type type;
	size_t off; /* the field it sets: offsetof() in the group's struct, */
	size_t size; /* and its sizeof() (integers: 1, 2, 4 or 8 bytes) */
	const char *arg; /* the argument's name in --help ("N", "PATH"); NULL: none */
	const char *help; /* "\n" continues on the next line, aligned */
	uint64_t min, max; /* U64, SIZE, SECS, MSEC: inclusive; max 0: the field's */
	unsigned int flags; /* PFS_OPT_REQUIRED, PFS_OPT_NONZERO, PFS_OPT_POW2 */
	int (*parse)(const char *arg, void *field); /* PFS_OPT_FN */
	const struct pfs_opt_choice *choices; /* PFS_OPT_CHOICE */
};

/* A heading (or any text) between the options in --help. */
#define PFS_OPT_HEADING(text)                        \
	{                                            \
		.name = (text), .type = PFS_OPT_HEAD \
	}

/* The field of an entry: PFS_OPT_AT(struct xfer_args, sched.align). */
#define PFS_OPT_AT(type, field) .off = offsetof(type, field), .size = sizeof(((type *)0)->field)

#define PFS_OPT_GROUPS 8

/* One command line: up to PFS_OPT_GROUPS tables, each over its own struct
 * (the command's own options, the shared blob options, ...). */
struct pfs_cmdline {
	const char *cmd; /* "send", "pcore run": messages say "pfs: error: send: ..." */
	const char *usage; /* --help: what comes before the options */
	const char *footer; /* --help: what comes after them, or NULL */
	struct {
		const struct pfs_opt *opts;
		void *base; /* the struct the entries' offsets point into */
	} group[PFS_OPT_GROUPS];
	uint64_t seen[PFS_OPT_GROUPS]; /* set by pfs_opt_parse: entries given */
};

#define PFS_OPT_HELP 1

/* pfs_opt_parse - parse @argv[1..@argc) (argv[0]: the command word) into
 * the groups' structs. Returns 0, PFS_OPT_HELP after printing --help to
 * stdout, or -EINVAL after printing why to stderr (unknown option, bad or
 * out-of-range value, missing required option, stray argument). */
int pfs_opt_parse(struct pfs_cmdline *c, int argc, char **argv);

/* pfs_opt_usage - the --help text: usage, every table, footer. */
void pfs_opt_usage(const struct pfs_cmdline *c, FILE *f);

/* pfs_opt_given - was option @name (or an alias: an entry of the same
 * group that sets the same field) on the command line? */
bool pfs_opt_given(const struct pfs_cmdline *c, const char *name);

/* pfs_opt_fail - print "pfs: error: CMD: ..." and return -EINVAL, for the
 * checks a command makes after parsing. */
int pfs_opt_fail(const struct pfs_cmdline *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The value parsers the tables use, for the commands' own checks too.
 * pfs_parse_size: "4096", "64K", "1G", "2GiB", "1.5M" (K/M/G/T,
 * Ki/Mi/Gi/Ti and KiB/MiB/GiB/TiB binary, fractions allowed), "1GB" (KB/MB/GB/TB decimal);
 * the result must be a whole number of bytes. pfs_parse_u64: an integer as
 * strtoull(base 0) reads it, nothing after it. 0 or -EINVAL. */
int pfs_parse_size(const char *s, uint64_t *out);
int pfs_parse_u64(const char *s, uint64_t *out);

#endif /* PFS_TOOL_OPT_H */
