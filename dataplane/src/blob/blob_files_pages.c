// SPDX-License-Identifier: Apache-2.0
/*
 * The page kind each file of a files-layout blob really got
 * (pfs_blob_files_measure, pfs/blob_files.h).
 *
 * The region cannot tell: a file that starts at an offset that is not a
 * multiple of 2 MiB is mapped there with 4 KiB entries even when its page
 * cache holds huge pages. So every file of at least 2 MiB (a smaller one
 * can never be mapped with a PMD) is mapped once more, alone, read-only, at
 * a 2 MiB aligned address of one probe reservation, populated with
 * MADV_POPULATE_READ (the file is full: nothing is allocated, only mapped),
 * and /proc/self/smaps is read once: ShmemPmdMapped (tmpfs) + FilePmdMapped
 * (other file systems) of each probe mapping are the file's bytes on huge
 * pages. Then the probe is unmapped. Single-threaded, once per load.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <fcntl.h>

#include "blob/blob_int.h"
#include "pfs/log.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#define SZ_2M (2ULL << 20)
#define PG 4096ULL

static uint64_t up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* PMD-mapped kB of each VMA of smaps that starts inside [lo, hi), added to
 * the slot of the file the VMA belongs to (@start/@nf: slot start
 * addresses, ascending). */
static int read_pmd(uintptr_t lo, uintptr_t hi, const uintptr_t *start, uint32_t nf, uint64_t *kb)
{
	char line[512];
	FILE *f = fopen("/proc/self/smaps", "r");
	int slot = -1;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, e;

		if (sscanf(line, "%lx-%lx ", &a, &e) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			slot = -1;
			if (a >= lo && a < hi)
				for (uint32_t i = nf; i-- > 0;)
					if (a >= start[i]) {
						slot = (int)i;
						break;
					}
			continue;
		}
		if (slot < 0)
			continue;
		if (!strncmp(line, "ShmemPmdMapped:", 15))
			kb[slot] += strtoull(line + 15, NULL, 10);
		else if (!strncmp(line, "FilePmdMapped:", 14))
			kb[slot] += strtoull(line + 14, NULL, 10);
	}
	fclose(f);
	return 0;
}

int pfs_blob_files_measure(struct pfs_blob *b, struct pfs_blob_files_pages *out)
{
	const struct pfs_blob_layout *l = b->layout;
	uintptr_t *start = NULL;
	uint32_t *which = NULL, nf = 0;
	uint64_t *kb = NULL, span = 0;
	uint8_t *probe = MAP_FAILED;
	char rel[4200];
	int err = 0;

	memset(out, 0, sizeof(*out));
	if (!l)
		return -EINVAL;
	for (uint32_t i = 0; i < l->n; i++) {
		if (!l->ent[i].length)
			continue;
		out->files++;
		out->bytes += up(l->ent[i].length, PG);
		if (l->ent[i].length >= SZ_2M)
			span += up(l->ent[i].length, SZ_2M);
	}
	if (!span)
		goto out_set;
	start = calloc(l->n, sizeof(*start));
	which = calloc(l->n, sizeof(*which));
	kb = calloc(l->n, sizeof(*kb));
	probe = mmap(NULL, span + SZ_2M, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
		     0);
	if (!start || !which || !kb || probe == MAP_FAILED) {
		err = -ENOMEM;
		goto out_free;
	}
	{
		uintptr_t at = ((uintptr_t)probe + SZ_2M - 1) & ~(uintptr_t)(SZ_2M - 1);

		for (uint32_t i = 0; i < l->n; i++) {
			uint64_t len = l->ent[i].length;
			void *p;
			int fd;

			if (len < SZ_2M)
				continue;
			snprintf(rel, sizeof(rel), "%s/%s", PFS_BLOB_FILES_DIR, l->ent[i].name);
			fd = openat(b->dir_fd, rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0) {
				err = -errno;
				goto out_free;
			}
			p = mmap((void *)at, up(len, PG), PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0);
			close(fd);
			if (p == MAP_FAILED) {
				err = -errno;
				goto out_free;
			}
			/* EINVAL: no MADV_POPULATE_READ (< 5.14); smaps then counts
			 * only what was touched before. */
			madvise(p, up(len, PG), MADV_POPULATE_READ);
			start[nf] = at;
			which[nf++] = i;
			at += up(len, SZ_2M);
		}
		err = read_pmd((uintptr_t)probe, (uintptr_t)probe + span + SZ_2M, start, nf, kb);
	}
	for (uint32_t k = 0; k < nf && !err; k++) {
		if (!kb[k])
			continue;
		out->huge_files++;
		out->huge_bytes += kb[k] * 1024;
		pfs_debug("blob: files/%s: %" PRIu64 " of %" PRIu64 " bytes on huge pages",
			  l->ent[which[k]].name, kb[k] * 1024, l->ent[which[k]].length);
	}
out_free:
	if (probe != MAP_FAILED)
		munmap(probe, span + SZ_2M);
	free(start);
	free(which);
	free(kb);
	if (err)
		return err;
out_set:
	b->huge_bytes = out->huge_bytes;
	b->kind = out->huge_bytes ? PFS_PAGE_THP : PFS_PAGE_4K;
	return 0;
}
