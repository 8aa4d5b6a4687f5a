/* SPDX-License-Identifier: Apache-2.0 */
/* TCP transport: one sender, one receiver, one connection.
 *
 * Protocol (docs/design/wire-format.md): sender HELLO (version, mode, blob size and
 * fingerprint) -> receiver ACCEPT or REFUSE -> grams -> END (sender's totals
 * and checksum) -> receiver RESULT (its checksum and verdict).
 *
 * Integrity, identical on both ends: the checksum (CRC32C by default,
 * FNV-1a 64, or none) over the bytes the descriptors
 * reference, concatenated in stream order (gram by gram, descriptor by
 * descriptor). The sender reads them from its blob, the receiver from its own
 * blob (offset, arithmetic) or from the payload slab (payload). */
#ifndef PFS_TCP_H
#define PFS_TCP_H

/* Run through the engine: pfs_xfer_send/pfs_xfer_recv (pfs/xfer.h) with
 * pfs_transport_find("tcp"). It reads no link or embed options. */
#include "pfs/xfer.h"

#endif /* PFS_TCP_H */
