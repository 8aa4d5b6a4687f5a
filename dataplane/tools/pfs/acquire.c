// SPDX-License-Identifier: Apache-2.0
/*
 * Acquiring a blob (acquire.h): the blob options of every command that
 * takes a blob (blob create, send, recv, bench, pcore), one table so every
 * command spells them the same way, and the function that turns them into a
 * blob (create, or open a named one); the consumer options
 * --blob-socket/--blob-token-file and the function that takes the blob from
 * its holder (`pfs blob serve`) instead; and the "blob" member of a result.
 * Single-threaded, at start-up; the returned blob belongs to the caller.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/statfs.h>

#include "acquire.h"
#include "pfs/blob_manifest.h"
#include "pfs/log.h"

/* statfs f_type of hugetlbfs (linux/magic.h). */
#define PFS_HUGETLBFS_MAGIC 0x958458f6U

static int parse_page(const char *arg, void *field)
{
	return pfs_page_kind_parse(arg, field);
}

static const struct pfs_opt_choice fills[] = {
	{ "seed", PFS_FILL_SEED },
	{ "zero", PFS_FILL_ZERO },
	{ "none", PFS_FILL_NONE },
	{ 0 },
};

#define AT(f) PFS_OPT_AT(struct pfs_cli_blob, f)
const struct pfs_opt pfs_cli_blob_opts[] = {
	PFS_OPT_HEADING("\nBlob (offset/arithmetic need the same blob on both ends):"),
	{ "size", PFS_OPT_SIZE, AT(opts.size), "N",
	  "blob size (default 1G), rounded up to 2 MiB; sizes take K/M/G/T "
	  "and KiB..TiB (binary), KB/MB/GB/TB (decimal), fractions (1.5G)",
	  .min = 1 },
	{ "blob-size", PFS_OPT_SIZE, AT(opts.size), "N", "alias of --size, removed after v0.2",
	  .min = 1 },
	{ "seed", PFS_OPT_U64, AT(opts.seed), "N", "fill seed (default 1)" },
	{ "page", PFS_OPT_FN, AT(opts.page), "KIND",
	  "4k | thp | 2m | 1g (default 2m); falls back 1g>2m>thp>4k", .parse = parse_page },
	{ "no-fallback", PFS_OPT_FLAG, AT(opts.no_fallback), NULL,
	  "fail instead of falling back to smaller pages" },
	{ "fill", PFS_OPT_CHOICE, AT(opts.fill), "KIND", "seed | zero | none (default seed)",
	  .choices = fills },
	{ "numa", PFS_OPT_U64, AT(opts.numa_node), "NODE", "bind the blob to a NUMA node",
	  .max = 1023 },
	{ "mlock", PFS_OPT_FLAG, AT(opts.mlock), NULL,
	  "lock the blob in RAM (CAP_IPC_LOCK or RLIMIT_MEMLOCK)" },
	{ "setup-threads", PFS_OPT_U64, AT(opts.setup_threads), "N",
	  "threads for prefault + fill (default 1, max 4)", .min = 1, .max = 4 },
	{ "blob-name", PFS_OPT_STR, AT(open_name), "NAME",
	  "open an existing named blob instead of creating one" },
	{ "blob-dir", PFS_OPT_STR, AT(open_dir), "DIR",
	  "its directory (default: search /dev/hugepages, /dev/shm)" },
	{ 0 },
};
#undef AT

#define AT(f) PFS_OPT_AT(struct pfs_cli_share, f)
const struct pfs_opt pfs_cli_share_opts[] = {
	PFS_OPT_HEADING("\nBlob from a holder (`pfs blob serve`) instead of a blob of one's own:"),
	{ "blob-socket", PFS_OPT_STR, AT(socket), "PATH", "the holder's Unix socket",
	  .flags = PFS_OPT_NONZERO },
	{ "blob-token-file", PFS_OPT_STR, AT(token_file), "PATH",
	  "file holding the token (the blob's Secret)", .flags = PFS_OPT_NONZERO },
	{ 0 },
};
#undef AT

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

const char *pfs_cli_files_dir(const struct pfs_cli_blob *b)
{
	return b->opts.dir ? b->opts.dir : "/dev/shm";
}

struct pfs_blob *pfs_cli_blob_create_files(const struct pfs_cli_blob *b,
					   const struct pfs_blob_layout *l, char *why, size_t n)
{
	const char *dir = pfs_cli_files_dir(b);
	struct pfs_blob *blob;
	struct statfs sfs;
	char r[600];
	int err;

	if (!statfs(dir, &sfs) && (uint32_t)sfs.f_type == PFS_HUGETLBFS_MAGIC) {
		snprintf(why, n,
			 "--layout files: %s is hugetlbfs, which rounds every file's size up to "
			 "its page size (a model file must keep its exact length): give --dir a "
			 "tmpfs (huge=within_size for transparent huge pages)",
			 dir);
		pfs_err("%s", why);
		errno = EINVAL;
		return NULL;
	}
	err = pfs_blob__create_files(dir, b->opts.name, l, 0, &blob, r, sizeof(r));
	if (err) {
		snprintf(why, n, "cannot create the files-layout blob '%s' in %s: %s", b->opts.name,
			 dir, r);
		pfs_err("%s", why);
		errno = -err;
		return NULL;
	}
	pfs_info("blob: %s/%s.d: %u files, %" PRIu64 " bytes, tail at %" PRIu64, dir, b->opts.name,
		 l->n, l->size, l->tail_off);
	return blob;
}

