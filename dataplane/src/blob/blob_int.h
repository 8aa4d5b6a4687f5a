/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to src/blob/: the blob object, shared by the flat mappings
 * (blob.c) and the files layout (blob_files.c), and the helpers both use. */
#ifndef PFS_BLOB_INT_H
#define PFS_BLOB_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "pfs/blob.h"
#include "pfs/blob_files.h"

struct pfs_blob {
	uint8_t *data;
	uint64_t size;
	enum pfs_page_kind kind;
	int fd;
	char *path;
	uint64_t huge_bytes;
	struct pfs_blob_timings t;
	char reason[768];
	bool view; /* pfs_blob__view: the memory is the caller's */
	/* Files layout only (layout != NULL): the layout, an O_RDONLY fd of
	 * N.d, and the progress file's fd (-1 until first written). A flat
	 * blob leaves them zero and never reads them. */
	struct pfs_blob_layout *layout;
	int dir_fd;
	int progress_fd;
};

/* A blob name: not empty, shorter than 200 bytes, no '/', not "." or "..". */
bool blob_name_ok(const char *name);

/* Sum of the kernel's huge-page accounting (smaps) over [p, p + len). */
uint64_t blob_smaps_huge_bytes(const void *p, uint64_t len);

/* Release what a files-layout blob holds beyond the mapping (layout, fds). */
void blob_files_release(struct pfs_blob *b);

#endif /* PFS_BLOB_INT_H */
