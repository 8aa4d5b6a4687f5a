/* SPDX-License-Identifier: Apache-2.0 */
/* The limits of the replication stream's control frames (pfs/blob_repl.h)
 * that its codec, src/wire/blob_repl_wire.h, and the library's callers
 * share. The frame layout is in that codec and in docs/design/wire-format.md,
 * "Replication stream". */
#ifndef PFS_REPL_WIRE_H
#define PFS_REPL_WIRE_H

#define PFS_REPL_MSG_MAX 480 /* bytes of a REFUSE/ERROR text */

/* Chunk digests (pfs/blob_chunks.h, DIGESTS frames): the blob in pieces of
 * this many bytes (the last one shorter), a digest of this many bytes each. */
#define PFS_CHUNK_SIZE (4u << 20)
#define PFS_CHUNK_DIGEST 32

#endif /* PFS_REPL_WIRE_H */
