// SPDX-License-Identifier: Apache-2.0
/*
 * Words for the decoders' errors (include/pfs/wire.h). One table shared by
 * every codec; the same errno means the same kind of fault in all of them
 * (gram.h, udp.h, frame.h, blob_share_wire.h). No state.
 */
#include <errno.h>
#include <string.h>

#include "pfs/wire.h"

const char *pfs_wire_strerror(int err)
{
	switch (err) {
	case -EMSGSIZE:
		return "truncated: shorter than its header says, or lengths that disagree";
	case -EBADMSG:
		return "malformed: bad magic, descriptor table or checksum field, or trailing bytes";
	case -EILSEQ:
		return "checksum (CRC32C) mismatch: corrupted in transit or not from this peer";
	case -EPROTONOSUPPORT:
		return "unsupported protocol version or packet type";
	case -EPROTO:
		return "protocol violation: unknown mode, type, op or flags, or a reserved field set";
	case -E2BIG:
		return "over the limit: more descriptors, payload or referenced bytes, or ranges "
		       "than allowed";
	case -ERANGE:
		return "out of bounds: a descriptor outside the blob or a fragment outside its gram";
	case -ENOSPC:
		return "too many descriptors for the receiver's table";
	case -EINVAL:
		return "invalid: truncated or inconsistent header, unknown op or bad token length";
	case -ENOENT:
		return "addressed to another UDP port";
	case -EKEYREJECTED:
		return "authentication failed: the tag does not verify under this transfer's key "
		       "(forged, from another transfer, or damaged)";
	}
	return strerror(-err);
}
