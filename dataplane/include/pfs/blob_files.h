/* SPDX-License-Identifier: Apache-2.0 */
/* The files layout of a blob (`pfs blob create --layout files`): the blob's
 * bytes are held as one regular file per manifest entry plus one tail file,
 * and the one contiguous region every transport, relay, pcore and
 * fingerprint uses is built by mapping those files back to back. Nothing is
 * copied: the pages of each file ARE the blob's pages, so a reader that maps
 * D/N.d/files/<name> (safetensors, an inference server) and the holder share
 * them (docs/design/blob-layout.md, "The files layout").
 *
 * On disk, in directory D for blob N:
 *   D/N.d/files/<name>  one file per entry, exact length, mode 0444;
 *                       its directories 0555; nothing else in files/
 *   D/N.d/tail          bytes [tail_off, size): manifest JSON, zeros,
 *                       footer (blob_manifest.h); size - tail_off bytes
 *   D/N.d/progress      optional: one line of JSON while the holder fills
 *                       (pfs_blob_files_progress)
 *
 * The region: `size` bytes reserved PROT_NONE, then each file mapped
 * MAP_SHARED|MAP_FIXED at its offset with length roundup(length, 4096)
 * (zero-length files map nothing), and the tail at tail_off. Layout v1
 * packs the files: entry i starts at the first multiple of 4096 after the
 * end of entry i-1 (0 for the first), and tail_off is the first multiple
 * of 4096 after the last; a layout with a gap or an overlap is refused.
 *
 * This header is the memory layer (src/blob/): it maps a layout it is
 * given. Opening an existing N.d needs its manifest parsed from the tail,
 * which is the manifest layer's: pfs_blob__open_files and
 * pfs_blob__open_files_at are declared in pfs/blob_manifest.h. */
#ifndef PFS_BLOB_FILES_H
#define PFS_BLOB_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pfs/blob.h"

#define PFS_BLOB_FILES_SUFFIX ".d" /* D/N.d */
#define PFS_BLOB_FILES_DIR "files"
#define PFS_BLOB_FILES_TAIL "tail"
#define PFS_BLOB_FILES_PROGRESS "progress"
#define PFS_BLOB_FILES_ALIGN 4096ULL /* = PFS_MANIFEST_ALIGN */

/* One file of the layout: its manifest name (UTF-8, relative, no "", "."
 * or ".." component), where it lies in the blob and its exact length. */
struct pfs_blob_layout_ent {
	const char *name;
	uint64_t offset;
	uint64_t length;
};

/* The list known before the bytes: entries in manifest (name) order,
 * tail_off = the manifest offset, size = the blob size (a multiple of
 * 4096; size - tail_off holds the manifest, zeros and the footer). */
struct pfs_blob_layout {
	uint32_t n;
	struct pfs_blob_layout_ent *ent;
	uint64_t tail_off;
	uint64_t size;
};

/* Flags of pfs_blob__create_files. */
enum {
	/* Fault every page of the region in (MADV_POPULATE_WRITE) before
	 * returning, so the memory is charged to the creator now and the
	 * loader never takes a fault; off: pages arrive as they are written. */
	PFS_BLOB_FILES_PREFAULT = 1u << 0,
};

/* pfs_blob_layout_check - 0 when @l is a packed v1 layout (see above) with
 * valid names, else -EINVAL with the first problem in @why (size @n), e.g.
 * "layout entry 3 'b.bin' starts at 12288, the packed layout puts it at
 * 8192 (a gap)". Also refused: size not a multiple of 4096, tail_off not
 * below size, a name with an empty, "." or ".." component, a leading '/',
 * or two entries with the same name. */
int pfs_blob_layout_check(const struct pfs_blob_layout *l, char *why, size_t n);

/* pfs_blob_layout_dup - a deep copy (names included) in *@out, freed with
 * pfs_blob_layout_free. 0 or -ENOMEM. */
int pfs_blob_layout_dup(const struct pfs_blob_layout *l, struct pfs_blob_layout **out);
void pfs_blob_layout_free(struct pfs_blob_layout *l);

/* pfs_blob_layout_equal - same entries (names, offsets, lengths), tail
 * offset and size. For a relay resuming from another upstream. */
bool pfs_blob_layout_equal(const struct pfs_blob_layout *a, const struct pfs_blob_layout *b);

