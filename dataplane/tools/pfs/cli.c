// SPDX-License-Identifier: Apache-2.0
/* Helpers shared by the `pfs` subcommands; single-threaded, run at start-up. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "pfs/log.h"

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
	static const struct { const char *suf; double mul; } sufs[] = {
		{ "", 1 }, { "b", 1 },
		{ "k", 1024.0 }, { "kib", 1024.0 }, { "kb", 1e3 },
		{ "m", 1048576.0 }, { "mib", 1048576.0 }, { "mb", 1e6 },
		{ "g", 1073741824.0 }, { "gib", 1073741824.0 }, { "gb", 1e9 },
		{ "t", 1099511627776.0 }, { "tib", 1099511627776.0 }, { "tb", 1e12 },
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

void pfs_cli_blob_init(struct pfs_cli_blob *b)
{
	memset(b, 0, sizeof(*b));
	b->opts.sz = sizeof(b->opts);
	b->opts.size = 1ULL << 30;
	b->opts.page = PFS_PAGE_2M;
	b->opts.fill = PFS_FILL_SEED;
	b->opts.seed = 1;
	b->opts.numa_node = -1;
}

int pfs_cli_blob_opt(struct pfs_cli_blob *b, const char *name, const char *val)
{
	uint64_t v;

	if (!strcmp(name, "size")) {
		if (pfs_parse_size(val, &b->opts.size) || !b->opts.size)
			goto bad;
	} else if (!strcmp(name, "seed")) {
		if (pfs_parse_u64(val, &b->opts.seed))
			goto bad;
	} else if (!strcmp(name, "page")) {
		if (pfs_page_kind_parse(val, &b->opts.page))
			goto bad;
	} else if (!strcmp(name, "no-fallback")) {
		b->opts.no_fallback = true;
	} else if (!strcmp(name, "fill")) {
		if (!strcmp(val, "seed"))
			b->opts.fill = PFS_FILL_SEED;
		else if (!strcmp(val, "zero"))
			b->opts.fill = PFS_FILL_ZERO;
		else if (!strcmp(val, "none"))
			b->opts.fill = PFS_FILL_NONE;
		else
			goto bad;
	} else if (!strcmp(name, "numa")) {
		if (pfs_parse_u64(val, &v) || v > 1023)
			goto bad;
		b->opts.numa_node = (int)v;
	} else if (!strcmp(name, "setup-threads")) {
		if (pfs_parse_u64(val, &v) || !v || v > 4)
			goto bad;
		b->opts.setup_threads = (int)v;
	} else if (!strcmp(name, "mlock")) {
		b->opts.mlock = true;
	} else if (!strcmp(name, "blob-name")) {
		b->open_name = val;
	} else if (!strcmp(name, "blob-dir")) {
		b->open_dir = val;
	} else {
		return 0;
	}
	return 1;
bad:
	fprintf(stderr, "pfs: invalid --%s '%s'\n", name, val);
	return -1;
}

struct pfs_blob *pfs_cli_blob_get(const struct pfs_cli_blob *b, char *why, size_t n)
{
	struct pfs_blob *blob;
	int e;

	if (b->open_name) {
		blob = pfs_blob__open(b->open_dir, b->open_name);
		e = errno;
		if (!blob) {
			snprintf(why, n, "cannot open blob '%s'%s%s: %s", b->open_name,
				 b->open_dir ? " in " : "", b->open_dir ? b->open_dir : "",
				 pfs_blob_last_error()[0] ? pfs_blob_last_error() : strerror(e));
			pfs_err("%s", why);
		}
		errno = e;
		return blob;
	}
	blob = pfs_blob__create(&b->opts);
	e = errno;
	if (!blob) {
		snprintf(why, n, "cannot create a %" PRIu64 "-byte blob: %s", b->opts.size,
			 pfs_blob_last_error()[0] ? pfs_blob_last_error() : strerror(e));
		if (e == ENOMEM && b->opts.no_fallback)
			pfs_err("hugepages missing: reserve them (sysctl vm.nr_hugepages, or the "
				"pod's hugepages-2Mi/1Gi resources) or drop --no-fallback");
	}
	errno = e;
	return blob;
}

void pfs_cli_blob_json(struct pfs_json *j, const struct pfs_blob *blob, uint64_t fp)
{
	const struct pfs_blob_timings *t = pfs_blob__timings(blob);

	pfs_json_obj(j, "blob");
	pfs_json_u64(j, "size", pfs_blob__size(blob));
	pfs_json_str(j, "page", pfs_page_kind_str(pfs_blob__page_kind(blob)), 8);
	pfs_json_u64(j, "huge_bytes", pfs_blob__huge_bytes(blob));
	pfs_json_hex(j, "fingerprint", fp, 16);
	pfs_json_str(j, "path", pfs_blob__path(blob), 256);
	pfs_json_str(j, "fallback_reason", pfs_blob__fallback_reason(blob), 700);
	pfs_json_num(j, "map_s", t->map_s, 4);
	pfs_json_num(j, "prefault_s", t->prefault_s, 4);
	pfs_json_num(j, "fill_s", t->fill_s, 4);
	pfs_json_u64(j, "setup_threads", t->setup_threads);
	pfs_json_close(j);
}

bool pfs_cli_check_args;