struct pfs_blob *pfs_cli_blob_open_named(const char *dir, const char *name, char *why, size_t n)
{
	const char *fdir = dir ? dir : "/dev/shm";
	struct pfs_blob *blob;
	char r[600];
	int err;

	if (pfs_blob_files_exists(fdir, name)) {
		err = pfs_blob__open_files(fdir, name, true, &blob, r, sizeof(r));
		if (err) {
			snprintf(why, n, "cannot open the files-layout blob %s/%s.d: %s", fdir,
				 name, r);
			errno = -err;
			return NULL;
		}
		return blob;
	}
	blob = pfs_blob__open(dir, name);
	if (!blob) {
		err = errno;
		snprintf(why, n, "cannot open blob '%s'%s%s: %s", name, dir ? " in " : "",
			 dir ? dir : "",
			 pfs_blob_last_error()[0] ? pfs_blob_last_error() : strerror(err));
		errno = err;
	}
	return blob;
}

void pfs_cli_files_measure(struct pfs_blob *blob, struct pfs_blob_files_pages *pg)
{
	int err = pfs_blob_files_measure(blob, pg);

	if (err)
		pfs_warn("blob: cannot measure the page kind of its files: %s (reported as %s)",
			 strerror(-err), pfs_page_kind_str(pfs_blob__page_kind(blob)));
	else
		pfs_info("blob: %" PRIu64 " of %" PRIu64 " files on transparent huge pages, "
			 "%" PRIu64 " of %" PRIu64 " bytes",
			 pg->huge_files, pg->files, pg->huge_bytes, pg->bytes);
}

struct pfs_blob *pfs_cli_blob_get(const struct pfs_cli_blob *b, char *why, size_t n)
{
	struct pfs_blob *blob;
	int e;

	if (b->open_name) {
		blob = pfs_cli_blob_open_named(b->open_dir, b->open_name, why, n);
		e = errno;
		if (!blob)
			pfs_err("%s", why);
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
	if (pfs_blob__layout(blob))
		pfs_json_str(j, "layout", "files", 8);
	pfs_json_close(j);
}

void pfs_cli_share_reason(const char *path, const struct pfs_share_meta *m, int e, char *buf,
			  size_t n)
{
	if (m->msg[0])
		snprintf(buf, n, "blob holder %s refused: %s", path, m->msg);
	else
		snprintf(buf, n, "blob from holder %s: %s", path,
			 e == EIO    ? "fingerprint differs from the holder's record (blob "
				       "modified since the holder started)" :
			 e == EINVAL ? "size differs from the holder's record" :
			 e == EACCES ? "permission denied on the socket (mode/group)" :
				       strerror(e));
}

struct pfs_blob *pfs_cli_share_get(const struct pfs_cli_share *s, char *why, size_t n)
{
	char tok[PFS_SHARE_TOKEN_MAX + 1], buf[320];
	struct pfs_share_meta m = { 0 };
	struct pfs_share_client_opts o = { .sz = sizeof(o), .meta = &m };
	struct pfs_blob *b;
	int tl, e;

	if (!s->socket || !s->token_file) {
		snprintf(buf, sizeof(buf), "--blob-socket and --blob-token-file go together");
		pfs_err("%s", buf);
		e = EINVAL;
		goto out_fail;
	}
	tl = pfs_share_token_read(s->token_file, tok, sizeof(tok));
	if (tl < 0) {
		snprintf(buf, sizeof(buf), "--blob-token-file %s: %s", s->token_file,
			 pfs_share_token_strerror(tl));
		pfs_err("%s", buf);
		e = -tl;
		goto out_fail;
	}
	b = pfs_blob__from_socket(s->socket, tok, &o);
	e = errno;
	memset(tok, 0, sizeof(tok));
	if (b)
		return b;
	/* pfs_blob__from_socket logged the details; one line for the result. */
	pfs_cli_share_reason(s->socket, &m, e, buf, sizeof(buf));
out_fail:
	if (why && n)
		snprintf(why, n, "%s", buf);
	errno = e;
	return NULL;
}

struct pfs_blob *pfs_cli_blob_acquire(const struct pfs_cli_blob *b, const struct pfs_cli_share *s,
				      char *why, size_t n)
{
	return pfs_cli_share_set(s) ? pfs_cli_share_get(s, why, n) : pfs_cli_blob_get(b, why, n);
}