/* pfs_blob__create_files - create @dir/@name.d with files/, one file per
 * entry of @layout (exact length, zero), its directories and tail, map them
 * into one read-write region and set the modes (files and tail 0444,
 * directories 0555; the creator keeps its writable fds, so no capability is
 * needed to fill them). @flags: PFS_BLOB_FILES_*. The blob keeps a copy of
 * @layout (pfs_blob__layout). On 0, *@out is the blob; pfs_blob__close
 * unmaps it and leaves the files (pfs_blob_files_remove deletes them).
 * Returns 0 or -errno with the reason in @why (size @n):
 *   EINVAL  a layout pfs_blob_layout_check refuses, or a bad @name;
 *   EEXIST  @dir/@name.d exists (a blob of that name is held there);
 *   ENOSPC  the file system is too small (tmpfs size=), naming the file;
 *   EACCES/EPERM/ENOENT from creating in @dir; ENOMEM.
 * On failure nothing is left in @dir. */
int pfs_blob__create_files(const char *dir, const char *name, const struct pfs_blob_layout *layout,
			   unsigned int flags, struct pfs_blob **out, char *why, size_t n);

/* pfs_blob__map_files_at - map an existing files layout @layout beneath the
 * directory fd @dirfd (an fd of N.d): tail and every files/<name> opened
 * with openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS (a symlink anywhere is
 * refused), each checked to be a regular file of exactly its length (the
 * tail: size - tail_off), and mapped as above, PROT_READ when @read_only.
 * The blob dups @dirfd and keeps a copy of @layout. How the open functions
 * of blob_manifest.h build the region once they have the layout.
 * 0 or -errno with the reason in @why: EINVAL (layout refused), ELOOP (a
 * symlink), EBADMSG (not a regular file, or a wrong length: "files/a.bin
 * is 4095 bytes, the manifest says 4096"), ENOENT (a missing file), EACCES,
 * ENOMEM. */
int pfs_blob__map_files_at(int dirfd, const struct pfs_blob_layout *layout, bool read_only,
			   struct pfs_blob **out, char *why, size_t n);

/* pfs_blob__layout - the layout of a files-layout blob, owned by the blob;
 * NULL for a flat blob. */
const struct pfs_blob_layout *pfs_blob__layout(const struct pfs_blob *blob);

/* pfs_blob__dir_fd - an O_RDONLY|O_DIRECTORY fd of N.d owned by the blob
 * (what a holder sends with PFS_SHARE_F_DIR), or -1 for a flat blob. */
int pfs_blob__dir_fd(const struct pfs_blob *blob);

/* pfs_blob_files_dir - "@dir/@name.d" into @buf; 0 or -ENAMETOOLONG. */
int pfs_blob_files_dir(const char *dir, const char *name, char *buf, size_t n);

/* pfs_blob_files_exists - @dir/@name.d is a directory: the blob named
 * @name in @dir has the files layout. */
bool pfs_blob_files_exists(const char *dir, const char *name);

/* pfs_blob_files_remove - delete @dir/@name.d and everything in it (modes
 * put back first so it works without CAP_DAC_OVERRIDE). Pages stay valid in
 * existing mappings. 0 or -errno (ENOENT). */
int pfs_blob_files_remove(const char *dir, const char *name);
/* The same for the N.d directory at @path (pfs_blob__path of the blob). */
int pfs_blob_files_remove_path(const char *path);

/* pfs_blob_files_progress - rewrite N.d/progress of @blob (pwrite at 0,
 * then ftruncate) with {"bytes":B,"size":S,"state":"@state"}; @state is
 * one of "reading", "fetching", "verifying", "verified", "failed". A no-op
 * (0) for a flat blob. 0 or -errno. Readers only make a percent out of it:
 * it is never a readiness signal. */
int pfs_blob_files_progress(struct pfs_blob *blob, uint64_t bytes, const char *state);

/* Page kinds of the files, measured once they hold their bytes. */
struct pfs_blob_files_pages {
	uint64_t files; /* entries with a non-zero length */
	uint64_t huge_files; /* of them, files with at least one huge page */
	uint64_t huge_bytes; /* bytes of the files on huge pages */
	uint64_t bytes; /* bytes of the files (page-rounded) */
};

/* pfs_blob_files_measure - map each file of @blob alone at a 2 MiB aligned
 * address (read-only, MAP_SHARED, populated with MADV_POPULATE_READ: no
 * page is allocated, the file is full) and read how much of that mapping
 * the kernel maps with PMDs (/proc/self/smaps ShmemPmdMapped +
 * FilePmdMapped): the THP the file's page cache really holds, which the
 * region's own mapping cannot show (a file at an offset that is not a
 * multiple of 2 MiB is mapped there with 4 KiB entries even when its pages
 * are huge). Sets pfs_blob__page_kind (THP when any file has a huge page,
 * else 4K) and pfs_blob__huge_bytes. 0 or -errno (EINVAL: a flat blob). */
int pfs_blob_files_measure(struct pfs_blob *blob, struct pfs_blob_files_pages *out);

#endif /* PFS_BLOB_FILES_H */
