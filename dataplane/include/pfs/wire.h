/* SPDX-License-Identifier: Apache-2.0 */
/* Words for the errors of the wire decoders. Every decoder of bytes from a
 * peer (pfs_gram_decode_*, pfs_ctl_decode, pfs_udp_*_decode*, pfs_frame_parse,
 * the blob socket's request/reply decoders) returns 0 or -errno, and the
 * errno values are chosen for their meaning in the codec, not for what
 * strerror() says about them ("Invalid or incomplete multibyte or wide
 * character" for a CRC mismatch). Messages and results use these words. */
#ifndef PFS_WIRE_H
#define PFS_WIRE_H

/* pfs_wire_strerror - what was wrong with the bytes, for a -errno returned
 * by a wire decoder (see the error lists in gram.h, udp.h, frame.h and
 * src/wire/blob_share_wire.h). Any other value gets strerror(-err). Never
 * NULL; the text is static. */
const char *pfs_wire_strerror(int err);

#endif /* PFS_WIRE_H */
